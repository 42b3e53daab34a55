// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/mainwindow.h"

#include "core/error.h"
#include "core/io/attributionrulesjson.h"
#include "core/io/scenariojson.h"
#include "core/trace/formats/tracereader.h"
#include "ui/common/aboutdialog.h"
#include "ui/compare/compareactions.h"
#include "ui/compare/diffpage.h"
#include "ui/compare/fleetpage.h"
#include "ui/compare/scenariocomparepage.h"
#include "ui/planner/plannerpage.h"
#include "ui/planner/report.h"
#include "ui/planner/scenariodocument.h"
#include "ui/planner/settingspanel.h"
#include "ui/traceview/tracepage.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QChartView>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDragEnterEvent>
#include <QElapsedTimer>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QGraphicsLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QMenuBar>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPointer>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyleFactory>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QUndoStack>
#include <QUrl>
#include <QVBoxLayout>

namespace headroom {

using nlohmann::json;

namespace {

constexpr int kMaxRecent = 8;

} // namespace

MainWindow::MainWindow(QWidget* parent) : MainWindow(Options{}, parent) {}

MainWindow::MainWindow(const Options& options, QWidget* parent) : QMainWindow(parent), m_options(options) {
    m_doc = new ScenarioDocument(this);
    askToSave = [this] {
        return QMessageBox::question(
            this, tr("Unsaved changes"), tr("The scenario has unsaved changes. Save them before closing?"),
            QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    };
    build();
    buildMenus();
    setAcceptDrops(true);
    m_autosaveTimer = new QTimer(this);
    m_autosaveTimer->setSingleShot(true);
    m_autosaveTimer->setInterval(1500);
    connect(m_autosaveTimer, &QTimer::timeout, this, &MainWindow::writeAutosave);
    connect(m_doc, &ScenarioDocument::changed, this, [this] {
        if (m_doc->isModified())
            m_autosaveTimer->start();
    });
    connect(m_doc, &ScenarioDocument::fileChanged, this, &MainWindow::updateTitle);
    m_style.unit = settings()->value("view/units").toString() == "GB" ? ByteUnit::GB : ByteUnit::GiB;
    setStyle(m_style);
    if (m_options.restoreSession)
        restoreSession();
    updateTitle();
}

MainWindow::~MainWindow() = default;

QSettings* MainWindow::settings() const {
    if (!m_settings)
        m_settings =
            m_options.settingsFile.isEmpty()
                ? new QSettings(const_cast<MainWindow*>(this))
                : new QSettings(m_options.settingsFile, QSettings::IniFormat, const_cast<MainWindow*>(this));
    return m_settings;
}

QString MainWindow::autosavePath() const {
    if (!m_options.autosaveFile.isEmpty())
        return m_options.autosaveFile;
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    QDir().mkpath(dir);
    return dir + QStringLiteral("/autosave.headroom.json");
}

void MainWindow::build() {
    resize(1280, 800);
    m_planner = new PlannerPage(m_doc);
    connect(m_planner, &PlannerPage::message, this,
            [this](const QString& text) { statusBar()->showMessage(text, 5000); });
    // The planner is the first tab; each opened trace gets its own, closable.
    m_tabs = new QTabWidget;
    m_tabs->setDocumentMode(true);
    m_tabs->setTabsClosable(true);
    m_tabs->addTab(m_planner, tr("Planner"));
    m_compare = new CompareActions(
        m_doc, m_tabs, [this] { return m_style; }, this);
    connect(m_compare, &CompareActions::message, this,
            [this](const QString& text) { statusBar()->showMessage(text, 5000); });
    m_tabs->tabBar()->setTabButton(0, QTabBar::RightSide, nullptr);
    m_tabs->tabBar()->setTabButton(0, QTabBar::LeftSide, nullptr);
    connect(m_tabs, &QTabWidget::tabCloseRequested, this, [this](int i) {
        if (i > 0) { // every tab but the planner's
            QWidget* view = m_tabs->widget(i);
            m_tabs->removeTab(i);
            view->deleteLater();
        }
    });
    setCentralWidget(m_tabs);
    // A calibration runs off the GUI thread for as long as its trace takes: said until it ends, where a
    // message would go after five seconds.
    auto* calibrating = new QLabel(tr("Calibrating the planner's scenario…"));
    calibrating->setObjectName(QStringLiteral("calibratingLabel"));
    calibrating->hide();
    statusBar()->addPermanentWidget(calibrating);
    connect(m_compare, &CompareActions::calibratingChanged, calibrating, &QLabel::setVisible);
}

void MainWindow::buildMenus() {
    auto* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&New"), QKeySequence::New, this, [this] {
        if (maybeSave())
            m_doc->reset(defaultScenarioDocument());
    });
    file->addAction(tr("&Open..."), QKeySequence::Open, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Open Scenario or Trace"), QString(),
            tr("Scenarios and traces (*.headroom.json *.json *.pickle *.pkl *.gz *.csv);;"
               "Headroom scenarios (*.headroom.json);;Traces (*.pickle *.pkl *.json *.gz *.csv);;All files "
               "(*)"));
        if (path.isEmpty())
            return;
        const bool trace = isTraceFile(path.toStdString());
        QString error;
        if (!trace && !maybeSave())
            return;
        if (!openFile(path, &error))
            QMessageBox::warning(this, tr("Cannot open"), error);
    });
    file->addAction(tr("Add Trace as &Lanes..."), this, [this] {
        auto* view = qobject_cast<TracePage*>(m_tabs->currentWidget());
        const QString path =
            QFileDialog::getOpenFileName(this, tr("Add a Trace (e.g. another rank) to this view"), QString(),
                                         tr("Traces (*.pickle *.pkl *.json *.gz *.csv);;All files (*)"));
        if (path.isEmpty())
            return;
        if (view)
            view->addFile(path);
        else
            openTrace(path);
    });
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    file->addAction(tr("&Save"), QKeySequence::Save, this, [this] {
        QString error;
        if (!save(&error) && !error.isEmpty())
            QMessageBox::warning(this, tr("Cannot save"), error);
    });
    file->addAction(tr("Save &As..."), QKeySequence::SaveAs, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Save Scenario"), m_doc->filePath(),
                                                          tr("Headroom scenarios (*.headroom.json)"));
        QString error;
        if (!path.isEmpty() && !saveAs(path, &error))
            QMessageBox::warning(this, tr("Cannot save"), error);
    });
    file->addSeparator();
    file->addAction(tr("&Import Hugging Face config.json..."), QKeySequence(Qt::CTRL | Qt::Key_I),
                    settingsPanel(), &SettingsPanel::importConfig);
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    m_compare->populateFileMenu(file, this, [this](const QString& path) { return openTrace(path); });
    QAction* report = file->addAction(tr("Export &Report..."));
    report->setObjectName("exportReport");
    report->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R));
    connect(report, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Export Report"), QStringLiteral("report.pdf"),
            tr("PDF, one page (*.pdf);;Markdown with its charts beside it (*.md)"));
        if (path.isEmpty())
            return;
        QString error;
        if (!exportReport(path, &error))
            QMessageBox::warning(this, tr("Cannot export the report"), error);
    });
    auto* edit = menuBar()->addMenu(tr("&Edit"));
    QAction* undo = m_doc->undoStack()->createUndoAction(this, tr("&Undo"));
    undo->setShortcut(QKeySequence::Undo);
    QAction* redo = m_doc->undoStack()->createRedoAction(this, tr("&Redo"));
    redo->setShortcut(QKeySequence::Redo);
    edit->addAction(undo);
    edit->addAction(redo);

    m_compare->populateTraceMenu(
        menuBar()->addMenu(tr("&Trace")), this,
        [this] { return qobject_cast<TracePage*>(m_tabs->currentWidget()); }, [this] { return traceViews(); },
        [this](const QString& path) { return openTrace(path); });
    auto* view = menuBar()->addMenu(tr("&View"));
    auto* units = new QActionGroup(this);
    QAction* gib = view->addAction(tr("Sizes in &GiB (2^30 bytes)"));
    QAction* gb = view->addAction(tr("Sizes in G&B (10^9 bytes)"));
    for (QAction* a : {gib, gb}) {
        a->setCheckable(true);
        units->addAction(a);
    }
    gib->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_G));
    gib->setChecked(m_style.unit == ByteUnit::GiB);
    gb->setChecked(m_style.unit == ByteUnit::GB);
    connect(gib, &QAction::triggered, this, [this] {
        ChartStyle s = m_style;
        s.unit = ByteUnit::GiB;
        setStyle(s);
    });
    connect(gb, &QAction::triggered, this, [this] {
        ChartStyle s = m_style;
        s.unit = ByteUnit::GB;
        setStyle(s);
    });
    view->addSeparator();
    QAction* dark = view->addAction(tr("&Dark theme"));
    dark->setCheckable(true);
    connect(dark, &QAction::toggled, this, [this](bool on) {
        ChartStyle s = m_style;
        s.dark = on;
        setStyle(s);
    });
    view->addSeparator();
    QAction* presentation = view->addAction(tr("&Presentation Mode"));
    presentation->setObjectName("presentationMode");
    presentation->setCheckable(true);
    presentation->setShortcut(QKeySequence(Qt::Key_F11));
    connect(presentation, &QAction::toggled, this, &MainWindow::setPresentationMode);
    auto* help = menuBar()->addMenu(tr("&Help"));
    QAction* about = help->addAction(tr("&About Headroom"));
    about->setMenuRole(QAction::AboutRole);
    connect(about, &QAction::triggered, this, [this] { showAboutDialog(this); });
    rebuildRecentMenu();
}

