// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/model/modelspec.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

enum class Mode { Training, Inference };
enum class Optimizer { AdamW, SgdMomentum, Adam8bit };
// Selective: Megatron's (the attention core is recomputed); SelectiveOp: torchtitan's per-op policy (the
// outputs of every other matmul and of attention are kept, the rest recomputed); Full: each layer keeps
// only its input.
enum class Checkpointing { None, Selective, SelectiveOp, Full };
// What runs the training step (docs/formats.md section 2, training.framework); docs/frameworks.md says, op by
// op and with the source files, what each profile changes.
// Cs336Basics: Stanford CS336's reference Transformer LM (the cs336_basics package its assignments ship), whose
// layers, softmax, loss and AdamW are written by hand (core/plan/cs336basics.h).
enum class Framework { PyTorch, HuggingFace, Megatron, Torchtitan, DeepSpeed, Torchtune, Unsloth, Cs336Basics };
enum class Float8 { None, Tensorwise, Rowwise };
enum class RecomputeMethod { EveryLayer, Uniform, Block };
// How AdamW's step runs (torch.optim.AdamW foreach / fused, or one tensor at a time; or cs336_basics'
// hand-written AdamW, one parameter at a time with its own temporaries): what it allocates on the side while
// it updates.
enum class OptimizerImpl { ForEach, Fused, ForLoop, Cs336Basics };
// Full: the loss as the framework writes it; Chunked: per chunk of tokens (torchtune's
// CEWithChunkedOutputLoss); Fused: a compiled or fused cross-entropy that never writes fp32 logits;
// FusedLinear: the output layer and the loss in one kernel, a chunk of tokens at a time, so that the logits
// never exist whole (Liger's LigerFusedLinearCrossEntropyLoss, Apple's Cut Cross-Entropy, Unsloth's
// unsloth_fused_ce_loss).
enum class LossKind { Full, Chunked, Fused, FusedLinear };

// The frameworks' own defaults where a scenario leaves them out (the reader, the settings panel and the
// suggested changes all ask these). torch.optim.AdamW runs foreach on CUDA
// (torch/optim/optimizer.py _default_to_fused_or_foreach); Megatron and DeepSpeed step with their fused
// Adam kernels; torchtune's recipe configs ask for fused=True (103 of 132 at 1814feb17, docs/frameworks.md).
// torchtitan steps with fused AdamW by default since February 2025 (torchtitan 6e4988550, #881;
// optimizer.implementation "fused"); before, `foreach: not fused` with fused off.
inline OptimizerImpl defaultOptimizerImpl(Framework f) {
    if (f == Framework::Cs336Basics)
        return OptimizerImpl::Cs336Basics; // cs336_basics/optimizer.py, as its benchmark scripts step
    return f == Framework::Megatron || f == Framework::DeepSpeed || f == Framework::Torchtune ||
                   f == Framework::Torchtitan
               ? OptimizerImpl::Fused
               : OptimizerImpl::ForEach;
}
// torchtitan compiles its loss with the model since April 2025 (torchtitan bbb1b616e,
// build_cross_entropy_loss): under compile the fp32 logits are never written. Unsloth's causal-LM forward
// hands the last hidden states and the output weight to Cut Cross-Entropy whenever labels are given
// (unsloth/models/llama.py, fused_linear_cross_entropy; cut_cross_entropy is a dependency of unsloth_zoo).
inline LossKind defaultLoss(Framework f, bool compile) {
    if (f == Framework::Unsloth)
        return LossKind::FusedLinear;
    return f == Framework::Torchtitan && compile ? LossKind::Fused : LossKind::Full;
}
// Xformers: Unsloth's attention where flash-attn is not installed or the GPU is older than Ampere
// (unsloth/models/_utils.py HAS_FLASH_ATTENTION); memory-efficient like Flash, but its GQA path expands K
// and V to every query head (docs/frameworks.md, "Unsloth").
enum class Attention { Eager, Flash, Xformers };
// inference.logits: the positions whose logits a forward without an engine returns. Last: the last
// position's (generate asks for it alone since transformers 4.45, logits_to_keep=1). All: every position's,
// in the compute dtype (a forward called as `model(input_ids)`: transformers' logits_to_keep 0, a
// hand-written model's head). AllFp32: every position's and their fp32 copy, as a model file that ends with
// `logits = logits.float()` makes them (transformers' Llama before it kept only the last position).
enum class ForwardLogits { Last, All, AllFp32 };
enum class DataParallel { Ddp, Zero1, Zero2, Zero3, HybridShard };
// training.zero_grad: where the loop frees the previous step's gradients. BeforeForward (the default):
// zero_grad() (set_to_none=True since PyTorch 2.0) before the forward or after the step, so none lives
// through the forward. AfterForward: `out = model(x); loss = ...; zero_grad(); loss.backward()`, as
// benchmark loops often run it: every .grad of the previous step lives through the forward and is freed
// before the backward writes new ones. Keep: zero_grad(set_to_none=False), the tensors zeroed in place and
// never freed, as under accumulation.
enum class ZeroGrad { BeforeForward, AfterForward, Keep };
enum class OffloadStep { Cpu, Gpu };

