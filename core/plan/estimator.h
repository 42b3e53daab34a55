// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/breakdown.h"
#include "core/plan/scenario.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

enum class Phase { Forward, Backward, Optimizer, Prefill, Decode };
const char* phaseName(Phase p);
// Whether an inference plan holds the weights as the checkpoint stores them (weight_dtype "checkpoint" and
// a quantised checkpoint), after what the engine does on load: transformers dequantizes an FP8 checkpoint
// (quant_method "fp8") to bf16 on a GPU without FP8 (FineGrainedFP8HfQuantizer.validate_environment:
// compute capability below 8.9), where vLLM keeps it (its Marlin FP8 kernels).
bool weightsStayQuantised(const Scenario& sc);

// Activation bytes one transformer layer keeps for one micro-batch on one GPU (Korthikanti et al. 2022,
// generalised to GQA/MLA, gated MLPs and MoE routing).
struct LayerActivations {
    double stored = 0;    // kept for the backward pass (excluding attention scores)
    double scores = 0;    // eager attention's score/softmax/dropout tensors kept for backward
    double transient = 0; // recomputed during this layer's backward (checkpointing), freed after it
    double transientScores = 0;
    // Eager attention's backward at its most, beyond what the layer saved: score-sized tensors the
    // softmax's backward has alive (the incoming gradient of its output and the gradient it writes), while
    // the layer's backward runs. 0 where no score matrix exists or the framework's kernel works in place.
    double backwardScratchScores = 0;
    // Of what the layer saved, what its backward has released when the softmax's runs: the saved tensors
    // of every op after the softmax in the block's forward (the attention output the output projection
    // reads, the second norm's, the MLP's, the residual dropouts' masks). The autograd engine frees a
    // node's saved tensors once the node has run (torch/csrc/autograd/engine.cpp, evaluate_function:
    // fn.release_variables() unless the graph is kept). Set where backwardScratchScores is.
    double freedBeforeScores = 0;
};
LayerActivations layerActivations(const Scenario& sc, int layer, int microBatch);
// What eager attention's softmax backward holds in the last layer of a training micro-batch, uncalibrated
// (the largest layer's LayerActivations::backwardScratchScores); 0 where nothing is planned there (no score
// matrix, Megatron's in-place kernel, a profile with its own backward moment, inference).
double plannedBackwardScoreScratch(const Scenario& sc);

struct StageEstimate {
    int stage = 0;
    int firstLayer = 0;
    int layers = 0;
    Breakdown peak; // this stage's GPUs at their own peak
    Phase peakPhase = Phase::Forward;
    double inFlightMicroBatches = 0;
    double allocatedBytes = 0;          // the most over the step, as torch.cuda.max_memory_allocated() counts
    double allocatedBeforeStepBytes = 0; // the same over the forward and backward only (training)
    double reservedBytes = 0;           // and as max_memory_reserved() does
    double optimizerTemporaryBytes = 0; // what the optimizer step allocates besides its states (modelled)
    // autocast's 16-bit weight copies (in activations) the backward starts with: all of them unless blocks
    // are checkpointed, whose copies autocast's cache alone held, gone when it exits
    double autocastCopyBytes = 0;
    double frozenWeightBytes = 0; // fine-tuning: the frozen base's part of the weights (the rest trains)
    // torchtitan's eager blocks under per-op selective checkpointing: the fitted part of the allocator's
    // overhead (StageModel::eagerBlocksExcess). 0 otherwise.
    double eagerBlocksExcessBytes = 0;
    // FSDP1 with a PEFT model: what PyTorch has reserved once the model is wrapped, before any step (the
    // replay of core/plan/fsdp1pools.h; fsdp_qlora logs it as reserved_after_model_wrap). 0 otherwise.
    double wrappedReservedBytes = 0;
    // cs336_basics' replay through the allocator (core/plan/cs336replay.h) of this plan's tensors,
    // uncalibrated: the most its segments reserve and the most it allocates at once (0: not replayed).
    double replayedReservedBytes = 0, replayedAllocatedBytes = 0;
};

struct OffloadInfo {
    double cpuBytesPerGpu = 0;    // host memory holding what was moved off each GPU
    double hostToDeviceBytes = 0; // per optimizer step, per GPU
    double deviceToHostBytes = 0;
    double secondsPerStep = 0; // over the GPU's PCIe link, both directions overlapping
};

