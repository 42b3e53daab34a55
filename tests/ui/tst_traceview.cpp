// SPDX-License-Identifier: GPL-3.0-or-later
// The trace viewer in a real window: every real trace opens in its own tab and the drawn peak equals the
// summary's; the live table and its grouping under QAbstractItemModelTester; moment, range and search
// against brute-force answers computed here from the trace's columns; ghost frees; notes and stack folding;
// cancel; errors; lanes; zoom and pan.
#include "core/compare/comparison.h"
#include "core/io/bytesformat.h"
#include "core/io/scenariojson.h"
#include "core/serve/estimate.h"
#include "core/trace/formats/tracereader.h"
#include "core/trace/traceindex.h"
#include "core/trace/tracesummary.h"
#include "tests/picklewriter.h"
#include "tests/testutil.h"
#include "tests/windowfixture.h"
#include "ui/common/categorycolors.h"
#include "ui/common/jobrunner.h"
#include "ui/common/sortabletable.h"
#include "ui/common/tablecopy.h"
#include "ui/compare/compareactions.h"
#include "ui/compare/diffpage.h"
#include "ui/mainwindow.h"
#include "ui/planner/scenariodocument.h"
#include "ui/traceview/allocationdetails.h"
#include "ui/traceview/allocatorpanel.h"
#include "ui/traceview/categorybars.h"

#include <QFontMetrics>
#include "ui/traceview/liveallocationmodel.h"
#include "ui/traceview/regiontable.h"
#include "ui/traceview/segmentview.h"
#include "ui/traceview/timelinewidget.h"
#include "ui/traceview/tracepage.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFile>
#include <QHeaderView>
#include <QLabel>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QAction>
#include <QMenu>
#include <QMenuBar>
#include <QTest>
#include <QThread>
#include <QThreadPool>
#include <QTreeView>
#include <QUndoStack>
#include <QXmlStreamReader>
#include <set>

using namespace headroom;

namespace {

QString traces() {
    return test::dataDir() + "/traces";
}

QStringList realTraces() {
    QStringList out;
    for (const char* dir : {"snapshots", "chrome_traces", "memory_timeline"})
        for (const QString& f : QDir(traces() + "/" + dir).entryList(QDir::Files))
            out << traces() + "/" + dir + "/" + f;
    return out;
}

// Sum of the allocations' sizes under a model row (recursively), and their count.
void sumRows(const QAbstractItemModel& m, const QModelIndex& parent, const LiveAllocationModel& live,
             const QAbstractProxyModel* proxy, std::int64_t* bytes, std::size_t* count) {
    for (int r = 0; r < m.rowCount(parent); ++r) {
        const QModelIndex i = m.index(r, 0, parent);
        const Allocation* a = live.allocation(proxy ? proxy->mapToSource(i) : i);
        if (a)
            *bytes += a->size, ++*count;
        sumRows(m, i, live, proxy, bytes, count);
    }
}

// Liveness as TraceIndex documents it, checked here from the lifetimes alone.
bool liveAfter(const Allocation& a, std::size_t e) {
    return (a.start == kBeforeFirstEvent || a.start <= e) && e < a.end;
}

} // namespace

class TestTraceView : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void everyRealTraceOpensAndDrawsItsPeak();
    void liveTableUnderModelTester();
    void momentAndRangeSelection();
    void searchFindsFramesAndAddresses();
    void ghostFreesBanner();
    void notesStackFoldingAndCopy();
    void cancelAndErrors();
    void lanesAlignOnTime();
    void zoomPanAndClick();
    void categoriesAndCompare();
    void anNvidiaSmiLogBesideThePlan();
    void diffTwoRuns();
    void calibrateFromTheWindow();
    void calibrateReadsTheLossByOperator();
    void calibrateFromATraceTheScenarioIsNot();
    void calibrationRunsOffTheGuiThread();
    void allocatorWhatIfPanel();
    void allocatorReplayFailsAndCancelsWithoutBlocking();
    void jobRunnerDeliversValuesErrorsAndGenerations();
    void chartsExportAsImagesSvgAndPdf();

private:
    std::unique_ptr<MainWindow> window();
    TracePage* open(MainWindow& w, const QString& path);
    // examples/measured/`scenario` in the planner and tests/data/traces/snapshots/`snapshot` in a trace tab.
    TracePage* openRun(MainWindow& w, const char* scenario, const char* snapshot);
    QTemporaryDir m_dir;
};

void TestTraceView::initTestCase() {
    QVERIFY(m_dir.isValid());
}

std::unique_ptr<MainWindow> TestTraceView::window() {
    auto w = test::testWindow(m_dir);
    w->resize(1280, 800);
    return w;
}

TracePage* TestTraceView::open(MainWindow& w, const QString& path) {
    QString error;
    if (!w.openFile(path, &error))
        return nullptr;
    if (!w.waitForTraces(60000))
        return nullptr;
    return w.traceViews().empty() ? nullptr : w.traceViews().back();
}

TracePage* TestTraceView::openRun(MainWindow& w, const char* scenario, const char* snapshot) {
    QString error;
    if (!w.openScenario(QStringLiteral(HEADROOM_SOURCE_DIR "/examples/measured/") + QLatin1String(scenario),
                        &error)) {
        qWarning().noquote() << error;
        return nullptr;
    }
    TracePage* view = open(w, traces() + "/snapshots/" + QLatin1String(snapshot));
    return view && !view->hasFailed() ? view : nullptr;
}

void TestTraceView::everyRealTraceOpensAndDrawsItsPeak() {
    const QStringList files = realTraces();
    QVERIFY(files.size() >= 11);
    for (const QString& file : files) {
        auto w = window();
        w->show();
        TracePage* view = open(*w, file);
        QVERIFY2(view, qPrintable(file));
        QVERIFY2(!view->hasFailed(), qPrintable(view->errorText()));
        QCOMPARE(w->tabs()->count(), 2); // the planner keeps its tab
        QCOMPARE(w->tabs()->currentWidget(), view);
        // The reference: the same file read and summarised as `headroom-cli trace-summary` does.
        const TraceSummary summary = summarize(readTraceFile(file.toStdString()));
        const auto& lanes = view->timeline()->lanes();
        QVERIFY(!lanes.empty());
        for (const TimelineLane& lane : lanes) {
            const DeviceSummary* s = nullptr;
            for (const auto& d : summary.devices)
                if (d.key == lane.summary().key)
                    s = &d;
            QVERIFY(s);
            const TimelineViewState& v = view->timeline()->view();
            const TimelineFrame f = lane.timeline->frame(v.axis, v.x0, v.x1, 1200);
            std::int64_t drawn = 0;
            for (const auto& c : f.columns)
                if (c.valid)
                    drawn = std::max(drawn, c.allocatedMax);
            if (s->peakAllocatedAfter != kBeforeFirstEvent) // a peak before the first event is not drawn
                QCOMPARE(drawn, s->peakAllocated);
        }
        // It was really painted in the window, and starts at the peak of the first lane.
        view->timeline()->repaint();
        QVERIFY(view->timeline()->frameCount() > 0);
        const std::size_t peak = lanes.front().summary().peakAllocatedAfter;
        QCOMPARE(view->selectedEvent(), peak == kBeforeFirstEvent ? std::size_t(0) : peak);
    }
}