// Bytes per parameter for the four model states (fractions allowed: 4-bit weights are 0.5).
struct BytesPerParam {
    double weights = 2;
    double gradients = 2;
    double masterWeights = 4;
    double optimizerStates = 8;
};

// DeepSpeed's zero_optimization settings that decide its buffers (deepspeed/runtime/zero/config.py
// defaults), in elements.
struct DeepSpeedSettings {
    double reduceBucketSize = 5e8;
    double allgatherBucketSize = 5e8;
    double prefetchBucketSize = 5e7; // stage3_prefetch_bucket_size
    double maxLiveParameters = 1e9;  // stage3_max_live_parameters
    int overlapComm = -1;            // -1: DeepSpeed's default (on for ZeRO-3 only)
};

// Fine-tuning (docs/formats.md section 2, training.fine_tuning; docs/frameworks.md, "Fine-tuning"): which
// weights train. Full: all of them (the rest of this file). Lora: the base is frozen and low-rank adapters
// train beside the targeted linear layers (PEFT's LoraConfig, torchtune's LoRALinear); Qlora: the same on a
// base whose linear layers are quantised (4-bit NF4 unless base_quantization says otherwise); Dora: LoRA
// plus a trained magnitude per output (PEFT's use_dora).
enum class FineTuneMethod { Full, Lora, Qlora, Dora };
// How the frozen base's linear layers are stored: 16-bit, bitsandbytes' LLM.int8 (int8 values, one fp32
// scale per row), or 4-bit NF4 / FP4 in blocks of 64 with an absmax per block.
enum class BaseQuantization { None, Int8, Nf4, Fp4 };

struct FineTuning {
    FineTuneMethod method = FineTuneMethod::Full;
    int rank = 16;
    double alpha = 32;
    // Canonical Hugging Face names (q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, lm_head);
    // the reader maps torchtune's and "all-linear" onto them.
    std::vector<std::string> targets = {"q_proj", "v_proj"};
    double adapterBytes = 4; // PEFT keeps adapters in fp32 (autocast_adapter_dtype); torchtune in bf16
    double dropout = 0;      // lora_dropout: > 0 keeps a dropped copy of each targeted input and its mask
    BaseQuantization baseQuantization = BaseQuantization::None;
    bool doubleQuantization = true; // bnb_4bit_use_double_quant; torchao's NF4 always quantises its scales
    std::vector<std::string> modulesToSave; // trained in full, beside the frozen original (PEFT)
    // Preference tuning: DPO (TRL's DPOTrainer) runs each chosen and rejected sequence together (twice the
    // sequences of a micro-batch) and scores them under a frozen reference: a second copy of the model for
    // full fine-tuning, the base with the adapters disabled (no copy) with LoRA.
    bool dpo = false;
    // bitsandbytes' release, "0.43.1" (empty: a current one). Before 0.43.2 (bitsandbytes #1270, July 2024)
    // MatMul4Bit kept its input for the backward, `ctx.tensors = (A, B)`: a 4-bit layer then keeps what a
    // trained layer keeps.
    // Before 0.45.0 (bitsandbytes #1401, December 2024) MatMul8bitLt quantised its input both ways
    // (double_quant) and saved the transposed int8 copy, `ctx.tensors = (CAt, subA, A)`, even for a frozen
    // weight: one byte per element of every int8 layer's input, beside the input itself.
    std::string bitsandbytesVersion;
    bool fourBitKeepsInput = false;        // resolved: bitsandbytesVersion is before 0.43.2
    bool int8KeepsTransposedInput = false; // resolved: bitsandbytesVersion is before 0.45.0

    bool adapters() const { return method != FineTuneMethod::Full; }
    bool fourBitBase() const {
        return baseQuantization == BaseQuantization::Nf4 || baseQuantization == BaseQuantization::Fp4;
    }
    bool targeted(const std::string& module) const {
        for (const std::string& t : targets)
            if (t == module)
                return true;
        return false;
    }
};

// A framework release, major.minor (core/plan/settingnames.h parses training.framework_version).
struct Release {
    int major = 0, minor = 0;
    bool operator<(const Release& o) const {
        return major < o.major || (major == o.major && minor < o.minor);
    }
};

