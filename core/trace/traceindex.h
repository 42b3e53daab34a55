// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/lifetimeindex.h"
#include "core/trace/trace.h"
#include "core/trace/tracesummary.h"

#include <cstdint>
#include <vector>

namespace headroom {

// One reserved segment at a moment and the live allocations inside it, by address.
struct SegmentState {
    Allocation segment;
    std::vector<Allocation> blocks;
    std::int64_t allocated = 0;
    std::int64_t largestFree = 0;
    bool smallPool() const { return segment.size <= (std::int64_t(2) << 20); } // 2 MiB: kSmallBuffer
};

struct MemoryState {
    std::int64_t allocated = 0, active = 0, reserved = 0;
    std::int64_t largestFreeBlock = 0; // inside reserved segments, between live allocations
    std::int64_t fragmentation() const { return reserved - allocated; }
};

struct OomEvent {
    std::size_t index = 0;
    std::int64_t time = 0;
    std::int64_t requested = 0;
    std::int64_t deviceFree = 0;
    MemoryState state;
};

// Answers "what was live at event k" for one device without rescanning the trace: allocations are
// paired with their frees once, and a LifetimeIndex finds those live at any moment.
class TraceIndex {
public:
    TraceIndex(const DeviceTrace& device, const DeviceSummary& summary);

    const DeviceTrace& device() const { return m_device; }
    std::size_t events() const { return m_device.entries(); }
    // State after event k (kBeforeFirstEvent: before the first).
    MemoryState stateAfter(std::size_t k) const;
    // Allocations live after event k, largest first.
    std::vector<Allocation> liveAfter(std::size_t k) const;
    std::vector<Allocation> liveAtPeak() const { return liveAfter(m_peakAfter); }
    // Allocations live at any moment after event `from` up to after event `to` (a selected range).
    std::vector<Allocation> liveDuring(std::size_t from, std::size_t to) const;
    // The same set as indices into allocations(), in no order (no copies, no sort).
    std::vector<std::size_t> liveDuringIds(std::size_t from, std::size_t to) const;
    // Reserved segments after event k with their live blocks, by pool, stream and address.
    std::vector<SegmentState> segmentsAfter(std::size_t k) const;
    // Frees of allocations the trace never saw allocated: it started mid-run (recording began late, or
    // the max_entries ring buffer dropped its beginning).
    std::size_t ghostFrees() const { return m_ghostFrees; }
    bool hasSegments() const { return !m_segments.empty(); }
    std::size_t peakAfter() const { return m_peakAfter; }
    const std::vector<OomEvent>& ooms() const { return m_ooms; }
    const BigVector<Allocation>& allocations() const { return m_allocations; }
    // Allocated / active / reserved bytes after each event (the timeline).
    const BigVector<std::int64_t>& allocatedSeries() const { return m_allocated; }
    const BigVector<std::int64_t>& reservedSeries() const { return m_reserved; }

private:
    const DeviceTrace& m_device;
    std::size_t m_peakAfter;
    BigVector<Allocation> m_allocations; // sorted by start
    BigVector<Allocation> m_segments;    // segment lifetimes, same scheme
    LifetimeIndex m_allocLive, m_segLive;
    BigVector<std::int64_t> m_allocated, m_active, m_reserved;
    MemoryState m_initial;
    std::size_t m_ghostFrees = 0;
    std::vector<OomEvent> m_ooms;
};

// The allocations live after event k, largest first, as TraceIndex::liveAfter gives them, from one pass
// that keeps only the open addresses: for a reader of many files that builds no index (a fleet of ranks).
std::vector<Allocation> liveAfterEvent(const DeviceTrace& device, std::size_t k);

} // namespace headroom
