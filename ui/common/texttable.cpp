// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/texttable.h"

namespace headroom {

QString tableToMarkdown(const TextTable& t) {
    auto cell = [](QString s) {
        return s.replace(QLatin1Char('|'), QStringLiteral("\\|"))
            .replace(QLatin1Char('\n'), QLatin1Char(' '));
    };
    QString out;
    QStringList head;
    for (const QString& h : t.header)
        head << cell(h);
    out += QStringLiteral("| ") + head.join(QStringLiteral(" | ")) + QStringLiteral(" |\n|");
    for (int i = 0; i < t.header.size(); ++i)
        out += i == 0 ? QStringLiteral("---|") : QStringLiteral("---:|");
    out += QLatin1Char('\n');
    for (const QStringList& row : t.rows) {
        QStringList cells;
        for (const QString& c : row)
            cells << cell(c);
        out += QStringLiteral("| ") + cells.join(QStringLiteral(" | ")) + QStringLiteral(" |\n");
    }
    return out;
}

QString tableToCsv(const TextTable& t) {
    auto cell = [](const QString& s) {
        if (!s.contains(QLatin1Char(',')) && !s.contains(QLatin1Char('"')) && !s.contains(QLatin1Char('\n')))
            return s;
        QString q = s;
        q.replace(QLatin1Char('"'), QStringLiteral("\"\""));
        return QLatin1Char('"') + q + QLatin1Char('"');
    };
    QString out;
    auto line = [&](const QStringList& cells) {
        QStringList c;
        for (const QString& s : cells)
            c << cell(s);
        out += c.join(QLatin1Char(',')) + QStringLiteral("\r\n");
    };
    line(t.header);
    for (const QStringList& row : t.rows)
        line(row);
    return out;
}

} // namespace headroom