struct TrainingSettings {
    int microBatchSize = 1;
    int sequenceLength = 2048;
    int gradientAccumulationSteps = 1;
    std::string precision = "bf16_mixed";
    BytesPerParam bytes;        // resolved from precision, optimizer and overrides
    double activationBytes = 2; // bytes per activation element (2 for 16-bit, 4 for fp32)
    // torch.autocast's dtype bytes (2 for "bf16"/"fp16"; 0: no autocast). Matmuls then save 16-bit copies of
    // their inputs, ops on autocast's fp32 list keep fp32, and the weights' cast copies live through the
    // step.
    double autocastBytes = 0;
    std::string autocast = "none";
    Optimizer optimizer = Optimizer::AdamW;
    OptimizerImpl optimizerImpl = OptimizerImpl::ForEach;
    bool optimizerImplGiven = false; // said by the scenario, not the framework's default
    Checkpointing checkpointing = Checkpointing::None;
    Attention attention = Attention::Flash;
    int checkpointEvery = 1; // with Full: only every N-th layer is checkpointed (torchtitan's "N" option)
    // With Full, Megatron's --recompute-method: uniform (groups of recomputeLayers layers keep one input and
    // are recomputed together) or block (the first recomputeLayers layers of each stage are checkpointed).
    RecomputeMethod recomputeMethod = RecomputeMethod::EveryLayer;
    int recomputeLayers = 1;
    Framework framework = Framework::PyTorch;
    bool compile = false;         // torch.compile on the layers (and, in torchtitan, on the loss)
    Float8 float8 = Float8::None; // float8 linear layers (torchao), with float8 all-gathers under FSDP2
    LossKind loss = LossKind::Full;
    // The loss planned: torchtune's chunked one is torchtune's; elsewhere a loss asked to be chunked keeps
    // the framework's usual logits (the reader says so).
    LossKind plannedLoss() const {
        return loss == LossKind::Chunked && framework != Framework::Torchtune ? LossKind::Full : loss;
    }
    bool activationOffloading = false; // saved activations go to host memory (torchtune)
    // The optimizer steps each parameter as soon as its gradient is accumulated, then drops the gradient
    // (torchtune's optimizer_in_bwd: torchtune/training/memory.py register_optim_in_bwd_hooks).
    bool optimizerInBackward = false;
    // training.first_step: the step planned is the run's first. torch.optim creates an optimizer's states in
    // its first step (torch/optim/adamw.py _init_group: zeros_like when a parameter's state is empty; the
    // CS336 AdamW's state.get("m", zeros_like)), so that step's forward and backward run without them; its
    // own peak, with every state made, is a later step's. What a one-step profile records.
    bool firstStep = false;
    ZeroGrad zeroGrad = ZeroGrad::BeforeForward;
    // bitsandbytes' paged optimizers (PagedAdamW, PagedAdamW8bit): the states live in CUDA unified memory
    // (bitsandbytes/functional.py get_paged, cudaMallocManaged), outside PyTorch's allocator, and the driver
    // moves their pages to host memory when the GPU runs short.
    bool pagedOptimizer = false;
    DeepSpeedSettings deepspeed;
    FineTuning fineTuning;
    // The framework's release ("4.44" for transformers), where its memory changed between releases; empty:
    // the current one. versionBefore(4, 46): given and older than 4.46.
    std::string frameworkVersion;
    Release version; // as parsed from frameworkVersion
    bool versionBefore(int major, int minor) const {
        return !frameworkVersion.empty() && version < Release{major, minor};
    }
    // PyTorch's release ("2.5") where the memory of a framework's code changed with it; empty: a current one.
    std::string torchVersion;
    Release torch; // as parsed from torchVersion
    bool torchBefore(int major, int minor) const {
        return !torchVersion.empty() && torch < Release{major, minor};
    }
    bool dropout = false;         // default: whether the model's config trains with dropout
    bool bytesOverridden = false; // training.bytes_per_param was given: optimizer changes keep its bytes
    // bytes_per_param.optimizer_states as given (-1: not given). Fine-tuning's trained parameters (adapters,
    // modules_to_save) take it too: 0 is a run without an optimizer, adapters or not.
    double optimizerStatesGiven = -1;
};

// What serves the requests (docs/formats.md section 2). A serving engine sizes its KV cache as the pool left
// after weights and its profiled step; without one the batch's own cache is planned.
enum class Engine { None, Vllm, Sglang, HuggingFace };

// The KV cache's dtype when kv_cache_dtype is not given: the compute dtype, as vLLM's and SGLang's "auto"
// (vllm/utils get_kv_cache_torch_dtype returns the model's dtype, which an FP8, int8 or 4-bit checkpoint
// declares as bf16): fp32, fp16 and bf16 weights compute in their own dtype, narrower ones in bf16.
inline std::string defaultKvCacheDtype(const std::string& weightDtype, double weightBytes) {
    const bool own = weightBytes >= 4 || weightDtype == "fp16" || weightDtype == "float16" ||
                     weightDtype == "bf16" || weightDtype == "bfloat16";
    return own ? weightDtype : "bf16";
}

