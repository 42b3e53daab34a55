// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/estimator.h"
#include "core/plan/scenario.h"

namespace headroom {

// Everything one stage's GPU holds, for a given micro-batch size, before phases are applied.
struct StageModel {
    int firstLayer = 0;
    int layers = 0;
    bool last = false;
    // Model states per GPU.
    double weights = 0, gradients = 0, master = 0, optimizer = 0;
    double frozenWeights = 0; // fine-tuning: the frozen base's part of `weights` (the rest trains)
    struct States {
        double weights = 0, gradients = 0, master = 0, optimizer = 0;
    } withoutOffload;
    double gatherForward = 0, gatherBackward = 0;
    double gatherAtLoss = -1; // gathered at the loss, when not what the forward's layers have (-1)
    double communication = 0, cudaContext = 0;
    double allocatorFraction = 0;
    bool gradientsInForward = false;
    // The previous step's gradients live through the forward only, freed before the backward
    // (training.zero_grad "after_forward").
    bool gradientsThroughForward = false;
    // The logits the loop keeps (`heldLogits`) of the step or micro-batch before live through this one's
    // forward, until `logits = model(x)` rebinds the name (none before a first step's first micro-batch).
    bool logitsThroughForward = false;
    // Per sample (withBatch scales them) for all layers of the stage.
    double activations = 0, scores = 0, transient = 0, transientScores = 0;
    // With `transient`, what the running layer has not saved yet at that moment (negative; cs336_basics: the
    // last layer's output projection and MLP at its softmax), where `activations` counts all of it.
    double transientNotMade = 0;
    // Likewise the weights' casts `castWeights` counts that the running layer's later einsums and the head's
    // have not made yet (negative; cs336_basics under autocast: output_proj's, w1's, w2's, w3's and the
    // head's at the last layer's softmax), in step with the casts' share of the forward's progress.
    double castsNotMade = 0;
    double logits = 0, logitsGradient = 0;
    // The head's backward, between the loss's and the last layer's: the logits' gradient it reads (per
    // sample) and its weight's gradient it writes, `headGradientCopies` of them alive (core/plan
    // estimator.cpp, trainingStage). 0: not a moment of its own.
    double headLogitsGradient = 0, headGradient = 0, headGradientCopies = 0;
    // FSDP2 under torchtitan before 0.2: one root unit (embeddings, final norm, head), reduced when the
    // backward ends: the head's unsharded gradient is held from its backward on, and at the end every root
    // gradient and the reduce-scatter's input in the reduce dtype live together. From 0.2: the head's unit
    // is reduced after its backward, its reduce-scatter input kept through the last layer's backward
    // (headReduceHeld); the embeddings' unit, gathered again, is reduced at the end.
    double rootGradientHeld = 0, headReduceHeld = 0, rootReduceAtEnd = 0;
    // A profile that knows its last layer's backward peak (cs336_basics: the softmax's division): there,
    // instead of `transient` and `transientScores`, what its saved tensors have lost by then (negative, per
    // sample), and the backward's scratch (temporaries, per sample: growing with tokens, with tokens x keys).
    bool ownBackwardMoment = false;
    double backwardActivations = 0, backwardScores = 0;
    // Under autocast, whatever the batch: the weights' 16-bit casts the backwards before that moment have
    // freed (cs336_basics: the head's and the last layer's output projection and MLP, each einsum's saved
    // cast going once its backward has run).
    double backwardCastsFreed = 0;
    // cs336_basics: the first block's backward comes once every later block's gradients are written, and
    // can hold more than the last block's (a later step of a wide model at few tokens; every block
    // checkpointed). There, beside `backwardActivations` and `backwardScores`, per sample: what the block
    // keeps (its saved tensors and scores; checkpointed, its input and the output the checkpoint holds
    // while it runs again), and whatever the batch: its causal mask, under autocast its q, k and v casts,
    // and the gradients not written yet (its q, k, v and ln1 weights' and the embedding's).
    bool firstBlockMoment = false;
    double firstBlockHeld = 0, firstBlockScores = 0, firstBlockFixed = 0, firstBlockCasts = 0,
           firstBlockUnwritten = 0;
    // Under autocast, at the head's gradient copy (headGradientCopies): the head weight's 16-bit cast, which
    // its einsum saved and whose backward has freed it by then (cs336_basics).
    double headCastFreed = 0;
    // cs336_basics: three moments of a block's MLP backward (0: the product's, its two factors' gradients
    // made; 1: w3's gradient copy; 2: w2's gradient written, the product it saved not freed yet), in the
    // last block (with every block's saved tensors) and in the first
    // (with every later block's gradients): per sample, what the block's saved tensors have lost by then
    // (negative) and the gradients flowing through it; whatever the batch, the weight casts gone by then
    // (the last block's), those left (the first block's), the gradients written (the last block's) or not
    // yet (the first block's), and the copy AccumulateGrad makes.
    bool mlpMoment = false;
    struct MlpMoment {
        double freed = 0, scratch = 0;
        double castsFreed = 0, firstCasts = 0, gradients = 0, firstUnwritten = 0, gradientCopy = 0;
    };
    MlpMoment mlp[3];
    // Every block checkpointed: a block's backward runs its forward again, saving what an unchecked block
    // saves (beyond the input the checkpoint keeps), and holds the recomputed output until it returns
    // (per sample; the first block's input is firstBlockHeld, the others' are in `activations`).
    double recomputedSaved = 0, recomputedScores = 0, blockOutputHeld = 0;
    double recomputedMask = 0; // the running block's causal mask, made again (whatever the batch)
    // cs336_basics' forward in inference: its moments (per sample: activations, scores, logits; whatever
    // the batch: the weight casts alive then), the prefill's peak at whichever holds the most at the batch.
    struct ForwardMoment {
        double activations = 0, scores = 0, logits = 0, casts = 0;
    };
    int forwardMoments = 0;
    ForwardMoment forwardMoment[4];
    // A forward with autograd on whose loop still holds the previous forward's output
    // (InferenceSettings::previousOutputHeld): that forward's whole graph, per sample (its casts per GPU),
    // beside every moment of this one.
    ForwardMoment previousGraph;
    double backwardTemporaries = 0, backwardTemporaryScores = 0;
    // Per sample, for a profile without its own backward moment: eager attention's softmax backward in the
    // last layer (LayerActivations::backwardScratchScores), a temporary while that layer's backward starts.
    double backwardScratchScores = 0;
    // Per sample: what that layer's backward has released of its saved tensors by the softmax's backward
    // (LayerActivations::freedBeforeScores, the smallest layer kind's): the layer peaks there when the
    // scratch outweighs it, else as its backward begins.
    double freedBeforeScores = 0;
    // Per sample, a stage whose first layer is not rebuilt for its backward: what that layer saved (and its
    // scores), alive while its backward runs at the phase's end, when every later layer's gradients are
    // written.
    double firstLayerSaved = 0, firstLayerScores = 0;
    // Whatever the batch, where the backward writes each gradient as its node runs (unsharded, none left by
    // an earlier micro-batch): those of what runs after the last layer (the final norm, the head), which
    // the head's backward writes before any layer's (autograd runs the nodes made last first,
    // torch/csrc/autograd/engine.cpp; AccumulateGrad makes each .grad), alive through every layer's
    // backward. The layers' own follow layer by layer; the embedding's comes after the first layer's
    // backward, so no moment of the backward holds it (a head tied to it wrote that .grad already).
    double gradientsBeforeLayers = 0, embeddingGradient = 0;
    // With them, a layer's own as its backward writes them (dense attention layers; 0 otherwise): by its
    // softmax's backward, those of the ops after the softmax (the output projection, the later norms, the
    // MLP), written by then in the last layer; and all of the first layer's, none written as it begins.
    double lastLayerGradientsAfterScores = 0, firstLayerGradients = 0, firstLayerGradientsAfterScores = 0;
    // Read per sample once the plan is calibrated (stageModel): whether a layer's backward peaks at its
    // softmax's (the scratch outweighs what was released by then) and whether there is such scratch at all.
    bool scratchOutweighsFreed = false, scratchAtAll = false;
    // Per sample: logits the training loop keeps referenced through the backward and the step (its
    // `output`), besides what the loss holds.
    double heldLogits = 0;
    // Whatever the batch: activations every layer keeps once (cs336_basics' causal masks), and the
    // gradients already written when the last layer's backward peaks (the head's, that layer's MLP's).
    double fixedActivations = 0, layerBackwardGradients = 0;
    double workspace = 0, optimizerStep = 0; // from a calibration: held throughout / in the optimizer step
    double castWeights = 0;                  // autocast's 16-bit weight copies, forward and backward
    // A forward under torch.inference_mode and autocast, whose cache keeps no cast: the head's own copy,
    // alive while the head's matmul runs (castWeights then holds the layers' largest, alive while its
    // matmul runs). 0 otherwise.
    double headCast = 0;
    // Under checkpointing, the checkpointed blocks' copies: autocast's cache holds them through the forward
    // and the loss, and they go when it exits; each block's backward casts its weights again
    // (recomputedCasts, the largest block's), kept while it runs.
    double cachedCasts = 0, recomputedCasts = 0;
    // Of `activations` (per sample), the inputs fully checkpointed layers keep: torch.utils.checkpoint's
    // saved tensor, whatever the code's modules keep, so a calibration does not scale it.
    double checkpointInputs = 0;
    // A layer's quantised weight dequantised for its matmul (and DoRA's recomputed weight), while a layer
    // runs in the forward or the backward.
    double layerTemporary = 0;
    double optimizerTemp = 0; // what the optimizer step allocates on the side (AdamW's foreach sqrt list)
    // The step runs in the backward, a parameter at a time: the gradients alive then (a tied embedding's
    // from the head's backward on, and the one being stepped) and that one step's scratch, a layer's
    // largest tensor's while layers run, the embedding's (its largest) at the end.
    bool stepInBackward = false;
    // The run's first step (training.first_step): the optimizer's states are made by the step, so the
    // forward and backward hold none.
    bool statesFromStep = false;
    double heldGradients = 0, stepScratchInLayers = 0, stepScratchAtEnd = 0;
    double nonTorch = 0;      // memory outside PyTorch's allocator besides the context (NCCL's buffers)
    double pagedStates = 0;   // optimizer states in unified memory (a paged optimizer): in nonTorch too
    double reservedExtra = 0; // cached by PyTorch's allocator, not allocated at the peak (side streams)
    // reservedExtra holds what a replay of this batch's step found (Unsloth's layers): the allocator's slack
    // is not linear in the batch, so the search for the largest that fits replays each batch it asks.
    bool reservedExtraReplayed = false;
    double cachedLogits = 0;  // the same, per sample: logits freed before the loss's larger blocks
    // torchtitan's eager blocks under per-op selective checkpointing, per sample: what its runs reserved
    // beyond the same runs compiled, where the source read keeps the same tensors either way. A fitted term
    // (kTorchtitanEagerExcessBytes in estimator.cpp), not a tensor the profile knows.
    double eagerBlocksExcess = 0;
    // FSDP1's wrap replayed through the allocator (core/plan/fsdp1pools.h): what it, the states, gradients
    // and gathers reserve, and what of the compute stream's cache the step's own tensors can take. Reserved
    // is then that plus whatever of those tensors the cache cannot hold.
    bool fsdp1 = false;
    double fsdp1Reserved = 0, fsdp1Reusable = 0;
    double fsdp1Wrapped = 0;         // reserved once wrapped, before any step
    double fsdp1StepReserved = 0;    // reserved at its most through a replayed step (0: not replayed)
    // Another replay of the whole run through the allocator, its parameters included (cs336_basics' forward
    // or training step, core/plan/cs336replay.h): what its segments reserve at their most, at this batch.
    double replayedReserved = 0;
    double replayedAllocated = 0; // the same replay's most allocated at once
    // Under a calibration with Calibration::replayedOverhead, where the calibrated tensors are not the
    // replay's own: what the allocator reserves beyond the tensors at every point is the replay's reserved
    // less its allocated, plus that share of what is allocated there (negative waste: none).
    double calibratedWaste = -1, calibratedShare = 0;
    // A replayed training step's by the end of its forward and loss, and of its backward (0: the whole
    // step's, replayedReserved): the segments it has made by then.
    double replayedReservedForward = 0, replayedReservedBackward = 0;
    double offloadedActivations = 0; // per sample: saved activations held in host memory instead
    double inFlight = 1;             // micro-batches' worth of this stage's layers alive at the peak
    double current = 1;              // the part of that which the micro-batch being computed is
    // Inference.
    double kvCache = 0;
    double prefillKvExtra = 0; // held at the end of the prefill beyond kvCache (transformers' sliding layers)
    double decodeKvTransient = 0; // a decode step's copy of one layer's growing cache (transformers)
    double decodeActivations = 0;
    // A forward without an engine, at its head (per sample): the logits of every position, which `model(x)`
    // returns, and the final norm's output the head reads; the layers' working set is gone by then. A
    // moment of its own beside the layers' (0: none).
    double headLogits = 0, headActivations = 0;
    Mode mode = Mode::Training;
    // A serving engine: every quantity is the engine's own (its pool and its profiled step), none grows
    // with the requested batch.
    bool engine = false;
    ServingEstimate serving;
};

// What the estimator works out for an inference stage before a serving engine sizes it: one token's keys
// and values in one layer on one GPU, the stage's full-attention and sliding-window layers, and the
// activation bytes one token's forward holds. core/serve's engines start from it.
struct InferenceShape {
    double kvLayerBytes = 0;
    int fullLayers = 0, slidingLayers = 0;
    double perTokenActivations = 0;
    // Linear-attention layers (hybrid models): how many on this stage, and the elements of one layer's
    // state per request on one GPU; linearStateBytes is that state in the activations' dtype, as vLLM keeps
    // it (mamba_cache_dtype "auto"). transformers' generate keeps the recurrent part in fp32 (core/serve).
    int linearLayers = 0;
    double linearConvElements = 0, linearRecurrentElements = 0;
    double linearStateBytes = 0;
};

// How a serving engine (or transformers' generate) sizes an inference stage: its step, budget, KV pool,
// what it caches. core/plan has none of its own; core/serve gives the engines (sizeEngine), and
// estimateWith runs it on every inference stage whose scenario names an engine.
using EngineSizer = void (*)(const Scenario& sc, const InferenceShape& shape, StageModel& st);

} // namespace headroom
