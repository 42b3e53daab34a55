// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/serve/estimate.h"
#include "ui/common/chartstyle.h"

#include <QAbstractTableModel>

namespace headroom {

// The most-loaded GPU's breakdown as a table: category, bytes (in the chosen unit), share of the peak.
class BreakdownModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { CategoryColumn, SizeColumn, ShareColumn, ColumnCount };
    explicit BreakdownModel(QObject* parent = nullptr);
    void setEstimate(const Estimate& est);
    void setStyle(const ChartStyle& style);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    Breakdown m_breakdown;
    double m_total = 0;
    ChartStyle m_style;
};

} // namespace headroom
