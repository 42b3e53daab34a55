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
#include <limits>

namespace headroom {

namespace {

// Values from lo to hi on a log scale, each rounded to a multiple of `step`, without repeats.

} // namespace

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

void SweepChart::setSweep(const SweepResult& result, const Scenario& sc, const Estimate& est) {
    m_result = result;
    m_variable = result.variable;
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
    double top = est.capacityBytes, lowest = std::numeric_limits<double>::infinity();
    for (const auto& [x, y] : m_result.points) {
        pts.append({x, m_style.scale(y)});
        top = std::max(top, std::min(y, est.capacityBytes * 3)); // keep the capacity readable
        lowest = std::min(lowest, y);
    }
    // Unless nothing comes near it: a plan over three times the GPU at its smallest setting (a 70B model's
    // full fine-tune on one GPU, 1.1 TB at micro-batch 1) drew an empty chart. Its lowest point shows how
    // far the smallest setting is.
    if (std::isfinite(lowest))
        top = std::max(top, lowest);
    m_line->replace(pts);
    // The axis starts a fifth of a step before the first point, so that its first label is not drawn into
    // the corner where the value axis's "0" stands.
    const double lo = (pts.isEmpty() ? 1 : pts.first().x()) / 1.25, hi = pts.isEmpty() ? 2 : pts.last().x();
    const double cap = m_style.scale(est.capacityBytes);
    m_capacity->replace(QList<QPointF>{{lo, cap}, {hi, cap}});
    const QPen pen = m_style.capacityPen(true);
    if (m_capacity->pen() != pen)
        m_capacity->setPen(pen);
    m_current->replace(QList<QPointF>{{current, m_style.scale(est.gpuPeakBytes())}});
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
    // Powers of two label a sweep of up to nine doublings; a longer one (an inference batch into the
    // thousands) has a label every power of ten, where powers of two were elided to "..." at the chart's
    // width.
    const qreal base = std::log2(hi / lo) > 9 ? 10 : 2;
    if (m_x->base() != base)
        m_x->setBase(base);
    m_x->setRange(lo, hi);
    setNiceRange(m_y, m_style.scale(top * 1.1));
    if (m_x->titleText() != name) {
        setTitle(QStringLiteral("Peak against %1").arg(name));
        m_x->setTitleText(name);
    }
    placeLimitLabel();
}

} // namespace headroom
