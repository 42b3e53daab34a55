// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/sortabletable.h"

#include <QHeaderView>
#include <QTableWidget>

namespace headroom {

NumberItem::NumberItem(const QString& text, double value) : QTableWidgetItem(text), m_value(value) {
    setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
}

bool NumberItem::operator<(const QTableWidgetItem& other) const {
    const auto* o = dynamic_cast<const NumberItem*>(&other);
    return o ? m_value < o->m_value : QTableWidgetItem::operator<(other);
}

void sortOnHeaderClick(QTableWidget* t) {
    t->horizontalHeader()->setSectionsClickable(true);
    QObject::connect(t->horizontalHeader(), &QHeaderView::sectionClicked, t, [t](int column) {
        const bool descending = t->horizontalHeader()->sortIndicatorSection() == column &&
                                t->horizontalHeader()->sortIndicatorOrder() == Qt::AscendingOrder;
        const Qt::SortOrder order = descending ? Qt::DescendingOrder : Qt::AscendingOrder;
        t->sortItems(column, order);
        t->horizontalHeader()->setSortIndicator(column, order);
        t->horizontalHeader()->setSortIndicatorShown(true);
    });
}

} // namespace headroom
