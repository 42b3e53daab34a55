// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/traceindex.h"

#include <thread>

#include "core/checkednumbers.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace headroom {

namespace {

// Open lifetimes by address: open addressing with linear probing and backward-shift deletion, because a
// 10M-event trace opens and closes millions of them and std::unordered_map allocated a node for each.
class AddressMap {
public:
    static constexpr std::size_t kNone = SIZE_MAX;
    // Sets addr -> id; returns the id it replaced, or kNone.
    std::size_t put(std::uint64_t addr, std::size_t id) {
        if ((m_used + 1) * 2 > m_slots.size())
            grow();
        for (std::size_t i = slot(addr);; i = (i + 1) & m_mask) {
            Slot& s = m_slots[i];
            if (s.id == kNone) {
                s = {addr, id};
                ++m_used;
                return kNone;
            }
            if (s.addr == addr)
                return std::exchange(s.id, id);
        }
    }
    // Removes addr; returns its id, or kNone when absent.
    std::size_t take(std::uint64_t addr) {
        if (m_slots.empty())
            return kNone;
        std::size_t i = slot(addr);
        while (m_slots[i].id != kNone && m_slots[i].addr != addr)
            i = (i + 1) & m_mask;
        if (m_slots[i].id == kNone)
            return kNone;
        const std::size_t id = m_slots[i].id;
        // Backward shift: move later members of the run into the hole when their home allows it.
        std::size_t hole = i;
        for (std::size_t j = (i + 1) & m_mask; m_slots[j].id != kNone; j = (j + 1) & m_mask) {
            const std::size_t home = slot(m_slots[j].addr);
            if (((j - home) & m_mask) >= ((j - hole) & m_mask)) {
                m_slots[hole] = m_slots[j];
                hole = j;
            }
        }
        m_slots[hole].id = kNone;
        --m_used;
        return id;
    }
    bool contains(std::uint64_t addr) const {
        if (m_slots.empty())
            return false;
        for (std::size_t i = slot(addr); m_slots[i].id != kNone; i = (i + 1) & m_mask)
            if (m_slots[i].addr == addr)
                return true;
        return false;
    }

    template <typename F> void forEach(F f) const {
        for (const Slot& s : m_slots)
            if (s.id != kNone)
                f(s.addr, s.id);
    }

private:
    struct Slot {
        std::uint64_t addr = 0;
        std::size_t id = kNone;
    };
    std::size_t slot(std::uint64_t addr) const {
        return static_cast<std::size_t>((addr * 0x9E3779B97F4A7C15ull) >> 20) &
               m_mask; // addresses are aligned
    }
    void grow() {
        std::vector<Slot> old = std::move(m_slots);
        m_slots.assign(std::max<std::size_t>(64, old.size() * 2), Slot{});
        m_mask = m_slots.size() - 1;
        m_used = 0;
        for (const Slot& s : old)
            if (s.id != kNone)
                put(s.addr, s.id);
    }
    std::vector<Slot> m_slots;
    std::size_t m_mask = 0, m_used = 0;
};

std::size_t position(std::size_t afterEvent) {
    return afterEvent == kBeforeFirstEvent ? 0 : afterEvent + 1;
}

// The allocations behind the pointers, largest first (what every live-set query returns).
std::vector<Allocation> largestFirst(const std::vector<const Allocation*>& live) {
    std::vector<Allocation> out;
    out.reserve(live.size());
    for (const Allocation* a : live)
        out.push_back(*a);
    std::sort(out.begin(), out.end(),
              [](const Allocation& a, const Allocation& b) { return a.size > b.size; });
    return out;
}

} // namespace

