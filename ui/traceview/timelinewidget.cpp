// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/traceview/timelinewidget.h"

#include "core/trace/frames.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

namespace headroom {

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(false);
    setMinimumHeight(160);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setToolTip(tr("Wheel: zoom · drag: pan · Shift+drag: zoom to a box · Ctrl+drag: select a range · "
                  "click: select a moment · double-click: whole run"));
}

void TimelineWidget::setLanes(std::vector<TimelineLane> lanes) {
    m_lanes = std::move(lanes);
    bool time = !m_lanes.empty();
    for (const auto& l : m_lanes)
        time = time && l.timeline->hasTime();
    m_view.axis = time ? TimelineAxis::Time : TimelineAxis::Event;
    if (!m_lanes.empty())
        m_view.secondsPerUnit = timeUnitSeconds(m_lanes.front().trace->trace.format);
    showAll();
}

void TimelineWidget::setStyle(const ChartStyle& style) {
    m_style = style;
    update();
}

void TimelineWidget::setByCategory(bool byCategory) {
    m_view.byCategory = byCategory;
    update();
}

void TimelineWidget::setAllocationStack(bool on) {
    m_view.allocationStack = on;
    update();
}

void TimelineWidget::setLaneAllocationStack(std::size_t lane, std::shared_ptr<const AllocationStack> stack) {
    if (lane < m_lanes.size()) {
        m_lanes[lane].timeline->setAllocationStack(std::move(stack));
        update();
    }
}

void TimelineWidget::setLaneClasses(std::size_t lane, std::shared_ptr<const StackedSeries> classes) {
    if (lane < m_lanes.size()) {
        m_lanes[lane].timeline->setClasses(std::move(classes));
        update();
    }
}

void TimelineWidget::setLanePlan(std::size_t lane, std::shared_ptr<const PlanOverlay> plan) {
    if (lane < m_lanes.size()) {
        m_lanes[lane].plan = std::move(plan);
        update();
    }
}

bool TimelineWidget::drawsByCategory(std::size_t lane) const {
    return lane < m_lanes.size() &&
           TimelineRenderer::detailOf(m_lanes[lane], m_view) == TimelineDetail::Categories;
}

void TimelineWidget::setAllocationColours(std::size_t lane, bool own) {
    if (lane < m_lanes.size() && m_lanes[lane].allocationColours != own) {
        m_lanes[lane].allocationColours = own;
        update();
    }
}

void TimelineWidget::setBandColors(std::size_t lane, std::vector<QColor> colors) {
    if (lane < m_lanes.size()) {
        m_lanes[lane].bandColors = std::move(colors);
        update();
    }
}

std::pair<double, double> TimelineWidget::domain() const {
    return lanesDomain(m_lanes, m_view.axis);
}

void TimelineWidget::setAxis(TimelineAxis axis) {
    if (axis == m_view.axis || m_lanes.empty())
        return;
    if (axis == TimelineAxis::Time && !m_lanes.front().timeline->hasTime())
        return;
    const Timeline& tl = *m_lanes.front().timeline;
    auto convert = [&](double x) {
        const std::size_t e = tl.eventAt(m_view.axis, x);
        return tl.xOf(axis, e == kBeforeFirstEvent ? 0 : e);
    };
    const double a = convert(m_view.x0), b = convert(m_view.x1);
    std::optional<double> moment;
    if (m_view.moment)
        moment = convert(*m_view.moment);
    m_view.axis = axis;
    m_view.range.reset();
    m_view.origin = domain().first;
    m_view.moment = moment;
    setVisibleRange(a, b > a ? b : a + 1);
}

