// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/tracesummary.h"

#include <nlohmann/json.hpp>

namespace headroom {

inline constexpr const char* kTraceSummarySchema = "headroom.trace-summary/1";

// docs/formats.md section 5.
nlohmann::json traceSummaryToJson(const TraceSummary& summary);

} // namespace headroom
