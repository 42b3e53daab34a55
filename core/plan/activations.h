// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/estimator.h"
#include "core/plan/scenario.h"

namespace headroom {

// How a layer is checkpointed (checkpoint_every, Megatron's block method), and Megatron's uniform
// groups: the estimator's and layerActivations' one rule for both.
Checkpointing layerCheckpointing(const TrainingSettings& tr, int layer, int position);
struct RecomputeGroup {
    bool keepsInput = true;
    double rebuilt = 1;
};
RecomputeGroup recomputeGroup(const TrainingSettings& tr, int position, int stageLayerCount);

// Per-sample activations of one layer kind (dense or MoE); multiply by the micro-batch size.
LayerActivations perSample(const Scenario& sc, bool moe, int mlpWidth, Checkpointing checkpointing);

// The layers of pipeline stage `stage` of `p` (the first stages take one more when they do not divide).
int stageLayers(int layers, int p, int stage);
int stageFirstLayer(int layers, int p, int stage);

} // namespace headroom
