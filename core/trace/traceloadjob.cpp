// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/traceloadjob.h"

#include "core/error.h"
#include "core/trace/formats/tracereader.h"

namespace headroom {

std::shared_ptr<LoadedTrace> loadTrace(const std::string& path, const std::function<bool(double)>& progress,
                                       const std::function<void(const TraceSummary&)>& onSummary) {
    auto keepGoing = [&](double fraction) {
        if (progress && !progress(fraction))
            throw Error("", "cancelled");
    };
    auto loaded = std::make_shared<LoadedTrace>();
    loaded->path = path;
    TraceReadOptions options;
    if (progress) // reading is most of the work: 0 to 0.9
        options.progress = [&](std::size_t done, std::size_t total) {
            return progress(total ? 0.9 * static_cast<double>(done) / static_cast<double>(total) : 0.0);
        };
    loaded->trace = readTraceFile(path, options);
    keepGoing(0.9);
    loaded->summary = summarize(loaded->trace);
    if (onSummary)
        onSummary(loaded->summary);
    for (std::size_t i = 0; i < loaded->trace.devices.size(); ++i) {
        keepGoing(0.9);
        loaded->indexes.push_back(
            std::make_unique<TraceIndex>(loaded->trace.devices[i], loaded->summary.devices[i]));
    }
    keepGoing(1.0);
    return loaded;
}

} // namespace headroom
