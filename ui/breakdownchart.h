#pragma once
#include "core/plan/estimator.h"
#include "core/plan/scenario.h"

#include <QChart>

namespace headroom {

// Builds the stacked per-GPU bar chart of an estimate: one bar per pipeline stage (one bar when every GPU
// holds the same), one colour per category, and a dashed line at the GPU's usable memory. The chart is
// new and owned by the caller (or by the view/scene it is handed to).
QChart* createBreakdownChart(const Scenario& sc, const Estimate& est);

// The one-line verdict shown above the chart and in exports: "Fits: 12.3 GiB headroom (84.6% used)".
QString verdictText(const Estimate& est);

} // namespace headroom
