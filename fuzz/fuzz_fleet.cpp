// SPDX-License-Identifier: GPL-3.0-or-later
// A fleet's inputs: a rank's file read as a trace-summary document or as a trace (the one-pass live set and
// the attribution at its peak), then a job of such ranks (medians, MADs, stages, outliers: arithmetic on
// sizes from the files) and its JSON. The first line, when it looks like one, is a --layout. Anything but
// a clean Error is a finding.
#include "core/checkednumbers.h"
#include "core/compare/fleet.h"
#include "core/error.h"
#include "core/io/fleetjson.h"
#include "core/io/jsontext.h"
#include "core/io/tracesummaryjson.h"
#include "core/trace/formats/tracereader.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    headroom::Fleet fleet;
    if (text.substr(0, 3) == "tp=" || text.substr(0, 3) == "pp=") {
        const std::size_t nl = text.find('\n');
        try {
            fleet.layout =
                headroom::parseFleetLayout(std::string(text.substr(0, std::min<std::size_t>(nl, 64))));
        } catch (const headroom::Error&) {
        }
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    }
    headroom::FleetRank rank;
    try {
        if (headroom::looksLikeTraceSummary(text)) {
            rank = headroom::fleetRankFromSummaryText(text);
        } else {
            headroom::TraceReadOptions options;
            options.maxDecompressed = 64u << 20;
            rank = headroom::fleetRankFromTrace(headroom::readTrace(text, options),
                                                headroom::AttributionRules::pytorchDefaults(), nullptr);
        }
    } catch (const headroom::Error& e) {
        rank.error = e.what();
    }
    // Eight ranks of it, one unreadable, one at twice its size: the job's arithmetic on the file's numbers.
    for (int r = 0; r < 8; ++r) {
        headroom::FleetRank copy = rank;
        copy.rank = r;
        copy.file = "rank_" + std::to_string(r);
        if (r == 5)
            copy.error = "unreadable";
        if (r == 3)
            copy.summary.peakAllocated =
                headroom::saturatingAdd(copy.summary.peakAllocated, copy.summary.peakAllocated);
        fleet.ranks.push_back(copy);
    }
    headroom::finishFleet(fleet, nullptr);
    (void)headroom::jsonText(headroom::fleetToJson(fleet));
    return 0;
}
