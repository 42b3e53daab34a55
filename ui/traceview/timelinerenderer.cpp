// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/traceview/timelinerenderer.h"

#include "core/compare/runtimeline.h"
#include "ui/common/categorycolors.h"
#include "ui/common/chartexport.h"

#include <QFileInfo>
#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

namespace headroom {

namespace {

QColor background(bool dark) {
    return dark ? QColor(0x23, 0x26, 0x2b) : QColor(Qt::white);
}
QColor textColor(bool dark) {
    return dark ? QColor(0xdd, 0xdd, 0xdd) : QColor(0x30, 0x30, 0x30);
}
QColor gridColor(bool dark) {
    return dark ? QColor(0x3a, 0x3e, 0x45) : QColor(0xe6, 0xe6, 0xe6);
}

// A y scale that ends on a round number above the run's highest value.
double niceTop(double v) {
    if (v <= 0)
        return 1;
    const double p = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
        if (m * p >= v * 1.04)
            return m * p;
    return 10 * p;
}

} // namespace

TimelineRenderer::Unit TimelineRenderer::unitFor(double maxBytes, const ChartStyle& style) {
    // The style's unit (GiB or GB) unless the lane holds less than one of it: a CPU lane of a few hundred
    // kilobytes reads in KiB, not as "0.00 GiB".
    const bool binary = style.unit == ByteUnit::GiB;
    const double base = binary ? 1024.0 : 1000.0;
    static const char* binaryNames[] = {"B", "KiB", "MiB", "GiB"};
    static const char* decimalNames[] = {"B", "kB", "MB", "GB"};
    int power = 3;
    while (power > 0 && maxBytes < std::pow(base, power))
        --power;
    return {std::pow(base, power), QString::fromLatin1(binary ? binaryNames[power] : decimalNames[power])};
}

QString TimelineRenderer::Unit::format(double bytes, int precision) const {
    return QString::number(bytes / size, 'f', precision) + QLatin1Char(' ') + name;
}

std::int64_t TimelineRenderer::yMax(const Timeline& timeline, const ChartStyle& style) {
    // Round in the unit the axis shows, so that the ticks land on round labels.
    const Unit unit = unitFor(static_cast<double>(timeline.maxValue()), style);
    return static_cast<std::int64_t>(
        std::ceil(niceTop(static_cast<double>(timeline.maxValue()) / unit.size) * unit.size));
}

std::vector<TimelineLane> lanesOf(const std::shared_ptr<const LoadedTrace>& trace, std::size_t bands) {
    std::vector<TimelineLane> lanes;
    const QString file = QFileInfo(QString::fromStdString(trace->path)).fileName();
    for (std::size_t d = 0; d < trace->trace.devices.size(); ++d) {
        if (trace->trace.devices[d].entries() == 0)
            continue;
        TimelineLane lane;
        lane.trace = trace;
        lane.device = d;
        lane.timeline = std::make_shared<Timeline>(*trace->indexes[d], bands);
        lane.label =
            QStringLiteral("%1 · device %2").arg(file, QString::fromStdString(trace->trace.devices[d].key));
        lanes.push_back(std::move(lane));
    }
    return lanes;
}

std::pair<double, double> lanesDomain(const std::vector<TimelineLane>& lanes, TimelineAxis axis) {
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& l : lanes) {
        const auto [a, b] = l.timeline->domain(axis);
        lo = std::min(lo, a), hi = std::max(hi, b);
    }
    return hi > lo ? std::make_pair(lo, hi) : std::make_pair(0.0, 1.0);
}

QColor TimelineRenderer::bandColor(std::size_t band, bool dark) {
    // Tableau-like hues, distinct in order; the dark theme lifts their lightness.
    static const QRgb hues[] = {0x4e79a7, 0xf28e2b, 0x59a14f, 0xb07aa1, 0xedc948, 0x76b7b2,
                                0xff9da7, 0x9c755f, 0xe15759, 0x86bcb6, 0xd4a6c8, 0xa0cbe8};
    QColor c = QColor::fromRgb(hues[band % (sizeof(hues) / sizeof(hues[0]))]);
    return dark ? c.lighter(110) : c;
}
QColor TimelineRenderer::restColor(bool dark) {
    return dark ? QColor(0x5a, 0x60, 0x6a) : QColor(0xc8, 0xcc, 0xd2);
}
QColor TimelineRenderer::allocatedColor(bool dark) {
    return dark ? QColor(0xf0, 0xf0, 0xf0) : QColor(0x1f, 0x1f, 0x1f);
}
QColor TimelineRenderer::reservedColor(bool dark) {
    return dark ? QColor(0xff, 0x8a, 0x65) : QColor(0xd8, 0x43, 0x15);
}

