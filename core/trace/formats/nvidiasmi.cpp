// SPDX-License-Identifier: GPL-3.0-or-later
// nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total --format=csv[,noheader][,nounits]
#include "core/trace/formats/nvidiasmi.h"
#include "core/error.h"

#include "core/checkednumbers.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <string_view>
#include <vector>

namespace headroom {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '"'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '"'))
        s.remove_suffix(1);
    return s;
}

std::vector<std::string_view> split(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= line.size(); ++i)
        if (i == line.size() || line[i] == ',') {
            out.push_back(trim(line.substr(start, i - start)));
            start = i + 1;
        }
    return out;
}

// "123 MiB" or "123": bytes. Returns false when not a number.
bool mib(std::string_view s, long long* bytes) {
    long long v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || v < 0 || v > (1LL << 40))
        return false;
    const std::string_view unit =
        trim(std::string_view(p, static_cast<std::size_t>(s.data() + s.size() - p)));
    if (!unit.empty() && unit != "MiB")
        return false;
    *bytes = v << 20;
    return true;
}

// "2024/01/15 10:20:30.123" -> microseconds since the epoch (UTC, as nvidia-smi prints local time).
bool timestamp(std::string_view s, long long* us) {
    int y, mo, d, h, mi;
    double sec;
    const std::string copy(s);
    if (std::sscanf(copy.c_str(), "%d/%d/%d %d:%d:%lf", &y, &mo, &d, &h, &mi, &sec) != 6)
        return false;
    if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 ||
        mi > 59 || !(sec >= 0 && sec < 62))
        return false;
    // Days from civil (Howard Hinnant's algorithm).
    y -= mo <= 2;
    const long long era = (y >= 0 ? y : y - 399) / 400;
    const long long yoe = y - era * 400;
    const long long doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    const long long days = era * 146097 + doe - 719468;
    *us = ((days * 24 + h) * 60 + mi) * 60000000LL + static_cast<long long>(sec * 1e6);
    return true;
}

} // namespace

NvidiaSmiCsvReader::NvidiaSmiCsvReader(const char* offsetName) : m_offsetName(offsetName) {
    m_trace.format = TraceFormat::NvidiaSmiCsv;
}

void NvidiaSmiCsvReader::line(std::string_view raw, std::size_t lineStart) {
    ++m_lineNo;
    const std::string_view line = trim(raw);
    if (line.empty())
        return;
    const auto cols = split(line);
    if (line.find("memory.used") != std::string_view::npos) { // header: take the column order from it
        m_colTime = m_colIndex = m_colUsed = m_colTotal = -1;
        for (std::size_t c = 0; c < cols.size(); ++c) {
            const std::string_view h = cols[c];
            const int ci = static_cast<int>(c);
            if (h.rfind("timestamp", 0) == 0)
                m_colTime = ci;
            else if (h.rfind("index", 0) == 0)
                m_colIndex = ci;
            else if (h.rfind("memory.used", 0) == 0)
                m_colUsed = ci;
            else if (h.rfind("memory.total", 0) == 0)
                m_colTotal = ci;
        }
        if (m_colUsed < 0)
            throw Error("line " + std::to_string(m_lineNo), "the header has no memory.used column");
        return;
    }
    auto where = [&](const char* field) {
        return "line " + std::to_string(m_lineNo) + " (" + m_offsetName + std::to_string(lineStart) + "), " +
               field;
    };
    auto col = [&](int c) {
        return c >= 0 && static_cast<std::size_t>(c) < cols.size() ? cols[static_cast<std::size_t>(c)]
                                                                   : std::string_view();
    };
    long long used = 0, total = 0, t = 0;
    if (!mib(col(m_colUsed), &used))
        throw Error(where("memory.used"), "expected MiB, got \"" + std::string(col(m_colUsed)) + "\"");
    if (m_colTotal >= 0 && !col(m_colTotal).empty() && !mib(col(m_colTotal), &total))
        throw Error(where("memory.total"), "expected MiB, got \"" + std::string(col(m_colTotal)) + "\"");
    if (m_colTime >= 0 && !timestamp(col(m_colTime), &t))
        throw Error(where("timestamp"),
                    "expected YYYY/MM/DD HH:MM:SS.mmm, got \"" + std::string(col(m_colTime)) + "\"");
    std::string index = m_colIndex >= 0 ? std::string(col(m_colIndex)) : "0";
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos)
        throw Error(where("index"), "expected a GPU index, got \"" + index + "\"");
    DeviceTrace& dev = m_trace.device(index);
    const long long prev = dev.reservedTotal.empty() ? 0 : dev.reservedTotal.back();
    dev.append(t, used >= prev ? TraceAction::Alloc : TraceAction::Free, 0, used - prev);
    dev.allocatedTotal.push_back(0);
    dev.reservedTotal.push_back(used);
    dev.hasTotals = dev.hasReservedTotals = true;
    dev.hasAllocatedTotals = false;
    ++dev.actionCounts["sample"];
    m_any = true;
}

Trace NvidiaSmiCsvReader::finish() {
    if (!m_any)
        throw Error("line 1", "no nvidia-smi samples (expected timestamp, index, memory.used, memory.total)");
    return std::move(m_trace);
}

bool looksLikeCsvText(std::string_view head) {
    const std::size_t end = std::min(head.find('\n'), head.size());
    const std::string_view first = head.substr(0, end);
    if (first.find(',') == std::string_view::npos)
        return false;
    for (const char c : head) // text: no control characters but tab and line ends
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\r' && c != '\n')
            return false;
    return true;
}

Trace readNvidiaSmiCsv(std::string_view text) {
    NvidiaSmiCsvReader reader;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos)
            end = text.size();
        reader.line(text.substr(pos, end - pos), pos);
        pos = end + 1;
    }
    return reader.finish();
}

} // namespace headroom
