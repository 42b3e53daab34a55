// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/planner/strategychart.h"

#include <QAbstractAxis>
#include <QLegend>

namespace headroom {

StrategyChart::StrategyChart(QGraphicsItem* parent) : BreakdownChart(parent) {
    legend()->hide(); // the breakdown chart beside it names the colours
    axes(Qt::Horizontal).first()->setTitleText(QStringLiteral("ZeRO stage"));
}

void StrategyChart::setEstimates(const std::array<Estimate, 4>& estimates, const Estimate& est) {
    Bars bars;
    // On one data-parallel rank the four are one plan (ZeRO-3 only adds its gather buffers): say so rather
    // than "over 1 ranks".
    bars.title = est.dataParallelSize > 1
                     ? QStringLiteral("DDP and ZeRO over %1 ranks").arg(est.dataParallelSize)
                     : QStringLiteral("ZeRO on one rank: nothing to shard");
    bars.labels = {QStringLiteral("DDP"), QStringLiteral("Z-1"), QStringLiteral("Z-2"),
                   QStringLiteral("Z-3")};
    bars.capacity = est.capacityBytes;
    bars.headroomLabel = false;
    m_estimates = estimates;
    for (const Estimate& e : m_estimates) {
        bars.values.push_back(e.perGpu);
        bars.frozenWeights.push_back(e.frozenWeightBytes());
    }
    setBars(std::move(bars));
}

} // namespace headroom
