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
    // asks the index for what was live in it and keeps the largest.
    auto overlaps = [&](const Allocation& a) {
        return (a.start == kBeforeFirstEvent || a.start <= to) && a.end > from;
    };
    if (to - from < n / 8) {
        std::vector<std::size_t> live = m_index->liveDuringIds(from, to);
        auto larger = [&](std::size_t a, std::size_t b) {
            return all[a].size != all[b].size ? all[a].size > all[b].size : a < b;
        };
        const std::size_t keep = std::min(maxShown, live.size());
        std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(keep), live.end(), larger);
        for (std::size_t k = 0; k < keep; ++k)
            if (overlaps(all[live[k]]))
                out.shown.push_back(static_cast<std::uint32_t>(live[k]));
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
    // The shown lifetimes side by side: every column reads all of them.
    struct Life {
        std::size_t start, end;
        std::int64_t size;
    };
    std::vector<Life> lives;
    lives.reserve(out.shown.size());
    for (std::uint32_t id : out.shown)
        lives.push_back({all[id].start, all[id].end, all[id].size});
    // At most every shown allocation in every column: reserved once (untouched pages cost nothing), since
    // growing a vector of a zoomed view's hundreds of thousands of pieces faulted in each copy anew.
    out.pieces.reserve(events.size() * lives.size());
    for (std::size_t c = 0; c < events.size(); ++c) {
        out.columnStart[c] = static_cast<std::uint32_t>(out.pieces.size());
        const std::size_t e = events[c];
        if (e == kBeforeFirstEvent || e >= n)
            continue;
        // The live ones stacked from 0 in one pass, then lifted onto the rest: what the shown bands do not
        // explain, at the bottom (never below 0: a damaged file's sizes).
        const std::size_t first = out.pieces.size();
        std::int64_t y = 0;
        for (std::uint32_t s = 0; s < lives.size(); ++s) {
            const Life& l = lives[s];
            if ((l.start != kBeforeFirstEvent && l.start > e) || e >= l.end)
                continue;
            const std::int64_t top = saturatingAdd(y, l.size);
            out.pieces.push_back({s, y, top});
            y = top;
        }
        const std::int64_t rest = std::max<std::int64_t>(0, saturatingSub(allocated[e], y));
        out.rest[c] = rest;
        for (std::size_t k = first; k < out.pieces.size(); ++k) {
            out.pieces[k].bottom = saturatingAdd(out.pieces[k].bottom, rest);
            out.pieces[k].top = saturatingAdd(out.pieces[k].top, rest);
        }
    }
    out.columnStart[events.size()] = static_cast<std::uint32_t>(out.pieces.size());
    return out;
}

} // namespace headroom
