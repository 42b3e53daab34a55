// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/attribution.h"
#include "core/plan/scenario.h"
#include "core/serve/estimate.h"
#include "core/trace/regions.h"
#include "core/trace/traceloadjob.h"
#include "ui/common/chartstyle.h"
#include "ui/traceview/timelinerenderer.h"

#include <QList>
#include <QWidget>
#include <memory>
#include <optional>

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QTreeView;

namespace headroom {

class AllocationDetails;
class JobRunner;
class AllocatorPanel;
class CategoryBars;
class LiveAllocationFilter;
class LiveAllocationModel;
class RegionTable;
class SegmentView;
class TimelineMinimap;
class TimelineWidget;

// A tab that shows recorded traces: loads them off the GUI thread (progress, cancel, the summary first),
// then the active-memory timeline (one lane per device and file), the allocations live at the selected
// moment or during the selected range with their stacks, and the segments at that moment.
class TracePage : public QWidget {
    Q_OBJECT
public:
    explicit TracePage(const QString& path, QWidget* parent = nullptr);
    ~TracePage() override;

    // Loads another file (e.g. another rank) as more lanes on the same time axis.
    void addFile(const QString& path);
    // Reading a file, or working out the categories the timeline draws.
    bool isLoading() const { return m_pending > 0 || m_categoriesBusy; }
    bool hasFailed() const { return !m_error.isEmpty(); }
    QString errorText() const { return m_error; }
    QStringList paths() const { return m_paths; }
    QString title() const;
    void cancel();
    void setStyle(const ChartStyle& style);

    // Selects a moment (an x on the timeline's axis) on one lane; the table and segments follow.
    void selectMoment(double x, int lane = 0);
    void selectRange(std::optional<std::pair<double, double>> range);
    // The scenario of the recorded workload: sizes then tell model state from scratch, and the estimate
    // stands beside the measured bytes by category (the Compare view).
    // The workload's scenario and its estimate: the Categories tab puts the estimate beside the measured
    // peak, and the scenario's tensor sizes tell model state from scratch.
    void setScenario(const Scenario& scenario, const Estimate& est, const QString& name);
    bool hasScenario() const { return m_scenario.has_value(); }
    // Attribution rules edited by the user (headroom-cli rules writes the defaults to start from).
    void setRules(const AttributionRules& rules);
    CategoryBars* categoryBars() const { return m_categories; }
    RegionTable* regionTable() const { return m_regionTable; }
    // The split shown in the Categories tab (at the moment, or at a range's peak).
    const Attribution& attribution() const { return m_attribution; }
    std::size_t selectedEvent() const { return m_event; }
    int selectedLane() const { return m_lane; }

    TimelineWidget* timeline() const { return m_timeline; }
    QComboBox* axisBox() const { return m_axis; }
    // "Memory by category" (the default) or "Largest allocations as bands".
    QComboBox* drawingBox() const { return m_drawing; }
    // Whether every lane's categories have been computed for the current rules and scenario.
    bool categoriesReady() const { return m_categoriesReady; }
    LiveAllocationModel* liveModel() const { return m_live; }
    LiveAllocationFilter* liveFilter() const { return m_filter; }
    QTreeView* liveView() const { return m_liveView; }
    AllocationDetails* details() const { return m_details; }
    SegmentView* segmentView() const { return m_segments; }
    AllocatorPanel* allocatorPanel() const { return m_allocator; }
    QTabWidget* sideTabs() const { return m_sideTabs; }
    QLabel* banner() const { return m_banner; }
    QLabel* summaryLabel() const { return m_summary; }
    const std::vector<std::shared_ptr<const LoadedTrace>>& traces() const { return m_traces; }

signals:
    // "Compare with Scenario...": the user chose a scenario file for this trace.
    void scenarioFileChosen(const QString& path);
    void loaded();
    void categoriesComputed();
    void failed(const QString& error);
    void titleChanged();

private:
    void build();
    void startJob(const QString& path);
    void onSummary(const QString& path, std::shared_ptr<const TraceSummary> summary);
    void onDetails(std::shared_ptr<const LoadedTrace> trace);
    void onFailed(const QString& path, const QString& error);
    void rebuildLanes();
    void updateBanner();
    void refreshSelection();
    void showSelectedAllocation();
    void colourBands();
    // Memory by category for every lane, off the GUI thread, with the rules and scenario in force.
    void computeCategories();

    QStringList m_paths;
    QList<JobRunner*> m_loaders; // one per file still loading
    std::vector<std::shared_ptr<const LoadedTrace>> m_traces;
    QString m_error;
    int m_pending = 0;
    ChartStyle m_style;
    std::size_t m_bandCount = 20;
    bool m_categoriesReady = false, m_categoriesBusy = false;
    std::size_t m_event = kBeforeFirstEvent;
    int m_lane = 0;
    std::optional<std::pair<double, double>> m_range;
    std::optional<Scenario> m_scenario;
    QString m_scenarioName;
    double m_planOnGpu = 0; // the scenario's peak on the GPU (Estimate::gpuPeakBytes), for in-use logs
    // The scenario planned with the profile of the code the stacks name (core/io/codeprofile.h), once per
    // scenario and framework: what the note adds to its advice.
    std::optional<Framework> m_codePlanFor;
    std::string m_codePlan;
    AttributionRules m_rules = AttributionRules::pytorchDefaults();
    Attribution m_attribution;
    CategoryBars* m_categories = nullptr;
    AllocatorPanel* m_allocator = nullptr;
    RegionTable* m_regionTable = nullptr;
    std::vector<std::vector<RegionMemory>> m_regions; // per lane, as the table lists them
    QComboBox* m_colourBy = nullptr;
    QComboBox* m_drawing = nullptr;
    JobRunner* m_categoryJob = nullptr;

    QWidget* m_loading = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancel = nullptr;
    QLabel* m_loadingText = nullptr;
    QLabel* m_banner = nullptr;
    QLabel* m_summary = nullptr;
    QWidget* m_content = nullptr;
    QComboBox* m_axis = nullptr;
    QSpinBox* m_bands = nullptr;
    QLabel* m_momentText = nullptr;
    TimelineWidget* m_timeline = nullptr;
    TimelineMinimap* m_minimap = nullptr;
    QComboBox* m_grouping = nullptr;
    QLineEdit* m_search = nullptr;
    LiveAllocationModel* m_live = nullptr;
    LiveAllocationFilter* m_filter = nullptr;
    QTreeView* m_liveView = nullptr;
    QLabel* m_tableNote = nullptr;
    AllocationDetails* m_details = nullptr;
    SegmentView* m_segments = nullptr;
    QTabWidget* m_sideTabs = nullptr;
};

} // namespace headroom
