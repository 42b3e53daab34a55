// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/mainwindow.h"

#include "core/compare/calibration.h"
#include "core/error.h"
#include "core/io/attributionrulesjson.h"
#include "core/io/bytesformat.h"
#include "core/io/comparejson.h"
#include "core/io/scenariojson.h"
#include "core/trace/formats/tracereader.h"
#include "core/version.h"
#include "ui/planner/breakdownchart.h"
#include "ui/planner/breakdownmodel.h"
#include "ui/planner/phasechart.h"
#include "ui/planner/report.h"
#include "ui/planner/savingsmodel.h"
#include "ui/compare/scenariocompare.h"
#include "ui/planner/scenariodocument.h"
#include "ui/planner/servingchart.h"
#include "ui/planner/settingspanel.h"
#include "ui/planner/strategychart.h"
#include "ui/planner/sweepchart.h"
#include "ui/common/tablecopy.h"
#include "ui/compare/diffview.h"
#include "ui/traceview/traceview.h"

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

// Antialiasing is for sloped edges (the phase chart's areas, the sweep's line); bar charts are
// axis-aligned rectangles that look the same without it, and it was a third of their paint time.
QChartView* chartView(QChart* chart, QWidget* parent, bool antialias) {
    auto* view = new QChartView(chart, parent);
    view->setRenderHint(QPainter::Antialiasing, antialias);
    view->setMinimumSize(260, 200);
    return view;
}

