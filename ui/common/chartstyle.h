// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/io/bytesformat.h"

#include <QChart>
#include <QPen>
#include <QString>
#include <QValueAxis>

namespace headroom {

// Byte units and theme shared by every chart, so that a switch applies everywhere at once.
struct ChartStyle {
    ByteUnit unit = ByteUnit::GiB;
    bool dark = false;
    // Larger type and lines and a high-contrast palette, for a projector, a full-screen meeting or greyscale
    // print: pure background, black (white) text, axes and grid, and a background-coloured outline around
    // every filled segment so that neighbours stay apart when their greys are close.
    bool presentation = false;

    double scale(double bytes) const { return bytes / (unit == ByteUnit::GiB ? 1073741824.0 : 1e9); }
    QString unitName() const { return unit == ByteUnit::GiB ? QStringLiteral("GiB") : QStringLiteral("GB"); }
    QString format(double bytes, int precision = 2) const {
        return QString::number(scale(bytes), 'f', precision) + QLatin1Char(' ') + unitName();
    }
    void apply(QChart* chart) const;     // theme, background, fonts, and applyAxes
    void applyAxes(QChart* chart) const; // the axes' type and colours (again after axes are added)
    QColor background() const;           // what charts are drawn on
    QColor foreground() const;           // text, axes
    // The outline of a filled segment (a bar's category, a timeline band): none outside presentation.
    QPen segmentPen() const;
    // The dashed capacity line every chart draws: red when the plan does not fit.
    QPen capacityPen(bool fits = true) const;
};

// Sets a value axis to [0, a nice number at or above `top`] with ticks on nice steps (1, 2, 2.5, 5 x 10^k),
// touching the axis only when that range changes: every change regenerates and relayouts the labels,
// which setRange followed by applyNiceNumbers did twice on every slider step.
void setNiceRange(QValueAxis* axis, double top);

// The application's palette: Fusion's standard one, or the dark theme's (View > Dark theme).
void applyPalette(bool dark);

} // namespace headroom
