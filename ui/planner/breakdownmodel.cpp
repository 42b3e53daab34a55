// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/planner/breakdownmodel.h"

#include "ui/common/categorycolors.h"
#include "ui/common/celltexts.h"

#include <algorithm>

namespace headroom {

BreakdownModel::BreakdownModel(QObject* parent) : QAbstractTableModel(parent) {}

void BreakdownModel::setEstimate(const Estimate& est) {
    auto take = [&] {
        m_breakdown = est.perGpu;
        m_total = est.peakBytes;
        m_frozen = est.frozenWeightBytes();
        m_serving = est.serving.engine;
        m_eagerExcess = est.eagerBlocksExcessBytes();
    };
    if ((est.frozenWeightBytes() > 0) != (m_frozen > 0)) { // a row more or less: the weights split, or whole
        beginResetModel();
        take();
        endResetModel();
        return;
    }
    const CellTexts before(*this, rowCount());
    take();
    before.forEachChange(
        *this, [this](int r, int first, int last) { emit dataChanged(index(r, first), index(r, last)); });
}

std::pair<Category, int> BreakdownModel::rowAt(int row) const {
    if (m_frozen <= 0)
        return {categoryAt(static_cast<std::size_t>(row)), 0};
    if (row < 2) // Weights is the first category
        return {Category::Weights, row + 1};
    return {categoryAt(static_cast<std::size_t>(row - 1)), 0};
}

double BreakdownModel::valueAt(int row) const {
    const auto [c, part] = rowAt(row);
    if (part == 1)
        return m_frozen;
    if (part == 2)
        return std::max(0.0, m_breakdown[c] - m_frozen);
    return m_breakdown[c];
}

void BreakdownModel::setStyle(const ChartStyle& style) {
    m_style = style;
    emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    emit headerDataChanged(Qt::Horizontal, SizeColumn, SizeColumn);
}

int BreakdownModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(kCategoryCount) + (m_frozen > 0 ? 1 : 0);
}
int BreakdownModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant BreakdownModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount)
        return {};
    const auto [c, part] = rowAt(index.row());
    const double v = valueAt(index.row());
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case CategoryColumn:
            // Short enough for the table's first column: the adapters' gradients and states, and the
            // weights in two.
            if (part == 1)
                return tr("Weights: frozen base");
            if (part == 2)
                return tr("Weights: adapters");
            if (m_frozen > 0 && c == Category::Gradients)
                return tr("Gradients (adapters)");
            if (m_frozen > 0 && c == Category::OptimizerStates)
                return tr("Optimizer (adapters)");
            return QString::fromUtf8(categoryLabel(c, m_serving));
        case SizeColumn:
            return QString::number(m_style.scale(v), 'f', 2);
        case ShareColumn:
            return QStringLiteral("%1%").arg(m_total > 0 ? 100.0 * v / m_total : 0.0, 0, 'f', 1);
        }
        break;
    case Qt::DecorationRole:
        if (index.column() == CategoryColumn) // as the charts draw them: the frozen base in navy
            return part == 1 ? frozenWeightsColor() : categoryColor(c);
        break;
    case Qt::ToolTipRole:
        if (c == Category::AllocatorOverhead && m_eagerExcess > 0)
            return tr("Of which %1 %2 is fitted, not modelled: what torchtitan's eager blocks under per-op "
                      "selective checkpointing reserved beyond the same runs compiled (its benchmarks' "
                      "Tables 1 and 3), which torch.compile would save")
                .arg(m_style.scale(m_eagerExcess), 0, 'f', 2)
                .arg(m_style.unitName());
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