void applyPalette(bool dark) {
    qApp->setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    if (!dark) {
        qApp->setPalette(qApp->style()->standardPalette());
        return;
    }
    QPalette p;
    const QColor window(0x2b, 0x2b, 0x2e), base(0x1e, 0x1e, 0x21), text(0xe8, 0xe8, 0xe8);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::Highlight, QColor(0x2a, 0x82, 0xda));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::PlaceholderText, QColor(0x9a, 0x9a, 0x9a)); // the default was dark on dark
    p.setColor(QPalette::Link, QColor(0x6a, 0xb0, 0xf3));
    qApp->setPalette(p);
}

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
    // Views update once per event-loop pass however many changes arrived in it: a slider drag delivers
    // several values per frame, and only the last one is ever seen.
    connect(m_doc, &ScenarioDocument::changed, this, &MainWindow::scheduleUpdate);
    connect(m_doc, &ScenarioDocument::changed, this, [this] {
        if (m_doc->isModified())
            m_autosaveTimer->start();
    });
    connect(m_doc, &ScenarioDocument::fileChanged, this, &MainWindow::updateTitle);
    m_style.unit = settings()->value("view/units").toString() == "GB" ? ByteUnit::GB : ByteUnit::GiB;
    setStyle(m_style);
    if (m_options.restoreSession)
        restoreSession();
    updateViews();
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
    auto* splitter = new QSplitter(Qt::Horizontal, this);

    m_panel = new SettingsPanel(m_doc);
    auto* scroll = new QScrollArea(splitter);
    scroll->setWidget(m_panel);
    scroll->setWidgetResizable(true);
    // Wide enough for the panel and its scroll bar: nothing is clipped when the groups need scrolling.
    scroll->setMinimumWidth(m_panel->minimumSizeHint().width() +
                            scroll->verticalScrollBar()->sizeHint().width() + 6);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    splitter->addWidget(scroll);

    auto* centre = new QWidget(splitter);
    auto* grid = new QGridLayout(centre);
    grid->setContentsMargins(4, 4, 4, 4);
    // The verdict line changes with every step: a plain-text label (bold font, colour from its palette)
    // costs a fraction of rich text, which is parsed and laid out anew on each change. The details below
    // it stay rich text; QLabel skips setText when they did not change, which is most steps.
    auto* verdictBox = new QWidget(centre);
    auto* verdictLayout = new QVBoxLayout(verdictBox);
    verdictLayout->setContentsMargins(0, 0, 0, 0);
    verdictLayout->setSpacing(0);
    m_verdict = new QLabel(verdictBox);
    m_verdict->setObjectName("verdict");
    m_verdict->setTextFormat(Qt::PlainText);
    m_verdictDetails = new QLabel(verdictBox);
    m_verdictDetails->setObjectName("verdictDetails");
    m_verdictDetails->setTextFormat(Qt::RichText);
    m_verdictDetails->setWordWrap(true);
    verdictLayout->addWidget(m_verdict);
    verdictLayout->addWidget(m_verdictDetails);
    // A fixed height: new numbers in the verdict must not relayout (and so repaint) the whole window.
    for (QLabel* l : {m_verdict, m_verdictDetails})
        l->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
    m_error = new QLabel(centre);
    m_error->setObjectName("validationError");
    m_error->setWordWrap(true);
    m_error->setStyleSheet(
        "QLabel { background: #fdecea; color: #8a1c12; padding: 4px; border-radius: 3px; }");
    m_error->hide();
    // Warnings of the reader and the estimator: a setting the file has but Headroom does not read, a
    // choice that does not apply. The plan stands; the banner says what it did not take into account.
    m_warnings = new QLabel(centre);
    m_warnings->setObjectName("scenarioWarnings");
    m_warnings->setWordWrap(true);
    m_warnings->setStyleSheet(
        "QLabel { background: #fff4d6; color: #6b4e00; padding: 4px; border-radius: 3px; }");
    m_warnings->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_warnings->hide();
    grid->addWidget(verdictBox, 0, 0, 1, 3);
    grid->addWidget(m_error, 1, 0, 1, 3);
    grid->addWidget(m_warnings, 1, 0, 1, 3);

    m_breakdown = new BreakdownChart;
    m_breakdownView = chartView(m_breakdown, centre, false);
    m_breakdownView->setMinimumHeight(300);
    grid->addWidget(m_breakdownView, 2, 0, 1, 2);

    auto* side = new QWidget(centre);
    auto* sideLayout = new QVBoxLayout(side);
    sideLayout->setContentsMargins(0, 0, 0, 0);
    auto* fitTitle = new QLabel(tr("<b>What would make it fit?</b> (double-click to apply)"), side);
    m_fitTitle = fitTitle;
    m_savings = new SavingsModel(this);
    m_savingsView = new QTableView(side);
    m_savingsView->setObjectName("savings");
    m_savingsView->setModel(m_savings);
    m_savingsView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_savingsView->setSelectionMode(QAbstractItemView::SingleSelection);
    m_savingsView->verticalHeader()->hide();
    m_savingsView->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    // Number columns get fixed widths, measured once from the widest text they can show: sizing them to
    // their contents re-measured every cell's text on every slider step (a sixth of a step's time).
    for (int column : {1, 2, 3})
        m_savingsView->horizontalHeader()->setSectionResizeMode(column, QHeaderView::Fixed);
    m_savingsView->setWordWrap(false);
    connect(m_savingsView, &QTableView::doubleClicked, this,
            [this](const QModelIndex& i) { applySaving(i.row()); });
    m_table = new BreakdownModel(this);
    auto* tableView = new QTableView(side);
    tableView->setObjectName("breakdownTable");
    tableView->setModel(m_table);
    tableView->verticalHeader()->hide();
    tableView->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    for (int column : {1, 2})
        tableView->horizontalHeader()->setSectionResizeMode(column, QHeaderView::Fixed);
    m_tableView = tableView;
    sizeFromFont();
    sideLayout->addWidget(fitTitle);
    sideLayout->addWidget(m_savingsView, 3);
    sideLayout->addWidget(new QLabel(tr("<b>Most-loaded GPU at its peak</b>"), side));
    sideLayout->addWidget(tableView, 4);
    side->setMinimumWidth(340);
    grid->addWidget(side, 2, 2);

    m_phase = new PhaseChart;
    m_strategies = new StrategyChart;
    m_sweep = new SweepChart;
    m_phaseView = chartView(m_phase, centre, true);
    m_strategyView = chartView(m_strategies, centre, false);
    m_serving = new ServingChart;
    m_servingView = chartView(m_serving, centre, true);
    m_servingView->setObjectName("servingChart");
    auto* sweepBox = new QWidget(centre);
    m_sweepBox = sweepBox;
    sweepBox->setObjectName("sweepBox");
    auto* sweepLayout = new QVBoxLayout(sweepBox);
    sweepLayout->setContentsMargins(0, 0, 0, 0);
    m_sweepVariable = new QComboBox(sweepBox);
    m_sweepVariable->setObjectName("sweepVariable");
    m_sweepVariable->addItem(tr("Sweep micro-batch"), int(SweepVariable::MicroBatch));
    m_sweepVariable->addItem(tr("Sweep sequence length"), int(SweepVariable::SequenceLength));
    m_sweepVariable->addItem(tr("Sweep GPU count"), int(SweepVariable::GpuCount));
    connect(m_sweepVariable, &QComboBox::activated, this, [this](int i) {
        m_sweep->setVariable(static_cast<SweepVariable>(m_sweepVariable->itemData(i).toInt()));
        updateViews();
    });
    m_sweepView = chartView(m_sweep, sweepBox, true);
    // Every chart exports (PNG at a chosen scale, SVG, PDF) and copies as an image; every table copies as
    // Markdown or CSV: what people paste into slides and design documents.
    addChartExportActions(m_breakdownView, QStringLiteral("per-gpu-breakdown"));
    addChartExportActions(m_phaseView, QStringLiteral("phases"));
    addChartExportActions(m_strategyView, QStringLiteral("strategies"));
    addChartExportActions(m_servingView, QStringLiteral("serving-capacity"));
    addChartExportActions(m_sweepView, QStringLiteral("sweep"));
    addTableCopyActions(m_savingsView, tr("What would make it fit"));
    addTableCopyActions(m_tableView, tr("Most-loaded GPU at its peak"));
    sweepLayout->addWidget(m_sweepVariable);
    sweepLayout->addWidget(m_sweepView, 1);
    // The three smaller charts share the bottom row equally.
    auto* bottom = new QHBoxLayout;
    bottom->addWidget(m_phaseView, 1);
    bottom->addWidget(m_strategyView, 1);
    bottom->addWidget(m_servingView, 1); // in the strategy chart's place when planning inference
    // Hidden until a plan asks for it: before the first (deferred) update both charts held a place, so the
    // window's minimum width, fixed at its first show, was a chart wider than a 1280-pixel screen allows.
    m_servingView->hide();
    bottom->addWidget(sweepBox, 1);
    grid->addLayout(bottom, 3, 0, 1, 3);
    grid->setRowStretch(2, 3);
    grid->setRowStretch(3, 2);
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 1);
    grid->setColumnStretch(2, 1);
    splitter->addWidget(centre);
    splitter->setStretchFactor(0, 0);
    splitter->setStretchFactor(1, 1);
    // The planner is the first tab; each opened trace gets its own, closable.
    m_tabs = new QTabWidget;
    m_tabs->setDocumentMode(true);
    m_tabs->setTabsClosable(true);
    m_tabs->addTab(splitter, tr("Planner"));
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
    statusBar();
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
        auto* view = qobject_cast<TraceView*>(m_tabs->currentWidget());
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
    file->addAction(tr("&Import Hugging Face config.json..."), QKeySequence(Qt::CTRL | Qt::Key_I), m_panel,
                    &SettingsPanel::importConfig);
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QAction* compareScenarios = file->addAction(tr("Compare &Scenarios..."));
    compareScenarios->setObjectName("compareScenarios");
    connect(compareScenarios, &QAction::triggered, this, [this] {
        const QStringList paths =
            QFileDialog::getOpenFileNames(this, tr("Scenarios to compare with the current plan"), QString(),
                                          tr("Headroom scenarios (*.headroom.json);;JSON (*.json)"));
        if (paths.isEmpty())
            return;
        QString error;
        if (!compareScenarioFiles(paths, &error))
            QMessageBox::warning(this, tr("Cannot compare"), error);
    });
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

    auto* traceMenu = menuBar()->addMenu(tr("&Trace"));
    traceMenu->addAction(tr("&Compare with the Planner's Scenario"), QKeySequence(Qt::CTRL | Qt::Key_K), this,
                         [this] {
                             if (!compareCurrentTrace())
                                 statusBar()->showMessage(tr("Open a trace first: File › Open"), 5000);
                         });
    traceMenu->addAction(tr("C&alibrate the Planner's Scenario from This Trace"), this, [this] {
        auto* view = qobject_cast<TraceView*>(m_tabs->currentWidget());
        if (!view || view->traces().empty()) {
            statusBar()->showMessage(tr("Open the trace of a run of the planner's scenario first"), 5000);
            return;
        }
        const QString result = calibrateFrom(view);
        QMessageBox::information(this, tr("Calibrated"), result);
    });
    traceMenu->addAction(tr("Attribution &Rules..."), this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Attribution rules (write the defaults with: headroom-cli rules > my.rules.json)"),
            QString(), tr("Attribution rules (*.json);;All files (*)"));
        if (path.isEmpty())
            return;
        try {
            const AttributionRules rules = loadAttributionRulesFile(path.toStdString());
            for (TraceView* v : traceViews())
                v->setRules(rules);
            statusBar()->showMessage(tr("%n rule(s) from %1", nullptr, static_cast<int>(rules.rules.size()))
                                         .arg(QFileInfo(path).fileName()),
                                     5000);
        } catch (const std::exception& e) {
            QMessageBox::warning(this, tr("Cannot read the rules"), QString::fromUtf8(e.what()));
        }
    });
    traceMenu->addAction(tr("&Diff with Another Trace..."), QKeySequence(Qt::CTRL | Qt::Key_D), this, [this] {
        auto* current = qobject_cast<TraceView*>(m_tabs->currentWidget());
        if (!current || current->traces().empty()) {
            statusBar()->showMessage(tr("Open a trace first, then diff it with another (File › Open)"), 5000);
            return;
        }
        const QString path =
            QFileDialog::getOpenFileName(this, tr("The other run"), QString(),
                                         tr("Traces (*.pickle *.pkl *.json *.gz *.csv);;All files (*)"));
        if (path.isEmpty())
            return;
        TraceView* other = openTrace(path);
        QPointer<TraceView> first(current); // the user may close it while the other one loads
        connect(other, &TraceView::loaded, this, [this, first, other] {
            if (first)
                diffTraces(first, other);
        });
    });
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
    connect(about, &QAction::triggered, this, [this] { showAbout(); });
    rebuildRecentMenu();
}

