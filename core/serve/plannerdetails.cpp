// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/serve/plannerdetails.h"

namespace headroom {

PlannerDetails plannerDetails(const Scenario& sc, const Estimate& est, SweepVariable sweep,
                              const Cancellation& cancel) {
    PlannerDetails d;
    d.phases = phaseTimeline(sc, est.mostLoadedStage, 2);
    cancel.check();
    d.savings = rankSavings(sc);
    cancel.check();
    if (sc.mode == Mode::Training)
        d.strategies = strategyEstimates(sc, &estimatePeak);
    else
        d.serving = servingCurve(sc);
    cancel.check();
    if (!est.serving.engine)
        d.sweep = computeSweep(sc, est, sweep, &estimatePeak, cancel);
    return d;
}

} // namespace headroom
