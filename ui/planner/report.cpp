// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/planner/report.h"

#include "core/compare/trackrecord.h"
#include "core/io/estimatewords.h"
#include "core/plan/settingnames.h"

#include "core/plan/sweeps.h"

#include "core/io/bytesformat.h"
#include "core/serve/estimate.h"
#include "core/version.h"
#include "ui/common/chartexport.h"
#include "ui/planner/breakdownchart.h"
#include "ui/planner/servingchart.h"
#include "ui/planner/strategychart.h"
#include "ui/planner/sweepchart.h"

#include <QBuffer>
#include <QDate>
#include <QFileInfo>
#include <QFont>
#include <QFontMetricsF>
#include <QImage>
#include <QLocale>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSaveFile>
#include <algorithm>
#include <memory>

namespace headroom {

namespace {} // namespace

Report buildReport(const Scenario& sc, const Estimate& est, const Comparison* measured,
                   const ChartStyle& style) {
    Report r;
    const QLocale locale(QLocale::English);
    auto count = [&](long long n) { return locale.toString(n); };
    r.title = QString::fromStdString(sc.name.empty() ? sc.modelLabel : sc.name);
    const auto& c = sc.cluster;
    r.subtitle = QStringLiteral("%1 · %2 × %3 · Headroom %4 · %5")
                     .arg(QString::fromStdString(sc.modelLabel))
                     .arg(c.numGpus)
                     .arg(QString::fromStdString(c.gpu), QString::fromUtf8(version()),
                          QDate::currentDate().toString(Qt::ISODate));
    r.fits = est.fits;
    r.verdict = QString::fromStdString(describeEstimate(sc, est, style.unit).verdict);

    r.settings.title = QStringLiteral("Settings");
    r.settings.header = {QStringLiteral("Setting"), QStringLiteral("Value")};
    auto row = [&](const QString& k, const QString& v) { r.settings.rows.push_back({k, v}); };
    row(QStringLiteral("Model"), QString::fromStdString(sc.modelLabel));
    row(QStringLiteral("Parameters"), est.activeParameters != est.parameters
                                          ? QStringLiteral("%1 (%2 active)")
                                                .arg(count(static_cast<long long>(est.parameters)),
                                                     count(static_cast<long long>(est.activeParameters)))
                                          : count(static_cast<long long>(est.parameters)));
    if (sc.mode == Mode::Training) {
        const auto& t = sc.training;
        row(QStringLiteral("Framework"),
            QString::fromStdString(labelOf(frameworkNames(), t.framework)) +
                (t.frameworkVersion.empty()
                     ? QString()
                     : QStringLiteral(" ") + QString::fromStdString(t.frameworkVersion)) +
                (t.compile ? QStringLiteral(", torch.compile") : QString()));
        // How that profile's plans have held against the runs the project checks, in two short rows (the
        // window and the CLI say it in one line).
        if (const TrackRecord* tr = trackRecordOf(t.framework); tr && tr->validateRuns > 0) {
            row(QStringLiteral("Checked on"), QStringLiteral("%1 runs kept apart from its fit (%2)")
                                                  .arg(tr->validateRuns)
                                                  .arg(QString::fromUtf8(tr->counters)));
            row(QStringLiteral("Error on them"), QStringLiteral("median %1%, worst %2%")
                                                     .arg(100 * tr->validateMedian, 0, 'f', 1)
                                                     .arg(100 * tr->validateWorst, 0, 'f', 1));
        } else if (tr) {
            // Built on recorded runs, none kept apart: say so rather than a median of nothing.
            row(QStringLiteral("Checked on"), QStringLiteral("no run kept apart from its fit (%1)")
                                                  .arg(QString::fromUtf8(tr->counters)));
            row(QStringLiteral("Error on its fit"), QStringLiteral("%1 runs, median %2%")
                                                        .arg(tr->fitRuns)
                                                        .arg(100 * tr->fitMedian, 0, 'f', 1));
        } else {
            row(QStringLiteral("Checked on"), QStringLiteral("no published or recorded run yet"));
        }
        if (sc.calibration.present) {
            // Calibrated on recorded runs: how such plans have held, whatever the profile.
            const CalibrationTrackRecord& cr = calibrationTrackRecord();
            row(QStringLiteral("Calibrated"), QStringLiteral("%1 runs kept apart: median %2%, worst %3%")
                                                  .arg(cr.validateRuns)
                                                  .arg(100 * cr.validateMedian, 0, 'f', 1)
                                                  .arg(100 * cr.validateWorst, 0, 'f', 1));
        }
        if (t.fineTuning.adapters()) {
            // Three short rows: the settings column wraps, and a long one runs into the next row.
            const FineTuning& f = t.fineTuning;
            QString method = QString::fromStdString(nameOf(fineTuneMethodNames(), f.method)).toUpper();
            method = method.replace(QStringLiteral("ORA"), QStringLiteral("oRA")); // LoRA, QLoRA, DoRA
            if (f.baseQuantization != BaseQuantization::None)
                method += QStringLiteral(", ") +
                          QString::fromStdString(labelOf(baseQuantizationNames(), f.baseQuantization));
            row(QStringLiteral("Fine-tuning"), QStringLiteral("%1 rank %2").arg(method).arg(f.rank));
            QStringList targets;
            for (const std::string& m : f.targets)
                targets << QString::fromStdString(m).remove(QStringLiteral("_proj"));
            row(QStringLiteral("Adapted layers"), targets.join(QStringLiteral(", ")));
            row(QStringLiteral("Trainable"), count(static_cast<long long>(est.trainableParameters)));
        }
        row(QStringLiteral("Micro-batch × sequence"),
            QStringLiteral("%1 × %2").arg(t.microBatchSize).arg(t.sequenceLength));
        row(QStringLiteral("Accumulation steps"), QString::number(t.gradientAccumulationSteps));
        row(QStringLiteral("Precision"), QString::fromStdString(t.precision));
        row(QStringLiteral("Checkpointing"),
            QString::fromStdString(labelOf(checkpointingNames(), t.checkpointing)));
        row(QStringLiteral("Attention"), QString::fromStdString(labelOf(attentionNames(), t.attention)));
    } else {
        const auto& in = sc.inference;
        row(QStringLiteral("Engine"),
            QString::fromStdString(labelOf(engineNames(), in.engine) +
                                   (est.serving.engineVersion.empty()
                                        ? std::string()
                                        : " (release " + est.serving.engineVersion + ")")));
        if (in.engine == Engine::None || in.engine == Engine::HuggingFace)
            row(QStringLiteral("Batch × context"),
                QStringLiteral("%1 × %2").arg(in.batchSize).arg(in.contextLength));
        else
            row(QStringLiteral("Request length"), count(in.requestLength()));
        row(QStringLiteral("Weights"),
            weightsStayQuantised(sc)
                ? QString::fromStdString(sc.model.quantization.label())
                : QString::fromStdString(in.weightDtype == "checkpoint" ? "bf16" : in.weightDtype));
        // A forward that keeps none (cs336_basics', one with autograd on, one calibrated to keep none) has
        // no cache dtype to show.
        row(QStringLiteral("KV cache"),
            sc.keepsNoKvCache() ? QStringLiteral("none") : QString::fromStdString(in.kvCacheDtype));
        // The positions whose logits the forward returns, where they are not what its cache implies.
        if (in.engine == Engine::None && in.logits != in.usualLogits())
            row(QStringLiteral("Logits"), QString::fromStdString(labelOf(forwardLogitsNames(), in.logits)));
        if (in.engine == Engine::None && (in.gradEnabled || in.inferenceMode))
            row(QStringLiteral("Grad mode"),
                !in.gradEnabled         ? QStringLiteral("torch.inference_mode")
                : in.previousOutputHeld ? QStringLiteral("autograd on (no backward), previous output held")
                                        : QStringLiteral("autograd on (no backward)"));
        // How the engine's plans have held against the start-up logs, in two short rows.
        if (const ServingTrackRecord* tr = est.serving.engine ? servingTrackRecordOf(in.engine) : nullptr) {
            row(QStringLiteral("Checked on"),
                QStringLiteral("%1 start-up logs kept apart from its fit").arg(tr->validateRuns));
            row(QStringLiteral("KV pool error"), QStringLiteral("median %1%, worst %2%")
                                                     .arg(100 * tr->validatePoolMedian, 0, 'f', 1)
                                                     .arg(100 * tr->validatePoolWorst, 0, 'f', 1));
        }
    }
    row(QStringLiteral("GPUs"),
        QStringLiteral("%1 × %2 (%3)")
            .arg(c.numGpus)
            .arg(QString::fromStdString(c.gpu), style.format(static_cast<double>(c.capacityBytes), 1)));
    row(QStringLiteral("Layout"), sc.mode == Mode::Training
                                      ? QStringLiteral("DP %1 (%2) × TP %3 × PP %4 × CP %5, EP %6")
                                            .arg(est.dataParallelSize)
                                            .arg(QString::fromStdString(c.dataParallelName))
                                            .arg(c.tensorParallel)
                                            .arg(c.pipelineParallel)
                                            .arg(c.contextParallel)
                                            .arg(c.expertParallel)
                                      : QStringLiteral("TP %1 × PP %2, EP %3")
                                            .arg(c.tensorParallel)
                                            .arg(c.pipelineParallel)
                                            .arg(c.expertParallel));

    r.breakdown.title =
        QStringLiteral("Most-loaded GPU at its peak (%1)").arg(QString::fromUtf8(phaseName(est.peakPhase)));
    r.breakdown.header = {QStringLiteral("Category"), style.unitName(), QStringLiteral("Share")};
    auto breakdownRow = [&](const QString& label, double b) {
        r.breakdown.rows.push_back(
            {label, QString::number(style.scale(b), 'f', 2),
             QString::number(est.peakBytes > 0 ? 100 * b / est.peakBytes : 0, 'f', 1) + QLatin1Char('%')});
    };
    const double frozen = est.frozenWeightBytes();
    const double fitted = est.eagerBlocksExcessBytes();
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        const double b = est.perGpu.bytes[i];
        if (b <= 0)
            continue;
        // Fine-tuning: the weights as the frozen base and the adapters, as the window's table has them.
        if (categoryAt(i) == Category::Weights && frozen > 0) {
            breakdownRow(QStringLiteral("Weights: frozen base"), frozen);
            breakdownRow(QStringLiteral("Weights: adapters"), std::max(0.0, b - frozen));
            continue;
        }
        // torchtitan's eager blocks: the overhead's fitted part on a row of its own, as the text output has
        // it.
        if (categoryAt(i) == Category::AllocatorOverhead && fitted > 0) {
            breakdownRow(QStringLiteral("Allocator overhead"), std::max(0.0, b - fitted));
            breakdownRow(QStringLiteral("Overhead: eager blocks (fitted)"), fitted);
            continue;
        }
        breakdownRow(QString::fromUtf8(categoryLabel(categoryAt(i), est.serving.engine)), b);
    }
    r.breakdown.rows.push_back({QStringLiteral("Peak"), QString::number(style.scale(est.peakBytes), 'f', 2),
                                QStringLiteral("100.0%")});
    r.breakdown.rows.push_back(
        {QStringLiteral("Capacity"), QString::number(style.scale(est.capacityBytes), 'f', 2), QString()});

