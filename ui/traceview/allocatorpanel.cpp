// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/traceview/allocatorpanel.h"

#include "ui/common/jobrunner.h"

#include "core/io/bytesformat.h"
#include "ui/common/tablecopy.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPainter>
#include <QPainterPath>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <chrono>

namespace headroom {

namespace {
constexpr std::size_t kColumns = 1024;
const QColor kRecorded(0x1f, 0x77, 0xb4);
const QColor kPredicted(0xd6, 0x5f, 0x00);
} // namespace

ReservedPlot::ReservedPlot(QWidget* parent) : QWidget(parent) {
    setMinimumHeight(110);
    setObjectName("reservedPlot");
}

ReservedPlot::Envelope ReservedPlot::envelope(const std::vector<std::uint64_t>& v, std::size_t columns) {
    Envelope e;
    if (v.empty())
        return e;
    columns = std::min(columns, v.size());
    e.low.assign(columns, 0);
    e.high.assign(columns, 0);
    for (std::size_t c = 0; c < columns; ++c) {
        const std::size_t a = c * v.size() / columns, b = std::max(a + 1, (c + 1) * v.size() / columns);
        const auto [lo, hi] = std::minmax_element(v.begin() + static_cast<std::ptrdiff_t>(a),
                                                  v.begin() + static_cast<std::ptrdiff_t>(b));
        e.low[c] = static_cast<float>(*lo);
        e.high[c] = static_cast<float>(*hi);
    }
    return e;
}

void ReservedPlot::setSeries(const std::vector<std::uint64_t>& recorded,
                             const std::vector<std::uint64_t>& predicted,
                             const std::vector<std::size_t>& ooms, std::uint64_t capacity) {
    m_recorded = envelope(recorded, kColumns);
    m_predicted = envelope(predicted, kColumns);
    m_events = std::max(recorded.size(), predicted.size());
    m_ooms.clear();
    for (std::size_t at : ooms)
        m_ooms.push_back(m_events > 1 ? static_cast<double>(at) / static_cast<double>(m_events - 1) : 0);
    m_capacity = static_cast<double>(capacity);
    m_top = std::max(1.0, m_capacity);
    for (const Envelope* e : {&m_recorded, &m_predicted})
        for (float h : e->high)
            m_top = std::max(m_top, static_cast<double>(h));
    update();
}

void ReservedPlot::setStyle(const ChartStyle& style) {
    m_style = style;
    update();
}

void ReservedPlot::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QColor fg = m_style.dark ? QColor(0xdd, 0xdd, 0xdd) : QColor(0x33, 0x33, 0x33);
    p.fillRect(rect(), m_style.dark ? QColor(0x2b, 0x2b, 0x2b) : QColor(0xff, 0xff, 0xff));
    // Margins from the type, not fixed pixels: the axis words stay inside the widget at any font size.
    const double line = fontMetrics().height();
    const QRectF area = QRectF(rect()).adjusted(54, line + 4, -8, -(line + 4));
    p.setPen(fg);
    const QString top = QString::fromStdString(formatBytes(m_top * 1.05, m_style.unit, 1));
    p.drawText(QRectF(0, area.top() - line / 2, 52, line), Qt::AlignRight | Qt::AlignVCenter, top);
    p.drawText(QRectF(0, area.bottom() - line / 2, 52, line), Qt::AlignRight | Qt::AlignVCenter,
               QStringLiteral("0"));
    p.drawText(QRectF(area.left(), area.bottom() + 2, area.width(), line), Qt::AlignCenter,
               tr("events (%1)").arg(m_events));
    p.setPen(QPen(fg.darker(150), 1));
    p.drawRect(area);
    if (m_events == 0)
        return;
    const double scale = area.height() / (m_top * 1.05);
    auto y = [&](double v) { return area.bottom() - v * scale; };
    auto draw = [&](const Envelope& e, const QColor& c, Qt::PenStyle style) {
        if (e.high.empty())
            return;
        QPainterPath path;
        const double dx = area.width() / static_cast<double>(e.high.size());
        for (std::size_t i = 0; i < e.high.size(); ++i) {
            const double x = area.left() + (static_cast<double>(i) + 0.5) * dx;
            if (i == 0)
                path.moveTo(x, y(e.low[i]));
            else
                path.lineTo(x, y(e.low[i]));
            if (e.high[i] != e.low[i])
                path.lineTo(x, y(e.high[i]));
        }
        QPen pen(c, 2);
        pen.setStyle(style); // the two lines differ without colour too
        p.setPen(pen);
        p.drawPath(path);
    };
    p.setRenderHint(QPainter::Antialiasing, true);
    draw(m_recorded, kRecorded, Qt::SolidLine);
    draw(m_predicted, kPredicted, Qt::DashLine);
    if (m_capacity > 0) {
        QPen cap(QColor(0xd6, 0x27, 0x28), 1, Qt::DotLine);
        p.setPen(cap);
        p.drawLine(QPointF(area.left(), y(m_capacity)), QPointF(area.right(), y(m_capacity)));
    }
    p.setPen(QPen(QColor(0xd6, 0x27, 0x28), 2));
    for (double f : m_ooms) {
        const double x = area.left() + f * area.width();
        p.drawLine(QPointF(x, area.top()), QPointF(x, area.top() + 10));
    }
    // Legend.
    p.setRenderHint(QPainter::Antialiasing, false);
    const double mid = line / 2 + 1, baseline = fontMetrics().ascent() + 1;
    const QString recorded = tr("recorded settings");
    p.setPen(QPen(kRecorded, 2));
    p.drawLine(QPointF(area.left() + 6, mid), QPointF(area.left() + 24, mid));
    p.setPen(fg);
    p.drawText(QPointF(area.left() + 28, baseline), recorded);
    const double second = area.left() + 28 + fontMetrics().horizontalAdvance(recorded) + 16;
    QPen dashed(kPredicted, 2, Qt::DashLine);
    p.setPen(dashed);
    p.drawLine(QPointF(second, mid), QPointF(second + 18, mid));
    p.setPen(fg);
    p.drawText(QPointF(second + 22, baseline), tr("these settings"));
}