void TestTraceView::liveTableUnderModelTester() {
    auto w = window();
    TracePage* view = open(*w, traces() + "/snapshots/DeComFL_memory.pickle");
    QVERIFY(view && !view->hasFailed());
    LiveAllocationModel* live = view->liveModel();
    QAbstractItemModelTester t1(live, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester t2(view->liveFilter(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const TraceIndex& index = view->timeline()->lanes().front().index();
    const auto& lane = view->timeline()->lanes().front();
    view->axisBox()->setCurrentIndex(1); // event index: several events can share a microsecond
    for (std::size_t e : {index.peakAfter(), std::size_t(100), std::size_t(15000), index.events() - 1}) {
        view->selectMoment(lane.timeline->xOf(view->timeline()->view().axis, e));
        QCOMPARE(view->selectedEvent(), e);
        std::int64_t brute = 0;
        std::size_t bruteCount = 0;
        for (const Allocation& a : index.allocations())
            if (liveAfter(a, e))
                brute += a.size, ++bruteCount;
        for (auto g : {LiveAllocationModel::Grouping::None, LiveAllocationModel::Grouping::Stack,
                       LiveAllocationModel::Grouping::TopFrame, LiveAllocationModel::Grouping::Category}) {
            live->setGrouping(g);
            std::int64_t bytes = 0;
            std::size_t count = 0;
            sumRows(*view->liveFilter(), {}, *live, view->liveFilter(), &bytes, &count);
            QCOMPARE(count, bruteCount);
            QCOMPARE(bytes, brute);
            QCOMPARE(bytes, index.stateAfter(e).allocated);
        }
        // Sorted by size, largest first, at the top level.
        live->setGrouping(LiveAllocationModel::Grouping::None);
        view->liveView()->sortByColumn(LiveAllocationModel::Size, Qt::DescendingOrder);
        const auto* m = view->liveFilter();
        for (int r = 1; r < m->rowCount(); ++r)
            QVERIFY(
                m->index(r - 1, LiveAllocationModel::Size).data(LiveAllocationModel::SortRole).toLongLong() >=
                m->index(r, LiveAllocationModel::Size).data(LiveAllocationModel::SortRole).toLongLong());
    }
    // Grouped by category, the groups are the Categories tab's split, byte for byte.
    view->selectMoment(lane.timeline->xOf(view->timeline()->view().axis, index.peakAfter()));
    live->setGrouping(LiveAllocationModel::Grouping::Category);
    std::int64_t grouped = 0;
    for (int r = 0; r < live->rowCount(); ++r) {
        const QString label = live->index(r, LiveAllocationModel::Where).data().toString();
        const qlonglong bytes =
            live->index(r, LiveAllocationModel::Size).data(LiveAllocationModel::SortRole).toLongLong();
        bool found = false;
        for (std::size_t c = 0; c < kMeasuredCategories; ++c)
            if (label == QString::fromLatin1(measuredCategoryLabel(static_cast<MeasuredCategory>(c)))) {
                QCOMPARE(bytes, static_cast<qlonglong>(view->attribution().bytes[c]));
                found = true;
            }
        QVERIFY2(found, qPrintable(label));
        grouped += bytes;
    }
    QCOMPARE(grouped, view->attribution().total);
    // The segments at the peak hold the reserved bytes, and their blocks the allocated bytes inside them.
    view->selectMoment(lane.timeline->xOf(view->timeline()->view().axis, index.peakAfter()));
    std::int64_t reserved = 0;
    for (const auto& s : view->segmentView()->segments())
        reserved += s.segment.size;
    QCOMPARE(reserved, index.stateAfter(index.peakAfter()).reserved);
    QVERIFY(view->segmentView()->summaryText().contains(QStringLiteral("largest free block")));
}

void TestTraceView::momentAndRangeSelection() {
    auto w = window();
    TracePage* view = open(*w, traces() + "/snapshots/cs336_MAGMA27_memory_snapshot.pickle");
    QVERIFY(view && !view->hasFailed());
    const auto& lane = view->timeline()->lanes().front();
    const DeviceTrace& d = lane.trace->trace.devices.at(0);
    QCOMPARE(view->timeline()->view().axis, TimelineAxis::Time);
    // A moment in time selects the last event at or before it (scanned here).
    for (double f : {0.1, 0.37, 0.9}) {
        const double x =
            static_cast<double>(d.time.front()) + f * static_cast<double>(d.time.back() - d.time.front());
        std::size_t brute = 0;
        for (std::size_t e = 0; e < d.entries(); ++e)
            if (static_cast<double>(d.time[e]) <= x)
                brute = e;
        view->selectMoment(x);
        QCOMPARE(view->selectedEvent(), brute);
    }
    // A range lists every allocation live at some moment in it: live after its first event, or allocated
    // inside it.
    const double a = static_cast<double>(d.time[1000]), b = static_cast<double>(d.time[1400]);
    std::size_t e0 = 0, e1 = 0;
    for (std::size_t e = 0; e < d.entries(); ++e) {
        if (static_cast<double>(d.time[e]) <= a)
            e0 = e;
        if (static_cast<double>(d.time[e]) <= b)
            e1 = e;
    }
    std::set<std::pair<std::uint64_t, std::size_t>> brute;
    for (const Allocation& al : lane.index().allocations()) {
        bool live = false;
        for (std::size_t e = e0; e <= e1 && !live; ++e)
            live = liveAfter(al, e);
        if (live)
            brute.insert({al.addr, al.start});
    }
    view->selectRange(std::make_pair(a, b));
    std::set<std::pair<std::uint64_t, std::size_t>> shown;
    for (const Allocation& al : view->liveModel()->allocations())
        shown.insert({al.addr, al.start});
    QCOMPARE(shown.size(), brute.size());
    QVERIFY(shown == brute);
    QVERIFY(brute.size() > view->timeline()->lanes().front().index().liveAfter(e0).size());
    // The segments follow the range: those at its allocated peak (found here by scanning the series).
    const auto& series = lane.index().allocatedSeries();
    std::size_t peakAt = e0;
    for (std::size_t e = e0; e <= e1; ++e)
        if (series[e] > series[peakAt])
            peakAt = e;
    std::int64_t reserved = 0;
    for (const auto& seg : view->segmentView()->segments())
        reserved += seg.segment.size;
    QCOMPARE(reserved, lane.index().stateAfter(peakAt).reserved);
    QVERIFY(view->segmentView()->summaryText().size() > 0);
    // Esc in the timeline clears the range; the table goes back to the moment.
    view->timeline()->setFocus();
    QTest::keyClick(view->timeline(), Qt::Key_Escape);
    QCOMPARE(view->liveModel()->allocations().size(), lane.index().liveAfter(view->selectedEvent()).size());
}

void TestTraceView::searchFindsFramesAndAddresses() {
    auto w = window();
    TracePage* view = open(*w, traces() + "/snapshots/cs336_bcrafton_memory_snapshot.pickle");
    QVERIFY(view && !view->hasFailed());
    LiveAllocationModel* live = view->liveModel();
    live->setGrouping(LiveAllocationModel::Grouping::None);
    LiveAllocationFilter* filter = view->liveFilter();
    const int all = filter->rowCount();
    QVERIFY(all > 100);
    // By address, with or without 0x.
    const Allocation& first = live->allocations().front();
    filter->setNeedle(QStringLiteral("0x") + QString::number(first.addr, 16));
    QVERIFY(filter->rowCount() >= 1);
    QCOMPARE(live->allocation(filter->mapToSource(filter->index(0, 0)))->addr, first.addr);
    // By frame text: the allocations whose stacks mention "model.py", counted here from the stacks.
    const Trace& t = live->trace()->trace;
    int brute = 0;
    for (const Allocation& a : live->allocations()) {
        bool hit = false;
        for (const Frame& f : t.stacks[a.stack])
            hit = hit || t.strings[f.filename].find("model.py") != std::string::npos ||
                  t.strings[f.name].find("model.py") != std::string::npos;
        brute += hit;
    }
    QVERIFY(brute > 0);
    filter->setNeedle(QStringLiteral("MODEL.PY"));
    QCOMPARE(filter->rowCount(), brute);
    // Grouped: a group stays when any member matches.
    live->setGrouping(LiveAllocationModel::Grouping::TopFrame);
    std::int64_t bytes = 0;
    std::size_t count = 0;
    sumRows(*filter, {}, *live, filter, &bytes, &count);
    QCOMPARE(int(count), brute);
    filter->setNeedle(QStringLiteral("no-such-frame-anywhere"));
    QCOMPARE(filter->rowCount(), 0);
    filter->setNeedle(QString());
    live->setGrouping(LiveAllocationModel::Grouping::None);
    QCOMPARE(filter->rowCount(), all);
}

void TestTraceView::ghostFreesBanner() {
    auto w = window();
    const QString file = traces() + "/snapshots/cs336_bcrafton_memory_snapshot.pickle";
    TracePage* view = open(*w, file);
    QVERIFY(view && !view->hasFailed());
    // Frees of addresses the trace never allocated, replayed here from the columns.
    const DeviceTrace& d = view->traces().front()->trace.devices.at(0);
    std::set<std::uint64_t> seen;
    std::size_t ghosts = 0;
    for (std::size_t e = 0; e < d.entries(); ++e) {
        if (d.action[e] == TraceAction::Alloc)
            seen.insert(d.addr[e]);
        else if (d.action[e] == TraceAction::FreeRequested || d.action[e] == TraceAction::Free)
            ghosts += seen.erase(d.addr[e]) == 0;
    }
    QVERIFY(ghosts > 0);
    QCOMPARE(view->timeline()->lanes().front().index().ghostFrees(), ghosts);
    QVERIFY(!view->banner()->isHidden());
    QVERIFY(view->banner()->text().contains(QStringLiteral("starts mid-run: %1 frees").arg(ghosts)));
    // A trace that saw every allocation it frees has no banner.
    TracePage* clean =
        open(*w, traces() + "/snapshots/cs336_Wedsonlin_medium_128_inference_memory_snapshot.pickle");
    QVERIFY(clean && !clean->hasFailed());
    if (clean->timeline()->lanes().front().index().ghostFrees() == 0)
        QVERIFY(clean->banner()->isHidden());
}

void TestTraceView::notesStackFoldingAndCopy() {
    // One allocation from model.py:12 through two CPython frames, with user_metadata and compile_context.
    const QString path = m_dir.filePath("notes.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"segments": [], "device_traces": [[
      {"action": "alloc", "addr": 4096, "size": 1048576, "stream": 0, "time_us": 10,
       "user_metadata": "step=3", "compile_context": "frame 0/1",
       "frames": [{"name": "empty_strided_cuda", "filename": "??", "line": 0},
                  {"name": "forward", "filename": "/home/u/model.py", "line": 12},
                  {"name": "_PyEval_EvalFrameDefault", "filename": "??", "line": 0},
                  {"name": "PyObject_Call", "filename": "??", "line": 0},
                  {"name": "_call_impl", "filename": "/usr/lib/python3/site-packages/torch/nn/modules/module.py", "line": 1787}]},
      {"action": "alloc", "addr": 1052672, "size": 512, "stream": 0, "time_us": 20}
    ]]})");
    f.close();
    auto w = window();
    TracePage* view = open(*w, path);
    QVERIFY(view && !view->hasFailed());
    view->liveModel()->setGrouping(LiveAllocationModel::Grouping::None);
    view->selectMoment(20); // after both
    QCOMPARE(view->liveModel()->allocations().size(), size_t(2));
    // The largest row is selected and shown; its top user frame is model.py, not torch's module.py.
    const QModelIndex top = view->liveFilter()->index(0, LiveAllocationModel::Where);
    QCOMPARE(top.data().toString(), QStringLiteral("forward (/home/u/model.py:12)"));
    view->liveView()->setCurrentIndex(top);
    AllocationDetails* details = view->details();
    QString all;
    QTreeWidgetItem* fold = nullptr;
    QTreeWidgetItem* modelFrame = nullptr;
    for (QTreeWidgetItemIterator it(details); *it; ++it) {
        all += (*it)->text(0) + "=" + (*it)->text(1) + "\n";
        if ((*it)->text(0).contains(QStringLiteral("interpreter frame")))
            fold = *it;
        if ((*it)->text(1) == QStringLiteral("/home/u/model.py:12"))
            modelFrame = *it;
    }
    QVERIFY2(all.contains(QStringLiteral("user_metadata=step=3")), qPrintable(all));
    QVERIFY(all.contains(QStringLiteral("compile_context=frame 0/1")));
    QVERIFY(fold && fold->childCount() == 2); // the two CPython frames, folded into one row
    QVERIFY(modelFrame);
    details->setCurrentItem(modelFrame);
    QTest::keySequence(details, QKeySequence::Copy);
    QCOMPARE(QApplication::clipboard()->text(), QStringLiteral("/home/u/model.py:12"));
}

