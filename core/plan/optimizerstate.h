// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace headroom {

enum class Optimizer;
struct TrainingSettings;

// What an optimizer keeps for each parameter it steps, in bytes: held once here for the scenario reader, the
// estimator's adapters and the savings that change the optimizer, so that they cannot drift apart.
// steppedBytes is the dtype of the tensor the optimizer updates (an fp32 master copy, the bf16 weights
// themselves, an adapter in its own dtype): torch.optim's states are zeros_like(param) (torch/optim/adamw.py
// _init_group; SGD's momentum a clone of the gradient, sgd.py), bitsandbytes' 8-bit Adam two uint8 states and
// a block scale, and its 32-bit PagedAdamW fp32 states whatever the parameter's dtype
// (bitsandbytes/optim/optimizer.py, Optimizer2State.init_state: get_state_buffer(p, dtype=torch.float32)).
double optimizerStateBytes(Optimizer optimizer, bool paged, double steppedBytes);

// The same for a run that trains every parameter: the precision preset's master copy where it has one;
// without one (training.precision "bf16") the frameworks that step the weights with torch.optim (torchtune's
// recipes, Hugging Face's Trainer, Unsloth, cs336_basics) keep states in the weights' dtype, where the ones
// with an optimizer of their own (Megatron's, DeepSpeed's BF16_Optimizer) and the contract's preset keep
// fp32.
double optimizerStateBytes(const TrainingSettings& t);

} // namespace headroom