    const auto savings = rankSavings(sc);
    const bool serving = est.serving.engine;
    r.savings.title =
        serving ? QStringLiteral("What would serve more requests") : QStringLiteral("What would make it fit");
    r.savings.header = serving ? QStringList{QStringLiteral("Single change"), QStringLiteral("KV tokens"),
                                             QStringLiteral("Requests"), QStringLiteral("Fits")}
                               : QStringList{QStringLiteral("Single change"), QStringLiteral("Saves"),
                                             QStringLiteral("Peak after"), QStringLiteral("Fits")};
    for (std::size_t i = 0; i < savings.size() && i < 8; ++i) {
        const Saving& s = savings[i];
        r.savings.rows.push_back(
            serving ? QStringList{QString::fromStdString(s.description),
                                  (s.kvTokensGained >= 0 ? QStringLiteral("+") : QString()) +
                                      count(s.kvTokensGained),
                                  QString::number(s.concurrencyAfter, 'f', 2),
                                  s.fitsAfter ? QStringLiteral("yes") : QStringLiteral("no")}
                    : QStringList{QString::fromStdString(s.description), style.format(s.bytesSaved),
                                  style.format(s.peakAfter),
                                  s.fitsAfter ? QStringLiteral("yes") : QStringLiteral("no")});
    }

