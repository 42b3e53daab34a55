// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/estimator.h"
#include "core/plan/scenario.h"

#include <string>

namespace headroom {

// How a layer is checkpointed (checkpoint_every, Megatron's block method), and Megatron's uniform
// groups: the estimator's and layerActivations' one rule for both.
Checkpointing layerCheckpointing(const TrainingSettings& tr, int layer, int position);
struct RecomputeGroup {
    bool keepsInput = true;
    double rebuilt = 1;
};
RecomputeGroup recomputeGroup(const TrainingSettings& tr, int position, int stageLayerCount);

// Why Unsloth's own layers (its fast LoRA kernels) do not run for this scenario, or empty when they do:
// unsloth/models/llama.py patch_peft_model patches a layer's attention and MLP with them only for LoRA
// without dropout or DoRA on a 16-bit or 4-bit base, on every one of q, k, v, o, gate, up and down, in a
// dense gated-MLP decoder. Otherwise PEFT's layers run, planned as the huggingface profile plans them.
std::string unslothFallback(const Scenario& sc);

// Per-sample activations of one layer kind (dense or MoE); multiply by the micro-batch size.
LayerActivations perSample(const Scenario& sc, bool moe, int mlpWidth, Checkpointing checkpointing);

// The layers of pipeline stage `stage` of `p` (the first stages take one more when they do not divide).
int stageLayers(int layers, int p, int stage);
int stageFirstLayer(int layers, int p, int stage);

} // namespace headroom
