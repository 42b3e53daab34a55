#pragma once
#include "core/plan/estimator.h"
#include "core/plan/scenario.h"

#include <QMainWindow>

class QChartView;
class QLabel;

namespace headroom {

// The application window: the current scenario's per-GPU breakdown as a stacked bar with its verdict.
// (The full what-if planner grows from here.)
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);

    // Loads a scenario file; on failure keeps the current scenario and returns false with *error set.
    bool openScenario(const QString& path, QString* error);
    void setScenario(const Scenario& sc);
    const Scenario& scenario() const { return m_scenario; }
    const Estimate& currentEstimate() const { return m_estimate; }

private:
    void openDialog();
    void refresh();

    Scenario m_scenario;
    Estimate m_estimate;
    QChartView* m_chartView = nullptr;
    QLabel* m_summary = nullptr;
};

} // namespace headroom
