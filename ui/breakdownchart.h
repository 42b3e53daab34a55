#pragma once
#include "core/plan/estimator.h"
#include "core/plan/scenario.h"
#include "ui/chartstyle.h"

#include <QChart>
#include <array>
#include <set>

class QBarCategoryAxis;
class QBarSet;
class QLineSeries;
class QScatterSeries;
class QStackedBarSeries;
class QValueAxis;

namespace headroom {

// The stacked per-GPU bar chart: one bar per pipeline stage (one bar when every GPU holds the same), one
// colour per category, a dashed line at the GPU's usable memory with the headroom or overflow written on
// it. Legend entries toggle categories; hovering a segment shows its bytes and share. Updated in place.
class BreakdownChart : public QChart {
    Q_OBJECT
public:
    explicit BreakdownChart(QGraphicsItem* parent = nullptr);

    void setEstimate(const Scenario& sc, const Estimate& est);
    void setStyle(const ChartStyle& style);
    const ChartStyle& style() const { return m_style; }
    bool isCategoryHidden(Category c) const { return m_hidden.count(c) != 0; }
    void setCategoryHidden(Category c, bool hidden);
    // Text of the tooltip for a segment (what hovering shows).
    QString segmentText(Category c, int bar) const;
    QStackedBarSeries* series() const { return m_series; }

private:
    void rebuild();
    void hovered(bool state, int index, QBarSet* set);

    ChartStyle m_style;
    Scenario m_scenario;
    Estimate m_estimate;
    std::set<Category> m_hidden;
    QStackedBarSeries* m_series = nullptr;
    std::array<QBarSet*, kCategoryCount> m_sets{};
    std::array<int, kCategoryCount> m_markerShown{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    QBarCategoryAxis* m_x = nullptr;
    QValueAxis* m_y = nullptr;
    QValueAxis* m_lineX = nullptr;
    QLineSeries* m_capacity = nullptr;
    QScatterSeries* m_capacityLabel = nullptr;
};

// A new chart showing `est` (used by exports and the CLI).
BreakdownChart* createBreakdownChart(const Scenario& sc, const Estimate& est, const ChartStyle& style = {});

// The one-line verdict: "Fits: 12.3 GiB headroom (84.6% of 79.65 GiB used)".
QString verdictText(const Estimate& est, const ChartStyle& style = {});

} // namespace headroom
