#pragma once
#include "core/compare/comparison.h"

#include <nlohmann/json.hpp>
#include <string>

namespace headroom {

// CONTRACTS.md section 7, schema headroom.compare/1.
nlohmann::json comparisonToJson(const Comparison& c, const std::string& traceName);

} // namespace headroom
