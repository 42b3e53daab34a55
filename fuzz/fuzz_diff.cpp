// SPDX-License-Identifier: GPL-3.0-or-later
// Two recorded runs diffed at their peaks (headroom-cli diff): the input is run A, the marker
// "\nHRDIFF\n", then run B; without the marker a run is diffed against itself. Sums of sizes by frame and
// the unmatched allocations' size times count must saturate, never overflow.
#include "core/compare/tracediff.h"
#include "core/error.h"
#include "core/io/comparejson.h"
#include "core/io/jsontext.h"
#include "core/trace/traceindex.h"
#include "core/trace/formats/tracereader.h"
#include "core/trace/tracesummary.h"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    constexpr std::string_view marker = "\nHRDIFF\n";
    const std::size_t cut = input.find(marker);
    const std::string_view a = input.substr(0, cut);
    const std::string_view b = cut == std::string_view::npos ? input : input.substr(cut + marker.size());
    try {
        headroom::TraceReadOptions options;
        options.maxDecompressed = 32u << 20;
        const headroom::Trace ta = headroom::readTrace(a, options), tb = headroom::readTrace(b, options);
        const headroom::TraceSummary sa = headroom::summarize(ta), sb = headroom::summarize(tb);
        if (ta.devices.empty() || tb.devices.empty())
            return 0;
        const headroom::TraceIndex ia(ta.devices[0], sa.devices[0]), ib(tb.devices[0], sb.devices[0]);
        const auto rules = headroom::AttributionRules::pytorchDefaults();
        const headroom::TraceDiff d = headroom::diffAtPeaks(ta, ia, tb, ib, rules);
        (void)headroom::jsonText(headroom::traceDiffToJson(d, "a", "b", 20));
    } catch (const headroom::Error&) {
    }
    return 0;
}
