// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/cancellation.h"
#include "core/plan/solvers.h"

#include <array>
#include <utility>
#include <vector>

namespace headroom {

enum class SweepVariable { MicroBatch, SequenceLength, GpuCount };

struct SweepResult {
    SweepVariable variable = SweepVariable::MicroBatch;
    std::vector<std::pair<double, double>> points; // (value, what the GPU holds at the peak: gpuPeakBytes)
    // The largest micro-batch (batch) or sequence (context) that fits, or the smallest GPU count that fits;
    // 0: none.
    long long limit = 0;
};
// Peak memory per GPU against one setting, on a log scale (48 points), and the limit that fits; the GPU
// count grows data parallelism with the other parallel sizes as they are.
SweepResult computeSweep(const Scenario& sc, const Estimate& est, SweepVariable variable, EstimateFn estimate,
                         const Cancellation& cancel = {});

// The same model and cluster under DDP, ZeRO-1, ZeRO-2 and ZeRO-3.
std::array<Estimate, 4> strategyEstimates(const Scenario& sc, EstimateFn estimate);

} // namespace headroom
