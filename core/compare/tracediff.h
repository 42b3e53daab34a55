// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/checkednumbers.h"
#include "core/compare/attribution.h"

#include <string>
#include <vector>

namespace headroom {

// Live bytes and allocations under one top user frame ("forward (model.py:39)"), in run A and run B.
struct FrameDelta {
    std::string frame;
    std::int64_t bytesA = 0, bytesB = 0;
    std::size_t countA = 0, countB = 0;
    std::int64_t difference() const { return saturatingSub(bytesB, bytesA); }
};

// Two recorded runs (before and after a change, two ranks) aligned at their allocated peaks: the totals,
// the difference by category and by top user frame, and the allocations present in one and not the other
// (matched by size and top user frame, since addresses differ between runs).
struct TraceDiff {
    std::string deviceA, deviceB;
    Attribution a, b;
    std::vector<FrameDelta> byFrame;   // largest |difference| first
    std::vector<FrameDelta> unmatched; // allocations without a counterpart, by frame (bytesA: only in A)
    std::int64_t difference() const { return saturatingSub(b.total, a.total); }
    // Each run's reserved at its most from its first allocation on (peaksFromFirstAllocation; 0 where the
    // file records neither segments nor reserved totals). Where either file records no allocated bytes (an
    // nvidia-smi log, whose memory.used is read as reserved), these are what the runs are compared by: the
    // allocated figures, categories and frames are empty for want of a record.
    bool allocatedRecorded = true;
    std::int64_t reservedA = 0, reservedB = 0;
    std::int64_t reservedDifference() const { return saturatingSub(reservedB, reservedA); }
};

// `scenario` (optional) describes the workload of both runs, for size matching (attribute()).
TraceDiff diffAtPeaks(const Trace& traceA, const TraceIndex& a, const Trace& traceB, const TraceIndex& b,
                      const AttributionRules& rules, const Scenario* scenario = nullptr);

} // namespace headroom
