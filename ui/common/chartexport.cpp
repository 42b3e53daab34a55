// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/chartexport.h"

#include <QApplication>
#include <QBuffer>
#include <QChart>
#include <QFileInfo>
#include <QGraphicsScene>
#include <QImage>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <cmath>
#include <functional>
#include <memory>

namespace headroom {

void ensureGuiApplication() {
    if (QCoreApplication::instance())
        return;
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
        qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    static int argc = 1;
    static char name[] = "headroom-cli";
    static char* argv[] = {name, nullptr};
    static QApplication app(argc, argv); // lives until exit, as Qt requires
}

void paintChart(QChart* chart, QPainter* painter, const QRectF& target) {
    QGraphicsScene scene;
    scene.addItem(chart);
    chart->resize(target.size());
    scene.setSceneRect(QRectF(QPointF(0, 0), target.size()));
    painter->setRenderHint(QPainter::Antialiasing);
    scene.render(painter, target, scene.sceneRect());
    scene.removeItem(chart);
}

QImage chartImage(QChart* chart, int w, int h, double scale) {
    QImage image(static_cast<int>(std::lround(w * scale)), static_cast<int>(std::lround(h * scale)),
                 QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(scale);
    image.fill(Qt::white);
    QPainter painter(&image);
    paintChart(chart, &painter, QRectF(0, 0, w, h));
    return image;
}

bool exportPainting(const std::function<void(QPainter*, const QRectF&)>& paint, const QString& title,
                    const std::string& path, int w, int h, std::string* error, double scale) {
    const QString file = QString::fromStdString(path);
    const QString suffix = QFileInfo(file).suffix().toLower();
    if (w < 100 || h < 100 || w > 20000 || h > 20000) {
        *error = "size " + std::to_string(w) + "x" + std::to_string(h) + " is outside 100..20000";
        return false;
    }
    // Render into memory first, then write atomically: a failed export never leaves a half file.
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    if (!(scale >= 0.5 && scale <= 8)) {
        *error = "scale " + std::to_string(scale) + " is outside 0.5..8";
        return false;
    }
    if (suffix == "png") {
        QImage image(static_cast<int>(std::lround(w * scale)), static_cast<int>(std::lround(h * scale)),
                     QImage::Format_ARGB32_Premultiplied);
        image.setDevicePixelRatio(scale);
        image.fill(Qt::white);
        QPainter painter(&image);
        paint(&painter, QRectF(0, 0, w, h));
        painter.end();
        image.save(&buffer, "PNG");
    } else if (suffix == "svg") {
        QSvgGenerator svg;
        svg.setOutputDevice(&buffer);
        svg.setSize(QSize(w, h));
        svg.setViewBox(QRect(0, 0, w, h));
        svg.setTitle(title);
        QPainter painter(&svg);
        paint(&painter, QRectF(0, 0, w, h));
    } else if (suffix == "pdf") {
        QPdfWriter pdf(&buffer);
        pdf.setPageSize(QPageSize(QSizeF(w, h), QPageSize::Point));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        pdf.setResolution(72);
        pdf.setTitle(title);
        QPainter painter(&pdf);
        paint(&painter, QRectF(0, 0, w, h));
    } else {
        *error = path + ": unsupported output type '" + suffix.toStdString() + "' (png, svg or pdf)";
        return false;
    }
    buffer.close();
    QSaveFile out(file);
    if (!out.open(QIODevice::WriteOnly) || out.write(bytes) != bytes.size() || !out.commit()) {
        *error = path + ": " + out.errorString().toStdString();
        return false;
    }
    return true;
}

bool exportChart(QChart* chart, const std::string& path, int w, int h, std::string* error, double scale) {
    return exportPainting([chart](QPainter* p, const QRectF& r) { paintChart(chart, p, r); }, chart->title(),
                          path, w, h, error, scale);
}

} // namespace headroom