std::vector<double> TimelineRenderer::ticks(double lo, double hi, int count, double* stepOut) {
    std::vector<double> out;
    if (!(hi > lo) || count < 1)
        return out;
    const double raw = (hi - lo) / count;
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    double step = p;
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (m * p >= raw) {
            step = m * p;
            break;
        }
    if (stepOut)
        *stepOut = step;
    for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9 && out.size() < 1000; t += step)
        out.push_back(t);
    return out;
}

QString TimelineRenderer::xLabel(const TimelineViewState& view, double x, double step) {
    if (view.axis == TimelineAxis::Event)
        return QString::number(static_cast<long long>(std::llround(x)));
    const double s = (x - view.origin) * view.secondsPerUnit;
    const double st = step * view.secondsPerUnit;
    auto digits = [](double stepInUnit) {
        return std::max(0, static_cast<int>(std::ceil(-std::log10(stepInUnit) - 1e-9)));
    };
    if (st >= 1)
        return QString::number(s, 'f', digits(st)) + QStringLiteral(" s");
    if (st >= 1e-3)
        return QString::number(s * 1e3, 'f', digits(st * 1e3)) + QStringLiteral(" ms");
    return QString::number(s * 1e6, 'f', digits(st * 1e6)) + QStringLiteral(" µs");
}

QRect TimelineRenderer::plotRect(const QRect& area, int lanes, int i) {
    lanes = std::max(lanes, 1);
    const int usable = area.height() - kAxis - kLaneGap * (lanes - 1);
    const int laneH = std::max(usable / lanes, kStrip + 20);
    const int top = area.top() + i * (laneH + kLaneGap);
    return QRect(area.left() + kLeft, top + kStrip + kTop, std::max(area.width() - kLeft - kRight, 10),
                 std::max(laneH - kStrip - kTop, 10));
}

TimelineDetail TimelineRenderer::detailOf(const TimelineLane& lane, const TimelineViewState& view) {
    const Timeline& tl = *lane.timeline;
    if (view.allocationStack && tl.allocationStack())
        return TimelineDetail::Allocations;
    if (view.byCategory && tl.classes() && tl.classes()->valid())
        return TimelineDetail::Categories;
    return TimelineDetail::Bands;
}

