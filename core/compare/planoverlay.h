// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/comparison.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

// The estimate's step laid over a recorded run: each point of the plan's phase timeline placed at a moment
// of the run, in the measured categories, so that plan and run read on one axis.
struct PlanOverlayPoint {
    Phase phase = Phase::Forward;
    double progress = 0; // 0..1 within its phase
    double event = 0;    // where it falls, as a fractional event index
    double time = 0;     // and in the device's time unit (interpolated between the anchors' times)
    std::array<std::int64_t, kMeasuredCategories> bytes{};
    std::int64_t total() const;
};

struct PlanOverlay {
    // How the step was placed on the run: "optimizer step" (the Optimizer.step region after the allocated
    // peak closes the backward and is the optimizer phase; the forward starts where the previous step's
    // region ended, else at the recording's start) or "allocated peak" (no such region: the forward runs from
    // the recording's start to the peak, the backward from the peak to the recording's end, no optimizer).
    std::string alignment;
    std::vector<PlanOverlayPoint> points; // in the order of the plan's phases
    // The plan's bytes at a fractional event index (linear between points; nothing outside the step).
    bool at(double event, std::array<std::int64_t, kMeasuredCategories>* bytes) const;
};

// The plan of `scenario` (its most-loaded stage) over the run of `index`.
PlanOverlay planOverlay(const Scenario& scenario, const Trace& trace, const TraceIndex& index,
                        int pointsPerPhase = 16);

} // namespace headroom