AllocatorPanel::AllocatorPanel(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* form = new QFormLayout;
    m_expandable = new QCheckBox(tr("expandable_segments"), this);
    m_expandable->setObjectName("expandableSegments");
    m_maxSplit = new QSpinBox(this);
    m_maxSplit->setObjectName("maxSplitSizeMb");
    m_maxSplit->setRange(0, 1 << 20);
    m_maxSplit->setSpecialValueText(tr("unlimited"));
    m_maxSplit->setSuffix(tr(" MB"));
    m_divisions = new QComboBox(this);
    m_divisions->setObjectName("roundupDivisions");
    for (int d : {0, 2, 4, 8, 16})
        m_divisions->addItem(d == 0 ? tr("none (512-byte rounding)") : QString::number(d), d);
    m_gc = new QDoubleSpinBox(this);
    m_gc->setObjectName("gcThreshold");
    m_gc->setRange(0, 1);
    m_gc->setSingleStep(0.05);
    m_gc->setSpecialValueText(tr("off"));
    m_fraction = new QDoubleSpinBox(this);
    m_fraction->setObjectName("memoryFraction");
    m_fraction->setRange(0, 1);
    m_fraction->setSingleStep(0.05);
    m_fraction->setSpecialValueText(tr("not set"));
    m_capacity = new QDoubleSpinBox(this);
    m_capacity->setObjectName("deviceMemoryGib");
    m_capacity->setRange(0, 4096);
    m_capacity->setDecimals(2);
    m_capacity->setSuffix(tr(" GiB"));
    m_capacity->setSpecialValueText(tr("unlimited"));
    m_capacity->setToolTip(
        tr("cudaMalloc fails past this: OOMs are predicted, and cached segments are released "
           "and the request retried first, as PyTorch does"));
    form->addRow(m_expandable);
    form->addRow(tr("max_split_size"), m_maxSplit);
    form->addRow(tr("roundup_power2_divisions"), m_divisions);
    form->addRow(tr("garbage_collection_threshold"), m_gc);
    form->addRow(tr("Memory fraction"), m_fraction);
    form->addRow(tr("Device memory"), m_capacity);
    layout->addLayout(form);
    // The answer (peaks, fragmentation, OOMs) right under the settings that produce it; the plot takes
    // the height that is left.
    m_text = new QLabel(this);
    m_text->setObjectName("allocatorResult");
    m_text->setWordWrap(true);
    m_text->setTextFormat(Qt::RichText);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_text);
    m_plot = new ReservedPlot(this);
    addWidgetExportActions(m_plot, QStringLiteral("allocator-whatif"),
                           tr("Reserved memory, recorded and replayed"));
    layout->addWidget(m_plot, 1);
    auto* caveats =
        new QLabel(tr("Not replayed: code that adapts to free memory, and memory outside the "
                      "allocator (CUDA context, NCCL, cuBLAS workspaces). Segment addresses decide "
                      "ties; the band spans two address orders."),
                   this);
    caveats->setWordWrap(true);
    caveats->setStyleSheet(QStringLiteral("color: gray;"));
    layout->addWidget(caveats);

    m_debounce = new QTimer(this);
    m_debounce->setSingleShot(true);
    m_debounce->setInterval(120);
    connect(m_debounce, &QTimer::timeout, this, &AllocatorPanel::start);
    m_runner = new JobRunner(this);
    connect(m_expandable, &QCheckBox::toggled, this, &AllocatorPanel::schedule);
    connect(m_maxSplit, &QSpinBox::valueChanged, this, &AllocatorPanel::schedule);
    connect(m_divisions, &QComboBox::currentIndexChanged, this, &AllocatorPanel::schedule);
    connect(m_gc, &QDoubleSpinBox::valueChanged, this, &AllocatorPanel::schedule);
    connect(m_fraction, &QDoubleSpinBox::valueChanged, this, &AllocatorPanel::schedule);
    connect(m_capacity, &QDoubleSpinBox::valueChanged, this, &AllocatorPanel::schedule);
    m_text->setText(tr("Open a PyTorch memory snapshot to replay it."));
}

