// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/allocator/cachingallocator.h"
#include "core/plan/scenario.h"

namespace headroom {

// PyTorch's caching allocator through one step of Unsloth's own layers (its fast LoRA kernels, flash-attn or
// xformers)
// under checkpointing, use_gradient_checkpointing True or "unsloth": every layer's forward without
// gradients, then from the last layer back each layer's rebuild and backward, tensor by tensor as
// unsloth/kernels/fast_lora.py, rms_layernorm.py, utils.py (fast_dequantize, matmul_lora), the attention
// kernel's backward and the autograd engine allocate and free them (docs/frameworks.md, "Unsloth"), replayed
// through core/allocator/cachingallocator.h. The weights, states and adapters are not in it: they sit in
// segments of their own from before the step.
struct StepReplay {
    bool replayed = false; // false where Unsloth's kernels do not run, or without checkpointing
    double allocated = 0;  // the most the step's tensors hold at once
    double reserved = 0;   // what their segments reserve by then
};

// The allocator a scenario of Unsloth plans with: what unsloth/__init__.py sets on import,
// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,roundup_power2_divisions:[32:256,64:128,256:64,>:32]
// (e3162dc5bf), where the scenario keeps expandable segments (its default for the framework); a file that
// says false replaced the variable, and PyTorch's defaults run.
AllocatorSettings unslothAllocatorSettings(const Scenario& sc);

// One GPU's step for the layers [firstLayer, firstLayer + layers) of a dense model with a gated MLP
// `mlpWidth` wide.
StepReplay unslothStepReplay(const Scenario& sc, int layers, int mlpWidth);

} // namespace headroom
