#include "ui/breakdownchart.h"

#include "ui/categorycolors.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QLineSeries>
#include <QPen>
#include <QStackedBarSeries>
#include <QValueAxis>
#include <cmath>

namespace headroom {

static constexpr double kGiB = 1073741824.0;

QString verdictText(const Estimate& est) {
    const double used = est.capacityBytes > 0 ? 100.0 * est.peakBytes / est.capacityBytes : 0;
    if (est.fits)
        return QStringLiteral("Fits: %1 GiB headroom (%2% of %3 GiB used)")
            .arg(est.headroomBytes() / kGiB, 0, 'f', 2)
            .arg(used, 0, 'f', 1)
            .arg(est.capacityBytes / kGiB, 0, 'f', 2);
    return QStringLiteral("Does not fit: over by %1 GiB (%2% of %3 GiB)")
        .arg(-est.headroomBytes() / kGiB, 0, 'f', 2)
        .arg(used, 0, 'f', 1)
        .arg(est.capacityBytes / kGiB, 0, 'f', 2);
}

QChart* createBreakdownChart(const Scenario& sc, const Estimate& est) {
    auto* chart = new QChart;
    chart->setTitle(QStringLiteral("%1 — %2").arg(
        QString::fromStdString(sc.name.empty() ? sc.modelLabel : sc.name), verdictText(est)));
    chart->setAnimationOptions(QChart::NoAnimation);

    // Without pipeline parallelism every GPU holds the same: one bar. Otherwise one bar per stage.
    std::vector<const StageEstimate*> bars;
    for (const auto& r : est.ranks)
        bars.push_back(&r);
    const bool single = bars.size() == 1;

    auto* series = new QStackedBarSeries;
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        const Category cat = categoryAt(i);
        bool any = false;
        for (const auto* r : bars)
            any = any || r->peak[cat] > 0;
        if (!any)
            continue;
        auto* set = new QBarSet(QString::fromUtf8(categoryLabel(cat)));
        set->setColor(categoryColor(cat));
        set->setBorderColor(categoryColor(cat).darker(130));
        for (const auto* r : bars)
            *set << r->peak[cat] / kGiB;
        series->append(set);
    }
    series->setBarWidth(0.6);
    chart->addSeries(series);

    QStringList labels;
    for (const auto* r : bars)
        labels << (single ? QStringLiteral("Each of %1 GPUs").arg(sc.cluster.numGpus)
                          : QStringLiteral("Stage %1 (layers %2–%3)")
                                .arg(r->stage)
                                .arg(r->firstLayer)
                                .arg(r->firstLayer + r->layers - 1));
    auto* xAxis = new QBarCategoryAxis;
    xAxis->append(labels);
    chart->addAxis(xAxis, Qt::AlignBottom);
    series->attachAxis(xAxis);

    double top = est.capacityBytes;
    for (const auto& r : est.ranks)
        top = std::max(top, r.peak.total());
    auto* yAxis = new QValueAxis;
    yAxis->setTitleText(QStringLiteral("GiB per GPU"));
    yAxis->setRange(0, std::ceil(top * 1.08 / kGiB));
    yAxis->applyNiceNumbers(); // round tick values (0, 20, 40, ...) rather than fractions of the range
    yAxis->setLabelFormat(QStringLiteral("%.0f"));
    chart->addAxis(yAxis, Qt::AlignLeft);
    series->attachAxis(yAxis);

    // The capacity line spans the bars on a hidden value axis aligned with the category slots.
    auto* capacity = new QLineSeries;
    capacity->setName(QStringLiteral("%1 usable (%2 GiB)")
                          .arg(QString::fromStdString(sc.cluster.gpu))
                          .arg(est.capacityBytes / kGiB, 0, 'f', 1));
    const double n = static_cast<double>(labels.size());
    capacity->append(-0.5, est.capacityBytes / kGiB);
    capacity->append(n - 0.5, est.capacityBytes / kGiB);
    QPen pen(est.fits ? QColor(0x2c, 0x2c, 0x2c) : QColor(0xd6, 0x27, 0x28));
    pen.setWidth(2);
    pen.setStyle(Qt::DashLine);
    capacity->setPen(pen);
    chart->addSeries(capacity);
    auto* lineX = new QValueAxis;
    lineX->setRange(-0.5, n - 0.5);
    lineX->setVisible(false);
    chart->addAxis(lineX, Qt::AlignBottom);
    capacity->attachAxis(lineX);
    capacity->attachAxis(yAxis);

    chart->legend()->setAlignment(Qt::AlignRight);
    return chart;
}

} // namespace headroom
