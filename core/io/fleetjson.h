// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/fleet.h"

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

inline constexpr const char* kFleetSchema = "headroom.fleet/1";

// One rank's file: a trace (any format readTrace knows) or a `headroom-cli trace-summary --json` document
// made where the trace was (its categories are then absent). Never throws for a bad file: the rank keeps
// the error, prefixed with the file's name; only cancelling throws.
FleetRank readFleetRank(const std::string& path, const FleetOptions& options);
// A rank from the text of a trace-summary document (throws Error naming the field).
FleetRank fleetRankFromSummaryText(std::string_view text);
// readFleet with readFleetRank.
Fleet readFleetFiles(const std::vector<std::string>& files, const FleetOptions& options);

// docs/formats.md section 13.
nlohmann::json fleetToJson(const Fleet& fleet);
nlohmann::json fleetRankToJson(const FleetRank& rank);

} // namespace headroom
