#pragma once
#include "core/plan/estimator.h"
#include "core/plan/scenario.h"
#include "core/trace/traceloadjob.h"

#include <memory>

#include <string>

class QChart;

namespace headroom {

// Renders a chart to OUT.png, .svg or .pdf at w x h (device-independent pixels). Needs a QApplication;
// ensureGuiApplication() makes one that works without a display. Returns false with *error set.
bool exportChart(QChart* chart, const std::string& path, int w, int h, std::string* error);
// The estimate's stacked bar chart, exported.
bool exportEstimateChart(const Scenario& sc, const Estimate& est, const std::string& path, int w, int h,
                         std::string* error);
// A trace's active-memory timeline (every device a lane, the whole run), as the window draws it.
bool exportTraceTimeline(const std::shared_ptr<const LoadedTrace>& trace, const std::string& path, int w,
                         int h, std::string* error);
// Creates a QApplication on the offscreen platform when none exists and no display is set (CLI use).
void ensureGuiApplication();

} // namespace headroom
