// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/fleetjson.h"

#include "core/error.h"
#include "core/fileio.h"
#include "core/io/tracesummaryjson.h"
#include "core/trace/formats/tracereader.h"

#include <fstream>

namespace headroom {

namespace {

// The first bytes of a file, to tell a summary from a trace without reading either whole.
std::string head(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes(4096, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    bytes.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    return bytes;
}

nlohmann::json orNull(bool present, const nlohmann::json& value) {
    return present ? value : nlohmann::json();
}

} // namespace

FleetRank fleetRankFromSummaryText(std::string_view text) {
    nlohmann::json doc;
    try { // bounded in depth: a summary nests four levels
        doc = nlohmann::json::parse(text, [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
            if (depth > 16)
                throw Error("", "JSON nested deeper than a trace summary is");
            return true;
        });
    } catch (const nlohmann::json::exception& e) {
        throw Error("", jsonExceptionText(e));
    }
    const TraceSummary s = traceSummaryFromJson(doc);
    if (s.devices.empty())
        throw Error("devices", "no device");
    FleetRank r;
    const std::size_t d = busiestDevice(s);
    r.device = s.devices[d].key;
    r.summary = s.devices[d];
    r.fromSummary = true;
    return r;
}

FleetRank readFleetRank(const std::string& path, const FleetOptions& options) {
    FleetRank r;
    try {
        if (looksLikeTraceSummary(head(path))) {
            // A summary is a few kilobytes; 16 MiB bounds a hostile one.
            r = fleetRankFromSummaryText(readTextFile(path, 16u << 20));
        } else {
            TraceReadOptions read;
            read.progress = [&](std::size_t, std::size_t) { return !options.cancel.cancelled(); };
            r = fleetRankFromTrace(readTraceFile(path, read), options.rules, options.scenario);
        }
    } catch (const Error& e) {
        options.cancel.check();
        // readTraceFile's errors already name the file; the summary reader's do not.
        r.error = std::string(e.what()).rfind(path, 0) == 0 ? std::string(e.what()) : e.withFile(path);
    } catch (const std::exception& e) {
        options.cancel.check();
        r.error = path + ": " + e.what();
    }
    r.file = path;
    return r;
}

Fleet readFleetFiles(const std::vector<std::string>& files, const FleetOptions& options) {
    return readFleet(files, options, readFleetRank);
}

nlohmann::json fleetRankToJson(const FleetRank& r) {
    const DeviceSummary& s = r.summary;
    nlohmann::json categories;
    if (r.hasCategories) {
        categories = nlohmann::json::object();
        for (std::size_t c = 0; c < kMeasuredCategories; ++c)
            categories[measuredCategoryKey(static_cast<MeasuredCategory>(c))] = r.byCategory[c];
    }
    const bool read = r.error.empty();
    return {{"rank", r.rank},
            {"file", r.file},
            {"source", r.fromSummary ? "trace-summary" : "trace"},
            {"device", orNull(read, r.device)},
            {"stage", orNull(r.stage >= 0, r.stage)},
            {"coordinates",
             orNull(r.stage >= 0, {{"tp", r.tpRank}, {"cp", r.cpRank}, {"dp", r.dpRank}, {"pp", r.stage}})},
            {"peak_allocated_bytes", s.peakAllocated},
            {"peak_reserved_bytes", s.peakReserved},
            {"peak_active_bytes", s.peakActive},
            {"reserved_at_peak_bytes", s.reservedAtPeak},
            {"allocated_recorded", s.allocatedRecorded},
            {"fragmentation_at_peak",
             orNull(r.fragmentationAtPeak().has_value(), r.fragmentationAtPeak().value_or(0))},
            {"peak_time_us", r.peakTimeUs()},
            {"step_mark", s.hasStepMark},
            {"by_category", categories},
            {"ooms", s.ooms()},
            {"entries", s.entries},
            {"outlier", r.outlier},
            {"outlier_reason", orNull(r.outlier, r.outlierWhy)},
            {"error", orNull(!read, r.error)},
            {"allocated_profile",
             {{"first_us", s.firstUs},
              {"last_us", s.lastUs},
              {"step_mark_us", s.stepMarkUs},
              {"bytes", s.profile}}}};
}

nlohmann::json fleetToJson(const Fleet& fleet) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const FleetRank& r : fleet.ranks)
        ranks.push_back(fleetRankToJson(r));
    nlohmann::json stages = nlohmann::json::array();
    for (const FleetStage& s : fleet.job.stages)
        stages.push_back(
            {{"stage", s.stage},
             {"ranks", s.ranks},
             {"worst_rank", orNull(s.worstRank >= 0, s.worstRank)},
             {"max_peak_bytes", s.maxPeak},
             {"median_peak_bytes", s.medianPeak},
             {"max_peak_allocated_bytes", s.maxPeakAllocated},
             {"median_peak_allocated_bytes", s.medianPeakAllocated},
             {"estimate_bytes", orNull(s.estimateBytes.has_value(), s.estimateBytes.value_or(0))}});
    const FleetJob& j = fleet.job;
    const FleetLayout& l = fleet.layout;
    return {{"schema", kFleetSchema},
            {"layout", orNull(l.given, {{"tp", l.tp}, {"cp", l.cp}, {"ep", l.ep}, {"pp", l.pp}})},
            {"ranks", ranks},
            {"job",
             {{"ranks", fleet.ranks.size()},
              {"read_errors", j.readErrors},
              {"compared_by", j.byReserved ? "reserved" : "allocated"},
              {"worst_rank", orNull(j.worstRank >= 0, j.worstRank)},
              {"median_peak_bytes", j.medianPeak},
              {"median_peak_allocated_bytes", j.medianPeakAllocated},
              {"mad_bytes", j.madBytes},
              {"spread_bytes", j.spreadBytes},
              {"outliers", j.outliers},
              {"stages", stages}}},
            {"warnings", fleet.warnings}};
}

} // namespace headroom
