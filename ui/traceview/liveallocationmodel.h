// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/attribution.h"
#include "core/trace/traceindex.h"
#include "core/trace/traceloadjob.h"

#include <QAbstractItemModel>
#include <QSortFilterProxyModel>
#include <memory>

namespace headroom {

// The allocations live at a moment (or during a range), flat or grouped by their full stack or by their
// top user frame, largest groups first. Every cell has a sort value under SortRole.
class LiveAllocationModel : public QAbstractItemModel {
    Q_OBJECT
public:
    enum class Grouping { None, Stack, TopFrame, Category };
    enum Column { Where, What, Size, Count, Address, Stream, Allocated, Freed, ColumnCount };
    static constexpr int SortRole = Qt::UserRole;

    explicit LiveAllocationModel(QObject* parent = nullptr);

    // `secondsPerUnit` > 0: the device's time column is real time, shown relative to `origin`.
    // `categories` (optional) holds each allocation's measured category, in the same order.
    void setAllocations(std::shared_ptr<const LoadedTrace> trace, std::size_t device,
                        std::vector<Allocation> allocations, double origin, double secondsPerUnit,
                        std::vector<MeasuredCategory> categories = {});
    MeasuredCategory category(std::size_t allocation) const;
    void setGrouping(Grouping grouping);
    Grouping grouping() const { return m_grouping; }
    // The allocation at a row; nullptr for a group row.
    const Allocation* allocation(const QModelIndex& index) const;
    const std::vector<Allocation>& allocations() const { return m_allocations; }
    const LoadedTrace* trace() const { return m_trace.get(); }
    std::size_t device() const { return m_device; }
    // Search: an address (hex, with or without 0x) or any frame's text, case-insensitive.
    bool matches(const QModelIndex& index, const QString& needle) const;
    QString eventText(std::size_t event) const;                // "1.234 s" or "event 17"
    double secondsPerUnit() const { return m_secondsPerUnit; } // 0: no real time

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation o, int role) const override;

private:
    struct Group {
        QString label;
        std::int64_t total = 0;
        std::vector<std::uint32_t> members; // into m_allocations, largest first
    };
    void regroup();
    std::size_t rowOf(const QModelIndex& allocationIndex) const; // index into m_allocations
    QString whereText(const Allocation& a) const;
    bool flat() const { return m_grouping == Grouping::None; }

    std::shared_ptr<const LoadedTrace> m_trace;
    std::size_t m_device = 0;
    std::vector<Allocation> m_allocations;
    std::vector<MeasuredCategory> m_categories; // parallel to m_allocations (empty: none known)
    std::vector<Group> m_groups;
    Grouping m_grouping = Grouping::TopFrame;
    double m_origin = 0, m_secondsPerUnit = 0;
};

// Sorting by SortRole and searching with LiveAllocationModel::matches (a group stays when a member matches).
class LiveAllocationFilter : public QSortFilterProxyModel {
    Q_OBJECT
public:
    explicit LiveAllocationFilter(QObject* parent = nullptr);
    void setNeedle(const QString& needle);

protected:
    bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

private:
    QString m_needle;
};

} // namespace headroom
