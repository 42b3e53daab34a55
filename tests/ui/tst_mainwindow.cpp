// The application window: it shows the default scenario's estimate as a stacked bar, opens scenario
// files, and keeps the current scenario when a file is bad.
#include "core/io/scenariojson.h"
#include "tests/testutil.h"
#include "ui/mainwindow.h"

#include <QBarSet>
#include <QChartView>
#include <QFile>
#include <QStackedBarSeries>
#include <QTemporaryDir>
#include <QTest>

using namespace headroom;

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void showsDefaultScenario();
    void opensScenarioAndRejectsBadFile();
};

static QStackedBarSeries* barSeries(MainWindow& w) {
    auto* view = w.findChild<QChartView*>();
    if (!view)
        return nullptr;
    for (auto* s : view->chart()->series())
        if (auto* bars = qobject_cast<QStackedBarSeries*>(s))
            return bars;
    return nullptr;
}

void TestMainWindow::showsDefaultScenario() {
    MainWindow w;
    w.resize(1280, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const Estimate expected = estimate(scenarioFromJson(defaultScenarioDocument()));
    QCOMPARE(w.currentEstimate().peakBytes, expected.peakBytes);
    QStackedBarSeries* bars = barSeries(w);
    QVERIFY(bars);
    // One set per non-zero category, values in GiB summing to the peak.
    double sum = 0;
    for (QBarSet* set : bars->barSets())
        sum += set->at(0);
    QVERIFY(std::abs(sum - expected.peakBytes / test::kGiB) < 1e-6);
    const QImage shot = w.grab().toImage();
    QVERIFY(!shot.isNull());
}

void TestMainWindow::opensScenarioAndRejectsBadFile() {
    QTemporaryDir dir;
    MainWindow w;
    const double before = w.currentEstimate().peakBytes;
    const QString bad = dir.filePath("bad.headroom.json");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{ not json");
    f.close();
    QString error;
    QVERIFY(!w.openScenario(bad, &error));
    QVERIFY(error.startsWith(bad));
    QCOMPARE(w.currentEstimate().peakBytes, before);

    const QString good = dir.filePath("good.headroom.json");
    QFile g(good);
    QVERIFY(g.open(QIODevice::WriteOnly));
    auto doc = test::trainingDoc({{"preset", "meta-llama/Meta-Llama-3-70B"}});
    doc["cluster"]["num_gpus"] = 16;
    doc["cluster"]["pipeline_parallel"] = 4;
    doc["training"]["gradient_accumulation_steps"] = 8;
    g.write(QByteArray::fromStdString(doc.dump()));
    g.close();
    QVERIFY(w.openScenario(good, &error));
    QCOMPARE(w.scenario().cluster.pipelineParallel, 4);
    QCOMPARE(barSeries(w)->barSets().first()->count(), 4); // one bar per pipeline stage
}

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
