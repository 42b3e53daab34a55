// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/fleet.h"
#include "ui/common/chartstyle.h"

#include <QWidget>
#include <vector>

namespace headroom {

// Per pipeline stage: the highest peak of its ranks as a bar, their median as a line across it, and the
// plan's peak for the stage as a dashed line, so that "which stage, and did the plan see it coming" reads at
// a glance. Allocated peaks, or reserved ones where the job compares those (FleetJob::byReserved).
class FleetStageBars : public QWidget {
    Q_OBJECT
public:
    explicit FleetStageBars(QWidget* parent = nullptr);
    void setStages(const std::vector<FleetStage>& stages, bool byReserved = false);
    void setStyle(const ChartStyle& style);
    QSize sizeHint() const override { return {640, 220}; }

protected:
    void paintEvent(QPaintEvent*) override;

private:
    std::vector<FleetStage> m_stages;
    bool m_byReserved = false;
    ChartStyle m_style;
};

} // namespace headroom
