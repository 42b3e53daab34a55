// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/traceindex.h"
#include "ui/common/chartstyle.h"

#include <QWidget>

namespace headroom {

// The reserved segments at a moment, one row each, grouped by pool and stream: live blocks drawn inside
// their segment at their address, so fragmentation is visible; per row the allocated share and the
// largest free block. Rows are painted only where they are visible (put it in a QScrollArea).
class SegmentView : public QWidget {
    Q_OBJECT
public:
    explicit SegmentView(QWidget* parent = nullptr);
    void setSegments(std::vector<SegmentState> segments, const QString& caption);
    void setStyle(const ChartStyle& style);
    const std::vector<SegmentState>& segments() const { return m_segments; }
    QString summaryText() const;
    QSize sizeHint() const override;

protected:
    void paintEvent(QPaintEvent* e) override;

private:
    struct Row {
        int segment = -1; // -1: a pool/stream heading
        QString heading;
    };
    std::vector<SegmentState> m_segments;
    std::vector<Row> m_rows;
    QString m_caption;
    ChartStyle m_style;
    static constexpr int kRow = 20, kHeader = 40;
};

} // namespace headroom