ScenarioCompare* MainWindow::compareScenarioFiles(const QStringList& paths, QString* error) {
    // The current plan first, then each file: the differences are from the plan on screen.
    std::vector<ScenarioCompare::Entry> entries;
    const QString current =
        m_doc->filePath().isEmpty() ? tr("Current plan") : QFileInfo(m_doc->filePath()).fileName();
    entries.push_back({current, m_doc->scenario().settingsCopy(), m_doc->estimate()});
    for (const QString& path : paths) {
        try {
            Scenario sc = loadScenarioFile(path.toStdString());
            const Estimate est = estimate(sc);
            QString name = QFileInfo(path).fileName();
            name.remove(QStringLiteral(".headroom.json"));
            entries.push_back({name, std::move(sc), est});
        } catch (const std::exception& e) {
            if (error)
                *error = QString::fromUtf8(e.what());
            return nullptr;
        }
    }
    auto* view = new ScenarioCompare(std::move(entries));
    view->setStyle(m_style);
    m_tabs->setCurrentIndex(m_tabs->addTab(view, view->title()));
    return view;
}

void MainWindow::setPresentationMode(bool on) {
    // Full screen, type a third larger everywhere, charts' type and lines larger still; the category
    // colours are the same colour-blind-safe, greyscale-distinct palette as always.
    static const QFont normal = QApplication::font();
    QFont font = normal;
    if (on)
        font.setPointSizeF(normal.pointSizeF() * 1.35);
    QApplication::setFont(font);
    sizeFromFont();
    ChartStyle s = m_style;
    s.presentation = on;
    setStyle(s);
    m_presentation = on;
    // The audience looks at the charts: the settings step aside (the menus still reach everything).
    if (auto* scroll = qobject_cast<QScrollArea*>(
            m_panel->parentWidget() ? m_panel->parentWidget()->parentWidget() : nullptr))
        scroll->setVisible(!on);
    if (on)
        showFullScreen();
    else
        showNormal();
}