void TimelineWidget::setVisibleRange(double x0, double x1) {
    const auto [d0, d1] = domain();
    // At least a few events (or a microsecond) wide, at most the run; a run shorter than that minimum
    // (one event) is shown whole. Bounds kept ordered, as std::clamp requires.
    const double maxWidth = std::max(d1 - d0, 1e-9);
    const double minWidth =
        std::min(maxWidth, m_view.axis == TimelineAxis::Event ? 4.0 : std::max((d1 - d0) * 1e-9, 1.0));
    const double w = std::isfinite(x1 - x0) ? std::clamp(x1 - x0, minWidth, maxWidth) : maxWidth;
    if (!std::isfinite(x0))
        x0 = d0;
    x0 = std::clamp(x0, d0, d1 - w);
    m_view.x0 = x0;
    m_view.x1 = x0 + w;
    m_view.origin = d0;
    update();
    emit viewChanged();
}

void TimelineWidget::showAll() {
    const auto [d0, d1] = domain();
    // A hair past the end, so that the last event's column is inside the view.
    setVisibleRange(d0, d1 + (m_view.axis == TimelineAxis::Time ? (d1 - d0) * 1e-6 : 0));
}

void TimelineWidget::setMoment(std::optional<double> x) {
    m_view.moment = x;
    update();
}

void TimelineWidget::setRange(std::optional<std::pair<double, double>> range) {
    m_view.range = range;
    update();
    emit rangeSelected(range);
}

void TimelineWidget::zoom(double factor, double aroundX) {
    const double w = (m_view.x1 - m_view.x0) / factor;
    const double t = (aroundX - m_view.x0) / (m_view.x1 - m_view.x0);
    setVisibleRange(aroundX - t * w, aroundX - t * w + w);
}

void TimelineWidget::pan(double dx) {
    setVisibleRange(m_view.x0 + dx, m_view.x1 + dx);
}

double TimelineWidget::xAt(int px) const {
    const QRect plot = TimelineRenderer::plotRect(rect(), static_cast<int>(m_lanes.size()), 0);
    return m_view.x0 +
           (px - plot.left()) / static_cast<double>(std::max(plot.width(), 1)) * (m_view.x1 - m_view.x0);
}

int TimelineWidget::laneAt(int py) const {
    for (int i = 0; i < static_cast<int>(m_lanes.size()); ++i) {
        const QRect plot = TimelineRenderer::plotRect(rect(), static_cast<int>(m_lanes.size()), i);
        if (py < plot.bottom() + TimelineRenderer::kLaneGap)
            return i;
    }
    return static_cast<int>(m_lanes.size()) - 1;
}

void TimelineWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    TimelineRenderer::paint(p, rect(), m_lanes, m_view, m_style, &m_lastFrames);
    if (m_drag == Drag::Zoom || m_drag == Drag::Range) {
        const QRect plot = TimelineRenderer::plotRect(rect(), static_cast<int>(m_lanes.size()), 0);
        const int l = std::min(m_pressPos.x(), m_lastPos.x()), r = std::max(m_pressPos.x(), m_lastPos.x());
        const QRect box(l, plot.top(), r - l, height() - plot.top() - TimelineRenderer::kAxis);
        p.setPen(QPen(QColor(0x42, 0x85, 0xf4), 1, Qt::DashLine));
        p.setBrush(QColor(0x42, 0x85, 0xf4, m_drag == Drag::Zoom ? 30 : 60));
        p.drawRect(box);
    }
    ++m_frames;
}

void TimelineWidget::wheelEvent(QWheelEvent* e) {
    const double steps = e->angleDelta().y() / 120.0;
    if (steps == 0) {
        pan(-e->angleDelta().x() / 120.0 * (m_view.x1 - m_view.x0) * 0.1);
    } else {
        zoom(std::pow(1.25, steps), xAt(static_cast<int>(e->position().x())));
    }
    e->accept();
}

