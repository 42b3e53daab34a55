// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/cancellation.h"
#include "core/plan/sweeps.h"
#include "core/serve/estimate.h"

#include <array>
#include <optional>
#include <vector>

namespace headroom {

// Everything the planner shows of a scenario beyond its estimate: the most-loaded stage's step, the ranked
// single changes, and for training the DDP/ZeRO comparison and a sweep, for inference the serving curve
// (and the sweep without an engine). Tens of estimates: the window computes it off the GUI thread, the
// report and the CLI in place; the views only draw it.
struct PlannerDetails {
    std::vector<TimelinePoint> phases; // two points a phase (the curves are linear within one)
    std::vector<Saving> savings;       // rankSavings
    std::optional<std::array<Estimate, 4>> strategies; // training: DDP, ZeRO-1, ZeRO-2, ZeRO-3
    std::optional<SweepResult> sweep;  // not under a serving engine (its memory is its budget)
    std::vector<ServingPoint> serving; // inference
};
PlannerDetails plannerDetails(const Scenario& sc, const Estimate& est, SweepVariable sweep,
                              const Cancellation& cancel = {});

} // namespace headroom