bool MainWindow::exportReport(const QString& path, QString* error) {
    // With a trace tab that has this workload's scenario, the report adds the measured peak beside the
    // estimate; otherwise it is the plan alone.
    std::optional<Comparison> measured;
    for (TraceView* view : traceViews())
        if (view->hasScenario() && !view->traces().empty() && view->attribution().total > 0) {
            const auto& t = view->traces().front();
            const std::size_t device = busiestDevice(t->summary);
            measured = compareAtPeak(m_doc->scenario(), m_doc->estimate(), t->trace, *t->indexes[device],
                                     AttributionRules::pytorchDefaults());
            break;
        }
    std::string e;
    if (!writeReport(m_doc->scenario(), m_doc->estimate(), measured ? &*measured : nullptr,
                     path.toStdString(), &e)) {
        if (error)
            *error = QString::fromStdString(e);
        return false;
    }
    return true;
}

QString MainWindow::aboutText() {
    QString deps;
    for (const Dependency& d : kDependencies)
        deps += QStringLiteral("<li>%1 — %2 (%3)</li>")
                    .arg(QString::fromUtf8(d.name), QString::fromUtf8(d.licence), QString::fromUtf8(d.why));
    return tr("<h3>Headroom %1</h3><p>GPU memory planner and allocator-trace reader for training and serving "
              "large models.</p><p>Free software under the GNU General Public License, version 3 or any "
              "later version (%5), without any warranty. <i>Licences…</i> shows the licence and the "
              "third-party notices.</p><p>Built with Qt %2, running on Qt %3.</p><p>Uses:</p><ul>%4</ul>")
        .arg(QString::fromUtf8(version()), QStringLiteral(QT_VERSION_STR), QString::fromUtf8(qVersion()),
             deps, QString::fromUtf8(kLicence));
}

