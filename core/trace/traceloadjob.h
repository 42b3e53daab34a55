// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/trace.h"
#include "core/trace/traceindex.h"
#include "core/trace/tracesummary.h"

#include <functional>
#include <memory>
#include <string>

namespace headroom {

// Everything a viewer needs from one file: the events, the summary, and per-device query indexes.
struct LoadedTrace {
    std::string path;
    Trace trace;
    TraceSummary summary;
    std::vector<std::unique_ptr<TraceIndex>> indexes; // one per trace.devices entry
};

// Reads, summarizes and indexes a file in stages, on whatever thread calls it (the window runs it through
// its job runner): `progress` gets 0..1 and returns false to cancel (Error "cancelled"); `onSummary` runs
// before the indexes are built, so a viewer can show the peaks first.
std::shared_ptr<LoadedTrace> loadTrace(const std::string& path,
                                       const std::function<bool(double)>& progress = {},
                                       const std::function<void(const TraceSummary&)>& onSummary = {});

} // namespace headroom
