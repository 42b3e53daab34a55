// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/tracesummary.h"

#include "core/checkednumbers.h"

#include <algorithm>

namespace headroom {

DeviceSummary summarizeDevice(const DeviceTrace& d) {
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
            s.peakReserved = i == 0 ? d.reservedTotal[i] : std::max(s.peakReserved, d.reservedTotal[i]);
        }
        if (n) {
            s.finalAllocated = d.allocatedTotal.back();
            s.finalReserved = d.reservedTotal.back();
        }
        s.finalActive = s.finalAllocated;
        s.peakActive = s.peakAllocated;
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
        const std::int64_t size = d.size[i];
        switch (d.action[i]) {
        case TraceAction::Alloc:
            allocated = saturatingSub(allocated, size);
            active = saturatingSub(active, size);
            break;
        case TraceAction::FreeRequested:
            allocated = saturatingAdd(allocated, size);
            break;
        case TraceAction::FreeCompleted:
            active = saturatingAdd(active, size);
            break;
        case TraceAction::Free:
            allocated = saturatingAdd(allocated, size);
            active = saturatingAdd(active, size);
            break;
        case TraceAction::SegmentAlloc:
        case TraceAction::SegmentMap:
            reserved = saturatingSub(reserved, size);
            break;
        case TraceAction::SegmentFree:
        case TraceAction::SegmentUnmap:
            reserved = saturatingAdd(reserved, size);
            break;
        default:
            break;
        }
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
    return s;
}

TraceSummary summarize(const Trace& trace) {
    TraceSummary out;
    out.format = trace.format;
    for (const auto& d : trace.devices)
        out.devices.push_back(summarizeDevice(d));
    return out;
}

std::size_t busiestDevice(const TraceSummary& summary) {
    std::size_t device = 0;
    for (std::size_t d = 1; d < summary.devices.size(); ++d)
        if (summary.devices[d].peakAllocated > summary.devices[device].peakAllocated)
            device = d;
    return device;
}

} // namespace headroom
