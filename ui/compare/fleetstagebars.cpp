// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/compare/fleetstagebars.h"

#include "ui/common/categorycolors.h"

#include <QPainter>
#include <algorithm>
#include <cmath>

namespace headroom {

FleetStageBars::FleetStageBars(QWidget* parent) : QWidget(parent) {
    setMinimumSize(240, 140);
}

void FleetStageBars::setStages(const std::vector<FleetStage>& stages, bool byReserved) {
    m_stages = stages;
    m_byReserved = byReserved;
    update();
}

void FleetStageBars::setStyle(const ChartStyle& style) {
    m_style = style;
    update();
}

void FleetStageBars::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), m_style.background());
    p.setPen(m_style.foreground());
    if (m_stages.empty()) {
        p.drawText(
            rect().adjusted(12, 0, -12, 0), Qt::AlignCenter | Qt::TextWordWrap,
            tr("Per-stage peaks need the job's layout: type it above (tp=8,pp=4), or open the planner's "
               "scenario of this job first"));
        return;
    }
    double top = 1;
    for (const FleetStage& s : m_stages)
        top =
            std::max({top, static_cast<double>(s.maxPeak), static_cast<double>(s.estimateBytes.value_or(0))});
    // A round top in the display unit, a little above the highest bar.
    const double scaled = m_style.scale(top) * 1.08;
    const double magnitude = std::pow(10.0, std::floor(std::log10(scaled)));
    double nice = 10;
    for (double c : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
        if (scaled / magnitude <= c) {
            nice = c;
            break;
        }
    const double axisTop = nice * magnitude / m_style.scale(1);
    const QRect a = rect().adjusted(64, 26, -12, -34);
    auto yOf = [&](double bytes) { return a.bottom() - bytes / axisTop * a.height(); };
    for (int i = 0; i <= 4; ++i) {
        const double v = axisTop * i / 4;
        p.setPen(QColor(128, 128, 128, 60));
        p.drawLine(QPointF(a.left(), yOf(v)), QPointF(a.right(), yOf(v)));
        p.setPen(m_style.foreground());
        p.drawText(QRectF(0, yOf(v) - 8, a.left() - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
                   m_style.format(v, 1));
    }
    const double slot = static_cast<double>(a.width()) / static_cast<double>(m_stages.size());
    const double barW = std::min(80.0, slot * 0.6);
    const QColor bar = categoryColor(MeasuredCategory::Activations);
    bool anyPlan = false;
    for (std::size_t i = 0; i < m_stages.size(); ++i) {
        const FleetStage& s = m_stages[i];
        const double cx = a.left() + slot * (static_cast<double>(i) + 0.5);
        const QRectF r(cx - barW / 2, yOf(static_cast<double>(s.maxPeak)), barW,
                       a.bottom() - yOf(static_cast<double>(s.maxPeak)));
        p.fillRect(r, bar);
        p.setPen(QPen(m_style.foreground(), 1.5));
        const double med = yOf(static_cast<double>(s.medianPeak));
        p.drawLine(QPointF(r.left(), med), QPointF(r.right(), med));
        if (s.estimateBytes) {
            anyPlan = true;
            p.setPen(QPen(QColor(220, 40, 40), 2, Qt::DashLine));
            const double y = yOf(static_cast<double>(*s.estimateBytes));
            p.drawLine(QPointF(r.left() - 8, y), QPointF(r.right() + 8, y));
        }
        p.setPen(m_style.foreground());
        p.drawText(QRectF(cx - slot / 2, r.top() - 18, slot, 16), Qt::AlignCenter,
                   m_style.format(static_cast<double>(s.maxPeak)));
        p.drawText(QRectF(cx - slot / 2, a.bottom() + 4, slot, 28), Qt::AlignHCenter | Qt::AlignTop,
                   tr("stage %1\nworst rank %2").arg(s.stage).arg(s.worstRank));
    }
    p.drawText(QRect(a.left(), 2, a.width(), 20), Qt::AlignLeft | Qt::AlignVCenter,
               (m_byReserved ? tr("Highest reserved peak per stage (allocated not recorded)")
                             : tr("Highest allocated peak per stage")) +
                   (anyPlan ? tr("; line: its median; dashed: the plan") : tr("; line: its median")));
}

} // namespace headroom
