// SPDX-License-Identifier: GPL-3.0-or-later
// Trace viewer benchmarks (docs/formats.md section 1), on a snapshot written by CPython
// (bench/gen_snapshot.py):
//   timeline_bench FILE LABEL [--open]
// prints timeline_redraw_<LABEL>_ms (the whole run redrawn at 1920 px: reduce + spans + overlays, median of
// 30), and with --open trace_open_<LABEL>_s (read, summarise, index, first drawn timeline, in this process),
// trace_rss_<LABEL>_over_file and timeline_frame_p95_ms (a zoom-in, pan and zoom-out session, 240 frames).
// Run by bench/trace_bench.py, which owns the cached snapshots.
#include "core/compare/runtimeline.h"
#include "core/trace/formats/tracereader.h"
#include "core/trace/traceloadjob.h"
#include "core/trace/tracesummary.h"
#include "ui/common/chartexport.h"
#include "ui/traceview/timelinerenderer.h"

#include <QImage>
#include <QPainter>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <vector>

using namespace headroom;
using Clock = std::chrono::steady_clock;

namespace {

double ms(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

void report(const std::string& metric, double value, const char* unit, const std::string& detail) {
    std::printf("{\"metric\": \"%s\", \"value\": %.3f, \"unit\": \"%s\", \"detail\": \"%s\"}\n",
                metric.c_str(), value, unit, detail.c_str());
    std::fflush(stdout);
}

double percentile(std::vector<double> v, double p) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: timeline_bench SNAPSHOT LABEL [--open]\n");
        return 2;
    }
    const std::string path = argv[1], label = argv[2];
    const bool open = argc > 3 && std::string(argv[3]) == "--open";
    ensureGuiApplication();
    // The window's timeline: 1920 px of plot, as on a full-HD screen.
    const QRect area(0, 0, 1920 + TimelineRenderer::kLeft + TimelineRenderer::kRight, 700);
    QImage target(area.size(), QImage::Format_ARGB32_Premultiplied);
    const ChartStyle style;

    // The same steps as loadTrace, timed one by one for the detail.
    const auto t0 = Clock::now();
    auto owned = std::make_shared<LoadedTrace>();
    owned->path = path;
    owned->trace = readTraceFile(path);
    const auto tRead = Clock::now();
    owned->summary = summarize(owned->trace);
    const auto tSummary = Clock::now();
    for (std::size_t d = 0; d < owned->trace.devices.size(); ++d)
        owned->indexes.push_back(
            std::make_unique<TraceIndex>(owned->trace.devices[d], owned->summary.devices[d]));
    const auto tIndex = Clock::now();
    std::shared_ptr<const LoadedTrace> loaded = owned;
    std::vector<TimelineLane> lanes;
    TimelineLane lane;
    lane.trace = loaded;
    lane.device = 0;
    lane.timeline = std::make_shared<Timeline>(*loaded->indexes.at(0));
    lane.label = QStringLiteral("bench");
    lanes.push_back(lane);
    const auto tTimeline = Clock::now();
    TimelineViewState view;
    view.axis = lane.timeline->hasTime() ? TimelineAxis::Time : TimelineAxis::Event;
    const auto [d0, d1] = lane.timeline->domain(view.axis);
    view.origin = view.x0 = d0;
    view.x1 = d1 + 1;
    {
        QPainter p(&target);
        TimelineRenderer::paint(p, area, lanes, view, style);
    }
    const auto t1 = Clock::now();
    const std::size_t events = loaded->indexes.at(0)->events();

    // The view redrawn 30 times: the median and the 95th percentile, in ms.
    auto redrawMedian = [&] {
        std::vector<double> times;
        for (int i = 0; i < 30; ++i) {
            const auto a = Clock::now();
            QPainter p(&target);
            TimelineRenderer::paint(p, area, lanes, view, style);
            p.end();
            times.push_back(ms(a, Clock::now()));
        }
        return std::make_pair(percentile(times, 0.5), percentile(times, 0.95));
    };
    const auto [bandsRedraw, bandsP95] = redrawMedian();
    report("timeline_redraw_" + label + "_ms", bandsRedraw, "ms",
           "whole run of " + std::to_string(events) +
               " events redrawn at 1920 px (reduce + spans + overlays), median of " + "30; p95 " +
               std::to_string(bandsP95) + " ms; target <= 16 (aim 4)");
    if (!open)
        return 0;

    struct stat st {};
    ::stat(path.c_str(), &st);
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    const double rssBytes = static_cast<double>(ru.ru_maxrss) * 1024.0;
    report("trace_open_" + label + "_s", ms(t0, t1) / 1000.0, "s",
           "read + summary + index + timeline + first frame of a " + std::to_string(st.st_size / 1000000) +
               " MB snapshot (read " + std::to_string(ms(t0, tRead) / 1000) + " s, summary " +
               std::to_string(ms(tRead, tSummary) / 1000) + " s, index " +
               std::to_string(ms(tSummary, tIndex) / 1000) + " s, timeline " +
               std::to_string(ms(tIndex, tTimeline) / 1000) + " s, first frame " +
               std::to_string(ms(tTimeline, t1) / 1000) + " s); target < 3");
    report("trace_rss_" + label + "_over_file", rssBytes / static_cast<double>(st.st_size), "x",
           "peak RSS " + std::to_string(static_cast<long long>(rssBytes / 1e6)) +
               " MB after opening and drawing; target < 2");

