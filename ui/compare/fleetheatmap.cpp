// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/compare/fleetheatmap.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <array>

namespace headroom {

namespace {

// A perceptually ordered ramp (viridis' stops), so that more memory always reads as lighter and yellower,
// in colour and in greyscale print.
QColor ramp(double t) {
    static const std::array<QColor, 5> stops = {QColor(68, 1, 84), QColor(59, 82, 139), QColor(33, 145, 140),
                                                QColor(94, 201, 98), QColor(253, 231, 37)};
    t = std::clamp(t, 0.0, 1.0) * (stops.size() - 1);
    const auto i = std::min(static_cast<std::size_t>(t), stops.size() - 2);
    const double f = t - static_cast<double>(i);
    const QColor& a = stops[i];
    const QColor& b = stops[i + 1];
    return QColor::fromRgbF(static_cast<float>(a.redF() + f * (b.redF() - a.redF())),
                            static_cast<float>(a.greenF() + f * (b.greenF() - a.greenF())),
                            static_cast<float>(a.blueF() + f * (b.blueF() - a.blueF())));
}

constexpr int kLeft = 56, kTop = 24, kBottom = 30, kRight = 12;

} // namespace

FleetHeatMap::FleetHeatMap(QWidget* parent) : QWidget(parent) {
    setMinimumSize(320, 160);
    setMouseTracking(true);
}

void FleetHeatMap::setRanks(const std::vector<FleetRank>& ranks) {
    m_rows.clear();
    m_top = 1;
    m_bottom = 0;
    bool any = false, firstValue = true, allocated = false, reserved = false;
    for (const FleetRank& r : ranks) {
        if (!r.error.empty() || r.summary.profile.empty())
            continue;
        (r.summary.allocatedRecorded ? allocated : reserved) = true;
        const DeviceSummary& s = r.summary;
        Row row{r.rank,
                r.outlier,
                static_cast<double>(s.firstUs - s.stepMarkUs) / 1e6,
                static_cast<double>(s.lastUs - s.stepMarkUs) / 1e6,
                s.profile,
                s.allocatedRecorded};
        m_minS = any ? std::min(m_minS, row.startS) : row.startS;
        m_maxS = any ? std::max(m_maxS, row.endS) : row.endS;
        any = true;
        for (std::int64_t b : s.profile) {
            m_bottom = firstValue ? b : std::min(m_bottom, b);
            firstValue = false;
            m_top = std::max(m_top, b);
        }
        m_rows.push_back(std::move(row));
    }
    m_counter = !reserved    ? tr("allocated")
                : !allocated ? tr("reserved (allocated not recorded)")
                             : tr("allocated (reserved where not recorded)");
    std::sort(m_rows.begin(), m_rows.end(), [](const Row& a, const Row& b) { return a.rank < b.rank; });
    if (!any || m_maxS <= m_minS) {
        m_minS = 0;
        m_maxS = 1;
    }
    update();
}

void FleetHeatMap::setSelectedRank(int rank) {
    m_selected = rank;
    update();
}

void FleetHeatMap::setStyle(const ChartStyle& style) {
    m_style = style;
    update();
}

QRect FleetHeatMap::plotArea() const {
    return rect().adjusted(kLeft, kTop, -kRight, -kBottom);
}

double FleetHeatMap::xOf(double seconds) const {
    const QRect a = plotArea();
    return a.left() + (seconds - m_minS) / (m_maxS - m_minS) * a.width();
}

int FleetHeatMap::rankAt(QPoint p) const {
    const QRect a = plotArea();
    if (m_rows.empty() || !a.contains(p))
        return -1;
    const auto i =
        static_cast<std::size_t>((p.y() - a.top()) * static_cast<double>(m_rows.size()) / a.height());
    return i < m_rows.size() ? m_rows[i].rank : -1;
}

QString FleetHeatMap::describe(QPoint p) const {
    const int rank = rankAt(p);
    const auto it =
        std::find_if(m_rows.begin(), m_rows.end(), [rank](const Row& r) { return r.rank == rank; });
    if (it == m_rows.end())
        return {};
    const QRect a = plotArea();
    const double s = m_minS + (p.x() - a.left()) * (m_maxS - m_minS) / a.width();
    if (s < it->startS || s > it->endS)
        return tr("rank %1: not recording at %2 s").arg(rank).arg(s, 0, 'f', 2);
    const auto b = std::min(it->profile.size() - 1,
                            static_cast<std::size_t>((s - it->startS) / (it->endS - it->startS + 1e-12) *
                                                     static_cast<double>(it->profile.size())));
    return tr("rank %1, %2 s from its first step mark: up to %3 %4")
        .arg(rank)
        .arg(s, 0, 'f', 2)
        .arg(m_style.format(static_cast<double>(it->profile[b])))
        .arg(it->allocated ? tr("allocated") : tr("reserved"));
}

void FleetHeatMap::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), m_style.background());
    p.setPen(m_style.foreground());
    const QRect a = plotArea();
    if (m_rows.empty()) {
        p.drawText(rect(), Qt::AlignCenter, tr("No rank with a recorded timeline yet"));
        return;
    }
    const double rowH = static_cast<double>(a.height()) / static_cast<double>(m_rows.size());
    for (std::size_t i = 0; i < m_rows.size(); ++i) {
        const Row& r = m_rows[i];
        const double y0 = a.top() + static_cast<double>(i) * rowH;
        const double bucket = (r.endS - r.startS) / static_cast<double>(r.profile.size());
        for (std::size_t b = 0; b < r.profile.size(); ++b) {
            const double x0 = xOf(r.startS + static_cast<double>(b) * bucket);
            const double x1 = xOf(r.startS + static_cast<double>(b + 1) * bucket);
            p.fillRect(QRectF(x0, y0, std::max(1.0, x1 - x0 + 0.5), std::max(1.0, rowH + 0.5)),
                       ramp(static_cast<double>(r.profile[b] - m_bottom) /
                            static_cast<double>(std::max<std::int64_t>(1, m_top - m_bottom))));
        }
        if (r.outlier)
            p.fillRect(QRectF(a.left() - 8, y0, 6, std::max(2.0, rowH)), QColor(220, 40, 40));
        if (r.rank == m_selected) {
            p.setPen(QPen(m_style.foreground(), 2));
            p.drawRect(QRectF(a.left(), y0, a.width(), std::max(2.0, rowH)));
        }
    }
    // Rank labels, as many as fit; the step mark; the time axis.
    p.setPen(m_style.foreground());
    const int every = std::max(1, static_cast<int>(std::ceil(14.0 / rowH)));
    for (std::size_t i = 0; i < m_rows.size(); i += static_cast<std::size_t>(every))
        p.drawText(QRectF(0, a.top() + static_cast<double>(i) * rowH, kLeft - 12, std::max(rowH, 14.0)),
                   Qt::AlignRight | Qt::AlignTop, QString::number(m_rows[i].rank));
    if (m_minS < 0 && m_maxS > 0) {
        p.setPen(QPen(m_style.foreground(), 1, Qt::DashLine));
        p.drawLine(QPointF(xOf(0), a.top() - 4), QPointF(xOf(0), a.bottom() + 4));
        p.drawText(QPointF(xOf(0) + 4, a.top() - 6), tr("first step mark"));
    }
    p.setPen(m_style.foreground());
    p.drawText(QRect(a.left(), a.bottom() + 6, a.width(), kBottom - 6), Qt::AlignLeft | Qt::AlignTop,
               QStringLiteral("%1 s").arg(m_minS, 0, 'f', 2));
    p.drawText(QRect(a.left(), a.bottom() + 6, a.width(), kBottom - 6), Qt::AlignRight | Qt::AlignTop,
               QStringLiteral("%1 s").arg(m_maxS, 0, 'f', 2));
    p.drawText(QRect(a.left(), a.bottom() + 6, a.width(), kBottom - 6), Qt::AlignHCenter | Qt::AlignTop,
               tr("%1, %2 (dark) to %3 (light); time from each rank's first step mark")
                   .arg(m_counter, m_style.format(static_cast<double>(m_bottom)),
                        m_style.format(static_cast<double>(m_top))));
    p.drawText(QRect(0, 0, kLeft, kTop), Qt::AlignLeft | Qt::AlignVCenter, tr("rank"));
}

void FleetHeatMap::mousePressEvent(QMouseEvent* e) {
    const int rank = rankAt(e->position().toPoint());
    if (rank >= 0)
        emit rankClicked(rank);
}

bool FleetHeatMap::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(e);
        const QString text = describe(help->pos());
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(help->globalPos(), text, this);
        return true;
    }
    return QWidget::event(e);
}

} // namespace headroom
