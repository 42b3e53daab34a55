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
    double computeCapability = 0;  // CUDA's major.minor (8.0 for an A100); ROCm's gfx942 reads 9.4
    bool nvlinkSwitch = false;     // sold in NVSwitch systems (HGX): NVLink SHARP from compute capability 9.0
    std::vector<std::string> aliases;
};

// The catalogue embedded from resources/gpus.json.
const std::vector<GpuSpec>& gpuCatalogue();
// By name or alias, case-insensitively; nullptr when unknown.
const GpuSpec* findGpu(const std::string& name);
// The GPU's compute capability: the catalogue's, or for a name it does not list, its generation's when the
// name says one (V100 7.0, T4 and RTX 20 7.5, A100 and RTX 30 8.x), else 9.0: a GPU Headroom does not know
// is taken as a current one.
double computeCapability(const std::string& gpu);
// Whether the GPU computes with FP8 weights natively (compute capability 8.9 or above: Ada, Hopper,
// Blackwell; and MI300, whose ROCm capability reads 9.4). A100s (8.0) and older do not. A name Headroom
// does not know is taken as a current GPU, which does.
bool hasNativeFp8(const std::string& gpu);
// Whether NCCL can reduce in the NVSwitches between GPUs of this kind (NVLink SHARP, "NVLS"): an NVSwitch
// system of compute capability 9.0 or above (NCCL's src/graph/search.cc skips the NVLS pattern without an
// NVS node or below SM 90). Only GPUs the catalogue lists as sold in such systems: PCIe and NVL boards, and
// names it does not know, are taken as without.
bool hasNvlinkSharp(const std::string& gpu);

} // namespace headroom
