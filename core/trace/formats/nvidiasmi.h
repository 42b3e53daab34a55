// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/trace.h"

#include <string_view>

namespace headroom {

// nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total --format=csv[,noheader][,nounits], fed a
// line at a time, so that a compressed log is read as it is inflated and fails at its first bad line.
// Errors name the line and its byte offset.
class NvidiaSmiCsvReader {
public:
    // How errors name a line's offset: "byte " in a file, "decompressed byte " in a gzip stream.
    explicit NvidiaSmiCsvReader(const char* offsetName = "byte ");
    void line(std::string_view line, std::size_t byteOffset);
    Trace finish(); // Error when no sample was read

private:
    Trace m_trace;
    const char* m_offsetName;
    int m_colTime = 0, m_colIndex = 1, m_colUsed = 2, m_colTotal = 3;
    std::size_t m_lineNo = 0;
    bool m_any = false;
};

// The whole text at once.
Trace readNvidiaSmiCsv(std::string_view text);

// Whether the first bytes could start such a log: a comma in the first line and no control characters.
bool looksLikeCsvText(std::string_view head);

} // namespace headroom
