// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/richtextline.h"

#include <QEvent>
#include <QPainter>

namespace headroom {

namespace {
// The text without its markup, for screen readers: tags dropped, <br> a line break, the escapes HTML
// escaping (QString::toHtmlEscaped) writes turned back.
QString plainOf(const QString& html) {
    QString out;
    out.reserve(html.size());
    for (qsizetype i = 0; i < html.size(); ++i) {
        if (html[i] == QLatin1Char('<')) {
            const qsizetype end = html.indexOf(QLatin1Char('>'), i);
            if (end < 0)
                break;
            if (html.mid(i, end - i + 1).startsWith(QLatin1String("<br"), Qt::CaseInsensitive))
                out += QLatin1Char('\n');
            i = end;
        } else {
            out += html[i];
        }
    }
    out.replace(QLatin1String("&lt;"), QLatin1String("<"));
    out.replace(QLatin1String("&gt;"), QLatin1String(">"));
    out.replace(QLatin1String("&quot;"), QLatin1String("\""));
    out.replace(QLatin1String("&amp;"), QLatin1String("&"));
    return out;
}
} // namespace

RichTextLine::RichTextLine(QWidget* parent) : QWidget(parent) {
    m_text.setTextFormat(Qt::RichText);
    m_text.setPerformanceHint(QStaticText::AggressiveCaching);
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
}

void RichTextLine::setText(const QString& html) {
    if (html == m_text.text())
        return;
    m_text.setText(html);
    m_text.prepare(QTransform(), font());
    setAccessibleName(plainOf(html));
    // The widget keeps its height: a line longer than the window is wide shows whole on hover.
    setToolTip(plainOf(html));
    update();
}

void RichTextLine::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setPen(palette().color(foregroundRole()));
    p.setFont(font());
    p.drawStaticText(0, 0, m_text);
}

void RichTextLine::resizeEvent(QResizeEvent*) {
    m_text.setTextWidth(width());
}

void RichTextLine::changeEvent(QEvent* event) {
    // A new font (presentation mode) or palette (the dark theme) lays the text out again.
    if (event->type() == QEvent::FontChange)
        m_text.prepare(QTransform(), font());
    QWidget::changeEvent(event);
}

} // namespace headroom
