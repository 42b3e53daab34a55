// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/fleet.h"
#include "ui/common/chartstyle.h"

#include <QAbstractTableModel>
#include <vector>

namespace headroom {

// The Fleet tab's rank table: a row per rank file, filled as the files are read and replaced by the job's
// view (stages, outliers) when the last one is in. Sorts by the numbers (Qt::UserRole), not the texts.
class FleetRankModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Rank,
        Stage,
        PeakAllocated,
        Reserved,
        PeakTime,
        Fragmentation,
        Ooms,
        Largest,
        Outlier,
        File,
        Columns
    };
    explicit FleetRankModel(QObject* parent = nullptr);

    void setRanks(std::vector<FleetRank> ranks);
    void appendRank(FleetRank rank);
    const std::vector<FleetRank>& ranks() const { return m_ranks; }
    void setStyle(const ChartStyle& style);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    std::vector<FleetRank> m_ranks;
    ChartStyle m_style;
};

} // namespace headroom
