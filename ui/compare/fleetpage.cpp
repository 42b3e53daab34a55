// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/compare/fleetpage.h"

#include "core/io/fleetjson.h"
#include "ui/common/jobrunner.h"
#include "ui/compare/fleetheatmap.h"
#include "ui/compare/fleetrankmodel.h"
#include "ui/compare/fleetstagebars.h"

#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <cmath>
#include <utility>

namespace headroom {

FleetPage::FleetPage(const QStringList& inputs, std::optional<Scenario> scenario, QWidget* parent)
    : QWidget(parent), m_scenario(std::move(scenario)), m_jobs(new JobRunner(this)),
      m_model(new FleetRankModel(this)), m_sorted(new QSortFilterProxyModel(this)), m_table(new QTableView),
      m_heat(new FleetHeatMap), m_stages(new FleetStageBars), m_summary(new QLabel), m_layout(new QLineEdit),
      m_progress(new QProgressBar), m_cancel(new QPushButton(tr("Cancel"))),
      m_open(new QPushButton(tr("Open Rank"))), m_diff(new QPushButton(tr("Diff Against the Median Rank"))) {
    m_folder = inputs.size() == 1 ? inputs.front() : QFileInfo(inputs.value(0)).dir().path();
    m_sorted->setSourceModel(m_model);
    m_sorted->setSortRole(Qt::UserRole);
    m_table->setModel(m_sorted);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(FleetRankModel::PeakAllocated, Qt::DescendingOrder); // the worst first
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setWordWrap(false);
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    m_layout->setPlaceholderText(tr("tp=8,pp=4,cp=1 (Megatron's rank order)"));
    m_layout->setMinimumWidth(220);
    m_layout->setToolTip(
        tr("The job's layout: ranks in Megatron's order (tensor parallel fastest, pipeline "
           "stages slowest) give each rank its stage; outliers are then judged within their stage"));
    m_open->setEnabled(false);
    m_diff->setEnabled(false);

    auto* top = new QHBoxLayout;
    top->addWidget(m_summary, 1);
    top->addWidget(m_progress);
    top->addWidget(m_cancel);
    auto* actions = new QHBoxLayout;
    actions->addWidget(new QLabel(tr("Layout:")));
    actions->addWidget(m_layout);
    auto* apply = new QPushButton(tr("Apply"));
    actions->addWidget(apply);
    actions->addStretch(1);
    actions->addWidget(m_open);
    actions->addWidget(m_diff);
    auto* charts = new QSplitter(Qt::Horizontal);
    charts->addWidget(m_heat);
    charts->addWidget(m_stages);
    charts->setStretchFactor(0, 3);
    charts->setStretchFactor(1, 2);
    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(m_table);
    split->addWidget(charts);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addLayout(actions);
    layout->addWidget(split, 1);

    connect(apply, &QPushButton::clicked, this, [this] { setLayout(m_layout->text()); });
    connect(m_layout, &QLineEdit::returnPressed, this, [this] { setLayout(m_layout->text()); });
    connect(m_cancel, &QPushButton::clicked, m_jobs, &JobRunner::cancel);
    connect(m_heat, &FleetHeatMap::rankClicked, this, &FleetPage::selectRank);
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
        const int rank = selectedRank();
        m_heat->setSelectedRank(rank);
        m_open->setEnabled(rank >= 0 && !isLoading());
        m_diff->setEnabled(rank >= 0 && !isLoading() && medianRank(rank) >= 0);
    });
    connect(m_open, &QPushButton::clicked, this, [this] {
        if (selectedRank() >= 0)
            emit openRankRequested(fileOf(selectedRank()));
    });
    connect(m_diff, &QPushButton::clicked, this, [this] {
        const int rank = selectedRank(), median = medianRank(rank);
        if (rank >= 0 && median >= 0)
            emit diffRequested(fileOf(rank), fileOf(median));
    });
    start(inputs);
}

FleetPage::~FleetPage() = default;

QString FleetPage::title() const {
    return tr("Fleet: %1").arg(QFileInfo(m_folder).fileName());
}

bool FleetPage::isLoading() const {
    return m_jobs->busy();
}

bool FleetPage::waitForIdle(int timeoutMs) {
    return m_jobs->waitForIdle(timeoutMs);
}

