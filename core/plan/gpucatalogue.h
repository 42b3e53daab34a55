// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

struct GpuSpec {
    std::string name;
    std::uint64_t memoryBytes = 0; // memory.total as the driver reports it
    double pcieGBps = 0;           // host link, one direction, 10^9 bytes per second
    std::vector<std::string> aliases;
};

// The catalogue embedded from resources/gpus.json.
const std::vector<GpuSpec>& gpuCatalogue();
// By name or alias, case-insensitively; nullptr when unknown.
const GpuSpec* findGpu(const std::string& name);
// Whether the GPU computes with FP8 weights natively (compute capability 8.9 or above: Ada, Hopper,
// Blackwell; and MI300, whose ROCm capability reads 9.4). A100s (8.0) and older do not. A name Headroom
// does not know is taken as a current GPU, which does.
bool hasNativeFp8(const std::string& gpu);

} // namespace headroom
