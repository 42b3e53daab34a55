// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/scenario.h"
#include "core/serve/estimate.h"
#include "ui/common/chartstyle.h"

#include <QChart>
#include <array>
#include <set>
#include <vector>

class QBarCategoryAxis;
class QBarSet;
class QLineSeries;
class QScatterSeries;
class QStackedBarSeries;
class QValueAxis;

namespace headroom {

// Stacked per-GPU bars, one colour per category, against a dashed line at the GPU's usable memory with
// the headroom or overflow written on it. Legend entries toggle categories; hovering a segment shows its
// bytes and share. Updated in place. setEstimate shows one bar per pipeline stage (one bar when every
// GPU holds the same); setBars shows any set of bars (the strategy comparison).
class BreakdownChart : public QChart {
    Q_OBJECT
public:
    struct Bars {
        QString title;
        QStringList labels;
        std::vector<Breakdown> values;
        double capacity = 0;
        bool headroomLabel = true;
    };

    explicit BreakdownChart(QGraphicsItem* parent = nullptr);

    void setEstimate(const Scenario& sc, const Estimate& est);
    void setBars(Bars bars);
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
    Bars m_bars;
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

// The estimate's stacked bar chart, exported to PNG, SVG or PDF (headroom-cli render SCENARIO).
bool exportEstimateChart(const Scenario& sc, const Estimate& est, const std::string& path, int w, int h,
                         std::string* error, double scale = 2);

} // namespace headroom
