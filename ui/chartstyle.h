#pragma once
#include "core/io/bytesformat.h"

#include <QChart>
#include <QPen>
#include <QString>

namespace headroom {

// Byte units and theme shared by every chart, so that a switch applies everywhere at once.
struct ChartStyle {
    ByteUnit unit = ByteUnit::GiB;
    bool dark = false;

    double scale(double bytes) const { return bytes / (unit == ByteUnit::GiB ? 1073741824.0 : 1e9); }
    QString unitName() const { return unit == ByteUnit::GiB ? QStringLiteral("GiB") : QStringLiteral("GB"); }
    QString format(double bytes, int precision = 2) const {
        return QString::number(scale(bytes), 'f', precision) + QLatin1Char(' ') + unitName();
    }
    void apply(QChart* chart) const; // theme, background, fonts
    // The dashed capacity line every chart draws: red when the plan does not fit.
    QPen capacityPen(bool fits = true) const;
};

} // namespace headroom
