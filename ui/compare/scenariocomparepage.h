// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/scenario.h"
#include "core/serve/estimate.h"
#include "ui/common/chartstyle.h"
#include "ui/planner/report.h"

#include <QWidget>
#include <vector>

class QChart;
class QChartView;
class QTableWidget;

namespace headroom {

// Plans side by side: what changes from 8 to 16 GPUs, from ZeRO-2 to ZeRO-3. One stacked bar per
// scenario (the most-loaded GPU at its peak), the difference of each from the first by category, and the
// settings with the ones that differ highlighted.
class ScenarioComparePage : public QWidget {
    Q_OBJECT
public:
    struct Entry {
        QString name;
        Scenario scenario;
        Estimate estimate;
    };
    explicit ScenarioComparePage(std::vector<Entry> entries, QWidget* parent = nullptr);
    void setStyle(const ChartStyle& style);
    QString title() const;
    QTableWidget* differences() const { return m_differences; }
    QTableWidget* settings() const { return m_settings; }
    QChart* chart() const { return m_chart; }
    // The rows of the settings table whose values differ between the scenarios.
    QStringList differingSettings() const;

private:
    void refresh();

    std::vector<Entry> m_entries;
    ChartStyle m_style;
    QChart* m_chart = nullptr;
    QChartView* m_view = nullptr;
    QTableWidget* m_differences = nullptr;
    QTableWidget* m_settings = nullptr;
};

} // namespace headroom
