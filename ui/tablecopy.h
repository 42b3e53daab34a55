#pragma once
#include "ui/report.h"

class QAbstractItemModel;
class QAbstractItemView;
class QChartView;

namespace headroom {

// The rows a view shows (a tree's children after their parent, indented), as display text.
TextTable tableFromModel(const QAbstractItemModel& model, const QString& title = {});
// "Copy as Markdown" and "Copy as CSV" in the view's context menu (also Ctrl+Shift+C for Markdown).
void addTableCopyActions(QAbstractItemView* view, const QString& title);
// "Copy Chart as Image" and "Export Chart..." (PNG at a chosen scale, SVG, PDF) in the chart's context
// menu. `name` is the default file name.
void addChartExportActions(QChartView* view, const QString& name);

} // namespace headroom