void FleetPage::start(const QStringList& inputs) {
    std::vector<std::string> args;
    for (const QString& i : inputs)
        args.push_back(i.toStdString());
    std::vector<std::string> files;
    try {
        files = fleetFiles(args);
    } catch (const std::exception& e) {
        m_error = QString::fromUtf8(e.what());
    }
    if (files.empty() && m_error.isEmpty())
        m_error = tr("%1: no rank files in it").arg(m_folder);
    if (!m_error.isEmpty()) {
        m_summary->setText(m_error.toHtmlEscaped());
        m_progress->hide();
        m_cancel->hide();
        return;
    }
    m_progress->setRange(0, static_cast<int>(files.size()));
    m_progress->setValue(0);
    m_progress->setFormat(tr("%v of %m ranks read"));
    m_summary->setText(
        tr("Reading %n rank file(s) from %1, one reader per core...", nullptr, static_cast<int>(files.size()))
            .arg(m_folder.toHtmlEscaped()));
    const std::optional<Scenario> scenario = m_scenario;
    const FleetLayout layout = m_fleet.layout;
    QPointer<FleetPage> self(this);
    m_jobs->start(
        [files, scenario, layout, self](const JobContext& context) {
            FleetOptions options;
            options.layout = layout;
            options.scenario = scenario ? &*scenario : nullptr;
            options.cancel = context.cancellation();
            // Rows appear as ranks are read: the first long before the last file.
            options.onRank = [&context, self](const FleetRank& r, std::size_t done, std::size_t) {
                context.post([self, r, done] {
                    if (!self)
                        return;
                    self->m_model->appendRank(r);
                    self->m_progress->setValue(static_cast<int>(done));
                });
            };
            return readFleetFiles(files, options);
        },
        [this](JobOutcome<Fleet> outcome) {
            m_progress->hide();
            m_cancel->hide();
            if (!outcome.ok()) {
                m_error = QString::fromStdString(outcome.error);
                m_summary->setText(tr("Reading stopped: %1").arg(m_error.toHtmlEscaped()));
            } else {
                m_fleet = std::move(*outcome.value);
                showFleet();
                if (m_typedLayout) // typed (or given on the command line) while the files were read
                    restage(*std::exchange(m_typedLayout, std::nullopt));
            }
            emit loaded();
        });
}

void FleetPage::restage(const FleetLayout& layout) {
    // Only the stages, the outliers and the plan's lines change (the ranks are read); the plan is an
    // estimate, so the work runs where the window's other work does.
    Fleet fleet = m_fleet;
    fleet.layout = layout;
    const std::optional<Scenario> scenario = layout.given ? m_scenario : std::nullopt;
    m_jobs->start(
        [fleet = std::move(fleet), scenario](const JobContext&) mutable {
            finishFleet(fleet, scenario ? &*scenario : nullptr);
            return fleet;
        },
        [this](JobOutcome<Fleet> outcome) {
            if (!outcome.ok()) {
                m_summary->setText(QString::fromStdString(outcome.error).toHtmlEscaped());
                return;
            }
            m_fleet = std::move(*outcome.value);
            showFleet();
        });
}

bool FleetPage::setLayout(const QString& text) {
    FleetLayout layout;
    try {
        layout = text.trimmed().isEmpty() ? FleetLayout{} : parseFleetLayout(text.toStdString());
    } catch (const std::exception& e) {
        m_summary->setText(QString::fromUtf8(e.what()).toHtmlEscaped());
        return false;
    }
    if (isLoading() && m_fleet.ranks.empty())
        m_typedLayout = layout; // applied when the last rank is in
    else
        restage(layout);
    return true;
}

void FleetPage::showFleet() {
    if (m_fleet.layout.given)
        m_layout->setText(QStringLiteral("tp=%1,pp=%2,cp=%3,ep=%4")
                              .arg(m_fleet.layout.tp)
                              .arg(m_fleet.layout.pp)
                              .arg(m_fleet.layout.cp)
                              .arg(m_fleet.layout.ep));
    const int selected = selectedRank();
    m_model->setRanks(m_fleet.ranks);
    m_heat->setRanks(m_fleet.ranks);
    m_stages->setStages(m_fleet.job.stages, m_fleet.job.byReserved);
    // The worst first: by the peak the job compares (reserved where no file records allocated).
    if (m_fleet.job.byReserved &&
        m_table->horizontalHeader()->sortIndicatorSection() == FleetRankModel::PeakAllocated)
        m_table->sortByColumn(FleetRankModel::Reserved, Qt::DescendingOrder);
    m_summary->setText(summaryText());
    m_table->resizeColumnsToContents();
    if (selected >= 0)
        selectRank(selected);
}

