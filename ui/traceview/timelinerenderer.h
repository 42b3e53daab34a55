// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/attribution.h"
#include "core/compare/planoverlay.h"
#include "core/trace/timeline.h"
#include "core/trace/traceloadjob.h"
#include "ui/common/chartstyle.h"

#include <QColor>
#include <QImage>
#include <QRect>
#include <QString>
#include <memory>
#include <optional>
#include <vector>

class QPainter;

namespace headroom {

// One device of one file, drawn as one lane.
struct TimelineLane {
    std::shared_ptr<const LoadedTrace> trace;
    std::size_t device = 0;
    std::shared_ptr<Timeline> timeline;
    QString label;
    std::vector<QColor> bandColors; // one per band (by category); empty: a distinct colour per band
    // Every allocation in its place in a colour of its own (as PyTorch's memory viewer draws them), not in
    // its category's.
    bool allocationColours = false;
    std::shared_ptr<const PlanOverlay> plan; // the paired scenario's step over this run, drawn dashed

    const TraceIndex& index() const { return *trace->indexes.at(device); }
    const DeviceSummary& summary() const { return trace->summary.devices.at(device); }
};

// One lane per device with events, labelled "file · device key".
std::vector<TimelineLane> lanesOf(const std::shared_ptr<const LoadedTrace>& trace, std::size_t bands = 20);
// The x extent of all lanes together on an axis ({0, 1} when empty).
std::pair<double, double> lanesDomain(const std::vector<TimelineLane>& lanes, TimelineAxis axis);

// What the user is looking at: the axis, the visible x range (absolute: µs or ns since the epoch on the
// time axis, event indices otherwise), the selected moment and range.
struct TimelineViewState {
    TimelineAxis axis = TimelineAxis::Time;
    double x0 = 0, x1 = 1;
    double origin = 0; // the x shown as 0 s (the first event of all lanes)
    double secondsPerUnit = 1e-6;
    std::optional<double> moment;
    std::optional<std::pair<double, double>> range;
    // Memory by category (stacked areas of each lane's classes, when it has them) instead of bands; or every
    // allocation in its place (when the lane has its allocation stack), which wins over both.
    bool byCategory = false;
    bool allocationStack = false;
};

// Draws lanes of an active-memory timeline: spans per pixel column written into an image (never one
// shape per event), then axes, peak, annotations, OOM marks, moment and range as vector overlays. Shared
// by the window and `headroom-cli render`, so both show the same picture.
class TimelineRenderer {
public:
    static constexpr int kLeft = 74, kRight = 12, kTop = 6, kAxis = 22, kLaneGap = 8, kStrip = 16;

    // The plot rectangle of lane i when `lanes` lanes share `area`.
    static QRect plotRect(const QRect& area, int lanes, int i);
    // Paints every lane; `frames` (optional) receives each lane's reduced frame, for hit-testing.
    static void paint(QPainter& p, const QRect& area, const std::vector<TimelineLane>& lanes,
                      const TimelineViewState& view, const ChartStyle& style,
                      std::vector<TimelineFrame>* frames = nullptr);
    // Only the spans of one lane into an image of the given size (the minimap, and benchmarks).
    static QImage spans(const TimelineLane& lane, const TimelineFrame& frame, QSize size,
                        const ChartStyle& style, std::int64_t yMax,
                        TimelineDetail detail = TimelineDetail::Bands);
    // What a lane is drawn with in a view: what the view asks for, when the lane has it, else the bands.
    static TimelineDetail detailOf(const TimelineLane& lane, const TimelineViewState& view);
    // The byte unit a lane's axis and labels use.
    struct Unit {
        double size = 1;
        QString name;
        QString format(double bytes, int precision = 2) const;
    };
    static Unit unitFor(double maxBytes, const ChartStyle& style);
    // The y scale's top for a lane: a round number above the run's highest value (fixed while zooming).
    static std::int64_t yMax(const Timeline& timeline, const ChartStyle& style);
    static QColor bandColor(std::size_t band, bool dark);
    static QColor restColor(bool dark);
    static QColor allocatedColor(bool dark);
    static QColor reservedColor(bool dark);
    // An axis label: seconds on the time axis ("1.25 s", "340 ms"), an index otherwise.
    static QString xLabel(const TimelineViewState& view, double x, double step);
    // Tick positions for [lo, hi] at roughly `count` ticks on 1-2-5 steps.
    static std::vector<double> ticks(double lo, double hi, int count, double* step = nullptr);
};

// A trace's active-memory timeline (every device a lane, the whole run), as the window draws it, exported to
// PNG, SVG or PDF (headroom-cli render TRACE).
// How an exported timeline is drawn: by category (with the rules and, optionally, the workload's scenario
// that tell categories apart), else the largest allocations as bands.
struct TraceDrawing {
    bool byCategory = false;
    bool byAllocation = false; // every allocation in its place (coloured by category with byCategory)
    AttributionRules rules = AttributionRules::pytorchDefaults();
    const Scenario* scenario = nullptr;
};
bool exportTraceTimeline(const std::shared_ptr<const LoadedTrace>& trace, const std::string& path, int w,
                         int h, std::string* error, const TraceDrawing& drawing = {});
// The lanes an export draws (every device, or only `device`), with their categories and the scenario's plan
// worked out as `drawing` asks; and the view of their whole run.
std::vector<TimelineLane> drawnLanes(const std::shared_ptr<const LoadedTrace>& trace,
                                     const TraceDrawing& drawing, std::size_t device = SIZE_MAX);
TimelineViewState wholeRunView(const std::vector<TimelineLane>& lanes, bool byCategory,
                               bool byAllocation = false);

} // namespace headroom
