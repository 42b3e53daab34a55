// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/planner/breakdownchart.h"

#include "ui/common/chartexport.h"

#include <QLocale>

#include "ui/common/categorycolors.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QCursor>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPen>
#include <QScatterSeries>
#include <QStackedBarSeries>
#include <QToolTip>
#include <QValueAxis>
#include <cmath>

namespace headroom {

BreakdownChart::BreakdownChart(QGraphicsItem* parent) : QChart(parent) {
    m_series = new QStackedBarSeries(this);
    // A fine-tuning plan's frozen base, in a darker shade of the weights' blue, at the bottom of each bar.
    m_frozenSet = new QBarSet(QStringLiteral("Weights: frozen base"));
    colourFrozenWeights(m_frozenSet);
    m_series->append(m_frozenSet);
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        const Category cat = categoryAt(i);
        auto* set = new QBarSet(QString::fromUtf8(categoryLabel(cat)));
        colourBarSet(set, cat);
        m_sets[i] = set;
        m_series->append(set);
    }
    m_series->setBarWidth(0.6);
    addSeries(m_series);
    m_x = new QBarCategoryAxis(this);
    m_y = new QValueAxis(this);
    m_y->setLabelFormat(QStringLiteral("%.0f"));
    addAxis(m_x, Qt::AlignBottom);
    addAxis(m_y, Qt::AlignLeft);
    m_series->attachAxis(m_x);
    m_series->attachAxis(m_y);

    // The capacity line spans the bars on a hidden value axis aligned with the category slots; a
    // one-point series in the middle carries the headroom text.
    m_capacity = new QLineSeries(this);
    m_capacityLabel = new QScatterSeries(this);
    m_capacityLabel->setMarkerSize(1);
    m_capacityLabel->setPointLabelsVisible(true);
    m_capacityLabel->setPointLabelsClipping(false);
    QFont labelFont = m_capacityLabel->pointLabelsFont();
    labelFont.setBold(true);
    m_capacityLabel->setPointLabelsFont(labelFont);
    addSeries(m_capacity);
    addSeries(m_capacityLabel);
    m_lineX = new QValueAxis(this);
    m_lineX->setVisible(false);
    addAxis(m_lineX, Qt::AlignBottom);
    for (QXYSeries* s : {static_cast<QXYSeries*>(m_capacity), static_cast<QXYSeries*>(m_capacityLabel)}) {
        s->attachAxis(m_lineX);
        s->attachAxis(m_y);
    }
    legend()->setAlignment(Qt::AlignRight);
    legend()->markers(m_capacityLabel).first()->setVisible(false);
    legend()->markers(m_series).at(0)->setVisible(false);
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        QLegendMarker* marker = legend()->markers(m_series).at(static_cast<int>(i) + 1);
        connect(marker, &QLegendMarker::clicked, this,
                [this, i] { setCategoryHidden(categoryAt(i), !isCategoryHidden(categoryAt(i))); });
    }
    connect(m_series, &QStackedBarSeries::hovered, this, &BreakdownChart::hovered);
    m_markerShown.fill(-1); // not yet shown or hidden
    m_style.apply(this);
}

void BreakdownChart::setStyle(const ChartStyle& style) {
    m_style = style;
    m_markerShown.fill(-1); // a theme change rebuilds the legend's look
    m_style.apply(this);
    QFont labelFont = m_capacityLabel->pointLabelsFont();
    labelFont.setPointSizeF(m_style.presentation ? 13 : 9);
    m_capacityLabel->setPointLabelsFont(labelFont);
    // The theme resets series colours: put the category colours back.
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        colourBarSet(m_sets[i], categoryAt(i));
        if (m_style.presentation)
            m_sets[i]->setPen(m_style.segmentPen());
    }
    colourFrozenWeights(m_frozenSet);
    if (m_style.presentation)
        m_frozenSet->setPen(m_style.segmentPen());
    m_frozenShown = -1;
    rebuild();
}

void BreakdownChart::setCategoryHidden(Category c, bool hidden) {
    if (hidden)
        m_hidden.insert(c);
    else
        m_hidden.erase(c);
    rebuild();
}

