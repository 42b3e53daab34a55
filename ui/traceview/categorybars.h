// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/attribution.h"
#include "ui/common/chartstyle.h"

#include <QWidget>
#include <array>
#include <optional>

class QTableWidget;

namespace headroom {

// The memory live at a moment split by category as a stacked bar, and with a scenario the estimate's bar
// beside it and the difference per category (the Compare view). Unattributed bytes are a bar segment of
// their own, never spread over the others.
class CategoryBars : public QWidget {
    Q_OBJECT
public:
    using Bytes = std::array<std::int64_t, kMeasuredCategories>;
    explicit CategoryBars(QWidget* parent = nullptr);
    // `recorded` false: the trace records no allocated bytes (nvidia-smi), shown as not recorded, not 0.
    void setMeasured(const Bytes& bytes, const QString& caption, bool recorded = true);
    // `recorded` false: the second bar is a run that records no allocated bytes (a diff of nvidia-smi logs).
    void setEstimate(std::optional<Bytes> bytes, const QString& scenarioName = {}, bool recorded = true);
    // What the two bars are called ("Measured" / "Estimate" by default; "A" / "B" for two runs).
    void setNames(const QString& first, const QString& second);
    void setStyle(const ChartStyle& style);
    // Lines under the bars, wrapped at words (which profile plans the trace's code, when the scenario's does
    // not, and what it plans).
    void setNote(const QString& note);
    QString note() const { return m_note; }
    QTableWidget* table() const { return m_table; }
    QString verdict() const; // "the estimate is 12.3% below the measured bytes", or "" without a scenario

protected:
    void paintEvent(QPaintEvent*) override;
    void resizeEvent(QResizeEvent*) override;

private:
    void refresh();
    // The note's lines at this width, wrapped at words (at most kNoteLines; the tooltip has all of it),
    // and the table moved down to make room for them.
    int noteHeight() const;
    void placeTable();
    Bytes m_measured{};
    bool m_recorded = true, m_secondRecorded = true;
    std::optional<Bytes> m_estimate;
    QString m_caption, m_scenarioName, m_note;
    QString m_first = tr("Measured"), m_second = tr("Estimate");
    ChartStyle m_style;
    QTableWidget* m_table = nullptr;
    static constexpr int kBars = 96;     // the bars and the note's first line
    static constexpr int kNoteLines = 5; // a note that long ends elided
};

} // namespace headroom
