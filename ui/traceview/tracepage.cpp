// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/traceview/tracepage.h"

#include "ui/common/jobrunner.h"

#include "core/compare/comparison.h"
#include "core/compare/runtimeline.h"
#include "core/io/bytesformat.h"
#include "core/io/codeprofile.h"
#include "core/io/scenariojson.h"
#include "core/plan/settingnames.h"
#include "core/serve/estimate.h"
#include "ui/common/categorycolors.h"
#include "ui/common/tablecopy.h"
#include "ui/traceview/allocationdetails.h"
#include "ui/traceview/allocatorpanel.h"
#include "ui/traceview/categorybars.h"
#include "ui/traceview/liveallocationmodel.h"
#include "ui/traceview/regiontable.h"
#include "ui/traceview/segmentview.h"
#include "ui/traceview/timelineminimap.h"
#include "ui/traceview/timelinewidget.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTreeView>
#include <QVBoxLayout>
#include <atomic>
#include <map>

namespace headroom {

TracePage::TracePage(const QString& path, QWidget* parent) : QWidget(parent) {
    build();
    addFile(path);
}

// The loaders (children) cancel their jobs and never wait: closing a tab is immediate.
TracePage::~TracePage() = default;

QString TracePage::title() const {
    QStringList names;
    for (const QString& p : m_paths)
        names << QFileInfo(p).fileName();
    return names.join(QStringLiteral(" + "));
}

void TracePage::build() {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(6, 6, 6, 6);
    // Loading: progress and cancel.
    m_loading = new QWidget;
    auto* loadRow = new QHBoxLayout(m_loading);
    loadRow->setContentsMargins(0, 0, 0, 0);
    m_loadingText = new QLabel;
    m_progress = new QProgressBar;
    m_progress->setRange(0, 1000);
    m_progress->setTextVisible(false);
    m_cancel = new QPushButton(tr("Cancel"));
    loadRow->addWidget(m_loadingText);
    loadRow->addWidget(m_progress, 1);
    loadRow->addWidget(m_cancel);
    connect(m_cancel, &QPushButton::clicked, this, &TracePage::cancel);
    outer->addWidget(m_loading);

    m_summary = new QLabel;
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setWordWrap(true);
    outer->addWidget(m_summary);
    m_banner = new QLabel;
    m_banner->setWordWrap(true);
    m_banner->setStyleSheet(QStringLiteral("QLabel { background: #fff4ce; color: #5c4400; border: 1px solid "
                                           "#e0c060; border-radius: 3px; padding: 4px; }"));
    m_banner->hide();
    outer->addWidget(m_banner);

    m_content = new QWidget;
    m_content->setEnabled(false);
    auto* content = new QVBoxLayout(m_content);
    content->setContentsMargins(0, 0, 0, 0);
    auto* tools = new QHBoxLayout;
    m_axis = new QComboBox;
    m_axis->addItem(tr("Time"), int(TimelineAxis::Time));
    m_axis->addItem(tr("Event index"), int(TimelineAxis::Event));
    m_axis->setToolTip(tr("x axis: the events' recorded time, or their order"));
    m_bands = new QSpinBox;
    m_bands->setRange(0, 200);
    m_bands->setValue(static_cast<int>(m_bandCount));
    m_bands->setPrefix(tr("largest "));
    m_bands->setSuffix(tr(" allocations as bands"));
    auto* whole = new QPushButton(tr("Whole run"));
    auto* clearRange = new QPushButton(tr("Clear range"));
    m_momentText = new QLabel;
    m_momentText->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_drawing = new QComboBox;
    m_drawing->addItem(tr("Memory by category"));
    m_drawing->addItem(tr("Largest allocations as bands"));
    m_drawing->addItem(tr("Every allocation in its place"));
    m_drawing->setToolTip(tr("By category: every allocation of the run attributed as at the peak (the rules, "
                             "and the scenario's tensor sizes when one is paired), stacked. Every allocation "
                             "in its place: the largest allocations live in the view (up to 400) stacked in "
                             "the order they were made, each moving down as those below it are freed. Each "
                             "pixel column shows the state at its allocated peak."));
    tools->addWidget(new QLabel(tr("Axis:")));
    tools->addWidget(m_axis);
    tools->addWidget(m_drawing);
    tools->addWidget(m_bands);
    m_colourBy = new QComboBox;
    m_colourBy->addItem(tr("Coloured by category"));
    m_colourBy->addItem(tr("Coloured by allocation"));
    auto* compare = new QPushButton(tr("Compare with Scenario…"));
    compare->setToolTip(
        tr("The scenario of this workload: its estimate beside the measured bytes, by category"));
    tools->addWidget(m_colourBy);
    tools->addWidget(whole);
    tools->addWidget(clearRange);
    tools->addWidget(compare);
    tools->addStretch(1);
    content->addLayout(tools);
    // On a line of its own: a long moment or range description must not widen the window.
    m_momentText->setWordWrap(true);
    content->addWidget(m_momentText);

    auto* vsplit = new QSplitter(Qt::Vertical);
    auto* top = new QWidget;
    auto* topLayout = new QVBoxLayout(top);
    topLayout->setContentsMargins(0, 0, 0, 0);
    topLayout->setSpacing(2);
    m_timeline = new TimelineWidget;
    addWidgetExportActions(m_timeline, QStringLiteral("memory-timeline"), tr("Memory timeline"));
    m_minimap = new TimelineMinimap(m_timeline);
    topLayout->addWidget(m_timeline, 1);
    topLayout->addWidget(m_minimap);
    vsplit->addWidget(top);

    auto* bottom = new QSplitter(Qt::Horizontal);
    auto* tablePane = new QWidget;
    auto* tableLayout = new QVBoxLayout(tablePane);
    tableLayout->setContentsMargins(0, 0, 0, 0);
    auto* filterRow = new QHBoxLayout;
    m_grouping = new QComboBox;
    m_grouping->addItem(tr("Grouped by top user frame"), int(LiveAllocationModel::Grouping::TopFrame));
    m_grouping->addItem(tr("Grouped by full stack"), int(LiveAllocationModel::Grouping::Stack));
    m_grouping->addItem(tr("Grouped by category"), int(LiveAllocationModel::Grouping::Category));
    m_grouping->addItem(tr("Not grouped"), int(LiveAllocationModel::Grouping::None));
    m_search = new QLineEdit;
    m_search->setPlaceholderText(tr("Search frames or an address"));
    m_search->setClearButtonEnabled(true);
    filterRow->addWidget(m_grouping);
    filterRow->addWidget(m_search, 1);
    tableLayout->addLayout(filterRow);
    m_live = new LiveAllocationModel(this);
    m_filter = new LiveAllocationFilter(this);
    m_filter->setSourceModel(m_live);
    m_liveView = new QTreeView;
    addTableCopyActions(m_liveView, tr("Live allocations"));
    m_liveView->setModel(m_filter);
    m_liveView->setSortingEnabled(true);
    m_liveView->sortByColumn(LiveAllocationModel::Size, Qt::DescendingOrder);
    m_liveView->setUniformRowHeights(true);
    m_liveView->setAlternatingRowColors(true);
    m_liveView->header()->setStretchLastSection(false);
    m_liveView->header()->setMinimumSectionSize(40);
    m_tableNote =
        new QLabel(tr("This format records memory totals, not allocations: the live allocations, their "
                      "stacks and the segments come from PyTorch memory snapshots "
                      "(torch.cuda.memory._record_memory_history, then _dump_snapshot)."));
    m_tableNote->setWordWrap(true);
    m_tableNote->hide();
    tableLayout->addWidget(m_tableNote);
    tableLayout->addWidget(m_liveView, 1);
    bottom->addWidget(tablePane);
    m_sideTabs = new QTabWidget;
    m_categories = new CategoryBars;
    m_sideTabs->addTab(m_categories, tr("Categories"));
    m_details = new AllocationDetails;
    m_sideTabs->addTab(m_details, tr("Allocation"));
    m_regionTable = new RegionTable;
    m_sideTabs->addTab(m_regionTable, tr("Regions"));
    m_segments = new SegmentView;
    addWidgetExportActions(m_segments, QStringLiteral("segments"), tr("Segments"));
    auto* scroll = new QScrollArea;
    scroll->setWidget(m_segments);
    scroll->setWidgetResizable(true);
    m_sideTabs->addTab(scroll, tr("Segments"));
    m_allocator = new AllocatorPanel;
    // In a scroll area like the segments: on a short window the settings, the plot and the result text
    // scroll instead of being laid over one another.
    auto* allocatorScroll = new QScrollArea;
    allocatorScroll->setWidget(m_allocator);
    allocatorScroll->setWidgetResizable(true);
    allocatorScroll->setFrameShape(QFrame::NoFrame);
    m_sideTabs->addTab(allocatorScroll, tr("Allocator settings"));
    bottom->addWidget(m_sideTabs);
    bottom->setStretchFactor(0, 3);
    bottom->setStretchFactor(1, 2);
    bottom->setSizes({600, 400});
    vsplit->addWidget(bottom);
    // Half and half: the table and the side tabs (the allocator what-if's settings, answer and plot) need
    // as much room as the timeline.
    vsplit->setStretchFactor(0, 1);
    vsplit->setStretchFactor(1, 1);
    content->addWidget(vsplit, 1);
    outer->addWidget(m_content, 1);

    connect(m_axis, &QComboBox::currentIndexChanged, this, [this] {
        m_timeline->setAxis(static_cast<TimelineAxis>(m_axis->currentData().toInt()));
        m_minimap->invalidate();
        if (!m_timeline->lanes().empty() && m_event != kBeforeFirstEvent)
            m_timeline->setMoment(m_timeline->lanes()[static_cast<std::size_t>(m_lane)].timeline->xOf(
                m_timeline->view().axis, m_event));
        m_range.reset();
        refreshSelection();
    });
    connect(m_bands, &QSpinBox::valueChanged, this, [this](int n) {
        m_bandCount = static_cast<std::size_t>(n);
        for (const auto& lane : m_timeline->lanes())
            lane.timeline->setBandCount(m_bandCount);
        colourBands();
        m_timeline->update();
        m_minimap->invalidate();
    });
    connect(whole, &QPushButton::clicked, m_timeline, &TimelineWidget::showAll);
    connect(m_colourBy, &QComboBox::currentIndexChanged, this, &TracePage::colourBands);
    auto showDrawing = [this] {
        const bool byCategory = m_drawing->currentIndex() == 0, stack = m_drawing->currentIndex() == 2;
        m_timeline->setByCategory(byCategory);
        m_timeline->setAllocationStack(stack);
        const bool bands = !byCategory && !stack;
        m_bands->setVisible(bands); // the bands' count only matters to the bands, their colours to both
        m_colourBy->setVisible(!byCategory);
        m_minimap->invalidate();
    };
    connect(m_drawing, &QComboBox::currentIndexChanged, this, showDrawing);
    showDrawing();
    connect(compare, &QPushButton::clicked, this, [this] {
        const QString path =
            QFileDialog::getOpenFileName(this, tr("Scenario of this workload"), QString(),
                                         tr("Headroom scenarios (*.headroom.json);;JSON (*.json)"));
        if (path.isEmpty())
            return;
        emit scenarioFileChosen(path); // the window reads and estimates it (views never compute)
    });
    connect(clearRange, &QPushButton::clicked, this, [this] { m_timeline->setRange(std::nullopt); });
    connect(m_regionTable, &RegionTable::regionChosen, this, [this](int lane, int region) {
        const auto l = static_cast<std::size_t>(lane), r = static_cast<std::size_t>(region);
        if (l >= m_regions.size() || r >= m_regions[l].size() || l >= m_timeline->lanes().size())
            return;
        // The region's events as a range on the axis in view (its times when it holds no event).
        const RegionMemory& m = m_regions[l][r];
        const Timeline& tl = *m_timeline->lanes()[l].timeline;
        const TimelineAxis axis = m_timeline->view().axis;
        double x0 = static_cast<double>(m.start), x1 = static_cast<double>(m.end);
        if (!m.empty) {
            x0 = tl.xOf(axis, m.first);
            x1 = tl.xOf(axis, m.last) + (axis == TimelineAxis::Event ? 1 : 0);
        } else if (axis == TimelineAxis::Event || m.end == INT64_MAX) {
            return;
        }
        if (x1 <= x0) // an instant: one unit wide, so that it shows
            x1 = x0 + 1;
        const double pad = (x1 - x0) * 0.05;
        m_timeline->setVisibleRange(x0 - pad, x1 + pad);
        m_timeline->setRange(std::make_pair(x0, x1));
        selectRange(std::make_pair(x0, x1));
    });
    connect(m_timeline, &TimelineWidget::momentSelected, this, [this](double x, int lane) {
        m_range.reset();
        m_timeline->setRange(std::nullopt);
        selectMoment(x, lane);
    });
    connect(m_timeline, &TimelineWidget::rangeSelected, this, [this](auto range) {
        if (range != m_range)
            selectRange(range);
    });
    connect(m_grouping, &QComboBox::currentIndexChanged, this, [this] {
        m_live->setGrouping(static_cast<LiveAllocationModel::Grouping>(m_grouping->currentData().toInt()));
        m_liveView->expandToDepth(-1);
    });
    connect(m_search, &QLineEdit::textChanged, m_filter, &LiveAllocationFilter::setNeedle);
    connect(m_liveView->selectionModel(), &QItemSelectionModel::currentChanged, this,
            &TracePage::showSelectedAllocation);
}

void TracePage::addFile(const QString& path) {
    m_paths << path;
    emit titleChanged();
    startJob(path);
}

void TracePage::startJob(const QString& path) {
    m_loading->show();
    m_progress->show();
    m_cancel->show();
    m_loadingText->setStyleSheet(QString());
    m_loadingText->setText(tr("Reading %1…").arg(QFileInfo(path).fileName()));
    m_progress->setValue(0);
    // One runner per file: lanes load side by side. Progress reaches the GUI at most once per 0.1%; the
    // summary arrives before the indexes are built.
    auto* loader = new JobRunner(this);
    m_loaders.push_back(loader);
    ++m_pending;
    const std::string file = path.toStdString();
    QPointer<TracePage> self(this);
    loader->start(
        [file, self, path](const JobContext& job) {
            auto lastPermille = std::make_shared<int>(-1);
            return loadTrace(
                file,
                [&job, self, lastPermille](double f) {
                    const int permille = static_cast<int>(f * 1000);
                    if (permille != *lastPermille) {
                        *lastPermille = permille;
                        job.post([self, permille] {
                            if (self)
                                self->m_progress->setValue(permille);
                        });
                    }
                    return !job.cancelled();
                },
                [&job, self, path](const TraceSummary& summary) {
                    auto s = std::make_shared<const TraceSummary>(summary);
                    job.post([self, path, s] {
                        if (self)
                            self->onSummary(path, s);
                    });
                });
        },
        [this, path, loader](JobOutcome<std::shared_ptr<LoadedTrace>> outcome) {
            m_loaders.removeOne(loader);
            loader->deleteLater();
            if (outcome.ok())
                onDetails(std::move(*outcome.value));
            else
                onFailed(path, QString::fromStdString(outcome.error));
        });
}

void TracePage::cancel() {
    for (JobRunner* loader : m_loaders)
        loader->cancel();
}

void TracePage::onSummary(const QString& path, std::shared_ptr<const TraceSummary> s) {
    // The summary first: the user reads the peaks while the indexes are built.
    QStringList lines;
    // Profiler traces without "Total Reserved", timelines and nvidia-smi logs do not record reserved bytes.
    const bool reserved =
        s->format == TraceFormat::PytorchSnapshot || s->format == TraceFormat::PytorchSnapshotJson;
    for (const DeviceSummary& d : s->devices)
        lines << tr("device %1: %2 events, peak allocated %3, peak reserved %4")
                     .arg(QString::fromStdString(d.key))
                     .arg(d.entries)
                     .arg(d.allocatedRecorded ? m_style.format(static_cast<double>(d.peakAllocated))
                                              : tr("not recorded"),
                          reserved || d.peakReserved > 0 ? m_style.format(static_cast<double>(d.peakReserved))
                                                         : tr("not recorded"))
                     .toHtmlEscaped();
    m_summary->setText(QStringLiteral("<b>%1</b> · %2<br>%3")
                           .arg(QFileInfo(path).fileName().toHtmlEscaped(),
                                QString::fromUtf8(traceFormatName(s->format)),
                                lines.join(QStringLiteral("<br>"))));
    m_loadingText->setText(tr("Indexing %1…").arg(QFileInfo(path).fileName()));
}

void TracePage::onDetails(std::shared_ptr<const LoadedTrace> trace) {
    m_traces.push_back(std::move(trace));
    if (--m_pending == 0)
        m_loading->hide();
    rebuildLanes();
    emit loaded();
}

void TracePage::onFailed(const QString& path, const QString& error) {
    const bool cancelled =
        error == QLatin1String("cancelled") || error.endsWith(QLatin1String(": cancelled"));
    m_error = cancelled ? tr("Loading %1 was cancelled.").arg(path) : error;
    m_progress->hide();
    m_cancel->hide();
    m_loadingText->setText(m_error);
    m_loadingText->setStyleSheet(QStringLiteral("color: #b00020;"));
    --m_pending;
    emit failed(m_error);
}

void TracePage::rebuildLanes() {
    std::vector<TimelineLane> lanes;
    for (const auto& t : m_traces)
        for (TimelineLane& lane : lanesOf(t, m_bandCount))
            lanes.push_back(std::move(lane));
    m_timeline->setLanes(std::move(lanes));
    colourBands();
    computeCategories();
    m_minimap->invalidate();
    const bool time = m_timeline->view().axis == TimelineAxis::Time;
    m_axis->blockSignals(true);
    m_axis->setCurrentIndex(time ? 0 : 1);
    m_axis->setItemData(0, time ? QVariant() : QVariant(0),
                        Qt::UserRole - 1); // disable "Time" without timestamps
    m_axis->blockSignals(false);
    m_content->setEnabled(!m_timeline->lanes().empty());
    updateBanner();
    if (m_timeline->lanes().empty()) {
        // A snapshot taken without _record_memory_history holds its segments at the moment it was taken:
        // say what it holds and how to record a run, rather than only that there is nothing to draw.
        std::int64_t allocated = 0;
        std::size_t segments = 0;
        for (const auto& t : m_traces)
            for (const DeviceSummary& d : t->summary.devices) {
                allocated += d.finalAllocated;
                segments += d.segments;
            }
        m_momentText->setText(
            segments > 0
                ? tr("This snapshot records no events, only the memory when it was taken (%1 allocated in %2 "
                     "%3), which need not be the run's peak: record the run with "
                     "torch.cuda.memory._record_memory_history() before it, then _dump_snapshot.")
                      .arg(m_style.format(static_cast<double>(allocated)))
                      .arg(segments)
                      .arg(segments == 1 ? tr("segment") : tr("segments"))
                : tr("This trace has no events."));
        return;
    }
    // Start at the peak of the first lane.
    const TimelineLane& first = m_timeline->lanes().front();
    const std::size_t peak = first.summary().peakAllocatedAfter;
    selectMoment(first.timeline->xOf(m_timeline->view().axis, peak == kBeforeFirstEvent ? 0 : peak), 0);
}

void TracePage::updateBanner() {
    QStringList notes;
    for (const auto& lane : m_timeline->lanes()) {
        const std::size_t ghosts = lane.index().ghostFrees();
        if (ghosts)
            notes
                << tr("%1 starts mid-run: %2 frees of allocations it never saw allocated (recording began "
                      "late, "
                      "or the max_entries ring buffer dropped the beginning). Allocations from before it are "
                      "shown as live from the start.")
                       .arg(lane.label)
                       .arg(ghosts);
        for (const OomEvent& oom : lane.index().ooms())
            notes << (oom.deviceFree > 0 // profiler traces do not record the device's free memory
                          ? tr("%1: out of memory at event %2: asked for %3 with %4 free on the device.")
                                .arg(lane.label)
                                .arg(oom.index)
                                .arg(m_style.format(static_cast<double>(oom.requested)),
                                     m_style.format(static_cast<double>(oom.deviceFree)))
                          : tr("%1: out of memory at event %2: asked for %3.")
                                .arg(lane.label)
                                .arg(oom.index)
                                .arg(m_style.format(static_cast<double>(oom.requested))));
    }
    for (const auto& t : m_traces)
        for (const auto& w : t->trace.warnings)
            notes << QString::fromStdString(w);
    m_banner->setText(notes.join(QLatin1Char('\n')));
    m_banner->setVisible(!notes.isEmpty());
}

void TracePage::setStyle(const ChartStyle& style) {
    m_style = style;
    m_timeline->setStyle(style);
    m_segments->setStyle(style);
    m_categories->setStyle(style);
    m_allocator->setStyle(style);
    m_regionTable->setStyle(style);
    m_minimap->invalidate();
}

void TracePage::selectMoment(double x, int lane) {
    const auto& lanes = m_timeline->lanes();
    if (lanes.empty())
        return;
    m_lane = std::clamp(lane, 0, static_cast<int>(lanes.size()) - 1);
    const Timeline& tl = *lanes[static_cast<std::size_t>(m_lane)].timeline;
    m_event = tl.eventAt(m_timeline->view().axis, x);
    if (m_event == kBeforeFirstEvent)
        m_event = 0;
    m_timeline->setMoment(x);
    const TimelineLane& selected = lanes[static_cast<std::size_t>(m_lane)];
    m_allocator->setDevice(selected.trace, selected.device); // replays only when the lane changes
    refreshSelection();
}

void TracePage::selectRange(std::optional<std::pair<double, double>> range) {
    m_range = range;
    if (m_timeline->view().range != range)
        m_timeline->setRange(range);
    refreshSelection();
}

void TracePage::refreshSelection() {
    const auto& lanes = m_timeline->lanes();
    if (lanes.empty())
        return;
    const TimelineLane& lane = lanes[static_cast<std::size_t>(m_lane)];
    const TraceIndex& index = lane.index();
    const bool time = m_timeline->view().axis == TimelineAxis::Time;
    const double spu = lane.timeline->hasTime() ? m_timeline->view().secondsPerUnit : 0.0;
    const double origin = m_timeline->view().origin;
    auto where = [&](std::size_t e) {
        return time ? tr("%1 s (event %2)")
                          .arg((lane.timeline->xOf(TimelineAxis::Time, e) - origin) * spu, 0, 'f', 6)
                          .arg(e)
                    : tr("event %1").arg(e);
    };
    std::vector<Allocation> live;
    std::size_t segmentsAt = m_event; // a range shows the segments at its peak
    QString segmentsCaption;
    if (m_range) {
        std::size_t a = lane.timeline->eventAt(m_timeline->view().axis, m_range->first);
        std::size_t b = lane.timeline->eventAt(m_timeline->view().axis, m_range->second);
        a = a == kBeforeFirstEvent ? 0 : a;
        b = b == kBeforeFirstEvent ? 0 : b;
        live = index.liveDuring(a, b);
        const auto [lo, hi] = lane.timeline->allocatedExtremes(a, b + 1);
        const auto& series = index.allocatedSeries();
        segmentsAt = a;
        for (std::size_t e = a; e <= b && e < series.size(); ++e)
            if (series[e] == hi) {
                segmentsAt = e;
                break;
            }
        segmentsCaption = tr("Segments at the range's peak, %1").arg(where(segmentsAt));
        m_momentText->setText(tr("Range %1 – %2: allocated between %3 and %4; %5 allocations live in it")
                                  .arg(where(a), where(b), m_style.format(static_cast<double>(lo)),
                                       m_style.format(static_cast<double>(hi)))
                                  .arg(live.size()));
    } else {
        live = index.liveAfter(m_event);
        const MemoryState s = index.stateAfter(m_event);
        const DeviceTrace& dev = lane.trace->trace.devices.at(lane.device);
        const QString reserved = dev.hasTotals && !dev.hasReservedTotals
                                     ? tr("reserved not recorded")
                                     : tr("reserved %1").arg(m_style.format(static_cast<double>(s.reserved)));
        m_momentText->setText(
            !dev.hasAllocatedTotals ? tr("At %1: %2").arg(where(m_event), reserved)
            : dev.hasTotals
                ? tr("At %1: allocated %2, %3")
                      .arg(where(m_event), m_style.format(static_cast<double>(s.allocated)), reserved)
                : tr("At %1: allocated %2, %3, %4 live allocations")
                      .arg(where(m_event), m_style.format(static_cast<double>(s.allocated)), reserved)
                      .arg(live.size()));
    }
    m_tableNote->setVisible(lane.trace->trace.devices.at(lane.device).hasTotals);
    if (segmentsCaption.isEmpty())
        segmentsCaption = tr("Segments at %1").arg(where(segmentsAt));
    // The split by category at the same moment, and with a scenario the estimate beside it.
    const Scenario* scenario = m_scenario ? &*m_scenario : nullptr;
    m_attribution = attribute(lane.trace->trace, index, segmentsAt, m_rules, scenario);
    // Which profile plans the code that made these bytes, when the scenario's does not, and what it plans.
    const CodeOrigin code = scenario ? codeOrigin(lane.trace->trace, m_attribution) : CodeOrigin{};
    std::string advice = scenario ? codeOriginAdvice(code, plannedFramework(*scenario)) : std::string();
    // The code's own profile's figures first (the note is one line, the rest in its tooltip), planned off
    // the GUI thread with the categories (computeCategories).
    if (!advice.empty() && m_codePlanFor == code.framework && !m_codePlan.empty())
        advice = m_codePlan + "; " + advice;
    // The run's allocator against the scenario's: what it reserves depends on it.
    if (const std::string allocator =
            scenario ? allocatorSettingsAdvice(*scenario, lane.trace->trace.allocatorSettings)
                     : std::string();
        !allocator.empty())
        advice = advice.empty() ? allocator : advice + "; " + allocator;
    const bool allocatedRecorded = lane.trace->trace.devices.at(lane.device).hasAllocatedTotals;
    if (!allocatedRecorded && scenario && lane.device < lane.trace->summary.devices.size()) {
        // A log of the memory in use: what it can be compared by (as compare does,
        // core/compare/comparison.h).
        const double used = static_cast<double>(lane.trace->summary.devices[lane.device].peakReserved);
        if (used > 0)
            m_categories->setNote(tr("In use on the GPU: the plan's peak %1 (what PyTorch reserves, the CUDA "
                                     "context and memory "
                                     "outside it) is %2% %3 the most this log saw, %4.")
                                      .arg(m_style.format(m_planOnGpu))
                                      .arg(std::abs(100 * (m_planOnGpu / used - 1)), 0, 'f', 1)
                                      .arg(m_planOnGpu < used ? tr("below") : tr("above"))
                                      .arg(m_style.format(used)));
    } else {
        m_categories->setNote(advice.empty() ? QString()
                                             : tr("Note: %1.").arg(QString::fromStdString(advice)));
    }
    m_categories->setMeasured(
        m_attribution.bytes,
        !allocatedRecorded ? tr("Used memory alone (read as reserved): no split by category")
        : lane.trace->trace.devices.at(lane.device).hasTotals
            ? tr("This format records totals, not allocations: no split by category")
            : (m_range ? tr("At the range's peak, %1") : tr("At %1")).arg(where(segmentsAt)),
        allocatedRecorded);
    // Each listed allocation's category: the split's own at a moment (so the table and the bar agree);
    // in a range, each on its own.
    std::vector<MeasuredCategory> categories;
    categories.reserve(live.size());
    if (!m_range) {
        std::map<std::pair<std::uint64_t, std::size_t>, MeasuredCategory> placed;
        for (const auto& p : m_attribution.allocations)
            placed[{p.allocation.addr, p.allocation.start}] = p.category;
        for (const Allocation& a : live) {
            const auto it = placed.find({a.addr, a.start});
            categories.push_back(it == placed.end() ? MeasuredCategory::Unattributed : it->second);
        }
    } else {
        const AllocationCategories classify(lane.trace->trace, index, m_rules, scenario);
        for (const Allocation& a : live)
            categories.push_back(classify(a));
    }
    m_live->setAllocations(lane.trace, lane.device, std::move(live), origin, spu, std::move(categories));
    m_liveView->expandToDepth(-1);
    // Numbers sized to their text, the frame column takes the rest (set again: a reset forgets widths).
    QHeaderView* header = m_liveView->header();
    for (int c = LiveAllocationModel::What; c < LiveAllocationModel::ColumnCount; ++c)
        header->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    header->setSectionResizeMode(LiveAllocationModel::Where, QHeaderView::Stretch);
    if (m_liveView->model()->rowCount() > 0)
        m_liveView->setCurrentIndex(m_liveView->model()->index(0, 0));
    m_segments->setSegments(index.segmentsAfter(segmentsAt), segmentsCaption);
    showSelectedAllocation();
}

void TracePage::showSelectedAllocation() {
    QModelIndex current = m_filter->mapToSource(m_liveView->currentIndex());
    const Allocation* a = m_live->allocation(current);
    if (!a && current.isValid() && m_live->rowCount(current) > 0) // a group: show its largest member
        a = m_live->allocation(m_live->index(0, 0, current));
    m_details->showAllocation(*m_live, a);
}

void TracePage::setScenario(const Scenario& scenario, const Estimate& est, const QString& name) {
    m_scenario = scenario;
    m_scenarioName = name;
    m_planOnGpu = est.gpuPeakBytes();
    m_categories->setEstimate(estimateInMeasuredCategories(est), name);
    colourBands();
    computeCategories();
    refreshSelection();
}

void TracePage::setRules(const AttributionRules& rules) {
    m_rules = rules;
    colourBands();
    computeCategories();
    refreshSelection();
}

void TracePage::computeCategories() {
    // Each lane's trace is shared and read-only; the work gets copies of the rules and the scenario, and
    // a newer start (new lanes, rules or scenario) drops this one's result.
    struct LaneInput {
        std::shared_ptr<const LoadedTrace> trace;
        std::size_t device;
        std::shared_ptr<const AllocationStack> stack; // sorted once: it depends on neither rules nor scenario
    };
    std::vector<LaneInput> inputs;
    for (const TimelineLane& lane : m_timeline->lanes())
        inputs.push_back({lane.trace, lane.device, lane.timeline->sharedAllocationStack()});
    m_categoriesReady = false;
    m_categoriesBusy = !inputs.empty();
    if (inputs.empty())
        return;
    if (!m_categoryJob)
        m_categoryJob = new JobRunner(this);
    struct LaneOutput {
        std::shared_ptr<const StackedSeries> classes;
        std::vector<RegionMemory> regions;
        std::shared_ptr<const PlanOverlay> plan;
        std::shared_ptr<const AllocationStack> stack;
        // Where the stacks at the peak name another profile's code than the scenario's, the scenario
        // planned with that profile, in words for the note (core/io/codeprofile.h).
        std::optional<Framework> codePlanFor;
        std::string codePlan;
    };
    m_categoryJob->start(
        [inputs, rules = m_rules, scenario = m_scenario](const JobContext& job) {
            std::vector<LaneOutput> out;
            for (const LaneInput& in : inputs) {
                job.cancellation().check();
                const TraceIndex& index = *in.trace->indexes.at(in.device);
                out.push_back(
                    {categorySeries(in.trace->trace, index, rules, scenario ? &*scenario : nullptr),
                     regionMemory(in.trace->trace, index),
                     scenario && scenario->model.known
                         ? std::make_shared<const PlanOverlay>(planOverlay(*scenario, in.trace->trace, index))
                         : nullptr,
                     in.stack ? in.stack : std::make_shared<const AllocationStack>(index),
                     std::nullopt,
                     {}});
                if (!scenario || out.size() > 1)
                    continue;
                const std::size_t peak = index.peakAfter() == kBeforeFirstEvent ? 0 : index.peakAfter();
                const CodeOrigin origin =
                    codeOrigin(in.trace->trace, attribute(in.trace->trace, index, peak, rules, &*scenario));
                if (!origin.found || origin.framework == plannedFramework(*scenario))
                    continue;
                out.back().codePlanFor = origin.framework;
                if (const std::optional<CodeProfilePlan> p = planWithFramework(*scenario, origin.framework))
                    out.back().codePlan = "planned with its code's profile, " +
                                          std::string(nameOf(frameworkNames(), origin.framework)) + ", " +
                                          formatBytes(p->allocated) + " allocated at most and " +
                                          formatBytes(p->reserved) + " reserved";
            }
            return out;
        },
        [this](JobOutcome<std::vector<LaneOutput>> outcome) {
            m_categoriesBusy = false;
            if (!outcome.ok())
                return; // a failure: the bands stay (a newer start drops this result before it comes)
            m_codePlanFor.reset();
            m_codePlan.clear();
            if (!outcome.value->empty()) {
                m_codePlanFor = outcome.value->front().codePlanFor;
                m_codePlan = outcome.value->front().codePlan;
            }
            m_regions.clear();
            std::vector<RegionTable::Lane> tableLanes;
            const auto& lanes = m_timeline->lanes();
            for (std::size_t i = 0; i < outcome.value->size() && i < lanes.size(); ++i) {
                LaneOutput& o = (*outcome.value)[i];
                m_timeline->setLaneClasses(i, o.classes);
                m_timeline->setLanePlan(i, o.plan);
                m_timeline->setLaneAllocationStack(i, o.stack);
                tableLanes.push_back({lanes[i].label, o.regions, m_timeline->view().secondsPerUnit,
                                      lanesDomain(lanes, TimelineAxis::Time).first});
                m_regions.push_back(std::move(o.regions));
            }
            m_regionTable->setLanes(std::move(tableLanes));
            m_categoriesReady = true;
            m_minimap->invalidate();
            refreshSelection(); // the note, with the code's profile planned
            emit categoriesComputed();
        });
}

void TracePage::colourBands() {
    const auto& lanes = m_timeline->lanes();
    for (std::size_t i = 0; i < lanes.size(); ++i) {
        std::vector<QColor> colors;
        m_timeline->setAllocationColours(i, m_colourBy->currentIndex() == 1);
        if (m_colourBy->currentIndex() == 0) {
            const AllocationCategories classify(lanes[i].trace->trace, lanes[i].index(), m_rules,
                                                m_scenario ? &*m_scenario : nullptr);
            for (const Allocation& band : lanes[i].timeline->bands())
                colors.push_back(categoryColor(classify(band)));
        }
        m_timeline->setBandColors(i, std::move(colors));
    }
    m_minimap->invalidate();
}

} // namespace headroom
