// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <QString>
#include <QStringList>
#include <vector>

namespace headroom {

// A table as the report, the clipboard and the exports write it: a header and rows of display text.
struct TextTable {
    QString title;
    QStringList header;
    std::vector<QStringList> rows;
};
// GitHub-flavoured Markdown ('|' in cells escaped) and RFC 4180 CSV (quoted when a cell needs it).
QString tableToMarkdown(const TextTable& t);
QString tableToCsv(const TextTable& t);

} // namespace headroom
