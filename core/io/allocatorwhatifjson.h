// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/allocator/replay.h"

#include <nlohmann/json.hpp>

namespace headroom {

inline constexpr const char* kAllocatorWhatIfSchema = "headroom.allocator-whatif/1";

// docs/formats.md section 10, plus each result's fragmentation at its peak and the first differing segment
// event when the replay does not reproduce the recording.
nlohmann::json allocatorWhatIfToJson(const std::vector<DeviceWhatIf>& devices,
                                     const AllocatorSettings& whatif);
// The settings a what-if changed from PyTorch's defaults, by their PYTORCH_CUDA_ALLOC_CONF names.
nlohmann::json allocatorSettingsToJson(const AllocatorSettings& s);

} // namespace headroom
