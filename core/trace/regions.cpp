// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/regions.h"

#include "core/checkednumbers.h"
#include "core/trace/timeline.h"

#include <algorithm>

namespace headroom {

std::vector<RegionMemory> regionMemory(const Trace& trace, const TraceIndex& index, std::size_t limit) {
    std::vector<RegionMemory> out;
    const DeviceTrace& d = index.device();
    const auto& time = d.time;
    const std::size_t n = index.events();
    if (n == 0 || !std::is_sorted(time.begin(), time.end()))
        return out;
    const auto& allocated = index.allocatedSeries();
    const SeriesLod lod(allocated);                // a region's peak without reading its events
    const auto& allocations = index.allocations(); // sorted by start
    for (const Annotation& a : trace.annotations) {
        if (out.size() >= limit)
            break;
        if (!a.device.empty() && a.device != d.key)
            continue;
        RegionMemory r;
        r.name = a.name;
        r.start = a.start;
        r.end = a.end;
        const auto from = std::lower_bound(time.begin(), time.end(), a.start);
        const auto to = std::upper_bound(time.begin(), time.end(), a.end);
        if (from < to) {
            r.empty = false;
            r.first = static_cast<std::size_t>(from - time.begin());
            r.last = static_cast<std::size_t>(to - time.begin()) - 1;
            r.allocatedAtStart =
                r.first == 0 ? index.stateAfter(kBeforeFirstEvent).allocated : allocated[r.first - 1];
            r.peakEvent = lod.argMax(r.first, r.last + 1);
            r.peakAllocated = allocated[r.peakEvent];
            // The allocations made inside: a run of the start-sorted lifetimes.
            auto it = std::lower_bound(allocations.begin(), allocations.end(), r.first,
                                       [](const Allocation& x, std::size_t e) {
                                           return x.start == kBeforeFirstEvent || x.start < e;
                                       });
            for (; it != allocations.end() && it->start <= r.last; ++it) {
                ++r.allocations;
                r.allocatedBytes = saturatingAdd(r.allocatedBytes, it->size);
                if (it->end > r.last)
                    r.stillLiveBytes = saturatingAdd(r.stillLiveBytes, it->size);
            }
        } else {
            // An instant or a region between events: the state holding then.
            const std::size_t before = static_cast<std::size_t>(from - time.begin());
            r.allocatedAtStart = r.peakAllocated =
                before == 0 ? index.stateAfter(kBeforeFirstEvent).allocated : allocated[before - 1];
        }
        out.push_back(std::move(r));
    }
    return out;
}

} // namespace headroom