QImage TimelineRenderer::spans(const TimelineLane& lane, const TimelineFrame& frame, QSize size,
                               const ChartStyle& style, std::int64_t yMax, TimelineDetail detail) {
    const bool byCategory = detail == TimelineDetail::Categories;
    QImage img(size, QImage::Format_ARGB32_Premultiplied);
    img.fill(background(style.dark));
    const int w = std::min(size.width(), frame.width), h = size.height();
    if (h < 2 || yMax <= 0)
        return img;
    const double k = (h - 1) / static_cast<double>(yMax);
    auto y = [&](std::int64_t v) {
        return std::clamp(h - 1 - static_cast<int>(std::lround(v * k)), 0, h - 1);
    };
    auto* bits = reinterpret_cast<std::uint32_t*>(img.bits());
    const std::size_t stride = static_cast<std::size_t>(img.bytesPerLine()) / 4;
    auto fill = [&](int x, int yTop, int yBottom, QRgb c) {
        if (yTop > yBottom)
            std::swap(yTop, yBottom);
        for (int r = yTop; r <= yBottom; ++r)
            bits[static_cast<std::size_t>(r) * stride + static_cast<std::size_t>(x)] = c;
    };
    const QRgb rest = restColor(style.dark).rgb(), allocated = allocatedColor(style.dark).rgb(),
               reserved = reservedColor(style.dark).rgb();
    // The bands the frame carries (none unless it was reduced for the bands).
    const std::size_t nb =
        frame.width > 0 &&
                frame.bandTop.size() == lane.timeline->bands().size() * static_cast<std::size_t>(frame.width)
            ? lane.timeline->bands().size()
            : 0;
    std::vector<QRgb> bandRgb(nb), bandEdge(nb);
    for (std::size_t b = 0; b < nb; ++b)
        bandEdge[b] =
            (lane.bandColors.size() == nb ? lane.bandColors[b] : bandColor(b, style.dark)).darker(135).rgb();
    for (std::size_t b = 0; b < nb; ++b)
        bandRgb[b] = lane.bandColors.size() == nb ? lane.bandColors[b].rgb() : bandColor(b, style.dark).rgb();
    // Memory by category: each column's classes stacked bottom-up in the categories' order (model state
    // at the bottom, what comes and goes above it), as a real state of the run, the column's peak.
    const bool classes =
        byCategory && frame.classBytes.size() == frame.columns.size() * StackedSeries::kClasses;
    // Every allocation in its place: a colour per shown allocation, its category's when the lane has
    // categories (as the bands are coloured by category) unless the lane asks for each its own.
    const bool stack =
        detail == TimelineDetail::Allocations && frame.stack.columnStart.size() == frame.columns.size() + 1;
    std::vector<QRgb> stackRgb, stackEdge;
    if (stack) {
        const StackedSeries* cls = lane.timeline->classes();
        for (std::size_t s = 0; s < frame.stack.shown.size(); ++s) {
            const QColor color =
                cls && cls->valid() && !lane.allocationColours
                    ? categoryColor(static_cast<MeasuredCategory>(cls->classOf(frame.stack.shown[s])))
                    : bandColor(frame.stack.shown[s], style.dark);
            stackRgb.push_back(color.rgb());
            stackEdge.push_back(color.darker(150).rgb());
        }
    }
    std::array<QRgb, StackedSeries::kClasses> classRgb{};
    for (std::size_t cl = 0; cl < StackedSeries::kClasses; ++cl)
        classRgb[cl] = categoryColor(static_cast<MeasuredCategory>(cl)).rgb();
    const TimelineColumn* prev = nullptr;
    for (int c = 0; c < w; ++c) {
        const TimelineColumn& col = frame.columns[static_cast<std::size_t>(c)];
        if (!col.valid) {
            prev = nullptr;
            continue;
        }
        if (stack) {
            // Every allocation in its place: the unshown rest at the bottom, then each shown allocation
            // live at the column's peak in the order it was made, with an edge so that neighbours part.
            if (frame.stack.rest[static_cast<std::size_t>(c)] > 0)
                fill(c, y(frame.stack.rest[static_cast<std::size_t>(c)]), y(0), rest);
            for (std::uint32_t i = frame.stack.columnStart[static_cast<std::size_t>(c)];
                 i < frame.stack.columnStart[static_cast<std::size_t>(c) + 1]; ++i) {
                const AllocationStack::Piece& piece = frame.stack.pieces[i];
                const int bottom = y(piece.bottom), top = y(piece.top);
                if (top >= bottom)
                    continue; // under half a pixel
                fill(c, top, bottom - 1, stackRgb[piece.shown]);
                if (bottom - top > 3)
                    fill(c, top, top, stackEdge[piece.shown]);
            }
        } else if (classes) {
            std::int64_t sum = 0;
            for (std::size_t cl = 0; cl < StackedSeries::kClasses; ++cl) {
                const std::int64_t v =
                    frame.classBytes[static_cast<std::size_t>(c) * StackedSeries::kClasses + cl];
                if (v <= 0)
                    continue;
                const int bottom = y(sum), top = y(sum + v);
                if (top < bottom) // under half a pixel adds nothing: the next class starts on the same row
                    fill(c, top, bottom - 1, classRgb[cl]);
                sum += v;
            }
        } else if (col.allocatedMax > col.restBottom && !stack)
            fill(c, y(col.allocatedMax), y(col.restBottom), rest);
        for (std::size_t b = 0; b < nb && !classes; ++b) {
            const std::size_t at = b * static_cast<std::size_t>(frame.width) + static_cast<std::size_t>(c);
            if (frame.bandTop[at] < 0)
                continue;
            const int top = y(frame.bandTop[at]), bottom = y(frame.bandBottom[at]);
            fill(c, top, std::max(top, bottom - (bottom > top ? 1 : 0)), bandRgb[b]);
            if (bottom - top > 3) // an edge, so that neighbours of one colour stay apart
                fill(c, top, top, bandEdge[b]);
        }
        // The lines: this column's extremes, joined to the previous column's so that steps stay connected.
        std::int64_t rLo = col.reservedMin, rHi = col.reservedMax, aLo = col.allocatedMin,
                     aHi = col.allocatedMax;
        if (prev) {
            rLo = std::min(rLo, prev->reservedMax), rHi = std::max(rHi, prev->reservedMin);
            aLo = std::min(aLo, prev->allocatedMax), aHi = std::max(aHi, prev->allocatedMin);
        }
        if (rHi > 0)
            fill(c, y(rHi), y(rLo), reserved);
        if (classes || stack) // the stack's outline: its top, joined to the previous column's
            fill(c, y(col.allocatedMax), y(prev ? prev->allocatedMax : col.allocatedMax), allocated);
        else
            fill(c, y(aHi), y(aLo), allocated);
        prev = &col;
    }
    return img;
}

