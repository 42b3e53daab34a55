// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/allocator/cachingallocator.h"
#include "core/cancellation.h"
#include "core/trace/trace.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

// The settings a snapshot recorded (allocator_settings), as the model takes them; PyTorch's defaults when
// the snapshot has none.
AllocatorSettings settingsFromRecording(const RecordedAllocatorSettings& recorded);

// What the recording itself shows of the allocator: its segment events and the reserved bytes they imply.
struct RecordedSegments {
    std::uint64_t startReserved = 0; // segments that existed before the first event
    std::uint64_t peakReserved = 0;
    int segmentAllocs = 0;
    int segmentFrees = 0;
    int ooms = 0;
    bool hasSegmentEvents = false;
};
RecordedSegments recordedSegments(const DeviceTrace& device);

struct ReplayOptions {
    AllocatorSettings settings;
    bool recordedAddresses = false; // new segments where the recording put them (replaying the recording)
    // Start from the segments cached when the trace began (replaying the recording); else only from the
    // blocks live then, placed by the model (a what-if: the cached segments belong to the old settings).
    bool startingSegments = true;
    bool keepSeries = true; // fill ReplayResult::reserved (8 bytes per event: only what is drawn keeps it)
    CachingAllocatorModel::AddressRule rule = CachingAllocatorModel::AddressRule::Ascending;
    Cancellation cancel; // polled every few thousand events: a replay nobody waits for stops
};

struct ReplayResult {
    std::vector<AllocatorEvent> events;  // the model's segment events and OOMs
    std::vector<std::uint64_t> reserved; // after each trace event
    std::uint64_t startReserved = 0;
    std::uint64_t peakReserved = 0;
    std::size_t peakAt = 0;
    std::uint64_t allocatedAtPeak = 0; // reserved - allocated at the peak: what fragmentation held
    std::uint64_t largestFreeAtPeak = 0;
    int segmentAllocs = 0; // segment_alloc and segment_map
    int segmentFrees = 0;  // segment_free and segment_unmap
    int ooms = 0;
    int unknownFrees = 0; // frees of blocks neither the trace nor its starting state allocated
    std::size_t addressMatches = 0, allocations = 0; // blocks placed where the recording placed them
    // Replaying under the recorded settings: whether every segment event came out in size and order.
    bool matchesRecording = false;
    std::string firstDifference; // "" when they match
};

// Rebuilds the allocator's state before the first event from the final snapshot (undoing the trace's
// segment and block events), then replays every alloc and completed free through the model. Runs of
// recorded segment_free are replayed as empty_cache at the same point.
ReplayResult replayDevice(const DeviceTrace& device, const ReplayOptions& options);

// The allocator what-if of one device (docs/formats.md section 10): the recording's own segment events, the
// model replaying it under the recorded settings with the recorded addresses, and the model under other
// settings with ascending and with descending segment addresses (the band the address choice spans).
struct DeviceWhatIf {
    std::string device;
    AllocatorSettings recordedSettings;
    RecordedSegments recorded;
    ReplayResult replayed;
    ReplayResult baseline; // the recorded settings from the what-if's start (only the live blocks)
    ReplayResult whatif;   // ascending addresses
    ReplayResult whatifDescending;
    std::uint64_t bandLow = 0, bandHigh = 0; // peak reserved over both address rules
};
// One device of a trace (index into trace.devices).
DeviceWhatIf whatIfDevice(const Trace& trace, std::size_t device, const AllocatorSettings& whatif,
                          const Cancellation& cancel = {});
// Every device of a snapshot that records allocator events. Throws Error when the trace is not a PyTorch
// snapshot (nothing to replay).
std::vector<DeviceWhatIf> allocatorWhatIf(const Trace& trace, const AllocatorSettings& whatif);

} // namespace headroom