struct InferenceSettings {
    int batchSize = 1;
    int contextLength = 4096; // tokens held per sequence (prompt + generated)
    int prefillChunk = 0;     // tokens processed at once in prefill (0: the whole context)
    double weightBytes = 2;
    double kvCacheBytes = 2;
    std::string weightDtype = "checkpoint"; // or a uniform dtype ("bf16", "fp8", "int4", ...)
    std::string kvCacheDtype = "bf16";
    int kvBlockSize = 0; // paged KV cache block (tokens); 0 = contiguous
    Attention attention = Attention::Flash;
    // inference.autocast: torch.autocast's dtype bytes (2 for "bf16"/"fp16", 0: none), as in training.
    double autocastBytes = 0;
    std::string autocast = "none";
    // inference.grad_mode "inference_mode": the forward runs under torch.inference_mode, where autocast keeps
    // no 16-bit copy of a weight past its matmul (PyTorch since pytorch#165068, December 2025); "no_grad"
    // (the default: generate's own decorator) keeps every matmul weight's copy in autocast's cache until the
    // region ends.
    bool inferenceMode = false;
    // inference.grad_mode "enabled": nothing turns autograd off around the forward (a benchmark's or an
    // evaluation loop's forward without torch.no_grad), so every op saves what its backward would need and
    // all of it stays until the output is dropped, though no backward ever runs. Planned for cs336_basics
    // from its saved tensors read op by op (core/plan/cs336basics.h), for other code from the training
    // forward's tables (core/plan/activations.cpp); an error with an engine.
    bool gradEnabled = false;
    // inference.previous_output_held, with autograd on: the loop's variable keeps the previous forward's
    // output until the next forward returns (`out = model(x)` repeated, with no `del out`), and the output
    // keeps its graph, so the forward runs beside a whole graph of saved tensors (Athrun0109's 2.7B
    // forwards at 128 and 512 tokens held two at their peak).
    bool previousOutputHeld = false;
    // inference.framework: the code that runs the forward without an engine. PyTorch: what the batch and
    // context need, with their KV cache; Cs336Basics: cs336_basics' forward over the whole sequence, which
    // keeps no cache (core/plan/cs336basics.h).
    Framework framework = Framework::PyTorch;
    // inference.kv_cache false: the forward keeps no KV cache (one forward over each sequence: scoring,
    // evaluation, a model whose forward builds none, transformers' use_cache=False), without an engine.
    bool kvCache = true;
    // inference.logits; unset, usualLogits().
    ForwardLogits logits = ForwardLogits::Last;
    // What a forward returns unless told: every position's without a cache (a scoring forward), with autograd
    // on (planned from the training tables, which keep them) and from cs336_basics' model; the last
    // position's in a generation loop.
    ForwardLogits usualLogits() const {
        return !kvCache || gradEnabled || framework == Framework::Cs336Basics ? ForwardLogits::All
                                                                              : ForwardLogits::Last;
    }
    bool kvCacheDtypeGiven = false; // else the KV cache follows the weights' dtype
    // weight_dtype "checkpoint" (the default): linear layers as quantization_config stores them, the rest
    // at weightBytes. False when a uniform weight_dtype is given or the checkpoint is not quantised.
    bool quantised = false;

    Engine engine = Engine::None;
    double gpuMemoryUtilization = 0.9; // vLLM: the fraction of the GPU the engine may use
    double memFractionStatic = 0;      // SGLang: weights + KV pool fraction; 0 = SGLang's default
    int maxModelLen = 0;               // longest request (0: context_length)
    int maxNumBatchedTokens = 0;       // tokens in one engine step (0: the engine's default)
    int maxNumSeqs = 0;                // requests in one step (0: the engine's default)
    bool cudaGraphs = true;            // false: --enforce-eager, no graphs captured
    // inference.cuda_graph_estimate: false is VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0, where a release
    // that estimates its graphs inside the budget (vLLM from 0.21) sizes the pool without the estimate and
    // captures the graphs after it, beyond gpu_memory_utilization, as releases before 0.21 did.
    bool cudaGraphEstimate = true;
    // inference.mamba_ssm_cache_dtype (vLLM's --mamba-ssm-cache-dtype) in bytes: the Mamba-2 layers'
    // recurrent state; 0 ("auto"): the model's dtype, or what vLLM's NemotronH hook picks for Nemotron-H.
    int mambaSsmCacheBytes = 0;
    // inference.mamba_full_memory_ratio (SGLang's --mamba-full-memory-ratio): a hybrid model's state pool
    // against its KV pool, from SGLang 0.5.
    double mambaFullMemoryRatio = 0.9;
    // inference.sampler "flashinfer": the engine samples with FlashInfer's kernels (vLLM logs "Using
    // FlashInfer for top-p & top-k sampling"); "pytorch" (the default): its PyTorch sampler.
    bool flashinferSampler = false;
    // A serving engine's release as inference.engine_version names it (core/serve/engineversions.h), the
    // newest modelled when not given; empty without an engine.
    std::string engineVersion;
    double cudaGraphBytes = -1; // inference.cuda_graph_gib in bytes; -1: the release's default
    // inference.chunked_layers: whether vLLM's hybrid allocator pools chunked-attention layers (Llama 4)
    // apart; -1 ("release"): as the release does, 1 ("pooled"):
    // VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1, 0 ("full"): =0, every layer cached in full.
    int poolChunkedLayers = -1;
    // inference.nccl_nvls: whether NCCL may reduce through NVLink SHARP (NCCL_NVLS_ENABLE); -1: the engine's
    // default (vLLM leaves NCCL's own, which uses it; SGLang sets NCCL_NVLS_ENABLE=0 unless
    // --enable-nccl-nvls), 1: on, 0: off.
    int ncclNvls = -1;
    int requestLength() const { return maxModelLen > 0 ? maxModelLen : contextLength; }
};

