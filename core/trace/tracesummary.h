// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/trace.h"

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace headroom {

inline constexpr std::size_t kBeforeFirstEvent = std::numeric_limits<std::size_t>::max();

struct DeviceSummary {
    std::string key;
    std::size_t entries = 0;
    std::map<std::string, std::uint64_t> actions;
    std::int64_t finalAllocated = 0, finalActive = 0, finalReserved = 0;
    std::int64_t peakAllocated = 0, peakActive = 0, peakReserved = 0;
    std::size_t segments = 0;
    std::size_t peakAllocatedAfter = kBeforeFirstEvent; // the event after which allocated peaks
    // Whether the file records allocated bytes (nvidia-smi logs do not: DeviceTrace::hasAllocatedTotals),
    // and, for such files, the event after which reserved peaks (where views mark the peak instead).
    bool allocatedRecorded = true;
    std::size_t peakReservedAfter = kBeforeFirstEvent;
    std::int64_t initialAllocated = 0, initialActive = 0, initialReserved = 0; // before the first event
    // Where the allocated peak sits, for a fleet of ranks (docs/formats.md section 5): times in µs whatever
    // the file's unit; the first step mark is the start of the first ProfilerStep#N or Optimizer.step
    // annotation, else the first event.
    std::int64_t firstUs = 0, lastUs = 0, stepMarkUs = 0, peakAllocatedUs = 0;
    std::int64_t peakReservedUs = 0; // where reserved first reaches its peak
    bool hasStepMark = false;
    std::int64_t reservedAtPeak = 0; // reserved when allocated peaks (reserved - allocated: fragmentation)
    // The highest allocated bytes in each of kProfileBuckets equal stretches of [firstUs, lastUs]; reserved
    // where the file records no allocated (a profile of zeros would say nothing of the run).
    std::vector<std::int64_t> profile;
    // The peak that tells one device (or rank) from another: allocated, or reserved where the file records
    // no allocated (an nvidia-smi log's devices all peak at 0 allocated).
    std::int64_t comparedPeak() const { return allocatedRecorded ? peakAllocated : peakReserved; }
    // The `oom` entries the allocator recorded (from the action counts).
    std::uint64_t ooms() const {
        const auto it = actions.find("oom");
        return it == actions.end() ? 0 : it->second;
    }
};
inline constexpr std::size_t kProfileBuckets = 128;

struct TraceSummary {
    TraceFormat format = TraceFormat::PytorchSnapshot;
    std::vector<DeviceSummary> devices;
};

// docs/formats.md section 5. Snapshots: final values from the segments' blocks, peaks by replaying the
// trace backwards from that final state; profiler traces, timelines and nvidia-smi: from their totals.
TraceSummary summarize(const Trace& trace);
// `unitSeconds`: seconds per unit of the time column; `stepMark`: the first step mark in that unit, if any.
DeviceSummary summarizeDevice(const DeviceTrace& device, double unitSeconds = 1e-6,
                              const std::int64_t* stepMark = nullptr);
// The start of the first ProfilerStep#N or Optimizer.step annotation that applies to `device`, or null.
const Annotation* firstStepMark(const Trace& trace, const std::string& device);

// The device with the highest peak (DeviceSummary::comparedPeak): the one a plan for one GPU describes (0
// when there is none).
std::size_t busiestDevice(const TraceSummary& summary);

} // namespace headroom
