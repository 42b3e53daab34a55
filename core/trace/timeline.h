// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/allocationstack.h"
#include "core/trace/stackedseries.h"
#include "core/trace/traceindex.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace headroom {

// The minimum and maximum of any range of a series without reading the range: a pyramid of per-block
// extremes (kFanout values per block, level above level), so a query reads at most 2 * kFanout values per
// level. Drawing asks it once per pixel column, which keeps every peak and dip at any zoom.
class SeriesLod {
public:
    static constexpr std::size_t kFanout = 32;
    SeriesLod() = default;
    explicit SeriesLod(const BigVector<std::int64_t>& values);
    // Extremes of values[from, to); {0, 0} when the range is empty.
    std::pair<std::int64_t, std::int64_t> range(std::size_t from, std::size_t to) const;
    // The first index in [from, to) holding the range's maximum (`to` when the range is empty): the moment
    // a column's stacked categories are read at, so that the stack's top is the column's peak.
    std::size_t argMax(std::size_t from, std::size_t to) const;

private:
    // Visits the fewest entries that cover values[from, to): visit(level, i) for the partial blocks at both
    // ends of each level, then the whole blocks between them one level higher (level 0: the values).
    template <typename Visit> void cover(std::size_t from, std::size_t to, Visit visit) const;
    // An entry's (min, max): a value's twice at level 0, a block's above.
    std::pair<std::int64_t, std::int64_t> entry(std::size_t level, std::size_t i) const {
        return level == 0 ? std::make_pair((*m_values)[i], (*m_values)[i]) : m_levels[level - 1][i];
    }

    const BigVector<std::int64_t>* m_values = nullptr;
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> m_levels; // level 1 upwards
};

enum class TimelineAxis { Time, Event };
// What a frame carries besides the lines: the largest allocations as bands, each column's split by class
// (memory by category), or every allocation in its place (the allocation stack).
enum class TimelineDetail { Bands, Categories, Allocations };

// One pixel column of a drawn timeline: the events whose state it shows and their extremes.
struct TimelineColumn {
    bool valid = false;              // false outside the recording
    std::size_t first = 0, last = 0; // events shown: the states after first..last
    std::int64_t allocatedMin = 0, allocatedMax = 0;
    std::int64_t reservedMin = 0, reservedMax = 0;
    std::int64_t restBottom = 0; // the "everything else" band spans restBottom..allocatedMax
    // With classes (memory by category): the state the stack shows, the first event of the column's
    // allocated maximum, so that the stack's top is the column's peak.
    std::size_t classEvent = 0;
};

// What one redraw needs: per column the series' extremes, and per separate band its extent.
struct TimelineFrame {
    int width = 0;
    std::vector<TimelineColumn> columns;
    // [band * width + column]: the band's lowest bottom and highest top in that column; top < 0 = not live.
    std::vector<std::int64_t> bandBottom, bandTop;
    // With classes: [column * StackedSeries::kClasses + class], the bytes of each class after classEvent.
    std::vector<std::int64_t> classBytes;
    // With an allocation stack: each column's stack after classEvent.
    AllocationStack::Layout stack;
    std::int64_t maxValue = 0; // highest allocated or reserved value in the frame
};

// A device's active-memory timeline, ready to draw at any zoom: the largest allocations stacked as their
// own bands (each a rectangle in events, so the stack changes only where one starts or ends), everything
// else as one band up to the allocated line, and the reserved line. A frame costs
// O(width * (log n + bands)), never O(events).
class Timeline {
public:
    Timeline(const TraceIndex& index, std::size_t bands = 20);

    const TraceIndex& index() const { return m_index; }
    // Sets how many of the largest allocations get their own band.
    void setBandCount(std::size_t bands);
    const std::vector<Allocation>& bands() const { return m_bands; } // in stacking order, bottom first
    // Real time is usable when the events carry non-decreasing timestamps (not just their indices).
    bool hasTime() const { return m_hasTime; }
    // The x extent of the recording on an axis: event indices 0..n, or first..last event time.
    std::pair<double, double> domain(TimelineAxis axis) const;
    double xOf(TimelineAxis axis, std::size_t event) const;
    // The last event at or before x (kBeforeFirstEvent when x precedes the first).
    std::size_t eventAt(TimelineAxis axis, double x) const;
    // The highest allocated or reserved value of the whole run (a y scale that stays put while zooming).
    std::int64_t maxValue() const { return m_max; }
    // Extremes of allocated / reserved bytes after events [from, to) (a selected range's peak).
    std::pair<std::int64_t, std::int64_t> allocatedExtremes(std::size_t from, std::size_t to) const {
        return m_allocated.range(from, to);
    }
    std::pair<std::int64_t, std::int64_t> reservedExtremes(std::size_t from, std::size_t to) const {
        return m_reserved.range(from, to);
    }
    // The allocated bytes split into classes (memory by category), or none; frames then carry each column's
    // split. Shared, because it is computed off the GUI thread and handed to the lane when ready.
    void setClasses(std::shared_ptr<const StackedSeries> classes) { m_classes = std::move(classes); }
    const StackedSeries* classes() const { return m_classes.get(); }
    // The allocations sorted for "every allocation in its place" (built off the GUI thread), or none.
    void setAllocationStack(std::shared_ptr<const AllocationStack> stack) { m_stack = std::move(stack); }
    const AllocationStack* allocationStack() const { return m_stack.get(); }
    const std::shared_ptr<const AllocationStack>& sharedAllocationStack() const { return m_stack; }
    // Reduces the view [x0, x1) to `width` columns, with the detail asked for (when the timeline has it:
    // bands always, categories with classes, allocations with an allocation stack).
    TimelineFrame frame(TimelineAxis axis, double x0, double x1, int width,
                        TimelineDetail detail = TimelineDetail::Bands,
                        std::size_t shownAllocations = AllocationStack::kDefaultShown) const;

private:
    void chooseBands(std::size_t count);

    const TraceIndex& m_index;
    SeriesLod m_allocated, m_reserved;
    bool m_hasTime = false;
    std::int64_t m_max = 0;
    std::int64_t m_start = 0; // the first real timestamp
    std::vector<Allocation> m_bands;
    std::vector<std::size_t> m_breaks; // events after which a band starts or stops being live, sorted
    std::shared_ptr<const StackedSeries> m_classes;
    std::shared_ptr<const AllocationStack> m_stack;
};

} // namespace headroom
