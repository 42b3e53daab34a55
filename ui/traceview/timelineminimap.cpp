// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/traceview/timelineminimap.h"

#include "ui/traceview/timelinewidget.h"

#include <QMouseEvent>
#include <QPainter>

namespace headroom {

TimelineMinimap::TimelineMinimap(TimelineWidget* timeline, QWidget* parent)
    : QWidget(parent), m_timeline(timeline) {
    setMinimumHeight(36);
    setMaximumHeight(56);
    setToolTip(tr("The whole run: click or drag to move the view"));
    connect(timeline, &TimelineWidget::viewChanged, this, qOverload<>(&QWidget::update));
}

QRect TimelineMinimap::plot() const {
    return QRect(TimelineRenderer::kLeft, 3,
                 std::max(width() - TimelineRenderer::kLeft - TimelineRenderer::kRight, 10),
                 std::max(height() - 6, 8));
}

void TimelineMinimap::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().window());
    const auto& lanes = m_timeline->lanes();
    if (lanes.empty())
        return;
    const QRect r = plot();
    const auto [d0, d1] = m_timeline->domain();
    if (m_cache.size() != r.size()) {
        // The first lane over the whole run; cached, since the whole run does not change while zooming.
        const TimelineLane& lane = lanes.front();
        const TimelineFrame f =
            lane.timeline->frame(m_timeline->view().axis, d0, d1 + (d1 - d0) * 1e-6, r.width(),
                                 TimelineRenderer::detailOf(lane, m_timeline->view()));
        ChartStyle style;
        m_cache = TimelineRenderer::spans(lane, f, r.size(), style, lane.timeline->maxValue(),
                                          TimelineRenderer::detailOf(lane, m_timeline->view()));
    }
    p.drawImage(r.topLeft(), m_cache);
    const auto& v = m_timeline->view();
    const double l = r.left() + (v.x0 - d0) / (d1 - d0) * r.width(),
                 rr = r.left() + (v.x1 - d0) / (d1 - d0) * r.width();
    p.fillRect(QRectF(r.left(), r.top(), l - r.left(), r.height()), QColor(0, 0, 0, 60));
    p.fillRect(QRectF(rr, r.top(), r.right() - rr, r.height()), QColor(0, 0, 0, 60));
    p.setPen(QPen(QColor(0x42, 0x85, 0xf4), 2));
    p.drawRect(QRectF(l, r.top(), std::max(rr - l, 2.0), r.height() - 1));
}

void TimelineMinimap::centreOn(int px) {
    const QRect r = plot();
    const auto [d0, d1] = m_timeline->domain();
    const auto& v = m_timeline->view();
    const double x = d0 + (px - r.left()) / static_cast<double>(r.width()) * (d1 - d0);
    const double w = v.x1 - v.x0;
    m_timeline->setVisibleRange(x - w / 2, x + w / 2);
}

void TimelineMinimap::mousePressEvent(QMouseEvent* e) {
    centreOn(e->pos().x());
}

void TimelineMinimap::mouseMoveEvent(QMouseEvent* e) {
    if (e->buttons() & Qt::LeftButton)
        centreOn(e->pos().x());
}

} // namespace headroom
