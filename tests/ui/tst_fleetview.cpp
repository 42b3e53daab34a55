// SPDX-License-Identifier: GPL-3.0-or-later
// The Fleet tab, driven as a user would: a folder of generated rank snapshots opened in the window (File >
// Open Folder as Fleet does the same), the outlier first in the table, a layout typed, the heat map clicked,
// and the selected rank diffed against the median rank.
#include "bench/fleetgen.h"
#include "core/trace/formats/tracereader.h"
#include "tests/testutil.h"
#include "tests/windowfixture.h"
#include "ui/compare/diffpage.h"
#include "ui/compare/fleetheatmap.h"
#include "ui/compare/fleetpage.h"
#include "ui/compare/fleetrankmodel.h"
#include "ui/compare/fleetstagebars.h"
#include "ui/planner/scenariodocument.h"
#include "ui/traceview/tracepage.h"

#include <QDropEvent>
#include <QMimeData>
#include <QPushButton>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QUrl>
#include <QtTest>
#include <fstream>

using namespace headroom;

namespace {

constexpr std::int64_t kBasePeak = 7'013'335'044; // MEASURED.md, CS336 medium, 128 tokens, training

struct Fixture {
    QTemporaryDir scratch, ranks;
    bench::FleetPlan plan;
    std::unique_ptr<MainWindow> window;
    FleetPage* page = nullptr;
    Fixture() {
        plan.ranks = 16; // 4 stages of 4; rank 13 planted 3 GiB high
        bench::writeFleet(
            readTraceFile((test::dataDir() +
                           "/traces/snapshots/cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle")
                              .toStdString()),
            "0", plan, ranks.path().toStdString());
        window = test::testWindow(scratch);
        window->resize(1400, 900);
        window->show();
        QString error;
        if (window->openFile(ranks.path(), &error))
            page = qobject_cast<FleetPage*>(window->tabs()->currentWidget());
    }
};

} // namespace

class TestFleetView : public QObject {
    Q_OBJECT
private slots:
    void folderOpensAsAFleet();
    void layoutMakesStagesAndOutliers();
    void heatMapSelectsRanks();
    void diffAgainstTheMedianRank();
    void openRankAndDropAFolder();
    void nvidiaSmiLogsOpenWorstFirst();
};

void TestFleetView::folderOpensAsAFleet() {
    Fixture f;
    QVERIFY(f.page);
    QVERIFY(f.window->waitForTraces());
    QCOMPARE(f.page->model()->rowCount(), 16);
    // The table opens worst first: the planted rank.
    QTableView* t = f.page->table();
    QCOMPARE(t->model()->data(t->model()->index(0, FleetRankModel::Rank)).toInt(), 13);
    QCOMPARE(t->model()->data(t->model()->index(0, FleetRankModel::PeakAllocated), Qt::UserRole).toLongLong(),
             kBasePeak + bench::extraBytes(f.plan, 13));
    QCOMPARE(f.page->fleet().job.worstRank, 13);
    QVERIFY(f.window->tabs()->tabText(f.window->tabs()->currentIndex()).startsWith("Fleet: "));
}

void TestFleetView::layoutMakesStagesAndOutliers() {
    Fixture f;
    QVERIFY(f.window->waitForTraces());
    QVERIFY(!f.page->setLayout("pp=zero"));
    QVERIFY(f.page->setLayout("pp=4"));
    QVERIFY(f.page->waitForIdle()); // the stages are worked out off the GUI thread
    // Stages of 4 ranks: stage 3 (ranks 12-15) holds the planted rank; stage 0 the most by design.
    const auto& stages = f.page->fleet().job.stages;
    QCOMPARE(stages.size(), std::size_t(4));
    QCOMPARE(stages[3].worstRank, 13);
    QCOMPARE(stages[0].maxPeakAllocated,
             kBasePeak + bench::extraBytes(f.plan, 3)); // r % 5 = 3: ranks 0-3's most
    QCOMPARE(f.page->fleet().job.outliers, std::vector<int>{13});
    // Within its stage rank 13 stands out (the stages' spread hid it job-wide): marked, with its reason.
    QTableView* t = f.page->table();
    QCOMPARE(t->model()->data(t->model()->index(0, FleetRankModel::Rank)).toInt(), 13);
    QVERIFY(t->model()
                ->data(t->model()->index(0, FleetRankModel::Outlier))
                .toString()
                .contains("MADs above its stage"));
    QVERIFY(t->model()->data(t->model()->index(0, FleetRankModel::Rank), Qt::BackgroundRole).isValid());
    QVERIFY(!t->model()->data(t->model()->index(1, FleetRankModel::Rank), Qt::BackgroundRole).isValid());
    // Each rank's stage is in the table.
    for (int row = 0; row < t->model()->rowCount(); ++row)
        QCOMPARE(t->model()->data(t->model()->index(row, FleetRankModel::Stage)).toInt(),
                 t->model()->data(t->model()->index(row, FleetRankModel::Rank)).toInt() / 4);
    QVERIFY(!f.page->stageBars()->grab().isNull());
}

void TestFleetView::heatMapSelectsRanks() {
    Fixture f;
    QVERIFY(f.window->waitForTraces());
    FleetHeatMap* heat = f.page->heatMap();
    // Rows run by rank from the top: the middle of the 14th row is rank 13.
    const QRect area = heat->rect().adjusted(56, 24, -12, -30);
    const QPoint row13(area.center().x(), area.top() + static_cast<int>((13 + 0.5) * area.height() / 16.0));
    QCOMPARE(heat->rankAt(row13), 13);
    QVERIFY(heat->describe(row13).startsWith("rank 13"));
    QTest::mouseClick(heat, Qt::LeftButton, {}, row13);
    QCOMPARE(f.page->selectedRank(), 13);
    QCOMPARE(heat->rankAt(QPoint(2, 2)), -1);
}

