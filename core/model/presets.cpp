// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/model/presets.h"

#include "core/model/hfconfig.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace headroom::data {
std::string_view models_json();
}

namespace headroom {

static std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

const std::vector<ModelPreset>& modelPresets() {
    static const std::vector<ModelPreset> presets = [] {
        std::vector<ModelPreset> out;
        const auto doc = nlohmann::json::parse(data::models_json());
        for (const auto& p : doc.at("presets")) {
            ModelPreset preset;
            preset.name = p.at("name").get<std::string>();
            preset.config = p.at("config");
            preset.expectedParameters = p.value("expected_parameters", std::uint64_t{0});
            preset.spec = modelFromHfConfig(preset.config, "preset " + preset.name);
            out.push_back(std::move(preset));
        }
        return out;
    }();
    return presets;
}

const ModelPreset* findModelPreset(const std::string& name) {
    const std::string want = lower(name);
    for (const auto& p : modelPresets())
        if (lower(p.name) == want)
            return &p;
    for (const auto& p : modelPresets()) {
        const auto slash = p.name.rfind('/');
        if (slash != std::string::npos && lower(std::string_view(p.name).substr(slash + 1)) == want)
            return &p;
    }
    return nullptr;
}

} // namespace headroom