// The runner cancels a replay in flight and does not wait for it: the replay holds its own reference to
// the trace, and stops at its next check.
AllocatorPanel::~AllocatorPanel() = default;

bool AllocatorPanel::busy() const {
    return m_runner->busy();
}

AllocatorSettings AllocatorPanel::settings() const {
    AllocatorSettings s;
    if (m_trace)
        s = settingsFromRecording(m_trace->trace.allocatorSettings);
    s.expandableSegments = m_expandable->isChecked();
    s.maxSplitSize =
        m_maxSplit->value() > 0 ? static_cast<std::uint64_t>(m_maxSplit->value()) * 1048576ull : UINT64_MAX;
    const int d = m_divisions->currentData().toInt();
    std::fill(s.roundupPower2Divisions.begin(), s.roundupPower2Divisions.end(), d);
    s.garbageCollectionThreshold = m_gc->value();
    s.memoryFraction = m_fraction->value();
    s.deviceMemory = static_cast<std::uint64_t>(std::llround(m_capacity->value() * 1073741824.0));
    return s;
}

void AllocatorPanel::setDevice(std::shared_ptr<const LoadedTrace> trace, std::size_t device) {
    if (trace == m_trace && device == m_device)
        return;
    m_trace = std::move(trace);
    m_device = device;
    const bool snapshot = m_trace && (m_trace->trace.format == TraceFormat::PytorchSnapshot ||
                                      m_trace->trace.format == TraceFormat::PytorchSnapshotJson);
    setEnabled(snapshot);
    if (!snapshot) {
        m_text->setText(tr("The allocator what-if replays the alloc and free events of a PyTorch memory "
                           "snapshot; this trace records totals only."));
        return;
    }
    // Start from what the recording used.
    const RecordedAllocatorSettings& r = m_trace->trace.allocatorSettings;
    const QSignalBlocker b1(m_expandable), b2(m_maxSplit), b3(m_gc);
    m_expandable->setChecked(r.expandableSegments);
    m_maxSplit->setValue(r.maxSplitSize > 0 ? static_cast<int>(r.maxSplitSize / 1048576) : 0);
    m_gc->setValue(r.garbageCollectionThreshold);
    schedule();
}

void AllocatorPanel::setStyle(const ChartStyle& style) {
    m_style = style;
    m_plot->setStyle(style);
    if (m_result)
        show(*m_result);
}

void AllocatorPanel::schedule() {
    if (m_trace)
        m_debounce->start();
}