void TestFleetView::diffAgainstTheMedianRank() {
    Fixture f;
    QVERIFY(f.window->waitForTraces());
    f.page->selectRank(13);
    const int median = f.page->medianRank(13);
    QVERIFY(median >= 0 && median != 13);
    QPushButton* diff = nullptr;
    for (QPushButton* b : f.page->findChildren<QPushButton*>())
        if (b->text().startsWith("Diff"))
            diff = b;
    QVERIFY(diff->isEnabled());
    const int tabs = f.window->tabs()->count();
    diff->click();
    QVERIFY(f.window->waitForTraces());
    QTRY_COMPARE_WITH_TIMEOUT(f.window->tabs()->count(), tabs + 3, 20000); // two ranks and their diff
    auto* page = qobject_cast<DiffPage*>(f.window->tabs()->currentWidget());
    QVERIFY(page);
    // The planted allocation is the difference between the two runs' peaks, to the byte.
    QCOMPARE(page->diff().difference(), bench::extraBytes(f.plan, median) - bench::extraBytes(f.plan, 13));
}

void TestFleetView::openRankAndDropAFolder() {
    Fixture f;
    QVERIFY(f.window->waitForTraces());
    f.page->selectRank(7);
    for (QPushButton* b : f.page->findChildren<QPushButton*>())
        if (b->text() == QLatin1String("Open Rank"))
            b->click();
    auto* trace = qobject_cast<TracePage*>(f.window->tabs()->currentWidget());
    QVERIFY(trace);
    QVERIFY(f.window->waitForTraces());
    QCOMPARE(busiestDevice(trace->traces().front()->summary), std::size_t(0));
    QCOMPARE(trace->traces().front()->summary.devices[0].peakAllocated,
             kBasePeak + bench::extraBytes(f.plan, 7));
    // A folder dropped on the window opens as a fleet and leaves the planner's scenario as it was.
    const std::string before = f.window->document()->scenario().name;
    const int tabs = f.window->tabs()->count();
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(f.ranks.path())});
    QDragEnterEvent enter(QPoint(400, 300), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(f.window.get(), &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(400, 300), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(f.window.get(), &drop);
    QCOMPARE(f.window->tabs()->count(), tabs + 1);
    auto* dropped = qobject_cast<FleetPage*>(f.window->tabs()->currentWidget());
    QVERIFY(dropped);
    QVERIFY(f.window->waitForTraces());
    QCOMPARE(dropped->fleet().ranks.size(), std::size_t(16));
    QCOMPARE(f.window->document()->scenario().name, before);
}

void TestFleetView::nvidiaSmiLogsOpenWorstFirst() {
    // A node's nvidia-smi log each (they record no allocated bytes): the one that used 4,000 MiB more opens
    // first, as an outlier, and the tab says what its ranks are compared by. By allocated they were all
    // "0.00 GiB", in rank order.
    QTemporaryDir scratch, logs;
    for (int r = 0; r < 4; ++r) {
        std::ofstream out((logs.path() + QStringLiteral("/rank_0%1.csv").arg(r)).toStdString());
        out << "timestamp, index, memory.used [MiB], memory.total [MiB]\n";
        for (int t = 0; t < 10; ++t)
            out << "2024/01/15 10:20:0" << t << ".000, 0, " << 2000 + 300 * t + (r == 2 ? 4000 : 0)
                << " MiB, 81559 MiB\n";
    }
    auto window = test::testWindow(scratch);
    window->show();
    QString error;
    QVERIFY2(window->openFile(logs.path(), &error), qPrintable(error));
    auto* page = qobject_cast<FleetPage*>(window->tabs()->currentWidget());
    QVERIFY(page);
    QVERIFY(window->waitForTraces());
    QVERIFY(page->waitForIdle());
    QTableView* t = page->table();
    QCOMPARE(t->model()->data(t->model()->index(0, FleetRankModel::Rank)).toInt(), 2);
    QCOMPARE(t->model()->data(t->model()->index(0, FleetRankModel::PeakAllocated)).toString(),
             QStringLiteral("not recorded"));
    QCOMPARE(t->model()->data(t->model()->index(0, FleetRankModel::Fragmentation)).toString(),
             QStringLiteral("–"));
    QVERIFY(t->model()->data(t->model()->index(0, FleetRankModel::Rank), Qt::BackgroundRole).isValid());
    QVERIFY(page->summaryText().contains("Compared by reserved"));
    QCOMPARE(page->fleet().job.outliers, std::vector<int>{2});
    // Diffed against the median rank: by the memory in use (4,000 MiB more), not two peaks of 0.
    page->selectRank(2);
    QPushButton* diff = nullptr;
    for (QPushButton* b : page->findChildren<QPushButton*>())
        if (b->text().startsWith("Diff"))
            diff = b;
    QVERIFY(diff && diff->isEnabled());
    diff->click();
    QVERIFY(window->waitForTraces());
    DiffPage* d = nullptr;
    QTRY_VERIFY_WITH_TIMEOUT((d = qobject_cast<DiffPage*>(window->tabs()->currentWidget())) != nullptr,
                             20000);
    QVERIFY(!d->diff().allocatedRecorded);
    QCOMPARE(d->diff().reservedDifference(), -(4000LL << 20)); // the median rank less rank 2
    if (qEnvironmentVariableIsSet("HEADROOM_TEST_SHOTS"))
        window->grab().save(qEnvironmentVariable("HEADROOM_TEST_SHOTS") + "/smi-diff.png");
}

QTEST_MAIN(TestFleetView)
#include "tst_fleetview.moc"
