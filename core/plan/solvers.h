// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/estimator.h"
#include "core/plan/scenario.h"

#include <functional>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace headroom {

// The estimate the solvers judge each change by: core/serve's estimate(), which knows the engines (core/plan
// cannot reach it, so it is given).
using EstimateFn = Estimate (*)(const Scenario&);

// The longest training sequence (or inference context) that fits, 0 when even the shortest does not.
// Steps in multiples of what the parallel layout requires (context parallel size).
long long maxSequenceLength(const Scenario& sc, EstimateFn estimate, long long limit = 1 << 22);

// One single change to a scenario and what it does to the most-loaded GPU's peak.
struct Saving {
    std::string id;          // stable key, e.g. "flash_attention"
    std::string description; // for people: "FlashAttention instead of eager attention"
    nlohmann::json patch;    // the same change as a JSON merge patch (RFC 7386) for the scenario document
    double bytesSaved = 0;
    double peakAfter = 0;
    bool fitsAfter = false;
    // Serving engines fill their budget whatever the change, so a change is worth what it adds to the KV
    // pool: the tokens it holds and the requests of the engine's request length served at once.
    bool serving = false;
    long long kvTokensAfter = 0;
    long long kvTokensGained = 0;
    double concurrencyAfter = 0;
    double concurrencyGained = 0;
};

// A what-if: a typed edit of the parsed scenario (so that no document is re-read and no config file is
// opened again per change), and the same change as a JSON merge patch for the window's document.
struct Change {
    std::string id;
    std::string description;
    nlohmann::json patch;
    std::function<void(Scenario&)> edit;
    // Worth offering only where the changed plan moves bytes off the GPU: a paged optimizer whose states all
    // stay on the card lowers the plan by the allocator's slack on them alone, nothing a user would see.
    bool offeredWhenSpilling = false;
};
std::vector<Change> trainingChanges(const Scenario& sc);
std::vector<Change> inferenceChanges(const Scenario& sc);
void setNumGpus(ClusterSettings& c, int n); // and gpus_per_node as the reader defaults it

// Every applicable single change that lowers the peak, largest saving first (training, and inference
// without a serving engine; core/serve ranks an engine's). Each is evaluated as a typed edit of `sc` (no
// document is re-read); applying its patch to the document gives the same scenario.
std::vector<Saving> rankPlanSavings(const Scenario& sc, EstimateFn estimate);

} // namespace headroom