struct ClusterSettings {
    std::string gpu = "H100-SXM-80GB";
    std::uint64_t capacityBytes = 0; // from the catalogue, or gpu_memory_gib
    double pcieGBps = 64;
    int numGpus = 1;
    int gpusPerNode = 8;
    bool gpusPerNodeGiven = false; // else min(8, num_gpus)
    DataParallel dataParallel = DataParallel::Ddp;
    std::string dataParallelName = "ddp";
    int tensorParallel = 1;
    int pipelineParallel = 1;
    int virtualStages = 1; // interleaved 1F1B model chunks per stage
    // Megatron's --microbatch-group-size-per-virtual-pipeline-stage: how many micro-batches each model chunk
    // runs before the next chunk's turn (0: the pipeline size, Megatron's default).
    int microbatchGroupSize = 0;
    bool sequenceParallel = false;
    int contextParallel = 1;
    int expertParallel = 1;
    bool offloadOptimizer = false;
    bool offloadParameters = false;
    OffloadStep offloadStep = OffloadStep::Cpu;
    bool prefetch = true;            // FSDP/ZeRO-3 prefetches the next layer's parameters
    bool expandableSegments = false; // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (less fragmentation)
    // CUBLAS_WORKSPACE_CONFIG as the run set it (":4096:8", Megatron's deterministic runs); empty: PyTorch's
    // default for the GPU (core/plan/workspaces.h).
    std::string cublasWorkspaceConfig;

    int dataParallelSize() const { return numGpus / (tensorParallel * pipelineParallel * contextParallel); }
};

// What the caching allocator reserves beyond the allocated peak where no replay of the step stands for it,
// measured: reserved / allocated at the peak of the seven real snapshots in tests/data/traces is 1.4% to 9.8%
// above, median 3.0%; replayed with expandable segments through the allocator model (headroom-cli
// allocator-whatif), 0.05% to 6.0%, median 1.5%. The reader's default for
// overheads.allocator_overhead_fraction.
inline double defaultAllocatorOverheadFraction(bool expandableSegments) {
    return expandableSegments ? 0.015 : 0.03;
}

struct Overheads {
    std::uint64_t cudaContextBytes = 512ull << 20;
    std::uint64_t ncclBytesPerCommunicator = 384ull << 20;
    // reserved beyond allocated, as a fraction of allocated
    double allocatorOverheadFraction = defaultAllocatorOverheadFraction(false);
    bool allocatorOverheadFractionGiven = false; // the file named it: it no longer follows the setting
    bool ddpGradientAsBucketView = false;    // PyTorch DDP default: buckets are a second copy of the grads
};

