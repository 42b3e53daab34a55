// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/fleet.h"

#include "core/checkednumbers.h"
#include "core/serve/estimate.h"
#include "core/trace/traceindex.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

namespace headroom {

namespace {

std::string lower(std::string s) {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return s;
}

std::int64_t median(std::vector<std::int64_t> v) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    // The mean of the two middle values, without overflowing.
    return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

// 1.4826 x the median absolute deviation estimates a normal distribution's sigma: 3 of them is the usual
// robust fence, which one extreme rank cannot move as it moves a mean and a standard deviation.
std::int64_t scaledMad(const std::vector<std::int64_t>& values, std::int64_t med) {
    std::vector<std::int64_t> deviations;
    for (std::int64_t v : values)
        deviations.push_back(saturatingAbs(saturatingSub(v, med)));
    return clampToInt64(std::round(1.4826 * static_cast<double>(median(deviations))));
}

std::string gib(std::int64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / 1073741824.0);
    return text;
}

} // namespace

FleetLayout parseFleetLayout(const std::string& text) {
    FleetLayout layout;
    layout.given = true;
    std::size_t from = 0;
    while (from <= text.size()) {
        const std::size_t comma = std::min(text.find(',', from), text.size());
        const std::string part = text.substr(from, comma - from);
        from = comma + 1;
        if (part.empty())
            continue;
        const std::size_t eq = part.find('=');
        const std::string key = lower(part.substr(0, eq));
        int* target = key == "tp"   ? &layout.tp
                      : key == "cp" ? &layout.cp
                      : key == "ep" ? &layout.ep
                      : key == "pp" ? &layout.pp
                                    : nullptr;
        if (!target)
            throw Error("--layout", "'" + part + "': expected tp=, pp=, cp= or ep=");
        const std::string value = eq == std::string::npos ? "" : part.substr(eq + 1);
        if (value.empty() || value.size() > 7 || value.find_first_not_of("0123456789") != std::string::npos ||
            std::stoi(value) < 1)
            throw Error("--layout", "'" + part + "': the size must be a whole number from 1");
        *target = std::stoi(value);
    }
    return layout;
}

int rankFromFileName(const std::string& path) {
    const std::string name = lower(std::filesystem::path(path).filename().string());
    // In order of how surely they name a rank: "rank" spelt out, then r<N> between separators, then a
    // number ending the name before its extensions (snapshot-12.pickle, mem_12.pickle.gz).
    static const std::regex patterns[] = {
        std::regex(R"(rank[_-]?(\d{1,7}))"),
        std::regex(R"((?:^|[_.-])r(\d{1,7})(?:[_.-]|$))"),
        std::regex(R"([_-](\d{1,7})(?:\.[a-z][a-z0-9]*)+$)"),
    };
    std::smatch m;
    for (const std::regex& p : patterns)
        if (std::regex_search(name, m, p))
            return std::stoi(m[1].str());
    return -1;
}

std::vector<std::string> fleetFiles(const std::vector<std::string>& arguments) {
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    for (const std::string& a : arguments) {
        std::error_code ec;
        if (!fs::is_directory(a, ec)) {
            files.push_back(a);
            continue;
        }
        for (const auto& entry : fs::directory_iterator(a, ec)) {
            if (!entry.is_regular_file(ec))
                continue;
            const std::string name = lower(entry.path().filename().string());
            static const char* const notRecords[] = {".headroom.json", ".png", ".svg", ".pdf", ".md"};
            const bool skip =
                name.empty() || name[0] == '.' ||
                std::any_of(std::begin(notRecords), std::end(notRecords), [&](const char* s) {
                    const std::string_view suffix(s);
                    return name.size() >= suffix.size() &&
                           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
                });
            if (!skip)
                files.push_back(entry.path().string());
        }
        if (ec)
            throw Error(a, ec.message());
    }
    // By rank (no rank, -1, last), then by name; each name's rank read once.
    std::vector<std::pair<unsigned, std::string>> ranked;
    for (std::string& f : files)
        ranked.emplace_back(static_cast<unsigned>(rankFromFileName(f)), std::move(f));
    std::sort(ranked.begin(), ranked.end());
    for (std::size_t i = 0; i < ranked.size(); ++i)
        files[i] = std::move(ranked[i].second);
    return files;
}

FleetRank fleetRankFromTrace(const Trace& trace, const AttributionRules& rules, const Scenario* scenario) {
    FleetRank r;
    const TraceSummary summary = summarize(trace);
    if (summary.devices.empty())
        throw Error("", "the trace records no device");
    const std::size_t d = busiestDevice(summary);
    r.device = summary.devices[d].key;
    r.summary = summary.devices[d];
    const DeviceTrace& device = trace.devices[d];
    if (!device.hasTotals && device.entries() > 0) {
        // The peak's live set alone, from one pass: a fleet keeps no index of hundreds of files.
        const Attribution at = attribute(trace, device, liveAfterEvent(device, r.summary.peakAllocatedAfter),
                                         r.summary.peakAllocatedAfter, rules, scenario);
        r.byCategory = at.bytes;
        r.hasCategories = true;
    }
    return r;
}

