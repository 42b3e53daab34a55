// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/calibration.h"
#include "ui/common/chartstyle.h"

#include <QMainWindow>
#include <QMessageBox>
#include <functional>
#include <vector>

class QMenu;
class QTabWidget;
class QTimer;
class QSettings;

namespace headroom {

class BreakdownChart;
class BreakdownModel;
class CompareActions;
class DiffPage;
class PlannerPage;
class SavingsModel;
class ScenarioComparePage;
class ScenarioDocument;
class SettingsPanel;
class SweepChart;
class TracePage;

// The shell: the menus, the tabs (the planner first, then a tab per trace, diff or comparison), recent
// files, autosave and crash recovery, presentation mode, drag and drop. The planner is a PlannerPage; what
// runs between it and the trace tabs is CompareActions.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    struct Options {
        bool restoreSession = true; // reopen the last scenario, offer the autosave back
        bool askBeforeRestore = true;
        QString settingsFile; // empty: the platform's QSettings location (tests use a file)
        QString autosaveFile; // empty: in the application data folder
    };
    explicit MainWindow(QWidget* parent = nullptr);
    explicit MainWindow(const Options& options, QWidget* parent = nullptr);
    ~MainWindow() override;

    bool openScenario(const QString& path, QString* error);
    // Opens a scenario, or imports a Hugging Face config.json into the current scenario's model.
    bool openFile(const QString& path, QString* error);
    // Opens a trace in a new tab and starts reading it in the background.
    TracePage* openTrace(const QString& path);
    std::vector<TracePage*> traceViews() const;
    // Compares the current trace tab (else the last) with the planner's scenario; false without a trace.
    bool compareCurrentTrace();
    void compareWithPlanner(TracePage* view);
    // Opens a tab with two loaded traces compared at their peaks (Trace > Diff with Another Trace).
    DiffPage* diffTraces(TracePage* a, TracePage* b);
    // Fits the planner's scenario to the trace in `view` (one undoable edit) and compares them; returns
    // the before/after error for the user, or why it could not (`calibrated` false: nothing changed). The
    // fit runs off the GUI thread and this waits for it with the event loop running (the menu does not
    // wait: CompareActions::startCalibration).
    QString calibrateFrom(TracePage* view, bool* calibrated = nullptr,
                          FitAgainst against = FitAgainst::CodeWhereKnown);
    QTabWidget* tabs() const { return m_tabs; }
    // What runs between the planner and the trace tabs (its calibration runs off the GUI thread).
    CompareActions* compareActions() const { return m_compare; }
    // Runs the event loop until every trace and fleet tab has finished loading (screenshots, tests).
    bool waitForTraces(int timeoutMs = 600000);
    bool save(QString* error = nullptr);
    bool saveAs(const QString& path, QString* error);

    ScenarioDocument* document() const { return m_doc; }
    PlannerPage* planner() const { return m_planner; }
    // Runs the event loop until the planner shows the document as it is now, its details included.
    bool waitForPlanner(int timeoutMs = 60000);
    SettingsPanel* settingsPanel() const;
    int viewUpdates() const; // how often the planner's views were refreshed (tests)
    BreakdownChart* breakdownChart() const;
    SweepChart* sweepChart() const;
    // File > Compare Scenarios: the current plan beside the scenario files, in a tab.
    ScenarioComparePage* compareScenarioFiles(const QStringList& paths, QString* error = nullptr);
    // View > Presentation Mode: full screen, larger type, thicker lines.
    void setPresentationMode(bool on);
    bool isPresentationMode() const { return m_presentation; }
    // File > Export Report: the one-page report of the current plan (PDF, or Markdown with its charts).
    bool exportReport(const QString& path, QString* error = nullptr);
    SavingsModel* savingsModel() const;
    BreakdownModel* breakdownModel() const;
    const ChartStyle& style() const { return m_style; }
    void setStyle(const ChartStyle& style);
    QString autosavePath() const;

    // Decides what happens to unsaved changes on close (tests replace the dialog).
    std::function<QMessageBox::StandardButton()> askToSave;

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void build();
    void buildMenus();
    void rememberScenario(); // Open Recent and the next session's start
    void updateTitle();
    void addRecent(const QString& path);
    void rebuildRecentMenu();
    bool maybeSave();
    void writeAutosave();
    void restoreSession();
    QSettings* settings() const;

    Options m_options;
    QTabWidget* m_tabs = nullptr;
    ScenarioDocument* m_doc = nullptr;
    PlannerPage* m_planner = nullptr;
    CompareActions* m_compare = nullptr;
    bool m_presentation = false;
    QMenu* m_recentMenu = nullptr;
    QTimer* m_autosaveTimer = nullptr;
    ChartStyle m_style;
    mutable QSettings* m_settings = nullptr;
};

} // namespace headroom
