// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/planner/phasechart.h"

#include "ui/common/categorycolors.h"

#include <QAreaSeries>
#include <QCategoryAxis>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPen>
#include <QValueAxis>
#include <cmath>

namespace headroom {

PhaseChart::PhaseChart(QGraphicsItem* parent) : QChart(parent) {
    m_x = new QCategoryAxis(this);
    m_y = new QValueAxis(this);
    m_y->setLabelFormat(QStringLiteral("%.0f"));
    addAxis(m_x, Qt::AlignBottom);
    addAxis(m_y, Qt::AlignLeft);
    for (auto& e : m_edges)
        e = new QLineSeries(this);
    m_frozenArea = new QAreaSeries(m_edges[1], m_edges[0]);
    m_frozenArea->setName(QStringLiteral("Weights: frozen base"));
    addSeries(m_frozenArea);
    m_frozenArea->attachAxis(m_x);
    m_frozenArea->attachAxis(m_y);
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        auto* area = new QAreaSeries(m_edges[i + 2], m_edges[i + 1]);
        area->setName(QString::fromUtf8(categoryLabel(categoryAt(i))));
        m_areas[i] = area;
        addSeries(area);
        area->attachAxis(m_x);
        area->attachAxis(m_y);
    }
    m_capacity = new QLineSeries(this);
    addSeries(m_capacity);
    m_capacity->attachAxis(m_x);
    m_capacity->attachAxis(m_y);
    legend()->hide(); // the breakdown chart's legend names the colours
    setStyle(m_style);
}

void PhaseChart::setStyle(const ChartStyle& style) {
    m_style = style;
    m_style.apply(this);
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        const QColor c = categoryColor(categoryAt(i));
        m_areas[i]->setColor(c);
        // No outlines outside presentation: the fills already separate the bands, and stroking twelve
        // antialiased outlines was 40% of this chart's paint time.
        m_areas[i]->setPen(m_style.segmentPen());
    }
    m_frozenArea->setColor(frozenWeightsColor());
    m_frozenArea->setPen(m_style.segmentPen());
    m_y->setTitleText(m_style.unitName());
}

void PhaseChart::setTimeline(const std::vector<TimelinePoint>& points, const Scenario& sc,
                             const Estimate& est) {
    const bool training = sc.mode == Mode::Training;
    // A forward that keeps no KV cache (cs336_basics', one with autograd on, one calibrated to keep none)
    // has nothing to decode: its one forward alone.
    const bool forwardOnly = !training && sc.keepsNoKvCache();
    const int phases = training ? 3 : forwardOnly ? 1 : 2;
    const QString what = training      ? QStringLiteral("One training step")
                         : forwardOnly ? QStringLiteral("One forward")
                                       : QStringLiteral("One request");
    const QString title = sc.cluster.pipelineParallel > 1
                              ? QStringLiteral("%1, stage %2")
                                    .arg(training ? QStringLiteral("One step") : what)
                                    .arg(est.mostLoadedStage)
                              : what;
    if (this->title() != title)
        setTitle(title);
    // x: phase index + progress within it.
    std::array<QList<QPointF>, kCategoryCount + 2> edges;
    double top = est.capacityBytes;
    // A fine-tuning plan's frozen base does not change over the step: the bottom of the weights' band.
    const double frozen = est.frozenWeightBytes();
    for (const auto& p : points) {
        if (forwardOnly && p.phase == Phase::Decode)
            continue;
        const int phaseIndex = training ? static_cast<int>(p.phase)
                                        : static_cast<int>(p.phase) - static_cast<int>(Phase::Prefill);
        const double x = phaseIndex + 0.98 * p.progress;
        double sum = 0;
        edges[0].append({x, 0});
        edges[1].append(
            {x, m_style.scale(std::min(frozen, p.bytes.bytes[static_cast<std::size_t>(Category::Weights)]))});
        for (std::size_t i = 0; i < kCategoryCount; ++i) {
            sum += p.bytes.bytes[i];
            edges[i + 2].append({x, m_style.scale(sum)});
        }
        top = std::max(top, sum);
    }
    for (std::size_t i = 0; i < m_edges.size(); ++i)
        m_edges[i]->replace(edges[i]);
    if (m_frozenArea->isVisible() != (frozen > 0))
        m_frozenArea->setVisible(frozen > 0);
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        bool any = false;
        for (const auto& p : points)
            any = any || (p.bytes.bytes[i] > 0 && !(forwardOnly && p.phase == Phase::Decode));
        if (m_areas[i]->isVisible() != any)
            m_areas[i]->setVisible(any);
    }
    const double cap = m_style.scale(est.capacityBytes);
    m_capacity->replace(QList<QPointF>{{0, cap}, {double(phases), cap}});
    const QPen pen = m_style.capacityPen(est.fits);
    if (m_capacity->pen() != pen)
        m_capacity->setPen(pen);
    const QStringList names = training      ? QStringList{"forward", "backward", "optimizer"}
                              : forwardOnly ? QStringList{"forward"}
                                            : QStringList{"prefill", "decode"};
    if (m_x->categoriesLabels() != names.mid(0, phases)) {
        for (const QString& l : m_x->categoriesLabels())
            m_x->remove(l);
        for (int i = 0; i < phases; ++i)
            m_x->append(names[i], i + 1);
    }
    m_x->setRange(0, phases);
    m_x->setLabelsPosition(QCategoryAxis::AxisLabelsPositionCenter);
    setNiceRange(m_y, m_style.scale(top * 1.1));
}

} // namespace headroom
