// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "ui/common/chartstyle.h"

#include <QMainWindow>
#include <QMessageBox>
#include <functional>
#include <vector>

class QChartView;
class QComboBox;
class QLabel;
class QMenu;
class QTabWidget;
class QTableView;
class QTimer;
class QSettings;

namespace headroom {

class BreakdownChart;
class BreakdownModel;
class PhaseChart;
class SavingsModel;
class ScenarioDocument;
class SettingsPanel;
class StrategyChart;
class ServingChart;
class SweepChart;
class TraceView;
class DiffView;
class ScenarioCompare;

// The what-if planner: settings on the left; the per-GPU stacked bars, the step's phase timeline, the
// data-parallel strategies side by side and a sweep in the centre; "what would make it fit?" on the right.
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
    TraceView* openTrace(const QString& path);
    std::vector<TraceView*> traceViews() const;
    // Compares the current trace tab (else the last) with the planner's scenario; false without a trace.
    bool compareCurrentTrace();
    void compareWithPlanner(TraceView* view);
    // Opens a tab with two loaded traces compared at their peaks (Trace > Diff with Another Trace).
    DiffView* diffTraces(TraceView* a, TraceView* b);
    // Fits the planner's scenario to the trace in `view` (one undoable edit) and compares them; returns
    // the before/after error for the user.
    QString calibrateFrom(TraceView* view);
    QTabWidget* tabs() const { return m_tabs; }
    // Runs the event loop until every trace tab has finished loading (screenshots, tests).
    bool waitForTraces(int timeoutMs = 600000);
    bool save(QString* error = nullptr);
    bool saveAs(const QString& path, QString* error);

    ScenarioDocument* document() const { return m_doc; }
    SettingsPanel* settingsPanel() const { return m_panel; }
    int viewUpdates() const { return m_viewUpdates; } // how often the views were refreshed (tests)
    BreakdownChart* breakdownChart() const { return m_breakdown; }
    SweepChart* sweepChart() const { return m_sweep; }
    // File > Compare Scenarios: the current plan beside the scenario files, in a tab.
    ScenarioCompare* compareScenarioFiles(const QStringList& paths, QString* error = nullptr);
    // View > Presentation Mode: full screen, larger type, thicker lines.
    void setPresentationMode(bool on);
    bool isPresentationMode() const { return m_presentation; }
    // File > Export Report: the one-page report of the current plan (PDF, or Markdown with its charts).
    bool exportReport(const QString& path, QString* error = nullptr);
    // The About dialog's text: version, Qt built with and running, the dependencies and their licences.
    static QString aboutText();
    // packaging/copyright (the third-party notices) followed by the GPL's text, as Help > About shows them.
    static QString licenceNoticesText();
    SavingsModel* savingsModel() const { return m_savings; }
    BreakdownModel* breakdownModel() const { return m_table; }
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
    void showAbout();
    void build();
    void buildMenus();
    void updateViews();
    void scheduleUpdate();
    void rememberScenario(); // Open Recent and the next session's start
    void sizeNumberColumns();
    // What is sized from the type (the verdict's lines, table rows, number columns), again after the
    // application font changes (presentation mode).
    void sizeFromFont();
    void updateTitle();
    void applySaving(int row);
    void addRecent(const QString& path);
    void rebuildRecentMenu();
    bool maybeSave();
    void writeAutosave();
    void restoreSession();
    QSettings* settings() const;

    Options m_options;
    QTabWidget* m_tabs = nullptr;
    ScenarioDocument* m_doc = nullptr;
    SettingsPanel* m_panel = nullptr;
    BreakdownChart* m_breakdown = nullptr;
    PhaseChart* m_phase = nullptr;
    StrategyChart* m_strategies = nullptr;
    ServingChart* m_serving = nullptr;
    QWidget* m_sweepBox = nullptr;
    QLabel* m_fitTitle = nullptr;
    bool m_presentation = false;
    QChartView* m_servingView = nullptr;
    SweepChart* m_sweep = nullptr;
    QChartView* m_breakdownView = nullptr;
    QChartView* m_phaseView = nullptr;
    QChartView* m_strategyView = nullptr;
    QChartView* m_sweepView = nullptr;
    QComboBox* m_sweepVariable = nullptr;
    SavingsModel* m_savings = nullptr;
    BreakdownModel* m_table = nullptr;
    QTableView* m_savingsView = nullptr;
    QTableView* m_tableView = nullptr;
    bool m_updatePending = false;
    int m_viewUpdates = 0;
    QLabel* m_verdict = nullptr;
    QLabel* m_verdictDetails = nullptr;
    QLabel* m_error = nullptr;
    QLabel* m_warnings = nullptr; // the reader's and the estimator's warnings
    QMenu* m_recentMenu = nullptr;
    QTimer* m_autosaveTimer = nullptr;
    ChartStyle m_style;
    mutable QSettings* m_settings = nullptr;
};

} // namespace headroom
