// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/plan/gpucatalogue.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

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
            s.computeCapability = g.at("compute_capability").get<double>();
            s.nvlinkSwitch = g.value("nvlink_switch", false);
            s.aliases = g.value("aliases", std::vector<std::string>{});
            out.push_back(std::move(s));
        }
        return out;
    }();
    return gpus;
}

const GpuSpec* findGpu(const std::string& name) {
    // One estimate asks for the same GPU several times (each stage's workspaces, fp8, the device's size),
    // and a slider tick runs one estimate: the last answer is kept, per thread (estimates run off the GUI
    // thread too). The case-insensitive walk of the catalogue was 4% of an estimate.
    thread_local std::string lastName;
    thread_local const GpuSpec* last = nullptr;
    thread_local bool asked = false;
    if (asked && name == lastName)
        return last;
    const GpuSpec* found = nullptr;
    for (const auto& g : gpuCatalogue()) {
        if (sameName(g.name, name))
            found = &g;
        for (const auto& a : g.aliases)
            if (!found && sameName(a, name))
                found = &g;
        if (found)
            break;
    }
    lastName = name;
    last = found;
    asked = true;
    return found;
}

// Whether `token` stands in `name` as a word of its own: "T4" in "TESLA-T4" but not in "RTX4080", "A10" in
// "A10G" but not in "A100".
static bool namesToken(const std::string& name, const std::string& token) {
    for (std::size_t at = name.find(token); at != std::string::npos; at = name.find(token, at + 1)) {
        const std::size_t end = at + token.size();
        const bool digitFirst = std::isdigit(static_cast<unsigned char>(token.front())) != 0;
        const bool startOk =
            at == 0 || (digitFirst ? !std::isdigit(static_cast<unsigned char>(name[at - 1]))
                                   : !std::isalnum(static_cast<unsigned char>(name[at - 1])));
        const bool endOk = end == name.size() || !std::isdigit(static_cast<unsigned char>(name[end]));
        if (startOk && endOk)
            return true;
    }
    return false;
}

double computeCapability(const std::string& gpu) {
    if (const GpuSpec* g = findGpu(gpu))
        return g->computeCapability;
    std::string name;
    for (char c : gpu)
        name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    static constexpr std::pair<const char*, double> kOlder[] = {
        {"V100", 7.0}, {"T4", 7.5},   {"2080", 7.5}, {"2070", 7.5},  {"2060", 7.5},  {"A100", 8.0},
        {"A30", 8.0},  {"A10", 8.6},  {"A40", 8.6},  {"A6000", 8.6}, {"A5000", 8.6}, {"A4000", 8.6},
        {"3090", 8.6}, {"3080", 8.6}, {"3070", 8.6}, {"3060", 8.6}};
    for (const auto& [older, cc] : kOlder)
        if (namesToken(name, older))
            return cc;
    return 9.0;
}

bool hasNativeFp8(const std::string& gpu) {
    return computeCapability(gpu) >= 8.9;
}

bool hasNvlinkSharp(const std::string& gpu) {
    const GpuSpec* g = findGpu(gpu);
    return g && g->nvlinkSwitch && g->computeCapability >= 9.0;
}

} // namespace headroom
