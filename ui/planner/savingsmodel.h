// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/serve/estimate.h"
#include "ui/common/chartstyle.h"

#include <QAbstractTableModel>
#include <vector>

namespace headroom {

// "What would make it fit?": every single change that lowers the most-loaded GPU's peak, largest saving
// first. Columns: change, saving, peak after, fits. With a serving engine, which fills its budget
// whatever changes, the columns speak in requests and tokens: change, tokens added, requests at once
// after, fits.
class SavingsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { ChangeColumn, SavesColumn, PeakAfterColumn, FitsColumn, ColumnCount };
    enum Role { PatchRole = Qt::UserRole + 1, BytesSavedRole };

    explicit SavingsModel(QObject* parent = nullptr);
    // The ranked single changes (core rankSavings) computed off the GUI thread for `sc`.
    void setSavings(std::vector<Saving> next, const Scenario& sc);
    void setStyle(const ChartStyle& style);
    const std::vector<Saving>& savings() const { return m_savings; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<Saving> m_savings;
    ChartStyle m_style;
    bool m_serving = false;
};

} // namespace headroom