ScenarioComparePage* MainWindow::compareScenarioFiles(const QStringList& paths, QString* error) {
    return m_compare->compareScenarioFiles(paths, error);
}

void MainWindow::setPresentationMode(bool on) {
    // Full screen, type a third larger everywhere, charts' type and lines larger still; the category
    // colours are the same colour-blind-safe, greyscale-distinct palette as always.
    static const QFont normal = QApplication::font();
    QFont font = normal;
    if (on)
        font.setPointSizeF(normal.pointSizeF() * 1.35);
    QApplication::setFont(font);
    m_planner->setPresentation(on);
    ChartStyle s = m_style;
    s.presentation = on;
    setStyle(s);
    m_presentation = on;
    if (on)
        showFullScreen();
    else
        showNormal();
}

bool MainWindow::exportReport(const QString& path, QString* error) {
    const std::optional<Comparison> measured = m_compare->measuredForReport(traceViews());
    const std::optional<ReportRunChart> run = m_compare->runForReport(traceViews());
    std::string e;
    if (!writeReport(m_doc->scenario(), m_doc->estimate(), measured ? &*measured : nullptr,
                     path.toStdString(), &e, run ? &*run : nullptr)) {
        if (error)
            *error = QString::fromStdString(e);
        return false;
    }
    return true;
}

