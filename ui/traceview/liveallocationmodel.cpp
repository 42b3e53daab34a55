// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/traceview/liveallocationmodel.h"

#include "core/trace/frames.h"
#include "ui/common/chartstyle.h"

#include <algorithm>
#include <map>

namespace headroom {

LiveAllocationModel::LiveAllocationModel(QObject* parent) : QAbstractItemModel(parent) {}

void LiveAllocationModel::setAllocations(std::shared_ptr<const LoadedTrace> trace, std::size_t device,
                                         std::vector<Allocation> allocations, double origin,
                                         double secondsPerUnit, std::vector<MeasuredCategory> categories) {
    beginResetModel();
    m_trace = std::move(trace);
    m_device = device;
    // Largest first, the categories kept beside their allocations.
    std::vector<std::size_t> order(allocations.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return allocations[a].size > allocations[b].size; });
    m_allocations.clear();
    m_categories.clear();
    for (std::size_t i : order) {
        m_allocations.push_back(allocations[i]);
        if (categories.size() == allocations.size())
            m_categories.push_back(categories[i]);
    }
    m_origin = origin;
    m_secondsPerUnit = secondsPerUnit;
    regroup();
    endResetModel();
}

MeasuredCategory LiveAllocationModel::category(std::size_t allocation) const {
    return allocation < m_categories.size() ? m_categories[allocation] : MeasuredCategory::Unattributed;
}

void LiveAllocationModel::setGrouping(Grouping grouping) {
    if (grouping == m_grouping)
        return;
    beginResetModel();
    m_grouping = grouping;
    regroup();
    endResetModel();
}

QString LiveAllocationModel::whereText(const Allocation& a) const {
    if (!m_trace || a.stack == 0)
        return tr("(no stack recorded)");
    const Trace& t = m_trace->trace;
    const std::size_t user = topUserFrame(t, a.stack);
    return user == std::string::npos ? tr("(no stack recorded)")
                                     : QString::fromStdString(frameText(t, t.stacks[a.stack][user]));
}

void LiveAllocationModel::regroup() {
    m_groups.clear();
    if (flat() || !m_trace)
        return;
    std::map<std::uint64_t, std::size_t> byKey; // stack id, or the top frame's identity
    for (std::uint32_t i = 0; i < m_allocations.size(); ++i) {
        const Allocation& a = m_allocations[i];
        std::uint64_t key = a.stack;
        if (m_grouping == Grouping::Category)
            key = static_cast<std::uint64_t>(category(i));
        else if (m_grouping == Grouping::TopFrame && a.stack != 0) {
            const std::size_t user = topUserFrame(m_trace->trace, a.stack);
            const Frame& f = m_trace->trace.stacks[a.stack][user];
            key = (std::uint64_t(f.filename) << 40) ^ (std::uint64_t(f.name) << 20) ^
                  static_cast<std::uint64_t>(f.line);
        }
        auto [it, added] = byKey.emplace(key, m_groups.size());
        if (added) {
            Group g;
            g.label =
                m_grouping == Grouping::Category ? tr(measuredCategoryLabel(category(i))) : whereText(a);
            if (m_grouping == Grouping::Stack && a.stack != 0)
                g.label = tr("stack #%1 · %2").arg(a.stack).arg(g.label);
            m_groups.push_back(std::move(g));
        }
        Group& g = m_groups[it->second];
        g.total += a.size;
        g.members.push_back(i);
    }
    std::stable_sort(m_groups.begin(), m_groups.end(),
                     [](const Group& a, const Group& b) { return a.total > b.total; });
}

std::size_t LiveAllocationModel::rowOf(const QModelIndex& index) const {
    if (flat() || index.internalId() == 0)
        return static_cast<std::size_t>(index.row());
    return m_groups[index.internalId() - 1].members[static_cast<std::size_t>(index.row())];
}

const Allocation* LiveAllocationModel::allocation(const QModelIndex& index) const {
    if (!index.isValid())
        return nullptr;
    if (flat())
        return index.row() < static_cast<int>(m_allocations.size())
                   ? &m_allocations[static_cast<std::size_t>(index.row())]
                   : nullptr;
    if (index.internalId() == 0)
        return nullptr;
    const Group& g = m_groups[index.internalId() - 1];
    return &m_allocations[g.members[static_cast<std::size_t>(index.row())]];
}

QModelIndex LiveAllocationModel::index(int row, int column, const QModelIndex& parent) const {
    if (row < 0 || column < 0 || column >= ColumnCount || row >= rowCount(parent))
        return {};
    if (!parent.isValid())
        return createIndex(row, column, quintptr(0));
    return createIndex(row, column, quintptr(parent.row() + 1));
}

QModelIndex LiveAllocationModel::parent(const QModelIndex& child) const {
    if (!child.isValid() || child.internalId() == 0)
        return {};
    return createIndex(static_cast<int>(child.internalId() - 1), 0, quintptr(0));
}

int LiveAllocationModel::rowCount(const QModelIndex& parent) const {
    if (!parent.isValid())
        return static_cast<int>(flat() ? m_allocations.size() : m_groups.size());
    if (flat() || parent.internalId() != 0 || parent.column() != 0)
        return 0;
    return static_cast<int>(m_groups[static_cast<std::size_t>(parent.row())].members.size());
}

