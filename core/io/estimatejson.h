// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/serve/estimate.h"

#include <nlohmann/json.hpp>

namespace headroom {

inline constexpr const char* kEstimateSchema = "headroom.estimate/1";

// The estimate as docs/formats.md section 3 fixes it (integers for every byte count), plus extensions:
// active_parameters, peak_phase, most_loaded_stage, parallelism, offload.
nlohmann::json estimateToJson(const Scenario& sc, const Estimate& est);
nlohmann::json breakdownToJson(const Breakdown& b);
nlohmann::json savingsToJson(const std::vector<Saving>& savings);

} // namespace headroom
