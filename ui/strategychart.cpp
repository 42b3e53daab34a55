#include "ui/strategychart.h"

#include "ui/categorycolors.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QLineSeries>
#include <QPen>
#include <QStackedBarSeries>
#include <QValueAxis>
#include <cmath>

namespace headroom {

static constexpr DataParallel kStrategies[4] = {DataParallel::Ddp, DataParallel::Zero1, DataParallel::Zero2,
                                                DataParallel::Zero3};

StrategyChart::StrategyChart(QGraphicsItem* parent) : QChart(parent) {
    m_series = new QStackedBarSeries(this);
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        m_sets[i] = new QBarSet(QString::fromUtf8(categoryLabel(categoryAt(i))));
        m_series->append(m_sets[i]);
        *m_sets[i] << 0 << 0 << 0 << 0;
    }
    m_series->setBarWidth(0.6);
    addSeries(m_series);
    m_x = new QBarCategoryAxis(this);
    m_x->append({"DDP", "Z-1", "Z-2", "Z-3"});
    m_x->setTitleText(QStringLiteral("ZeRO stage"));
    m_y = new QValueAxis(this);
    m_y->setLabelFormat(QStringLiteral("%.0f"));
    addAxis(m_x, Qt::AlignBottom);
    addAxis(m_y, Qt::AlignLeft);
    m_series->attachAxis(m_x);
    m_series->attachAxis(m_y);
    m_capacity = new QLineSeries(this);
    addSeries(m_capacity);
    m_lineX = new QValueAxis(this);
    m_lineX->setRange(-0.5, 3.5);
    m_lineX->setVisible(false);
    addAxis(m_lineX, Qt::AlignBottom);
    m_capacity->attachAxis(m_lineX);
    m_capacity->attachAxis(m_y);
    legend()->hide();
    setStyle(m_style);
}

void StrategyChart::setStyle(const ChartStyle& style) {
    m_style = style;
    m_style.apply(this);
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        m_sets[i]->setColor(categoryColor(categoryAt(i)));
        m_sets[i]->setBorderColor(categoryColor(categoryAt(i)).darker(130));
    }
    m_y->setTitleText(m_style.unitName());
}

void StrategyChart::setScenario(const Scenario& sc, const Estimate& est) {
    Scenario probe = sc;
    double top = est.capacityBytes;
    for (int s = 0; s < 4; ++s) {
        probe.cluster.dataParallel = kStrategies[s];
        m_estimates[static_cast<std::size_t>(s)] = estimate(probe);
        top = std::max(top, m_estimates[static_cast<std::size_t>(s)].peakBytes);
    }
    for (std::size_t i = 0; i < kCategoryCount; ++i)
        for (int s = 0; s < 4; ++s) {
            const double v = m_style.scale(m_estimates[static_cast<std::size_t>(s)].perGpu.bytes[i]);
            if (m_sets[i]->at(s) != v)
                m_sets[i]->replace(s, v);
        }
    const QString title = QStringLiteral("DDP and ZeRO over %1 ranks").arg(est.dataParallelSize);
    if (this->title() != title)
        setTitle(title);
    const double cap = m_style.scale(est.capacityBytes);
    m_capacity->replace(QList<QPointF>{{-0.5, cap}, {3.5, cap}});
    QPen pen(m_style.dark ? QColor(0xdd, 0xdd, 0xdd) : QColor(0x2c, 0x2c, 0x2c));
    pen.setStyle(Qt::DashLine);
    pen.setWidth(2);
    if (m_capacity->pen() != pen)
        m_capacity->setPen(pen);
    m_y->setRange(0, std::max(1.0, std::ceil(m_style.scale(top * 1.1))));
    m_y->applyNiceNumbers();
}

} // namespace headroom
