// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QImage>
#include <QRectF>
#include <functional>
#include <memory>

#include <string>

class QChart;
class QPainter;

namespace headroom {

// Renders a chart to OUT.png, .svg or .pdf at w x h (device-independent pixels); a PNG has `scale` pixels
// per unit (2 for HiDPI screens, 3-4 for slides). Needs a QApplication; ensureGuiApplication() makes one
// that works without a display. Returns false with *error set; the file is written atomically.
bool exportChart(QChart* chart, const std::string& path, int w, int h, std::string* error, double scale = 2);
// Any painting, to PNG/SVG/PDF by the path's suffix, as exportChart does.
bool exportPainting(const std::function<void(QPainter*, const QRectF&)>& paint, const QString& title,
                    const std::string& path, int w, int h, std::string* error, double scale = 2);
// Draws a chart into a painter's rectangle (the chart is borrowed by a scene for the duration).
void paintChart(QChart* chart, QPainter* painter, const QRectF& target);
// The chart as an image of w x h units at `scale` (the clipboard's "Copy Chart as Image").
QImage chartImage(QChart* chart, int w, int h, double scale = 2);
// Creates a QApplication on the offscreen platform when none exists and no display is set (CLI use).
void ensureGuiApplication();

} // namespace headroom
