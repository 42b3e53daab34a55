// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/tracesummary.h"

#include "core/checkednumbers.h"

#include <algorithm>

namespace headroom {

namespace {

// Fills what a forward pass over the events knows, starting from the state before the first event (which
// the backward replay found): the reserved bytes and the time at the allocated peak, and the allocated
// profile.
void forwardPass(const DeviceTrace& d, DeviceSummary& s, double unitSeconds, const std::int64_t* stepMark) {
    const std::size_t n = d.entries();
    const double toUs = unitSeconds * 1e6;
    auto us = [&](std::int64_t t) { return clampToInt64(static_cast<double>(t) * toUs); };
    s.profile.assign(n ? kProfileBuckets : 0, 0);
    s.reservedAtPeak = s.initialReserved;
    if (!n)
        return;
    s.firstUs = us(d.time[0]);
    s.lastUs = us(d.time[n - 1]);
    s.hasStepMark = stepMark != nullptr;
    s.stepMarkUs = stepMark ? us(*stepMark) : s.firstUs;
    s.peakAllocatedUs = s.peakReservedUs = s.firstUs;
    const bool allocatedRecorded = !d.hasTotals || d.hasAllocatedTotals;
    std::int64_t mostReserved = s.initialReserved;
    const std::int64_t t0 = d.time[0];
    // The last event may come a unit before the first (unsorted profiler times): no span, one bucket.
    const double span = static_cast<double>(d.time[n - 1]) - static_cast<double>(t0) + 1;
    const double bucketsPerUnit = span != 0 ? static_cast<double>(kProfileBuckets) / span : 0;
    std::int64_t allocated = s.initialAllocated, reserved = s.initialReserved;
    const std::int64_t initial = allocatedRecorded ? s.initialAllocated : s.initialReserved;
    std::vector<std::int64_t> level(kProfileBuckets, initial); // after a bucket's last event
    std::vector<char> seen(kProfileBuckets, 0);
    for (std::size_t i = 0; i < n; ++i) {
        const EventEffect e = eventEffect(d.action[i]);
        allocated = saturatingStep(allocated, e.allocated, d.size[i]);
        reserved = saturatingStep(reserved, e.reserved, d.size[i]);
        if (d.hasTotals) {
            allocated = d.allocatedTotal[i];
            reserved = d.reservedTotal[i];
        }
        if (i == s.peakAllocatedAfter) {
            s.reservedAtPeak = reserved;
            s.peakAllocatedUs = us(d.time[i]);
        }
        if (reserved > mostReserved) {
            mostReserved = reserved;
            s.peakReservedUs = us(d.time[i]);
        }
        // Times are not always sorted (profiler events): a bucket is clamped, never out of range.
        const double at = (static_cast<double>(d.time[i]) - static_cast<double>(t0)) * bucketsPerUnit;
        const auto b = at > 0 // false for NaN too: never cast one
                           ? static_cast<std::size_t>(std::min(at, static_cast<double>(kProfileBuckets - 1)))
                           : std::size_t{0};
        const std::int64_t drawn = allocatedRecorded ? allocated : reserved;
        s.profile[b] = seen[b] ? std::max(s.profile[b], drawn) : drawn;
        seen[b] = 1;
        level[b] = drawn;
    }
    // A stretch without events holds what the last event left.
    for (std::size_t b = 1; b < kProfileBuckets; ++b)
        if (!seen[b]) {
            s.profile[b] = level[b] = level[b - 1];
            seen[b] = 1;
        }
}

} // namespace

DeviceSummary summarizeDevice(const DeviceTrace& d, double unitSeconds, const std::int64_t* stepMark) {
    DeviceSummary s;
    s.key = d.key;
    s.entries = d.entries();
    s.actions = d.actionCounts;
    s.segments = d.segments.size();
    const std::size_t n = d.entries();
    if (d.hasTotals) {
        // The file records the totals after every event: peaks and finals are read off them.
        for (std::size_t i = 0; i < n; ++i) {
            if (i == 0 || d.allocatedTotal[i] > s.peakAllocated) {
                s.peakAllocated = d.allocatedTotal[i];
                s.peakAllocatedAfter = i;
            }
            if (i == 0 || d.reservedTotal[i] > s.peakReserved) {
                s.peakReserved = d.reservedTotal[i];
                s.peakReservedAfter = i;
            }
        }
        s.allocatedRecorded = d.hasAllocatedTotals;
        if (n) {
            s.finalAllocated = d.allocatedTotal.back();
            s.finalReserved = d.reservedTotal.back();
        }
        s.finalActive = s.finalAllocated;
        s.peakActive = s.peakAllocated;
        forwardPass(d, s, unitSeconds, stepMark);
        return s;
    }
    for (const auto& seg : d.segments) {
        s.finalReserved = saturatingAdd(s.finalReserved, seg.totalSize);
        for (const auto& b : seg.blocks) {
            if (b.state == SnapshotBlock::State::ActiveAllocated) {
                s.finalAllocated = saturatingAdd(s.finalAllocated, b.requestedSize);
                s.finalActive = saturatingAdd(s.finalActive, b.requestedSize);
            } else if (b.state == SnapshotBlock::State::ActivePendingFree) {
                s.finalActive = saturatingAdd(
                    s.finalActive, b.requestedSize); // freed by its owner, still in use by a stream
            }
        }
    }
    // Walk back from the final state: undo each event and keep the largest state seen.
    std::int64_t allocated = s.finalAllocated, active = s.finalActive, reserved = s.finalReserved;
    s.peakAllocated = allocated;
    s.peakActive = active;
    s.peakReserved = reserved;
    s.peakAllocatedAfter = n ? n - 1 : kBeforeFirstEvent;
    for (std::size_t i = n; i-- > 0;) {
        // Undo the event: its effect, reversed.
        const EventEffect e = eventEffect(d.action[i]);
        allocated = saturatingStep(allocated, -e.allocated, d.size[i]);
        active = saturatingStep(active, -e.active, d.size[i]);
        reserved = saturatingStep(reserved, -e.reserved, d.size[i]);
        // `allocated` is now the state before event i, i.e. after event i - 1.
        if (allocated > s.peakAllocated) {
            s.peakAllocated = allocated;
            s.peakAllocatedAfter = i == 0 ? kBeforeFirstEvent : i - 1;
        }
        s.peakActive = std::max(s.peakActive, active);
        s.peakReserved = std::max(s.peakReserved, reserved);
    }
    s.initialAllocated = allocated;
    s.initialActive = active;
    s.initialReserved = reserved;
    forwardPass(d, s, unitSeconds, stepMark);
    return s;
}

const Annotation* firstStepMark(const Trace& trace, const std::string& device) {
    for (const Annotation& a : trace.annotations) // by start time
        if ((a.device.empty() || a.device == device) &&
            (a.name.rfind("ProfilerStep#", 0) == 0 || a.name.find("Optimizer.step") != std::string::npos))
            return &a;
    return nullptr;
}

TraceSummary summarize(const Trace& trace) {
    TraceSummary out;
    out.format = trace.format;
    const double unit = timeUnitSeconds(trace.format);
    for (const auto& d : trace.devices) {
        const Annotation* mark = firstStepMark(trace, d.key);
        out.devices.push_back(summarizeDevice(d, unit, mark ? &mark->start : nullptr));
    }
    return out;
}

std::size_t busiestDevice(const TraceSummary& summary) {
    std::size_t device = 0;
    for (std::size_t d = 1; d < summary.devices.size(); ++d)
        if (summary.devices[d].comparedPeak() > summary.devices[device].comparedPeak())
            device = d;
    return device;
}

} // namespace headroom
