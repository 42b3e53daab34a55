// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/planner/strategychart.h"

#include <QAbstractAxis>
#include <QLegend>

namespace headroom {

StrategyChart::StrategyChart(QGraphicsItem* parent) : BreakdownChart(parent) {
    legend()->hide(); // the breakdown chart beside it names the colours
    axes(Qt::Horizontal).first()->setTitleText(QStringLiteral("ZeRO stage"));
}

void StrategyChart::setScenario(const Scenario& sc, const Estimate& est) {
    static constexpr DataParallel kStrategies[4] = {DataParallel::Ddp, DataParallel::Zero1,
                                                    DataParallel::Zero2, DataParallel::Zero3};
    Bars bars;
    bars.title = QStringLiteral("DDP and ZeRO over %1 ranks").arg(est.dataParallelSize);
    bars.labels = {QStringLiteral("DDP"), QStringLiteral("Z-1"), QStringLiteral("Z-2"),
                   QStringLiteral("Z-3")};
    bars.capacity = est.capacityBytes;
    bars.headroomLabel = false;
    Scenario probe = sc;
    for (std::size_t s = 0; s < 4; ++s) {
        probe.cluster.dataParallel = kStrategies[s];
        m_estimates[s] = estimate(probe);
        bars.values.push_back(m_estimates[s].perGpu);
    }
    setBars(std::move(bars));
}

} // namespace headroom