void TimelineWidget::mousePressEvent(QMouseEvent* e) {
    if (e->button() != Qt::LeftButton)
        return;
    m_pressPos = m_lastPos = e->pos();
    m_moved = false;
    m_drag = e->modifiers() & Qt::ShiftModifier     ? Drag::Zoom
             : e->modifiers() & Qt::ControlModifier ? Drag::Range
                                                    : Drag::Pan;
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* e) {
    if (m_drag == Drag::None)
        return;
    if ((e->pos() - m_pressPos).manhattanLength() > 3)
        m_moved = true;
    if (m_drag == Drag::Pan && m_moved)
        pan(xAt(m_lastPos.x()) - xAt(e->pos().x()));
    m_lastPos = e->pos();
    update();
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* e) {
    const Drag drag = m_drag;
    m_drag = Drag::None;
    if (!m_moved) {
        const double x = xAt(e->pos().x());
        setMoment(x);
        emit momentSelected(x, laneAt(e->pos().y()));
        return;
    }
    const double a = xAt(std::min(m_pressPos.x(), e->pos().x())),
                 b = xAt(std::max(m_pressPos.x(), e->pos().x()));
    if (drag == Drag::Zoom)
        setVisibleRange(a, b);
    else if (drag == Drag::Range)
        setRange(std::make_pair(a, b));
    update();
}

void TimelineWidget::mouseDoubleClickEvent(QMouseEvent*) {
    showAll();
}

void TimelineWidget::keyPressEvent(QKeyEvent* e) {
    const double w = m_view.x1 - m_view.x0, mid = (m_view.x0 + m_view.x1) / 2;
    switch (e->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
        zoom(1.5, mid);
        break;
    case Qt::Key_Minus:
        zoom(1 / 1.5, mid);
        break;
    case Qt::Key_Left:
        pan(-w * 0.1);
        break;
    case Qt::Key_Right:
        pan(w * 0.1);
        break;
    case Qt::Key_Home:
        showAll();
        break;
    case Qt::Key_Escape:
        setRange(std::nullopt);
        break;
    default:
        QWidget::keyPressEvent(e);
    }
}

bool TimelineWidget::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(e);
        const QString text = tooltipAt(help->pos());
        if (text.isEmpty())
            QToolTip::showText(help->globalPos(), toolTip(), this);
        else
            QToolTip::showText(help->globalPos(), text, this);
        return true;
    }
    return QWidget::event(e);
}

