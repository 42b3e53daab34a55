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
class JobRunner;
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
    // Fits the planner's scenario to the trace (one undoable edit) and compares them; `done` gets, on the
    // GUI thread, the before/after error for the user and whether it calibrated. The fit runs off the GUI
    // thread (a trace's attribution and the plans it asks for take seconds on large runs); a new one drops
    // the one running. Where it cannot (a trace without devices, a fit no scenario can hold, a scenario
    // edited while it ran) the scenario is left as it was and the text says why. `against`: the tables the
    // factors are fitted against (Trace > Calibrate ... Against the Scenario's Own Profile: headroom-cli
    // calibrate --own-profile).
    void startCalibration(TracePage* view, FitAgainst against,
                          std::function<void(const QString& said, bool calibrated)> done);
    // The same, waiting for it with the event loop running (tests, headless use): the text, and
    // `calibrated` when given.
    QString calibrateFrom(TracePage* view, bool* calibrated = nullptr,
                          FitAgainst against = FitAgainst::CodeWhereKnown);
    bool calibrating() const;
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
    // A calibration started (true) or ended (false): the window says so for as long as it runs.
    void calibratingChanged(bool running);

private:
    // What calibrateFrom says of a fit: what it measured and the plan's error before and after.
    QString calibrationMessage(const CalibrationResult& r, const Scenario& scenario,
                               FitAgainst against) const;

    ScenarioDocument* m_doc;
    QTabWidget* m_tabs;
    std::function<ChartStyle()> m_style;
    JobRunner* m_calibration; // the one calibration running, off the GUI thread
};

} // namespace headroom
