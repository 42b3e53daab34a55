// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/comparison.h"
#include "core/plan/scenario.h"
#include "core/serve/estimate.h"
#include "ui/common/chartstyle.h"
#include "ui/common/texttable.h"

#include <QString>
#include <QStringList>
#include <functional>
#include <optional>
#include <string>
#include <vector>

class QPainter;
class QRectF;

namespace headroom {

// The one-page report of a plan: the settings, the verdict, the per-rank stacked breakdown with the
// capacity line, the strategy comparison (training) or serving capacity (inference), the ranked single
// changes, and, given a recorded run, the measured peak beside the estimate by category.
struct Report {
    QString title;
    QString subtitle;
    QString verdict;
    bool fits = false;
    TextTable settings;
    TextTable breakdown;
    TextTable savings;
    std::optional<TextTable> measured;
    QString measuredNote; // which profile plans the recorded run's code, when the plan's does not
};
Report buildReport(const Scenario& sc, const Estimate& est, const Comparison* measured,
                   const ChartStyle& style);

// Writes the report to OUT.pdf (one A4 page) or OUT.md (with its charts as OUT-breakdown.png and
// OUT-strategies.png or OUT-serving.png beside it), drawing with the window's own chart classes. Needs
// a QApplication (ensureGuiApplication()). Every file is written atomically. False with *error set.
// The recorded run over time, drawn by whoever holds it (the trace view's renderer: memory by category with
// the plan over it), in the report's place for it.
struct ReportRunChart {
    QString title;
    std::function<void(QPainter&, const QRectF&)> paint;
};
bool writeReport(const Scenario& sc, const Estimate& est, const Comparison* measured, const std::string& path,
                 std::string* error, const ReportRunChart* run = nullptr);

} // namespace headroom