QString MainWindow::licenceNoticesText() {
    return QString::fromUtf8(thirdPartyNotices().data(), qsizetype(thirdPartyNotices().size())) +
           QStringLiteral("\n\n") + QString::fromUtf8(licenceText().data(), qsizetype(licenceText().size()));
}

void MainWindow::showAbout() {
    QMessageBox box(QMessageBox::NoIcon, tr("About Headroom"), aboutText(), QMessageBox::Close, this);
    box.setTextFormat(Qt::RichText);
    QPushButton* licences = box.addButton(tr("Licences…"), QMessageBox::ActionRole);
    box.exec();
    if (box.clickedButton() != licences)
        return;
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Licences and third-party notices"));
    auto* layout = new QVBoxLayout(&dialog);
    auto* text = new QPlainTextEdit(licenceNoticesText(), &dialog);
    text->setReadOnly(true);
    text->setLineWrapMode(QPlainTextEdit::NoWrap);
    text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    layout->addWidget(text);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, &dialog);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    layout->addWidget(buttons);
    dialog.resize(760, 600);
    dialog.exec();
}

void MainWindow::setStyle(const ChartStyle& style) {
    const bool themeChanged = style.dark != m_style.dark;
    m_style = style;
    if (themeChanged)
        applyPalette(style.dark);
    m_breakdown->setStyle(style);
    m_phase->setStyle(style);
    m_strategies->setStyle(style);
    m_serving->setStyle(style);
    m_sweep->setStyle(style);
    m_savings->setStyle(style);
    m_table->setStyle(style);
    for (TraceView* view : traceViews())
        view->setStyle(style);
    for (int i = 0; m_tabs && i < m_tabs->count(); ++i) {
        if (auto* diff = qobject_cast<DiffView*>(m_tabs->widget(i)))
            diff->setStyle(style);
        if (auto* compare = qobject_cast<ScenarioCompare*>(m_tabs->widget(i)))
            compare->setStyle(style);
    }
    sizeNumberColumns(); // the unit changes the widest text
    settings()->setValue("view/units", style.unit == ByteUnit::GB ? "GB" : "GiB");
    updateViews();
}

void MainWindow::scheduleUpdate() {
    if (m_updatePending)
        return;
    m_updatePending = true;
    QMetaObject::invokeMethod(
        this, [this] { updateViews(); }, Qt::QueuedConnection);
}

