// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/planner/servingchart.h"

#include <QCategoryAxis>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPen>
#include <QScatterSeries>
#include <QValueAxis>
#include <cmath>

namespace headroom {

namespace {
const QColor kTokens(0x1f, 0x77, 0xb4);
const QColor kRequests(0xd6, 0x5f, 0x00); // orange that stays distinct from the blue for red-green deficiency
} // namespace

ServingChart::ServingChart(QGraphicsItem* parent) : QChart(parent) {
    m_tokens = new QLineSeries(this);
    m_tokens->setName(QStringLiteral("KV tokens (k)"));
    m_concurrency = new QLineSeries(this);
    m_concurrency->setName(QStringLiteral("requests at once"));
    m_currentTokens = new QScatterSeries(this);
    m_currentConcurrency = new QScatterSeries(this);
    for (QScatterSeries* s : {m_currentTokens, m_currentConcurrency}) {
        s->setMarkerSize(9);
        s->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
        s->setPointLabelsVisible(true);
        s->setPointLabelsClipping(false);
    }
    m_x = new QCategoryAxis(this);
    m_x->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    m_x->setTitleText(QStringLiteral("tokens per request (k = 1,024)"));
    m_yTokens = new QValueAxis(this);
    m_yTokens->setLabelFormat(QStringLiteral("%g"));
    m_yTokens->setTitleText(QStringLiteral("KV tokens (k)"));
    m_yConcurrency = new QValueAxis(this);
    m_yConcurrency->setLabelFormat(QStringLiteral("%g"));
    m_yConcurrency->setTitleText(QStringLiteral("requests"));
    addAxis(m_x, Qt::AlignBottom);
    addAxis(m_yTokens, Qt::AlignLeft);
    addAxis(m_yConcurrency, Qt::AlignRight);
    for (QXYSeries* s : {static_cast<QXYSeries*>(m_tokens), static_cast<QXYSeries*>(m_currentTokens)}) {
        addSeries(s);
        s->attachAxis(m_x);
        s->attachAxis(m_yTokens);
    }
    for (QXYSeries* s :
         {static_cast<QXYSeries*>(m_concurrency), static_cast<QXYSeries*>(m_currentConcurrency)}) {
        addSeries(s);
        s->attachAxis(m_x);
        s->attachAxis(m_yConcurrency);
    }
    for (QLegendMarker* marker : legend()->markers(m_currentTokens) + legend()->markers(m_currentConcurrency))
        marker->setVisible(false);
    legend()->setAlignment(Qt::AlignTop);
    setTitle(QStringLiteral("Serving capacity against request length"));
    setStyle(m_style);
}

void ServingChart::setStyle(const ChartStyle& style) {
    m_style = style;
    m_style.apply(this);
    QPen tokens(kTokens);
    tokens.setWidth(2);
    m_tokens->setPen(tokens);
    QPen requests(kRequests);
    requests.setWidth(2);
    requests.setStyle(Qt::DashLine); // told apart without colour too
    m_concurrency->setPen(requests);
    m_currentTokens->setColor(kTokens);
    m_currentConcurrency->setColor(kRequests);
    legend()->show();
}

void ServingChart::setCurve(const std::vector<ServingPoint>& points, const Scenario& sc,
                            const Estimate& est) {
    m_points = points;
    // Without a cache (cs336_basics' forward, or a calibrated forward that kept none), the tokens are those
    // one forward runs at once.
    const QString tokensName =
        sc.keepsNoKvCache() ? QStringLiteral("tokens at once (k)") : QStringLiteral("KV tokens (k)");
    if (m_tokens->name() != tokensName) {
        m_tokens->setName(tokensName);
        m_yTokens->setTitleText(tokensName);
    }
    QList<QPointF> tokens, requests;
    double topTokens = 1, topRequests = 1;
    for (const ServingPoint& p : m_points) {
        const double x = std::log2(static_cast<double>(p.requestLength));
        tokens.append({x, static_cast<double>(p.kvTokens) / 1000});
        requests.append({x, p.maxConcurrency});
        topTokens = std::max(topTokens, static_cast<double>(p.kvTokens) / 1000);
        topRequests = std::max(topRequests, p.maxConcurrency);
    }
    m_tokens->replace(tokens);
    m_concurrency->replace(requests);
    // The scenario's own point, from its own estimate (the curve samples lengths on a grid).
    const double len = sc.inference.requestLength();
    const double kv = est.serving.engine ? static_cast<double>(est.serving.kvCacheTokens)
                                         : static_cast<double>(est.maxMicroBatchSize) * len;
    const double conc =
        est.serving.engine ? est.serving.maxConcurrency : static_cast<double>(est.maxMicroBatchSize);
    m_currentTokens->replace(QList<QPointF>{{std::log2(len), kv / 1000}});
    m_currentConcurrency->replace(QList<QPointF>{{std::log2(len), conc}});
    if (!m_points.empty()) {
        const double lo = std::log2(static_cast<double>(m_points.front().requestLength));
        const double hi = std::log2(static_cast<double>(m_points.back().requestLength));
        QStringList labels;
        for (int e = static_cast<int>(std::ceil(lo)); e <= static_cast<int>(std::floor(hi)); ++e)
            labels << (e >= 10 ? QStringLiteral("%1k").arg(1LL << (e - 10)) : QString::number(1LL << e));
        if (m_x->categoriesLabels() != labels) {
            for (const QString& l : m_x->categoriesLabels())
                m_x->remove(l);
            int e = static_cast<int>(std::ceil(lo));
            for (const QString& l : labels)
                m_x->append(l, e++);
        }
        m_x->setRange(lo - 0.3, hi + 0.3); // room for the end labels, which sit centred on their values
    }
    setNiceRange(m_yTokens, std::max(topTokens, kv / 1000) * 1.1);
    setNiceRange(m_yConcurrency, std::max(topRequests, conc) * 1.1);
    // The two points share an x; on their two axes they may share a height too (a batch whose KV tokens in
    // thousands are about its requests), where two labels would print over each other: the tokens' alone
    // is labelled then (the requests are the headline's "largest batch that fits" or its concurrency).
    const QString tokensLabel = QStringLiteral("%1k tokens").arg(kv / 1000, 0, 'f', 0);
    QString requestsLabel = QStringLiteral("%1 requests").arg(conc, 0, 'f', conc < 10 ? 2 : 1);
    const double tokensHeight = kv / 1000 / std::max(1e-9, m_yTokens->max());
    const double requestsHeight = conc / std::max(1e-9, m_yConcurrency->max());
    if (std::abs(tokensHeight - requestsHeight) < 0.08)
        requestsLabel.clear();
    if (m_currentTokens->pointLabelsFormat() != tokensLabel)
        m_currentTokens->setPointLabelsFormat(tokensLabel);
    if (m_currentConcurrency->pointLabelsVisible() != !requestsLabel.isEmpty())
        m_currentConcurrency->setPointLabelsVisible(!requestsLabel.isEmpty());
    if (!requestsLabel.isEmpty() && m_currentConcurrency->pointLabelsFormat() != requestsLabel)
        m_currentConcurrency->setPointLabelsFormat(requestsLabel);
}

} // namespace headroom