void TestTraceView::cancelAndErrors() {
    // A snapshot big enough that reading takes many progress steps, cancelled at once.
    test::PickleWriter pw;
    pw.beginDict();
    pw.str("segments");
    pw.beginList();
    pw.endList();
    pw.str("device_traces");
    pw.beginList();
    pw.beginList();
    for (int i = 0; i < 400000; ++i) {
        pw.beginDict();
        pw.str("action");
        pw.str(i % 2 ? "free_requested" : "alloc");
        pw.str("addr");
        pw.integer(4096LL * (i / 2 + 1));
        pw.str("size");
        pw.integer(512);
        pw.endDict();
    }
    pw.endList();
    pw.endList();
    pw.endDict();
    const QString big = m_dir.filePath("big.pickle");
    QFile f(big);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(pw.finish()));
    f.close();
    auto w = window();
    QString error;
    QVERIFY(w->openFile(big, &error));
    TracePage* view = w->traceViews().back();
    view->cancel();
    QVERIFY(w->waitForTraces(60000));
    // Either it was cancelled (the usual case) or it finished first; never both, never a hang.
    if (view->hasFailed())
        QVERIFY2(view->errorText().contains(QStringLiteral("cancelled")), qPrintable(view->errorText()));
    else
        QCOMPARE(view->timeline()->lanes().front().index().events(), std::size_t(400000));
    // A trace with no events at all: a tab that says so, and no diff or calibration to crash on.
    const QString empty = m_dir.filePath("empty.json");
    QFile e(empty);
    QVERIFY(e.open(QIODevice::WriteOnly));
    e.write(R"({"segments": [], "device_traces": [[]]})");
    e.close();
    TracePage* none = open(*w, empty);
    QVERIFY(none && !none->hasFailed());
    QVERIFY(none->timeline()->lanes().empty());
    none->timeline()->setVisibleRange(0, 1); // no lanes: nothing to clamp against, nothing to draw
    none->timeline()->repaint();
    QVERIFY(none->traces().front()->indexes.empty());
    QVERIFY(w->diffTraces(none, none) == nullptr);
    QVERIFY(w->calibrateFrom(none).contains(QStringLiteral("no devices")));
    // A truncated pickle: the tab says which file and where, and the window lives on.
    QFile src(traces() + "/snapshots/DeComFL_memory.pickle");
    const QString cut = m_dir.filePath("cut.pickle");
    if (src.open(QIODevice::ReadOnly)) {
        QFile out(cut);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(src.read(5000));
        out.close();
        TracePage* bad = open(*w, cut);
        QVERIFY(bad);
        QVERIFY(bad->hasFailed());
        QVERIFY2(bad->errorText().contains(QStringLiteral("cut.pickle")) &&
                     bad->errorText().contains(QStringLiteral("byte")),
                 qPrintable(bad->errorText()));
        QVERIFY(bad->timeline()->lanes().empty());
    }
}

void TestTraceView::lanesAlignOnTime() {
    auto w = window();
    // A profiler trace with a CUDA device and the CPU: two lanes on one time axis.
    TracePage* view = open(
        *w,
        traces() +
            "/chrome_traces/kineto_tb_plugin_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz");
    QVERIFY(view && !view->hasFailed());
    QCOMPARE(view->timeline()->lanes().size(), size_t(2));
    // Another file added to the same tab: more lanes, and the x range spans every lane.
    view->addFile(traces() + "/snapshots/cs336_MAGMA27_memory_snapshot.pickle");
    QVERIFY(w->waitForTraces(60000));
    QCOMPARE(view->timeline()->lanes().size(), size_t(3));
    const auto [d0, d1] = view->timeline()->domain();
    for (const auto& lane : view->timeline()->lanes()) {
        const auto [a, b] = lane.timeline->domain(TimelineAxis::Time);
        QVERIFY(a >= d0 && b <= d1);
    }
    QCOMPARE(w->tabs()->tabText(w->tabs()->indexOf(view)), view->title());
    QVERIFY(view->title().contains(QStringLiteral(" + ")));
}

