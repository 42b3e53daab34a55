// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/planner/savingsmodel.h"

#include "ui/common/celltexts.h"

#include <algorithm>
#include <iterator>

#include <QBrush>
#include <QColor>
#include <QLocale>

namespace headroom {

SavingsModel::SavingsModel(QObject* parent) : QAbstractTableModel(parent) {}

void SavingsModel::setSavings(std::vector<Saving> next, const Scenario& sc) {
    const bool serving = sc.mode == Mode::Inference &&
                         (sc.inference.engine == Engine::Vllm || sc.inference.engine == Engine::Sglang);
    if (serving != m_serving) {
        m_serving = serving;
        emit headerDataChanged(Qt::Horizontal, 0, ColumnCount - 1);
    }
    // Rows are updated in place, and only the rows beyond the common count are inserted or removed: a
    // model reset made the view drop and re-measure everything, the slowest steps of a slider drag, and
    // lost the selection and scroll position. Only cells whose text changed are announced.
    const int common = std::min(rowCount(), static_cast<int>(next.size()));
    const CellTexts before(*this, common);
    if (rowCount() > common) {
        beginRemoveRows({}, common, rowCount() - 1);
        m_savings.resize(static_cast<std::size_t>(common));
        endRemoveRows();
    }
    std::vector<Saving> added(next.begin() + common, next.end());
    next.resize(static_cast<std::size_t>(common));
    m_savings = std::move(next);
    before.forEachChange(
        *this, [this](int r, int first, int last) { emit dataChanged(index(r, first), index(r, last)); });
    if (!added.empty()) {
        beginInsertRows({}, common, common + static_cast<int>(added.size()) - 1);
        m_savings.insert(m_savings.end(), std::make_move_iterator(added.begin()),
                         std::make_move_iterator(added.end()));
        endInsertRows();
    }
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
            if (s.serving)
                return QStringLiteral("%1%2")
                    .arg(s.kvTokensGained >= 0 ? QStringLiteral("+") : QString())
                    .arg(QLocale().toString(s.kvTokensGained));
            return m_style.format(s.bytesSaved);
        case PeakAfterColumn:
            if (s.serving)
                return QString::number(s.concurrencyAfter, 'f', 2);
            return m_style.format(s.peakAfter);
        case FitsColumn:
            return s.fitsAfter ? tr("fits") : tr("no");
        }
        break;
    case Qt::ToolTipRole:
        if (s.serving)
            return tr("%1: the KV cache holds %2 tokens (%3), %4 requests at once (+%5). Double-click to "
                      "apply: %6")
                .arg(QString::fromStdString(s.description))
                .arg(QLocale().toString(s.kvTokensAfter))
                .arg(QLocale().toString(s.kvTokensGained))
                .arg(s.concurrencyAfter, 0, 'f', 2)
                .arg(s.concurrencyGained, 0, 'f', 2)
                .arg(QString::fromStdString(s.patch.dump()));
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
        return m_serving ? tr("KV tokens") : tr("Saves");
    case PeakAfterColumn:
        return m_serving ? tr("Requests") : tr("Peak after");
    case FitsColumn:
        return tr("Fits");
    }
    return {};
}

} // namespace headroom
