// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/allocatorwhatifjson.h"

namespace headroom {

using nlohmann::json;

json allocatorSettingsToJson(const AllocatorSettings& s) {
    json out = json::object();
    if (s.expandableSegments)
        out["expandable_segments"] = true;
    if (s.maxSplitSize != UINT64_MAX)
        out["max_split_size_mb"] = static_cast<double>(s.maxSplitSize) / 1048576.0;
    bool rounding = false;
    for (int d : s.roundupPower2Divisions)
        rounding = rounding || d > 1;
    if (rounding) {
        json r = json::object();
        for (std::size_t i = 0; i < s.roundupPower2Divisions.size(); ++i)
            if (s.roundupPower2Divisions[i] > 1)
                r[std::to_string(1ull << i)] = s.roundupPower2Divisions[i];
        out["roundup_power2_divisions"] = r;
    }
    if (s.garbageCollectionThreshold > 0)
        out["garbage_collection_threshold"] = s.garbageCollectionThreshold;
    if (s.memoryFraction > 0)
        out["memory_fraction"] = s.memoryFraction;
    if (s.deviceMemory > 0)
        out["device_memory_bytes"] = s.deviceMemory;
    return out;
}

namespace {
json resultJson(const ReplayResult& r) {
    return {{"peak_reserved_bytes", r.peakReserved},
            {"segment_allocs", r.segmentAllocs},
            {"segment_frees", r.segmentFrees},
            {"ooms", r.ooms},
            {"allocated_bytes_at_peak", r.allocatedAtPeak},
            {"fragmentation_bytes_at_peak", r.peakReserved - std::min(r.peakReserved, r.allocatedAtPeak)},
            {"largest_free_block_at_peak", r.largestFreeAtPeak}};
}
} // namespace

json allocatorWhatIfToJson(const std::vector<DeviceWhatIf>& devices, const AllocatorSettings& whatif) {
    json out = {{"schema", kAllocatorWhatIfSchema}, {"devices", json::object()}};
    for (const DeviceWhatIf& w : devices) {
        json replayed = resultJson(w.replayed);
        replayed["matches_recording"] = w.replayed.matchesRecording;
        replayed["addresses_reproduced"] = w.replayed.addressMatches;
        replayed["allocations"] = w.replayed.allocations;
        if (!w.replayed.matchesRecording)
            replayed["first_difference"] = w.replayed.firstDifference;
        json what = resultJson(w.whatif);
        what["settings"] = allocatorSettingsToJson(whatif);
        what["peak_reserved_band"] = {w.bandLow, w.bandHigh};
        out["devices"][w.device] = {
            {"recorded",
             {{"peak_reserved_bytes", w.recorded.peakReserved},
              {"segment_allocs", w.recorded.segmentAllocs},
              {"segment_frees", w.recorded.segmentFrees},
              {"ooms", w.recorded.ooms},
              {"settings", allocatorSettingsToJson(w.recordedSettings)}}},
            {"replayed", std::move(replayed)},
            // The recorded settings from the what-if's own start (the blocks live when the trace began,
            // placed afresh): the like-for-like reference for a trace that starts mid-run.
            {"baseline", resultJson(w.baseline)},
            {"whatif", std::move(what)}};
    }
    return out;
}

} // namespace headroom
