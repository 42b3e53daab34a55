// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/traceview/categorybars.h"

#include "ui/common/tablecopy.h"

#include "ui/common/categorycolors.h"

#include <QHeaderView>
#include <QPainter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <numeric>

namespace headroom {

namespace {
std::int64_t sum(const CategoryBars::Bytes& b) {
    return std::accumulate(b.begin(), b.end(), std::int64_t(0));
}
} // namespace

CategoryBars::CategoryBars(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, kBars, 6, 6);
    m_table = new QTableWidget(0, 4);
    addTableCopyActions(m_table, tr("Estimate vs measured"));
    addWidgetExportActions(this, QStringLiteral("by-category"), tr("By category"));
    m_table->setHorizontalHeaderLabels(
        {tr("Category"), tr("Measured"), tr("Estimate"), tr("Estimate − measured")});
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    for (int c = 1; c < 4; ++c)
        m_table->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    layout->addWidget(m_table);
}

void CategoryBars::setMeasured(const Bytes& bytes, const QString& caption, bool recorded) {
    m_measured = bytes;
    m_recorded = recorded;
    m_caption = caption;
    refresh();
}

void CategoryBars::setEstimate(std::optional<Bytes> bytes, const QString& scenarioName, bool recorded) {
    m_estimate = bytes;
    m_secondRecorded = recorded;
    m_scenarioName = scenarioName;
    placeTable();
    refresh();
}

void CategoryBars::setNames(const QString& first, const QString& second) {
    m_first = first;
    m_second = second;
    m_table->setHorizontalHeaderLabels({tr("Category"), first, second, tr("%1 − %2").arg(second, first)});
    refresh();
}

void CategoryBars::setNote(const QString& note) {
    m_note = note;
    setToolTip(note);
    placeTable();
    update();
}

int CategoryBars::noteHeight() const {
    const QFontMetrics fm(font());
    if (m_note.isEmpty() || !m_estimate)
        return fm.height();
    const QRect wrapped =
        fm.boundingRect(QRect(0, 0, std::max(1, width() - 12), kNoteLines * 4 * fm.height()),
                        Qt::AlignLeft | Qt::TextWordWrap, m_note);
    return std::clamp(wrapped.height(), fm.height(), kNoteLines * fm.height());
}

void CategoryBars::placeTable() {
    const int top = kBars - QFontMetrics(font()).height() + noteHeight();
    if (layout() && layout()->contentsMargins().top() != top)
        layout()->setContentsMargins(6, top, 6, 6);
}

void CategoryBars::resizeEvent(QResizeEvent* e) {
    QWidget::resizeEvent(e);
    placeTable();
}

void CategoryBars::setStyle(const ChartStyle& style) {
    m_style = style;
    refresh();
}

QString CategoryBars::verdict() const {
    if (!m_estimate || sum(m_measured) == 0 || !m_recorded || !m_secondRecorded)
        return {};
    const double err =
        static_cast<double>(sum(*m_estimate) - sum(m_measured)) / static_cast<double>(sum(m_measured));
    return tr("%1 is %2% %3 %4")
        .arg(m_second.toLower() == QLatin1String("estimate") ? tr("the estimate") : m_second)
        .arg(std::abs(err) * 100, 0, 'f', 1)
        .arg(err < 0 ? tr("below") : tr("above"))
        .arg(m_first.toLower() == QLatin1String("measured") ? tr("the measured bytes") : m_first);
}

