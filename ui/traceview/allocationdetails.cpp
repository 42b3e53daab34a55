// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/traceview/allocationdetails.h"

#include "core/trace/frames.h"
#include "ui/common/chartstyle.h"
#include "ui/traceview/liveallocationmodel.h"

#include <QApplication>
#include <QClipboard>
#include <QContextMenuEvent>
#include <QHeaderView>
#include <QKeyEvent>
#include <QMenu>
#include <climits>

namespace headroom {

namespace {
constexpr int FileLineRole = Qt::UserRole + 1;
}

AllocationDetails::AllocationDetails(QWidget* parent) : QTreeWidget(parent) {
    setColumnCount(2);
    setHeaderLabels({tr("Allocation"), tr("")});
    header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    header()->setStretchLastSection(true);
    setUniformRowHeights(true);
    setSelectionMode(QAbstractItemView::SingleSelection);
}

void AllocationDetails::showAllocation(const LiveAllocationModel& model, const Allocation* a) {
    clear();
    m_stack = nullptr;
    if (!a || !model.trace()) {
        addTopLevelItem(new QTreeWidgetItem({tr("Select an allocation in the table")}));
        return;
    }
    const Trace& t = model.trace()->trace;
    const DeviceTrace& d = t.devices.at(model.device());
    auto row = [&](const QString& k, const QString& v) { addTopLevelItem(new QTreeWidgetItem({k, v})); };
    row(tr("Size"),
        tr("%1 (%2 bytes)").arg(ChartStyle().format(static_cast<double>(a->size), 3)).arg(a->size));
    row(tr("Address"), QStringLiteral("0x") + QString::number(a->addr, 16));
    row(tr("Stream"), QString::number(a->stream));
    row(tr("Allocated"), a->start == kBeforeFirstEvent
                             ? tr("before the trace began")
                             : model.eventText(a->start) + tr("  (event %1)").arg(a->start));
    row(tr("Freed"), a->end >= d.entries() ? tr("still live when the trace ended")
                                           : model.eventText(a->end) + tr("  (event %1)").arg(a->end));
    if (a->start != kBeforeFirstEvent && a->end < d.entries()) {
        QString lifetime =
            tr("%n event(s)", nullptr, static_cast<int>(std::min<std::size_t>(a->end - a->start, INT_MAX)));
        if (model.secondsPerUnit() > 0)
            lifetime += tr(", %1 ms").arg(static_cast<double>(d.time[a->end] - d.time[a->start]) *
                                              model.secondsPerUnit() * 1e3,
                                          0, 'f', 3);
        row(tr("Lifetime"), lifetime);
    }
    if (a->alloc != kBeforeFirstEvent) {
        const std::uint32_t meta = noteAt(d.userMetadata, a->alloc), ctx = noteAt(d.compileContext, a->alloc);
        row(tr("user_metadata"), meta ? QString::fromStdString(t.strings[meta]) : tr("(none)"));
        row(tr("compile_context"), ctx ? QString::fromStdString(t.strings[ctx]) : tr("(none)"));
    }
    // An allocation the trace never saw allocated takes the stack of its free_requested entry, which
    // PyTorch records where the tensor was released, not where it was made.
    const bool freeStack = a->start == kBeforeFirstEvent && a->end < d.entries();
    m_stack = new QTreeWidgetItem(
        {freeStack ? tr("Stack (where it was freed)") : tr("Stack"),
         a->stack ? tr("%1 frames, innermost first").arg(t.stacks[a->stack].size()) : tr("not recorded")});
    addTopLevelItem(m_stack);
    if (a->stack) {
        const auto& frames = t.stacks[a->stack];
        const std::size_t user = topUserFrame(t, a->stack);
        QTreeWidgetItem* fold = nullptr;
        for (std::size_t i = 0; i < frames.size(); ++i) {
            const Frame& f = frames[i];
            const bool noise = isInterpreterFrame(t, f);
            auto* item = new QTreeWidgetItem(
                {QString::fromStdString(t.strings[f.name]), QString::fromStdString(fileLine(t, f))});
            item->setData(0, FileLineRole, QString::fromStdString(fileLine(t, f)));
            item->setToolTip(0, QString::fromStdString(frameText(t, f)));
            if (isPythonFrame(t, f)) {
                QFont bold = item->font(0);
                bold.setBold(i == user);
                item->setFont(0, bold);
            } else {
                item->setForeground(0, palette().placeholderText());
            }
            if (noise) {
                if (!fold) {
                    fold = new QTreeWidgetItem(m_stack);
                    fold->setForeground(0, palette().placeholderText());
                }
                fold->addChild(item);
                fold->setText(0, tr("… %n interpreter frame(s)", nullptr, fold->childCount()));
                continue;
            }
            fold = nullptr;
            m_stack->addChild(item);
        }
        m_stack->setExpanded(true);
    }
}

QString AllocationDetails::selectedFileLine() const {
    const auto items = selectedItems();
    return items.isEmpty() ? QString() : items.first()->data(0, FileLineRole).toString();
}

QString AllocationDetails::stackText() const {
    QStringList lines;
    if (!m_stack)
        return {};
    std::function<void(QTreeWidgetItem*)> walk = [&](QTreeWidgetItem* it) {
        for (int i = 0; i < it->childCount(); ++i) {
            QTreeWidgetItem* c = it->child(i);
            if (c->childCount())
                walk(c);
            else
                lines << c->text(0) + QStringLiteral("  ") + c->text(1);
        }
    };
    walk(m_stack);
    return lines.join(QLatin1Char('\n'));
}

void AllocationDetails::keyPressEvent(QKeyEvent* e) {
    if (e->matches(QKeySequence::Copy)) {
        const QString fl = selectedFileLine();
        QApplication::clipboard()->setText(fl.isEmpty() && currentItem() ? currentItem()->text(1) : fl);
        return;
    }
    QTreeWidget::keyPressEvent(e);
}

void AllocationDetails::contextMenuEvent(QContextMenuEvent* e) {
    QMenu menu(this);
    const QString fl = selectedFileLine();
    QAction* copyFrame = menu.addAction(tr("Copy file:line"));
    copyFrame->setEnabled(!fl.isEmpty());
    QAction* copyStack = menu.addAction(tr("Copy stack"));
    copyStack->setEnabled(m_stack != nullptr);
    QAction* chosen = menu.exec(e->globalPos());
    if (chosen == copyFrame)
        QApplication::clipboard()->setText(fl);
    else if (chosen == copyStack)
        QApplication::clipboard()->setText(stackText());
}

} // namespace headroom