Fleet readFleet(const std::vector<std::string>& files, const FleetOptions& options,
                const std::function<FleetRank(const std::string&, const FleetOptions&)>& read) {
    Fleet fleet;
    fleet.layout = options.layout;
    fleet.ranks.resize(files.size());
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const auto threads =
        static_cast<unsigned>(std::min<std::size_t>(files.size(), options.threads ? options.threads : cores));
    std::atomic<std::size_t> next{0};
    std::size_t done = 0;
    std::mutex reported;
    auto worker = [&] {
        for (std::size_t i; (i = next.fetch_add(1)) < files.size();) {
            if (options.cancel.cancelled())
                return;
            FleetRank r = read(files[i], options);
            r.file = files[i];
            std::lock_guard lock(reported);
            fleet.ranks[i] = std::move(r);
            ++done;
            if (options.onRank)
                options.onRank(fleet.ranks[i], done, files.size());
        }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t)
        pool.emplace_back(worker);
    worker();
    for (auto& t : pool)
        t.join();
    options.cancel.check();
    // A rank from the name, else the file's position; then in rank order.
    std::map<int, std::string> seen;
    for (std::size_t i = 0; i < fleet.ranks.size(); ++i) {
        FleetRank& r = fleet.ranks[i];
        const int named = rankFromFileName(r.file);
        r.rank = named >= 0 ? named : static_cast<int>(i);
        if (auto [it, fresh] = seen.emplace(r.rank, r.file); !fresh)
            fleet.warnings.push_back("rank " + std::to_string(r.rank) + " twice: " + it->second + " and " +
                                     r.file);
    }
    std::stable_sort(fleet.ranks.begin(), fleet.ranks.end(),
                     [](const FleetRank& a, const FleetRank& b) { return a.rank < b.rank; });
    finishFleet(fleet, options.scenario);
    return fleet;
}

namespace {
void placeStages(Fleet& fleet, const Scenario* scenario);
void markOutliers(Fleet& fleet);
} // namespace

void finishFleet(Fleet& fleet, const Scenario* scenario) {
    FleetJob& job = fleet.job;
    job = {};
    // Without a layout, a scenario's parallelism is the job's.
    FleetLayout& layout = fleet.layout;
    if (!layout.given && scenario) {
        const ClusterSettings& c = scenario->cluster;
        layout = {c.tensorParallel, c.contextParallel, c.expertParallel, c.pipelineParallel, true};
    }
    // Allocated, unless a rank's file records none: then reserved, which every format records.
    std::vector<std::string> without;
    for (const FleetRank& r : fleet.ranks)
        if (r.error.empty() && !r.summary.allocatedRecorded)
            without.push_back(r.file);
    job.byReserved = !without.empty();
    if (job.byReserved && without.size() < static_cast<std::size_t>(std::count_if(
                                               fleet.ranks.begin(), fleet.ranks.end(),
                                               [](const FleetRank& r) { return r.error.empty(); })))
        fleet.warnings.push_back(
            std::to_string(without.size()) + " of the ranks' files record no allocated bytes (" +
            without.front() + (without.size() > 1 ? ", ..." : "") +
            "): every rank is compared by its reserved peak, and the timelines of the others still show "
            "allocated");
    std::vector<std::int64_t> peaks, allocated;
    std::int64_t worst = 0;
    for (FleetRank& r : fleet.ranks) {
        r.stage = r.tpRank = r.cpRank = r.dpRank = -1;
        r.byReserved = job.byReserved;
        if (!r.error.empty()) {
            ++job.readErrors;
            continue;
        }
        peaks.push_back(r.peak());
        allocated.push_back(r.summary.peakAllocated);
        if (job.worstRank < 0 || r.peak() > worst) {
            job.worstRank = r.rank;
            worst = r.peak();
        }
    }
    if (peaks.empty())
        return;
    job.medianPeak = median(peaks);
    job.medianPeakAllocated = median(allocated);
    job.madBytes = scaledMad(peaks, job.medianPeak);
    job.spreadBytes = saturatingSub(worst, *std::min_element(peaks.begin(), peaks.end()));
    if (layout.given)
        placeStages(fleet, scenario);
    markOutliers(fleet);
}