void MainWindow::setStyle(const ChartStyle& style) {
    const bool themeChanged = style.dark != m_style.dark;
    m_style = style;
    if (themeChanged)
        applyPalette(style.dark);
    m_planner->setStyle(style);
    for (TracePage* view : traceViews())
        view->setStyle(style);
    for (int i = 0; m_tabs && i < m_tabs->count(); ++i) {
        if (auto* diff = qobject_cast<DiffPage*>(m_tabs->widget(i)))
            diff->setStyle(style);
        if (auto* compare = qobject_cast<ScenarioComparePage*>(m_tabs->widget(i)))
            compare->setStyle(style);
        if (auto* fleet = qobject_cast<FleetPage*>(m_tabs->widget(i)))
            fleet->setStyle(style);
    }
    settings()->setValue("view/units", style.unit == ByteUnit::GB ? "GB" : "GiB");
}

void MainWindow::updateTitle() {
    const QString name =
        m_doc->filePath().isEmpty() ? tr("Untitled") : QFileInfo(m_doc->filePath()).fileName();
    setWindowTitle(QStringLiteral("%1[*] — Headroom").arg(name));
    setWindowModified(m_doc->isModified());
}

bool MainWindow::openScenario(const QString& path, QString* error) {
    if (!m_doc->load(path, error))
        return false; // the current scenario stays as it was
    rememberScenario();
    return true;
}

bool MainWindow::openFile(const QString& path, QString* error) {
    if (QFileInfo(path).isDir()) // a job's rank files: a Fleet tab
        return m_compare->openFleet({path}, [this](const QString& p) { return openTrace(p); }) != nullptr;
    // A trace opens in a tab of its own (read in the background; errors show in that tab).
    if (isTraceFile(path.toStdString())) {
        openTrace(path);
        return true;
    }
    // A Hugging Face config.json replaces the model only; anything else is opened as a scenario.
    bool wasConfig = false;
    if (!m_doc->open(path, error, &wasConfig))
        return false;
    if (wasConfig)
        statusBar()->showMessage(tr("Model from %1").arg(QFileInfo(path).fileName()), 5000);
    else
        rememberScenario();
    return true;
}