TraceIndex::TraceIndex(const DeviceTrace& d, const DeviceSummary& summary)
    : m_device(d), m_peakAfter(summary.peakAllocatedAfter) {
    const std::size_t n = d.entries();
    m_initial = {summary.initialAllocated, summary.initialActive, summary.initialReserved, 0};
    m_allocated.resize(n);
    m_active.resize(n);
    m_reserved.resize(n);
    // Lifetimes are opened in event order, so `opened` is sorted by start as it grows; those that were live
    // before the trace began (a free of an address never allocated, or a block of the final state) go to
    // `before`, and the two are concatenated at the end instead of sorting millions of records.
    AddressMap openAlloc, openSeg;
    std::vector<Allocation> allocBefore, segBefore;
    std::uint64_t allocs = 0;
    for (const auto& [name, count] : d.actionCounts)
        if (name == "alloc")
            allocs += count;
    m_allocations.reserve(allocs);
    auto close = [&](AddressMap& open, BigVector<Allocation>& opened, std::vector<Allocation>& before,
                     std::size_t i) {
        if (const std::size_t id = open.take(d.addr[i]); id != AddressMap::kNone) {
            opened[id].end = i;
        } else { // live before the trace began
            before.push_back({d.addr[i], d.size[i], d.stack[i], kBeforeFirstEvent, i, d.stream[i]});
            if (&before == &allocBefore)
                ++m_ghostFrees;
        }
    };
    auto openAt = [&](AddressMap& open, BigVector<Allocation>& opened, std::size_t i) {
        const std::size_t previous = open.put(d.addr[i], opened.size());
        if (previous != AddressMap::kNone)
            opened[previous].end = i; // a reuse without a free: close the old one
        opened.push_back({d.addr[i], d.size[i], d.stack[i], i, n, d.stream[i], i});
    };
    const bool allocator = !d.hasTotals;
    // The byte series and the pairing of allocations with their frees read the same columns and write
    // nothing the other reads: the series run on a second thread (the window builds indexes off the GUI
    // thread, so this uses the machine's other core), halving this step of opening a trace.
    std::thread series([&] {
        std::int64_t a = m_initial.allocated, act = m_initial.active, r = m_initial.reserved;
        for (std::size_t i = 0; i < n; ++i) {
            const EventEffect e = eventEffect(d.action[i]);
            a = saturatingStep(a, e.allocated, d.size[i]);
            act = saturatingStep(act, e.active, d.size[i]);
            r = saturatingStep(r, e.reserved, d.size[i]);
            if (d.hasTotals) { // the file's own totals win over our sums
                a = act = d.allocatedTotal[i];
                r = d.reservedTotal[i];
            }
            m_allocated[i] = a;
            m_active[i] = act;
            m_reserved[i] = r;
        }
    });
    try {
        for (std::size_t i = 0; i < n; ++i) {
            switch (d.action[i]) {
            case TraceAction::Alloc:
                if (allocator)
                    openAt(openAlloc, m_allocations, i);
                break;
            case TraceAction::FreeRequested:
                close(openAlloc, m_allocations, allocBefore, i);
                break;
            case TraceAction::Free:
                if (allocator)
                    close(openAlloc, m_allocations, allocBefore, i);
                break;
            case TraceAction::SegmentAlloc:
            case TraceAction::SegmentMap:
                openAt(openSeg, m_segments, i);
                break;
            case TraceAction::SegmentFree:
            case TraceAction::SegmentUnmap:
                close(openSeg, m_segments, segBefore, i);
                break;
            case TraceAction::Oom:
                m_ooms.push_back({i, d.time[i], d.size[i], static_cast<std::int64_t>(d.addr[i]), {}});
                break;
            default:
                break;
            }
        }
    } catch (...) {
        series.join();
        throw;
    }
    series.join();
    // Blocks and segments of the final state that no event created were live all along.
    for (const auto& seg : d.segments) {
        if (!openSeg.contains(seg.address))
            segBefore.push_back({seg.address, seg.totalSize, 0, kBeforeFirstEvent, n, seg.stream});
        for (const auto& b : seg.blocks)
            if (b.state == SnapshotBlock::State::ActiveAllocated && !openAlloc.contains(b.address))
                allocBefore.push_back(
                    {b.address, b.requestedSize, b.stack, kBeforeFirstEvent, n, seg.stream});
    }
    m_allocations.insert(m_allocations.begin(), allocBefore.begin(), allocBefore.end());
    m_segments.insert(m_segments.begin(), segBefore.begin(), segBefore.end());
    m_allocLive = LifetimeIndex(m_allocations, n + 1);
    m_segLive = LifetimeIndex(m_segments, n + 1);
    for (auto& oom : m_ooms)
        oom.state = stateAfter(oom.index == 0 ? kBeforeFirstEvent : oom.index - 1);
}

std::vector<Allocation> TraceIndex::liveAfter(std::size_t k) const {
    std::vector<const Allocation*> live;
    const std::size_t p = std::min(position(k), events());
    m_allocLive.collect(m_allocations, p, live);
    return largestFirst(live);
}

std::vector<Allocation> TraceIndex::liveDuring(std::size_t from, std::size_t to) const {
    const std::size_t p0 = std::min(position(from), events());
    const std::size_t p1 = std::max(p0, std::min(position(to), events()));
    std::vector<const Allocation*> live;
    m_allocLive.collect(m_allocations, p0, live);
    // Those that start after p0 up to p1: a contiguous run of the start-sorted list.
    auto it = std::upper_bound(m_allocations.begin(), m_allocations.end(), p0,
                               [](std::size_t pos, const Allocation& a) { return pos < startPos(a); });
    for (; it != m_allocations.end() && startPos(*it) <= p1; ++it)
        if (endPos(*it) > startPos(*it))
            live.push_back(&*it);
    return largestFirst(live);
}

std::vector<std::size_t> TraceIndex::liveDuringIds(std::size_t from, std::size_t to) const {
    const std::size_t p0 = std::min(position(from), events());
    const std::size_t p1 = std::max(p0, std::min(position(to), events()));
    std::vector<const Allocation*> live;
    m_allocLive.collect(m_allocations, p0, live);
    std::vector<std::size_t> ids;
    ids.reserve(live.size());
    for (const Allocation* a : live)
        ids.push_back(static_cast<std::size_t>(a - &m_allocations[0]));
    auto it = std::upper_bound(m_allocations.begin(), m_allocations.end(), p0,
                               [](std::size_t pos, const Allocation& a) { return pos < startPos(a); });
    for (; it != m_allocations.end() && startPos(*it) <= p1; ++it)
        if (endPos(*it) > startPos(*it))
            ids.push_back(static_cast<std::size_t>(it - m_allocations.begin()));
    return ids;
}

