// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/compare/diffpage.h"
#include "ui/common/sortabletable.h"

#include "ui/common/tablecopy.h"

#include "ui/traceview/categorybars.h"

#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace headroom {

namespace {

// The device with the highest allocated peak (the run's busiest GPU).
std::size_t busiest(const LoadedTrace& t) {
    return busiestDevice(t.summary);
}

} // namespace

DiffPage::DiffPage(std::shared_ptr<const LoadedTrace> a, std::shared_ptr<const LoadedTrace> b,
                   const Scenario* scenario, QWidget* parent)
    : QWidget(parent), m_a(std::move(a)), m_b(std::move(b)) {
    m_diff = diffAtPeaks(m_a->trace, *m_a->indexes.at(busiest(*m_a)), m_b->trace,
                         *m_b->indexes.at(busiest(*m_b)), AttributionRules::pytorchDefaults(), scenario);
    auto* layout = new QVBoxLayout(this);
    m_summary = new QLabel;
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setWordWrap(true);
    layout->addWidget(m_summary);
    auto* split = new QSplitter(Qt::Vertical);
    m_bars = new CategoryBars;
    m_bars->setNames(QStringLiteral("A"), QStringLiteral("B"));
    split->addWidget(m_bars);
    auto table = [](const QString& title) {
        auto* t = new QTableWidget(0, 6);
        addTableCopyActions(t, title);
        t->setHorizontalHeaderLabels({title, tr("A"), tr("B"), tr("B − A"), tr("A count"), tr("B count")});
        t->verticalHeader()->hide();
        t->setEditTriggers(QAbstractItemView::NoEditTriggers);
        // Largest change first as given; a header click sorts by that column (and again, the other way).
        sortOnHeaderClick(t);
        t->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
        for (int c = 1; c < 6; ++c)
            t->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
        t->verticalHeader()->setDefaultSectionSize(t->fontMetrics().height() + 6);
        return t;
    };
    m_frames = table(tr("Top user frame (largest change first)"));
    m_unmatched = table(tr("In only one run (matched by size and frame)"));
    split->addWidget(m_frames);
    split->addWidget(m_unmatched);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    split->setStretchFactor(2, 2);
    layout->addWidget(split, 1);
    setStyle(m_style);
}

QString DiffPage::title() const {
    return tr("Diff: %1 → %2")
        .arg(QFileInfo(QString::fromStdString(m_a->path)).fileName(),
             QFileInfo(QString::fromStdString(m_b->path)).fileName());
}

void DiffPage::setStyle(const ChartStyle& style) {
    m_style = style;
    if (!m_diff.allocatedRecorded) // an nvidia-smi log: the memory in use alone (TraceDiff::reservedA)
        m_summary->setText(
            tr("<b>A</b> %1: at most %2 reserved<br><b>B</b> %3: at most %4 reserved<br><b>B − A</b>: %5 "
               "reserved. No allocated bytes to compare: an nvidia-smi log records the memory in use (the "
               "CUDA context included), not what PyTorch allocated.")
                .arg(QFileInfo(QString::fromStdString(m_a->path)).fileName().toHtmlEscaped(),
                     style.format(static_cast<double>(m_diff.reservedA)),
                     QFileInfo(QString::fromStdString(m_b->path)).fileName().toHtmlEscaped(),
                     style.format(static_cast<double>(m_diff.reservedB)),
                     style.format(static_cast<double>(m_diff.reservedDifference()))));
    else
        m_summary->setText(tr("<b>A</b> %1: peak %2 after event %3<br><b>B</b> %4: peak %5 after event "
                              "%6<br><b>B − A</b>: %7")
                               .arg(QFileInfo(QString::fromStdString(m_a->path)).fileName().toHtmlEscaped(),
                                    style.format(static_cast<double>(m_diff.a.total)))
                               .arg(m_diff.a.event)
                               .arg(QFileInfo(QString::fromStdString(m_b->path)).fileName().toHtmlEscaped(),
                                    style.format(static_cast<double>(m_diff.b.total)))
                               .arg(m_diff.b.event)
                               .arg(style.format(static_cast<double>(m_diff.difference()))));
    m_bars->setStyle(style);
    m_bars->setMeasured(m_diff.a.bytes, tr("By category at each run's peak"), m_diff.allocatedRecorded);
    m_bars->setEstimate(m_diff.b.bytes, QStringLiteral("B"), m_diff.allocatedRecorded);
    fill(m_frames, m_diff.byFrame);
    fill(m_unmatched, m_diff.unmatched);
}

void DiffPage::fill(QTableWidget* table, const std::vector<FrameDelta>& rows) {
    table->setRowCount(0);
    const std::size_t n = std::min<std::size_t>(rows.size(), 500);
    table->setRowCount(static_cast<int>(n));
    for (std::size_t i = 0; i < n; ++i) {
        const FrameDelta& f = rows[i];
        const int r = static_cast<int>(i);
        auto* frame = new QTableWidgetItem(QString::fromStdString(f.frame));
        frame->setToolTip(frame->text());
        table->setItem(r, 0, frame);
        table->setItem(
            r, 1,
            new NumberItem(m_style.format(static_cast<double>(f.bytesA), 3), static_cast<double>(f.bytesA)));
        table->setItem(
            r, 2,
            new NumberItem(m_style.format(static_cast<double>(f.bytesB), 3), static_cast<double>(f.bytesB)));
        table->setItem(r, 3,
                       new NumberItem(m_style.format(static_cast<double>(f.difference()), 3),
                                      static_cast<double>(f.difference())));
        table->setItem(r, 4, new NumberItem(QString::number(f.countA), static_cast<double>(f.countA)));
        table->setItem(r, 5, new NumberItem(QString::number(f.countB), static_cast<double>(f.countB)));
    }
}

} // namespace headroom
