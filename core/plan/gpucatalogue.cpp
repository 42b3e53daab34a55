// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/plan/gpucatalogue.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <string_view>

namespace headroom::data {
std::string_view gpus_json();
}

namespace headroom {

static bool sameName(const std::string& a, const std::string& b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(),
                      [](unsigned char x, unsigned char y) { return std::tolower(x) == std::tolower(y); });
}

const std::vector<GpuSpec>& gpuCatalogue() {
    static const std::vector<GpuSpec> gpus = [] {
        std::vector<GpuSpec> out;
        const auto doc = nlohmann::json::parse(data::gpus_json());
        for (const auto& g : doc.at("gpus")) {
            GpuSpec s;
            s.name = g.at("name").get<std::string>();
            s.memoryBytes = g.at("memory_mib").get<std::uint64_t>() << 20;
            s.pcieGBps = g.at("pcie_gb_per_s").get<double>();
            s.aliases = g.value("aliases", std::vector<std::string>{});
            out.push_back(std::move(s));
        }
        return out;
    }();
    return gpus;
}

const GpuSpec* findGpu(const std::string& name) {
    for (const auto& g : gpuCatalogue()) {
        if (sameName(g.name, name))
            return &g;
        for (const auto& a : g.aliases)
            if (sameName(a, name))
                return &g;
    }
    return nullptr;
}

bool hasNativeFp8(const std::string& gpu) {
    std::string name;
    for (char c : gpu)
        name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    // Compute capability below 8.9: Volta, Turing and Ampere.
    for (const char* older : {"V100", "T4", "A100", "A10", "A30", "A40", "A6000", "A5000", "A4000", "RTX-30",
                              "RTX30", "3090", "3080", "2080", "2060"})
        if (name.find(older) != std::string::npos)
            return false;
    return true;
}

} // namespace headroom