TracePage* MainWindow::openTrace(const QString& path) {
    auto* view = new TracePage(path);
    view->setStyle(m_style);
    m_compare->watch(view);
    const int i = m_tabs->addTab(view, QFileInfo(path).fileName());
    m_tabs->setTabToolTip(i, path);
    m_tabs->setCurrentIndex(i);
    connect(view, &TracePage::titleChanged, this, [this, view] {
        const int at = m_tabs->indexOf(view);
        if (at >= 0)
            m_tabs->setTabText(at, view->title());
    });
    connect(view, &TracePage::failed, this, [this, path](const QString& e) {
        statusBar()->showMessage(e, 10000);
        (void)path;
    });
    addRecent(path);
    return view;
}

bool MainWindow::compareCurrentTrace() {
    auto* view = qobject_cast<TracePage*>(m_tabs->currentWidget());
    if (!view) {
        const auto views = traceViews();
        if (views.empty())
            return false;
        view = views.back();
    }
    compareWithPlanner(view);
    return true;
}

void MainWindow::compareWithPlanner(TracePage* view) {
    m_compare->compareWithPlanner(view);
}

QString MainWindow::calibrateFrom(TracePage* view, bool* calibrated, FitAgainst against) {
    return m_compare->calibrateFrom(view, calibrated, against);
}

DiffPage* MainWindow::diffTraces(TracePage* a, TracePage* b) {
    return m_compare->diffTraces(a, b);
}

bool MainWindow::waitForPlanner(int timeoutMs) {
    return m_planner->waitForDetails(timeoutMs);
}

SettingsPanel* MainWindow::settingsPanel() const {
    return m_planner->settingsPanel();
}
int MainWindow::viewUpdates() const {
    return m_planner->viewUpdates();
}
BreakdownChart* MainWindow::breakdownChart() const {
    return m_planner->breakdownChart();
}
SweepChart* MainWindow::sweepChart() const {
    return m_planner->sweepChart();
}
SavingsModel* MainWindow::savingsModel() const {
    return m_planner->savingsModel();
}
BreakdownModel* MainWindow::breakdownModel() const {
    return m_planner->breakdownModel();
}

std::vector<TracePage*> MainWindow::traceViews() const {
    std::vector<TracePage*> out;
    for (int i = 0; m_tabs && i < m_tabs->count(); ++i)
        if (auto* v = qobject_cast<TracePage*>(m_tabs->widget(i)))
            out.push_back(v);
    return out;
}

bool MainWindow::waitForTraces(int timeoutMs) {
    QElapsedTimer clock;
    clock.start();
    auto loading = [this] {
        for (int i = 0; i < m_tabs->count(); ++i) // trace tabs and fleets
            if (auto* v = qobject_cast<TracePage*>(m_tabs->widget(i)); v && v->isLoading())
                return true;
            else if (auto* f = qobject_cast<FleetPage*>(m_tabs->widget(i)); f && f->isLoading())
                return true;
        return false;
    };
    // Sleep until something arrives (a result, progress, or this tick) instead of spinning: on a 2-core
    // machine a spinning GUI thread takes a core from the loader.
    QTimer tick;
    tick.start(100);
    while (loading()) {
        if (clock.elapsed() > timeoutMs)
            return false;
        QApplication::processEvents(QEventLoop::AllEvents | QEventLoop::WaitForMoreEvents);
    }
    QApplication::processEvents();
    return true;
}

void MainWindow::rememberScenario() {
    addRecent(m_doc->filePath());
    settings()->setValue("session/lastScenario", m_doc->filePath());
}

bool MainWindow::save(QString* error) {
    if (m_doc->filePath().isEmpty()) {
        const QString path = QFileDialog::getSaveFileName(this, tr("Save Scenario"), QString(),
                                                          tr("Headroom scenarios (*.headroom.json)"));
        return !path.isEmpty() && saveAs(path, error);
    }
    return saveAs(m_doc->filePath(), error);
}