QString FleetPage::summaryText() const {
    const FleetJob& j = m_fleet.job;
    QString text = tr("<b>%n rank(s)</b> from %1", nullptr, static_cast<int>(m_fleet.ranks.size()))
                       .arg(m_folder.toHtmlEscaped());
    if (j.readErrors)
        text += tr(", <b>%n cannot be read</b>", nullptr, j.readErrors);
    if (j.worstRank < 0)
        return text;
    const auto worst = std::find_if(m_fleet.ranks.begin(), m_fleet.ranks.end(),
                                    [&](const FleetRank& r) { return r.rank == j.worstRank; });
    if (j.byReserved)
        text += tr(". Compared by reserved: allocated is not recorded");
    text += tr(". Worst rank <b>%1</b> at %2; median %3, spread %4.")
                .arg(j.worstRank)
                .arg(m_style.format(static_cast<double>(worst->peak())))
                .arg(m_style.format(static_cast<double>(j.medianPeak)))
                .arg(m_style.format(static_cast<double>(j.spreadBytes)));
    QStringList outliers;
    for (const FleetRank& r : m_fleet.ranks)
        if (r.outlier)
            outliers
                << tr("rank %1 (%2)").arg(r.rank).arg(QString::fromStdString(r.outlierWhy).toHtmlEscaped());
    text += outliers.isEmpty() ? tr(" No outlier.")
                               : tr(" <span style='color:#d02828'><b>Outliers:</b> %1</span>")
                                     .arg(outliers.join(QStringLiteral("; ")));
    if (!j.stages.empty()) {
        const auto worstStage =
            std::max_element(j.stages.begin(), j.stages.end(),
                             [](const FleetStage& a, const FleetStage& b) { return a.maxPeak < b.maxPeak; });
        text += tr(" Worst stage %1.").arg(worstStage->stage);
    }
    for (const std::string& w : m_fleet.warnings)
        text += QStringLiteral(" <i>%1</i>").arg(QString::fromStdString(w).toHtmlEscaped());
    return text;
}

void FleetPage::selectRank(int rank) {
    for (int row = 0; row < m_sorted->rowCount(); ++row) {
        const QModelIndex i = m_sorted->index(row, FleetRankModel::Rank);
        if (m_sorted->data(i, Qt::UserRole).toInt() == rank) {
            m_table->selectRow(row);
            m_table->scrollTo(i);
            return;
        }
    }
}

int FleetPage::selectedRank() const {
    const QModelIndexList rows =
        m_table->selectionModel() ? m_table->selectionModel()->selectedRows() : QModelIndexList{};
    return rows.isEmpty()
               ? -1
               : m_sorted->data(m_sorted->index(rows.front().row(), FleetRankModel::Rank), Qt::UserRole)
                     .toInt();
}

int FleetPage::medianRank(int except) const {
    int best = -1;
    double distance = 0;
    for (const FleetRank& r : m_fleet.ranks) {
        if (!r.error.empty() || r.rank == except)
            continue;
        const double d = std::abs(static_cast<double>(r.peak() - m_fleet.job.medianPeak));
        if (best < 0 || d < distance) {
            best = r.rank;
            distance = d;
        }
    }
    return best;
}

QString FleetPage::fileOf(int rank) const {
    for (const FleetRank& r : m_fleet.ranks)
        if (r.rank == rank)
            return QString::fromStdString(r.file);
    return {};
}

void FleetPage::setStyle(const ChartStyle& style) {
    m_style = style;
    m_model->setStyle(style);
    m_heat->setStyle(style);
    m_stages->setStyle(style);
    if (!isLoading() && m_error.isEmpty())
        m_summary->setText(summaryText());
}

} // namespace headroom
