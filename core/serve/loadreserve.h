// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/scenario.h"

namespace headroom {

// What loading a model's weights leaves reserved in PyTorch's caching allocator beyond the weights' own
// bytes, on one GPU of the stage that holds layers [firstLayer, firstLayer + layers): each parameter is
// allocated where the engine's model creates it, one tensor at a time in module order, and the allocator
// rounds a large block's segment up to 2 MiB (a 20 MiB segment for one under 10 MiB) and keeps the rest of
// that segment reserved while any block of it lives. SGLang measures what its load used with
// torch.cuda.mem_get_info after empty_cache (python/sglang/srt/model_executor/model_runner.py load_model,
// get_available_gpu_memory), so these bytes are part of its "mem usage" and come out of its KV pool; vLLM
// counts allocated bytes and does not see them. Replayed through core/allocator/cachingallocator.h.
double loadReservedBytes(const Scenario& sc, int firstLayer, int layers, bool firstStage, bool lastStage);

} // namespace headroom