    if (measured) {
        TextTable m;
        m.title = QStringLiteral("Estimate vs measured at the peak (device %1)")
                      .arg(QString::fromStdString(measured->device));
        m.header = {QStringLiteral("Category"), QStringLiteral("Estimate"), QStringLiteral("Measured"),
                    QStringLiteral("Difference")};
        // A log of the memory in use (nvidia-smi) records no allocated bytes: nothing to set beside the
        // categories, and the plan's peak on the GPU against the most it saw in use.
        const bool recorded = measured->allocatedRecorded;
        const QString none = QStringLiteral("not recorded");
        for (std::size_t i = 0; i < kMeasuredCategories; ++i) {
            const auto e = measured->estimated[i], v = measured->measured.bytes[i];
            if (e == 0 && v == 0)
                continue;
            m.rows.push_back({QString::fromUtf8(measuredCategoryLabel(static_cast<MeasuredCategory>(i))),
                              style.format(static_cast<double>(e)),
                              recorded ? style.format(static_cast<double>(v)) : none,
                              recorded ? style.format(static_cast<double>(e - v)) : QString()});
        }
        m.rows.push_back({QStringLiteral("Total"),
                          style.format(static_cast<double>(measured->estimatedTotal)),
                          recorded ? style.format(static_cast<double>(measured->measured.total)) : none,
                          recorded ? QStringLiteral("%1 (%2%)")
                                         .arg(style.format(static_cast<double>(measured->difference())))
                                         .arg(100 * measured->relativeError(), 0, 'f', 1)
                                   : QString()});
        if (!recorded)
            m.rows.push_back(
                {QStringLiteral("In use on the GPU (context included)"),
                 style.format(measured->usedEstimated),
                 style.format(static_cast<double>(measured->usedMeasured)),
                 QStringLiteral("%1 (%2%)")
                     .arg(style.format(measured->usedEstimated - static_cast<double>(measured->usedMeasured)))
                     .arg(100 * measured->usedError(), 0, 'f', 1)});
        if (measured
                ->firstStep) // the trace is a first step; the plan, a later one (core/compare/comparison.h)
            m.rows.push_back({QStringLiteral("A later step (the trace is a first step)"),
                              style.format(static_cast<double>(measured->estimatedTotal)),
                              style.format(static_cast<double>(measured->laterStepPeak)),
                              QStringLiteral("%1 (%2%)")
                                  .arg(style.format(static_cast<double>(
                                      saturatingSub(measured->estimatedTotal, measured->laterStepPeak))))
                                  .arg(100 * measured->laterStepError(), 0, 'f', 1)});
        r.measured = std::move(m);
        if (const std::string advice = measured->advice(); !advice.empty())
            r.measuredNote = QStringLiteral("Note: %1.").arg(QString::fromStdString(advice));
    }
    return r;
}

