// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/trace.h"
#include "core/trace/traceindex.h"
#include "core/trace/tracesummary.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace headroom {

// Everything a viewer needs from one file: the events, the summary, and per-device query indexes.
struct LoadedTrace {
    std::string path;
    Trace trace;
    TraceSummary summary;
    std::vector<std::unique_ptr<TraceIndex>> indexes; // one per trace.devices entry
};

// Loads a trace on a worker thread. Results arrive in stages: progress while parsing, the summary as soon
// as it is known, then the details (indexes). Callbacks run on the worker thread; a GUI marshals them.
// Destroying the job cancels it and waits for the thread.
class TraceLoadJob {
public:
    struct Callbacks {
        std::function<void(double fraction)> progress;
        std::function<void(std::shared_ptr<const TraceSummary>)> summary;
        std::function<void(std::shared_ptr<const LoadedTrace>)> details;
        std::function<void(const std::string& error)> failed; // also reports "cancelled"
    };

    TraceLoadJob(std::string path, Callbacks callbacks);
    ~TraceLoadJob();
    TraceLoadJob(const TraceLoadJob&) = delete;
    TraceLoadJob& operator=(const TraceLoadJob&) = delete;

    void cancel() { m_cancel = true; }
    void wait();
    bool cancelled() const { return m_cancel; }

private:
    void run();

    std::string m_path;
    Callbacks m_callbacks;
    std::atomic<bool> m_cancel{false};
    std::thread m_thread;
};

// The synchronous form: read, summarize and index a file (used by the job and tests). `progress` gets
// 0..1 and returns false to cancel (Error "cancelled"); `onSummary` runs before the indexes are built.
std::shared_ptr<LoadedTrace> loadTrace(const std::string& path,
                                       const std::function<bool(double)>& progress = {},
                                       const std::function<void(const TraceSummary&)>& onSummary = {});

} // namespace headroom
