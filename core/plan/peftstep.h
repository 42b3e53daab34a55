// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/allocator/cachingallocator.h"

namespace headroom {

// One training step of a transformers Llama-family decoder (Llama, Mistral, Yi: eager modules before 4.46,
// SDPA attention) with PEFT's LoRA adapters on a 16-bit or bitsandbytes 4-bit base, every decoder layer
// under torch's reentrant checkpoint, as Answer.AI's fsdp_qlora trains one: its tensors on the compute
// stream, op by op as the modules make and drop them and the autograd engine runs their backward
// (docs/frameworks.md, "FSDP1's step").
struct PeftStepShape {
    double tokens = 0;   // micro-batch x sequence
    double sequence = 0; // the sequence alone (the rotary tables' rows)
    double hidden = 0, q = 0, kv = 0, ffn = 0, heads = 0, headDim = 0, vocab = 0, rank = 0;
    double bytes = 2;        // the activations' (and the 16-bit weights') bytes
    double adapterBytes = 2; // the adapters' dtype: an input of another dtype is cast for them
    // Which of q, k, v, o, gate, up, down carry adapters.
    bool targets[7] = {};
    bool dropout = false;     // lora_dropout > 0: each adapter drops out its own copy of the input
    bool quantised = false;   // a bitsandbytes 4-bit base, dequantised for each matmul
    bool fourBitKeepsInput = false; // its MatMul4Bit keeps its input (bitsandbytes before 0.43.2)
    bool doubleQuant = false; // and its absmax first
    bool ropeCast = false;    // cos and sin cached in fp32 (a quantised base built from its config)
    int layers = 0;
    bool loss = false; // the stage ends with the final norm, the head and the loss
};

struct StepPeaks {
    double allocated = 0; // the step's own tensors at their most
    double reserved = 0;  // the allocator's segments at their most, whatever else it holds
};

// Runs the step on stream 0 of `a`, which holds what the wrap, the optimizer and the gathers left.
StepPeaks replayPeftStep(CachingAllocatorModel& a, const PeftStepShape& d);

} // namespace headroom