void BreakdownChart::setEstimate(const Scenario& sc, const Estimate& est) {
    Bars bars;
    const bool single = est.ranks.size() == 1;
    bars.title = single
                     ? QStringLiteral("Per GPU at the peak")
                     : QStringLiteral("Per GPU at the peak, by pipeline stage (stage %1 is the most loaded)")
                           .arg(est.mostLoadedStage);
    for (const auto& r : est.ranks) {
        bars.labels << (single ? QStringLiteral("Each of %1 GPUs").arg(sc.cluster.numGpus)
                               : QStringLiteral("Stage %1 (%2–%3)")
                                     .arg(r.stage)
                                     .arg(r.firstLayer)
                                     .arg(r.firstLayer + r.layers - 1));
        bars.values.push_back(r.peak);
        bars.frozenWeights.push_back(r.frozenWeightBytes);
    }
    bars.capacity = est.capacityBytes;
    bars.pagedToHost = est.pagedToHostBytes;
    bars.serving = est.serving.engine;
    setBars(std::move(bars));
}

void BreakdownChart::setBars(Bars bars) {
    m_bars = std::move(bars);
    rebuild();
}

QString BreakdownChart::segmentText(Category c, int bar) const {
    if (bar < 0 || bar >= static_cast<int>(m_bars.values.size()))
        return {};
    const Breakdown& b = m_bars.values[static_cast<std::size_t>(bar)];
    const double total = b.total();
    const double frozen = c == Category::Weights ? frozenAt(bar) : 0;
    const double value = b[c] - frozen;
    return QStringLiteral("%1: %2 (%3%)")
        .arg(frozen > 0 ? QStringLiteral("Weights, adapters")
                        : QString::fromUtf8(categoryLabel(c, m_bars.serving)),
             m_style.format(value))
        .arg(total > 0 ? 100.0 * value / total : 0.0, 0, 'f', 1);
}

QString BreakdownChart::frozenSegmentText(int bar) const {
    if (bar < 0 || bar >= static_cast<int>(m_bars.values.size()) ||
        bar >= static_cast<int>(m_bars.frozenWeights.size()))
        return {};
    const double total = m_bars.values[static_cast<std::size_t>(bar)].total();
    const double frozen = m_bars.frozenWeights[static_cast<std::size_t>(bar)];
    return QStringLiteral("Weights, frozen base: %1 (%2%)")
        .arg(m_style.format(frozen))
        .arg(total > 0 ? 100.0 * frozen / total : 0.0, 0, 'f', 1);
}

double BreakdownChart::frozenAt(int bar) const {
    const auto i = static_cast<std::size_t>(bar);
    return i < m_bars.frozenWeights.size() ? m_bars.frozenWeights[i] : 0;
}

void BreakdownChart::hovered(bool state, int index, QBarSet* set) {
    if (!state) {
        QToolTip::hideText();
        return;
    }
    if (set == m_frozenSet) {
        QToolTip::showText(QCursor::pos(), frozenSegmentText(index));
        return;
    }
    for (std::size_t i = 0; i < kCategoryCount; ++i)
        if (m_sets[i] == set)
            QToolTip::showText(QCursor::pos(), segmentText(categoryAt(i), index));
}

