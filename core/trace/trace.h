// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/bigvector.h"
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace headroom {

enum class TraceFormat {
    PytorchSnapshot,
    PytorchSnapshotJson,
    ChromeTrace,
    MemoryTimeline,
    MemoryTimelineRaw,
    NvidiaSmiCsv
};
const char* traceFormatName(TraceFormat f);
// Seconds per unit of a format's time column (µs for snapshots and profiler traces, ns for timelines).
double timeUnitSeconds(TraceFormat format);

enum class TraceAction : std::uint8_t {
    Alloc,
    FreeRequested,
    FreeCompleted,
    Free, // legacy: requested and completed at once
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Oom,
    Snapshot,
    Other,
};
TraceAction traceActionFromName(const std::string& name);
const char* traceActionName(TraceAction a); // "alloc", ...; "other" for Other

// What an event does to the three totals of docs/formats.md section 5: +1 adds its size, -1 takes it away.
// allocated lives from alloc to free_requested, active to free_completed, reserved from segment_alloc/map
// to segment_free/unmap; a legacy free ends both allocated and active.
struct EventEffect {
    std::int8_t allocated = 0, active = 0, reserved = 0;
};
constexpr EventEffect eventEffect(TraceAction a) {
    switch (a) {
    case TraceAction::Alloc:
        return {1, 1, 0};
    case TraceAction::FreeRequested:
        return {-1, 0, 0};
    case TraceAction::FreeCompleted:
        return {0, -1, 0};
    case TraceAction::Free:
        return {-1, -1, 0};
    case TraceAction::SegmentAlloc:
    case TraceAction::SegmentMap:
        return {0, 0, 1};
    case TraceAction::SegmentFree:
    case TraceAction::SegmentUnmap:
        return {0, 0, -1};
    default:
        return {};
    }
}

struct Frame {
    std::uint32_t name = 0;     // into Trace::strings
    std::uint32_t filename = 0; // into Trace::strings
    std::int64_t line = 0;
};

// A block of a segment in the snapshot's final state.
struct SnapshotBlock {
    std::uint64_t address = 0;
    std::int64_t size = 0;
    std::int64_t requestedSize = 0; // requested_size, else history[0].real_size, else size
    enum class State : std::uint8_t { Inactive, ActiveAllocated, ActivePendingFree } state = State::Inactive;
    std::uint32_t stack = 0;
};
struct SnapshotSegment {
    std::uint64_t address = 0;
    std::int64_t totalSize = 0;
    std::int64_t stream = 0;
    bool small = false;      // segment_type "small" (the pool of requests up to 1 MiB)
    bool expandable = false; // is_expandable
    std::vector<SnapshotBlock> blocks;
};

// Text a trace entry carries besides its numbers: `user_metadata` (torch.cuda.memory._set_memory_metadata)
// or `compile_context` (torch.compile's frame). Kept sparse and sorted by event: most entries have none.
struct EventNote {
    std::uint32_t event = 0;
    std::uint32_t text = 0; // into Trace::strings
};
// The text of `event` in a sorted note list, 0 ("") when it has none.
std::uint32_t noteAt(const std::vector<EventNote>& notes, std::size_t event);

// A labelled stretch of time: a snapshot's `external_annotations` (START/END pairs, e.g.
// "Optimizer.step#AdamW.step") or a profiler's ProfilerStep#N. Times in the device's time unit.
struct Annotation {
    std::string device; // "" when it applies to every device
    std::int64_t start = 0;
    std::int64_t end = 0; // == start for an instant; INT64_MAX when the END was never recorded
    std::string name;
};

// One device's events, stored by column. Snapshots fill the allocator columns; profiler traces,
// memory timelines and nvidia-smi logs record totals (allocated/reserved after each event) instead.
struct DeviceTrace {
    std::string key;              // "0", "1", ... or "cpu"
    BigVector<std::int64_t> time; // µs for snapshots and profiler traces, ns for timelines
    BigVector<TraceAction> action;
    BigVector<std::uint64_t> addr;
    BigVector<std::int64_t> size;
    BigVector<std::int64_t> stream;
    BigVector<std::uint32_t> stack;                    // into Trace::stacks (0 = no stack)
    std::map<std::string, std::uint64_t> actionCounts; // by the name the file uses
    std::vector<SnapshotSegment> segments;             // final state (snapshots)
    std::vector<EventNote> userMetadata, compileContext;
    // Totals recorded by the file itself (profiler traces, timelines, nvidia-smi).
    BigVector<std::int64_t> allocatedTotal;
    BigVector<std::int64_t> reservedTotal;
    bool hasTotals = false;
    bool hasReservedTotals = false;
    // nvidia-smi records the device's used memory alone (read as reserved): allocatedTotal is all zeros,
    // not a measurement, and views say "allocated not recorded" rather than a peak of 0.
    bool hasAllocatedTotals = true;

    std::size_t entries() const { return action.size(); }
    // A snapshot dumped without _record_memory_history: the memory alive when it was taken, no events, so
    // no peak of the run (calibration, validation and compare each refuse or say so).
    bool stateOnly() const { return !hasTotals && entries() == 0; }
    // Adds one event to every column, so that the columns always have the same length.
    void append(std::int64_t t, TraceAction a, std::uint64_t address, std::int64_t bytes,
                std::int64_t streamId = 0, std::uint32_t stackId = 0) {
        time.push_back(t);
        action.push_back(a);
        addr.push_back(address);
        size.push_back(bytes);
        stream.push_back(streamId);
        stack.push_back(stackId);
    }
};

// The caching allocator's settings as a snapshot records them (`allocator_settings`, PyTorch 2.1+).
struct RecordedAllocatorSettings {
    bool recorded = false;
    std::string conf;               // PYTORCH_CUDA_ALLOC_CONF as written
    std::int64_t maxSplitSize = -1; // bytes; -1: unlimited
    double garbageCollectionThreshold = 0;
    bool expandableSegments = false;
    // roundup_power2_divisions: {interval start in MiB (1, 2, 4, ...), divisions}; 0 = none.
    std::vector<std::pair<std::uint64_t, int>> roundupPower2Divisions;
};

// A loaded trace: devices plus the interned strings and deduplicated stacks they point into.
struct Trace {
    TraceFormat format = TraceFormat::PytorchSnapshot;
    std::vector<std::string> strings{""};       // index 0 = ""
    std::vector<std::vector<Frame>> stacks{{}}; // index 0 = no stack
    std::vector<DeviceTrace> devices;           // in device order ("0" < "1" < ... < "cpu")
    std::vector<Annotation> annotations;        // by start time
    std::vector<std::string> warnings;
    RecordedAllocatorSettings allocatorSettings;

    DeviceTrace& device(const std::string& key); // finds or adds, keeping order
    const DeviceTrace* findDevice(const std::string& key) const;
};

} // namespace headroom
