// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/planner/plannerpage.h"

#include "core/io/estimatewords.h"

#include "ui/common/jobrunner.h"
#include "ui/common/richtextline.h"
#include "ui/common/tablecopy.h"
#include "ui/planner/breakdownchart.h"
#include "ui/planner/breakdownmodel.h"
#include "ui/planner/phasechart.h"
#include "ui/planner/savingsmodel.h"
#include "ui/planner/scenariodocument.h"
#include "ui/planner/servingchart.h"
#include "ui/planner/settingspanel.h"
#include "ui/planner/strategychart.h"
#include "ui/planner/sweepchart.h"

#include <QApplication>
#include <QChartView>
#include <QComboBox>
#include <QGraphicsLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QScrollArea>
#include <QScrollBar>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

namespace headroom {

namespace {

// Antialiasing is for sloped edges (the phase chart's areas, the sweep's line); bar charts are
// axis-aligned rectangles that look the same without it, and it was a third of their paint time.
QChartView* chartView(QChart* chart, QWidget* parent, bool antialias) {
    auto* view = new QChartView(chart, parent);
    view->setRenderHint(QPainter::Antialiasing, antialias);
    view->setMinimumSize(260, 200);
    return view;
}

} // namespace

PlannerPage::PlannerPage(ScenarioDocument* doc, QWidget* parent)
    : QSplitter(Qt::Horizontal, parent), m_doc(doc) {
    m_jobs = new JobRunner(this);
    m_fallback = new QTimer(this);
    m_fallback->setSingleShot(true);
    m_fallback->setInterval(40);
    connect(m_fallback, &QTimer::timeout, this, [this] { showPlan(m_doc->scenario(), m_doc->estimate()); });
    build();
    // Views update once per event-loop pass however many changes arrived in it: a slider drag delivers
    // several values per frame, and only the last one is ever seen.
    connect(m_doc, &ScenarioDocument::changed, this, &PlannerPage::scheduleUpdate);
    updateViews();
}

PlannerPage::~PlannerPage() = default;

void PlannerPage::build() {
    auto* splitter = this;

    m_panel = new SettingsPanel(m_doc);
    auto* scroll = new QScrollArea(splitter);
    m_settings = scroll;
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
    m_verdictDetails = new RichTextLine(verdictBox);
    m_verdictDetails->setObjectName("verdictDetails");
    verdictLayout->addWidget(m_verdict);
    verdictLayout->addWidget(m_verdictDetails);
    // A fixed height: new numbers in the verdict must not relayout (and so repaint) the whole window.
    m_verdict->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
    m_error = new QLabel(centre);
    m_error->setObjectName("validationError");
    m_error->setWordWrap(true);
    // Its text is escaped HTML: rich text always, or a message with no tag would show its entities.
    m_error->setTextFormat(Qt::RichText);
    m_error->setStyleSheet(
        "QLabel { background: #fdecea; color: #8a1c12; padding: 4px; border-radius: 3px; }");
    m_error->hide();
    // Warnings of the reader and the estimator: a setting the file has but Headroom does not read, a
    // choice that does not apply. The plan stands; the banner says what it did not take into account.
    m_warnings = new QLabel(centre);
    m_warnings->setObjectName("scenarioWarnings");
    m_warnings->setWordWrap(true);
    m_warnings->setTextFormat(Qt::RichText); // one warning has no <br>: "&quot;" would show as written

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
    connect(m_sweepVariable, &QComboBox::activated, this, [this](int) { startDetails(); });
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
}

void PlannerPage::setStyle(const ChartStyle& style) {
    m_style = style;
    m_breakdown->setStyle(style);
    m_phase->setStyle(style);
    m_strategies->setStyle(style);
    m_serving->setStyle(style);
    m_sweep->setStyle(style);
    m_savings->setStyle(style);
    m_table->setStyle(style);
    sizeNumberColumns(); // the unit changes the widest text
    // The plan in the new units at once; the details follow from their job.
    showPlan(m_doc->scenario(), m_doc->estimate());
    startDetails();
}

void PlannerPage::setPresentation(bool on) {
    sizeFromFont();
    // The audience looks at the charts: the settings step aside (the menus still reach everything).
    m_settings->setVisible(!on);
}

bool PlannerPage::waitForDetails(int timeoutMs) {
    QApplication::processEvents(); // a pending update starts its job
    return m_jobs->waitForIdle(timeoutMs);
}

void PlannerPage::scheduleUpdate() {
    if (m_updatePending)
        return;
    m_updatePending = true;
    QMetaObject::invokeMethod(
        this, [this] { updateViews(); }, Qt::QueuedConnection);
}

void PlannerPage::sizeFromFont() {
    const QFont app = QApplication::font();
    QFont big = app;
    big.setPointSizeF(app.pointSizeF() * 13 / 9); // 13 pt beside the usual 9
    big.setBold(true);
    m_verdict->setFont(big);
    m_verdict->setFixedHeight(QFontMetrics(big).height() + 2);
    m_verdictDetails->setFixedHeight(QFontMetrics(app).height() * (2 + m_verdictRecordLines) + 2);
    const int row = QFontMetrics(app).height() + 6;
    m_tableView->verticalHeader()->setDefaultSectionSize(row);
    m_savingsView->verticalHeader()->setDefaultSectionSize(row);
    sizeNumberColumns();
}

void PlannerPage::sizeNumberColumns() {
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

void PlannerPage::updateViews() {
    // The document's estimate is ready; the details are a job away. Everything is drawn once, when they
    // arrive (a slider step is then one paint of the window, not two), or at the fallback's time if they
    // are slow, so the verdict never waits long for a sweep.
    m_updatePending = false;
    ++m_viewUpdates;
    startDetails();
    m_fallback->start();
}

void PlannerPage::showPlan(const Scenario& sc, const Estimate& est) {
    m_fallback->stop();
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
    const EstimateWords words =
        describeEstimate(sc, est, m_style.unit, [](const std::string& s) { return "<b>" + s + "</b>"; });
    m_verdict->setText(QString::fromStdString(words.verdict));
    QPalette palette = m_verdict->palette();
    const QColor colour(est.fits ? 0x2ca02c : 0xd62728);
    if (palette.color(QPalette::WindowText) != colour) {
        palette.setColor(QPalette::WindowText, colour);
        m_verdict->setPalette(palette);
    }
    // A third line for training and for a serving engine: how the framework profile's, or the engine's, plans
    // have held against the runs the project checks.
    const bool record = !words.record.empty();
    const int recordLines =
        record ? 1 + static_cast<int>(std::count(words.record.begin(), words.record.end(), '\n')) : 0;
    if (recordLines != m_verdictRecordLines) {
        m_verdictRecordLines = recordLines;
        sizeFromFont();
    }
    const QString recordTip =
        !record ? QString()
        : sc.mode == Mode::Training
            ? tr("Track record: how this framework profile's plans have held against the published "
                 "and recorded runs Headroom checks, the runs never used to choose one of its rules or "
                 "constants apart from those that were; the error is |planned / measured - 1| on the "
                 "counter each run reported (README, Framework profiles; docs/validation.md). A "
                 "calibrated plan also says how plans calibrated on recorded runs of the same code have "
                 "held (README, Calibration).")
            : tr("Track record: how this engine's plans have held against the start-up logs Headroom "
                 "checks (examples/serving/cases.json), the logs never used to choose one of its rules "
                 "or constants apart from those that were; the error is the KV pool's, in tokens where "
                 "the log counts them (README, Serving).");
    if (m_verdictDetails->toolTip() != recordTip)
        m_verdictDetails->setToolTip(recordTip);
    m_verdictDetails->setText(
        QString::fromStdString(words.setup).toHtmlEscaped() + QStringLiteral("<br>") +
        QString::fromStdString(words.limits) +
        (record ? QStringLiteral("<br>") + QString::fromStdString(words.record)
                                               .toHtmlEscaped()
                                               .replace(QLatin1Char('\n'), QStringLiteral("<br>"))
                : QString()));
    m_breakdown->setEstimate(sc, est);
    const bool training = sc.mode == Mode::Training;
    m_strategyView->setVisible(training);
    m_servingView->setVisible(!training);
    // A serving engine's memory does not follow the batch or the context: the serving chart says what
    // does change (tokens and requests), and the peak sweep would be a flat line.
    m_sweepBox->setVisible(!est.serving.engine);
    m_fitTitle->setText(est.serving.engine ? tr("<b>What would serve more?</b> (double-click to apply)")
                                           : tr("<b>What would make it fit?</b> (double-click to apply)"));
    m_sweepVariable->setItemText(0, training ? tr("Sweep micro-batch") : tr("Sweep batch"));
    m_sweepVariable->setItemText(1, training ? tr("Sweep sequence length") : tr("Sweep context length"));
    m_table->setEstimate(est);
    settleCharts();
}

void PlannerPage::startDetails() {
    // The phases, the ranked changes, the strategies or serving curve and the sweep: tens of estimates, off
    // the GUI thread. A newer document supersedes a running job (the runner drops its result).
    const Scenario sc = m_doc->scenario().settingsCopy();
    const Estimate est = m_doc->estimate();
    const auto variable = static_cast<SweepVariable>(m_sweepVariable->currentData().toInt());
    m_jobs->start(
        [sc, est, variable](const JobContext& job) {
            return plannerDetails(sc, est, variable, job.cancellation());
        },
        [this, sc, est](JobOutcome<PlannerDetails> outcome) {
            // Drawn with the scenario it was computed for: a newer one has its own job.
            if (outcome.ok())
                showDetails(std::move(*outcome.value), sc, est);
        });
}

void PlannerPage::showDetails(PlannerDetails d, const Scenario& sc, const Estimate& est) {
    showPlan(sc, est);
    m_phase->setTimeline(d.phases, sc, est);
    if (d.strategies)
        m_strategies->setEstimates(*d.strategies, est);
    if (sc.mode == Mode::Inference)
        m_serving->setCurve(d.serving, sc, est);
    if (d.sweep)
        m_sweep->setSweep(*d.sweep, sc, est);
    m_savings->setSavings(std::move(d.savings), sc);
    settleCharts();
}

void PlannerPage::settleCharts() {
    // Qt Charts lays a chart out in a posted event, after the first repaint: new axis labels then cost a
    // second paint of the view. Settling the layouts now makes it one paint per change.
    for (QChart* chart :
         {static_cast<QChart*>(m_breakdown), static_cast<QChart*>(m_phase),
          static_cast<QChart*>(m_strategies), static_cast<QChart*>(m_sweep), static_cast<QChart*>(m_serving)})
        if (chart->layout())
            chart->layout()->activate();
}
void PlannerPage::applySaving(int row) {
    const auto& savings = m_savings->savings();
    if (row < 0 || row >= static_cast<int>(savings.size()))
        return;
    const Saving s = savings[static_cast<std::size_t>(row)];
    m_doc->applyPatch(s.patch, QString::fromStdString(s.description));
    emit message(tr("Applied: %1 (saves %2)")
                     .arg(QString::fromStdString(s.description), m_style.format(s.bytesSaved)));
}

} // namespace headroom
