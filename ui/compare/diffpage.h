// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/tracediff.h"
#include "core/plan/scenario.h"
#include "core/trace/traceloadjob.h"
#include "ui/common/chartstyle.h"

#include <QWidget>
#include <memory>
#include <optional>

class QLabel;
class QTableWidget;

namespace headroom {

class CategoryBars;

// Two recorded runs side by side at their allocated peaks (headroom-cli diff in the window): the totals,
// the categories as two stacked bars with the difference, the change by top user frame, and the
// allocations present in only one run.
class DiffPage : public QWidget {
    Q_OBJECT
public:
    DiffPage(std::shared_ptr<const LoadedTrace> a, std::shared_ptr<const LoadedTrace> b,
             const Scenario* scenario = nullptr, QWidget* parent = nullptr);
    const TraceDiff& diff() const { return m_diff; }
    QString title() const;
    QTableWidget* framesTable() const { return m_frames; }
    QTableWidget* unmatchedTable() const { return m_unmatched; }
    CategoryBars* categoryBars() const { return m_bars; }
    void setStyle(const ChartStyle& style);

private:
    void fill(QTableWidget* table, const std::vector<FrameDelta>& rows);
    std::shared_ptr<const LoadedTrace> m_a, m_b;
    TraceDiff m_diff;
    ChartStyle m_style;
    QLabel* m_summary = nullptr;
    CategoryBars* m_bars = nullptr;
    QTableWidget* m_frames = nullptr;
    QTableWidget* m_unmatched = nullptr;
};

} // namespace headroom
