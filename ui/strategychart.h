#pragma once
#include "core/plan/estimator.h"
#include "ui/chartstyle.h"

#include <QChart>
#include <array>

class QBarCategoryAxis;
class QBarSet;
class QLineSeries;
class QStackedBarSeries;
class QValueAxis;

namespace headroom {

// The same model and cluster under DDP, ZeRO-1, ZeRO-2 and ZeRO-3, side by side (per GPU, at the peak).
class StrategyChart : public QChart {
    Q_OBJECT
public:
    explicit StrategyChart(QGraphicsItem* parent = nullptr);
    void setScenario(const Scenario& sc, const Estimate& est);
    void setStyle(const ChartStyle& style);
    // The four estimates last drawn (DDP, ZeRO-1, ZeRO-2, ZeRO-3).
    const std::array<Estimate, 4>& estimates() const { return m_estimates; }

private:
    ChartStyle m_style;
    std::array<Estimate, 4> m_estimates;
    QStackedBarSeries* m_series = nullptr;
    std::array<QBarSet*, kCategoryCount> m_sets{};
    QBarCategoryAxis* m_x = nullptr;
    QValueAxis* m_y = nullptr;
    QValueAxis* m_lineX = nullptr;
    QLineSeries* m_capacity = nullptr;
};

} // namespace headroom