    // A user session: zoom in towards the peak in 60 wheel steps, pan across 120 frames, zoom back out.
    std::vector<double> frames;
    const double peakX = lane.timeline->xOf(view.axis, loaded->summary.devices.at(0).peakAllocatedAfter);
    auto frame = [&] {
        const auto a = Clock::now();
        QPainter p(&target);
        TimelineRenderer::paint(p, area, lanes, view, style);
        p.end();
        frames.push_back(ms(a, Clock::now()));
    };
    for (int i = 0; i < 60; ++i) {
        const double w = (view.x1 - view.x0) / 1.25;
        const double t = (peakX - view.x0) / (view.x1 - view.x0);
        view.x0 = peakX - t * w;
        view.x1 = view.x0 + w;
        frame();
    }
    for (int i = 0; i < 120; ++i) {
        const double dx = (view.x1 - view.x0) * (i < 60 ? 0.05 : -0.05);
        view.x0 += dx, view.x1 += dx;
        frame();
    }
    for (int i = 0; i < 60; ++i) {
        const double w = std::min((view.x1 - view.x0) * 1.25, d1 + 1 - d0);
        view.x0 = std::max(d0, peakX - w / 2);
        view.x1 = view.x0 + w;
        frame();
    }
    // docs/formats.md (scripts/bench) names the 10M figure timeline_frame_p95_ms; other sizes carry their
    // label.
    report(label == "10m" ? std::string("timeline_frame_p95_ms") : "timeline_frame_p95_" + label + "_ms",
           percentile(frames, 0.95), "ms",
           "240 zoom and pan frames through " + std::to_string(events) + " events at 1920 px; median " +
               std::to_string(percentile(frames, 0.5)) + " ms; target <= 16");

    // Memory by category, the trace tab's default drawing: every allocation attributed (the window does it
    // off the GUI thread once the trace is indexed), then the whole run redrawn as stacked categories.
    const auto c0 = Clock::now();
    lane.timeline->setClasses(
        categorySeries(loaded->trace, *loaded->indexes.at(0), AttributionRules::pytorchDefaults()));
    const auto cSeries = Clock::now();
    lanes.front() = lane;
    view.byCategory = true;
    view.x0 = d0;
    view.x1 = d1 + 1;
    {
        QPainter p(&target);
        TimelineRenderer::paint(p, area, lanes, view, style);
    }
    const auto c1 = Clock::now();
    report("trace_open_to_categories_" + label + "_s", (ms(t0, t1) + ms(c0, c1)) / 1000.0, "s",
           "read + summary + index + first frame (" + std::to_string(ms(t0, t1) / 1000) +
               " s), then every allocation attributed and the category series built (" +
               std::to_string(ms(c0, cSeries) / 1000) + " s) and the first category frame (" +
               std::to_string(ms(cSeries, c1) / 1000) + " s); target < 3");
    const auto [categoryRedraw, categoryP95] = redrawMedian();
    report("timeline_by_category_redraw_" + label + "_ms", categoryRedraw, "ms",
           "whole run of " + std::to_string(events) +
               " events by category at 1920 px (argmax + composition per column, spans, overlays), median "
               "of 30; p95 " +
               std::to_string(categoryP95) + " ms; bands in the same run " + std::to_string(bandsRedraw) +
               " ms; target <= 16");

    // Every allocation in its place: the allocations sorted by size once (off the GUI thread in the window),
    // then the whole run and a zoomed-in stretch (the index's live set there) redrawn.
    const auto s0 = Clock::now();
    lane.timeline->setAllocationStack(std::make_shared<const AllocationStack>(*loaded->indexes.at(0)));
    const double sortS = ms(s0, Clock::now()) / 1000.0;
    view.byCategory = true;
    view.allocationStack = true;
    view.x0 = d0;
    view.x1 = d1 + 1;
    const auto [whole, wholeP95] = redrawMedian();
    view.x0 = peakX - (d1 - d0) * 0.005;
    view.x1 = peakX + (d1 - d0) * 0.005;
    const auto [zoomed, zoomedP95] = redrawMedian();
    report("allocation_stack_redraw_" + label + "_ms", std::max(whole, zoomed), "ms",
           "every allocation in its place (the 400 largest live in the view, by category) at 1920 px: whole "
           "run " +
               std::to_string(whole) + " ms (p95 " + std::to_string(wholeP95) +
               "), 1% of the run around the peak " + std::to_string(zoomed) + " ms (p95 " +
               std::to_string(zoomedP95) + "); the larger; sorting " +
               std::to_string(static_cast<long long>(loaded->indexes.at(0)->allocations().size())) +
               " allocations by size once " + std::to_string(sortS) + " s; target <= 16");
    return 0;
}