// Implementation factors fitted to recorded runs by `calibrate` (docs/formats.md section 7): what this code
// keeps and holds beyond what the estimator's formulas say. The identity (all factors 1, no extra bytes)
// when the scenario has no "calibration" object.
struct Calibration {
    // The most a scenario file's factors may say (kCalibrationFactors below): bounds on what arithmetic a
    // file can ask for, not on any code (the shipped traces on their own scenarios need x0.9 to x3.51).
    static constexpr double kMostScale = 1000;  // a multiple of the plan's own tensors or bytes
    static constexpr double kMostOverhead = 10; // the allocator's cache over the tensors
    bool present = false;
    // The mode of the runs it was measured on, when they share one. A forward in inference mode holds one
    // layer's work at a time and training keeps every layer's saved tensors for the backward: the tokens'
    // and the scores' factors of one say nothing of the other, and a plan of the other mode does not apply
    // them (the scenario warns). Absent (files from before, or runs of both modes): applied to either.
    std::optional<Mode> measuredOn;
    bool measuredIn(Mode m) const { return !measuredOn || *measuredOn == m; }
    double linear = 1;    // tensors that grow with tokens: kept activations and the logits
    double quadratic = 1; // tensors that grow with tokens squared: attention scores (copies kept)
    // The activation dtype (bytes) of the runs `quadratic` was measured on (0: any). Which copies of the
    // scores exist depends on the dtype each op runs in (under autocast the softmax stays fp32 and the
    // next matmul keeps a 16-bit copy; in fp32 a hand-written softmax's every output is kept at 4 bytes), so
    // under another the factor is not applied.
    double quadraticActivationBytes = 0;
    // Runs of several activation dtypes calibrated together (an fp32 run and an autocast one): the scores'
    // factor measured in each, (dtype bytes, factor); `quadratic` is then the first's. Empty otherwise.
    std::vector<std::pair<double, double>> quadraticByDtype;
    // The scores' factor for activations of `dtypeBytes`, or nothing when none was measured in that dtype.
    std::optional<double> quadraticFor(double dtypeBytes) const {
        if (quadraticActivationBytes <= 0 || quadraticActivationBytes == dtypeBytes)
            return quadratic;
        for (const auto& [dtype, factor] : quadraticByDtype)
            if (dtype == dtypeBytes)
                return factor;
        return std::nullopt;
    }
    // A forward under autocast calibrated on fp32 forwards only (with prefillAttentionLinear: their scores'
    // copies counted inside the attention). The fp32 runs showed how many score-sized tensors the code holds
    // at once (`quadratic` over the plan's two, the softmax's input and output); under autocast the plan
    // holds two as well (the 16-bit scores and the softmax's fp32 output, autocast's fp32 list), and which of
    // the code's other copies run in 16 bits (those before its softmax-family op: scaling, masking, x - max)
    // or in fp32 (exp and after) no fp32 trace says. Each is taken at the mean of the two widths, the middle
    // of what they can be (between the 16-bit and the fp32 width a copy): 2 x `quadratic` copies at
    // (e + 4) / 2 bytes against the plan's e + 4. The scenario warns with the range. Nothing otherwise.
    std::optional<double> forwardScoresFromFp32(double dtypeBytes) const {
        if (prefillAttentionLinear < 0 || quadraticActivationBytes != 4 || dtypeBytes >= 4)
            return std::nullopt;
        return std::max(1.0, quadratic);
    }
    // Eager attention's backward: what the runs' last layer held beyond its saved scores when its backward
    // began (score-sized temporaries less the saved ones freed by then), over the softmax backward's two
    // copies the plan holds (LayerActivations::backwardScratchScores). The gradients the softmax's backward
    // reads and writes take the softmax's dtype, fp32 under autocast as in an fp32 run, so the factor
    // carries to the other. Negative: not measured (the plan's own stand).
    double backwardScratchScores = -1;
    // Forward-only code (inference) of eager attention: the tokens-linear bytes a layer holds while its
    // attention's score copies are alive, over the plan's working set of a layer (its activations). With it
    // a prefill is planned at the larger of two moments, as recorded runs peak: inside the attention (these
    // bytes and the scores, `quadratic`) or elsewhere (the FFN, the head: the activations times `linear`).
    // Negative: not measured (the plan's one moment, activations and scores together).
    double prefillAttentionLinear = -1;
    double kvCache = 1;                        // the KV cache (0: the code keeps none)
    double optimizerStepBytesPerParameter = 0; // added to what the step holds besides the states (old files)
    // What the optimizer step was measured to hold besides the states, per parameter: it replaces the
    // modelled step temporaries, so calibration reproduces a run whatever AdamW implementation the scenario
    // declared. Negative: not measured (the model's temporaries stand).
    double stepScratchBytesPerParameter = -1;
    // The same measured as tensors of the largest parameter the step works on (largestSteppedTensor) in the
    // states' dtype, where the run stepped one parameter at a time (its scratch less than half a state):
    // what such a loop holds follows the widest matrix, not the parameter count, so a model of another
    // size is planned with its own widest matrix. Negative: not measured so; takes precedence when set.
    double stepScratchLargestTensors = -1;
    // The AdamW implementation the runs' scenarios declared when the step's scratch was measured (all of
    // them, the same; absent: files from before, runs that left it to the default, or runs that differed).
    // The scratch is that code's: a plan that declares another (a what-if: torch's fused kernel for a
    // hand-written loop) plans that one's temporaries instead, and says so; one that declares none is of
    // the same code.
    std::optional<OptimizerImpl> stepMeasuredWith;
    // The loss the runs' scenarios planned when `logits` was measured (all the same: `full`, as the code
    // writes it, unless a scenario said otherwise). The factor is that loss's copies: a plan with another
    // loss (a what-if: a compiled or fused cross-entropy in place of the code's) plans that one's, and says
    // so. Absent: files from before, or runs that differed.
    std::optional<LossKind> logitsMeasuredWith;
    bool logitsFactorAppliesTo(const TrainingSettings& t) const {
        return logits >= 0 && (!logitsMeasuredWith || *logitsMeasuredWith == t.plannedLoss());
    }
    bool stepScratchAppliesTo(const TrainingSettings& t) const {
        return !stepMeasuredWith || !t.optimizerImplGiven || *stepMeasuredWith == t.optimizerImpl;
    }
    // Logit tensors (micro-batch x tokens x vocabulary on this GPU, in the activation dtype) the runs kept
    // through the optimizer step: the loss's logits a caller's variable keeps alive (CS336's benchmark keeps
    // the model's output until its next step), which grow with the tokens and not with the parameters, so
    // they are not step scratch; counted in the activation dtype because the head's output takes it (bf16
    // under autocast). Negative: not measured (the profile's own, if any, stand).
    double heldLogitCopies = -1;
    // The vocabulary-sized tensors at the loss (micro-batch x tokens x vocabulary: the head's logits and the
    // cross-entropy's), measured over the plan's: how many the loss holds is its code's, not the layers',
    // and their share of what grows with the tokens follows the vocabulary and the layer count, which a
    // what-if changes (scaled with `linear`, CS336's medium-model runs planned its GPT-2-vocabulary
    // six-layer model 10% under its own code's replay). Negative: not measured (`linear` scales them).
    double logits = -1;
    // The same factor for activations of another width, where the runs told it (each entry: dtype bytes,
    // factor; the runs' own width first, at `logits`): fp32 runs whose vocabulary-sized tensors at the
    // loss were all made by operators whose width autocast decides (calibration.cpp, logitsAsAutocast).
    // Empty otherwise: the factor measured is carried to any width, as the runs cannot say which of the
    // copies autocast would keep in 16 bits.
    std::vector<std::pair<double, double>> logitsByDtype;
    double logitsFor(double dtypeBytes) const {
        for (const auto& [dtype, factor] : logitsByDtype)
            if (dtype == dtypeBytes)
                return factor;
        return logits;
    }
    double workspaceBytes = 0; // cuBLAS and other workspaces, held throughout (replaces the planned ones)
    // What the caching allocator reserved beyond what was allocated in the runs, as a fraction of the
    // allocated peak: each run's reserved at its most over its allocated at its most, less one, averaged.
    // Where segments fall depends on the code's own sizes and order (a first AdamW step makes its states
    // after the backward, beside the activations' cached segments: 11.5% in kkaitlyn111's 2.7B run), which
    // a table of tensors does not hold; it replaces overheads.allocator_overhead_fraction. Negative: not
    // measured (the runs recorded no segments).
    double allocatorOverhead = -1;
    // Where the plan replays the code through the allocator's model (cs336_basics' forward and step,
    // core/plan/cs336replay.h), the same measured beside the replay: what the runs reserved beyond their
    // tensors less what the replay of their own scenarios (uncalibrated) reserves beyond its, as a share of
    // the runs' allocated peaks, averaged (negative where the replay kept more). The plan then reserves
    // beyond its tensors what the replay at its own shape keeps beyond them, plus this share: a forward
    // calibrated at 128 tokens, whose cache is 1.5% of its tensors, is planned at 1,024 tokens with the 11%
    // that length's score tensors leave (each a segment of its own), where the share alone was 8.8% under.
    // A ratio of the two would be of small numbers (a replay that keeps 0.1% beyond its tensors against a
    // run's 1.8%: x12, +47% at four times the length). NaN: not measured (no replay, or no segments
    // recorded); the share then stands.
    double replayedOverhead = std::numeric_limits<double>::quiet_NaN();
    bool replayedOverheadMeasured() const { return !std::isnan(replayedOverhead); }
    // The framework whose code the runs ran, as the stacks at their peaks named it (every run the same:
    // core/compare/codeorigin.h), when the plan has a replay of that code and the scenario plans with
    // another profile: CS336's code calibrated as plain PyTorch. The calibrated tensors are the runs' own;
    // what the allocator caches beyond them comes from that code's order, so the plan replays it
    // (replayedOverhead is measured against that replay). Absent: the scenario's own profile's replay, if
    // any.
    std::optional<Framework> code;
    // With `code`: the runs stepped that code's own optimizer (cs336_basics' AdamW, by the step's frames).
    // The replay then steps it wherever the calibrated scratch applies (stepScratchAppliesTo), as the runs
    // did whatever implementation their scenarios declared for it.
    bool codeOptimizer = false;
    // With `code`: the factors were fitted against that code's own tables (its profile's plan of the runs),
    // not the scenario's profile's, and a plan the code can run is made with them (core/plan/estimator.cpp,
    // calibratedCode). Which of an op's copies run in 16 bits or fp32 under autocast, how many score-sized
    // tensors its softmax keeps and how many bytes a logit its loss holds are then the code's at every
    // dtype and shape, where factors over another profile's tables held only at the runs' own dtype (CS336's
    // fp32 steps calibrating plain PyTorch: every block checkpointed under autocast 5.4% under the code's
    // plan, GPT-2's vocabulary under autocast 8% over). A plan the code cannot run (grouped-query attention,
    // tensor parallelism) is made with the scenario's profile and these factors, with a warning.
    bool codeTables = false;
    // The runs held every parameter's gradient at their loss peak where the scenario frees them between
    // steps: an earlier step's gradients left alive (zero_grad(set_to_none=False), a warm-up step with no
    // zero_grad after it). The calibrated plan holds them through the forward, as accumulation does.
    bool gradientsHeld = false;
};

