// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/timelinejson.h"

namespace headroom {

namespace {

nlohmann::json byCategory(const std::array<std::int64_t, kMeasuredCategories>& bytes) {
    nlohmann::json j = nlohmann::json::object();
    for (std::size_t i = 0; i < kMeasuredCategories; ++i)
        j[measuredCategoryKey(static_cast<MeasuredCategory>(i))] = bytes[i];
    return j;
}

} // namespace

nlohmann::json runTimelineToJson(const RunTimeline& run, const std::string& traceName) {
    // Times in seconds from the bucket grid's start on the time axis, event indices otherwise.
    const double origin = run.origin;
    auto at = [&](double x) { return run.timeAxis ? (x - origin) * run.secondsPerUnit : x; };
    nlohmann::json rows = nlohmann::json::array();
    for (const TimelineBucket& b : run.buckets) {
        nlohmann::json row = {{"start", at(b.start)},
                              {"end", at(b.end)},
                              {"first_event", b.first},
                              {"last_event", b.last},
                              {"allocated_bytes", b.allocated},
                              {"reserved_bytes", b.reserved},
                              {"allocated_max_bytes", b.allocatedMax},
                              {"reserved_max_bytes", b.reservedMax},
                              {"max_event", b.maxEvent}};
        if (b.planned)
            row["plan_by_category"] = byCategory(b.planBytes);
        if (run.byCategory) {
            row["by_category"] = byCategory(b.bytes);
            row["by_category_at_max"] = byCategory(b.bytesAtMax);
        }
        rows.push_back(std::move(row));
    }
    nlohmann::json categories = nlohmann::json::array();
    for (std::size_t i = 0; i < kMeasuredCategories; ++i)
        categories.push_back(measuredCategoryKey(static_cast<MeasuredCategory>(i)));
    nlohmann::json peak = {{"event", run.peakEvent}, {"allocated_bytes", run.peakAllocated}};
    if (run.byCategory)
        peak["by_category"] = byCategory(run.peakBytes);
    nlohmann::json regions = nlohmann::json::array();
    for (const RegionMemory& r : run.regions) {
        nlohmann::json row = {
            {"name", r.name},
            {"start", at(static_cast<double>(r.start))},
            {"end", r.end == INT64_MAX ? nlohmann::json() : nlohmann::json(at(static_cast<double>(r.end)))},
            {"allocated_at_start_bytes", r.allocatedAtStart},
            {"peak_allocated_bytes", r.peakAllocated},
            {"peak_over_start_bytes", r.peakOverStart()},
            {"allocated_bytes", r.allocatedBytes},
            {"allocations", r.allocations},
            {"still_live_bytes", r.stillLiveBytes}};
        if (!r.empty) {
            row["first_event"] = r.first;
            row["last_event"] = r.last;
            row["peak_event"] = r.peakEvent;
        }
        regions.push_back(std::move(row));
    }
    nlohmann::json plan = nullptr;
    if (run.hasPlan) {
        nlohmann::json points = nlohmann::json::array();
        std::int64_t planPeak = 0;
        for (const PlanOverlayPoint& q : run.plan.points) {
            points.push_back({{"phase", phaseName(q.phase)},
                              {"progress", q.progress},
                              {"event", q.event},
                              {"at", run.timeAxis ? at(q.time) : q.event},
                              {"by_category", byCategory(q.bytes)}});
            planPeak = std::max(planPeak, q.total());
        }
        plan = {{"alignment", run.plan.alignment}, {"peak_allocated_bytes", planPeak}, {"points", points}};
    }
    nlohmann::json j = {{"schema", kTimelineSchema},
                        {"trace", traceName},
                        {"device", run.device},
                        {"axis", run.timeAxis ? "time" : "event"},
                        {"unit", run.timeAxis ? "s" : "event"},
                        {"allocated_recorded", run.allocatedRecorded},
                        {"by_category", run.byCategory},
                        {"categories", run.byCategory ? categories : nlohmann::json::array()},
                        {"peak", peak},
                        {"buckets", rows},
                        {"regions", regions},
                        {"plan", plan}};
    return j;
}

} // namespace headroom