std::vector<SegmentState> TraceIndex::segmentsAfter(std::size_t k) const {
    const std::size_t p = std::min(position(k), events());
    std::vector<const Allocation*> segs, allocs;
    m_segLive.collect(m_segments, p, segs);
    m_allocLive.collect(m_allocations, p, allocs);
    std::sort(allocs.begin(), allocs.end(),
              [](const Allocation* a, const Allocation* b) { return a->addr < b->addr; });
    std::vector<SegmentState> out;
    out.reserve(segs.size());
    for (const Allocation* seg : segs) {
        SegmentState s;
        s.segment = *seg;
        const std::uint64_t segEnd =
            seg->addr + static_cast<std::uint64_t>(std::max<std::int64_t>(seg->size, 0));
        std::uint64_t cursor = seg->addr;
        auto it = std::lower_bound(allocs.begin(), allocs.end(), seg->addr,
                                   [](const Allocation* a, std::uint64_t addr) { return a->addr < addr; });
        for (; it != allocs.end() && (*it)->addr < segEnd; ++it) {
            s.blocks.push_back(**it);
            s.allocated = saturatingAdd(s.allocated, (*it)->size);
            if ((*it)->addr > cursor)
                s.largestFree = std::max(s.largestFree, static_cast<std::int64_t>((*it)->addr - cursor));
            cursor = std::max(cursor, (*it)->addr +
                                          static_cast<std::uint64_t>(std::max<std::int64_t>((*it)->size, 0)));
        }
        if (segEnd > cursor)
            s.largestFree = std::max(s.largestFree, static_cast<std::int64_t>(segEnd - cursor));
        out.push_back(std::move(s));
    }
    std::sort(out.begin(), out.end(), [](const SegmentState& a, const SegmentState& b) {
        if (a.smallPool() != b.smallPool())
            return b.smallPool(); // large pool first: that is where the bytes are
        if (a.segment.stream != b.segment.stream)
            return a.segment.stream < b.segment.stream;
        return a.segment.addr < b.segment.addr;
    });
    return out;
}

std::vector<Allocation> liveAfterEvent(const DeviceTrace& d, std::size_t k) {
    const std::size_t n = d.entries();
    if (d.hasTotals)
        return {};
    const std::size_t p = position(k);
    AddressMap open;   // before p: address -> the event that allocated it
    AddressMap later;  // from p on: allocations the set does not hold
    AddressMap member; // from p on: address -> index in `live` until it is freed
    std::vector<Allocation> live;
    bool taken = false;
    auto take = [&] {
        open.forEach([&](std::uint64_t addr, std::size_t i) {
            member.put(addr, live.size());
            live.push_back({addr, d.size[i], d.stack[i], i, n, d.stream[i], i});
        });
        taken = true;
    };
    for (std::size_t i = 0; i < n; ++i) {
        if (!taken && i == p)
            take();
        const std::uint64_t addr = d.addr[i];
        switch (d.action[i]) {
        case TraceAction::Alloc:
            if (!taken) {
                open.put(addr, i); // a reuse without a free closes the old one, as TraceIndex does
            } else {
                if (const std::size_t id = member.take(addr); id != AddressMap::kNone)
                    live[id].end = i;
                later.put(addr, i);
            }
            break;
        case TraceAction::FreeRequested:
        case TraceAction::Free:
            if (!taken) {
                open.take(addr); // absent: freed before the trace began and before k, never in the set
            } else if (later.take(addr) == AddressMap::kNone) {
                if (const std::size_t id = member.take(addr); id != AddressMap::kNone)
                    live[id].end = i;
                else // live before the trace began, and still at k
                    live.push_back({addr, d.size[i], d.stack[i], kBeforeFirstEvent, i, d.stream[i]});
            }
            break;
        default:
            break;
        }
    }
    if (!taken)
        take();
    // Blocks of the final state that no event created were live all along.
    for (const auto& seg : d.segments)
        for (const auto& b : seg.blocks)
            if (b.state == SnapshotBlock::State::ActiveAllocated && !member.contains(b.address) &&
                !later.contains(b.address))
                live.push_back({b.address, b.requestedSize, b.stack, kBeforeFirstEvent, n, seg.stream});
    std::sort(live.begin(), live.end(),
              [](const Allocation& a, const Allocation& b) { return a.size > b.size; });
    return live;
}

MemoryState TraceIndex::stateAfter(std::size_t k) const {
    MemoryState s = m_initial;
    if (k != kBeforeFirstEvent && events() > 0) {
        k = std::min(k, events() - 1);
        s = {m_allocated[k], m_active[k], m_reserved[k], 0};
    }
    if (m_segments.empty())
        return s;
    for (const SegmentState& seg : segmentsAfter(k))
        s.largestFreeBlock = std::max(s.largestFreeBlock, seg.largestFree);
    return s;
}

} // namespace headroom