// Each number of a scenario's calibration.factors: its key, the member it fills, its value when absent and
// the bounds a file may give. The reader (core/io/scenariojson.cpp) reads by this table and calibrate
// (core/compare/calibration.cpp) refuses a fit outside it, so that every file it writes reads back; `what`
// and `unit` ("x": a multiple of the plan's) word that refusal.
struct CalibrationFactor {
    const char* key;
    double Calibration::*member;
    double absent, least, most;
    const char* what;
    const char* unit;
};
inline constexpr CalibrationFactor kCalibrationFactors[] = {
    {"linear", &Calibration::linear, 1, 0, Calibration::kMostScale, "what grows with the tokens", "x"},
    {"quadratic", &Calibration::quadratic, 1, 0, Calibration::kMostScale,
     "what grows with the tokens squared", "x"},
    {"kv_cache", &Calibration::kvCache, 1, 0, Calibration::kMostScale, "the KV cache", "x"},
    {"optimizer_step_bytes_per_parameter", &Calibration::optimizerStepBytesPerParameter, 0, 0,
     Calibration::kMostScale, "the optimizer step's scratch", "bytes per parameter"},
    {"optimizer_step_scratch_bytes_per_parameter", &Calibration::stepScratchBytesPerParameter, -1, -1,
     Calibration::kMostScale, "the optimizer step's scratch", "bytes per parameter"},
    {"optimizer_step_scratch_largest_tensors", &Calibration::stepScratchLargestTensors, -1, -1, 1e6,
     "the optimizer step's scratch", "tensors of the largest parameter"},
    {"held_logit_copies", &Calibration::heldLogitCopies, -1, -1, 64, "the logits kept through the step",
     "copies"},
    {"logits", &Calibration::logits, -1, -1, Calibration::kMostScale, "the loss's vocabulary-sized tensors",
     "x"},
    {"backward_score_scratch", &Calibration::backwardScratchScores, -1, -1, Calibration::kMostScale,
     "eager attention's backward scratch", "x"},
    {"prefill_attention_linear", &Calibration::prefillAttentionLinear, -1, -1, Calibration::kMostScale,
     "what a layer holds inside its attention", "x"},
    {"workspace_bytes", &Calibration::workspaceBytes, 0, 0, 1e15, "the workspaces", "bytes"},
    {"allocator_overhead_fraction", &Calibration::allocatorOverhead, -1, -1, Calibration::kMostOverhead,
     "the allocator's cache", "x"},
    {"reserved_beyond_replay_fraction", &Calibration::replayedOverhead,
     std::numeric_limits<double>::quiet_NaN(), -1, Calibration::kMostOverhead,
     "the allocator's cache beyond its replay", "x"},
    {"quadratic_activation_bytes", &Calibration::quadraticActivationBytes, 0, 0, 8,
     "the scores' activation dtype", "bytes"},
};

