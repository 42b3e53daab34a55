// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <QStaticText>
#include <QWidget>

namespace headroom {

// A few lines of simple rich text (<b>, <br>) wrapped to the widget's width, laid out once per change and
// drawn from that layout. A rich-text QLabel builds a new QTextDocument on every setText and lays it out
// again for each size hint its layout asks for: 15% of a planner slider step was spent there. The widget
// keeps its size (the layout never moves on new numbers); what it shows is its accessible name too.
class RichTextLine : public QWidget {
    Q_OBJECT
public:
    explicit RichTextLine(QWidget* parent = nullptr);
    void setText(const QString& html);
    QString text() const { return m_text.text(); }

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    QStaticText m_text;
};

} // namespace headroom
