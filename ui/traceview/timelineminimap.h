// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <QImage>
#include <QWidget>

namespace headroom {

class TimelineWidget;

// The whole run in a thin strip with the visible window outlined; click or drag to move the window.
class TimelineMinimap : public QWidget {
    Q_OBJECT
public:
    explicit TimelineMinimap(TimelineWidget* timeline, QWidget* parent = nullptr);
    QSize sizeHint() const override { return {900, 46}; }
    void invalidate() {
        m_cache = QImage();
        update();
    }

protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void resizeEvent(QResizeEvent*) override { invalidate(); }

private:
    void centreOn(int px);
    QRect plot() const;
    TimelineWidget* m_timeline;
    QImage m_cache;
};

} // namespace headroom