// A validated scenario: everything the estimator reads, resolved (presets looked up, defaults applied).
// `document` is the JSON it was read from, so that saving keeps keys this version does not know.
struct Scenario {
    std::string name;
    Mode mode = Mode::Training;
    ModelSpec model;
    std::string modelLabel; // preset name, config path or model_type
    TrainingSettings training;
    InferenceSettings inference;
    ClusterSettings cluster;
    Overheads overheads;
    Calibration calibration;
    nlohmann::json document;
    std::string baseDir = ".";         // where a relative model.hf_config is looked up
    std::vector<std::string> warnings; // found while reading (e.g. sequence longer than the model's)

    std::uint64_t parameters() const { return model.totalParameters(); }
    // What the estimator reads, without the document and warnings: what-ifs and solvers edit copies of
    // this many times per slider tick, and copying a JSON document each time cost more than the estimate.
    // A field added above that the estimator reads must be copied here too.
    Scenario settingsCopy() const {
        Scenario s;
        s.name = name;
        s.mode = mode;
        s.model = model;
        s.modelLabel = modelLabel;
        s.training = training;
        s.inference = inference;
        s.cluster = cluster;
        s.overheads = overheads;
        s.calibration = calibration;
        s.baseDir = baseDir;
        return s;
    }
    // The dtype (bytes) the matmuls write activations in: autocast's, else the activations' own; in
    // inference autocast's, else fp32 for fp32 weights, else 16-bit. What a calibration's quadratic factor
    // is keyed by.
    double activationDtypeBytes() const {
        if (mode != Mode::Training)
            return inference.autocastBytes > 0 ? inference.autocastBytes : inference.weightBytes >= 4 ? 4 : 2;
        return training.autocastBytes > 0 ? training.autocastBytes : training.activationBytes;
    }
    // The mode whose tensors this scenario keeps, which a calibration is measured in and applies to: a
    // forward with autograd on (inference.grad_mode "enabled") saves what a training step's forward saves,
    // for a backward that never comes, so it is measured and planned as training is.
    Mode keptAs() const {
        return mode == Mode::Inference && !inference.gradEnabled ? Mode::Inference : Mode::Training;
    }
    // Inference whose code runs one forward over each sequence and keeps no KV cache: cs336_basics, a
    // scenario that says so (inference.kv_cache false), or any code a calibration on its forward-only runs
    // measured none of (Calibration::kvCache 0). The serving
    // views then speak of the tokens one forward holds at once, not of a cache.
    bool keepsNoKvCache() const {
        return mode == Mode::Inference && inference.engine == Engine::None &&
               (inference.framework == Framework::Cs336Basics || inference.gradEnabled ||
                !inference.kvCache ||
                (calibration.present && calibration.measuredIn(Mode::Inference) && calibration.kvCache == 0));
    }
};

// The profile a scenario plans with (its training or inference framework).
inline Framework plannedFramework(const Scenario& sc) {
    return sc.mode == Mode::Training ? sc.training.framework : sc.inference.framework;
}

// PYTORCH_CUDA_ALLOC_CONF's expandable_segments set to `on` as the reader would read it: the allocator's
// fraction follows the setting unless the file named its own.
inline void setExpandableSegments(Scenario& s, bool on) {
    s.cluster.expandableSegments = on;
    if (!s.overheads.allocatorOverheadFractionGiven)
        s.overheads.allocatorOverheadFraction = defaultAllocatorOverheadFraction(on);
}

// What the estimator reads of `sc` (settingsCopy), planned with `framework`'s profile; nothing re-read
// (core/io/codeprofile.h scenarioWithFramework re-reads the document, defaults and checks included).
inline Scenario withPlannedFramework(const Scenario& sc, Framework framework) {
    Scenario s = sc.settingsCopy();
    (s.mode == Mode::Training ? s.training.framework : s.inference.framework) = framework;
    return s;
}

} // namespace headroom
