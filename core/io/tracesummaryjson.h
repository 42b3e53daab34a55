// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/tracesummary.h"

#include <nlohmann/json.hpp>
#include <string_view>

namespace headroom {

inline constexpr const char* kTraceSummarySchema = "headroom.trace-summary/1";

// docs/formats.md section 5.
nlohmann::json traceSummaryToJson(const TraceSummary& summary);
// Reads one back (a rank's summary made where its trace was). Throws Error naming the field
// ("devices.3.peak_allocated_bytes"); counts must be integers from 0, lists are bounded.
TraceSummary traceSummaryFromJson(const nlohmann::json& doc);
// Whether `text` starts like such a document (its schema within the first bytes).
bool looksLikeTraceSummary(std::string_view text);

} // namespace headroom