namespace {

void placeStages(Fleet& fleet, const Scenario* scenario) {
    const FleetLayout& layout = fleet.layout;
    FleetJob& job = fleet.job;
    // Ranks by Megatron's default order "tp-cp-ep-dp-pp" (megatron/core/parallel_state.py,
    // initialize_model_parallel): tensor parallel varies fastest, then context, then data; the pipeline
    // stage is the slowest, so each stage is a contiguous block of world / pp ranks.
    const int world = std::max<int>(static_cast<int>(fleet.ranks.size()), fleet.ranks.back().rank + 1);
    if (world % layout.pp != 0)
        fleet.warnings.push_back(std::to_string(world) + " ranks do not split into " +
                                 std::to_string(layout.pp) + " pipeline stages");
    const int perStage = std::max(1, (world + layout.pp - 1) / layout.pp);
    if (perStage % (layout.tp * layout.cp) != 0)
        fleet.warnings.push_back(std::to_string(perStage) + " ranks a stage do not split into tp=" +
                                 std::to_string(layout.tp) + " x cp=" + std::to_string(layout.cp));
    const int dp = std::max(1, perStage / (layout.tp * layout.cp));
    for (FleetRank& r : fleet.ranks) {
        r.stage = std::min(r.rank / perStage, layout.pp - 1);
        r.tpRank = r.rank % layout.tp;
        r.cpRank = (r.rank / layout.tp) % layout.cp;
        r.dpRank = (r.rank / (layout.tp * layout.cp)) % dp;
    }
    std::optional<Estimate> plan;
    if (scenario) {
        plan = estimate(*scenario);
        if (static_cast<int>(plan->ranks.size()) != layout.pp)
            fleet.warnings.push_back("the scenario plans " + std::to_string(plan->ranks.size()) +
                                     " pipeline stages, the layout has " + std::to_string(layout.pp));
    }
    for (int s = 0; s < layout.pp; ++s) {
        FleetStage st;
        st.stage = s;
        std::vector<std::int64_t> stagePeaks, stageAllocated;
        for (const FleetRank& r : fleet.ranks) {
            if (r.stage != s || !r.error.empty())
                continue;
            ++st.ranks;
            stagePeaks.push_back(r.peak());
            stageAllocated.push_back(r.summary.peakAllocated);
            st.maxPeakAllocated = std::max(st.maxPeakAllocated, r.summary.peakAllocated);
            if (st.worstRank < 0 || r.peak() > st.maxPeak) {
                st.worstRank = r.rank;
                st.maxPeak = r.peak();
            }
        }
        st.medianPeak = median(stagePeaks);
        st.medianPeakAllocated = median(stageAllocated);
        st.madBytes = scaledMad(stagePeaks, st.medianPeak);
        if (plan && static_cast<std::size_t>(s) < plan->ranks.size()) {
            const StageEstimate& rank = plan->ranks[static_cast<std::size_t>(s)];
            st.estimateBytes =
                clampToInt64(std::round(job.byReserved ? rank.reservedBytes : rank.allocatedBytes));
        }
        job.stages.push_back(st);
    }
}

// A rank is an outlier when it recorded an OOM, or when its peak is more than 3 scaled MADs above the median
// of the ranks it should resemble: its pipeline stage's when the layout is known (1F1B's first stage holds
// more micro-batches than its last, by design), else the job's. A MAD of zero (identical ranks) makes any
// rank more than 1% above the median one.
void markOutliers(Fleet& fleet) {
    FleetJob& job = fleet.job;
    job.outliers.clear();
    for (FleetRank& r : fleet.ranks) {
        r.outlier = false;
        r.outlierWhy.clear();
        if (!r.error.empty())
            continue;
        std::int64_t median = job.medianPeak, mad = job.madBytes;
        const char* of = "the job's";
        if (r.stage >= 0 && static_cast<std::size_t>(r.stage) < job.stages.size()) {
            median = job.stages[static_cast<std::size_t>(r.stage)].medianPeak;
            mad = job.stages[static_cast<std::size_t>(r.stage)].madBytes;
            of = "its stage's";
        }
        if (r.summary.ooms() > 0) {
            r.outlier = true;
            r.outlierWhy =
                "recorded " + std::to_string(r.summary.ooms()) + (r.summary.ooms() == 1 ? " OOM" : " OOMs");
        }
        const double fence = mad > 0 ? static_cast<double>(median) + 3.0 * static_cast<double>(mad)
                                     : static_cast<double>(median) * 1.01;
        if (static_cast<double>(r.peak()) > fence) {
            r.outlier = true;
            char why[128];
            const char* counter = r.byReserved ? "reserved " : "";
            if (mad > 0)
                std::snprintf(why, sizeof why, "%speak %s, %.1f MADs above %s median (%s)", counter,
                              gib(r.peak()).c_str(),
                              static_cast<double>(r.peak() - median) / static_cast<double>(mad), of,
                              gib(median).c_str());
            else
                std::snprintf(why, sizeof why, "%speak %s, above %s median (%s) where the others are equal",
                              counter, gib(r.peak()).c_str(), of, gib(median).c_str());
            r.outlierWhy += (r.outlierWhy.empty() ? "" : "; ") + std::string(why);
        }
        if (r.outlier)
            job.outliers.push_back(r.rank);
    }
}

} // namespace

} // namespace headroom
