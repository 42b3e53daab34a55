// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/regions.h"
#include "ui/common/chartstyle.h"

#include <QWidget>
#include <vector>

class QLabel;
class QTableWidget;

namespace headroom {

// Memory by region: one row per annotated region of each lane (record_function names, ProfilerStep#N), with
// the peak inside it, how far that rose over where the region started, the bytes allocated inside and what
// of them is still live at its end. Sortable by any column; choosing a row selects the region's stretch.
class RegionTable : public QWidget {
    Q_OBJECT
public:
    struct Lane {
        QString label;
        std::vector<RegionMemory> regions;
        double secondsPerUnit = 1e-6;
        double origin = 0; // the time shown as 0 s
    };
    explicit RegionTable(QWidget* parent = nullptr);
    void setLanes(std::vector<Lane> lanes);
    void setStyle(const ChartStyle& style);
    QTableWidget* table() const { return m_table; }
    enum Column { Region, LaneColumn, Start, Duration, Peak, Rise, AllocatedInside, Allocations, StillLive };

signals:
    // The region of a row: its lane and index in that lane's list.
    void regionChosen(int lane, int region);

private:
    void fill();

    std::vector<Lane> m_lanes;
    ChartStyle m_style;
    QLabel* m_note = nullptr;
    QTableWidget* m_table = nullptr;
};

} // namespace headroom
