// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <QTableWidgetItem>

class QTableWidget;

namespace headroom {

// A table cell that sorts by its number, not its text.
class NumberItem : public QTableWidgetItem {
public:
    NumberItem(const QString& text, double value);
    bool operator<(const QTableWidgetItem& other) const override;
    double value() const { return m_value; }

private:
    double m_value;
};

// A header click sorts the table by that column, ascending; a second click on it, descending.
void sortOnHeaderClick(QTableWidget* table);

} // namespace headroom
