// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/compare/scenariocomparepage.h"

#include "ui/common/categorycolors.h"
#include "ui/common/tablecopy.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QHeaderView>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QSplitter>
#include <QStackedBarSeries>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>

namespace headroom {

ScenarioComparePage::ScenarioComparePage(std::vector<Entry> entries, QWidget* parent)
    : QWidget(parent), m_entries(std::move(entries)) {
    auto* layout = new QVBoxLayout(this);
    auto* split = new QSplitter(Qt::Horizontal, this);
    m_chart = new QChart;
    m_view = new QChartView(m_chart, split);
    m_view->setObjectName("scenarioCompareChart");
    m_view->setMinimumSize(360, 300);
    addChartExportActions(m_view, QStringLiteral("scenarios"));
    auto* right = new QWidget(split);
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    rightLayout->addWidget(
        new QLabel(tr("<b>By category</b> (most-loaded GPU at its peak; difference from the first)"), right));
    m_differences = new QTableWidget(right);
    m_differences->setObjectName("scenarioDifferences");
    m_differences->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_differences->verticalHeader()->hide();
    addTableCopyActions(m_differences, tr("Scenarios by category"));
    rightLayout->addWidget(m_differences, 3);
    rightLayout->addWidget(new QLabel(tr("<b>Settings</b> (those that differ in bold)"), right));
    m_settings = new QTableWidget(right);
    m_settings->setObjectName("scenarioSettings");
    m_settings->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_settings->verticalHeader()->hide();
    addTableCopyActions(m_settings, tr("Scenario settings"));
    rightLayout->addWidget(m_settings, 2);
    split->addWidget(m_view);
    split->addWidget(right);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    split->setSizes({600, 600});
    m_differences->verticalHeader()->setDefaultSectionSize(22);
    m_settings->verticalHeader()->setDefaultSectionSize(22);
    layout->addWidget(split);
    refresh();
}

QString ScenarioComparePage::title() const {
    QStringList names;
    for (const Entry& e : m_entries)
        names << e.name;
    return names.join(QStringLiteral(" vs "));
}

void ScenarioComparePage::setStyle(const ChartStyle& style) {
    m_style = style;
    refresh();
}

QStringList ScenarioComparePage::differingSettings() const {
    QStringList out;
    for (int r = 0; r < m_settings->rowCount(); ++r)
        if (m_settings->item(r, 0) && m_settings->item(r, 0)->font().bold())
            out << m_settings->item(r, 0)->text();
    return out;
}

void ScenarioComparePage::refresh() {
    // Chart: one stacked bar per scenario, one set per category that any of them has.
    m_chart->removeAllSeries();
    for (QAbstractAxis* a : m_chart->axes())
        m_chart->removeAxis(a);
    m_style.apply(m_chart);
    auto* series = new QStackedBarSeries;
    QStringList names;
    for (const Entry& e : m_entries)
        names << e.name;
    double top = 0;
    for (const Entry& e : m_entries)
        top = std::max({top, e.estimate.peakBytes, e.estimate.capacityBytes});
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        bool any = false;
        for (const Entry& e : m_entries)
            any = any || e.estimate.perGpu.bytes[i] > 0;
        if (!any)
            continue;
        auto* set = new QBarSet(QString::fromUtf8(categoryLabel(categoryAt(i))));
        colourBarSet(set, categoryAt(i));
        if (m_style.presentation)
            set->setPen(m_style.segmentPen());
        for (const Entry& e : m_entries)
            set->append(m_style.scale(e.estimate.perGpu.bytes[i]));
        series->append(set);
    }
    series->setBarWidth(0.55);
    m_chart->addSeries(series);
    auto* x = new QBarCategoryAxis;
    x->append(names);
    auto* y = new QValueAxis;
    y->setLabelFormat(QStringLiteral("%.0f")); // whole units, as the planner's charts
    y->setTitleText(m_style.unitName() + QStringLiteral(" per GPU"));
    m_chart->addAxis(x, Qt::AlignBottom);
    m_chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
    setNiceRange(y, m_style.scale(top) * 1.1);
    // Each scenario's capacity as a short dashed line over its bar.
    const double n = static_cast<double>(m_entries.size());
    for (std::size_t k = 0; k < m_entries.size(); ++k) {
        auto* cap = new QLineSeries;
        const double cx = static_cast<double>(k);
        cap->append(cx - 0.4, m_style.scale(m_entries[k].estimate.capacityBytes));
        cap->append(cx + 0.4, m_style.scale(m_entries[k].estimate.capacityBytes));
        cap->setPen(m_style.capacityPen(m_entries[k].estimate.fits));
        m_chart->addSeries(cap);
        auto* hidden = new QValueAxis; // the line series needs a numeric x axis spanning the bars
        hidden->setRange(-0.5, n - 0.5);
        hidden->setVisible(false);
        m_chart->addAxis(hidden, Qt::AlignTop);
        cap->attachAxis(hidden);
        cap->attachAxis(y);
        for (auto* marker : m_chart->legend()->markers(cap))
            marker->setVisible(false);
    }
    m_chart->setTitle(tr("Per GPU at the peak"));
    m_chart->legend()->setAlignment(Qt::AlignRight);
    m_style.applyAxes(m_chart); // the axes came after the theme