void MainWindow::sizeFromFont() {
    const QFont app = QApplication::font();
    QFont big = app;
    big.setPointSizeF(app.pointSizeF() * 13 / 9); // 13 pt beside the usual 9
    big.setBold(true);
    m_verdict->setFont(big);
    m_verdict->setFixedHeight(QFontMetrics(big).height() + 2);
    m_verdictDetails->setFixedHeight(QFontMetrics(app).height() * 2 + 2);
    const int row = QFontMetrics(app).height() + 6;
    m_tableView->verticalHeader()->setDefaultSectionSize(row);
    m_savingsView->verticalHeader()->setDefaultSectionSize(row);
    sizeNumberColumns();
}

void MainWindow::sizeNumberColumns() {
    // The widest values the columns hold: a byte count with its unit, a percentage, a yes/no verdict.
    const auto width = [](QTableView* view, int column, const QString& sample) {
        const int header = view->fontMetrics().horizontalAdvance(
            view->model()->headerData(column, Qt::Horizontal).toString());
        view->horizontalHeader()->resizeSection(
            column, std::max(header, view->fontMetrics().horizontalAdvance(sample)) + 14);
    };
    const QString bytes = m_style.format(9999.99 * (m_style.unit == ByteUnit::GiB ? 1073741824.0 : 1e9));
    // Serving engines' rows speak in tokens and requests (SavingsModel): room for those too.
    width(m_savingsView, 1,
          QStringLiteral("+9,999,999").length() > bytes.length() ? QStringLiteral("+9,999,999") : bytes);
    width(m_savingsView, 2, bytes);
    width(m_savingsView, 3, tr("fits"));
    width(m_tableView, 1, bytes);
    width(m_tableView, 2, QStringLiteral("100.0%"));
}

