// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/serve/estimate.h"
#include "ui/planner/breakdownchart.h"

#include <array>

namespace headroom {

// The same model and cluster under DDP, ZeRO-1, ZeRO-2 and ZeRO-3, side by side (per GPU, at the peak):
// the breakdown chart with one bar per strategy.
class StrategyChart : public BreakdownChart {
    Q_OBJECT
public:
    explicit StrategyChart(QGraphicsItem* parent = nullptr);
    // Draws the four estimates (core/plan/sweeps.h strategyEstimates) computed off the GUI thread.
    void setEstimates(const std::array<Estimate, 4>& estimates, const Estimate& est);
    // The four estimates last drawn (DDP, ZeRO-1, ZeRO-2, ZeRO-3).
    const std::array<Estimate, 4>& estimates() const { return m_estimates; }

private:
    std::array<Estimate, 4> m_estimates;
};

} // namespace headroom
