#pragma once
#include "core/compare/comparison.h"
#include "core/compare/tracediff.h"

#include <nlohmann/json.hpp>
#include <string>

namespace headroom {

// CONTRACTS.md section 7, schema headroom.compare/1.
nlohmann::json comparisonToJson(const Comparison& c, const std::string& traceName);
// headroom.diff/1: two runs at their peaks; `limit` caps the frame lists.
nlohmann::json traceDiffToJson(const TraceDiff& d, const std::string& nameA, const std::string& nameB,
                               std::size_t limit = 50);

} // namespace headroom
