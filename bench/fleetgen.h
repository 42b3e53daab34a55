// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Test fleets: a job's rank snapshots derived from one real snapshot, with per-stage and per-rank variation
// and one planted outlier, so that a test or a benchmark knows the answer. Used by tests/core/tst_fleet and
// bench/bench_fleet; `gen_fleet BASE.pickle DIR [RANKS]` writes one.
#include "core/trace/trace.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom::bench {

struct FleetPlan {
    int ranks = 32;
    int stages = 4;                                    // contiguous blocks of ranks, as Megatron lays out pp
    std::int64_t stageBytes = std::int64_t(512) << 20; // stage s keeps (stages - 1 - s) x this more: 1F1B
                                                       // holds more micro-batches in the earlier stages
    std::int64_t rankBytes = std::int64_t(8) << 20;    // rank r keeps (r % 5) x this more
    int outlier = 13;                                  // -1: none
    std::int64_t outlierBytes = std::int64_t(3) << 30;
    std::int64_t clockSkewUs = 1500; // rank r's clock reads r x this later (the heat map aligns on steps)
};

// What rank `rank` holds beyond the base snapshot from its first event to its end (a multiple of 2 MiB, so
// that reserved grows by the same bytes): its allocated peak is the base's plus this, exactly.
std::int64_t extraBytes(const FleetPlan& plan, int rank);

// Writes DIR/rank_NN.pickle for each rank from `device` of `base` (a snapshot), as PyTorch's
// _dump_snapshot writes them (pickle protocol 4): the base's events, segments and annotations, shifted in
// time, after one allocation of extraBytes() made before the first event. Returns the files in rank order.
std::vector<std::string> writeFleet(const Trace& base, const std::string& device, const FleetPlan& plan,
                                    const std::string& dir);

} // namespace headroom::bench
