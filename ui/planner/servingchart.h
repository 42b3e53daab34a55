// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/serve/estimate.h"
#include "ui/common/chartstyle.h"

#include <QChart>

class QLineSeries;
class QCategoryAxis;
class QScatterSeries;
class QValueAxis;

namespace headroom {

// Inference: the tokens the KV cache holds and the requests served at once, against request length, for
// the chosen GPU, dtypes, parallelism and engine; the scenario's own length is marked.
class ServingChart : public QChart {
    Q_OBJECT
public:
    explicit ServingChart(QGraphicsItem* parent = nullptr);
    // Draws the serving curve (core/serve servingCurve) computed off the GUI thread.
    void setCurve(const std::vector<ServingPoint>& points, const Scenario& sc, const Estimate& est);
    void setStyle(const ChartStyle& style);
    const std::vector<ServingPoint>& points() const { return m_points; }

private:
    ChartStyle m_style;
    std::vector<ServingPoint> m_points;
    QLineSeries* m_tokens = nullptr;
    QLineSeries* m_concurrency = nullptr;
    QScatterSeries* m_currentTokens = nullptr;
    QScatterSeries* m_currentConcurrency = nullptr;
    // The two points' labels, each drawn by a marker-less series of its own so that it can sit inside the
    // plot: centred on its point, but moved in from an edge it would cross (the shortest request length is
    // the plot's left edge, where a centred label reached into the axis's ticks and title).
    QScatterSeries* m_tokensLabel = nullptr;
    QScatterSeries* m_requestsLabel = nullptr;
    void placeLabels();
    void labelLengths(); // the length axis' labels, as many as its width has room for
    // Request lengths on a log2 scale, labelled as people write them (1k, 2k, ... 128k with k = 1,024):
    // the series' x is log2 of the length, and the labels sit on the powers of two.
    QCategoryAxis* m_x = nullptr;
    QValueAxis* m_yTokens = nullptr;
    QValueAxis* m_yConcurrency = nullptr;
};

} // namespace headroom
