// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/fleet.h"
#include "ui/common/chartstyle.h"

#include <QWidget>
#include <vector>

namespace headroom {

// Ranks x time: a row per rank, its allocated bytes over the run as colour (one scale for the whole job;
// reserved where a rank's file records no allocated, DeviceSummary::profile),
// each row shifted so that its first step mark sits on one line, so ranks whose clocks differ still line
// up step for step. Outliers are marked at the row's start; a click selects a rank.
class FleetHeatMap : public QWidget {
    Q_OBJECT
public:
    explicit FleetHeatMap(QWidget* parent = nullptr);
    void setRanks(const std::vector<FleetRank>& ranks);
    void setSelectedRank(int rank);
    void setStyle(const ChartStyle& style);
    QSize sizeHint() const override { return {640, 320}; }
    // The rank drawn at a point of the widget (-1 outside the rows), and the text its tooltip shows.
    int rankAt(QPoint p) const;
    QString describe(QPoint p) const;

signals:
    void rankClicked(int rank);

protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent* e) override;
    bool event(QEvent* e) override;

private:
    struct Row {
        int rank = 0;
        bool outlier = false;
        double startS = 0, endS = 0; // relative to the rank's first step mark
        std::vector<std::int64_t> profile;
        bool allocated = true; // the profile is of allocated bytes, else of reserved
    };
    QRect plotArea() const;
    double xOf(double seconds) const;
    std::vector<Row> m_rows;
    double m_minS = 0, m_maxS = 1;
    std::int64_t m_top = 1, m_bottom = 0; // the colour scale: the job's lowest and highest
    QString m_counter;                    // what the rows draw: "allocated", "reserved" or both
    int m_selected = -1;
    ChartStyle m_style;
};

} // namespace headroom
