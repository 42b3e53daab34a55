// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/attribution.h"

#include <nlohmann/json.hpp>
#include <string>

namespace headroom {

// Attribution rules as a file a user edits and keeps (schema headroom.attribution-rules/1):
// {"schema": "headroom.attribution-rules/1",
//  "rules": [{"match": "AccumulateGrad", "category": "gradients"},
//            {"match": "torch/optim/", "phase": "optimizer"}, ...]}
// A rule names either a category (docs/formats.md section 6's keys) or a phase, "backward" or "optimizer",
// whose parameter-sized allocations are model state and the rest temporaries. Order matters on one frame.
nlohmann::json attributionRulesToJson(const AttributionRules& rules);
// Throws Error naming the JSON path of the first bad field.
AttributionRules attributionRulesFromJson(const nlohmann::json& doc);
AttributionRules loadAttributionRulesFile(const std::string& path); // errors prefixed with the file name

} // namespace headroom
