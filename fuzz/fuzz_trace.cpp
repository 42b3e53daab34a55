// SPDX-License-Identifier: GPL-3.0-or-later
// The whole pipeline a user's file goes through: detection, gzip, every loader, the summary and the
// live-set index with a few queries, the attribution at the peak, and the viewer's timeline at two zooms on
// both axes, and the allocator what-if.
#include "core/allocator/replay.h"
#include "core/compare/attribution.h"
#include "core/error.h"
#include "core/io/allocatorwhatifjson.h"
#include "core/io/jsontext.h"
#include "core/io/tracesummaryjson.h"
#include "core/trace/timeline.h"
#include "core/trace/traceindex.h"
#include "core/trace/formats/tracereader.h"
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
            (void)index.segmentsAfter(index.events() / 3);
            (void)index.liveDuring(index.events() / 4, index.events() / 2);
            const auto rules = headroom::AttributionRules::pytorchDefaults();
            const headroom::Attribution a = headroom::attribute(trace, index, index.peakAfter(), rules);
            for (const auto& p : a.allocations)
                (void)headroom::categoryOf(trace, index, p.allocation, rules);
            const headroom::Timeline timeline(index, 8);
            for (auto axis : {headroom::TimelineAxis::Time, headroom::TimelineAxis::Event}) {
                const auto [x0, x1] = timeline.domain(axis);
                (void)timeline.frame(axis, x0, x1 + 1, 64);
                (void)timeline.frame(axis, x0 + (x1 - x0) / 3, x0 + (x1 - x0) / 2 + 1, 17);
            }
        }
        // The allocator what-if replays every snapshot device, as recorded and with expandable segments
        // under a small device (so that OOM retries and releases run too).
        if (trace.format == headroom::TraceFormat::PytorchSnapshot ||
            trace.format == headroom::TraceFormat::PytorchSnapshotJson) {
            headroom::AllocatorSettings s;
            s.expandableSegments = true;
            s.deviceMemory = 64u << 20;
            s.maxSplitSize = 32u << 20;
            try {
                (void)headroom::jsonText(
                    headroom::allocatorWhatIfToJson(headroom::allocatorWhatIf(trace, s), s));
            } catch (const headroom::Error&) {
            }
        }
    } catch (const headroom::Error&) {
    }
    return 0;
}
