// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/allocationstack.h"

#include "core/checkednumbers.h"

#include <algorithm>
#include <numeric>

namespace headroom {

AllocationStack::AllocationStack(const TraceIndex& index) : m_index(&index) {
    const auto& all = index.allocations();
    m_bySize.resize(std::min<std::size_t>(all.size(), UINT32_MAX));
    std::iota(m_bySize.begin(), m_bySize.end(), 0u);
    std::stable_sort(m_bySize.begin(), m_bySize.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return all[a].size > all[b].size; });
}

namespace {
// Live after event e: allocated at or before e (or before the trace), freed after it.
bool liveAt(const Allocation& a, std::size_t e) {
    return (a.start == kBeforeFirstEvent || a.start <= e) && e < a.end;
}
} // namespace

AllocationStack::Layout AllocationStack::layout(const std::vector<std::size_t>& events, std::size_t from,
                                                std::size_t to, std::size_t maxShown) const {
    Layout out;
    out.events = events;
    out.columnStart.assign(events.size() + 1, 0);
    out.rest.assign(events.size(), 0);
    if (!m_index || m_index->events() == 0)
        return out;
    const auto& all = m_index->allocations();
    const std::size_t n = m_index->events();
    to = std::min(to, n - 1);
    from = std::min(from, to);
    // The largest allocations live at some moment of [from, to]. A wide view holds the run's largest, found
    // early in the size order; a narrow one (fewer events than the size order would have to be read through)
    // asks the index for what was live in it.
    auto overlaps = [&](const Allocation& a) {
        return (a.start == kBeforeFirstEvent || a.start <= to) && a.end > from;
    };
    if (to - from < n / 8) {
        std::vector<Allocation> live = m_index->liveDuring(from, to);
        // liveDuring returns copies, largest first: find their ids by (start, address) in the start-sorted
        // list.
        for (const Allocation& a : live) {
            if (out.shown.size() >= maxShown)
                break;
            auto it =
                std::lower_bound(all.begin(), all.end(), a, [](const Allocation& x, const Allocation& y) {
                    return startPos(x) < startPos(y);
                });
            for (; it != all.end() && startPos(*it) == startPos(a); ++it)
                if (it->addr == a.addr && it->end == a.end) {
                    if (overlaps(*it))
                        out.shown.push_back(static_cast<std::uint32_t>(it - all.begin()));
                    break;
                }
        }
    } else {
        for (std::uint32_t id : m_bySize) {
            if (out.shown.size() >= maxShown)
                break;
            if (overlaps(all[id]))
                out.shown.push_back(id);
        }
    }
    std::sort(out.shown.begin(), out.shown.end()); // ids are in start order: the stacking order
    const auto& allocated = m_index->allocatedSeries();
    for (std::size_t c = 0; c < events.size(); ++c) {
        out.columnStart[c] = static_cast<std::uint32_t>(out.pieces.size());
        const std::size_t e = events[c];
        if (e == kBeforeFirstEvent || e >= n)
            continue;
        std::int64_t shownBytes = 0;
        for (std::uint32_t s = 0; s < out.shown.size(); ++s)
            if (liveAt(all[out.shown[s]], e))
                shownBytes = saturatingAdd(shownBytes, all[out.shown[s]].size);
        // What the shown bands do not explain, at the bottom; never below 0 (a damaged file's sizes).
        const std::int64_t rest = std::max<std::int64_t>(0, saturatingSub(allocated[e], shownBytes));
        out.rest[c] = rest;
        std::int64_t y = rest;
        for (std::uint32_t s = 0; s < out.shown.size(); ++s) {
            const Allocation& a = all[out.shown[s]];
            if (!liveAt(a, e))
                continue;
            out.pieces.push_back({s, y, saturatingAdd(y, a.size)});
            y = saturatingAdd(y, a.size);
        }
    }
    out.columnStart[events.size()] = static_cast<std::uint32_t>(out.pieces.size());
    return out;
}

} // namespace headroom
