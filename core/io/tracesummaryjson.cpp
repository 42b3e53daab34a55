// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/tracesummaryjson.h"

#include "core/error.h"

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
                          {"segments", d.segments},
                          {"first_us", d.firstUs},
                          {"last_us", d.lastUs},
                          {"step_mark_us", d.hasStepMark ? nlohmann::json(d.stepMarkUs) : nlohmann::json()},
                          {"peak_allocated_us", d.peakAllocatedUs},
                          {"peak_reserved_us", d.peakReservedUs},
                          {"allocated_recorded", d.allocatedRecorded},
                          {"reserved_at_peak_bytes", d.reservedAtPeak},
                          {"ooms", d.ooms()},
                          {"allocated_profile_bytes", d.profile}};
    }
    return {
        {"schema", kTraceSummarySchema}, {"format", traceFormatName(summary.format)}, {"devices", devices}};
}

namespace {

// A whole number from the document; sizes and counts from 0, times (`time`) of either sign.
std::int64_t count(const nlohmann::json& j, const std::string& path, bool optional = false,
                   bool time = false) {
    if (optional && (j.is_null()))
        return 0;
    if (!j.is_number_integer() && !j.is_number_unsigned())
        throw Error(path, "must be a whole number");
    if (j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
        throw Error(path, "out of range");
    const std::int64_t v = j.get<std::int64_t>();
    if (v < 0 && !time)
        throw Error(path, "must not be negative");
    return v;
}

const nlohmann::json& member(const nlohmann::json& o, const char* key, const std::string& path) {
    const auto it = o.find(key);
    if (it == o.end())
        throw Error(path + "." + key, "missing");
    return *it;
}

} // namespace

bool looksLikeTraceSummary(std::string_view text) {
    const std::string_view head = text.substr(0, 4096);
    return head.find_first_not_of(" \t\r\n") != std::string_view::npos &&
           head[head.find_first_not_of(" \t\r\n")] == '{' &&
           head.find(kTraceSummarySchema) != std::string_view::npos;
}

TraceSummary traceSummaryFromJson(const nlohmann::json& doc) {
    if (!doc.is_object())
        throw Error("", "not a JSON object");
    const auto schema = doc.find("schema");
    if (schema == doc.end() || !schema->is_string() || schema->get<std::string>() != kTraceSummarySchema)
        throw Error("schema", std::string("expected \"") + kTraceSummarySchema + "\"");
    TraceSummary out;
    const nlohmann::json& format = member(doc, "format", "");
    bool known = false;
    for (TraceFormat f :
         {TraceFormat::PytorchSnapshot, TraceFormat::PytorchSnapshotJson, TraceFormat::ChromeTrace,
          TraceFormat::MemoryTimeline, TraceFormat::MemoryTimelineRaw, TraceFormat::NvidiaSmiCsv})
        if (format.is_string() && format.get<std::string>() == traceFormatName(f)) {
            out.format = f;
            known = true;
        }
    if (!known)
        throw Error("format", "not a trace format this program reads");
    const nlohmann::json& devices = member(doc, "devices", "");
    if (!devices.is_object())
        throw Error("devices", "must be an object of devices");
    if (devices.size() > 4096)
        throw Error("devices", "more than 4096 devices");
    for (const auto& item : devices.items()) {
        const std::string key = item.key();
        const nlohmann::json& d = item.value();
        const std::string p = "devices." + key;
        if (!d.is_object())
            throw Error(p, "must be an object");
        DeviceSummary s;
        s.key = key;
        s.entries = static_cast<std::size_t>(count(member(d, "trace_entries", p), p + ".trace_entries"));
        const nlohmann::json& actions = member(d, "actions", p);
        if (!actions.is_object() || actions.size() > 256)
            throw Error(p + ".actions", "must be an object of at most 256 counts");
        for (const auto& [name, n] : actions.items())
            s.actions[name] = static_cast<std::uint64_t>(count(n, p + ".actions." + name));
        s.finalAllocated = count(member(d, "final_allocated_bytes", p), p + ".final_allocated_bytes");
        s.finalActive = count(member(d, "final_active_bytes", p), p + ".final_active_bytes");
        s.finalReserved = count(member(d, "final_reserved_bytes", p), p + ".final_reserved_bytes");
        s.peakAllocated = count(member(d, "peak_allocated_bytes", p), p + ".peak_allocated_bytes");
        s.peakActive = count(member(d, "peak_active_bytes", p), p + ".peak_active_bytes");
        s.peakReserved = count(member(d, "peak_reserved_bytes", p), p + ".peak_reserved_bytes");
        s.segments = static_cast<std::size_t>(count(member(d, "segments", p), p + ".segments"));
        // What a fleet needs besides (older summaries lack it: their ranks have no time or profile).
        auto opt = [&](const char* k) -> const nlohmann::json& {
            static const nlohmann::json none;
            const auto it = d.find(k);
            return it == d.end() ? none : *it;
        };
        s.firstUs = count(opt("first_us"), p + ".first_us", true, true);
        s.lastUs = count(opt("last_us"), p + ".last_us", true, true);
        s.hasStepMark = !opt("step_mark_us").is_null();
        s.stepMarkUs =
            s.hasStepMark ? count(opt("step_mark_us"), p + ".step_mark_us", false, true) : s.firstUs;
        s.peakAllocatedUs = count(opt("peak_allocated_us"), p + ".peak_allocated_us", true, true);
        s.peakReservedUs = count(opt("peak_reserved_us"), p + ".peak_reserved_us", true, true);
        s.reservedAtPeak = count(opt("reserved_at_peak_bytes"), p + ".reserved_at_peak_bytes", true);
        // Older summaries lack it: an nvidia-smi log's never recorded allocated.
        const nlohmann::json& recorded = opt("allocated_recorded");
        if (!recorded.is_null() && !recorded.is_boolean())
            throw Error(p + ".allocated_recorded", "must be true or false");
        s.allocatedRecorded =
            recorded.is_boolean() ? recorded.get<bool>() : out.format != TraceFormat::NvidiaSmiCsv;
        const nlohmann::json& profile = opt("allocated_profile_bytes");
        if (!profile.is_null()) {
            if (!profile.is_array() || profile.size() > 65536)
                throw Error(p + ".allocated_profile_bytes", "must be a list of at most 65536 byte counts");
            for (std::size_t i = 0; i < profile.size(); ++i)
                s.profile.push_back(
                    count(profile[i], p + ".allocated_profile_bytes[" + std::to_string(i) + "]"));
        }
        out.devices.push_back(std::move(s));
    }
    // Devices in the order the writer keeps them ("0" < "1" < ... < "10" < "cpu").
    std::sort(out.devices.begin(), out.devices.end(), [](const DeviceSummary& a, const DeviceSummary& b) {
        const bool da = !a.key.empty() && a.key.find_first_not_of("0123456789") == std::string::npos;
        const bool db = !b.key.empty() && b.key.find_first_not_of("0123456789") == std::string::npos;
        if (da != db)
            return da;
        return da && a.key.size() != b.key.size() ? a.key.size() < b.key.size() : a.key < b.key;
    });
    return out;
}

} // namespace headroom
