#include "core/trace/traceloadjob.h"

#include "core/error.h"
#include "core/trace/tracereader.h"

namespace headroom {

std::shared_ptr<LoadedTrace> loadTrace(const std::string& path, const std::function<bool(double)>& progress) {
    auto loaded = std::make_shared<LoadedTrace>();
    loaded->path = path;
    TraceReadOptions options;
    if (progress)
        options.progress = [&](std::size_t done, std::size_t total) {
            return progress(total ? static_cast<double>(done) / static_cast<double>(total) : 0.0);
        };
    loaded->trace = readTraceFile(path, options);
    loaded->summary = summarize(loaded->trace);
    for (std::size_t i = 0; i < loaded->trace.devices.size(); ++i)
        loaded->indexes.push_back(
            std::make_unique<TraceIndex>(loaded->trace.devices[i], loaded->summary.devices[i]));
    return loaded;
}

TraceLoadJob::TraceLoadJob(std::string path, Callbacks callbacks)
    : m_path(std::move(path)), m_callbacks(std::move(callbacks)), m_thread([this] { run(); }) {}

TraceLoadJob::~TraceLoadJob() {
    cancel();
    wait();
}

void TraceLoadJob::wait() {
    if (m_thread.joinable())
        m_thread.join();
}

void TraceLoadJob::run() {
    try {
        auto loaded = std::make_shared<LoadedTrace>();
        loaded->path = m_path;
        TraceReadOptions options;
        options.progress = [this](std::size_t done, std::size_t total) {
            if (m_callbacks.progress && total)
                m_callbacks.progress(0.9 * static_cast<double>(done) / static_cast<double>(total));
            return !m_cancel.load();
        };
        loaded->trace = readTraceFile(m_path, options);
        if (m_cancel)
            throw Error("", "cancelled");
        loaded->summary = summarize(loaded->trace);
        if (m_callbacks.summary)
            m_callbacks.summary(std::make_shared<const TraceSummary>(loaded->summary));
        for (std::size_t i = 0; i < loaded->trace.devices.size(); ++i) {
            if (m_cancel)
                throw Error("", "cancelled");
            loaded->indexes.push_back(
                std::make_unique<TraceIndex>(loaded->trace.devices[i], loaded->summary.devices[i]));
        }
        if (m_callbacks.progress)
            m_callbacks.progress(1.0);
        if (m_callbacks.details)
            m_callbacks.details(loaded);
    } catch (const std::exception& e) {
        if (m_callbacks.failed)
            m_callbacks.failed(e.what());
    }
}

} // namespace headroom
