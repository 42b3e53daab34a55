// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/model/modelspec.h"

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace headroom {

// Reads a Hugging Face config.json object into a ModelSpec. `path` is the JSON path of `config` inside the
// document it came from ("model" for a scenario's inline config, "" for a config.json file), used in
// error messages. Throws Error naming the key and why, or the model_type when its family is unknown.
ModelSpec modelFromHfConfig(const nlohmann::json& config, const std::string& path = "");

// The model_type values modelFromHfConfig understands.
const std::vector<std::string>& supportedModelTypes();

} // namespace headroom
