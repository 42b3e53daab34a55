// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "ui/common/texttable.h"

#include <string>

class QAbstractItemModel;
class QAbstractItemView;
class QChartView;
class QWidget;

namespace headroom {

// The rows a view shows (a tree's children after their parent, indented), as display text.
TextTable tableFromModel(const QAbstractItemModel& model, const QString& title = {});
// "Copy as Markdown" and "Copy as CSV" in the view's context menu (also Ctrl+Shift+C for Markdown).
void addTableCopyActions(QAbstractItemView* view, const QString& title);
// "Copy Chart as Image" and "Export Chart..." (PNG at a chosen scale, SVG, PDF) in the chart's context
// menu. `name` is the default file name.
void addChartExportActions(QChartView* view, const QString& name);
// The same for a view that paints itself (the trace timeline, the segment map, the measured-vs-estimate bars,
// the allocator what-if plot): what it shows now, at its zoom and range, with its child widgets.
void addWidgetExportActions(QWidget* view, const QString& name, const QString& title);
// What "Export Chart..." writes for such a view: PNG at `scale` pixels per point, SVG or PDF, by suffix.
bool exportWidget(QWidget* view, const QString& title, const std::string& path, double scale,
                  std::string* error);

} // namespace headroom
