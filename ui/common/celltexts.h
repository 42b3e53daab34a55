// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <QAbstractItemModel>
#include <QString>
#include <functional>
#include <vector>

namespace headroom {

// The display text of a table model's first rows, recorded before a change so that the model announces
// only the cells the change altered: every announced cell is repainted, and a slider step moves a few
// numbers, not every cell.
class CellTexts {
public:
    CellTexts(const QAbstractItemModel& model, int rows);
    // Calls changed(row, firstColumn, lastColumn) for each recorded row whose text now differs.
    void forEachChange(const QAbstractItemModel& model,
                       const std::function<void(int row, int first, int last)>& changed) const;

private:
    int m_rows, m_columns;
    std::vector<QString> m_texts;
};

} // namespace headroom