void TestTraceView::zoomPanAndClick() {
    auto w = window();
    w->show();
    TracePage* view = open(*w, traces() + "/snapshots/DeComFL_memory.pickle");
    QVERIFY(view && !view->hasFailed());
    TimelineWidget* tl = view->timeline();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    const auto [d0, d1] = tl->domain();
    const double whole = tl->view().x1 - tl->view().x0;
    QVERIFY(whole >= d1 - d0);
    tl->zoom(4, (d0 + d1) / 2);
    QVERIFY(std::abs((tl->view().x1 - tl->view().x0) - whole / 4) < whole * 1e-9);
    const double x0 = tl->view().x0;
    tl->pan(whole / 100);
    QVERIFY(tl->view().x0 > x0);
    tl->pan(-10 * whole); // clamped at the start of the run
    QCOMPARE(tl->view().x0, d0);
    // Axis switch keeps the same stretch of the run: the event axis view starts at event 0.
    view->axisBox()->setCurrentIndex(1);
    QCOMPARE(tl->view().axis, TimelineAxis::Event);
    QCOMPARE(tl->view().x0, 0.0);
    // A click in the plot selects the event under it.
    const QRect plot = TimelineRenderer::plotRect(tl->rect(), 1, 0);
    QTest::mouseClick(tl, Qt::LeftButton, {}, QPoint(plot.center().x(), plot.center().y()));
    const double x = tl->view().x0 + (plot.center().x() - plot.left()) / double(plot.width()) *
                                         (tl->view().x1 - tl->view().x0);
    QCOMPARE(view->selectedEvent(), static_cast<std::size_t>(x));
    QTest::mouseDClick(tl, Qt::LeftButton, {}, plot.center());
    QCOMPARE(tl->view().x0, 0.0);
    // Shift+drag zooms to the box; Ctrl+drag selects a range and the table follows.
    const QPoint pa(plot.left() + plot.width() / 4, plot.center().y()),
        pb(plot.left() + plot.width() / 2, plot.center().y());
    const double xa =
        tl->view().x0 + (pa.x() - plot.left()) / double(plot.width()) * (tl->view().x1 - tl->view().x0);
    const double xb =
        tl->view().x0 + (pb.x() - plot.left()) / double(plot.width()) * (tl->view().x1 - tl->view().x0);
    QTest::mousePress(tl, Qt::LeftButton, Qt::ControlModifier, pa);
    QTest::mouseMove(tl, pb);
    QTest::mouseRelease(tl, Qt::LeftButton, Qt::ControlModifier, pb);
    QVERIFY(tl->view().range.has_value());
    QCOMPARE(tl->view().range->first, xa);
    QCOMPARE(tl->view().range->second, xb);
    QCOMPARE(view->liveModel()->allocations().size(),
             tl->lanes()
                 .front()
                 .index()
                 .liveDuring(static_cast<std::size_t>(xa), static_cast<std::size_t>(xb))
                 .size());
    QTest::mousePress(tl, Qt::LeftButton, Qt::ShiftModifier, pa);
    QTest::mouseMove(tl, pb);
    QTest::mouseRelease(tl, Qt::LeftButton, Qt::ShiftModifier, pb);
    QCOMPARE(tl->view().x0, xa);
    QCOMPARE(tl->view().x1, xb);
    // The number of allocations drawn as their own bands follows the spin box: the N largest.
    auto* bands = view->findChild<QSpinBox*>();
    QVERIFY(bands);
    bands->setValue(5);
    QCOMPARE(tl->lanes().front().timeline->bands().size(), size_t(5));
    std::vector<std::int64_t> sizes;
    for (const Allocation& a : tl->lanes().front().index().allocations())
        sizes.push_back(a.size);
    std::sort(sizes.rbegin(), sizes.rend());
    std::int64_t smallest = INT64_MAX;
    for (const Allocation& a : tl->lanes().front().timeline->bands())
        smallest = std::min(smallest, a.size);
    QCOMPARE(smallest, sizes[4]);
}