void BreakdownChart::rebuild() {
    const auto& values = m_bars.values;
    const int bars = static_cast<int>(values.size());
    // Titles, names and legend fonts are only set when they change: each set relayouts the legend and
    // reshapes its text, which is most of what a slider step would otherwise cost.
    if (title() != m_bars.title)
        setTitle(m_bars.title);
    if (m_x->categories() != m_bars.labels) {
        m_x->clear();
        m_x->append(m_bars.labels);
    }
    double top = m_bars.capacity, peak = 0;
    for (const Breakdown& b : values)
        peak = std::max(peak, b.total());
    top = std::max(top, peak);
    const bool fits = peak - m_bars.pagedToHost <= m_bars.capacity;
    auto fill = [bars](QBarSet* set, const QList<qreal>& scaled) {
        if (set->count() != bars) {
            set->remove(0, set->count());
            set->append(scaled);
        } else {
            for (int b = 0; b < bars; ++b)
                if (set->at(b) != scaled[b])
                    set->replace(b, scaled[b]);
        }
    };
    // The frozen base: its own segment under the adapters', hidden and shown with the weights.
    bool anyFrozen = false;
    {
        QList<qreal> scaled;
        scaled.reserve(bars);
        for (int b = 0; b < bars; ++b) {
            anyFrozen = anyFrozen || frozenAt(b) > 0;
            scaled << (m_hidden.count(Category::Weights) ? 0.0 : m_style.scale(frozenAt(b)));
        }
        fill(m_frozenSet, scaled);
        if (m_frozenShown != static_cast<int>(anyFrozen)) {
            legend()->markers(m_series).at(0)->setVisible(anyFrozen);
            m_frozenShown = anyFrozen;
        }
        const QString weights = anyFrozen ? QStringLiteral("Weights: adapters")
                                          : QString::fromUtf8(categoryLabel(Category::Weights));
        QBarSet* set = m_sets[static_cast<std::size_t>(Category::Weights)];
        if (set->label() != weights)
            set->setLabel(weights);
    }
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        const Category cat = categoryAt(i);
        QBarSet* set = m_sets[i];
        if (cat != Category::Weights) { // the weights' label follows the frozen split above
            const QString label = QString::fromUtf8(categoryLabel(cat, m_bars.serving));
            if (set->label() != label)
                set->setLabel(label);
        }
        bool any = false;
        QList<qreal> scaled;
        scaled.reserve(bars);
        for (int b = 0; b < bars; ++b) {
            const double v =
                values[static_cast<std::size_t>(b)][cat] - (cat == Category::Weights ? frozenAt(b) : 0);
            any = any || v > 0;
            scaled << (m_hidden.count(cat) ? 0.0 : m_style.scale(v));
        }
        fill(set, scaled);
        // Categories that are zero everywhere leave the legend; hidden ones stay there, greyed.
        QLegendMarker* marker = legend()->markers(m_series).at(static_cast<int>(i) + 1);
        if (m_markerShown[i] != static_cast<int>(any)) { // QLegendMarker::isVisible() also reflects layout
            marker->setVisible(any);
            m_markerShown[i] = any;
        }
        const bool hidden = m_hidden.count(cat) != 0;
        if (marker->font().strikeOut() != hidden) {
            QFont f = marker->font();
            f.setStrikeOut(hidden);
            marker->setFont(f);
            marker->setLabelBrush(hidden ? QBrush(Qt::gray) : legend()->labelBrush());
        }
    }
    setNiceRange(m_y, m_style.scale(top * 1.1));
    const QString yTitle = QStringLiteral("%1 per GPU").arg(m_style.unitName());
    if (m_y->titleText() != yTitle)
        m_y->setTitleText(yTitle);

    const double n = std::max(1, bars);
    m_lineX->setRange(-0.5, n - 0.5);
    const double cap = m_style.scale(m_bars.capacity);
    m_capacity->replace(QList<QPointF>{{-0.5, cap}, {n - 0.5, cap}});
    const QPen pen = m_style.capacityPen(fits || !m_bars.headroomLabel);
    if (m_capacity->pen() != pen)
        m_capacity->setPen(pen);
    const QString name = QStringLiteral("Usable (%1)").arg(m_style.format(m_bars.capacity, 1));
    if (m_capacity->name() != name)
        m_capacity->setName(name);
    m_capacityLabel->setVisible(m_bars.headroomLabel);
    m_capacityLabel->replace(QList<QPointF>{{(n - 1) / 2.0, cap}});
    m_capacityLabel->setPointLabelsFormat(
        fits && peak > m_bars.capacity
            ? QStringLiteral("%1 of paged states in host memory").arg(m_style.format(peak - m_bars.capacity))
        : fits ? QStringLiteral("headroom %1").arg(m_style.format(m_bars.capacity - peak))
               : QStringLiteral("over by %1").arg(m_style.format(peak - m_bars.capacity)));
    if (m_capacityLabel->pointLabelsColor() != pen.color()) {
        m_capacityLabel->setPointLabelsColor(pen.color());
        m_capacityLabel->setColor(pen.color());
    }
}

BreakdownChart* createBreakdownChart(const Scenario& sc, const Estimate& est, const ChartStyle& style) {
    auto* chart = new BreakdownChart;
    chart->setStyle(style);
    chart->setEstimate(sc, est);
    return chart;
}

bool exportEstimateChart(const Scenario& sc, const Estimate& est, const std::string& path, int w, int h,
                         std::string* error, double scale) {
    ensureGuiApplication();
    std::unique_ptr<QChart> chart(createBreakdownChart(sc, est));
    return exportChart(chart.get(), path, w, h, error, scale);
}

} // namespace headroom