void MainWindow::updateViews() {
    m_updatePending = false;
    ++m_viewUpdates;
    const Scenario& sc = m_doc->scenario();
    const Estimate& est = m_doc->estimate();
    m_error->setVisible(!m_doc->validationError().isEmpty());
    m_error->setText(
        tr("Not valid: %1 — showing the last valid plan").arg(m_doc->validationError().toHtmlEscaped()));
    QStringList warnings;
    for (const std::string& w : est.warnings)
        warnings << QString::fromStdString(w).toHtmlEscaped();
    const QString warningText =
        warnings.isEmpty() ? QString() : tr("Note: %1").arg(warnings.join(QStringLiteral("<br>Note: ")));
    if (m_warnings->text() != warningText)
        m_warnings->setText(warningText);
    m_warnings->setVisible(!warnings.isEmpty() && m_doc->validationError().isEmpty());
    const auto& c = sc.cluster;
    const QString layout = sc.mode == Mode::Training
                               ? tr("data %1 (%2) × tensor %3 × pipeline %4 × context %5")
                                     .arg(est.dataParallelSize)
                                     .arg(QString::fromStdString(c.dataParallelName))
                                     .arg(c.tensorParallel)
                                     .arg(c.pipelineParallel)
                                     .arg(c.contextParallel)
                               : tr("tensor %1 × pipeline %2").arg(c.tensorParallel).arg(c.pipelineParallel);
    const ServingEstimate& sv = est.serving;
    const QLocale locale;
    QString limits = sc.mode == Mode::Training
                         ? tr("largest micro-batch that fits: <b>%1</b>").arg(est.maxMicroBatchSize)
                         : tr("largest batch that fits: <b>%1</b>").arg(est.maxMicroBatchSize);
    if (sv.engine)
        limits =
            tr("%1 KV cache: <b>%2 tokens</b> — <b>%3</b> requests of %4 tokens at once")
                .arg(sc.inference.engine == Engine::Vllm ? QStringLiteral("vLLM") : QStringLiteral("SGLang"))
                .arg(locale.toString(sv.kvCacheTokens))
                .arg(sv.maxConcurrency, 0, 'f', 2)
                .arg(locale.toString(sv.requestLength));
    else if (sc.mode == Mode::Inference)
        limits += tr(" — KV cache %1 tokens, %2 bytes per token")
                      .arg(locale.toString(sv.kvCacheTokens))
                      .arg(locale.toString(static_cast<qlonglong>(sv.kvBytesPerToken)));
    if (sc.mode == Mode::Training)
        // What the user's own logs show: frameworks print PyTorch's counters, which leave out the CUDA
        // context and NCCL (torchtitan and torchtune: reserved; Megatron: allocated).
        limits += tr(" — PyTorch would report %1 allocated, %2 reserved")
                      .arg(m_style.format(est.allocatedPeakBytes), m_style.format(est.reservedPeakBytes));
    if (c.offloadOptimizer || c.offloadParameters || est.offload.cpuBytesPerGpu > 0)
        limits +=
            tr(" — offload moves %1 over PCIe per step (%2 s)")
                .arg(m_style.format(std::max(est.offload.hostToDeviceBytes, est.offload.deviceToHostBytes)))
                .arg(est.offload.secondsPerStep, 0, 'f', 2);
    m_verdict->setText(verdictText(est, m_style));
    QPalette palette = m_verdict->palette();
    const QColor colour(est.fits ? 0x2ca02c : 0xd62728);
    if (palette.color(QPalette::WindowText) != colour) {
        palette.setColor(QPalette::WindowText, colour);
        m_verdict->setPalette(palette);
    }
    m_verdictDetails->setText(QStringLiteral("%1 — %2 × %3, %4<br>%5")
                                  .arg(QString::fromStdString(sc.modelLabel).toHtmlEscaped())
                                  .arg(c.numGpus)
                                  .arg(QString::fromStdString(c.gpu), layout, limits));
    m_breakdown->setEstimate(sc, est);
    m_phase->setScenario(sc, est);
    const bool training = sc.mode == Mode::Training;
    m_strategyView->setVisible(training);
    m_servingView->setVisible(!training);
    // A serving engine's memory does not follow the batch or the context: the serving chart says what
    // does change (tokens and requests), and the peak sweep would be a flat line.
    m_sweepBox->setVisible(!est.serving.engine);
    m_fitTitle->setText(est.serving.engine ? tr("<b>What would serve more?</b> (double-click to apply)")
                                           : tr("<b>What would make it fit?</b> (double-click to apply)"));
    if (!training)
        m_serving->setScenario(sc, est);
    m_sweepVariable->setItemText(0, training ? tr("Sweep micro-batch") : tr("Sweep batch"));
    m_sweepVariable->setItemText(1, training ? tr("Sweep sequence length") : tr("Sweep context length"));
    if (training)
        m_strategies->setScenario(sc, est);
    if (!est.serving.engine) // hidden under an engine: its sweep is not computed
        m_sweep->setScenario(sc, est);
    m_savings->setScenario(sc);
    m_table->setEstimate(est);
    // Qt Charts lays a chart out in a posted event, after the first repaint: new axis labels then cost a
    // second paint of the view. Settling the layouts now makes it one paint per change.
    for (QChart* chart :
         {static_cast<QChart*>(m_breakdown), static_cast<QChart*>(m_phase),
          static_cast<QChart*>(m_strategies), static_cast<QChart*>(m_sweep), static_cast<QChart*>(m_serving)})
        if (chart->layout())
            chart->layout()->activate();
}

void MainWindow::updateTitle() {
    const QString name =
        m_doc->filePath().isEmpty() ? tr("Untitled") : QFileInfo(m_doc->filePath()).fileName();
    setWindowTitle(QStringLiteral("%1[*] — Headroom").arg(name));
    setWindowModified(m_doc->isModified());
}

void MainWindow::applySaving(int row) {
    const auto& savings = m_savings->savings();
    if (row < 0 || row >= static_cast<int>(savings.size()))
        return;
    const Saving s = savings[static_cast<std::size_t>(row)];
    m_doc->applyPatch(s.patch, QString::fromStdString(s.description));
    statusBar()->showMessage(
        tr("Applied: %1 (saves %2)").arg(QString::fromStdString(s.description), m_style.format(s.bytesSaved)),
        5000);
}

bool MainWindow::openScenario(const QString& path, QString* error) {
    if (!m_doc->load(path, error))
        return false; // the current scenario stays as it was
    rememberScenario();
    return true;
}