// The KV-cache answer of an inference estimate (docs/formats.md section 3, "inference"). With a serving
// engine it describes the pool the engine reserves; without one, the planned batch's own cache.
struct ServingEstimate {
    double kvBytesPerToken = 0; // one token's keys and values on one GPU, every layer it holds
    // The linear-attention layers' state one request holds on one GPU, whatever its length (hybrid models).
    double stateBytesPerRequest = 0;
    // SGLang 0.5's state pool for those layers (max_mamba_cache_size): requests whose states it holds; 0
    // where the states share the KV pool (vLLM) or are not pooled apart.
    long long stateSlots = 0;
    long long kvCacheTokens = 0; // tokens the KV cache holds, in whole blocks
    double maxConcurrency = 0;   // requests of requestLength tokens held at once
    int requestLength = 0;       // max_model_len, else context_length
    // Serving engines only.
    bool engine = false;
    bool flashinferSampler = false; // the profiled sampler is FlashInfer's (inference.sampler), not the sort
    double budgetBytes = 0;         // budgetFraction x budgetBaseBytes
    double budgetFraction =
        0; // vLLM's gpu_memory_utilization, SGLang's mem_fraction_static (given or default)
    double budgetBaseBytes =
        0; // what it is a fraction of: vLLM the GPU, SGLang what was free after CUDA and NCCL
    double profiledBytes = 0; // the engine's step: vLLM profiles it inside its budget, SGLang leaves room
    double nonTorchBytes = 0; // NCCL, cuBLAS and other memory outside PyTorch's allocator
    // NCCL's communicators set up before the engine's start-up snapshot and unused by its profiled step (a
    // pipeline's, under vLLM from 0.11): on the GPU, but outside the budget's parts, as the CUDA context is.
    double ncclSetupBytes = 0;
    // What is free at that snapshot (the GPU less the CUDA context and ncclSetupBytes) where the release
    // refuses to start with less than its budget free; 0 where it does not check.
    double freeAtStartupBytes = 0;
    // Whether the engine refuses to start because less than its budget is free at start-up.
    bool refusedAtStartup() const { return freeAtStartupBytes > 0 && freeAtStartupBytes < budgetBytes; }
    // The engine's CUDA graphs, where its release estimates them (vLLM from 0.21); 0 otherwise. Inside the
    // budget unless cudaGraphsBeyondBudget (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0): then the pool takes
    // their share and the graphs, captured after it, hold that much beyond the budget.
    double cudaGraphBytes = 0;
    bool cudaGraphsBeyondBudget = false;
    // The gpu_memory_utilization that leaves the same pool without the estimate in the budget (before 0.21,
    // or with the estimate off): what vLLM's own start-up log advises ("To maintain the same effective KV
    // cache size as before, increase --gpu-memory-utilization to ..."; gpu_worker.py).
    double utilizationForTheSamePool() const {
        return budgetBaseBytes > 0 && !cudaGraphsBeyondBudget
                   ? budgetFraction + cudaGraphBytes / budgetBaseBytes
                   : budgetFraction;
    }
    // NCCL's NVLink SHARP buffers for the tensor-parallel communicator (more than two GPUs of an NVSwitch
    // system), part of nonTorchBytes under vLLM and of what SGLang finds taken; 0 where NCCL never sets them
    // up (engines.cpp nvlsBufferBytes).
    double nvlsBytes = 0;
    // vLLM: its rotary embedding's cos/sin tables (ModelSpec::ropeCacheRows), buffers its load counts with
    // the weights; part of the weights' figure.
    double ropeCacheBytes = 0;
    // SGLang: what loading the weights holds beyond their bytes (the caching allocator's segment slack and
    // the rotary table, core/serve/loadreserve.h), part of the "mem usage" its log prints and out of its
    // pool.
    double loadReservedBytes = 0;
    std::string engineVersion; // the release whose rules sized it (core/serve/engineversions.h)
    double availableBytes = 0; // what the engine hands to the KV cache (may be negative: no room)
    double poolBytes = 0;      // the KV cache as allocated, whole blocks
    long long numBlocks = 0;
    double blockBytes = 0; // one block: a page in each layer that shares it
    int blockSize = 0;
    int stepTokens = 0; // tokens per engine step (max_num_batched_tokens / chunked_prefill_size)
    int maxNumSeqs = 0; // requests per step the engine profiles
};

struct Estimate {
    Mode mode = Mode::Training;
    std::uint64_t parameters = 0;
    std::uint64_t activeParameters = 0;
    std::uint64_t trainableParameters = 0; // training: what the optimizer steps (fine-tuning: adapters)
    Breakdown perGpu;                      // most-loaded GPU at its peak
    double peakBytes = 0;
    // At the peak, what torch.cuda.max_memory_allocated() and max_memory_reserved() would report: peakBytes
    // without the CUDA context and NCCL's buffers, and (allocated) without the allocator's overhead.
    double allocatedPeakBytes = 0;
    double reservedPeakBytes = 0;
    double capacityBytes = 0;
    bool fits = false;
    Phase peakPhase = Phase::Forward;
    int mostLoadedStage = 0;
    long long maxMicroBatchSize = 0; // training: micro-batch; inference: batch size. 0: not even 1 fits
    std::vector<StageEstimate> ranks;
    OffloadInfo offload;
    int dataParallelSize = 1;
    std::vector<std::string> warnings;
    ServingEstimate serving; // inference only