void TestTraceView::categoriesAndCompare() {
    auto w = window();
    QVERIFY(!w->compareCurrentTrace()); // no trace open yet
    TracePage* view =
        open(*w, traces() + "/snapshots/cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle");
    QVERIFY(view && !view->hasFailed());
    const TraceIndex& index = view->timeline()->lanes().front().index();
    // Memory by category is the default drawing of a snapshot: the classes arrive with the trace.
    QVERIFY(view->categoriesReady());
    QVERIFY(view->timeline()->drawsByCategory(0));
    // The split at the peak covers exactly what was live then.
    QCOMPARE(view->attribution().total, index.stateAfter(index.peakAfter()).allocated);
    QCOMPARE(view->attribution().total, 9103544320LL);  // MEASURED.md
    QVERIFY(view->categoryBars()->verdict().isEmpty()); // no scenario yet
    QVERIFY(view->categoryBars()->table()->isColumnHidden(2));
    // Bands coloured by category, one colour per band; by allocation, the lane's own palette.
    QCOMPARE(view->timeline()->lanes().front().bandColors.size(),
             view->timeline()->lanes().front().timeline->bands().size());
    // The planner's scenario, as Trace > Compare with the Planner's Scenario gives it.
    QString error;
    QVERIFY(w->openScenario(
        QStringLiteral(HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-256-training.headroom.json"),
        &error));
    w->tabs()->setCurrentWidget(view);
    QVERIFY(w->compareCurrentTrace());
    QVERIFY(view->hasScenario());
    QVERIFY(!view->categoryBars()->table()->isColumnHidden(2));
    // With the workload's sizes the model state is exact: 423,183,360 parameters at 4 (weights) and 8 (AdamW)
    // bytes; gradients were set to None before this run's recording.
    const Attribution& a = view->attribution();
    QCOMPARE(a.of(MeasuredCategory::Weights), 4LL * 423183360);
    QCOMPARE(a.of(MeasuredCategory::OptimizerStates), 8LL * 423183360);
    QCOMPARE(a.of(MeasuredCategory::Gradients), 0LL);
    QVERIFY(view->categoryBars()->verdict().contains(QStringLiteral("below")));
    // Memory by category, recomputed with the scenario: its stack at the peak is the split above.
    QVERIFY(w->waitForTraces(60000));
    QVERIFY(view->categoriesReady());
    const StackedSeries* classes = view->timeline()->lanes().front().timeline->classes();
    QVERIFY(classes);
    const StackedSeries::Bytes atPeak = classes->after(index.peakAfter());
    for (std::size_t k = 0; k < kMeasuredCategories; ++k)
        QCOMPARE(atPeak[k], a.bytes[k]);
    // The plan laid over the run (the same estimate the Categories tab compares).
    const auto plan = view->timeline()->lanes().front().plan;
    QVERIFY(plan && plan->alignment == "optimizer step" && plan->points.size() > 10);
    // Drawn: the plot's bottom row mid-run is the weights' colour (1.58 GiB at the bottom of the stack).
    view->timeline()->resize(1000, 400);
    const QImage drawn = view->timeline()->grab().toImage();
    const QRect plot = TimelineRenderer::plotRect(view->timeline()->rect(), 1, 0);
    QCOMPARE(drawn.pixelColor(plot.center().x(), plot.bottom() - 2),
             categoryColor(MeasuredCategory::Weights));
    // The bands: one click away, with their own settings.
    QCOMPARE(view->drawingBox()->currentIndex(), 0);
    view->drawingBox()->setCurrentIndex(1);
    QVERIFY(!view->timeline()->drawsByCategory(0));
    QComboBox* colourBy = nullptr;
    for (QComboBox* box : view->findChildren<QComboBox*>())
        if (box->count() == 2 && box->itemText(1) == QStringLiteral("Coloured by allocation"))
            colourBy = box;
    QVERIFY(colourBy && colourBy->isVisibleTo(view));
    colourBy->setCurrentIndex(1);
    QVERIFY(view->timeline()->lanes().front().bandColors.empty());
    // Every allocation in its place, coloured the same way: each its own colour, as PyTorch's viewer draws
    // them, or its category's. The two drawings differ (the model state at the bottom is one colour per
    // category, and many allocations).
    view->drawingBox()->setCurrentIndex(2);
    QVERIFY(colourBy->isVisibleTo(view));
    QVERIFY(view->timeline()->lanes().front().allocationColours);
    const QImage ownColours = view->timeline()->grab().toImage();
    colourBy->setCurrentIndex(0);
    QVERIFY(!view->timeline()->lanes().front().allocationColours);
    const QImage categoryColours = view->timeline()->grab().toImage();
    QVERIFY(ownColours != categoryColours);
    // By category, the allocations stacked at the peak (this run's activations) are drawn in their colour.
    auto pixelsOf = [&](const QImage& image, const QColor& colour) {
        int n = 0;
        for (int y = plot.top(); y <= plot.bottom(); ++y)
            for (int x = plot.left(); x <= plot.right(); ++x)
                n += image.pixelColor(x, y) == colour;
        return n;
    };
    QVERIFY(pixelsOf(categoryColours, categoryColor(MeasuredCategory::Activations)) > 100);
    QCOMPARE(pixelsOf(ownColours, categoryColor(MeasuredCategory::Activations)), 0);
    view->drawingBox()->setCurrentIndex(1);
    // Edited rules (Trace > Attribution Rules): the optimizer's allocations made scratch.
    AttributionRules rules = AttributionRules::pytorchDefaults();
    for (auto& r : rules.rules)
        if (r.target == AttributionRule::Target::Optimizer) {
            r.target = AttributionRule::Target::Category;
            r.category = MeasuredCategory::Temporaries;
        }
    const std::int64_t statesBefore = view->attribution().of(MeasuredCategory::OptimizerStates);
    view->setRules(rules);
    QVERIFY(view->attribution().of(MeasuredCategory::OptimizerStates) < statesBefore);
    QCOMPARE(view->attribution().total, 9103544320LL);
    // Memory by region: the run's one annotated region, the optimizer step; choosing it selects its stretch.
    QTableWidget* regions = view->regionTable()->table();
    QCOMPARE(regions->rowCount(), 1);
    QCOMPARE(regions->item(0, RegionTable::Region)->text(), QStringLiteral("Optimizer.step#AdamW.step"));
    emit regions->cellClicked(0, RegionTable::Peak);
    QVERIFY(view->timeline()->view().range.has_value());
    // The step's stretch: after it, the states it made (8 bytes a parameter) are live and nothing else new.
    QCOMPARE(static_cast<const NumberItem*>(regions->item(0, RegionTable::StillLive))->value(),
             8.0 * 423183360);
    // File > Export Report: the run by category with the plan over it, from the trace tab's own drawing.
    QString reportError;
    const QString report = m_dir.filePath("window-report.pdf");
    QVERIFY2(w->exportReport(report, &reportError), qPrintable(reportError));
    const QString reportText = test::pdfText(report);
    QVERIFY2(reportText.contains(QStringLiteral("The run over time by category")), qPrintable(reportText));
    QVERIFY(test::pdfOverlappingWords(report).isEmpty());
}

void TestTraceView::anNvidiaSmiLogBesideThePlan() {
    // nvidia-smi's memory.used records no allocated bytes: the Categories tab measured "0.000 GiB" in every
    // category against the plan, and the plan's allocated step was laid over the run at its first sample.
    // Now: not recorded, no overlay, and the plan's peak on the GPU against the most the log saw in use.
    const QString log = m_dir.filePath("node-07.csv");
    {
        QFile f(log);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("timestamp, index, memory.used [MiB], memory.total [MiB]\n"
                "2024/01/15 10:20:30.000, 0, 2000 MiB, 81559 MiB\n"
                "2024/01/15 10:20:31.000, 0, 11700 MiB, 81559 MiB\n"
                "2024/01/15 10:20:32.000, 0, 9000 MiB, 81559 MiB\n");
    }
    auto w = window();
    TracePage* view = open(*w, log);
    QVERIFY(view && !view->hasFailed());
    const QString scenario =
        QStringLiteral(HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-128-training.headroom.json");
    QString error;
    QVERIFY(w->openScenario(scenario, &error));
    w->tabs()->setCurrentWidget(view);
    QVERIFY(w->compareCurrentTrace());
    QVERIFY(w->waitForTraces(60000));
    QVERIFY(view->categoryBars()->verdict().isEmpty()); // nothing allocated to be off from
    QCOMPARE(view->categoryBars()->table()->item(0, 1)->text(), QStringLiteral("not recorded"));
    const auto plan = view->timeline()->lanes().front().plan;
    QVERIFY(!plan || plan->points.empty());
    const double onGpu = estimate(loadScenarioFile(scenario.toStdString())).gpuPeakBytes();
    const double used = 11700.0 * 1048576;
    const QString said = QStringLiteral("is %1% below the most this log saw")
                             .arg(std::abs(100 * (onGpu / used - 1)), 0, 'f', 1);
    QVERIFY2(view->categoryBars()->note().contains(said), qPrintable(view->categoryBars()->note()));
}

void TestTraceView::diffTwoRuns() {
    auto w = window();
    TracePage* a =
        open(*w, traces() + "/snapshots/cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle");
    TracePage* b =
        open(*w, traces() + "/snapshots/cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle");
    QVERIFY(a && b && !a->hasFailed() && !b->hasFailed());
    DiffPage* d = w->diffTraces(a, b);
    QVERIFY(d);
    QCOMPARE(w->tabs()->currentWidget(), d);
    // MEASURED.md's peaks: 7,013,335,044 and 9,103,544,320 bytes.
    QCOMPARE(d->diff().a.total, 7013335044LL);
    QCOMPARE(d->diff().b.total, 9103544320LL);
    // Every frame row adds up to the difference of the totals, and the table shows them.
    std::int64_t sum = 0;
    for (const FrameDelta& f : d->diff().byFrame)
        sum += f.difference();
    QCOMPARE(sum, d->diff().difference());
    QCOMPARE(d->framesTable()->rowCount(),
             static_cast<int>(std::min<std::size_t>(d->diff().byFrame.size(), 500)));
    QVERIFY(d->framesTable()->item(0, 0)->text().size() > 0);
    // A header click sorts by that column: B - A ascending puts the largest decrease first.
    d->framesTable()->horizontalHeader()->sectionClicked(3);
    std::int64_t lowest = INT64_MAX;
    for (std::size_t i = 0; i < d->diff().byFrame.size() && i < 500; ++i)
        lowest = std::min(lowest, d->diff().byFrame[i].difference());
    QCOMPARE(d->framesTable()->item(0, 3)->text(), ChartStyle().format(static_cast<double>(lowest), 3));
    if (!qEnvironmentVariableIsEmpty("HEADROOM_TEST_SHOTS")) { // look at it: HEADROOM_TEST_SHOTS=DIR
        w->resize(1280, 800);
        w->show();
        QCoreApplication::processEvents();
        w->grab().save(qEnvironmentVariable("HEADROOM_TEST_SHOTS") + "/diffview.png");
    }
    QVERIFY(d->categoryBars()->verdict().contains(QStringLiteral("B is")));
    // Closing the tab leaves the traces open.
    w->tabs()->tabCloseRequested(w->tabs()->indexOf(d));
    QCoreApplication::processEvents();
    QCOMPARE(w->traceViews().size(), size_t(2));
}

// The 128-token forward's scenario calibrated on the 1,024-token run of the same code: the window calibrates
// (Edit > Undo takes it back) and leads its message with the warning calibrate gives
// (tst_attribution::calibrationSaysWhenTheScenarioIsNotTheRun), which the menu shows as a warning.
void TestTraceView::calibrateFromATraceTheScenarioIsNot() {
    auto w = window();
    TracePage* view = openRun(*w, "cs336-medium-128-inference.headroom.json",
                              "cs336_Wedsonlin_medium_1024_inference_memory_snapshot.pickle");
    QVERIFY(view);
    const QString said = w->calibrateFrom(view);
    qInfo().noquote() << said;
    QVERIFY2(said.startsWith(QStringLiteral("Warning: The scenario may not describe this run: what grows "
                                            "with the tokens is fitted at x")),
             qPrintable(said));
    QVERIFY(w->document()->scenario().calibration.present);
    // The calibrated plan says so among its warnings (the window's banner), as any plan read from the file
    // would.
    const auto& warnings = w->document()->scenario().warnings;
    QVERIFY(std::any_of(warnings.begin(), warnings.end(), [](const std::string& x) {
        return x.rfind("calibration.runs[0]: the scenario may", 0) == 0;
    }));
    // Undone as one step.
    w->document()->undoStack()->undo();
    QVERIFY(!w->document()->scenario().calibration.present);
    // One 64-token sequence on the 1,024-token training step: a fit no scenario holds (x4,240 the plan's
    // tokens, tst_attribution::calibrationIsOneAScenarioHolds) is refused with its reason and the scenario
    // left as it was, where the window applied it and then could not read its own scenario.
    w->document()->applyPatch({{"inference", {{"batch_size", 1}, {"context_length", 64}}}}, "one sequence");
    const int edits = w->document()->undoStack()->count();
    TracePage* step =
        open(*w, traces() + "/snapshots/cs336_Wedsonlin_medium_1024_training_memory_snapshot.pickle");
    QVERIFY(step && !step->hasFailed());
    bool calibrated = true;
    const QString refused = w->calibrateFrom(step, &calibrated);
    QVERIFY(!calibrated);
    QVERIFY2(refused.startsWith(QStringLiteral("Not calibrated: calibration.factors.linear: fitted to ")),
             qPrintable(refused));
    QCOMPARE(w->document()->undoStack()->count(), edits);
    QVERIFY(!w->document()->scenario().calibration.present);
    QVERIFY(w->document()->validationError().isEmpty());
}

void TestTraceView::calibrationRunsOffTheGuiThread() {
    // Trace > Calibrate fits on the window's job runner: the menu returns at once, the result comes back to
    // the GUI thread, and what happened meanwhile decides what is applied.
    auto w = window();
    TracePage* view = openRun(*w, "cs336-medium-256-training.headroom.json",
                              "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle");
    QVERIFY(view);
    CompareActions* compare = w->compareActions();
    struct Said {
        int times = 0;
        QString text;
        bool calibrated = false;
    };
    auto said = std::make_shared<Said>();
    auto record = [said](const QString& text, bool calibrated) {
        ++said->times;
        said->text = text;
        said->calibrated = calibrated;
    };
    // Edited while it fits: the factors were fitted to the plan as it was, so nothing is applied and the
    // text says so.
    auto* calibrating = w->findChild<QLabel*>(QStringLiteral("calibratingLabel"));
    QVERIFY(calibrating && calibrating->isHidden());
    compare->startCalibration(view, FitAgainst::CodeWhereKnown, record);
    QVERIFY(compare->calibrating());
    QCOMPARE(said->times, 0); // not fitted on the GUI thread
    QVERIFY(!calibrating->isHidden()); // the status bar says so for as long as it runs
    w->document()->setValue(QStringLiteral("/training/micro_batch_size"), 2);
    const int edits = w->document()->undoStack()->count();
    QTRY_VERIFY_WITH_TIMEOUT(!compare->calibrating(), 60000);
    QCOMPARE(said->times, 1);
    QVERIFY(!said->calibrated);
    QVERIFY2(
        said->text.startsWith(QStringLiteral("Not calibrated: the planner's scenario changed while "
                                             "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle "
                                             "was being fitted")),
        qPrintable(said->text));
    QCOMPARE(w->document()->undoStack()->count(), edits);
    QVERIFY(!w->document()->scenario().calibration.present);
    w->document()->undoStack()->undo();
    // A second request drops the first: one answer, from the second.
    auto first = std::make_shared<Said>();
    compare->startCalibration(view, FitAgainst::CodeWhereKnown,
                              [first](const QString&, bool) { ++first->times; });
    compare->startCalibration(view, FitAgainst::CodeWhereKnown, record);
    // The trace tab closed while it fits: the fit owns what it reads, and the scenario is calibrated.
    w->tabs()->removeTab(w->tabs()->indexOf(view));
    delete view;
    QTRY_VERIFY_WITH_TIMEOUT(!compare->calibrating(), 60000);
    QCOMPARE(first->times, 0);
    QCOMPARE(said->times, 2);
    QVERIFY(calibrating->isHidden());
    QVERIFY2(said->calibrated, qPrintable(said->text));
    QVERIFY2(said->text.contains(QStringLiteral("12.1% off")), qPrintable(said->text)); // as calibrateFrom
    QVERIFY(w->document()->scenario().calibration.present);
}

// NiuHuangxiaozi's 100-token fp32 step, whose loss reads the last position: its three vocabulary-sized
// tensors (the head's output and the zeros select's and slice's backwards write for its gradient) are all
// bf16 under autocast, and the window says what an autocast plan takes of them: x0.36, what its autocast
// step's own trace reads (tst_attribution::calibrationReadsTheLossByOperator).
void TestTraceView::calibrateReadsTheLossByOperator() {
    auto w = window();
    TracePage* view = openRun(*w, "cs336-basics/cs336-niu-small-100-step.headroom.json",
                              "cs336_NiuHuangxiaozi_small_100_step_memory_snapshot.pickle");
    QVERIFY(view);
    const QString said = w->calibrateFrom(view);
    const Calibration& c = w->document()->scenario().calibration;
    QVERIFY(c.present && c.logitsByDtype.size() == 2);
    QVERIFY2(
        said.contains(QStringLiteral("Each of them was made by an operator whose width autocast decides, "
                                     "so under 16-bit autocast the plan takes 0.36 times them")),
        qPrintable(said));
}

void TestTraceView::calibrateFromTheWindow() {
    auto w = window();
    TracePage* view = openRun(*w, "cs336-medium-256-training.headroom.json",
                              "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle");
    QVERIFY(view);
    QString error;
    // Planned as plain PyTorch, the trace's code is cs336_basics' (its frames): the bars say which profile
    // plans it (tst_attribution::codeOriginFromTheStacks).
    w->compareWithPlanner(view);
    QVERIFY2(view->categoryBars()->note().contains(QStringLiteral("framework \"cs336_basics\" plans this")),
             qPrintable(view->categoryBars()->note()));
    // Once the categories are computed (off the GUI thread), the note leads with what that profile plans:
    // the run's 8.48 GiB allocated (MEASURED.md: 9,103,544,320 bytes), first in the note.
    QVERIFY(view->categoriesReady() || QSignalSpy(view, &TracePage::categoriesComputed).wait(60000));
    QVERIFY2(view->categoryBars()->note().startsWith(QStringLiteral(
                 "Note: planned with its code's profile, cs336_basics, 8.48 GiB allocated at most")),
             qPrintable(view->categoryBars()->note()));
    // The note is read whole: wrapped at words under the bars, the table below its last line (it was one
    // elided line, cut after "reserved" at the window's default width).
    {
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        w->tabs()->setCurrentWidget(view);
        QCoreApplication::processEvents();
        CategoryBars* bars = view->categoryBars();
        QVERIFY(bars->isVisible());
        const QFontMetrics fm(bars->font());
        const int wrapped = fm.boundingRect(QRect(0, 0, bars->width() - 12, 10000),
                                            Qt::AlignLeft | Qt::TextWordWrap, bars->note())
                                .height();
        QVERIFY2(wrapped > fm.height() && wrapped <= 5 * fm.height(), qPrintable(bars->note()));
        QVERIFY(bars->table()->geometry().top() >= fm.height() + 62 + wrapped);
    }
    const QString said = w->calibrateFrom(view);
    QVERIFY2(said.contains(QStringLiteral("12.1% off")), qPrintable(said)); // before: README's compare table
    QVERIFY(w->document()->json().contains("calibration"));
    QVERIFY(w->document()->scenario().calibration.present);
    // The trace tab now compares with the calibrated plan: within 2% of the measured bytes.
    std::int64_t est = 0;
    const Scenario& sc = w->document()->scenario();
    for (std::int64_t v : estimateInMeasuredCategories(estimate(sc)))
        est += v;
    QVERIFY(std::abs(static_cast<double>(est) - 9103544320.0) <= 0.02 * 9103544320.0);
    QVERIFY(view->categoryBars()->verdict().contains(QStringLiteral("the estimate is")));
    QVERIFY(!said.contains(QStringLiteral("gradient")));
    // Its step held five fp32 tensors of the embedding besides the states (and the loss's logits, apart).
    QVERIFY2(said.contains(QStringLiteral("one parameter at a time and held 5.0 tensors")), qPrintable(said));
    // Its loss's four fp32 tensors of 4 x 256 x 10,000, measured apart from its layers', as said.
    QVERIFY(w->document()->scenario().calibration.logits > 0);
    QVERIFY2(said.contains(QStringLiteral("Its loss held %1 times the vocabulary-sized tensors")
                               .arg(w->document()->scenario().calibration.logits, 0, 'f', 2)),
             qPrintable(said));
    // Its stacks name cs336_basics: the factors are fitted against that code's tables (as many score
    // copies as the code keeps, so the factors are about 1) and the plan is made with them.
    QVERIFY2(said.contains(QStringLiteral("Its stacks name cs336_basics, whose tables Headroom has: the "
                                          "factors are fitted against them")),
             qPrintable(said));
    QVERIFY(w->document()->scenario().calibration.codeTables);
    // Its trace has C++ frames: the operators that made its score tensors (exp, and the division the next
    // einsum saves) say what autocast would keep of them, the 16-bit cast and the fp32 exp the code's
    // tables plan under autocast: x1.
    QVERIFY2(said.contains(QStringLiteral("Its trace names the operator that made each attention score "
                                          "tensor")) &&
                 said.contains(QStringLiteral("a plan under autocast takes 1.00 times its scores")),
             qPrintable(said));
    QCOMPARE(w->document()->scenario().calibration.quadraticFor(2).value_or(0), 1.0);
    // Its loss's subtractions run in fp32 under autocast beside a 16-bit head, which an fp32 trace cannot
    // show: their width is not read by operator (tst_attribution::calibrationReadsTheLossByOperator).
    QVERIFY2(!said.contains(QStringLiteral("whose width autocast decides")), qPrintable(said));
    // At 256 tokens the fp32 scores are the size of the FFN's fp32 output: the backward is not measured,
    // and is planned from the score copies the forward keeps, which cs336_basics' tables already count.
    QVERIFY2(said.contains(QStringLiteral("What its attention backward holds could not be read")) &&
                 said.contains(QStringLiteral("planned as 1.00 times the plan's")),
             qPrintable(said));
    // Its allocator kept 9,265,217,536 bytes reserved where 9,103,544,320 were allocated at most (its
    // trace-summary): 1.8% beyond its tensors. Its stacks name cs336_basics, whose step the plan replays
    // through the allocator's model in place of the plain profile's 3%, stepping cs336_basics/optimizer.py's
    // AdamW as the run did (its scenario declares torch's for_loop): the calibration says so.
    QVERIFY2(said.contains(QStringLiteral("Its allocator reserved 1.8% beyond its tensors at their most; "
                                          "beside the allocator's replay of the code of cs336_basics, which "
                                          "its stacks name, stepping the optimizer of that code as the run "
                                          "did, a difference of")),
             qPrintable(said));
    QVERIFY(w->document()->scenario().calibration.code == Framework::Cs336Basics);
    QVERIFY(w->document()->scenario().calibration.codeOptimizer);
    // Its scores it tells from its FFN outputs by the calls that allocated them: no common factor.
    QVERIFY2(!said.contains(QStringLiteral("one factor scales")), qPrintable(said));
    qInfo().noquote() << said;
    // One undo takes it back.
    w->document()->undoStack()->undo();
    QVERIFY(!w->document()->json().contains("calibration"));
    // Both ways are in the Trace menu.
    {
        QStringList texts;
        for (QAction* menu : w->menuBar()->actions())
            if (menu->menu() && menu->text() == QStringLiteral("&Trace")) {
                for (QAction* a : menu->menu()->actions())
                    texts << a->text();
            }
        QVERIFY2(texts.contains(QStringLiteral("C&alibrate the Planner's Scenario from This Trace")) &&
                     texts.contains(QStringLiteral("Calibrate from This Trace Against the Scenario's &Own Profile")),
                 qPrintable(texts.join(QStringLiteral(", "))));
    }
    // Trace > Calibrate ... Against the Scenario's Own Profile (headroom-cli calibrate --own-profile): the
    // factors say how much more the code keeps than plain PyTorch's tables, and the plan keeps those tables.
    {
        bool calibrated = false;
        const QString own = w->calibrateFrom(view, &calibrated, FitAgainst::ScenarioProfile);
        QVERIFY(calibrated);
        QVERIFY2(own.contains(QStringLiteral("Its stacks name cs336_basics, whose tables Headroom has, but the "
                                             "factors are fitted against the scenario's own profile (pytorch)")),
                 qPrintable(own));
        QVERIFY(!own.contains(QStringLiteral("the factors are fitted against them")));
        const Calibration& c = w->document()->scenario().calibration;
        QVERIFY(c.present && !c.codeTables);
        // Its hand-written loss keeps more copies of the logits than F.cross_entropy's two the plain tables
        // plan (the default fit, against the code's own tables, found 0.93 of them).
        QVERIFY2(c.logits > 1.5, qPrintable(QString::number(c.logits)));
        w->document()->undoStack()->undo();
        QVERIFY(!w->document()->json().contains("calibration"));
    }
    // Code whose calls do not tell (torch's softmax keeps no per-head vector; tst_attribution::
    // scoresToldByCalls), one length: one factor for both, and the message says so.
    {
        const QString handScenario = m_dir.filePath("hand.headroom.json"),
                      handTrace = m_dir.filePath("hand.json");
        QFile f(handScenario), g(handTrace);
        QVERIFY(f.open(QIODevice::WriteOnly) && g.open(QIODevice::WriteOnly));
        f.write(QByteArray::fromStdString(test::handWrittenForwardDoc(64).dump()));
        g.write(QByteArray::fromStdString(test::handWrittenForward(64, true, false, false)));
        f.close(), g.close();
        QVERIFY(w->openScenario(handScenario, &error));
        TracePage* hand = open(*w, handTrace);
        QVERIFY(hand && !hand->hasFailed());
        const QString told = w->calibrateFrom(hand);
        QVERIFY2(told.contains(
                     QStringLiteral("one factor scales what grows with the tokens and with their square")),
                 qPrintable(told));
    }
    // MAGMA27's run kept every gradient from its warm-up: calibrated, the plan holds them and says so.
    QVERIFY(
        w->openScenario(QStringLiteral(HEADROOM_SOURCE_DIR
                                       "/examples/measured/cs336-small-32x256-no-optimizer.headroom.json"),
                        &error));
    TracePage* magma = open(*w, traces() + "/snapshots/cs336_MAGMA27_memory_snapshot.pickle");
    QVERIFY(magma && !magma->hasFailed());
    const QString held = w->calibrateFrom(magma);
    QVERIFY2(held.contains(QStringLiteral("held every gradient")) &&
                 held.contains(QStringLiteral("0.0% off")),
             qPrintable(held));
    // No step of its code is replayed (it runs no optimizer): the cache is the run's share of its tensors.
    QVERIFY2(held.contains(QStringLiteral("where the plan assumed 3.0%: the calibrated plan reserves the "
                                          "same share")),
             qPrintable(held));
    QVERIFY(w->document()->scenario().calibration.gradientsHeld);
    // A forward of cs336_basics' code planned as plain PyTorch: fitted against that code's tables, which
    // have its forward's own moments (the attention's softmax, the MLP, the head), so the plain profile's two
    // kinds of moment are not measured (tst_attribution::forwardMomentsMeasured fits them with
    // --own-profile); the calibrated plan reproduces the run.
    QVERIFY(w->openScenario(
        QStringLiteral(HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-128-inference.headroom.json"),
        &error));
    TracePage* forward =
        open(*w, traces() + "/snapshots/cs336_Wedsonlin_medium_128_inference_memory_snapshot.pickle");
    QVERIFY(forward && !forward->hasFailed());
    const QString moments = w->calibrateFrom(forward);
    QVERIFY2(moments.contains(QStringLiteral("Its stacks name cs336_basics, whose tables Headroom has")) &&
                 !moments.contains(QStringLiteral("Its forward was measured inside")) &&
                 !moments.contains(QStringLiteral("one factor")) &&
                 moments.contains(QStringLiteral("0.0% off")),
             qPrintable(moments));
    QVERIFY(w->document()->scenario().calibration.prefillAttentionLinear < 0);
    // The cs336_basics profile replays that forward through the allocator's model: the calibration says what
    // the run reserved beyond the replay of its plan, which the calibrated plan adds to its own shape's
    // replay. The run's trace-summary: 1,763,704,832 bytes reserved, 1,736,962,048 allocated at most (1.5%).
    QVERIFY(w->openScenario(
        QStringLiteral(HEADROOM_SOURCE_DIR
                       "/examples/measured/cs336-basics/cs336-medium-128-inference.headroom.json"),
        &error));
    TracePage* basics =
        open(*w, traces() + "/snapshots/cs336_Wedsonlin_medium_128_inference_memory_snapshot.pickle");
    QVERIFY(basics && !basics->hasFailed());
    const QString replayed = w->calibrateFrom(basics);
    qInfo().noquote() << replayed;
    QVERIFY2(
        replayed.contains(QStringLiteral("Its allocator reserved 1.5% beyond its tensors at their most; ")) &&
            replayed.contains(QStringLiteral("beside the allocator's replay of the plan, a difference of")),
        qPrintable(replayed));
    QVERIFY(w->document()->scenario().calibration.replayedOverheadMeasured());
}

void TestTraceView::allocatorWhatIfPanel() {
    auto w = window();
    TracePage* view = open(*w, traces() + "/snapshots/DeComFL_memory.pickle");
    QVERIFY(view && !view->hasFailed());
    AllocatorPanel* panel = view->allocatorPanel();
    view->sideTabs()->setCurrentIndex(view->sideTabs()->count() - 1); // the "Allocator settings" tab
    panel->waitForResult();
    QVERIFY(panel->result());
    // Under the recorded settings the replay is checked against the recording, and says so.
    QVERIFY2(panel->result()->replayed.matchesRecording, panel->result()->replayed.firstDifference.c_str());
    QVERIFY2(panel->resultText()->text().contains("reproduces all 61 recorded segment events"),
             qPrintable(panel->resultText()->text()));
    // Expandable segments: the same numbers as the core's what-if computed here.
    panel->findChild<QCheckBox*>("expandableSegments")->setChecked(true);
    panel->waitForResult();
    AllocatorSettings expandable;
    expandable.expandableSegments = true;
    const auto direct = allocatorWhatIf(view->traces().front()->trace, expandable);
    QCOMPARE(panel->result()->whatif.peakReserved, direct.front().whatif.peakReserved);
    QVERIFY(panel->resultText()->text().contains(
        QString::fromStdString(formatBytes(static_cast<double>(direct.front().whatif.peakReserved)))));
    // A device smaller than the recording's peak: OOMs are predicted and shown.
    panel->findChild<QCheckBox*>("expandableSegments")->setChecked(false);
    panel->findChild<QDoubleSpinBox*>("deviceMemoryGib")->setValue(1.5);
    panel->waitForResult();
    QVERIFY(panel->result()->whatif.ooms > 0);
    QVERIFY2(panel->resultText()->text().contains(QString::number(panel->result()->whatif.ooms) + " OOMs"),
             qPrintable(panel->resultText()->text()));
    if (!qEnvironmentVariableIsEmpty("HEADROOM_TEST_SHOTS")) { // look at it: HEADROOM_TEST_SHOTS=DIR
        panel->findChild<QDoubleSpinBox*>("deviceMemoryGib")->setValue(0);
        panel->findChild<QCheckBox*>("expandableSegments")->setChecked(true);
        panel->waitForResult();
        w->resize(1400, 1000);
        w->show();
        QCoreApplication::processEvents();
        w->grab().save(qEnvironmentVariable("HEADROOM_TEST_SHOTS") + "/allocator.png");
    }
}

// A replay that fails says so in the panel and the program goes on; deleting the panel (closing the tab)
// while a long replay runs returns at once, and the replay stops at its next cancellation check.
void TestTraceView::allocatorReplayFailsAndCancelsWithoutBlocking() {
    auto trace = std::make_shared<LoadedTrace>();
    trace->trace.format = TraceFormat::PytorchSnapshot;
    DeviceTrace& d = trace->trace.device("0");
    // 1.5 million allocations and frees of 1 MiB at 16 addresses: a replay of about a second here.
    for (std::int64_t i = 0; i < 1500000; ++i) {
        const std::uint64_t addr = 0x7f0000000000ull + static_cast<std::uint64_t>(i % 16) * (2u << 20);
        d.append(i, TraceAction::Alloc, addr, 1 << 20);
        d.append(i, TraceAction::FreeRequested, addr, 1 << 20);
        d.append(i, TraceAction::FreeCompleted, addr, 1 << 20);
    }
    auto panel = std::make_unique<AllocatorPanel>();
    // A device the trace does not have: the replay throws, and the panel reports it.
    panel->setDevice(trace, 5);
    panel->waitForResult();
    QVERIFY(!panel->result());
    QVERIFY2(panel->resultText()->text().contains("The replay failed"),
             qPrintable(panel->resultText()->text()));
    QVERIFY2(panel->resultText()->text().contains("the trace has 1 devices, not 6"),
             qPrintable(panel->resultText()->text()));
    // The long replay: started, then the panel is deleted while it runs.
    panel->setDevice(trace, 0);
    panel->findChild<QCheckBox*>("expandableSegments")->setChecked(true); // start now rather than debounced
    QTest::qWait(200);
    QVERIFY(panel->busy());
    QElapsedTimer timer;
    timer.start();
    panel.reset();
    QVERIFY2(timer.elapsed() < 100, qPrintable(QString::number(timer.elapsed())));
    // Four replays of 4.5 million events take seconds; cancelled, the worker is done almost at once.
    QVERIFY(QThreadPool::globalInstance()->waitForDone(1000));
}

// The window's one mechanism for work off the GUI thread (ui/common/jobrunner.h).
void TestTraceView::jobRunnerDeliversValuesErrorsAndGenerations() {
    JobRunner runner;
    QThread* gui = QThread::currentThread();
    // A value, computed on another thread and delivered on the GUI thread.
    std::vector<std::string> seen;
    runner.start([gui](const JobContext&) { return QThread::currentThread() != gui ? 42 : -1; },
                 [&](JobOutcome<int> o) {
                     QVERIFY(QThread::currentThread() == gui);
                     seen.push_back(o.ok() ? std::to_string(*o.value) : o.error);
                 });
    QVERIFY(runner.waitForIdle(5000));
    QCOMPARE(seen, std::vector<std::string>({"42"}));
    // An exception is an error value: it never reaches the event loop.
    runner.start([](const JobContext&) -> int { throw std::out_of_range("map::at"); },
                 [&](JobOutcome<int> o) { seen.push_back(o.ok() ? "value" : o.error); });
    QVERIFY(runner.waitForIdle(5000));
    QCOMPARE(seen.back(), std::string("map::at"));
    // A newer job supersedes the older: the older is cancelled and its result dropped; partial results it
    // posts are dropped too.
    seen.clear();
    std::atomic<bool> release{false};
    runner.start(
        [&](const JobContext& job) {
            while (!release && !job.cancelled())
                QThread::msleep(1);
            job.post([&] { seen.push_back("stale partial"); });
            return job.cancelled() ? 1 : 2;
        },
        [&](JobOutcome<int> o) { seen.push_back("first " + (o.ok() ? std::to_string(*o.value) : o.error)); });
    runner.start([](const JobContext&) { return 3; },
                 [&](JobOutcome<int> o) { seen.push_back("second " + std::to_string(*o.value)); });
    QVERIFY(runner.waitForIdle(5000));
    QCOMPARE(seen, std::vector<std::string>({"second 3"}));
    // cancel() asks the job to stop and reports that it did.
    seen.clear();
    runner.start(
        [](const JobContext& job) {
            while (true) {
                job.cancellation().check();
                QThread::msleep(1);
            }
            return 0;
        },
        [&](JobOutcome<int> o) { seen.push_back(o.ok() ? "value" : o.error); });
    QTest::qWait(20);
    runner.cancel();
    QVERIFY(runner.waitForIdle(5000));
    QCOMPARE(seen, std::vector<std::string>({"cancelled"}));
    QVERIFY(!runner.busy());
}

void TestTraceView::chartsExportAsImagesSvgAndPdf() {
    // The trace view's own drawings (timeline, segments, by-category bars, allocator plot) have the planner
    // charts' "Copy Chart as Image" and "Export Chart...": what is on screen, as PNG, SVG or PDF.
    auto w = window();
    TracePage* view = open(*w, traces() + "/snapshots/DeComFL_memory.pickle");
    QVERIFY(view && !view->hasFailed());
    w->show();
    QCoreApplication::processEvents();
    const QList<QWidget*> drawings = {view->timeline(), view->segmentView(), view->categoryBars(),
                                      view->allocatorPanel()->findChild<ReservedPlot*>()};
    for (QWidget* d : drawings) {
        QVERIFY(d);
        QStringList texts;
        for (QAction* a : d->actions())
            texts << a->text();
        QVERIFY2(texts.contains("Copy Chart as Image") && texts.contains("Export Chart..."),
                 d->metaObject()->className());
    }
    // The timeline copied: an image of the widget at twice its size, with something drawn on it.
    QApplication::clipboard()->clear();
    for (QAction* a : view->timeline()->actions())
        if (a->text() == "Copy Chart as Image")
            a->trigger();
    const QImage image = QApplication::clipboard()->image();
    QCOMPARE(image.size(), view->timeline()->size() * 2);
    int coloured = 0;
    for (int y = 0; y < image.height(); y += 4)
        for (int x = 0; x < image.width(); x += 4)
            coloured += image.pixelColor(x, y).saturation() > 60;
    QVERIFY2(coloured > 100, qPrintable(QString::number(coloured))); // the bands and lines, not a blank
    // Exported as vectors: the SVG parses and keeps the peak's label as text; the PDF is one page with it.
    const QString svg = m_dir.filePath("timeline.svg"), pdf = m_dir.filePath("timeline.pdf"),
                  png = m_dir.filePath("timeline.png");
    std::string error;
    QVERIFY2(exportWidget(view->timeline(), "Memory timeline", svg.toStdString(), 2, &error), error.c_str());
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QXmlStreamReader xml(&f);
    QString text;
    while (!xml.atEnd())
        if (xml.readNext() == QXmlStreamReader::Characters)
            text += xml.text();
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    QVERIFY2(text.contains("peak 1.66 GiB"), qPrintable(text.left(400)));
    QVERIFY2(exportWidget(view->timeline(), "Memory timeline", pdf.toStdString(), 2, &error), error.c_str());
    QCOMPARE(test::pdfPages(pdf), 1);
    QVERIFY(test::pdfText(pdf).contains("peak 1.66 GiB"));
    QVERIFY2(exportWidget(view->timeline(), "Memory timeline", png.toStdString(), 3, &error), error.c_str());
    QCOMPARE(QImage(png).size(), view->timeline()->size() * 3);
    if (!qEnvironmentVariableIsEmpty("HEADROOM_TEST_SHOTS")) // look at them: HEADROOM_TEST_SHOTS=DIR
        for (const QString& out : {png, svg, pdf})
            QFile::copy(out, qEnvironmentVariable("HEADROOM_TEST_SHOTS") + "/" + QFileInfo(out).fileName());
}

QTEST_MAIN(TestTraceView)
#include "tst_traceview.moc"
