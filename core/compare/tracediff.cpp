// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/tracediff.h"

#include "core/checkednumbers.h"
#include "core/compare/comparison.h"
#include "core/trace/frames.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace headroom {

namespace {

std::string whereOf(const Trace& trace, std::uint32_t stack) {
    const std::size_t user = topUserFrame(trace, stack);
    return user == std::string::npos ? std::string("(no stack recorded)")
                                     : frameText(trace, trace.stacks[stack][user]);
}

std::vector<FrameDelta> sortedByChange(std::map<std::string, FrameDelta>& groups) {
    std::vector<FrameDelta> out;
    out.reserve(groups.size());
    for (auto& [frame, d] : groups) {
        d.frame = frame;
        out.push_back(d);
    }
    std::stable_sort(out.begin(), out.end(), [](const FrameDelta& x, const FrameDelta& y) {
        return saturatingAbs(x.difference()) > saturatingAbs(y.difference());
    });
    return out;
}

} // namespace

TraceDiff diffAtPeaks(const Trace& traceA, const TraceIndex& a, const Trace& traceB, const TraceIndex& b,
                      const AttributionRules& rules, const Scenario* scenario) {
    TraceDiff d;
    d.deviceA = a.device().key;
    d.deviceB = b.device().key;
    d.a = attribute(traceA, a, a.peakAfter() == kBeforeFirstEvent ? 0 : a.peakAfter(), rules, scenario);
    d.b = attribute(traceB, b, b.peakAfter() == kBeforeFirstEvent ? 0 : b.peakAfter(), rules, scenario);
    d.allocatedRecorded = a.device().hasAllocatedTotals && b.device().hasAllocatedTotals;
    d.reservedA = peaksFromFirstAllocation(a).reserved;
    d.reservedB = peaksFromFirstAllocation(b).reserved;
    if (!d.allocatedRecorded) // one side's allocations against nothing recorded: no frame is "only in A"
        return d;
    std::map<std::string, FrameDelta> frames, unmatched;
    // Same size and same top user frame: the same tensor of the program, wherever it landed.
    std::map<std::pair<std::string, std::int64_t>, long> pending; // > 0: more in A, < 0: more in B
    for (const auto& p : d.a.allocations) {
        const std::string w = whereOf(traceA, p.allocation.stack);
        frames[w].bytesA = saturatingAdd(frames[w].bytesA, p.allocation.size);
        ++frames[w].countA;
        ++pending[{w, p.allocation.size}];
    }
    for (const auto& p : d.b.allocations) {
        const std::string w = whereOf(traceB, p.allocation.stack);
        frames[w].bytesB = saturatingAdd(frames[w].bytesB, p.allocation.size);
        ++frames[w].countB;
        --pending[{w, p.allocation.size}];
    }
    for (const auto& [key, n] : pending) {
        if (n == 0)
            continue;
        FrameDelta& u = unmatched[key.first];
        // Sizes and counts from the files: saturated, never overflowing.
        if (n > 0)
            u.bytesA = saturatingAdd(u.bytesA, saturatingMul(key.second, n)),
            u.countA += static_cast<std::size_t>(n);
        else
            u.bytesB = saturatingAdd(u.bytesB, saturatingMul(key.second, -n)),
            u.countB += static_cast<std::size_t>(-n);
    }
    d.byFrame = sortedByChange(frames);
    d.unmatched = sortedByChange(unmatched);
    return d;
}

} // namespace headroom