    // bitsandbytes' paged optimizer (training.paged_optimizer): the part of its states in unified memory that
    // the GPU has no room for at the peak, which the driver keeps in host memory and pages in for the step
    // and out again. The rest of the peak is what must fit; 0 without a paged optimizer or with room.
    double pagedToHostBytes = 0;

    // Capacity less the peak (negative: what is missing, or with a paged optimizer what of its states the
    // host keeps, pagedToHostBytes, while it fits).
    double headroomBytes() const { return capacityBytes - peakBytes; }
    // What the GPU holds at the peak: the peak less paged states kept in host memory.
    double gpuPeakBytes() const { return peakBytes - pagedToHostBytes; }
    // What the most-loaded stage's optimizer step allocates besides its states (0 with no stages).
    double optimizerTemporaryBytes() const { return ofMostLoaded(&StageEstimate::optimizerTemporaryBytes); }
    // FSDP1 with a PEFT model: the most-loaded stage's reserved bytes once wrapped (0 otherwise).
    double wrappedReservedBytes() const { return ofMostLoaded(&StageEstimate::wrappedReservedBytes); }
    // Fine-tuning with adapters: the frozen base's part of the most-loaded stage's weights (0 otherwise).
    double frozenWeightBytes() const { return ofMostLoaded(&StageEstimate::frozenWeightBytes); }
    // torchtitan's eager blocks: the fitted part of the most-loaded stage's allocator overhead (0 otherwise).
    double eagerBlocksExcessBytes() const { return ofMostLoaded(&StageEstimate::eagerBlocksExcessBytes); }

private:
    // One of the most-loaded stage's figures (0 with no stages).
    double ofMostLoaded(double StageEstimate::*field) const {
        const auto i = static_cast<std::size_t>(mostLoadedStage);
        return i < ranks.size() ? ranks[i].*field : 0;
    }
};

struct StageModel;
struct InferenceShape;
using EngineSizer = void (*)(const Scenario& sc, const InferenceShape& shape, StageModel& st);

// The per-GPU memory estimate: every pipeline stage's peak over the phases of one step. Inference stages of
// a scenario with a serving engine (or transformers' generate) are sized by `engine` (core/serve's
// sizeEngine); without it they hold what they hold before any engine. Everything outside core/plan calls
// core/serve/estimate.h's estimate(), which passes the engines.
Estimate estimateWith(const Scenario& sc, EngineSizer engine);
// The same without the search for the largest micro-batch that fits where it costs a replay per batch tried
// (FSDP1's step, core/plan/peftstep.h; cs336_basics' forward, cs336replay.h; its maxMicroBatchSize then says
// nothing): for the solvers, savings and sweeps, which ask only whether a plan fits and how much it holds.
Estimate estimatePeakWith(const Scenario& sc, EngineSizer engine);

// The elements of the largest tensor an optimizer that steps one parameter at a time works on, on one GPU:
// the widest weight matrix (the embedding and head included) of its tensor-parallel shard, and its own shard
// where ZeRO or FSDP shard the states. A per-parameter loop's temporaries are a few tensors of this size,
// whatever the model's depth (calibration measures them in these units: Calibration).
double largestSteppedTensor(const Scenario& sc);

struct TimelinePoint {
    Phase phase = Phase::Forward;
    double progress = 0; // 0..1 within the phase
    Breakdown bytes;
    // At the forward's end and the backward's start there are two points: the last (first) layer running,
    // with its transients, and the loss, with the logits.
    bool layerRunning = false;
    // At the backward's start, a third: the head's backward, after the loss's and before any layer's.
    bool headRunning = false;
    // In a forward (prefill), autocast's weight copies counted in bytes[Activations] here: they do not grow
    // with tokens, and cs336_basics' moments each hold their own.
    double casts = 0;
};
// Memory of one pipeline stage's GPU through one step (training: forward, backward, optimizer;
// inference: prefill, decode), `pointsPerPhase` samples each, and in training one more at each side of the
// loss. The estimate's peak is the maximum of
// exactly these curves (their end points).
std::vector<TimelinePoint> phaseTimelineWith(const Scenario& sc, EngineSizer engine, int stage,
                                             int pointsPerPhase = 32);

} // namespace headroom
