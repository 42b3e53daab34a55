// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/runtimeline.h"

#include <algorithm>

namespace headroom {

static_assert(StackedSeries::kClasses == kMeasuredCategories, "class k is MeasuredCategory k");

std::shared_ptr<const StackedSeries> categorySeries(const Trace& trace, const TraceIndex& index,
                                                    const AttributionRules& rules, const Scenario* scenario) {
    const std::vector<MeasuredCategory> categories = categorizeRun(trace, index, rules, scenario);
    std::vector<std::uint8_t> classes(categories.size());
    std::transform(categories.begin(), categories.end(), classes.begin(),
                   [](MeasuredCategory c) { return static_cast<std::uint8_t>(c); });
    return std::make_shared<StackedSeries>(index, classes,
                                           static_cast<std::uint8_t>(MeasuredCategory::Unattributed));
}

RunTimeline runTimeline(const Trace& trace, const TraceIndex& index, const AttributionRules& rules,
                        const Scenario* scenario, int buckets) {
    RunTimeline out;
    out.device = index.device().key;
    out.secondsPerUnit = timeUnitSeconds(trace.format);
    Timeline timeline(index, 0);
    std::shared_ptr<const StackedSeries> series = categorySeries(trace, index, rules, scenario);
    out.byCategory = series->valid();
    if (out.byCategory)
        timeline.setClasses(series);
    const std::size_t n = index.events();
    if (n == 0 || buckets < 1)
        return out;
    out.timeAxis = timeline.hasTime();
    const TimelineAxis axis = out.timeAxis ? TimelineAxis::Time : TimelineAxis::Event;
    const auto [x0, last] = timeline.domain(axis);
    // The last event's state belongs to the last bucket: on the time axis the range ends just after it.
    const double x1 = out.timeAxis ? last + std::max(1.0, (last - x0) * 1e-9) : last;
    const TimelineFrame frame = timeline.frame(axis, x0, x1, buckets, TimelineDetail::Categories);
    out.origin = x0;
    // (No plan over a run that records no allocated bytes: nothing to place its step by, planOverlay.)
    if (scenario && scenario->model.known && index.device().hasAllocatedTotals) {
        out.hasPlan = true;
        out.plan = planOverlay(*scenario, trace, index);
    }
    if (out.timeAxis)
        out.regions = regionMemory(trace, index);
    const double dx = (x1 - x0) / buckets;
    const auto& allocated = index.allocatedSeries();
    const auto& reserved = index.reservedSeries();
    out.allocatedRecorded = index.device().hasAllocatedTotals;
    // What the run is read by: allocated, or reserved where the file records no allocated bytes.
    const auto& read = out.allocatedRecorded ? allocated : reserved;
    out.peakEvent = index.peakAfter() == kBeforeFirstEvent ? 0 : index.peakAfter();
    if (!out.allocatedRecorded)
        out.peakEvent = static_cast<std::size_t>(
            std::max_element(reserved.begin(), reserved.begin() + static_cast<std::ptrdiff_t>(n)) -
            reserved.begin());
    out.peakAllocated = allocated[out.peakEvent];
    if (out.byCategory)
        out.peakBytes = series->after(out.peakEvent);
    for (int c = 0; c < buckets; ++c) {
        const TimelineColumn& col = frame.columns[static_cast<std::size_t>(c)];
        if (!col.valid)
            continue;
        TimelineBucket b;
        b.start = x0 + c * dx;
        b.end = x0 + (c + 1) * dx;
        b.first = col.first;
        b.last = col.last;
        b.allocated = allocated[col.last];
        b.reserved = reserved[col.last];
        b.allocatedMax = col.allocatedMax;
        b.reservedMax = col.reservedMax;
        if (out.byCategory) {
            b.maxEvent = col.classEvent;
            b.bytes = series->after(col.last);
            std::copy_n(frame.classBytes.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(c) *
                                                                               StackedSeries::kClasses),
                        kMeasuredCategories, b.bytesAtMax.begin());
        } else { // no classes, so no index of the maximum from the frame: the bucket's events, once
            b.maxEvent = col.first;
            for (std::size_t e = col.first; e <= col.last; ++e)
                if (read[e] > read[b.maxEvent])
                    b.maxEvent = e;
        }
        if (out.hasPlan)
            b.planned = out.plan.at(static_cast<double>(b.last), &b.planBytes);
        out.buckets.push_back(b);
    }
    return out;
}

} // namespace headroom
