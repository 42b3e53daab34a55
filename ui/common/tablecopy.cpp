// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/tablecopy.h"

#include "ui/common/chartexport.h"

#include <QAbstractItemView>
#include <QAction>
#include <QApplication>
#include <QChartView>
#include <QClipboard>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <algorithm>
#include <cmath>
#include <functional>

namespace headroom {

namespace {
void addRows(const QAbstractItemModel& m, const QModelIndex& parent, int depth, TextTable& t) {
    for (int r = 0; r < m.rowCount(parent); ++r) {
        QStringList row;
        for (int c = 0; c < m.columnCount(parent); ++c) {
            QString text = m.index(r, c, parent).data(Qt::DisplayRole).toString();
            if (c == 0 && depth > 0)
                text = QString(depth * 2, QLatin1Char(' ')) + text; // a child under its group
            row << text;
        }
        t.rows.push_back(row);
        const QModelIndex child = m.index(r, 0, parent);
        if (m.hasChildren(child))
            addRows(m, child, depth + 1, t);
    }
}
} // namespace

TextTable tableFromModel(const QAbstractItemModel& model, const QString& title) {
    TextTable t;
    t.title = title;
    for (int c = 0; c < model.columnCount(); ++c)
        t.header << model.headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
    addRows(model, {}, 0, t);
    return t;
}

void addTableCopyActions(QAbstractItemView* view, const QString& title) {
    view->setContextMenuPolicy(Qt::ActionsContextMenu);
    auto* markdown = new QAction(QObject::tr("Copy Table as Markdown"), view);
    markdown->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    markdown->setShortcutContext(Qt::WidgetShortcut);
    auto* csv = new QAction(QObject::tr("Copy Table as CSV"), view);
    QObject::connect(markdown, &QAction::triggered, view, [view, title] {
        QApplication::clipboard()->setText(tableToMarkdown(tableFromModel(*view->model(), title)));
    });
    QObject::connect(csv, &QAction::triggered, view, [view, title] {
        auto* data = new QMimeData;
        const QString text = tableToCsv(tableFromModel(*view->model(), title));
        data->setText(text);
        data->setData(QStringLiteral("text/csv"), text.toUtf8());
        QApplication::clipboard()->setMimeData(data);
    });
    view->addAction(markdown);
    view->addAction(csv);
}

namespace {
using Paint = std::function<void(QPainter*, const QRectF&)>;

// "Copy Chart as Image" and "Export Chart..." for anything that can paint itself into a rectangle.
void addExportActions(QWidget* view, const QString& name, const std::function<QString()>& title,
                      const Paint& paint) {
    view->setContextMenuPolicy(Qt::ActionsContextMenu);
    auto* copy = new QAction(QObject::tr("Copy Chart as Image"), view);
    auto* save = new QAction(QObject::tr("Export Chart..."), view);
    QObject::connect(copy, &QAction::triggered, view, [view, paint] {
        const QSize s = view->size();
        // Twice the pixels for HiDPI, but at most 64 megapixels: a segment map of thousands of segments is
        // tens of thousands of units tall.
        const double area = std::max(1.0, double(s.width()) * s.height());
        const double scale = std::min(2.0, std::sqrt(64e6 / area));
        QImage image(std::max(1, int(s.width() * scale)), std::max(1, int(s.height() * scale)),
                     QImage::Format_ARGB32_Premultiplied);
        image.setDevicePixelRatio(scale);
        image.fill(Qt::white);
        QPainter painter(&image);
        paint(&painter, QRectF(QPointF(0, 0), s));
        painter.end();
        QApplication::clipboard()->setImage(image);
    });
    QObject::connect(save, &QAction::triggered, view, [view, name, title, paint] {
        const QString path = QFileDialog::getSaveFileName(
            view, QObject::tr("Export Chart"), name + QStringLiteral(".png"),
            QObject::tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"));
        if (path.isEmpty())
            return;
        double scale = 2;
        if (QFileInfo(path).suffix().compare(QLatin1String("png"), Qt::CaseInsensitive) == 0) {
            bool ok = false;
            scale = QInputDialog::getDouble(
                view, QObject::tr("PNG scale"),
                QObject::tr("Pixels per point (2 for HiDPI screens, 3-4 for slides):"), 2, 1, 8, 1, &ok);
            if (!ok)
                return;
        }
        std::string error;
        const QSize s = view->size();
        if (!exportPainting(paint, title(), path.toStdString(), s.width(), s.height(), &error, scale))
            QMessageBox::warning(view, QObject::tr("Cannot export the chart"), QString::fromStdString(error));
    });
    view->addAction(copy);
    view->addAction(save);
}
} // namespace

void addChartExportActions(QChartView* view, const QString& name) {
    addExportActions(
        view, name, [view] { return view->chart()->title(); },
        [view](QPainter* p, const QRectF& r) { paintChart(view->chart(), p, r); });
}

namespace {
// The widget paints itself (and its children) through the export's painter, so an SVG or a PDF keeps its
// lines and text as vectors.
Paint widgetPainter(QWidget* view) {
    return [view](QPainter* p, const QRectF& r) {
        p->save();
        p->translate(r.topLeft());
        p->scale(r.width() / std::max(1, view->width()), r.height() / std::max(1, view->height()));
        view->render(p, QPoint(), QRegion(), QWidget::DrawWindowBackground | QWidget::DrawChildren);
        p->restore();
    };
}
} // namespace

void addWidgetExportActions(QWidget* view, const QString& name, const QString& title) {
    addExportActions(
        view, name, [title] { return title; }, widgetPainter(view));
}

bool exportWidget(QWidget* view, const QString& title, const std::string& path, double scale,
                  std::string* error) {
    return exportPainting(widgetPainter(view), title, path, view->width(), view->height(), error, scale);
}

} // namespace headroom
