// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/runtimeline.h"

#include <nlohmann/json.hpp>
#include <string>

namespace headroom {

inline constexpr const char* kTimelineSchema = "headroom.timeline/1";

// docs/formats.md section 14: a run's memory by category over time, one row per bucket.
nlohmann::json runTimelineToJson(const RunTimeline& run, const std::string& traceName);

} // namespace headroom
