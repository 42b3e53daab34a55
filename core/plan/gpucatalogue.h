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

} // namespace headroom
