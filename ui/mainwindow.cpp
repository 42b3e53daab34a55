#include "ui/mainwindow.h"

#include "core/error.h"
#include "core/io/bytesformat.h"
#include "core/io/scenariojson.h"
#include "ui/breakdownchart.h"

#include <QAction>
#include <QApplication>
#include <QChartView>
#include <QFileDialog>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QVBoxLayout>

namespace headroom {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("Headroom"));
    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    m_summary = new QLabel(central);
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    m_chartView = new QChartView(central);
    m_chartView->setRenderHint(QPainter::Antialiasing);
    layout->addWidget(m_summary);
    layout->addWidget(m_chartView, 1);
    setCentralWidget(central);

    auto* file = menuBar()->addMenu(tr("&File"));
    auto* open = file->addAction(tr("&Open Scenario..."), this, &MainWindow::openDialog);
    open->setShortcut(QKeySequence::Open);
    file->addSeparator();
    auto* quit = file->addAction(tr("&Quit"), qApp, &QApplication::quit);
    quit->setShortcut(QKeySequence::Quit);

    setScenario(scenarioFromJson(defaultScenarioDocument()));
}

bool MainWindow::openScenario(const QString& path, QString* error) {
    try {
        setScenario(loadScenarioFile(path.toStdString()));
        return true;
    } catch (const Error& e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    }
}

void MainWindow::setScenario(const Scenario& sc) {
    m_scenario = sc;
    refresh();
}

void MainWindow::openDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Scenario"), QString(),
                                                      tr("Headroom scenarios (*.headroom.json *.json)"));
    if (path.isEmpty())
        return;
    QString error;
    if (!openScenario(path, &error))
        QMessageBox::warning(this, tr("Cannot open scenario"), error);
}

void MainWindow::refresh() {
    m_estimate = estimate(m_scenario);
    const auto& sc = m_scenario;
    const auto& c = sc.cluster;
    QString text =
        QStringLiteral("<b>%1</b><br>%2 — %3 parameters — %4 x %5, data %6 (%7) x tensor %8 x pipeline %9")
            .arg(QString::fromStdString(sc.name).toHtmlEscaped(),
                 QString::fromStdString(sc.modelLabel).toHtmlEscaped(),
                 QString::fromStdString(formatCount(m_estimate.parameters)))
            .arg(c.numGpus)
            .arg(QString::fromStdString(c.gpu))
            .arg(m_estimate.dataParallelSize)
            .arg(QString::fromStdString(c.dataParallelName))
            .arg(c.tensorParallel)
            .arg(c.pipelineParallel);
    text += QStringLiteral("<br><span style='color:%1'><b>%2</b></span> — largest micro-batch that fits: %3")
                .arg(m_estimate.fits ? QStringLiteral("#2ca02c") : QStringLiteral("#d62728"),
                     verdictText(m_estimate))
                .arg(m_estimate.maxMicroBatchSize);
    m_summary->setText(text);
    QChart* old = m_chartView->chart();
    m_chartView->setChart(createBreakdownChart(sc, m_estimate));
    delete old;
}

} // namespace headroom
