// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/attribution.h"
#include "core/compare/planoverlay.h"
#include "core/trace/regions.h"
#include "core/trace/stackedseries.h"
#include "core/trace/timeline.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace headroom {

// Memory by category for every allocation of a device's run: the classes a Timeline stacks (class k is
// MeasuredCategory k). Shares categorizeRun's rules, tensor table and peak with compare.
std::shared_ptr<const StackedSeries> categorySeries(const Trace& trace, const TraceIndex& index,
                                                    const AttributionRules& rules,
                                                    const Scenario* scenario = nullptr);

// One stretch of a run's timeline (docs/formats.md section 14).
struct TimelineBucket {
    double start = 0, end = 0;       // on the axis: the device's time unit, or event indices
    std::size_t first = 0, last = 0; // the events whose states the bucket holds
    std::int64_t allocated = 0;      // after `last`
    std::int64_t reserved = 0;       // after `last`
    std::int64_t allocatedMax = 0, reservedMax = 0;
    std::size_t maxEvent = 0; // the first event of the bucket's allocated maximum (else reserved's)
    std::array<std::int64_t, kMeasuredCategories> bytes{};      // by category after `last`
    std::array<std::int64_t, kMeasuredCategories> bytesAtMax{}; // by category after maxEvent
    bool planned = false;                                       // the plan's step covers `last`
    std::array<std::int64_t, kMeasuredCategories> planBytes{};  // the plan there, by category
};

struct RunTimeline {
    std::string device;
    bool timeAxis = false;     // buckets cut real time (else event indices)
    double secondsPerUnit = 0; // of the time axis
    bool byCategory = false;   // false: the format records totals, not allocations
    // False for a file that records no allocated bytes (nvidia-smi): the peak and each bucket's maximum are
    // then reserved's, the one counter it has.
    bool allocatedRecorded = true;
    std::size_t peakEvent = 0; // the allocated peak (reserved's where allocated is not recorded)
    std::int64_t peakAllocated = 0;
    std::array<std::int64_t, kMeasuredCategories> peakBytes{};
    std::vector<TimelineBucket> buckets;
    double origin = 0;                 // the axis value the buckets start at (time 0 of the output)
    std::vector<RegionMemory> regions; // annotated regions (time axis only)
    bool hasPlan = false;              // a scenario was given: its step laid over the run
    PlanOverlay plan;
};

// Cuts a device's run into `buckets` equal stretches of its time axis (event indices without timestamps)
// and reads each one's totals and categories, as the drawn timeline reduces its pixel columns (a bucket
// holds the state at its start and each event inside it). With a scenario, its plan over the run too.
RunTimeline runTimeline(const Trace& trace, const TraceIndex& index, const AttributionRules& rules,
                        const Scenario* scenario, int buckets);

} // namespace headroom
