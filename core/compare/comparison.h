// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/checkednumbers.h"
#include "core/compare/attribution.h"
#include "core/compare/codeorigin.h"
#include "core/serve/estimate.h"

#include <array>
#include <string>

namespace headroom {

// The estimate beside what a trace measured, at the trace's allocated peak, category by category
// (docs/formats.md section 6).
struct Comparison {
    std::string device;
    Attribution measured;
    std::array<std::int64_t, kMeasuredCategories> estimated{};
    std::int64_t estimatedTotal = 0;
    // A trace of a first step: the optimizer states alive at the peak were created by its step, after the
    // forward and backward, which a plan of a later step (states alive throughout) does not describe. Then
    // the highest point before the step plus those states: what a later step's loss would reach.
    bool firstStep = false;
    std::int64_t createdStates = 0, laterStepPeak = 0;
    // Which framework's code the stacks at the peak name, and the profile the scenario planned with: when
    // they differ, codeOriginAdvice says which profile plans that code.
    CodeOrigin code;
    Framework planned = Framework::PyTorch;
    // The same scenario planned with the profile of that code, where a caller that can read it so planned
    // it (core/io/codeprofile.h): its allocated bytes in the measured categories and its reserved peak.
    // Negative: not planned.
    double codePlanAllocated = -1, codePlanReserved = -1;
    // The run's allocator as its snapshot recorded it (allocator_settings), where its expandable segments
    // differ from the scenario's: reservedEstimated is then planned as the run ran, and this says so
    // (allocatorSettingsAdvice). "" otherwise.
    std::string allocatorNote;
    // codeOriginAdvice, and with the code's profile planned, what it plans against what was measured.
    std::string codeAdvice() const;
    // codeAdvice, then allocatorNote.
    std::string advice() const;
    // Reserved: the trace's segments at their most (from its first allocation on) and the plan's
    // max_memory_reserved(); 0 measured when the trace records no segments or is a first step.
    std::int64_t reservedMeasured = 0;
    double reservedEstimated = 0;
    double reservedError() const {
        return reservedMeasured > 0 ? reservedEstimated / static_cast<double>(reservedMeasured) - 1 : 0.0;
    }
    // A trace that records no allocated bytes (nvidia-smi's memory.used, DeviceTrace::hasAllocatedTotals):
    // its categories and allocated total are 0 for want of a record, and what it can be compared by is what
    // the driver saw in use, the CUDA context and memory outside PyTorch included, against the plan's
    // peak on the GPU (Estimate::gpuPeakBytes). reservedMeasured is then 0: the log's "reserved" holds the
    // context too, which max_memory_reserved() does not.
    bool allocatedRecorded = true;
    // A snapshot with no events (torch.cuda.memory._snapshot() without _record_memory_history): what it
    // measured is the memory when it was taken, which need not be the run's peak; the text says so.
    bool eventsRecorded = true;
    std::int64_t usedMeasured = 0;
    double usedEstimated = 0;
    double usedError() const {
        return usedMeasured > 0 ? usedEstimated / static_cast<double>(usedMeasured) - 1 : 0.0;
    }
    std::int64_t difference() const { return saturatingSub(estimatedTotal, measured.total); }
    // (estimate - measured) / measured; 0 when nothing was measured.
    double relativeError() const {
        return measured.total ? static_cast<double>(difference()) / static_cast<double>(measured.total) : 0.0;
    }
    // The estimate against laterStepPeak (a first step's trace only).
    double laterStepError() const {
        return laterStepPeak ? static_cast<double>(saturatingSub(estimatedTotal, laterStepPeak)) /
                                   static_cast<double>(laterStepPeak)
                             : 0.0;
    }
};

// "" where the run's allocator (a snapshot's allocator_settings) had the scenario's expandable segments, or
// recorded no settings; else one clause saying which the run had.
std::string allocatorSettingsAdvice(const Scenario& scenario, const RecordedAllocatorSettings& recorded);

// "1.58 GiB": bytes in GiB with two decimals, as the comparisons' sentences write them.
std::string gibText(double bytes);

// What the estimate says the caching allocator hands out, in the measured categories: the estimate's
// categories without the CUDA context, the allocator's own overhead and communication buffers (NCCL's live
// outside the allocator). Master weights count as optimizer states; attention scores and logits as
// activations; gather buffers as temporaries.
// Workspaces (planned or calibrated) are workspaces on both sides.
// One moment of the estimate (a phase timeline point's breakdown) in the measured categories.
std::array<std::int64_t, kMeasuredCategories> breakdownInMeasuredCategories(const Breakdown& bytes);
std::array<std::int64_t, kMeasuredCategories> estimateInMeasuredCategories(const Estimate& estimate);

// The differences in words, largest first: "activations 1.02 GiB more measured than estimated, ...",
// categories under 1% of the measured peak left out.
std::string namedDifferences(const Comparison& c, std::size_t most = 3);

// A run's allocated and reserved at their most from its first allocation on: a recording that begins by
// releasing what an earlier run in the process left cached counts from there. Both 0 when the trace records
// no segments.
struct CounterPeaks {
    std::int64_t allocated = 0, reserved = 0;
};
CounterPeaks peaksFromFirstAllocation(const TraceIndex& index);

Comparison compareAtPeak(const Scenario& scenario, const Estimate& estimate, const Trace& trace,
                         const TraceIndex& index, const AttributionRules& rules);

} // namespace headroom
