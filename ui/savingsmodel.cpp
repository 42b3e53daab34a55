#include "ui/savingsmodel.h"

#include <QBrush>
#include <QColor>

namespace headroom {

SavingsModel::SavingsModel(QObject* parent) : QAbstractTableModel(parent) {}

void SavingsModel::setScenario(const Scenario& sc) {
    std::vector<Saving> next = rankSavings(sc);
    // Same rows: update in place so selection and scroll position survive a slider drag.
    bool sameShape = next.size() == m_savings.size();
    for (std::size_t i = 0; sameShape && i < next.size(); ++i)
        sameShape = next[i].id == m_savings[i].id;
    if (sameShape) {
        // Announce only the cells whose text changed (each announced cell is repainted).
        std::vector<QString> before;
        for (int r = 0; r < rowCount(); ++r)
            for (int c = 0; c < ColumnCount; ++c)
                before.push_back(data(index(r, c)).toString());
        m_savings = std::move(next);
        for (int r = 0; r < rowCount(); ++r) {
            int first = -1, last = -1;
            for (int c = 0; c < ColumnCount; ++c)
                if (data(index(r, c)).toString() != before[std::size_t(r * ColumnCount + c)]) {
                    first = first < 0 ? c : first;
                    last = c;
                }
            if (first >= 0)
                emit dataChanged(index(r, first), index(r, last));
        }
        return;
    }
    beginResetModel();
    m_savings = std::move(next);
    endResetModel();
}

void SavingsModel::setStyle(const ChartStyle& style) {
    m_style = style;
    if (!m_savings.empty())
        emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

int SavingsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_savings.size());
}

int SavingsModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant SavingsModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount)
        return {};
    const Saving& s = m_savings[static_cast<std::size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case ChangeColumn:
            return QString::fromStdString(s.description);
        case SavesColumn:
            return m_style.format(s.bytesSaved);
        case PeakAfterColumn:
            return m_style.format(s.peakAfter);
        case FitsColumn:
            return s.fitsAfter ? tr("fits") : tr("no");
        }
        break;
    case Qt::ToolTipRole:
        return tr("Double-click to apply: %1").arg(QString::fromStdString(s.patch.dump()));
    case Qt::ForegroundRole:
        if (index.column() == FitsColumn)
            return QBrush(s.fitsAfter ? QColor(0x2c, 0xa0, 0x2c) : QColor(0xd6, 0x27, 0x28));
        break;
    case Qt::TextAlignmentRole:
        if (index.column() != ChangeColumn)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        break;
    case PatchRole:
        return QString::fromStdString(s.patch.dump());
    case BytesSavedRole:
        return s.bytesSaved;
    }
    return {};
}

QVariant SavingsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case ChangeColumn:
        return tr("Single change");
    case SavesColumn:
        return tr("Saves");
    case PeakAfterColumn:
        return tr("Peak after");
    case FitsColumn:
        return tr("Fits");
    }
    return {};
}

} // namespace headroom
