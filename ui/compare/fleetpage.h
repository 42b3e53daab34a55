// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/fleet.h"
#include "ui/common/chartstyle.h"

#include <QStringList>
#include <QWidget>
#include <optional>

class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace headroom {

class FleetHeatMap;
class FleetRankModel;
class FleetStageBars;
class JobRunner;

// A whole job's rank files in one tab (headroom-cli fleet in the window): the rank table, filled as files
// are read, sortable, outliers marked; a ranks x time heat map aligned on each rank's first step mark; the
// per-stage peaks with the plan's; and, on a selected rank, opening it in a trace tab or diffing it against
// the median rank.
class FleetPage : public QWidget {
    Q_OBJECT
public:
    // `inputs`: a folder or rank files. `scenario`: the job's plan (its parallelism is the layout).
    explicit FleetPage(const QStringList& inputs, std::optional<Scenario> scenario = std::nullopt,
                       QWidget* parent = nullptr);
    ~FleetPage() override;

    QString title() const;
    bool isLoading() const;
    const Fleet& fleet() const { return m_fleet; }
    QString errorText() const { return m_error; }
    FleetRankModel* model() const { return m_model; }
    QTableView* table() const { return m_table; }
    QString summaryText() const; // the line above the table (rich text)
    FleetHeatMap* heatMap() const { return m_heat; }
    FleetStageBars* stageBars() const { return m_stages; }
    // The layout as typed ("tp=8,pp=4"); false with the error shown when it cannot be read.
    bool setLayout(const QString& text);
    void selectRank(int rank);
    int selectedRank() const;
    // The readable rank whose peak is nearest the job's median, other than `except`.
    int medianRank(int except = -1) const;
    QString fileOf(int rank) const;
    void setStyle(const ChartStyle& style);
    bool waitForIdle(int timeoutMs = 600000);

signals:
    void openRankRequested(const QString& file);
    void diffRequested(const QString& file, const QString& medianFile);
    void loaded();

private:
    void start(const QStringList& inputs);
    void restage(const FleetLayout& layout);
    void showFleet();

    Fleet m_fleet;
    std::optional<Scenario> m_scenario;
    std::optional<FleetLayout> m_typedLayout;
    QString m_folder, m_error;
    ChartStyle m_style;
    JobRunner* m_jobs = nullptr;
    FleetRankModel* m_model = nullptr;
    QSortFilterProxyModel* m_sorted = nullptr;
    QTableView* m_table = nullptr;
    FleetHeatMap* m_heat = nullptr;
    FleetStageBars* m_stages = nullptr;
    QLabel* m_summary = nullptr;
    QLineEdit* m_layout = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancel = nullptr;
    QPushButton* m_open = nullptr;
    QPushButton* m_diff = nullptr;
};

} // namespace headroom
