// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/tracesummaryjson.h"

namespace headroom {

nlohmann::json traceSummaryToJson(const TraceSummary& summary) {
    nlohmann::json devices = nlohmann::json::object();
    for (const auto& d : summary.devices) {
        nlohmann::json actions = nlohmann::json::object();
        for (const auto& [name, count] : d.actions)
            actions[name] = count;
        devices[d.key] = {{"trace_entries", d.entries},
                          {"actions", actions},
                          {"final_allocated_bytes", d.finalAllocated},
                          {"final_active_bytes", d.finalActive},
                          {"final_reserved_bytes", d.finalReserved},
                          {"peak_allocated_bytes", d.peakAllocated},
                          {"peak_active_bytes", d.peakActive},
                          {"peak_reserved_bytes", d.peakReserved},
                          {"segments", d.segments}};
    }
    return {
        {"schema", kTraceSummarySchema}, {"format", traceFormatName(summary.format)}, {"devices", devices}};
}

} // namespace headroom
