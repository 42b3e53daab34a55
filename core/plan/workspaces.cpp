// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/plan/workspaces.h"

#include "core/plan/gpucatalogue.h"
#include "core/plan/scenario.h"

#include <cmath>

namespace headroom {

namespace {

// A decimal integer at text[i...], at most 12 digits (a TiB in KiB has 10); advances i. nullopt when none.
std::optional<double> readCount(const std::string& text, std::size_t& i) {
    const std::size_t start = i;
    double value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - start < 12)
        value = value * 10 + (text[i++] - '0');
    if (i == start || (i < text.size() && text[i] >= '0' && text[i] <= '9'))
        return std::nullopt;
    return value;
}

} // namespace

std::optional<double> cublasWorkspaceConfigBytes(const std::string& config) {
    // PyTorch matches ":([0-9]+):([0-9]+)" repeatedly and ignores what lies between; this reads the pairs
    // in order and refuses anything else, so that a typo is an error rather than a silent default.
    constexpr double kLimit = 1099511627776.0; // 1 TiB
    double total = 0;
    std::size_t i = 0, pairs = 0;
    while (i < config.size()) {
        if (config[i++] != ':')
            return std::nullopt;
        const auto size = readCount(config, i);
        if (!size || i >= config.size() || config[i++] != ':')
            return std::nullopt;
        const auto count = readCount(config, i);
        if (!count)
            return std::nullopt;
        total += *size * 1024 * *count;
        if (total > kLimit)
            return std::nullopt;
        ++pairs;
    }
    if (pairs == 0)
        return std::nullopt;
    return total;
}

double defaultCublasWorkspaceBytes(double computeCapability) {
    const bool sm90 = std::abs(computeCapability - 9.0) < 1e-9;
    return sm90 ? 4096.0 * 1024 * 8 : 4096.0 * 1024 * 2 + 16.0 * 1024 * 8;
}

Workspaces plannedWorkspaces(const Scenario& sc) {
    Workspaces w;
    if (sc.mode == Mode::Inference && sc.inference.engine != Engine::None &&
        sc.inference.engine != Engine::HuggingFace)
        return w;
    const double cc = computeCapability(sc.cluster.gpu);
    const auto configured = cublasWorkspaceConfigBytes(sc.cluster.cublasWorkspaceConfig);
    w.pytorchEach = configured ? *configured : defaultCublasWorkspaceBytes(cc);
    w.pytorchCount = sc.mode == Mode::Training ? 2 : 1;
    if (sc.mode == Mode::Training && sc.training.framework == Framework::Megatron)
        w.transformerEngine = cc >= 9.0 ? 33554432.0 : 4194304.0;
    return w;
}

double workspaceBytes(const Scenario& sc) {
    return sc.calibration.present ? sc.calibration.workspaceBytes : plannedWorkspaces(sc).total();
}

} // namespace headroom
