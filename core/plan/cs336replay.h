// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/cs336basics.h"
#include "core/plan/scenario.h"

#include <optional>

namespace headroom {

// cs336_basics' code, tensor by tensor as the package makes and drops them (model.py
// BasicsTransformerLM.forward, TransformerBlock, RMSNorm, RotaryEmbedding, CausalMultiHeadSelfAttention,
// scaled_dot_product_attention, SwiGLU; nn_utils.py softmax and cross_entropy; optimizer.py AdamW), replayed
// through PyTorch's caching allocator (core/allocator/cachingallocator.h) after the model's parameters are
// moved to the GPU in `model.to(device)`'s order: a forward (below) or a training step (further down). What
// its segments reserve is the run's reserved peak: the allocator's overhead from the code's own sizes and
// order, not a fraction (the 1,024-token medium forward caches 11% beyond what it allocates, its 512-token
// one 2%; a first AdamW step of the 2.7B model at 128 tokens 11%).
struct Cs336Replay {
    bool replayed = false;    // false where the sizes are past any GPU or the layers past any model's
    double allocated = 0;     // the most allocated at once, parameters included
    double reserved = 0;      // the most its segments reserve (beyond the device: what it would have taken)
    // A first training step's: the most reserved by the end of its forward and loss, and of its backward.
    // 0 for a forward and a later step, whose cache is the first step's from its start.
    double reservedByForward = 0, reservedByBackward = 0;
    bool outOfMemory = false; // a request failed even with the cache released: it does not fit
};

struct Cs336ForwardRun {
    Cs336Shape shape; // per sequence; weightBytes is the parameters' dtype
    int layers = 0;
    double batch = 1;
    double workspace = 0;     // cuBLAS's workspace, allocated by the first matrix multiply
    bool cachedCasts = false; // torch.no_grad under autocast: each weight's 16-bit copy kept to the end
    // Autograd on (inference.grad_mode "enabled", fp32 parameters): each op saves what its backward would
    // need, as the training step's forward does, and all of it stays with the logits the caller holds.
    bool graph = false;
    // With the graph: the previous forward's, kept by the output the loop has not rebound yet
    // (InferenceSettings::previousOutputHeld), in the segments the previous pass left.
    bool previousGraph = false;
    bool expandableSegments = false;
    // What the driver can give PyTorch (0: unlimited). Near it the allocator frees its cached segments and
    // retries before it fails, as PyTorch's does, so a forward that fits only so is planned to fit.
    double device = 0;
    // Replay every block, not stopping once the allocator's state repeats (what that shortcut is checked
    // against).
    bool everyBlock = false;
};

// Out of memory the forward stops at its first failed request; with `beyond` it is replayed again without
// the device's limit for what it would need (the figure a plan that does not fit shows), else its reserved is
// what it had when it failed plus the request (enough to say it does not fit).
Cs336Replay cs336ForwardReplay(const Cs336ForwardRun& run, bool beyond = true);

// Whether cs336_basics' code can run a scenario's model and settings as the reader accepts it under that
// framework (core/io/scenariojson.cpp checkCs336Basics): a dense decoder with multi-head attention and a
// SwiGLU MLP, whole on each GPU, every weight trained, blocks checkpointed whole or not at all. What a plan
// of another profile asks before it replays that code (Calibration::code).
bool cs336CanRun(const Scenario& sc);

// What a plan calibrated with `c` does with factors fitted against the tables of the code its runs ran
// (Calibration::codeTables), in the mode they were measured in and under another profile than that code's:
// made with that code's tables (Planned), or with its own profile where the code cannot run it (CannotRun:
// calibration.factors.own_profile's factors, where the file has them). NotFitted otherwise. The estimator
// (calibratedCode) and the reader (which factors it reads, what it says) ask this one rule.
enum class CodeTables { NotFitted, Planned, CannotRun };
CodeTables codeTablesFor(const Scenario& sc, const Calibration& c);

// The scenario whose code the allocator's replay runs for `sc` under calibration `c` when the runs it was
// calibrated on ran cs336_basics' code and `sc` plans another profile (Calibration::code): cs336_basics,
// stepping its own AdamW where the runs did (Calibration::codeOptimizer) and the plan's step is the one the
// calibration measured (stepScratchAppliesTo; a plan that declares another implementation replays that one).
// Nothing where the plan replays its own code. The estimator's replay of a calibrated plan and the
// calibration's replay of its runs both go through here, so the two cannot step different optimizers.
std::optional<Scenario> cs336CodeAsRecorded(const Scenario& sc, const Calibration& c);

// The run a scenario plans, when it is one: cs336_basics' forward (without autograd, or with it and fp32
// parameters) on one GPU, of a known architecture, uncalibrated in inference (a calibration's tensors are its
// own, not the code's). `workspace` is the scenario's cuBLAS workspace (core/plan/workspaces.h), `device`
// what the driver can give PyTorch.
std::optional<Cs336ForwardRun> cs336ForwardRunOf(const Scenario& sc, double workspace, double device);

// cs336_basics' training step with fp32 parameters, in fp32 or under autocast, on one GPU (the benchmark's
// loop: zero_grad, forward, the package's
// cross-entropy, backward, AdamW), every tensor as the code makes and drops it: the forward keeps what
// autograd saves (cs336basics.h's tables, tensor by tensor), the backward frees it layer by layer from the
// last while each parameter's gradient is made, and AdamW steps: the package's one parameter at a time, or
// torch.optim.AdamW's (one tensor at a time, foreach or fused). zero_grad runs before the forward, after it
// (the last step's gradients alive through it) or never. Checkpointed (fp32), each block's forward keeps only
// its input and runs again in its backward. A first step makes the optimizer's states after the
// backward, when the activations' segments stay cached beside them: a state as large as no cached block is
// takes a segment of its own (2.7B at 128 tokens: 20 MiB blocks, 25-100 MiB states). A later step is
// replayed after a first, whose segments stay reserved. At most 128 blocks' forwards and backwards in all
// (layers x micro-batches x steps); beyond, nothing is replayed.
struct Cs336StepRun {
    Cs336Shape shape; // per sequence; fp32 parameters, autocast's dtype or none
    int layers = 0;
    double batch = 1;
    double workspace = 0; // cuBLAS's workspaces, allocated by the first matrix multiply
    bool firstStep = false;
    int microBatches = 1; // gradient accumulation: forwards and backwards before the step
    ZeroGrad zeroGrad = ZeroGrad::BeforeForward;      // where the loop calls zero_grad
    OptimizerImpl adamw = OptimizerImpl::Cs336Basics; // the package's AdamW or torch's, as implemented
    bool checkpointed = false; // every block under torch.utils.checkpoint (fp32, without autocast)
    bool expandableSegments = false;
    double device = 0; // what the driver can give PyTorch (0: unlimited)
};

Cs336Replay cs336StepReplay(const Cs336StepRun& run, bool beyond = true);

// The run a scenario plans, when it is one: cs336_basics training with fp32 parameters on one GPU, of a
// known architecture, uncalibrated, AdamW with the states it makes (no bytes per parameter given), no
// compile; checkpointed, every block and without autocast.
std::optional<Cs336StepRun> cs336StepRunOf(const Scenario& sc, double workspace, double device);

} // namespace headroom
