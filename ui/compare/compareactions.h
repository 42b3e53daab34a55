// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/calibration.h"
#include "core/compare/comparison.h"
#include "ui/common/chartstyle.h"
#include "ui/planner/report.h"

#include <QObject>
#include <QStringList>
#include <functional>
#include <optional>
#include <vector>

class QMenu;
class QTabWidget;
class QWidget;

namespace headroom {

class DiffPage;
class FleetPage;
class ScenarioComparePage;
class ScenarioDocument;
class TracePage;

// What the window does between its planner and its trace tabs: scenarios side by side, a trace beside the
// planner's scenario (plan vs measured), calibration of the scenario from a trace, the diff of two runs, and
// the measured peak the report shows. New tabs open in `tabs`.
class CompareActions : public QObject {
    Q_OBJECT
public:
    CompareActions(ScenarioDocument* doc, QTabWidget* tabs, std::function<ChartStyle()> style,
                   QObject* parent = nullptr);

    // Hooks up a new trace tab (its "Compare with Scenario..." button).
    void watch(TracePage* view);
    // File > Compare Scenarios: the current plan beside the scenario files, in a tab.
    ScenarioComparePage* compareScenarioFiles(const QStringList& paths, QString* error = nullptr);
    // The trace beside the planner's scenario (its Categories tab).
    void compareWithPlanner(TracePage* view);
    // Fits the planner's scenario to the trace (one undoable edit) and compares them; the before/after
    // error for the user. Where it cannot (a trace without devices, a fit no scenario can hold) the
    // scenario is left as it was, the text says why and `calibrated`, when given, is false. `against`: the
    // tables the factors are fitted against (Trace > Calibrate ... Against the Scenario's Own Profile:
    // headroom-cli calibrate --own-profile).
    QString calibrateFrom(TracePage* view, bool* calibrated = nullptr,
                          FitAgainst against = FitAgainst::CodeWhereKnown);
    // Two loaded traces compared at their peaks, in a tab.
    DiffPage* diffTraces(TracePage* a, TracePage* b);
    // The Trace menu: compare with the planner (the current trace tab, else the last), calibrate from it,
    // attribution rules for every trace tab, diff with another trace (opened with `open`).
    void populateTraceMenu(QMenu* menu, QWidget* window, std::function<TracePage*()> current,
                           std::function<std::vector<TracePage*>()> all,
                           std::function<TracePage*(const QString&)> open);
    // The File menu's comparisons: Compare Scenarios (the current plan beside scenario files) and Open Folder
    // as Fleet (a job's rank files; a rank opens in a trace tab with `open`).
    void populateFileMenu(QMenu* menu, QWidget* window, std::function<TracePage*(const QString&)> open);
    // A folder (or rank files) as a fleet, in a tab, with the planner's scenario when it is a saved one (its
    // parallelism is the job's layout). A rank opens with `open`; a diff against the median rank opens both
    // and diffs them once both are read.
    FleetPage* openFleet(const QStringList& inputs, std::function<TracePage*(const QString&)> open);
    // For the report: the measured peak beside the estimate, from the first trace tab that has a scenario.
    std::optional<Comparison> measuredForReport(const std::vector<TracePage*>& views) const;
    // The same trace tab's run over time as its timeline draws it (by category, the plan over it).
    std::optional<ReportRunChart> runForReport(const std::vector<TracePage*>& views) const;

signals:
    void message(const QString& text);

private:
    ScenarioDocument* m_doc;
    QTabWidget* m_tabs;
    std::function<ChartStyle()> m_style;
};

} // namespace headroom
