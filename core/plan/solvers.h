// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/scenario.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace headroom {

// The longest training sequence (or inference context) that fits, 0 when even the shortest does not.
// Steps in multiples of what the parallel layout requires (context parallel size).
long long maxSequenceLength(const Scenario& sc, long long limit = 1 << 22);

// Serving capacity against request length: for each length, the tokens the KV cache holds and how many
// requests of that length run at once (a serving engine's pool; without one, the largest batch of that
// context that fits, and its tokens). Lengths on a log scale from 1,024 to at least twice the scenario's
// and the model's maximum position.
struct ServingPoint {
    long long requestLength = 0;
    long long kvTokens = 0;
    double maxConcurrency = 0;
};
std::vector<ServingPoint> servingCurve(const Scenario& sc, int count = 24);

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

// Every applicable single change that lowers the peak, largest saving first; with a serving engine, every
// change that lets more requests run at once, largest gain first. Each is evaluated as a typed
// edit of `sc` (no document is re-read); applying its patch to the document gives the same scenario.
std::vector<Saving> rankSavings(const Scenario& sc);

} // namespace headroom
