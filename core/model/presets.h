// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/model/modelspec.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace headroom {

struct ModelPreset {
    std::string name;                     // Hugging Face repository id, e.g. "meta-llama/Meta-Llama-3-8B"
    nlohmann::json config;                // its config.json
    std::uint64_t expectedParameters = 0; // published count, 0 where none is recorded
    ModelSpec spec;
};

// The presets embedded from resources/models.json, parsed once.
const std::vector<ModelPreset>& modelPresets();
// Exact name, or the part after the last '/', case-insensitively. nullptr when none matches.
const ModelPreset* findModelPreset(const std::string& name);

} // namespace headroom
