// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/traceview/regiontable.h"

#include "ui/common/sortabletable.h"
#include "ui/common/tablecopy.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

namespace headroom {

RegionTable::RegionTable(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_note = new QLabel;
    m_note->setWordWrap(true);
    layout->addWidget(m_note);
    m_table = new QTableWidget(0, 9);
    m_table->setHorizontalHeaderLabels({tr("Region"), tr("Lane"), tr("Start"), tr("Duration"), tr("Peak"),
                                        tr("Rise over start"), tr("Allocated inside"), tr("Allocations"),
                                        tr("Still live at end")});
    m_table->horizontalHeaderItem(Rise)->setToolTip(
        tr("The peak inside the region less what was allocated when it began: what the region itself added"));
    m_table->horizontalHeaderItem(StillLive)->setToolTip(
        tr("Of the bytes allocated inside the region, those not freed by its end (what it leaves behind)"));
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    // Names run long (record_function's "Optimizer.step#AdamW.step"): a column the user can widen, not
    // one squeezed by the numbers beside it in a narrow side pane.
    m_table->horizontalHeader()->setSectionResizeMode(Region, QHeaderView::Interactive);
    m_table->horizontalHeader()->resizeSection(
        Region, m_table->fontMetrics().horizontalAdvance(QLatin1Char('x')) * 28);
    m_table->horizontalHeader()->setStretchLastSection(false);
    for (int c = LaneColumn; c <= StillLive; ++c)
        m_table->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    sortOnHeaderClick(m_table);
    addTableCopyActions(m_table, tr("Memory by region"));
    layout->addWidget(m_table, 1);
    connect(m_table, &QTableWidget::cellClicked, this, [this](int row, int) {
        const QTableWidgetItem* item = m_table->item(row, Region);
        if (item)
            emit regionChosen(item->data(Qt::UserRole).toInt(), item->data(Qt::UserRole + 1).toInt());
    });
    fill();
}

void RegionTable::setLanes(std::vector<Lane> lanes) {
    m_lanes = std::move(lanes);
    fill();
}

void RegionTable::setStyle(const ChartStyle& style) {
    m_style = style;
    fill();
}

void RegionTable::fill() {
    int rows = 0;
    for (const Lane& l : m_lanes)
        rows += static_cast<int>(l.regions.size());
    m_note->setText(rows == 0
                        ? tr("No annotated regions: a run records them with torch.profiler "
                             "(record_function, ProfilerStep#N) or, in a memory snapshot, as "
                             "external_annotations.")
                        : tr("%n annotated region(s); a click selects one's stretch of the run.", "", rows));
    m_table->setSortingEnabled(false);
    m_table->clearContents();
    m_table->setRowCount(rows);
    m_table->setColumnHidden(LaneColumn, m_lanes.size() < 2);
    int row = 0;
    auto bytes = [&](std::int64_t b) {
        return new NumberItem(m_style.format(static_cast<double>(b)), static_cast<double>(b));
    };
    for (std::size_t li = 0; li < m_lanes.size(); ++li) {
        const Lane& lane = m_lanes[li];
        for (std::size_t ri = 0; ri < lane.regions.size(); ++ri, ++row) {
            const RegionMemory& r = lane.regions[ri];
            auto* name = new QTableWidgetItem(QString::fromStdString(r.name));
            name->setData(Qt::UserRole, static_cast<int>(li));
            name->setData(Qt::UserRole + 1, static_cast<int>(ri));
            name->setToolTip(name->text());
            m_table->setItem(row, Region, name);
            m_table->setItem(row, LaneColumn, new QTableWidgetItem(lane.label));
            const double start = (static_cast<double>(r.start) - lane.origin) * lane.secondsPerUnit;
            m_table->setItem(row, Start,
                             new NumberItem(QString::number(start, 'f', 4) + QStringLiteral(" s"), start));
            if (r.end == INT64_MAX) {
                m_table->setItem(row, Duration, new NumberItem(tr("not closed"), INFINITY));
            } else {
                const double ms = static_cast<double>(r.end - r.start) * lane.secondsPerUnit * 1e3;
                m_table->setItem(row, Duration,
                                 new NumberItem(QString::number(ms, 'f', 2) + QStringLiteral(" ms"), ms));
            }
            m_table->setItem(row, Peak, bytes(r.peakAllocated));
            m_table->setItem(row, Rise, bytes(r.peakOverStart()));
            m_table->setItem(row, AllocatedInside, bytes(r.allocatedBytes));
            m_table->setItem(
                row, Allocations,
                new NumberItem(QString::number(r.allocations), static_cast<double>(r.allocations)));
            m_table->setItem(row, StillLive, bytes(r.stillLiveBytes));
        }
    }
}

} // namespace headroom
