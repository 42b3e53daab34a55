#include "ui/chartstyle.h"

#include <QAbstractAxis>
#include <QFont>

namespace headroom {

void ChartStyle::apply(QChart* chart) const {
    chart->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
    chart->setAnimationOptions(QChart::NoAnimation); // every setting change must repaint within a frame
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(0);
    QFont title = chart->titleFont();
    title.setPointSizeF(10);
    title.setBold(true);
    chart->setTitleFont(title);
    // Axis labels a little smaller than the UI font: the small charts need the room.
    for (QAbstractAxis* axis : chart->axes()) {
        QFont f = axis->labelsFont();
        f.setPointSizeF(8);
        axis->setLabelsFont(f);
        QFont t = axis->titleFont();
        t.setPointSizeF(8);
        axis->setTitleFont(t);
    }
}

QPen ChartStyle::capacityPen(bool fits) const {
    QPen pen(fits ? (dark ? QColor(0xdd, 0xdd, 0xdd) : QColor(0x2c, 0x2c, 0x2c)) : QColor(0xd6, 0x27, 0x28));
    pen.setWidth(2);
    pen.setStyle(Qt::DashLine);
    return pen;
}

} // namespace headroom
