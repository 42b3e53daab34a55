// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/fleet.h"
#include "ui/common/chartstyle.h"

#include <QWidget>
#include <vector>

namespace headroom {

// Per pipeline stage: the highest allocated peak of its ranks as a bar, their median as a line across it,
// and the plan's allocated peak for the stage as a dashed line, so that "which stage, and did the plan see
// it coming" reads at a glance.
class FleetStageBars : public QWidget {
    Q_OBJECT
public:
    explicit FleetStageBars(QWidget* parent = nullptr);
    void setStages(const std::vector<FleetStage>& stages);
    void setStyle(const ChartStyle& style);
    QSize sizeHint() const override { return {640, 220}; }

protected:
    void paintEvent(QPaintEvent*) override;

private:
    std::vector<FleetStage> m_stages;
    ChartStyle m_style;
};

} // namespace headroom
