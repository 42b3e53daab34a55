// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/sweeps.h"
#include "core/serve/estimate.h"
#include "ui/common/chartstyle.h"

#include <QChart>
#include <QList>
#include <QPointF>

class QLineSeries;
class QLogValueAxis;
class QScatterSeries;
class QValueAxis;

namespace headroom {

class SweepChart : public QChart {
    Q_OBJECT
public:
    explicit SweepChart(QGraphicsItem* parent = nullptr);
    // Draws a sweep computed off the GUI thread (core/plan/sweeps.h) for this scenario and estimate.
    void setSweep(const SweepResult& result, const Scenario& sc, const Estimate& est);
    void setVariable(SweepVariable v) { m_variable = v; }
    SweepVariable variable() const { return m_variable; }
    void setStyle(const ChartStyle& style);
    const SweepResult& result() const { return m_result; }

private:
    ChartStyle m_style;
    SweepVariable m_variable = SweepVariable::MicroBatch;
    SweepResult m_result;
    QLineSeries* m_line = nullptr;
    QLineSeries* m_capacity = nullptr;
    QScatterSeries* m_limit = nullptr;
    // The limit's words, beside its marker rather than centred over it (centred, a limit at the axis put
    // them over the axis labels): an invisible point placed from the plot's pixels.
    QScatterSeries* m_limitLabel = nullptr;
    void placeLimitLabel();
    QScatterSeries* m_current = nullptr;
    QLogValueAxis* m_x = nullptr;
    QValueAxis* m_y = nullptr;
};

} // namespace headroom