void CategoryBars::refresh() {
    m_table->setColumnHidden(2, !m_estimate);
    m_table->setColumnHidden(3, !m_estimate);
    m_table->setRowCount(0);
    auto item = [](const QString& text, bool number) {
        auto* it = new QTableWidgetItem(text);
        if (number)
            it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        return it;
    };
    for (std::size_t i = 0; i <= kMeasuredCategories; ++i) {
        const bool total = i == kMeasuredCategories;
        const std::int64_t m = total ? sum(m_measured) : m_measured[i];
        const std::int64_t e = m_estimate ? (total ? sum(*m_estimate) : (*m_estimate)[i]) : 0;
        if (!total && m == 0 && e == 0)
            continue;
        const int row = m_table->rowCount();
        m_table->insertRow(row);
        auto* name = item(
            total ? tr("Allocated") : tr(measuredCategoryLabel(static_cast<MeasuredCategory>(i))), false);
        if (!total) {
            QPixmap swatch(10, 10);
            swatch.fill(categoryColor(static_cast<MeasuredCategory>(i)));
            name->setIcon(QIcon(swatch));
        }
        m_table->setItem(row, 0, name);
        m_table->setItem(
            row, 1, item(m_recorded ? m_style.format(static_cast<double>(m), 3) : tr("not recorded"), true));
        if (m_estimate) {
            m_table->setItem(
                row, 2,
                item(m_secondRecorded ? m_style.format(static_cast<double>(e), 3) : tr("not recorded"),
                     true));
            m_table->setItem(row, 3,
                             item(m_recorded && m_secondRecorded
                                      ? m_style.format(static_cast<double>(e - m), 3)
                                      : QString(),
                                  true));
        }
    }
    update();
}

void CategoryBars::paintEvent(QPaintEvent*) {
    QPainter p(this);
    const QColor text = palette().text().color();
    p.setPen(text);
    const QFontMetrics fm(font());
    p.drawText(
        QRect(6, 2, width() - 12, fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
        fm.elidedText(m_caption + (verdict().isEmpty() ? QString() : QStringLiteral(" · ") + verdict()),
                      Qt::ElideRight, width() - 12));
    const std::int64_t top = std::max(sum(m_measured), m_estimate ? sum(*m_estimate) : 0);
    if (top <= 0)
        return;
    const int labelW = 70, x0 = 6 + labelW,
              w = width() - x0 - 8 - fm.horizontalAdvance(QStringLiteral("00.00 GiB "));
    auto bar = [&](int y, const Bytes& b, const QString& label) {
        p.setPen(text);
        p.drawText(QRect(6, y, labelW - 4, 22), Qt::AlignLeft | Qt::AlignVCenter, label);
        if (&b == &m_measured ? !m_recorded : !m_secondRecorded) {
            p.drawText(QRect(x0, y, width() - x0 - 6, 22), Qt::AlignLeft | Qt::AlignVCenter,
                       tr("not recorded"));
            return;
        }
        double x = x0;
        for (std::size_t i = 0; i < kMeasuredCategories; ++i) {
            const double bw = static_cast<double>(b[i]) / static_cast<double>(top) * w;
            if (bw <= 0)
                continue;
            p.fillRect(QRectF(x, y, bw, 22), categoryColor(static_cast<MeasuredCategory>(i)));
            x += bw;
        }
        p.setPen(palette().mid().color());
        p.drawRect(QRectF(x0, y, x - x0, 22));
        p.setPen(text);
        const QString total = m_style.format(static_cast<double>(sum(b)));
        if (x + 4 + fm.horizontalAdvance(total) < width())
            p.drawText(QPointF(x + 4, y + 11 + fm.ascent() / 2.0), total);
    };
    bar(fm.height() + 8, m_measured, m_first);
    if (m_estimate)
        bar(fm.height() + 36, *m_estimate, m_second);
    if (!m_note.isEmpty() && m_estimate) {
        p.setPen(text);
        const int lines = noteHeight() / fm.height();
        // Wrapped at words; beyond kNoteLines the last line ends elided (the tooltip has it whole).
        QString shown = m_note;
        const QRect full(6, fm.height() + 62, width() - 12, kNoteLines * 4 * fm.height());
        if (fm.boundingRect(full, Qt::AlignLeft | Qt::TextWordWrap, shown).height() > lines * fm.height()) {
            while (shown.size() > 1 &&
                   fm.boundingRect(full, Qt::AlignLeft | Qt::TextWordWrap, shown + QStringLiteral("…"))
                           .height() > lines * fm.height())
                shown.chop(std::max<qsizetype>(1, shown.size() / 50));
            shown += QStringLiteral("…");
        }
        p.drawText(QRect(6, fm.height() + 62, width() - 12, lines * fm.height()),
                   Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, shown);
    }
}

} // namespace headroom
