// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/formats/picklereader.h"
#include "core/trace/trace.h"

#include <string>
#include <string_view>

namespace headroom {

struct TraceReadOptions {
    ReadLimits limits;
    std::size_t maxDecompressed = std::size_t(16) << 30; // refuse gzip bombs beyond 16 GiB
    ReadProgress progress;                               // bytes parsed; return false to cancel
};

// Detects the format from the content (gzip, pickle, JSON shape, CSV), never from the file name, and
// reads it. Throws Error with the byte offset or the field path of the first problem.
// Takes the bytes by value and frees them (and any decompressed copy) as soon as they are parsed.
Trace readTrace(std::string bytes, const TraceReadOptions& options = {});
inline Trace readTrace(std::string_view bytes, const TraceReadOptions& options = {}) {
    return readTrace(std::string(bytes), options);
}
inline Trace readTrace(const char* bytes, const TraceReadOptions& options = {}) {
    return readTrace(std::string(bytes), options);
}
// Whether a file should be opened as a trace rather than a scenario or model config, from its first bytes:
// gzip, pickle, CSV text, a JSON list, or a JSON object with trace keys (traceEvents, segments,
// device_traces). False for a file that cannot be read (opening it as a scenario reports why).
bool isTraceFile(const std::string& path);
// Reads a file (errors are prefixed with its name).
Trace readTraceFile(const std::string& path, const TraceReadOptions& options = {});

} // namespace headroom
