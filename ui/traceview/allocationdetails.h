// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/traceindex.h"
#include "core/trace/traceloadjob.h"

#include <QTreeWidget>

namespace headroom {

class LiveAllocationModel;

// One allocation in full: size, address, stream, lifetime, user_metadata, compile_context and its stack,
// Python and C++ frames innermost first, runs of interpreter frames folded into one expandable row.
// Ctrl+C or the context menu copies a frame as file:line (what an editor opens), or the whole stack.
class AllocationDetails : public QTreeWidget {
    Q_OBJECT
public:
    explicit AllocationDetails(QWidget* parent = nullptr);
    void showAllocation(const LiveAllocationModel& model, const Allocation* allocation);
    QString selectedFileLine() const;
    QString stackText() const;

protected:
    void keyPressEvent(QKeyEvent* e) override;
    void contextMenuEvent(QContextMenuEvent* e) override;

private:
    QTreeWidgetItem* m_stack = nullptr;
};

} // namespace headroom
