// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/traceview/segmentview.h"

#include "ui/traceview/timelinerenderer.h"

#include <QPaintEvent>
#include <QPainter>
#include <algorithm>

namespace headroom {

SegmentView::SegmentView(QWidget* parent) : QWidget(parent) {
    setMinimumHeight(kHeader + kRow);
}

void SegmentView::setStyle(const ChartStyle& style) {
    m_style = style;
    update();
}

void SegmentView::setSegments(std::vector<SegmentState> segments, const QString& caption) {
    m_segments = std::move(segments);
    m_caption = caption;
    m_rows.clear();
    QString last;
    for (std::size_t i = 0; i < m_segments.size(); ++i) {
        const SegmentState& s = m_segments[i];
        const QString heading =
            tr("%1 pool · stream %2").arg(s.smallPool() ? tr("small") : tr("large")).arg(s.segment.stream);
        if (heading != last)
            m_rows.push_back({-1, heading});
        last = heading;
        m_rows.push_back({static_cast<int>(i), {}});
    }
    setMinimumHeight(kHeader + kRow * std::max<int>(1, static_cast<int>(m_rows.size())));
    updateGeometry();
    update();
}

QSize SegmentView::sizeHint() const {
    return {600, kHeader + kRow * std::max<int>(1, static_cast<int>(m_rows.size()))};
}

QString SegmentView::summaryText() const {
    std::int64_t reserved = 0, allocated = 0, largest = 0;
    for (const auto& s : m_segments) {
        reserved += s.segment.size;
        allocated += s.allocated;
        largest = std::max(largest, s.largestFree);
    }
    if (m_segments.empty())
        return tr("No segment events in this trace: PyTorch records them in snapshots "
                  "(torch.cuda.memory._record_memory_history).");
    return tr("%1 segments · reserved %2 · allocated %3 · reserved but unallocated %4 · largest free block "
              "%5")
        .arg(m_segments.size())
        .arg(m_style.format(static_cast<double>(reserved)), m_style.format(static_cast<double>(allocated)),
             m_style.format(static_cast<double>(reserved - allocated)),
             m_style.format(static_cast<double>(largest)));
}

void SegmentView::paintEvent(QPaintEvent* e) {
    QPainter p(this);
    p.fillRect(e->rect(), palette().base());
    const QColor text = palette().text().color();
    p.setPen(text);
    p.drawText(QRect(8, 2, width() - 16, 18), Qt::AlignLeft | Qt::AlignVCenter, m_caption);
    p.drawText(QRect(8, 20, width() - 16, 18), Qt::AlignLeft | Qt::AlignVCenter, summaryText());
    std::int64_t widest = 1;
    for (const auto& s : m_segments)
        widest = std::max(widest, s.segment.size);
    const int labelW = 150, infoW = 250;
    const int barMax = std::max(width() - labelW - infoW - 24, 40);
    const QColor block = TimelineRenderer::bandColor(0, m_style.dark),
                 freeC = palette().alternateBase().color().darker(108);
    const int firstRow = std::max(0, (e->rect().top() - kHeader) / kRow);
    const int lastRow =
        std::min<int>(static_cast<int>(m_rows.size()) - 1, (e->rect().bottom() - kHeader) / kRow + 1);
    for (int r = firstRow; r <= lastRow; ++r) {
        const int y = kHeader + r * kRow;
        const Row& row = m_rows[static_cast<std::size_t>(r)];
        if (row.segment < 0) {
            QFont f = p.font();
            f.setBold(true);
            p.setFont(f);
            p.drawText(QRect(8, y, width() - 16, kRow), Qt::AlignLeft | Qt::AlignVCenter, row.heading);
            f.setBold(false);
            p.setFont(f);
            continue;
        }
        const SegmentState& s = m_segments[static_cast<std::size_t>(row.segment)];
        p.drawText(QRect(16, y, labelW - 16, kRow), Qt::AlignLeft | Qt::AlignVCenter,
                   QStringLiteral("0x") + QString::number(s.segment.addr, 16));
        // Larger segments are wider (square root, so 2 MiB segments stay visible beside 1 GiB ones).
        const double frac = std::sqrt(static_cast<double>(s.segment.size) / static_cast<double>(widest));
        const int w = std::max(24, static_cast<int>(barMax * frac));
        const QRect bar(labelW, y + 3, w, kRow - 6);
        p.fillRect(bar, freeC);
        const double k = w / static_cast<double>(std::max<std::int64_t>(s.segment.size, 1));
        for (const Allocation& b : s.blocks) {
            const double x0 = bar.left() + static_cast<double>(b.addr - s.segment.addr) * k;
            const double bw = std::max(1.0, static_cast<double>(b.size) * k);
            p.fillRect(QRectF(x0, bar.top(), std::min(bw, bar.right() + 1 - x0), bar.height()), block);
        }
        p.setPen(palette().mid().color());
        p.drawRect(bar.adjusted(0, 0, -1, -1));
        p.setPen(text);
        p.drawText(QRect(labelW + w + 8, y, width() - labelW - w - 16, kRow),
                   Qt::AlignLeft | Qt::AlignVCenter,
                   tr("%1 of %2 · %3 blocks · largest free %4")
                       .arg(m_style.format(static_cast<double>(s.allocated)),
                            m_style.format(static_cast<double>(s.segment.size)))
                       .arg(s.blocks.size())
                       .arg(m_style.format(static_cast<double>(s.largestFree))));
    }
}

} // namespace headroom