    // Differences by category.
    const int cols = static_cast<int>(m_entries.size()) +
                     (m_entries.size() > 1 ? static_cast<int>(m_entries.size()) - 1 : 0);
    QStringList header{tr("Category")};
    for (const Entry& e : m_entries)
        header << e.name;
    for (std::size_t k = 1; k < m_entries.size(); ++k)
        header << QStringLiteral("%1 − %2").arg(m_entries[k].name, m_entries[0].name);
    m_differences->clear();
    m_differences->setColumnCount(cols + 1);
    m_differences->setHorizontalHeaderLabels(header);
    std::vector<int> rows;
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        bool any = false;
        for (const Entry& e : m_entries)
            any = any || e.estimate.perGpu.bytes[i] > 0;
        if (any)
            rows.push_back(static_cast<int>(i));
    }
    m_differences->setRowCount(static_cast<int>(rows.size()) + 2);
    auto put = [&](int r, int c, const QString& text, bool right) {
        auto* item = new QTableWidgetItem(text);
        if (right)
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_differences->setItem(r, c, item);
    };
    auto fillRow = [&](int r, const QString& label, auto value) {
        put(r, 0, label, false);
        for (std::size_t k = 0; k < m_entries.size(); ++k)
            put(r, static_cast<int>(k) + 1, m_style.format(value(m_entries[k])), true);
        for (std::size_t k = 1; k < m_entries.size(); ++k) {
            const double d = value(m_entries[k]) - value(m_entries[0]);
            put(r, static_cast<int>(m_entries.size() + k),
                (d > 0 ? QStringLiteral("+") : QString()) + m_style.format(d), true);
        }
    };
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const std::size_t i = static_cast<std::size_t>(rows[r]);
        fillRow(static_cast<int>(r), QString::fromUtf8(categoryLabel(categoryAt(i))),
                [i](const Entry& e) { return e.estimate.perGpu.bytes[i]; });
    }
    fillRow(static_cast<int>(rows.size()), tr("Peak"), [](const Entry& e) { return e.estimate.peakBytes; });
    fillRow(static_cast<int>(rows.size()) + 1, tr("Headroom"),
            [](const Entry& e) { return e.estimate.headroomBytes(); });
    m_differences->resizeColumnsToContents();

    // Settings, the ones that differ in bold on a tinted row.
    std::vector<Report> reports;
    for (const Entry& e : m_entries)
        reports.push_back(buildReport(e.scenario, e.estimate, nullptr, m_style));
    QStringList keys;
    for (const Report& r : reports)
        for (const QStringList& row : r.settings.rows)
            if (!keys.contains(row.value(0)))
                keys << row.value(0);
    auto valueOf = [&](const Report& rep, const QString& key) {
        for (const QStringList& row : rep.settings.rows)
            if (row.value(0) == key)
                return row.value(1);
        return QString();
    };
    // What differs comes first: it is what the comparison is about.
    std::stable_partition(keys.begin(), keys.end(), [&](const QString& k) {
        for (const Report& rep : reports)
            if (valueOf(rep, k) != valueOf(reports.front(), k))
                return true;
        return false;
    });
    m_settings->clear();
    m_settings->setColumnCount(static_cast<int>(m_entries.size()) + 1);
    QStringList sh{tr("Setting")};
    for (const Entry& e : m_entries)
        sh << e.name;
    m_settings->setHorizontalHeaderLabels(sh);
    m_settings->setRowCount(static_cast<int>(keys.size()));
    const QColor tint = m_style.dark ? QColor(0x55, 0x4a, 0x1a) : QColor(0xff, 0xf2, 0xb3);
    for (int r = 0; r < keys.size(); ++r) {
        QStringList values;
        for (const Report& rep : reports)
            values << valueOf(rep, keys[r]);
        bool differs = false;
        for (const QString& v : values)
            differs = differs || v != values.first();
        auto* key = new QTableWidgetItem(keys[r]);
        m_settings->setItem(r, 0, key);
        for (int k = 0; k < values.size(); ++k)
            m_settings->setItem(r, k + 1, new QTableWidgetItem(values[k]));
        if (differs)
            for (int c = 0; c < m_settings->columnCount(); ++c) {
                QTableWidgetItem* item = m_settings->item(r, c);
                QFont f = item->font();
                f.setBold(true);
                item->setFont(f);
                item->setBackground(tint);
            }
    }
    m_settings->resizeColumnsToContents();
}

} // namespace headroom