int LiveAllocationModel::columnCount(const QModelIndex&) const {
    return ColumnCount;
}

QString LiveAllocationModel::eventText(std::size_t event) const {
    if (!m_trace)
        return {};
    const DeviceTrace& d = m_trace->trace.devices.at(m_device);
    if (event == kBeforeFirstEvent)
        return tr("(before)");
    if (event >= d.entries())
        return tr("(live)");
    if (m_secondsPerUnit > 0)
        return QString::number((static_cast<double>(d.time[event]) - m_origin) * m_secondsPerUnit, 'f', 6) +
               QStringLiteral(" s");
    return tr("event %1").arg(event);
}

QVariant LiveAllocationModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid())
        return {};
    const Allocation* a = allocation(index);
    const int col = index.column();
    if (!a) { // a group row
        const Group& g = m_groups[static_cast<std::size_t>(index.row())];
        if (role == Qt::DisplayRole) {
            switch (col) {
            case Where:
                return g.label;
            case Size:
                return ChartStyle().format(static_cast<double>(g.total), 3);
            case Count:
                return static_cast<qulonglong>(g.members.size());
            default:
                return {};
            }
        }
        if (role == SortRole) {
            switch (col) {
            case Where:
                return g.label;
            case Size:
                return static_cast<qlonglong>(g.total);
            case Count:
                return static_cast<qulonglong>(g.members.size());
            default:
                return {};
            }
        }
        if (role == Qt::TextAlignmentRole && col != Where)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    }
    if (role == Qt::DisplayRole) {
        switch (col) {
        case Where:
            return whereText(*a);
        case What:
            return m_categories.empty() ? QVariant() : tr(measuredCategoryLabel(category(rowOf(index))));
        case Size:
            return ChartStyle().format(static_cast<double>(a->size), 3);
        case Count:
            return 1;
        case Address:
            return QStringLiteral("0x") + QString::number(a->addr, 16);
        case Stream:
            return static_cast<qlonglong>(a->stream);
        case Allocated:
            return eventText(a->start);
        case Freed:
            return eventText(a->end);
        default:
            return {};
        }
    }
    if (role == SortRole) {
        switch (col) {
        case Where:
            return whereText(*a);
        case What:
            return m_categories.empty() ? QVariant() : QVariant(static_cast<int>(category(rowOf(index))));
        case Size:
            return static_cast<qlonglong>(a->size);
        case Count:
            return 1;
        case Address:
            return static_cast<qulonglong>(a->addr);
        case Stream:
            return static_cast<qlonglong>(a->stream);
        case Allocated:
            return a->start == kBeforeFirstEvent ? -1.0 : static_cast<double>(a->start);
        case Freed:
            return static_cast<double>(a->end);
        default:
            return {};
        }
    }
    if (role == Qt::TextAlignmentRole && col != Where)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    return {};
}

QVariant LiveAllocationModel::headerData(int section, Qt::Orientation o, int role) const {
    if (o != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char* names[] = {QT_TR_NOOP("Where (top user frame)"),
                                  QT_TR_NOOP("Category"),
                                  QT_TR_NOOP("Size"),
                                  QT_TR_NOOP("Count"),
                                  QT_TR_NOOP("Address"),
                                  QT_TR_NOOP("Stream"),
                                  QT_TR_NOOP("Allocated"),
                                  QT_TR_NOOP("Freed")};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

bool LiveAllocationModel::matches(const QModelIndex& index, const QString& needle) const {
    if (needle.isEmpty())
        return true;
    const Allocation* a = allocation(index);
    if (!a)
        return m_groups[static_cast<std::size_t>(index.row())].label.contains(needle, Qt::CaseInsensitive);
    QString hex = needle.toLower();
    if (hex.startsWith(QLatin1String("0x")))
        hex = hex.mid(2);
    if (!hex.isEmpty() && QString::number(a->addr, 16).contains(hex))
        return true;
    if (!m_trace || a->stack == 0)
        return false;
    const std::string n = needle.toLower().toStdString();
    for (const Frame& f : m_trace->trace.stacks[a->stack]) {
        for (std::uint32_t s : {f.name, f.filename}) {
            std::string text = m_trace->trace.strings[s];
            std::transform(text.begin(), text.end(), text.begin(),
                           [](unsigned char c) { return std::tolower(c); });
            if (text.find(n) != std::string::npos)
                return true;
        }
    }
    return false;
}

LiveAllocationFilter::LiveAllocationFilter(QObject* parent) : QSortFilterProxyModel(parent) {
    setSortRole(LiveAllocationModel::SortRole);
    setRecursiveFilteringEnabled(true);
}

void LiveAllocationFilter::setNeedle(const QString& needle) {
    m_needle = needle.trimmed();
    invalidateFilter();
}

bool LiveAllocationFilter::filterAcceptsRow(int row, const QModelIndex& parent) const {
    auto* model = qobject_cast<LiveAllocationModel*>(sourceModel());
    return !model || model->matches(model->index(row, 0, parent), m_needle);
}

} // namespace headroom
