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
        // Fine-tuning with adapters: of each bar's weights, the frozen base's bytes (empty, or all zero: the
        // weights are one segment). Drawn as their own segment under the adapters'.
        std::vector<double> frozenWeights;
        bool serving = false; // a serving engine's budget: its parts named as its log names them
        double capacity = 0;
        // A paged optimizer's states the GPU has no room for (Estimate::pagedToHostBytes): the tallest bar
        // may pass the line by as much and still fit, the line saying so.
        double pagedToHost = 0;
        bool headroomLabel = true;
    };

    explicit BreakdownChart(QGraphicsItem* parent = nullptr);

    void setEstimate(const Scenario& sc, const Estimate& est);
    void setBars(Bars bars);
    void setStyle(const ChartStyle& style);
    const ChartStyle& style() const { return m_style; }
    bool isCategoryHidden(Category c) const { return m_hidden.count(c) != 0; }
    void setCategoryHidden(Category c, bool hidden);
    // Text of the tooltip for a segment (what hovering shows). With a frozen base, Weights is the adapters'
    // segment; frozenSegmentText is the base's.
    QString segmentText(Category c, int bar) const;
    QString frozenSegmentText(int bar) const;
    // The frozen base's segment (its values are 0 when the weights are one segment).
    QBarSet* frozenSet() const { return m_frozenSet; }
    QBarSet* categorySet(Category c) const { return m_sets[static_cast<std::size_t>(c)]; }
    QStackedBarSeries* series() const { return m_series; }

private:
    void rebuild();
    double frozenAt(int bar) const; // 0 past the end of Bars::frozenWeights
    void hovered(bool state, int index, QBarSet* set);

    ChartStyle m_style;
    Bars m_bars;
    std::set<Category> m_hidden;
    QStackedBarSeries* m_series = nullptr;
    std::array<QBarSet*, kCategoryCount> m_sets{};
    QBarSet* m_frozenSet = nullptr; // first in the series: stacked at the bottom, under the adapters
    int m_frozenShown = -1;
    std::array<int, kCategoryCount> m_markerShown{};
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
