// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/traceindex.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

// Memory inside one annotated region of a run (a record_function name, ProfilerStep#N, an
// external_annotations START/END pair), as Mosaic's memory-by-annotation reports it.
struct RegionMemory {
    std::string name;
    std::int64_t start = 0, end = 0;   // in the device's time unit; end == INT64_MAX: never closed
    bool empty = true;                 // no event inside
    std::size_t first = 0, last = 0;   // the events inside
    std::int64_t allocatedAtStart = 0; // before its first event
    std::int64_t peakAllocated = 0;    // highest allocated after an event inside
    std::size_t peakEvent = 0;
    std::int64_t allocatedBytes = 0; // the sizes of the allocations made inside
    std::size_t allocations = 0;
    std::int64_t stillLiveBytes = 0; // of those, what is still live after its last event
    std::int64_t peakOverStart() const { return peakAllocated - allocatedAtStart; }
};

// The regions of a device's run that fall in the recording (at most `limit`, the first ones by start), each
// with the events inside found by time. Needs the device's times in order; none otherwise.
std::vector<RegionMemory> regionMemory(const Trace& trace, const TraceIndex& index,
                                       std::size_t limit = 10000);

} // namespace headroom
