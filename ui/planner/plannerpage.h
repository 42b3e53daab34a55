// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/serve/plannerdetails.h"
#include "ui/common/chartstyle.h"

#include <QSplitter>
#include <optional>

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QScrollArea;
class QTableView;
class QTimer;

namespace headroom {
class RichTextLine;

class BreakdownChart;
class BreakdownModel;
class JobRunner;
class PhaseChart;
class SavingsModel;
class ScenarioDocument;
class ServingChart;
class SettingsPanel;
class StrategyChart;
class SweepChart;

// The planner's tab: the settings on the left; the verdict, the per-GPU stacked bars, the step's phases,
// the DDP/ZeRO comparison (or the serving capacity) and a sweep in the centre; "what would make it fit?"
// and the breakdown table on the right. It follows its document: the verdict, the bars and the table at
// once (the document's estimate), and the rest (tens of estimates: core's plannerDetails) off the GUI
// thread through a job runner, so a slider drag never waits for sweeps. Its views only draw.
class PlannerPage : public QSplitter {
    Q_OBJECT
public:
    explicit PlannerPage(ScenarioDocument* doc, QWidget* parent = nullptr);
    ~PlannerPage() override;

    void setStyle(const ChartStyle& style);
    // Presentation mode: the settings step aside; type sizes follow the application font.
    void setPresentation(bool on);
    void sizeFromFont();
    // Runs the event loop until the views show the document as it is now, details included (tests,
    // screenshots, the benchmark).
    bool waitForDetails(int timeoutMs = 60000);

    SettingsPanel* settingsPanel() const { return m_panel; }
    BreakdownChart* breakdownChart() const { return m_breakdown; }
    SweepChart* sweepChart() const { return m_sweep; }
    SavingsModel* savingsModel() const { return m_savings; }
    BreakdownModel* breakdownModel() const { return m_table; }
    int viewUpdates() const { return m_viewUpdates; }

signals:
    // A ranked change was applied (double-click): what the status bar says.
    void message(const QString& text);

private:
    void build();
    void scheduleUpdate();
    void updateViews();
    void showPlan(const Scenario& sc, const Estimate& est); // the verdict, the bars, the table
    void startDetails();
    void showDetails(PlannerDetails details, const Scenario& sc, const Estimate& est);
    void sizeNumberColumns();
    void applySaving(int row);
    void settleCharts();

    ScenarioDocument* m_doc;
    ChartStyle m_style;
    JobRunner* m_jobs = nullptr;
    QTimer* m_fallback = nullptr; // shows the plan if its details are slow
    bool m_updatePending = false;
    int m_viewUpdates = 0;
    SettingsPanel* m_panel = nullptr;
    QScrollArea* m_settings = nullptr;
    QLabel* m_verdict = nullptr;
    RichTextLine* m_verdictDetails = nullptr;
    // Lines of track record under the details (the profile's, and calibrated plans' for a calibrated one).
    int m_verdictRecordLines = 0;
    QLabel* m_error = nullptr;
    QLabel* m_warnings = nullptr; // the reader's and the estimator's warnings
    QLabel* m_fitTitle = nullptr;
    BreakdownChart* m_breakdown = nullptr;
    PhaseChart* m_phase = nullptr;
    StrategyChart* m_strategies = nullptr;
    ServingChart* m_serving = nullptr;
    SweepChart* m_sweep = nullptr;
    QWidget* m_sweepBox = nullptr;
    QComboBox* m_sweepVariable = nullptr;
    QChartView* m_breakdownView = nullptr;
    QChartView* m_phaseView = nullptr;
    QChartView* m_strategyView = nullptr;
    QChartView* m_servingView = nullptr;
    QChartView* m_sweepView = nullptr;
    SavingsModel* m_savings = nullptr;
    BreakdownModel* m_table = nullptr;
    QTableView* m_savingsView = nullptr;
    QTableView* m_tableView = nullptr;
};

} // namespace headroom
