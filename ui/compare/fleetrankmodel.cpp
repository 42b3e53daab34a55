// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/compare/fleetrankmodel.h"

#include <QColor>
#include <QFileInfo>
#include <algorithm>

namespace headroom {

namespace {

// The category holding the most at the peak, and its bytes (none for a rank read from a summary).
std::pair<int, std::int64_t> largest(const FleetRank& r) {
    if (!r.hasCategories)
        return {-1, 0};
    const auto it = std::max_element(r.byCategory.begin(), r.byCategory.end());
    return {static_cast<int>(it - r.byCategory.begin()), *it};
}

} // namespace

FleetRankModel::FleetRankModel(QObject* parent) : QAbstractTableModel(parent) {}

void FleetRankModel::setRanks(std::vector<FleetRank> ranks) {
    beginResetModel();
    m_ranks = std::move(ranks);
    endResetModel();
}

void FleetRankModel::appendRank(FleetRank rank) {
    const int row = static_cast<int>(m_ranks.size());
    beginInsertRows({}, row, row);
    m_ranks.push_back(std::move(rank));
    endInsertRows();
}

void FleetRankModel::setStyle(const ChartStyle& style) {
    m_style = style;
    if (!m_ranks.empty())
        emit dataChanged(index(0, 0), index(rowCount() - 1, Columns - 1));
}

int FleetRankModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_ranks.size());
}

int FleetRankModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : Columns;
}

QVariant FleetRankModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const FleetRank& r = m_ranks[static_cast<std::size_t>(index.row())];
    const DeviceSummary& s = r.summary;
    const bool read = r.error.empty();
    const auto [category, bytes] = largest(r);
    if (role == Qt::UserRole) { // what the column sorts by
        switch (index.column()) {
        case Rank:
            return r.rank;
        case Stage:
            return r.stage;
        case PeakAllocated: // not recorded (nvidia-smi) sorts below a recorded 0
            return static_cast<qlonglong>(read && s.allocatedRecorded ? s.peakAllocated : -1);
        case Reserved:
            return static_cast<qlonglong>(read ? s.peakReserved : -1);
        case PeakTime:
            return static_cast<qlonglong>(r.peakTimeUs());
        case Fragmentation:
            return r.fragmentationAtPeak().value_or(-1);
        case Ooms:
            return static_cast<qulonglong>(s.ooms());
        case Largest:
            return static_cast<qlonglong>(bytes);
        case Outlier:
            return r.outlier ? 1 : 0;
        default:
            return QFileInfo(QString::fromStdString(r.file)).fileName();
        }
    }
    if (role == Qt::DisplayRole) {
        if (!read && index.column() != Rank && index.column() != File)
            return index.column() == PeakAllocated ? tr("cannot be read") : QVariant();
        switch (index.column()) {
        case Rank:
            return r.rank;
        case Stage:
            return r.stage >= 0 ? QVariant(r.stage) : QVariant(QStringLiteral("–"));
        case PeakAllocated:
            return s.allocatedRecorded ? m_style.format(static_cast<double>(s.peakAllocated))
                                       : tr("not recorded");
        case Reserved:
            return m_style.format(static_cast<double>(s.peakReserved));
        case PeakTime:
            return QStringLiteral("%1%2 s")
                .arg(r.peakTimeUs() >= 0 ? QStringLiteral("+") : QString())
                .arg(static_cast<double>(r.peakTimeUs()) / 1e6, 0, 'f', 2);
        case Fragmentation:
            if (const auto f = r.fragmentationAtPeak())
                return QStringLiteral("%1%").arg(100 * *f, 0, 'f', 1);
            return QStringLiteral("–");
        case Ooms:
            return static_cast<qulonglong>(s.ooms());
        case Largest:
            return category < 0 ? QVariant(QStringLiteral("–"))
                                : QVariant(QStringLiteral("%1 %2").arg(
                                      measuredCategoryLabel(static_cast<MeasuredCategory>(category)),
                                      m_style.format(static_cast<double>(bytes))));
        case Outlier:
            return r.outlier ? QString::fromStdString(r.outlierWhy) : QString();
        default:
            return QFileInfo(QString::fromStdString(r.file)).fileName();
        }
    }
    if (role == Qt::ToolTipRole)
        return QString::fromStdString(!read ? r.error : r.outlier ? r.outlierWhy : r.file);
    if (role == Qt::BackgroundRole && (r.outlier || !read))
        return QColor(m_style.dark ? QColor(110, 40, 40) : QColor(255, 215, 210));
    if (role == Qt::TextAlignmentRole && index.column() != Outlier && index.column() != File &&
        index.column() != Largest)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant FleetRankModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char* const names[Columns] = {
        "Rank",          "Stage", "Peak allocated",   "Reserved", "Peak at",
        "Fragmentation", "OOMs",  "Most at the peak", "Outlier",  "File"};
    return tr(names[section]);
}

} // namespace headroom
