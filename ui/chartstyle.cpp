#include "ui/chartstyle.h"

#include <algorithm>
#include <cmath>

#include <QAbstractAxis>
#include <QFont>
#include <QLegend>

namespace headroom {

void ChartStyle::apply(QChart* chart) const {
    chart->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
    chart->setAnimationOptions(QChart::NoAnimation); // every setting change must repaint within a frame
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(0);
    QFont title = chart->titleFont();
    const double grow = presentation ? 1.6 : 1.0;
    title.setPointSizeF(10 * grow);
    title.setBold(true);
    chart->setTitleFont(title);
    QFont legend = chart->legend()->font();
    legend.setPointSizeF(9 * grow);
    chart->legend()->setFont(legend);
    // Axis labels a little smaller than the UI font: the small charts need the room.
    for (QAbstractAxis* axis : chart->axes()) {
        QFont f = axis->labelsFont();
        f.setPointSizeF(8 * grow);
        axis->setLabelsFont(f);
        QFont t = axis->titleFont();
        t.setPointSizeF(8 * grow);
        axis->setTitleFont(t);
    }
}

QPen ChartStyle::capacityPen(bool fits) const {
    QPen pen(fits ? (dark ? QColor(0xdd, 0xdd, 0xdd) : QColor(0x2c, 0x2c, 0x2c)) : QColor(0xd6, 0x27, 0x28));
    pen.setWidth(presentation ? 3 : 2);
    pen.setStyle(Qt::DashLine);
    return pen;
}

} // namespace headroom

namespace headroom {

void setNiceRange(QValueAxis* axis, double top) {
    top = std::max(top, 1.0);
    const double rough = top / 4; // about five ticks
    const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
    double step = magnitude * 10;
    for (double m : {1.0, 2.0, 2.5, 5.0})
        if (rough <= m * magnitude) {
            step = m * magnitude;
            break;
        }
    const double max = std::ceil(top / step) * step;
    const int ticks = static_cast<int>(std::lround(max / step)) + 1;
    if (axis->min() != 0 || axis->max() != max)
        axis->setRange(0, max);
    if (axis->tickCount() != ticks)
        axis->setTickCount(ticks);
}

} // namespace headroom
