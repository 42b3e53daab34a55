// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/chartstyle.h"

#include <QStyleFactory>

#include <QStyle>

#include <QPalette>

#include <QApplication>

#include <algorithm>
#include <cmath>

#include <QAbstractAxis>
#include <QFont>
#include <QLegend>

namespace headroom {

void ChartStyle::apply(QChart* chart) const {
    const QChart::ChartTheme theme = dark ? QChart::ChartThemeDark : QChart::ChartThemeLight;
    // setTheme does nothing when the theme is unchanged, which would leave presentation's colours behind.
    if (chart->property("headroomPresentation").toBool() && !presentation && chart->theme() == theme)
        chart->setTheme(dark ? QChart::ChartThemeLight : QChart::ChartThemeDark);
    chart->setProperty("headroomPresentation", presentation);
    chart->setTheme(theme);
    chart->setAnimationOptions(QChart::NoAnimation); // every setting change must repaint within a frame
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(0);
    if (presentation) {
        // Qt's themes draw labels and grid in mid greys; a projector washes those out.
        const QColor fg = foreground(), bg = background();
        chart->setBackgroundBrush(bg);
        chart->setPlotAreaBackgroundVisible(false);
        chart->setTitleBrush(fg);
        chart->legend()->setLabelColor(fg);
    }
    QFont title = chart->titleFont();
    const double grow = presentation ? 1.6 : 1.0;
    title.setPointSizeF(10 * grow);
    title.setBold(true);
    chart->setTitleFont(title);
    QFont legend = chart->legend()->font();
    legend.setPointSizeF(9 * grow);
    chart->legend()->setFont(legend);
    applyAxes(chart);
}

void ChartStyle::applyAxes(QChart* chart) const {
    const double grow = presentation ? 1.6 : 1.0;
    for (QAbstractAxis* axis : chart->axes()) {
        if (presentation) {
            const QColor fg = foreground();
            axis->setLabelsColor(fg);
            axis->setTitleBrush(fg);
            axis->setLinePen(QPen(fg, 2));
            QColor grid = fg;
            grid.setAlphaF(0.45);
            axis->setGridLinePen(QPen(grid, 1));
        }
        // Axis labels a little smaller than the UI font: the small charts need the room.
        QFont f = axis->labelsFont();
        f.setPointSizeF(8 * grow);
        axis->setLabelsFont(f);
        QFont t = axis->titleFont();
        t.setPointSizeF(8 * grow);
        axis->setTitleFont(t);
    }
}

QColor ChartStyle::background() const {
    if (presentation)
        return dark ? Qt::black : Qt::white;
    return dark ? QColor(0x28, 0x28, 0x28) : Qt::white;
}

QColor ChartStyle::foreground() const {
    if (presentation)
        return dark ? Qt::white : Qt::black;
    return dark ? QColor(0xdd, 0xdd, 0xdd) : QColor(0x2c, 0x2c, 0x2c);
}

QPen ChartStyle::segmentPen() const {
    if (!presentation)
        return Qt::NoPen;
    QPen pen(background(), 1.5);
    pen.setJoinStyle(Qt::MiterJoin);
    return pen;
}

QPen ChartStyle::capacityPen(bool fits) const {
    QPen pen(fits ? foreground() : QColor(0xd6, 0x27, 0x28));
    pen.setWidth(presentation ? 3 : 2);
    pen.setStyle(Qt::DashLine);
    return pen;
}

void applyPalette(bool dark) {
    qApp->setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    if (!dark) {
        qApp->setPalette(qApp->style()->standardPalette());
        return;
    }
    QPalette p;
    const QColor window(0x2b, 0x2b, 0x2e), base(0x1e, 0x1e, 0x21), text(0xe8, 0xe8, 0xe8);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::Highlight, QColor(0x2a, 0x82, 0xda));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::PlaceholderText, QColor(0x9a, 0x9a, 0x9a)); // the default was dark on dark
    p.setColor(QPalette::Link, QColor(0x6a, 0xb0, 0xf3));
    qApp->setPalette(p);
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