void AllocatorPanel::start() {
    if (!m_trace)
        return;
    const AllocatorSettings s = settings();
    if (s.garbageCollectionThreshold > 0 && (s.memoryFraction <= 0 || s.deviceMemory == 0)) {
        m_runner->discard();
        m_text->setText(tr("garbage_collection_threshold acts only under a memory fraction of a known device "
                           "memory (as in PyTorch): set both."));
        return;
    }
    // A new setting replaces the replay in flight: the runner cancels it and drops its result.
    auto trace = m_trace;
    const std::size_t device = m_device;
    m_runner->start(
        [trace, device, s](const JobContext& job) {
            return whatIfDevice(trace->trace, device, s, job.cancellation());
        },
        [this](JobOutcome<DeviceWhatIf> outcome) {
            if (outcome.ok()) {
                show(std::move(*outcome.value));
                return;
            }
            // A replay that fails says so here; the recorded view and the other tabs carry on.
            m_text->setText(tr("<b style='color:#d62728'>The replay failed:</b> %1")
                                .arg(QString::fromStdString(outcome.error).toHtmlEscaped()));
            m_plot->setSeries({}, {}, {}, 0);
            m_result.reset();
            emit resultShown();
        });
}

void AllocatorPanel::waitForResult() {
    if (m_debounce->isActive()) {
        m_debounce->stop();
        start();
    } else if (!m_result && !m_runner->busy()) {
        start();
    }
    m_runner->waitForIdle();
}

void AllocatorPanel::show(DeviceWhatIf w) {
    auto b = [this](std::uint64_t v) {
        return QString::fromStdString(formatBytes(static_cast<double>(v), m_style.unit));
    };
    const ReplayResult& replayed = w.replayed;
    const ReplayResult& before = w.baseline; // the recorded settings from the what-if's own start
    const ReplayResult& after = w.whatif;
    const auto frag = [](const ReplayResult& r) {
        return r.peakReserved - std::min(r.peakReserved, r.allocatedAtPeak);
    };
    QString match;
    if (!w.recorded.hasSegmentEvents)
        match = tr("the recording has no segment events to check the replay against");
    else if (replayed.matchesRecording)
        match = tr("<span style='color:#2ca02c'>the replay reproduces all %1 recorded segment events</span>")
                    .arg(w.recorded.segmentAllocs + w.recorded.segmentFrees);
    else
        match = tr("<span style='color:#d62728'>the replay differs: %1</span>")
                    .arg(QString::fromStdString(replayed.firstDifference).toHtmlEscaped());
    QString band;
    if (w.bandLow != w.bandHigh)
        band = tr(" (%1 to %2 over address orders)").arg(b(w.bandLow), b(w.bandHigh));
    QString ooms;
    if (after.ooms > before.ooms)
        ooms = tr("<b style='color:#d62728'>%1 OOMs predicted</b>").arg(after.ooms);
    else if (after.ooms < before.ooms)
        ooms = tr("<b style='color:#2ca02c'>%1 of %2 OOMs avoided</b>")
                   .arg(before.ooms - after.ooms)
                   .arg(before.ooms);
    else
        ooms = after.ooms == 0 ? tr("no OOMs") : tr("%1 OOMs, as with the recorded settings").arg(after.ooms);
    const QString start = replayed.startReserved > 0
                              ? tr("<br>The trace starts with %1 reserved; what-ifs start from its live "
                                   "blocks alone, where the "
                                   "recorded settings reach %2.")
                                    .arg(b(replayed.startReserved), b(before.peakReserved))
                              : QString();
    m_text->setText(tr("Peak reserved: recorded <b>%1</b>, replayed %2 — %3.%4<br>"
                       "With these settings: <b>%5</b>%6; fragmentation at the peak %7 → %8; %9.")
                        .arg(b(w.recorded.peakReserved), b(replayed.peakReserved), match, start,
                             b(after.peakReserved), band, b(frag(before)), b(frag(after)), ooms));
    std::vector<std::size_t> oomAt;
    for (const AllocatorEvent& e : after.events)
        if (e.kind == AllocatorEvent::Kind::Oom)
            oomAt.push_back(e.at);
    m_plot->setSeries(replayed.reserved, after.reserved, oomAt, settings().deviceMemory);
    m_result = std::move(w);
    emit resultShown();
}

} // namespace headroom
