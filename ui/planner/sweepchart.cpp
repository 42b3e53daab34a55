// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/planner/sweepchart.h"

#include "core/serve/estimate.h"

#include <QFontMetricsF>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QScatterSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

namespace headroom {

namespace {

// Values from lo to hi on a log scale, each rounded to a multiple of `step`, without repeats.
std::vector<long long> logValues(long long lo, long long hi, long long step, int count) {
    std::vector<long long> out;
    for (int i = 0; i < count; ++i) {
        const double v =
            std::exp(std::log(double(lo)) + (std::log(double(hi)) - std::log(double(lo))) * i / (count - 1));
        const long long r = std::max(step, static_cast<long long>(std::llround(v / double(step))) * step);
        if (out.empty() || r > out.back())
            out.push_back(r);
    }
    return out;
}

} // namespace

SweepResult computeSweep(const Scenario& sc, const Estimate& est, SweepVariable variable) {
    SweepResult r;
    Scenario probe = sc;
    const bool training = sc.mode == Mode::Training;
    switch (variable) {
    case SweepVariable::MicroBatch: {
        const long long limit = est.maxMicroBatchSize; // already exact: no need to estimate again
        r.limit = limit;
        const long long hi = std::max<long long>(16, std::min<long long>(1 << 16, limit * 2));
        for (long long b : logValues(1, hi, 1, 48)) {
            (training ? probe.training.microBatchSize : probe.inference.batchSize) = static_cast<int>(b);
            r.points.append({double(b), estimate(probe).peakBytes});
        }
        break;
    }
    case SweepVariable::SequenceLength: {
        const long long step = sc.cluster.contextParallel;
        r.limit = maxSequenceLength(sc);
        const long long hi = std::max<long long>(4096, std::min<long long>(1 << 22, r.limit * 2));
        for (long long s : logValues(128, hi, step, 48)) {
            (training ? probe.training.sequenceLength : probe.inference.contextLength) = static_cast<int>(s);
            r.points.append({double(s), estimate(probe).peakBytes});
        }
        break;
    }
    case SweepVariable::GpuCount: {
        // Data parallelism grows; tensor, pipeline and context parallelism stay as they are.
        const int grid = sc.cluster.tensorParallel * sc.cluster.pipelineParallel * sc.cluster.contextParallel;
        const int ep = sc.cluster.expertParallel;
        for (long long dp = ep; dp * grid <= 65536; dp *= 2) {
            probe.cluster.numGpus = static_cast<int>(dp * grid);
            const Estimate e = estimate(probe);
            r.points.append({double(dp * grid), e.peakBytes});
            if (e.fits && r.limit == 0)
                r.limit = dp * grid;
        }
        break;
    }
    }
    return r;
}

SweepChart::SweepChart(QGraphicsItem* parent) : QChart(parent) {
    m_line = new QLineSeries(this);
    m_capacity = new QLineSeries(this);
    m_limit = new QScatterSeries(this);
    m_current = new QScatterSeries(this);
    m_limit->setMarkerSize(11);
    m_limitLabel = new QScatterSeries(this);
    m_limitLabel->setMarkerSize(1);
    m_limitLabel->setColor(Qt::transparent);
    m_limitLabel->setBorderColor(Qt::transparent);
    m_limitLabel->setPointLabelsVisible(true);
    m_limitLabel->setPointLabelsClipping(false);
    m_current->setMarkerSize(8);
    m_current->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    m_x = new QLogValueAxis(this);
    m_x->setBase(2);
    m_x->setLabelFormat(QStringLiteral("%g"));
    m_y = new QValueAxis(this);
    m_y->setLabelFormat(QStringLiteral("%.0f"));
    addAxis(m_x, Qt::AlignBottom);
    addAxis(m_y, Qt::AlignLeft);
    for (QXYSeries* s : {static_cast<QXYSeries*>(m_line), static_cast<QXYSeries*>(m_capacity),
                         static_cast<QXYSeries*>(m_limit), static_cast<QXYSeries*>(m_current),
                         static_cast<QXYSeries*>(m_limitLabel)}) {
        addSeries(s);
        s->attachAxis(m_x);
        s->attachAxis(m_y);
    }
    legend()->hide();
    connect(this, &QChart::plotAreaChanged, this, [this] { placeLimitLabel(); });
    setStyle(m_style);
}

void SweepChart::placeLimitLabel() {
    const QRectF area = plotArea();
    if (m_limit->count() == 0 || area.width() <= 0) {
        m_limitLabel->clear();
        return;
    }
    const QPointF at = mapToPosition(m_limit->at(0), m_limit);
    const double w =
        QFontMetricsF(m_limitLabel->pointLabelsFont()).horizontalAdvance(m_limitLabel->pointLabelsFormat());
    double centre = at.x() + 8 + w / 2; // starting just right of the marker
    if (centre + w / 2 > area.right())
        centre = at.x() - 8 - w / 2; // or ending just left of it
    centre = std::max(centre, area.left() + w / 2);
    m_limitLabel->replace(QList<QPointF>{mapToValue(QPointF(centre, at.y()), m_limitLabel)});
}

void SweepChart::setStyle(const ChartStyle& style) {
    m_style = style;
    m_style.apply(this);
    QPen line(QColor(0x1f, 0x77, 0xb4));
    line.setWidth(2);
    m_line->setPen(line);
    m_limit->setColor(QColor(0x2c, 0xa0, 0x2c));
    QFont labels = m_limitLabel->pointLabelsFont();
    labels.setPointSizeF(m_style.presentation ? 12 : 8);
    m_limitLabel->setPointLabelsFont(labels);
    m_limitLabel->setPointLabelsColor(m_style.foreground());
    m_current->setColor(QColor(0xff, 0x7f, 0x0e));
    m_y->setTitleText(m_style.unitName());
}

void SweepChart::setScenario(const Scenario& sc, const Estimate& est) {
    m_result = computeSweep(sc, est, m_variable);
    const bool training = sc.mode == Mode::Training;
    QString name;
    double current = 0;
    switch (m_variable) {
    case SweepVariable::MicroBatch:
        name = training ? QStringLiteral("micro-batch") : QStringLiteral("batch");
        current = training ? sc.training.microBatchSize : sc.inference.batchSize;
        break;
    case SweepVariable::SequenceLength:
        name = training ? QStringLiteral("sequence length") : QStringLiteral("context length");
        current = training ? sc.training.sequenceLength : sc.inference.contextLength;
        break;
    case SweepVariable::GpuCount:
        name = QStringLiteral("GPUs");
        current = sc.cluster.numGpus;
        break;
    }
    QList<QPointF> pts;
    double top = est.capacityBytes;
    for (const QPointF& p : m_result.points) {
        pts.append({p.x(), m_style.scale(p.y())});
        top = std::max(top, std::min(p.y(), est.capacityBytes * 3)); // keep the capacity readable
    }
    m_line->replace(pts);
    const double lo = pts.isEmpty() ? 1 : pts.first().x(), hi = pts.isEmpty() ? 2 : pts.last().x();
    const double cap = m_style.scale(est.capacityBytes);
    m_capacity->replace(QList<QPointF>{{lo, cap}, {hi, cap}});
    const QPen pen = m_style.capacityPen(true);
    if (m_capacity->pen() != pen)
        m_capacity->setPen(pen);
    m_current->replace(QList<QPointF>{{current, m_style.scale(est.peakBytes)}});
    if (m_result.limit > 0 && m_result.limit >= lo && m_result.limit <= hi) {
        m_limit->replace(QList<QPointF>{{double(m_result.limit), cap}});
        const QString label = m_variable == SweepVariable::GpuCount
                                  ? QStringLiteral("fits from %1").arg(m_result.limit)
                                  : QStringLiteral("largest that fits: %1").arg(m_result.limit);
        if (m_limitLabel->pointLabelsFormat() != label)
            m_limitLabel->setPointLabelsFormat(label);
    } else {
        m_limit->clear();
    }
    m_x->setRange(lo, hi);
    setNiceRange(m_y, m_style.scale(top * 1.1));
    if (m_x->titleText() != name) {
        setTitle(QStringLiteral("Peak against %1").arg(name));
        m_x->setTitleText(name);
    }
    placeLimitLabel();
}

} // namespace headroom
