// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/tracesummary.h"

#include <cstdint>
#include <vector>

namespace headroom {

// One allocation's lifetime in event indices: live after event `start` (kBeforeFirstEvent: already live
// when the trace begins) until event `end` frees it (the trace's length: still live at the end).
struct Allocation {
    std::uint64_t addr = 0;
    std::int64_t size = 0;
    std::uint32_t stack = 0;
    std::size_t start = kBeforeFirstEvent;
    std::size_t end = 0;
    std::int64_t stream = 0;
    std::size_t alloc = kBeforeFirstEvent; // the event that allocated it (its notes' event)
};

// Positions count applied events: position p is the state after event p - 1; 0 is before the first.
// A lifetime is live at positions [startPos, endPos).
inline std::size_t startPos(const Allocation& a) {
    return a.start == kBeforeFirstEvent ? 0 : a.start + 1;
}
inline std::size_t endPos(const Allocation& a) {
    return a.end + 1;
}

// "Which lifetimes are live at position p" without scanning them all. Positions are cut into buckets of
// kBucket; a segment tree over the buckets holds each lifetime at the O(log buckets) nodes whose buckets it
// covers entirely, so a lifetime that spans the whole run is stored once or twice instead of once per
// bucket (28,000 never-freed segments over 2,400 checkpoints took 275 MB that way). The lifetimes that only
// partly cover p's bucket are found among those starting in it (a run of the start-sorted items) and those
// ending in it (grouped by bucket with a counting sort: no comparison sort over millions of lifetimes).
class LifetimeIndex {
public:
    static constexpr std::size_t kBucket = 4096;

    LifetimeIndex() = default;
    // `items` sorted by startPos; `positions` is the number of events + 1.
    LifetimeIndex(const BigVector<Allocation>& items, std::size_t positions);
    // Appends the items live at position p.
    void collect(const BigVector<Allocation>& items, std::size_t p,
                 std::vector<const Allocation*>& out) const;

private:
    std::size_t m_leaves = 1;                       // a power of two >= the number of buckets
    std::vector<std::vector<std::uint32_t>> m_node; // 2 * m_leaves, root at 1
    std::vector<std::uint32_t> m_endIds;            // item ids grouped by the bucket their endPos falls in
    std::vector<std::size_t> m_endOffset; // per bucket, where its group starts in m_endIds (+ one end)
};

} // namespace headroom
