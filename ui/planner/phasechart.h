// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/serve/estimate.h"
#include "ui/common/chartstyle.h"

#include <QChart>
#include <array>

class QAreaSeries;
class QCategoryAxis;
class QLineSeries;
class QValueAxis;

namespace headroom {

// One training step (forward, backward, optimizer) or one inference request (prefill, decode) on the
// most-loaded GPU, as stacked areas per category against the capacity line. The curves are exactly the
// ones whose maximum is the estimate's peak; memory is linear within a phase, so a few points per phase
// draw it exactly.
class PhaseChart : public QChart {
    Q_OBJECT
public:
    explicit PhaseChart(QGraphicsItem* parent = nullptr);
    // Draws the most-loaded stage's step (core phaseTimeline, two points a phase), computed off the GUI
    // thread.
    void setTimeline(const std::vector<TimelinePoint>& points, const Scenario& sc, const Estimate& est);
    // The band of a fine-tuning plan's frozen base (hidden without one).
    QAreaSeries* frozenArea() const { return m_frozenArea; }
    void setStyle(const ChartStyle& style);

private:
    ChartStyle m_style;
    // Cumulative boundaries: [0] is the baseline, [1] the top of a fine-tuning plan's frozen base (the
    // baseline again without one), [i + 2] the top of category i.
    std::array<QLineSeries*, kCategoryCount + 2> m_edges{};
    std::array<QAreaSeries*, kCategoryCount> m_areas{};
    QAreaSeries* m_frozenArea = nullptr; // the frozen base, under the weights (which are then the adapters)
    QLineSeries* m_capacity = nullptr;
    QCategoryAxis* m_x = nullptr;
    QValueAxis* m_y = nullptr;
};

} // namespace headroom
