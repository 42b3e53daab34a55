// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/serve/estimate.h"
#include "ui/common/chartstyle.h"

#include <QAbstractTableModel>

namespace headroom {

// The most-loaded GPU's breakdown as a table: category, bytes (in the chosen unit), share of the peak. When
// fine-tuning with adapters, the weights are two rows, the frozen base and what trains, and the gradients
// and optimizer states say they are the adapters'. The allocator's overhead says in its tooltip how much of
// it is a fitted term rather than a modelled tensor (torchtitan's eager blocks).
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
    // A row's category and, for the weights of a fine-tuning plan, which part: 1 the frozen base, 2 what
    // trains (0: the whole category).
    std::pair<Category, int> rowAt(int row) const;
    double valueAt(int row) const;

    Breakdown m_breakdown;
    double m_total = 0;
    double m_frozen = 0;    // > 0: the weights' frozen base (fine-tuning with adapters)
    bool m_serving = false; // a serving engine sized it: its parts are named as its log names them
    double m_eagerExcess = 0; // of the allocator's overhead, torchtitan's eager blocks' fitted term
    ChartStyle m_style;
};

} // namespace headroom
