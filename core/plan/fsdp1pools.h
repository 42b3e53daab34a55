// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/peftstep.h"
#include "core/plan/scenario.h"

namespace headroom {

// What FSDP1 (torch.distributed.fsdp.FullyShardedDataParallel) leaves in PyTorch's caching allocator when it
// wraps a PEFT model that sits in host memory, and the pools its side streams keep through a step, as
// Accelerate and Answer.AI's fsdp_qlora wrap one: every trainable leaf (lora_A, lora_B, DoRA's magnitude) a
// unit of its own, each decoder layer a unit, the rest (embeddings, final norm, head) the root. Replayed
// through the allocator model (core/allocator/cachingallocator.h); docs/frameworks.md cites each step.
struct Fsdp1Pools {
    bool replayed = false; // false for a model known only by its size, or one too large to replay
    double wrapped = 0;    // reserved once the model is wrapped, before any step (fsdp_qlora logs it)
    double reserved = 0;   // segments after the wrap, the optimizer's states, the gradients and the gathers
    double reusable = 0;   // the default stream's cached large blocks, which the step's own tensors can take
    // Moved to the GPU with the units but outside their flat parameters (bitsandbytes' quantisation state):
    // whole on every rank, and on the GPU even under CPUOffload.
    double unflattened = 0;
    // The modules' buffers the replay moves (transformers' cached rotary tables before 4.38): whole on
    // every rank and in no count of the weights.
    double buffers = 0;
    // With a step to replay (fsdp1Pools' `step`): the segments at their most through one training step run
    // after all of the above in the same allocator, and the step's own tensors at their most.
    double stepReserved = 0;
    double stepAllocated = 0;
};

// Rank 0 of `shards` ranks holding layers [firstLayer, firstLayer + layers), its shards in host memory under
// cluster.offload_parameters (CPUOffload(offload_params=True)); `gathered`: how many decoder
// layers are unsharded at once besides the root (2 with backward prefetch). `statesPerByte` and
// `gradientsPerByte`: the optimizer states' and the gradients' bytes per trainable parameter byte as the
// allocator holds them (0 for states outside it: paged or offloaded).
// `step`: the training step to replay after them on the compute stream (core/plan/peftstep.h), or null;
// `device`: the bytes the driver can give PyTorch on that GPU, which bounds the step's replay as the real
// allocator is bounded (it frees its cached segments and retries before it fails).
Fsdp1Pools fsdp1Pools(const Scenario& sc, int firstLayer, int layers, bool firstStage, bool lastStage,
                      int shards, int gathered, double statesPerByte, double gradientsPerByte,
                      const PeftStepShape* step = nullptr, double device = 0);

} // namespace headroom
