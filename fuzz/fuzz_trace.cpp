// The whole pipeline a user's file goes through: detection, gzip, every loader, the summary and the
// live-set index with a few queries.
#include "core/error.h"
#include "core/io/jsontext.h"
#include "core/io/tracesummaryjson.h"
#include "core/trace/traceindex.h"
#include "core/trace/tracereader.h"
#include "core/trace/tracesummary.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    try {
        headroom::TraceReadOptions options;
        options.maxDecompressed = 64u << 20;
        const headroom::Trace trace =
            headroom::readTrace(std::string_view(reinterpret_cast<const char*>(data), size), options);
        const headroom::TraceSummary summary = headroom::summarize(trace);
        (void)headroom::jsonText(headroom::traceSummaryToJson(summary)); // what trace-summary --json writes
        for (std::size_t i = 0; i < trace.devices.size(); ++i) {
            const headroom::TraceIndex index(trace.devices[i], summary.devices[i]);
            (void)index.liveAtPeak();
            (void)index.stateAfter(index.events() / 2);
            (void)index.stateAfter(headroom::kBeforeFirstEvent);
        }
    } catch (const headroom::Error&) {
    }
    return 0;
}
