// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/cancellation.h"
#include "core/compare/attribution.h"
#include "core/plan/scenario.h"
#include "core/trace/tracesummary.h"

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

// How a job's ranks are laid out (Megatron's "tp-cp-ep-dp-pp" order: tensor parallel fastest, pipeline
// slowest; torchtitan's mesh puts pp outermost too), so that a rank's file knows its pipeline stage.
struct FleetLayout {
    int tp = 1, cp = 1, ep = 1, pp = 1;
    bool given = false;
};
// "tp=8,pp=4,cp=1,ep=1" (any subset, any order). Throws Error("--layout", ...) naming the bad part.
FleetLayout parseFleetLayout(const std::string& text);

// The rank a file's name gives: rank_12, rank12, rank-12, _r12_, r12., or a trailing -12 / _12 before the
// extension. -1 when the name has none.
int rankFromFileName(const std::string& path);

// One rank's file, summarised: the busiest device of a trace (or of a trace-summary document made where
// the file was), what a fleet keeps of it and nothing more.
struct FleetRank {
    int rank = -1;
    std::string file;         // as given
    std::string error;        // the read error ("" when read)
    bool fromSummary = false; // a headroom.trace-summary/1 document, not a trace
    std::string device;
    DeviceSummary summary; // peaks, the peak's time and reserved bytes, OOMs, the allocated profile
    bool hasCategories = false;
    std::array<std::int64_t, kMeasuredCategories> byCategory{};
    // Filled by the job: the pipeline stage and coordinates when a layout is given (-1 otherwise), and
    // whether the job compares its ranks by reserved (FleetJob::byReserved).
    int stage = -1, tpRank = -1, cpRank = -1, dpRank = -1;
    bool byReserved = false;
    bool outlier = false;
    std::string outlierWhy;
    // The peak the job compares ranks by, and where it is.
    std::int64_t peak() const { return byReserved ? summary.peakReserved : summary.peakAllocated; }
    std::int64_t peakTimeUs() const {
        return (byReserved ? summary.peakReservedUs : summary.peakAllocatedUs) - summary.stepMarkUs;
    }
    // Reserved but not allocated when allocated peaked, as a share of reserved; none where the file records
    // no allocated (an nvidia-smi log's "used" is all reserved to it).
    std::optional<double> fragmentationAtPeak() const {
        if (!summary.allocatedRecorded)
            return std::nullopt;
        return summary.reservedAtPeak > 0
                   ? static_cast<double>(summary.reservedAtPeak - summary.peakAllocated) /
                         static_cast<double>(summary.reservedAtPeak)
                   : 0.0;
    }
};

// A stage's and the job's figures are of the peak the job compares (FleetRank::peak), those named
// "Allocated" of allocated whatever it compares (0 where no file records it).
struct FleetStage {
    int stage = 0;
    int ranks = 0;
    int worstRank = -1;
    std::int64_t maxPeak = 0, medianPeak = 0;
    std::int64_t maxPeakAllocated = 0, medianPeakAllocated = 0;
    std::int64_t madBytes = 0; // scaled, as the job's
    // The plan's peak of this stage, with a scenario: allocated, or reserved when the job compares that.
    std::optional<std::int64_t> estimateBytes;
};

struct FleetJob {
    // Whether ranks are compared by their reserved peaks: when any rank's file records no allocated bytes
    // (nvidia-smi logs), the one counter every rank has.
    bool byReserved = false;
    int worstRank = -1;
    std::int64_t medianPeak = 0;
    std::int64_t medianPeakAllocated = 0;
    std::int64_t madBytes = 0;      // the median absolute deviation, scaled by 1.4826 (a normal's sigma)
    std::int64_t spreadBytes = 0;   // the highest peak less the lowest
    std::vector<int> outliers;      // ranks, in order
    std::vector<FleetStage> stages; // with a layout
    int readErrors = 0;
};

struct Fleet {
    FleetLayout layout;
    std::vector<FleetRank> ranks; // by rank
    FleetJob job;
    std::vector<std::string> warnings;
};

// The files a fleet reads: each argument that is a directory gives the files inside it (not below), the
// rest are taken as given; sorted by rank from the name, then by name. Names that cannot be a rank's
// record (this program's own outputs: scenarios, reports, pictures) are left out of a directory.
std::vector<std::string> fleetFiles(const std::vector<std::string>& arguments);

// What a fleet keeps of one rank's trace: its busiest device's summary and, for a snapshot, the categories
// at the allocated peak from attribution (the scenario's tensor table when one is given), found without
// building an index.
FleetRank fleetRankFromTrace(const Trace& trace, const AttributionRules& rules, const Scenario* scenario);

struct FleetOptions {
    FleetLayout layout;
    const Scenario* scenario = nullptr;
    AttributionRules rules = AttributionRules::pytorchDefaults();
    unsigned threads = 0; // 0: one reader per core
    Cancellation cancel;
    // Called as each file is read (on the reader's thread, one call at a time), before the job is known.
    std::function<void(const FleetRank&, std::size_t done, std::size_t total)> onRank;
};

// Reads every file with `read` (which never throws for a bad file: it keeps the error in the rank), one
// reader per core, each holding one file's events while it reads them and keeping only its summary; then
// works out the job. Throws Error("", "cancelled") when cancelled. core/io's readFleetFiles gives `read`.
Fleet readFleet(const std::vector<std::string>& files, const FleetOptions& options,
                const std::function<FleetRank(const std::string& path, const FleetOptions&)>& read);

// Ranks, stages, outliers and the job from summaries already read (what readFleet does after reading).
void finishFleet(Fleet& fleet, const Scenario* scenario);

} // namespace headroom