void TimelineRenderer::paint(QPainter& p, const QRect& area, const std::vector<TimelineLane>& lanes,
                             const TimelineViewState& view, const ChartStyle& style,
                             std::vector<TimelineFrame>* frames) {
    p.fillRect(area, background(style.dark));
    if (frames)
        frames->clear();
    if (lanes.empty() || !(view.x1 > view.x0))
        return;
    const QColor text = textColor(style.dark), grid = gridColor(style.dark);
    QFont small = p.font();
    small.setPointSizeF(std::max(7.0, small.pointSizeF() * 0.85));
    p.setFont(small);
    const QFontMetrics fm(small);
    auto px = [&](const QRect& plot, double x) {
        return plot.left() + (x - view.x0) / (view.x1 - view.x0) * plot.width();
    };
    for (std::size_t i = 0; i < lanes.size(); ++i) {
        const TimelineLane& lane = lanes[i];
        const QRect plot = plotRect(area, static_cast<int>(lanes.size()), static_cast<int>(i));
        const Timeline& tl = *lane.timeline;
        const TimelineDetail detail = detailOf(lane, view);
        TimelineFrame frame = tl.frame(view.axis, view.x0, view.x1, plot.width(), detail);
        const std::int64_t yMax = TimelineRenderer::yMax(tl, style);
        const bool byCategory = detail == TimelineDetail::Categories;
        p.drawImage(plot.topLeft(), spans(lane, frame, plot.size(), style, yMax, detail));
        // Y grid and labels.
        double step = 0;
        const Unit unit = unitFor(static_cast<double>(tl.maxValue()), style);
        auto yt = ticks(0, static_cast<double>(yMax) / unit.size, std::max(2, plot.height() / 45), &step);
        step *= unit.size;
        for (double& t : yt)
            t *= unit.size;
        for (double v : yt) {
            const int yy = plot.bottom() - static_cast<int>(std::lround(v / yMax * (plot.height() - 1)));
            p.setPen(QPen(grid, 1, Qt::DotLine));
            if (v > 0)
                p.drawLine(plot.left(), yy, plot.right(), yy);
            p.setPen(text);
            int precision = 0; // as many decimals as the step needs (2.5 GiB steps need one)
            const double stepInUnit = step / unit.size;
            while (precision < 3 && std::abs(std::round(stepInUnit * std::pow(10.0, precision)) -
                                             stepInUnit * std::pow(10.0, precision)) > 1e-6)
                ++precision;
            p.drawText(QRect(area.left(), yy - 8, kLeft - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
                       unit.format(v, precision));
        }
        p.setPen(QPen(grid.darker(130), 1));
        p.setBrush(Qt::NoBrush);
        p.drawRect(plot.adjusted(0, 0, -1, -1));
        // Annotations in the strip above the plot.
        const QRect strip(plot.left(), plot.top() - kStrip, plot.width(), kStrip - 2);
        const std::string& key = lane.trace->trace.devices.at(lane.device).key;
        int shade = 0;
        for (const Annotation& a : lane.trace->trace.annotations) {
            if (!a.device.empty() && a.device != key)
                continue;
            double xa = static_cast<double>(a.start),
                   xb = a.end == INT64_MAX ? view.x1 : static_cast<double>(a.end);
            if (view.axis == TimelineAxis::Event || !tl.hasTime()) {
                if (!tl.hasTime())
                    continue;
                const std::size_t ea = tl.eventAt(TimelineAxis::Time, xa),
                                  eb = tl.eventAt(TimelineAxis::Time, xb);
                xa = ea == kBeforeFirstEvent ? 0 : static_cast<double>(ea);
                xb = eb == kBeforeFirstEvent ? 0 : static_cast<double>(eb);
            }
            const double l = std::max(px(plot, xa), double(plot.left())),
                         r = std::min(px(plot, xb), double(plot.right()));
            if (r < plot.left() || l > plot.right())
                continue;
            const QRectF box(l, strip.top(), std::max(r - l, 2.0), strip.height());
            QColor fillColor = bandColor(4 + (shade++ % 3), style.dark);
            fillColor.setAlpha(90);
            p.fillRect(box, fillColor);
            p.fillRect(QRectF(box.left(), strip.top(), 1, plot.bottom() - strip.top()),
                       QColor(128, 128, 128, 60));
            p.setPen(text);
            p.drawText(box.adjusted(2, 0, -1, 0), Qt::AlignLeft | Qt::AlignVCenter,
                       fm.elidedText(QString::fromStdString(a.name), Qt::ElideRight,
                                     static_cast<int>(box.width()) - 3));
        }
        p.save();
        p.setClipRect(plot);
        // The plan over the run: its total as a dashed line, and by category each category's top (the
        // plan's own stack) dashed in that category's colour, over the measured areas.
        if (lane.plan && lane.plan->points.size() > 1 && yMax > 0) {
            const auto& pts = lane.plan->points;
            auto point = [&](const PlanOverlayPoint& q, std::int64_t v) {
                const double x = view.axis == TimelineAxis::Time && tl.hasTime() ? q.time : q.event;
                return QPointF(px(plot, x),
                               plot.bottom() - static_cast<double>(v) / yMax * (plot.height() - 1));
            };
            p.setRenderHint(QPainter::Antialiasing, true);
            if (byCategory)
                for (std::size_t k = 0; k + 1 < kMeasuredCategories; ++k) {
                    bool any = false;
                    for (const PlanOverlayPoint& q : pts)
                        any = any || q.bytes[k] > 0;
                    if (!any)
                        continue;
                    QPolygonF line;
                    for (const PlanOverlayPoint& q : pts) {
                        std::int64_t cumulative = 0;
                        for (std::size_t j = 0; j <= k; ++j)
                            cumulative += q.bytes[j];
                        line << point(q, cumulative);
                    }
                    p.setPen(
                        QPen(categoryColor(static_cast<MeasuredCategory>(k)).darker(160), 1.5, Qt::DashLine));
                    p.drawPolyline(line);
                }
            QPolygonF total;
            for (const PlanOverlayPoint& q : pts)
                total << point(q, q.total());
            p.setPen(QPen(allocatedColor(style.dark), 2, Qt::DashLine));
            p.drawPolyline(total);
            p.setRenderHint(QPainter::Antialiasing, false);
        }
        // OOM events: where the allocator gave up, with what was asked and what the device had free.
        for (const OomEvent& oom : lane.index().ooms()) {
            const double x = px(plot, tl.xOf(view.axis, oom.index));
            p.setPen(QPen(QColor(0xd3, 0x2f, 0x2f), 2));
            p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
            const QString label =
                oom.deviceFree > 0
                    ? QStringLiteral("OOM: asked %1, %2 free")
                          .arg(style.format(static_cast<double>(oom.requested)),
                               style.format(static_cast<double>(oom.deviceFree)))
                    : QStringLiteral("OOM: asked %1").arg(style.format(static_cast<double>(oom.requested)));
            const int tw = fm.horizontalAdvance(label);
            // Left of the line when it would run off the plot's right edge.
            p.drawText(
                QPointF(x + 4 + tw > plot.right() ? x - 4 - tw : x + 4, plot.top() + fm.height() * 2.2),
                label);
        }
        // The peak of allocated memory; of reserved where the file records no allocated bytes (nvidia-smi's
        // used memory), whose allocated line is zeros and was marked "peak 0.00 GiB".
        const DeviceSummary& s = lane.summary();
        const std::size_t peakAfter = s.allocatedRecorded ? s.peakAllocatedAfter : s.peakReservedAfter;
        const std::int64_t peakBytes = s.allocatedRecorded ? s.peakAllocated : s.peakReserved;
        if (peakAfter != kBeforeFirstEvent && yMax > 0) {
            const double x =
                px(plot, tl.xOf(view.axis, peakAfter) + (view.axis == TimelineAxis::Event ? 0.5 : 0));
            const double yy = plot.bottom() - static_cast<double>(peakBytes) / yMax * (plot.height() - 1);
            if (x >= plot.left() - 1 && x <= plot.right() + 1) {
                QPainterPath tri;
                tri.moveTo(x, yy - 1);
                tri.lineTo(x - 5, yy - 9);
                tri.lineTo(x + 5, yy - 9);
                tri.closeSubpath();
                p.setRenderHint(QPainter::Antialiasing, true);
                p.fillPath(tri, reservedColor(style.dark));
                p.setRenderHint(QPainter::Antialiasing, false);
                const QString label =
                    QStringLiteral("peak %1").arg(unit.format(static_cast<double>(peakBytes)));
                const int tw = fm.horizontalAdvance(label);
                const double lx = x + 7 + tw > plot.right() ? x - 7 - tw : x + 7;
                p.setPen(text);
                // Below the lane's title line when the peak is at the top of the plot.
                p.drawText(QPointF(lx, std::max(yy - 4, double(plot.top() + 2 * fm.height() + fm.ascent()))),
                           label);
            }
        }
        // The selected range and moment.
        if (view.range) {
            const double l = px(plot, view.range->first), r = px(plot, view.range->second);
            p.fillRect(QRectF(l, plot.top(), std::max(r - l, 1.0), plot.height()),
                       QColor(0x42, 0x85, 0xf4, 50));
        }
        if (view.moment) {
            const double x = px(plot, *view.moment);
            p.setPen(QPen(QColor(0x42, 0x85, 0xf4), 1.5));
            p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
        }
        p.restore();
        // The lane's name and a legend of what the lines are.
        p.setPen(text);
        const DeviceTrace& dev = lane.trace->trace.devices.at(lane.device);
        const bool reservedKnown = !dev.hasTotals || dev.hasReservedTotals;
        const QString title =
            lane.label +
            (s.allocatedRecorded ? QStringLiteral("  ·  peak %1 allocated, ")
                                       .arg(unit.format(static_cast<double>(s.peakAllocated)))
                                 : QStringLiteral("  ·  allocated not recorded, peak ")) +
            (reservedKnown
                 ? QStringLiteral("%1 reserved").arg(unit.format(static_cast<double>(s.peakReserved)))
                 : QStringLiteral("reserved not recorded"));
        // By category: a legend of the categories the view holds, right-aligned on the title's line when
        // the title keeps room beside it, else on a line of its own under it.
        int legendWidth = 0;
        if (byCategory) {
            std::array<bool, StackedSeries::kClasses> present{};
            for (std::size_t i2 = 0; i2 < frame.classBytes.size(); ++i2)
                present[i2 % StackedSeries::kClasses] =
                    present[i2 % StackedSeries::kClasses] || frame.classBytes[i2] > 0;
            const int box = fm.ascent() - 2, gap = 10;
            struct Entry {
                QString name;
                QColor color; // invalid: no swatch
            };
            std::vector<Entry> entries; // left to right
            if (lane.plan && !lane.plan->points.empty())
                entries.push_back({QStringLiteral("plan (dashed)"), QColor()});
            for (std::size_t k = 0; k < StackedSeries::kClasses; ++k)
                if (present[k])
                    entries.push_back(
                        {QString::fromUtf8(measuredCategoryLabel(static_cast<MeasuredCategory>(k))),
                         categoryColor(static_cast<MeasuredCategory>(k))});
            auto widthOf = [&](const Entry& e) {
                return fm.horizontalAdvance(e.name) + (e.color.isValid() ? box + 4 : 0) + gap;
            };
            int total = 0;
            for (const Entry& e : entries)
                total += widthOf(e);
            const bool ownLine = total > plot.width() - 12 - std::min(320, plot.width() / 3);
            // What does not fit the plot's width gives way from the end: the small categories at the top of
            // the stack (workspaces, unattributed) before the model state at its bottom.
            while (!entries.empty() && total > plot.width() - 12) {
                total -= widthOf(entries.back());
                entries.pop_back();
            }
            const double baseline = plot.top() + 3 + fm.ascent() + (ownLine ? fm.height() : 0);
            int x = plot.right() - 6 - total + gap;
            for (const Entry& e : entries) {
                if (e.color.isValid()) {
                    p.fillRect(QRectF(x, baseline - box, box, box), e.color);
                    x += box + 4;
                }
                p.setPen(text);
                p.drawText(QPointF(x, baseline), e.name);
                x += fm.horizontalAdvance(e.name) + gap;
            }
            x = plot.right() - 6 - total;
            legendWidth = ownLine ? 0 : plot.right() - 6 - x;
        }
        p.setPen(text);
        p.drawText(QPointF(plot.left() + 6, plot.top() + 3 + fm.ascent()),
                   fm.elidedText(title, Qt::ElideRight, std::max(40, plot.width() - 12 - legendWidth)));
        if (frames)
            frames->push_back(std::move(frame));
        if (i + 1 == lanes.size()) { // the x axis under the last lane
            double xs = 0;
            auto xt = ticks(view.x0, view.x1, std::max(2, plot.width() / 110), &xs);
            if (view.axis == TimelineAxis::Event && xs < 1) { // events are whole: no ticks between them
                xt.clear();
                for (double x = std::ceil(view.x0); x <= view.x1 && xt.size() < 100; ++x)
                    xt.push_back(x);
                xs = 1;
            }
            for (double x : xt) {
                const double xx = px(plot, x);
                if (xx < plot.left() + 24) // would run into the axis name
                    continue;
                p.setPen(QPen(grid.darker(130), 1));
                p.drawLine(QPointF(xx, plot.bottom()), QPointF(xx, plot.bottom() + 4));
                p.setPen(text);
                p.drawText(QRectF(xx - 60, plot.bottom() + 4, 120, kAxis - 4),
                           Qt::AlignHCenter | Qt::AlignTop, xLabel(view, x, xs));
            }
            const QString axisName =
                view.axis == TimelineAxis::Event ? QStringLiteral("event") : QStringLiteral("time");
            p.drawText(QRect(area.left(), plot.bottom() + 4, kLeft - 6, kAxis - 4),
                       Qt::AlignRight | Qt::AlignTop, axisName);
        }
    }
}

std::vector<TimelineLane> drawnLanes(const std::shared_ptr<const LoadedTrace>& trace,
                                     const TraceDrawing& drawing, std::size_t device) {
    std::vector<TimelineLane> lanes;
    for (TimelineLane& lane : lanesOf(trace)) {
        if (device != SIZE_MAX && lane.device != device)
            continue;
        if (drawing.byAllocation)
            lane.timeline->setAllocationStack(std::make_shared<const AllocationStack>(lane.index()));
        if (drawing.byCategory)
            lane.timeline->setClasses(
                categorySeries(trace->trace, lane.index(), drawing.rules, drawing.scenario));
        if (drawing.scenario && drawing.scenario->model.known)
            lane.plan = std::make_shared<const PlanOverlay>(
                planOverlay(*drawing.scenario, trace->trace, lane.index()));
        lanes.push_back(std::move(lane));
    }
    return lanes;
}

TimelineViewState wholeRunView(const std::vector<TimelineLane>& lanes, bool byCategory, bool byAllocation) {
    bool time = !lanes.empty();
    for (const auto& l : lanes)
        time = time && l.timeline->hasTime();
    TimelineViewState view;
    view.axis = time ? TimelineAxis::Time : TimelineAxis::Event;
    view.byCategory = byCategory;
    view.allocationStack = byAllocation;
    if (!lanes.empty())
        view.secondsPerUnit = timeUnitSeconds(lanes.front().trace->trace.format);
    const auto [lo, hi] = lanesDomain(lanes, view.axis);
    view.origin = view.x0 = lo;
    view.x1 = hi + (time ? (hi - lo) * 1e-6 : 0);
    return view;
}

bool exportTraceTimeline(const std::shared_ptr<const LoadedTrace>& trace, const std::string& path, int w,
                         int h, std::string* error, const TraceDrawing& drawing) {
    ensureGuiApplication();
    const std::vector<TimelineLane> lanes = drawnLanes(trace, drawing);
    if (lanes.empty()) {
        *error = trace->path + ": the trace has no events to draw";
        return false;
    }
    const TimelineViewState view = wholeRunView(lanes, drawing.byCategory, drawing.byAllocation);
    ChartStyle style;
    return exportPainting(
        [&](QPainter* p, const QRectF& r) { TimelineRenderer::paint(*p, r.toRect(), lanes, view, style); },
        QFileInfo(QString::fromStdString(trace->path)).fileName(), path, w, h, error);
}

} // namespace headroom