bool MainWindow::saveAs(const QString& path, QString* error) {
    if (!m_doc->saveAs(path, error))
        return false;
    addRecent(m_doc->filePath());
    settings()->setValue("session/lastScenario", m_doc->filePath());
    QFile::remove(autosavePath());
    statusBar()->showMessage(tr("Saved %1").arg(path), 4000);
    return true;
}

void MainWindow::addRecent(const QString& path) {
    QStringList recent = settings()->value("recentFiles").toStringList();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecent)
        recent.removeLast();
    settings()->setValue("recentFiles", recent);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    m_recentMenu->clear();
    const QStringList recent = settings()->value("recentFiles").toStringList();
    for (int i = 0; i < recent.size(); ++i) {
        const QString path = recent[i];
        QAction* a = m_recentMenu->addAction(
            QStringLiteral("&%1 %2").arg(i + 1).arg(QFileInfo(path).fileName()), this, [this, path] {
                QString error;
                const bool trace = isTraceFile(path.toStdString());
                if ((trace || maybeSave()) && !openFile(path, &error))
                    QMessageBox::warning(this, tr("Cannot open"), error);
            });
        a->setToolTip(path);
    }
    m_recentMenu->setEnabled(!recent.isEmpty());
}

bool MainWindow::maybeSave() {
    if (!m_doc->isModified())
        return true;
    switch (askToSave()) {
    case QMessageBox::Save: {
        QString error;
        if (save(&error))
            return true;
        if (!error.isEmpty())
            QMessageBox::warning(this, tr("Cannot save"), error);
        return false;
    }
    case QMessageBox::Discard:
        return true;
    default:
        return false;
    }
}

void MainWindow::writeAutosave() {
    if (!m_doc->isModified())
        return;
    QString error;
    if (m_doc->writeCopy(autosavePath(), &error))
        settings()->setValue("session/autosaveOf", m_doc->filePath());
}

void MainWindow::restoreSession() {
    const QString autosave = autosavePath();
    if (QFileInfo::exists(autosave)) {
        // The last session ended without saving (a crash, or killed): offer its changes back.
        const bool restore =
            !m_options.askBeforeRestore ||
            QMessageBox::question(
                this, tr("Recover unsaved changes?"),
                tr("Headroom did not close normally last time. Restore the unsaved scenario?")) ==
                QMessageBox::Yes;
        if (restore) {
            try {
                const Scenario sc = loadScenarioFile(autosave.toStdString());
                m_doc->reset(sc.document, settings()->value("session/autosaveOf").toString());
                m_doc->undoStack()->resetClean(); // recovered work is unsaved work
                statusBar()->showMessage(tr("Recovered unsaved changes"), 5000);
                return;
            } catch (const Error&) {
                // An unreadable autosave is dropped below; the last scenario opens instead.
            }
        }
        QFile::remove(autosave);
    }
    // Started without a file, Headroom shows the built-in default scenario (docs/formats.md section 1); the
    // last scenario is remembered as the first entry of File > Open Recent.
    const QString last = settings()->value("session/lastScenario").toString();
    if (!last.isEmpty() && QFileInfo::exists(last))
        statusBar()->showMessage(tr("Last scenario: %1 (File > Open Recent)").arg(QFileInfo(last).fileName()),
                                 8000);
    restoreGeometry(settings()->value("window/geometry").toByteArray());
    restoreState(settings()->value("window/state").toByteArray());
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (!maybeSave()) {
        event->ignore();
        return;
    }
    settings()->setValue("window/geometry", saveGeometry());
    settings()->setValue("window/state", saveState());
    QFile::remove(autosavePath()); // a deliberate close: nothing to recover
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const auto urls = event->mimeData()->urls();
    for (const QUrl& url : urls) {
        if (!url.isLocalFile())
            continue;
        QString error;
        const QString path = url.toLocalFile();
        const bool keepsScenario = QFileInfo(path).fileName() == QLatin1String("config.json") ||
                                   QFileInfo(path).isDir() || isTraceFile(path.toStdString());
        if (!keepsScenario && !maybeSave())
            continue;
        if (!openFile(path, &error))
            QMessageBox::warning(this, tr("Cannot open"), error);
    }
    event->acceptProposedAction();
}

} // namespace headroom
