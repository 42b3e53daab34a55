// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/planner/breakdownmodel.h"

#include "ui/common/categorycolors.h"
#include "ui/common/celltexts.h"

namespace headroom {

BreakdownModel::BreakdownModel(QObject* parent) : QAbstractTableModel(parent) {}

void BreakdownModel::setEstimate(const Estimate& est) {
    const CellTexts before(*this, rowCount());
    m_breakdown = est.perGpu;
    m_total = est.peakBytes;
    before.forEachChange(
        *this, [this](int r, int first, int last) { emit dataChanged(index(r, first), index(r, last)); });
}

void BreakdownModel::setStyle(const ChartStyle& style) {
    m_style = style;
    emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    emit headerDataChanged(Qt::Horizontal, SizeColumn, SizeColumn);
}

int BreakdownModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(kCategoryCount);
}
int BreakdownModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant BreakdownModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount)
        return {};
    const Category c = categoryAt(static_cast<std::size_t>(index.row()));
    const double v = m_breakdown[c];
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case CategoryColumn:
            return QString::fromUtf8(categoryLabel(c));
        case SizeColumn:
            return QString::number(m_style.scale(v), 'f', 2);
        case ShareColumn:
            return QStringLiteral("%1%").arg(m_total > 0 ? 100.0 * v / m_total : 0.0, 0, 'f', 1);
        }
        break;
    case Qt::DecorationRole:
        if (index.column() == CategoryColumn)
            return categoryColor(c);
        break;
    case Qt::TextAlignmentRole:
        if (index.column() != CategoryColumn)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        break;
    case Qt::UserRole:
        return v;
    }
    return {};
}

QVariant BreakdownModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case CategoryColumn:
        return tr("Category");
    case SizeColumn:
        return m_style.unitName();
    case ShareColumn:
        return tr("Share");
    }
    return {};
}

} // namespace headroom
