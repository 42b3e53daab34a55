// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "ui/traceview/timelinerenderer.h"

#include <QWidget>

namespace headroom {

// The interactive active-memory timeline: one lane per device or file, sharing the x axis.
// Wheel zooms around the pointer, drag pans, Shift+drag zooms to a rubber band, Ctrl+drag selects a
// range (Esc clears it), a click selects a moment, double-click shows the whole run.
class TimelineWidget : public QWidget {
    Q_OBJECT
public:
    explicit TimelineWidget(QWidget* parent = nullptr);

    void setLanes(std::vector<TimelineLane> lanes);
    const std::vector<TimelineLane>& lanes() const { return m_lanes; }
    void setStyle(const ChartStyle& style);
    // Colours of one lane's bands (by category); empty: a distinct colour per band.
    void setBandColors(std::size_t lane, std::vector<QColor> colors);
    void setAxis(TimelineAxis axis); // keeps the same stretch of the run in view
    // Memory by category (lanes whose timeline has classes) or the largest allocations as bands.
    void setByCategory(bool byCategory);
    // Every allocation in its place (lanes whose timeline has its allocation stack).
    void setAllocationStack(bool on);
    // Every allocation in its place, each in a colour of its own rather than its category's.
    void setAllocationColours(std::size_t lane, bool own);
    void setLaneAllocationStack(std::size_t lane, std::shared_ptr<const AllocationStack> stack);
    // Hands a lane the classes computed for it off the GUI thread (nullptr: none, the bands show).
    void setLaneClasses(std::size_t lane, std::shared_ptr<const StackedSeries> classes);
    // Hands a lane the paired scenario's plan laid over its run (nullptr: none).
    void setLanePlan(std::size_t lane, std::shared_ptr<const PlanOverlay> plan);
    // Whether lane i is drawn by category now (chosen, and its classes have arrived).
    bool drawsByCategory(std::size_t lane) const;
    const TimelineViewState& view() const { return m_view; }
    // The x extent of every lane together.
    std::pair<double, double> domain() const;
    void setVisibleRange(double x0, double x1); // clamped to the domain, at least a few units wide
    void showAll();
    void setMoment(std::optional<double> x);
    void setRange(std::optional<std::pair<double, double>> range);
    void zoom(double factor, double aroundX);
    void pan(double dx);
    int frameCount() const { return m_frames; } // repaints so far (tests, benchmarks)
    QSize sizeHint() const override { return {900, 320}; }

signals:
    void viewChanged();
    void momentSelected(double x, int lane);
    void rangeSelected(std::optional<std::pair<double, double>> range);

protected:
    void paintEvent(QPaintEvent*) override;
    void wheelEvent(QWheelEvent* e) override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent* e) override;
    void mouseDoubleClickEvent(QMouseEvent* e) override;
    void keyPressEvent(QKeyEvent* e) override;
    bool event(QEvent* e) override; // tooltips

private:
    double xAt(int px) const;
    int laneAt(int py) const;
    QString tooltipAt(QPoint pos) const;

    std::vector<TimelineLane> m_lanes;
    std::vector<TimelineFrame> m_lastFrames;
    TimelineViewState m_view;
    ChartStyle m_style;
    enum class Drag { None, Pan, Zoom, Range } m_drag = Drag::None;
    QPoint m_pressPos, m_lastPos;
    bool m_moved = false;
    int m_frames = 0;
};

} // namespace headroom
