// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace headroom {

inline constexpr const char* kServingCasesSchema = "headroom.serving-cases/1";

// One serving engine's start-up log beside the scenario of its run (docs/formats.md section 15): the parts
// of the budget the engine logged, each in bytes, negative where the log does not say.
struct ServingCase {
    std::string id, title, role, source;
    std::string scenarioPath; // resolved against the cases file's folder
    double budget = -1, weights = -1, nonTorch = -1;
    // What the engine profiled: vLLM's "peak activation", which from 0.21 includes its CUDA graph estimate.
    double profiled = -1;
    double availableKv = -1;
    long long tokens = -1;
    // Parts known to miss their bound (a pool misses with the step it was sized after), and why.
    std::vector<std::string> knownMissParts;
    std::string knownMissWhy;
    bool knownMiss(const std::string& part) const;
};

struct ServingCases {
    std::string file;
    std::vector<ServingCase> cases;
};

// Reads a serving cases file; errors name the file and the JSON path ("cases[2].logged_gib.weights").
ServingCases loadServingCases(const std::string& path);
// The same from a parsed document, its scenario paths resolved against `folder`; errors name the JSON path.
ServingCases servingCasesFromJson(const nlohmann::json& doc, const std::string& folder);

// Each part's bound: 0.3 GiB apart, and the pool's tokens (or, where the log gives none, its bytes) within
// 3%.
inline constexpr double kServingPartBoundBytes = 0.3 * 1073741824.0;
inline constexpr double kServingPoolBound = 0.03;

struct ServingPart {
    std::string name; // budget, weights, non_torch, profiled, available_kv, tokens
    double logged = 0, planned = 0;
    bool within = true;
};
struct ServingCaseResult {
    const ServingCase* c = nullptr;
    std::string engineVersion;
    std::vector<ServingPart> parts;
    // Every part within its bound, or the one that misses is the case's named known miss.
    bool holds() const;
};

// Plans every case's scenario and sets it beside what its engine logged.
std::vector<ServingCaseResult> runServingCases(const ServingCases& cases);

nlohmann::json servingCasesToJson(const std::vector<ServingCaseResult>& results);
// The README's table: one row per run, each part as logged / planned, fit and validate apart.
std::string servingCasesMarkdown(const std::vector<ServingCaseResult>& results);

} // namespace headroom