bool MainWindow::openFile(const QString& path, QString* error) {
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

TraceView* MainWindow::openTrace(const QString& path) {
    auto* view = new TraceView(path);
    view->setStyle(m_style);
    const int i = m_tabs->addTab(view, QFileInfo(path).fileName());
    m_tabs->setTabToolTip(i, path);
    m_tabs->setCurrentIndex(i);
    connect(view, &TraceView::titleChanged, this, [this, view] {
        const int at = m_tabs->indexOf(view);
        if (at >= 0)
            m_tabs->setTabText(at, view->title());
    });
    connect(view, &TraceView::failed, this, [this, path](const QString& e) {
        statusBar()->showMessage(e, 10000);
        (void)path;
    });
    addRecent(path);
    return view;
}

bool MainWindow::compareCurrentTrace() {
    auto* view = qobject_cast<TraceView*>(m_tabs->currentWidget());
    if (!view) {
        const auto views = traceViews();
        if (views.empty())
            return false;
        view = views.back();
    }
    compareWithPlanner(view);
    return true;
}

void MainWindow::compareWithPlanner(TraceView* view) {
    const QString name = m_doc->filePath().isEmpty() ? QString::fromStdString(m_doc->scenario().name)
                                                     : QFileInfo(m_doc->filePath()).fileName();
    view->setScenario(m_doc->scenario(), name);
}

QString MainWindow::calibrateFrom(TraceView* view) {
    const auto& loaded = view->traces().front();
    if (loaded->indexes.empty())
        return tr("This trace has no devices: nothing to calibrate from.");
    const std::size_t device = busiestDevice(loaded->summary);
    const Scenario scenario = m_doc->scenario();
    const CalibrationResult r =
        calibrate({{&scenario, &loaded->trace, loaded->indexes.at(device).get(), loaded->path}},
                  AttributionRules::pytorchDefaults());
    const nlohmann::json fitted = calibrationToJson(r);
    // One undoable step; every what-if starts from the calibrated estimate.
    m_doc->applyPatch(
        {{"calibration", {{"factors", fitted["factors"]}, {"runs", fitted["runs"]}}}},
        tr("Calibrate from %1").arg(QFileInfo(QString::fromStdString(loaded->path)).fileName()));
    compareWithPlanner(view);
    const CalibrationRun& run = r.runs.front();
    auto pct = [&](std::int64_t e) {
        return QString::number(100.0 * static_cast<double>(e - run.measured) /
                                   static_cast<double>(std::max<std::int64_t>(run.measured, 1)),
                               'f', 1);
    };
    return tr("The planner's estimate of this run was %1% off the measured peak; calibrated, it is %2% off. "
              "Edit > Undo removes the calibration.")
        .arg(pct(run.before), pct(run.after));
}

DiffView* MainWindow::diffTraces(TraceView* a, TraceView* b) {
    if (!a || !b || a->traces().empty() || b->traces().empty())
        return nullptr;
    if (a->traces().front()->indexes.empty() || b->traces().front()->indexes.empty()) {
        statusBar()->showMessage(tr("A trace without devices has no peak to compare"), 5000);
        return nullptr;
    }
    // The planner's scenario tells model state from scratch when it describes these runs.
    auto* view = new DiffView(a->traces().front(), b->traces().front(),
                              m_doc->filePath().isEmpty() ? nullptr : &m_doc->scenario());
    view->setStyle(m_style);
    m_tabs->setCurrentIndex(m_tabs->addTab(view, view->title()));
    return view;
}

std::vector<TraceView*> MainWindow::traceViews() const {
    std::vector<TraceView*> out;
    for (int i = 0; m_tabs && i < m_tabs->count(); ++i)
        if (auto* v = qobject_cast<TraceView*>(m_tabs->widget(i)))
            out.push_back(v);
    return out;
}

bool MainWindow::waitForTraces(int timeoutMs) {
    QElapsedTimer clock;
    clock.start();
    auto loading = [this] {
        for (TraceView* v : traceViews())
            if (v->isLoading())
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
        const bool keepsScenario =
            QFileInfo(path).fileName() == QLatin1String("config.json") || isTraceFile(path.toStdString());
        if (!keepsScenario && !maybeSave())
            continue;
        if (!openFile(path, &error))
            QMessageBox::warning(this, tr("Cannot open"), error);
    }
    event->acceptProposedAction();
}

} // namespace headroom
