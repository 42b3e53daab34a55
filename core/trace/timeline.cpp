// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/timeline.h"

#include <algorithm>
#include <cmath>

namespace headroom {

SeriesLod::SeriesLod(const BigVector<std::int64_t>& values) : m_values(&values) {
    // Level 1 summarises kFanout values, each level above kFanout blocks of the one below.
    std::size_t n = values.size();
    std::vector<std::pair<std::int64_t, std::int64_t>> level;
    for (std::size_t b = 0; b * kFanout < n; ++b) {
        const auto first = values.begin() + static_cast<std::ptrdiff_t>(b * kFanout);
        const auto last = values.begin() + static_cast<std::ptrdiff_t>(std::min(n, (b + 1) * kFanout));
        const auto [lo, hi] = std::minmax_element(first, last);
        level.emplace_back(*lo, *hi);
    }
    while (!level.empty()) {
        m_levels.push_back(std::move(level));
        const auto& below = m_levels.back();
        if (below.size() <= 1)
            break;
        level.clear();
        for (std::size_t b = 0; b * kFanout < below.size(); ++b) {
            std::pair<std::int64_t, std::int64_t> e = below[b * kFanout];
            for (std::size_t i = b * kFanout + 1; i < std::min(below.size(), (b + 1) * kFanout); ++i)
                e = {std::min(e.first, below[i].first), std::max(e.second, below[i].second)};
            level.push_back(e);
        }
    }
}

template <typename Visit> void SeriesLod::cover(std::size_t from, std::size_t to, Visit visit) const {
    std::size_t level = 0; // 0 = the values themselves
    while (from < to) {
        const bool top = level == m_levels.size();
        if (top || to - from < 2 * kFanout) {
            for (std::size_t i = from; i < to; ++i)
                visit(level, i);
            return;
        }
        const std::size_t headEnd = (from + kFanout - 1) / kFanout * kFanout;
        const std::size_t tailStart = to / kFanout * kFanout;
        for (std::size_t i = from; i < headEnd; ++i)
            visit(level, i);
        for (std::size_t i = tailStart; i < to; ++i)
            visit(level, i);
        from = headEnd / kFanout;
        to = tailStart / kFanout;
        ++level;
    }
}

std::pair<std::int64_t, std::int64_t> SeriesLod::range(std::size_t from, std::size_t to) const {
    if (!m_values)
        return {0, 0};
    to = std::min(to, m_values->size());
    if (from >= to)
        return {0, 0};
    std::int64_t lo = INT64_MAX, hi = INT64_MIN;
    cover(from, to, [&](std::size_t level, std::size_t i) {
        const auto [a, b] = entry(level, i);
        lo = std::min(lo, a);
        hi = std::max(hi, b);
    });
    return {lo, hi};
}

std::size_t SeriesLod::argMax(std::size_t from, std::size_t to) const {
    if (!m_values)
        return to;
    to = std::min(to, m_values->size());
    if (from >= to)
        return to;
    // Down from an entry holding the maximum to the first value equal to it (the first child whose
    // maximum is the target, level by level).
    auto descend = [&](std::size_t level, std::size_t i) {
        for (; level > 0; --level) {
            const std::size_t size = level == 1 ? m_values->size() : m_levels[level - 2].size();
            const std::int64_t target = entry(level, i).second;
            std::size_t j = i * kFanout;
            while (j + 1 < std::min(size, (i + 1) * kFanout) && entry(level - 1, j).second != target)
                ++j;
            i = j;
        }
        return i;
    };
    // Levels interleave in the walk, so an equal maximum met later may lie to the left: ties go to the
    // entry whose first maximum comes first.
    std::int64_t best = INT64_MIN;
    std::size_t at = to;
    cover(from, to, [&](std::size_t level, std::size_t i) {
        const std::int64_t v = entry(level, i).second;
        if (v > best)
            best = v, at = descend(level, i);
        else if (v == best)
            at = std::min(at, descend(level, i));
    });
    return at;
}

namespace {
std::size_t liveFrom(const Allocation& a) {
    return a.start == kBeforeFirstEvent ? 0 : a.start;
}
} // namespace

Timeline::Timeline(const TraceIndex& index, std::size_t bands)
    : m_index(index), m_allocated(index.allocatedSeries()), m_reserved(index.reservedSeries()) {
    const auto& time = index.device().time;
    // Without time_us a snapshot's time column holds the event indices: that is not real time.
    bool indices = true, ordered = true;
    for (std::size_t i = 0; i < time.size(); ++i) {
        indices = indices && time[i] == static_cast<std::int64_t>(i);
        ordered = ordered && (i == 0 || time[i] >= time[i - 1]);
    }
    m_hasTime = !time.empty() && ordered && !indices && time.back() > time.front();
    // The memory profiler stamps tensors that existed before it started with time -1: the run starts at the
    // first real timestamp, and those events sit at its start.
    if (m_hasTime) {
        const auto real = std::lower_bound(time.begin(), time.end(), std::int64_t(0));
        m_start = real == time.end() ? time.front() : *real;
        m_hasTime = time.back() > m_start;
    }
    m_max = std::max(m_allocated.range(0, index.events()).second, m_reserved.range(0, index.events()).second);
    chooseBands(bands);
}

void Timeline::setBandCount(std::size_t bands) {
    chooseBands(bands);
}

void Timeline::chooseBands(std::size_t count) {
    const auto& all = m_index.allocations();
    count = std::min(count, all.size());
    // One pass with a min-heap of the `count` largest so far (the largest first; equal sizes by start, so
    // the choice is stable): reading millions of sizes in order beats sorting their indices.
    auto larger = [&](std::uint32_t a, std::uint32_t b) {
        return all[a].size != all[b].size ? all[a].size > all[b].size : a < b;
    };
    std::vector<std::uint32_t> order;
    order.reserve(count + 1);
    for (std::size_t i = 0; i < all.size() && count > 0; ++i) {
        const auto id = static_cast<std::uint32_t>(i);
        if (order.size() < count) {
            order.push_back(id);
            std::push_heap(order.begin(), order.end(), larger);
        } else if (larger(id, order.front())) {
            std::pop_heap(order.begin(), order.end(), larger);
            order.back() = id;
            std::push_heap(order.begin(), order.end(), larger);
        }
    }
    std::sort(order.begin(), order.end()); // allocations are sorted by start: stack the earliest lowest
    m_bands.clear();
    m_breaks.clear();
    for (std::uint32_t i : order) {
        m_bands.push_back(all[i]);
        m_breaks.push_back(liveFrom(all[i]));
        m_breaks.push_back(all[i].end);
    }
    std::sort(m_breaks.begin(), m_breaks.end());
    m_breaks.erase(std::unique(m_breaks.begin(), m_breaks.end()), m_breaks.end());
}

std::pair<double, double> Timeline::domain(TimelineAxis axis) const {
    const std::size_t n = m_index.events();
    if (axis == TimelineAxis::Time && m_hasTime)
        return {static_cast<double>(m_start), static_cast<double>(m_index.device().time.back())};
    return {0.0, static_cast<double>(n)};
}

double Timeline::xOf(TimelineAxis axis, std::size_t event) const {
    if (axis == TimelineAxis::Time && m_hasTime && m_index.events() > 0)
        return static_cast<double>(
            std::max(m_start, m_index.device().time[std::min(event, m_index.events() - 1)]));
    return static_cast<double>(event);
}

std::size_t Timeline::eventAt(TimelineAxis axis, double x) const {
    const std::size_t n = m_index.events();
    if (n == 0)
        return kBeforeFirstEvent;
    if (axis == TimelineAxis::Time && m_hasTime) {
        const auto& time = m_index.device().time;
        auto it = std::upper_bound(time.begin(), time.end(), x,
                                   [](double v, std::int64_t t) { return v < static_cast<double>(t); });
        return it == time.begin() ? kBeforeFirstEvent : static_cast<std::size_t>(it - time.begin()) - 1;
    }
    if (!(x >= 0)) // also NaN
        return kBeforeFirstEvent;
    return x >= static_cast<double>(n - 1) ? n - 1 : static_cast<std::size_t>(std::floor(x));
}

TimelineFrame Timeline::frame(TimelineAxis axis, double x0, double x1, int width, TimelineDetail detail,
                              std::size_t shownAllocations) const {
    TimelineFrame f;
    f.width = std::max(width, 0);
    f.columns.resize(static_cast<std::size_t>(f.width));
    const bool classes = detail == TimelineDetail::Categories && m_classes;
    const bool stack = detail == TimelineDetail::Allocations && m_stack;
    const std::size_t nb = detail == TimelineDetail::Bands ? m_bands.size() : 0;
    f.bandBottom.assign(nb * f.columns.size(), -1);
    f.bandTop.assign(nb * f.columns.size(), -1);
    const std::size_t n = m_index.events();
    if (n == 0 || f.width == 0 || !(x1 > x0) || !std::isfinite(x0) || !std::isfinite(x1))
        return f;
    const bool time = axis == TimelineAxis::Time && m_hasTime;
    const auto& times = m_index.device().time;
    const auto [d0, d1] = domain(axis);
    // The last event strictly before x: the last whose state shows in a column ending at x.
    auto lastBefore = [&](double x) -> std::size_t {
        if (time) {
            auto it = std::lower_bound(times.begin(), times.end(), x,
                                       [](std::int64_t t, double v) { return static_cast<double>(t) < v; });
            return it == times.begin() ? kBeforeFirstEvent : static_cast<std::size_t>(it - times.begin()) - 1;
        }
        const double c = std::ceil(x) - 1;
        if (!(c >= 0))
            return kBeforeFirstEvent;
        return c >= static_cast<double>(n - 1) ? n - 1 : static_cast<std::size_t>(c);
    };
    const double dx = (x1 - x0) / f.width;
    std::vector<std::int64_t> bottom(nb), top(nb);
    if (classes)
        f.classBytes.assign(f.columns.size() * StackedSeries::kClasses, 0);
    for (int c = 0; c < f.width; ++c) {
        const double xa = x0 + c * dx, xb = x0 + (c + 1) * dx;
        TimelineColumn& col = f.columns[static_cast<std::size_t>(c)];
        if (xb <= d0 || xa > d1 || (!time && xa >= d1))
            continue;
        std::size_t first = eventAt(axis, xa);
        if (first == kBeforeFirstEvent)
            first = 0;
        std::size_t last = lastBefore(xb);
        if (last == kBeforeFirstEvent || last < first)
            last = first;
        col.valid = true;
        col.first = first;
        col.last = last;
        std::tie(col.allocatedMin, col.allocatedMax) = m_allocated.range(first, last + 1);
        std::tie(col.reservedMin, col.reservedMax) = m_reserved.range(first, last + 1);
        f.maxValue = std::max({f.maxValue, col.allocatedMax, col.reservedMax});
        if (classes || stack)
            col.classEvent = m_allocated.argMax(first, last + 1);
        if (classes) {
            const StackedSeries::Bytes b = m_classes->after(col.classEvent);
            std::copy(b.begin(), b.end(),
                      f.classBytes.begin() +
                          static_cast<std::ptrdiff_t>(static_cast<std::size_t>(c) * StackedSeries::kClasses));
        }
        // Every stacking the column shows: the one after `first`, and one after each break up to `last`.
        col.restBottom = INT64_MAX;
        auto stackAt = [&](std::size_t e) {
            std::int64_t sum = 0;
            for (std::size_t b = 0; b < nb; ++b) {
                const Allocation& a = m_bands[b];
                if (e < liveFrom(a) || e >= a.end)
                    continue;
                const std::size_t at = b * f.columns.size() + static_cast<std::size_t>(c);
                const std::int64_t bandTop = sum + a.size;
                f.bandBottom[at] = f.bandTop[at] < 0 ? sum : std::min(f.bandBottom[at], sum);
                f.bandTop[at] = std::max(f.bandTop[at], bandTop);
                sum = bandTop;
            }
            col.restBottom = std::min(col.restBottom, sum);
        };
        stackAt(first);
        for (auto it = std::upper_bound(m_breaks.begin(), m_breaks.end(), first);
             it != m_breaks.end() && *it <= last; ++it)
            stackAt(*it);
        col.restBottom = std::min(col.restBottom, col.allocatedMax);
    }
    if (stack) { // one layout for the view: the largest allocations live in it, at each column's peak
        std::vector<std::size_t> events(f.columns.size(), kBeforeFirstEvent);
        std::size_t from = SIZE_MAX, to = 0;
        for (std::size_t c = 0; c < f.columns.size(); ++c)
            if (f.columns[c].valid) {
                events[c] = f.columns[c].classEvent;
                from = std::min(from, f.columns[c].first);
                to = std::max(to, f.columns[c].last);
            }
        if (from != SIZE_MAX)
            f.stack = m_stack->layout(events, from, to, shownAllocations);
    }
    return f;
}

} // namespace headroom