namespace {

// One of the report's charts, drawn by the window's own classes.
std::unique_ptr<QChart> breakdownChart(const Scenario& sc, const Estimate& est) {
    auto chart = std::make_unique<BreakdownChart>();
    chart->setStyle(ChartStyle{});
    chart->setEstimate(sc, est);
    return chart;
}
// On one data-parallel rank DDP and the three ZeRO stages are the same plan (four equal bars): the report
// shows instead how long a sequence fits, the question a one-GPU run is planned for.
bool oneRank(const Scenario& sc, const Estimate& est) {
    return sc.mode == Mode::Training && est.dataParallelSize <= 1;
}

std::unique_ptr<QChart> secondChart(const Scenario& sc, const Estimate& est) {
    if (oneRank(sc, est)) {
        auto chart = std::make_unique<SweepChart>();
        chart->setStyle(ChartStyle{});
        chart->setVariable(SweepVariable::SequenceLength);
        chart->setSweep(computeSweep(sc, est, SweepVariable::SequenceLength, &estimatePeak), sc, est);
        return chart;
    }
    if (sc.mode == Mode::Training) {
        auto chart = std::make_unique<StrategyChart>();
        chart->setStyle(ChartStyle{});
        chart->setEstimates(strategyEstimates(sc, &estimate), est); // the report is built off screen
        return chart;
    }
    auto chart = std::make_unique<ServingChart>();
    chart->setStyle(ChartStyle{});
    chart->setCurve(servingCurve(sc), sc, est);
    return chart;
}

// Draws a table at `top`; returns the height used. Numbers (every column but the first) align right.
double drawTable(QPainter& p, const TextTable& t, double left, double top, double width, const QFont& font) {
    QFont bold = font;
    bold.setBold(true);
    // Metrics of the page's device (the PDF's 72 dpi), not the screen's: what is measured is what is drawn.
    const QFontMetricsF fm(font, p.device());
    const QFontMetricsF bfm(bold, p.device());
    const double line = fm.height() + 3;
    double y = top;
    // Titles and words wrap (a report is read whole: a model's name cut short loses what it is); numbers
    // stay on one line. A path or a model name breaks after its slashes.
    const auto wrapFlags = Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap;
    auto breakable = [](QString text) { return text.replace(QLatin1Char('/'), QStringLiteral("/\u200B")); };
    p.setFont(bold);
    const double titleH = bfm.boundingRect(QRectF(0, 0, width, 3 * line), wrapFlags, t.title).height();
    p.drawText(QRectF(left, y, width, std::max(line, titleH)), wrapFlags, t.title);
    y += std::max(line, titleH) + 1;
    const int n = static_cast<int>(t.header.size());
    // Natural widths; when they do not fit, the widest column gives way (its cells are elided).
    std::vector<double> widths(static_cast<std::size_t>(n), 0);
    for (int i = 0; i < n; ++i) {
        double w = bfm.horizontalAdvance(t.header[i]);
        for (const QStringList& r : t.rows)
            if (i < r.size())
                w = std::max(w, fm.horizontalAdvance(r[i]));
        widths[static_cast<std::size_t>(i)] = w + 8;
    }
    double total = 0;
    for (double w : widths)
        total += w;
    if (total > width && n > 2) { // a label column gives way before the numbers do
        const double cut = std::min(total - width, std::max(0.0, widths[0] - 70));
        widths[0] -= cut;
        total -= cut;
    }
    auto widest = std::max_element(widths.begin(), widths.end());
    if (total > width)
        *widest = std::max(30.0, *widest - (total - width));
    else
        widths[0] += width - total;
    auto drawRow = [&](const QStringList& cells, bool header) {
        auto isNumber = [&](int i) {
            const QString first = cells[i].trimmed().left(1);
            return t.header.value(i) != QLatin1String("Value") && !first.isEmpty() &&
                   (first[0].isDigit() || first == QLatin1String("+") || first == QLatin1String("-"));
        };
        // The row is as tall as its longest wrapped words, up to three lines.
        double h = line;
        if (!header)
            for (int i = 0; i < n && i < cells.size(); ++i)
                if (!isNumber(i))
                    h = std::max(
                        h, fm.boundingRect(QRectF(0, 0, widths[static_cast<std::size_t>(i)] - 4, 3 * line),
                                           wrapFlags, breakable(cells[i]))
                               .height());
        h = std::min(h, 3 * line);
        double x = left;
        p.setFont(header ? bold : font);
        for (int i = 0; i < n && i < cells.size(); ++i) {
            const double w = widths[static_cast<std::size_t>(i)];
            // Numbers align right, words left.
            const bool number = isNumber(i);
            const bool right = i > 0 && (number || (header && t.header.value(i) != QLatin1String("Value")));
            if (header || number)
                p.drawText(QRectF(x + 2, y, w - 4, line),
                           (right ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter,
                           fm.elidedText(cells[i], Qt::ElideRight, w - 4));
            else
                p.drawText(QRectF(x + 2, y + 1, w - 4, h), wrapFlags, breakable(cells[i]));
            x += w;
        }
        y += h;
    };
    drawRow(t.header, true);
    p.setPen(QPen(QColor(0x99, 0x99, 0x99), 0.5));
    p.drawLine(QPointF(left, y), QPointF(left + width, y));
    p.setPen(Qt::black);
    for (const QStringList& r : t.rows)
        drawRow(r, false);
    return y - top;
}

// A chart drawn as if `zoom` times larger, scaled into `target`: smaller type, room for its legend.
void paintChartZoomed(QChart* chart, QPainter& p, const QRectF& target, double zoom) {
    p.save();
    p.translate(target.topLeft());
    p.scale(1 / zoom, 1 / zoom);
    paintChart(chart, &p, QRectF(0, 0, target.width() * zoom, target.height() * zoom));
    p.restore();
}

bool saveBytes(const QString& file, const QByteArray& bytes, std::string* error) {
    QSaveFile out(file);
    if (!out.open(QIODevice::WriteOnly) || out.write(bytes) != bytes.size() || !out.commit()) {
        *error = file.toStdString() + ": " + out.errorString().toStdString();
        return false;
    }
    return true;
}

} // namespace

bool writeReport(const Scenario& sc, const Estimate& est, const Comparison* measured, const std::string& path,
                 std::string* error, const ReportRunChart* run) {
    ensureGuiApplication();
    const ChartStyle style;
    const Report r = buildReport(sc, est, measured, style);
    const QString file = QString::fromStdString(path);
    const QString suffix = QFileInfo(file).suffix().toLower();
    auto breakdown = breakdownChart(sc, est);
    auto second = secondChart(sc, est);
    if (suffix == QLatin1String("md")) {
        // The charts beside the Markdown, named after it.
        const QFileInfo info(file);
        const QString base = info.completeBaseName();
        const QString secondName = base + (sc.mode == Mode::Training ? QStringLiteral("-strategies.png")
                                                                     : QStringLiteral("-serving.png"));
        const QString dir = info.absolutePath() + QLatin1Char('/');
        if (!exportChart(breakdown.get(), (dir + base + QStringLiteral("-breakdown.png")).toStdString(), 900,
                         520, error) ||
            !exportChart(second.get(), (dir + secondName).toStdString(), 900, 420, error))
            return false;
        if (run) { // the run over time, as the trace view draws it
            QImage img(QSize(1800, 700), QImage::Format_ARGB32_Premultiplied);
            img.fill(Qt::white);
            {
                QPainter ip(&img);
                ip.scale(2, 2);
                run->paint(ip, QRectF(0, 0, 900, 350));
            }
            QByteArray png;
            QBuffer pngBuffer(&png);
            pngBuffer.open(QIODevice::WriteOnly);
            img.save(&pngBuffer, "PNG");
            if (!saveBytes(dir + base + QStringLiteral("-run.png"), png, error))
                return false;
        }
        QString md;
        md += QStringLiteral("# %1\n\n%2\n\n**%3**\n\n").arg(r.title, r.subtitle, r.verdict);
        md += QStringLiteral("## %1\n\n").arg(r.settings.title) + tableToMarkdown(r.settings) +
              QLatin1Char('\n');
        md +=
            QStringLiteral("## Per GPU at the peak\n\n![Per-GPU breakdown](%1-breakdown.png)\n\n").arg(base);
        md += QStringLiteral("### %1\n\n").arg(r.breakdown.title) + tableToMarkdown(r.breakdown) +
              QLatin1Char('\n');
        md += oneRank(sc, est)
                  ? QStringLiteral("## Sequence length\n\n![Peak against sequence length](%1)\n\n")
                        .arg(secondName)
              : sc.mode == Mode::Training
                  ? QStringLiteral("## DDP and ZeRO stages\n\n![Strategies](%1)\n\n").arg(secondName)
                  : QStringLiteral("## Serving capacity\n\n![Serving capacity](%1)\n\n").arg(secondName);
        if (!r.savings.rows.empty())
            md += QStringLiteral("## %1\n\n").arg(r.savings.title) + tableToMarkdown(r.savings) +
                  QLatin1Char('\n');
        if (run)
            md += QStringLiteral("## %1\n\n![The run over time](%2-run.png)\n\n").arg(run->title, base);
        if (r.measured)
            md += QStringLiteral("## %1\n\n").arg(r.measured->title) + tableToMarkdown(*r.measured) +
                  QLatin1Char('\n') + (r.measuredNote.isEmpty() ? QString() : r.measuredNote + "\n\n");
        return saveBytes(file, md.toUtf8(), error);
    }
    if (suffix != QLatin1String("pdf")) {
        *error = path + ": unsupported report type '" + suffix.toStdString() + "' (pdf or md)";
        return false;
    }
    // One A4 page, in points.
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    {
        QPdfWriter pdf(&buffer);
        pdf.setPageSize(QPageSize(QPageSize::A4));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        pdf.setResolution(72);
        pdf.setTitle(r.title);
        pdf.setCreator(QStringLiteral("Headroom %1").arg(QString::fromUtf8(version())));
        QPainter p(&pdf);
        const double W = 595, margin = 32, inner = W - 2 * margin;
        QFont title(QStringLiteral("DejaVu Sans"));
        title.setPointSizeF(17);
        title.setBold(true);
        QFont small(QStringLiteral("DejaVu Sans"));
        small.setPointSizeF(7.5);
        QFont body(QStringLiteral("DejaVu Sans"));
        body.setPointSizeF(10.5);
        body.setBold(true);
        double y = margin;
        // A long scenario name takes a smaller type before it is cut short.
        while (title.pointSizeF() > 12 && QFontMetricsF(title, &pdf).horizontalAdvance(r.title) > inner)
            title.setPointSizeF(title.pointSizeF() - 0.5);
        p.setFont(title);
        p.drawText(QRectF(margin, y, inner, 24), Qt::AlignLeft | Qt::AlignVCenter,
                   QFontMetricsF(title, p.device()).elidedText(r.title, Qt::ElideRight, inner));
        y += 26;
        p.setFont(small);
        p.setPen(QColor(0x55, 0x55, 0x55));
        p.drawText(QRectF(margin, y, inner, 12), Qt::AlignLeft | Qt::AlignVCenter, r.subtitle);
        y += 16;
        p.setFont(body);
        p.setPen(r.fits ? QColor(0x2c, 0xa0, 0x2c) : QColor(0xd6, 0x27, 0x28));
        p.drawText(QRectF(margin, y, inner, 16), Qt::AlignLeft | Qt::AlignVCenter, r.verdict);
        p.setPen(Qt::black);
        y += 22;
        const double leftW = 230, gap = 12, rightW = inner - leftW - gap;
        const double chartH = 262;
        const double settingsH = drawTable(p, r.settings, margin, y, leftW, small);
        paintChartZoomed(breakdown.get(), p, QRectF(margin + leftW + gap, y, rightW, chartH), 1.7);
        y += std::max(chartH, settingsH) + 10;
        const double secondH = 190;
        // The ranked changes and the measured comparison across the page, so that they are read whole.
        if (run) { // the recorded run over time with the plan over it, in the second chart's place
            QFont bold = small;
            bold.setBold(true);
            p.setFont(bold);
            const double titleH = QFontMetricsF(bold, p.device())
                                      .boundingRect(QRectF(0, 0, inner * 0.58, 40),
                                                    Qt::AlignLeft | Qt::TextWordWrap, run->title)
                                      .height();
            p.drawText(QRectF(margin, y, inner * 0.58, titleH), Qt::AlignLeft | Qt::TextWordWrap, run->title);
            p.save();
            // The trace view's drawing at its own scale (its type and plot margins are a window's), shrunk
            // into the slot.
            const double zoom = 1.45;
            p.translate(margin, y + titleH + 2);
            p.scale(1 / zoom, 1 / zoom);
            run->paint(p, QRectF(0, 0, inner * 0.58 * zoom, (secondH - titleH - 2) * zoom));
            p.restore();
            p.setFont(small);
        } else {
            paintChartZoomed(second.get(), p, QRectF(margin, y, inner * 0.58, secondH), 1.7);
        }
        const double breakdownH =
            drawTable(p, r.breakdown, margin + inner * 0.58 + gap, y + 4, inner * 0.42 - gap, small);
        y += std::max(secondH, breakdownH + 4) + 8;
        // One page: when the measured comparison would run into the footer, the ranked changes give up
        // their last rows (the table above ranks them, so the best stay).
        TextTable savings = r.savings;
        const double line = QFontMetricsF(small, &pdf).height() + 3;
        auto height = [&](const TextTable& t) {
            return t.rows.empty() ? 0.0 : (t.rows.size() + 2.0) * line + 9;
        };
        const double bottom = 842 - margin - 4;
        // The note under the measured table, wrapped to the page's width.
        const double noteH = r.measuredNote.isEmpty()
                                 ? 0.0
                                 : QFontMetricsF(small, &pdf)
                                           .boundingRect(QRectF(0, 0, inner, 200),
                                                         Qt::AlignLeft | Qt::TextWordWrap, r.measuredNote)
                                           .height() +
                                       4;
        while (savings.rows.size() > 3 &&
               y + height(savings) + (r.measured ? height(*r.measured) + noteH : 0.0) > bottom)
            savings.rows.pop_back();
        if (!savings.rows.empty())
            y += drawTable(p, savings, margin, y, inner, small) + 8;
        if (r.measured)
            y += drawTable(p, *r.measured, margin, y, inner, small) + 8;
        if (r.measured && !r.measuredNote.isEmpty()) {
            p.setFont(small);
            p.drawText(QRectF(margin, y, inner, noteH), Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
                       r.measuredNote);
            y += noteH;
        }
        p.setFont(small);
        p.setPen(QColor(0x77, 0x77, 0x77));
        p.drawText(
            QRectF(margin, 842 - margin, inner, 12), Qt::AlignLeft | Qt::AlignVCenter,
            QStringLiteral("Per-GPU memory as the PyTorch allocator reserves it plus CUDA context and NCCL; "
                           "%1 = 2^30 bytes. Written by Headroom %2.")
                .arg(style.unitName(), QString::fromUtf8(version())));
    }
    buffer.close();
    return saveBytes(file, bytes, error);
}

} // namespace headroom
