// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/planner/servingchart.h"

#include <QCategoryAxis>
#include <QFontMetricsF>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPen>
#include <QScatterSeries>
#include <QValueAxis>
#include <algorithm>
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
    }
    m_tokensLabel = new QScatterSeries(this);
    m_requestsLabel = new QScatterSeries(this);
    for (QScatterSeries* s : {m_tokensLabel, m_requestsLabel}) {
        s->setMarkerSize(1);
        s->setColor(Qt::transparent);
        s->setBorderColor(Qt::transparent);
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
    for (QXYSeries* s : {static_cast<QXYSeries*>(m_tokens), static_cast<QXYSeries*>(m_currentTokens),
                         static_cast<QXYSeries*>(m_tokensLabel)}) {
        addSeries(s);
        s->attachAxis(m_x);
        s->attachAxis(m_yTokens);
    }
    for (QXYSeries* s :
         {static_cast<QXYSeries*>(m_concurrency), static_cast<QXYSeries*>(m_currentConcurrency),
          static_cast<QXYSeries*>(m_requestsLabel)}) {
        addSeries(s);
        s->attachAxis(m_x);
        s->attachAxis(m_yConcurrency);
    }
    for (QScatterSeries* s : {m_currentTokens, m_currentConcurrency, m_tokensLabel, m_requestsLabel})
        for (QLegendMarker* marker : legend()->markers(s))
            marker->setVisible(false);
    connect(this, &QChart::plotAreaChanged, this, [this] {
        labelLengths();
        placeLabels();
    });
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
    for (QScatterSeries* s : {m_tokensLabel, m_requestsLabel})
        s->setPointLabelsColor(m_style.foreground());
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
        // The axis reaches the scenario's own length when it is shorter than the curve's first (512
        // tokens), so that its point is drawn; the labels stay the curve's.
        const double from = std::min(lo, std::log2(std::max(1.0, len)));
        m_x->setRange(from - 0.3, hi + 0.3); // room for the end labels, which sit centred on their values
        labelLengths();
    }
    setNiceRange(m_yTokens, std::max(topTokens, kv / 1000) * 1.1);
    setNiceRange(m_yConcurrency, std::max(topRequests, conc) * 1.1);
    // The two points share an x; on their two axes they may share a height too (a batch whose KV tokens in
    // thousands are about its requests), where two labels would print over each other: the tokens' alone
    // is labelled then (the requests are the headline's "largest batch that fits" or its concurrency).
    const QString tokensLabel = QStringLiteral("%1k tokens").arg(kv / 1000, 0, 'f', 0);
    // Without an engine the batch, a whole number; an engine's concurrency is a fraction of its pool.
    QString requestsLabel = QStringLiteral("%1 requests")
                                .arg(conc, 0, 'f',
                                     !est.serving.engine ? 0
                                     : conc < 10         ? 2
                                                         : 1);
    const double tokensHeight = kv / 1000 / std::max(1e-9, m_yTokens->max());
    const double requestsHeight = conc / std::max(1e-9, m_yConcurrency->max());
    if (std::abs(tokensHeight - requestsHeight) < 0.08)
        requestsLabel.clear();
    if (m_tokensLabel->pointLabelsFormat() != tokensLabel)
        m_tokensLabel->setPointLabelsFormat(tokensLabel);
    if (m_requestsLabel->pointLabelsVisible() != !requestsLabel.isEmpty())
        m_requestsLabel->setPointLabelsVisible(!requestsLabel.isEmpty());
    if (!requestsLabel.isEmpty() && m_requestsLabel->pointLabelsFormat() != requestsLabel)
        m_requestsLabel->setPointLabelsFormat(requestsLabel);
    placeLabels();
}

void ServingChart::labelLengths() {
    if (m_points.empty())
        return;
    const int lo =
        static_cast<int>(std::ceil(std::log2(static_cast<double>(m_points.front().requestLength))));
    const int hi =
        static_cast<int>(std::floor(std::log2(static_cast<double>(m_points.back().requestLength))));
    // Every power of two where there is room for its label, else every second or fourth: the axis elided
    // "128k" to "12..." when a narrow chart gave each of its 13 labels less than their width.
    const double widest = QFontMetricsF(m_x->labelsFont()).horizontalAdvance(QStringLiteral("1024k")) + 6;
    const double perStep = plotArea().width() / std::max(1.0, m_x->max() - m_x->min());
    int every = 1;
    while (every < 8 && perStep > 0 && perStep * every < widest)
        every *= 2;
    QStringList labels;
    std::vector<int> at;
    for (int e = lo; e <= hi; ++e)
        if ((e - lo) % every == 0) {
            labels << (e >= 10 ? QStringLiteral("%1k").arg(1LL << (e - 10)) : QString::number(1LL << e));
            at.push_back(e);
        }
    if (m_x->categoriesLabels() == labels)
        return;
    for (const QString& l : m_x->categoriesLabels())
        m_x->remove(l);
    for (std::size_t i = 0; i < at.size(); ++i)
        m_x->append(labels[static_cast<qsizetype>(i)], at[i]);
}

void ServingChart::placeLabels() {
    const QRectF area = plotArea();
    for (const auto& [point, label] :
         {std::pair{m_currentTokens, m_tokensLabel}, std::pair{m_currentConcurrency, m_requestsLabel}}) {
        if (point->count() == 0 || area.width() <= 0) {
            label->clear();
            continue;
        }
        const QPointF at = mapToPosition(point->at(0), point);
        const double half =
            QFontMetricsF(label->pointLabelsFont()).horizontalAdvance(label->pointLabelsFormat()) / 2;
        // (Wider than the plot, it starts at the plot's left edge.)
        const double centre = std::max(area.left() + half, std::min(at.x(), area.right() - half));
        label->replace(QList<QPointF>{mapToValue(QPointF(centre, at.y()), label)});
    }
}

} // namespace headroom