QString TimelineWidget::tooltipAt(QPoint pos) const {
    if (m_lanes.empty())
        return {};
    const int lane = laneAt(pos.y());
    const QRect plot = TimelineRenderer::plotRect(rect(), static_cast<int>(m_lanes.size()), lane);
    if (!plot.contains(pos) || lane >= static_cast<int>(m_lastFrames.size()))
        return {};
    const TimelineFrame& f = m_lastFrames[static_cast<std::size_t>(lane)];
    const int c = pos.x() - plot.left();
    if (c < 0 || c >= f.width || !f.columns[static_cast<std::size_t>(c)].valid)
        return {};
    const TimelineColumn& col = f.columns[static_cast<std::size_t>(c)];
    const TimelineLane& l = m_lanes[static_cast<std::size_t>(lane)];
    QString text = tr("events %1–%2\nallocated %3–%4\nreserved %5–%6")
                       .arg(col.first)
                       .arg(col.last)
                       .arg(m_style.format(static_cast<double>(col.allocatedMin)),
                            m_style.format(static_cast<double>(col.allocatedMax)),
                            m_style.format(static_cast<double>(col.reservedMin)),
                            m_style.format(static_cast<double>(col.reservedMax)));
    // The band under the pointer: its allocation and where it came from.
    const double yMaxPixels = plot.height() - 1;
    const double vMax = static_cast<double>(TimelineRenderer::yMax(*l.timeline, m_style));
    const double value = (plot.bottom() - pos.y()) / yMaxPixels * vMax;
    if (drawsByCategory(static_cast<std::size_t>(lane)) &&
        f.classBytes.size() == f.columns.size() * StackedSeries::kClasses) {
        // By category: the split the column shows (at its allocated peak), the one under the pointer first.
        const std::size_t base = static_cast<std::size_t>(c) * StackedSeries::kClasses;
        std::int64_t sum = 0;
        QString under, rows;
        for (std::size_t k = 0; k < StackedSeries::kClasses; ++k) {
            const std::int64_t v = f.classBytes[base + k];
            if (v <= 0)
                continue;
            const QString name = QString::fromUtf8(measuredCategoryLabel(static_cast<MeasuredCategory>(k)));
            if (value >= static_cast<double>(sum) && value < static_cast<double>(sum + v))
                under = name;
            rows += tr("\n  %1  %2").arg(name, m_style.format(static_cast<double>(v)));
            sum += v;
        }
        text += tr("\n\nafter event %1 (this stretch's peak):").arg(col.classEvent) + rows;
        // The plan at that moment, and where it parts from the run, category by category.
        std::array<std::int64_t, kMeasuredCategories> plan{};
        if (l.plan && l.plan->at(static_cast<double>(col.classEvent), &plan)) {
            std::int64_t planned = 0;
            QString gaps;
            for (std::size_t k = 0; k < kMeasuredCategories; ++k) {
                planned += plan[k];
                const std::int64_t gap = plan[k] - f.classBytes[base + k];
                if (plan[k] == 0 && f.classBytes[base + k] == 0)
                    continue;
                gaps += tr("\n  %1  %2%3")
                            .arg(QString::fromUtf8(measuredCategoryLabel(static_cast<MeasuredCategory>(k))),
                                 gap >= 0 ? QStringLiteral("+") : QStringLiteral("−"),
                                 m_style.format(static_cast<double>(gap >= 0 ? gap : -gap)));
            }
            text += tr("\n\nplan here %1 (placed by %2); plan − run:")
                        .arg(m_style.format(static_cast<double>(planned)),
                             l.plan->alignment == "optimizer step" ? tr("the optimizer step")
                                                                   : tr("the allocated peak")) +
                    gaps;
        }
        if (!under.isEmpty())
            text += tr("\n\npointer on: %1").arg(under);
        return text;
    }
    auto describe = [&](const Allocation& a) {
        const Trace& trace = l.trace->trace;
        const std::size_t user = topUserFrame(trace, a.stack);
        text += tr("\n\n%1 at 0x%2")
                    .arg(m_style.format(static_cast<double>(a.size)), QString::number(a.addr, 16));
        if (user != std::string::npos)
            text += QLatin1Char('\n') + QString::fromStdString(frameText(trace, trace.stacks[a.stack][user]));
    };
    // Every allocation in its place: the one under the pointer, at the column's peak.
    const AllocationStack::Layout& stack = f.stack;
    if (stack.columnStart.size() == f.columns.size() + 1) {
        for (std::uint32_t i = stack.columnStart[static_cast<std::size_t>(c)];
             i < stack.columnStart[static_cast<std::size_t>(c) + 1]; ++i)
            if (value >= static_cast<double>(stack.pieces[i].bottom) &&
                value < static_cast<double>(stack.pieces[i].top)) {
                text += tr("\n\nafter event %1 (this stretch's peak):").arg(col.classEvent);
                describe(l.index().allocations()[stack.shown[stack.pieces[i].shown]]);
                break;
            }
        return text;
    }
    const std::size_t bands =
        f.bandTop.size() == l.timeline->bands().size() * static_cast<std::size_t>(f.width)
            ? l.timeline->bands().size()
            : 0;
    for (std::size_t b = 0; b < bands; ++b) {
        const std::size_t at = b * static_cast<std::size_t>(f.width) + static_cast<std::size_t>(c);
        if (f.bandTop[at] < 0)
            continue;
        const Allocation& a = l.timeline->bands()[b];
        const double top = static_cast<double>(f.bandTop[at]), bottom = static_cast<double>(f.bandBottom[at]);
        if (value < bottom || value > top)
            continue;
        describe(a);
        break;
    }
    return text;
}

} // namespace headroom
