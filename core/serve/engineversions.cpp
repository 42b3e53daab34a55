// SPDX-License-Identifier: GPL-3.0-or-later
// The serving engines' releases Headroom models, one row each; docs/serving.md ("Engine versions") names the
// file and tag every value was read from, and the logged runs each row was checked against.
#include "core/serve/engineversions.h"

#include <array>

namespace headroom {

namespace {

constexpr double kGiB = 1073741824.0;
constexpr double kMiB = 1048576.0;

constexpr std::array<EngineVersion, 6> kVersions = {{
    // vLLM's V0 engine (LLMEngine with vllm/worker/worker.py and model_runner.py; the default up to 0.7, and
    // what 0.8-0.10 run with VLLM_USE_V1=0 or on GPUs V1 does not support, such as Turing). Its log prints
    // the budget in one line ("model weights take ...; non_torch_memory takes ...; PyTorch activation peak
    // memory takes ...; the rest of the memory reserved for KV Cache is ..."), computed as V1 does:
    // gpu_memory_utilization (0.9) x the GPU, less weights, the profiled peak and non-torch memory.
    // ModelRunner.profile_run splits max_num_batched_tokens over max_num_seqs prompts and samples them with
    // top_p 0.99 and top_k vocab - 1, so the sampler sorts the fp32 logits as V1's apply_top_k_top_p does
    // (38 bytes per entry). The step's defaults are V0's scheduler's (StepDefaults::V0). CUDA graphs are
    // captured after the pool is sized. The blocks are budget / (block x layers x bytes per token), one
    // group, as in V1.
    // FP8 weights from compute capability 8.0 (Fp8Config.get_min_capability; Ampere weight-only through FP8
    // Marlin since vllm-project/vllm #5975, 0.5.1), as in 0.11.
    // NCCL: 0.8 pins torch 2.6.0, which ships NCCL 2.21.5: NVLS buffers of 6 MiB per (channel, head), set up
    // with the communicator, after V0's snapshot: non-torch memory.
    {.engine = Engine::Vllm,
     .name = "vllm 0.8",
     .samplerBytes = 38,
     .nonTorchBytes = 0.13 * kGiB,
     .modelRunner = "V0 ModelRunner",
     .stepDefaults = StepDefaults::V0,
     .nvlsBytesPerChannelHead = 6 * kMiB},
    // vLLM 0.11 (V1 engine, GPUModelRunner): the budget is gpu_memory_utilization (0.9) x the GPU;
    // profile_run's _dummy_sampler_run samples with top-k and top-p, so apply_top_k_top_p sorts the fp32
    // logits: 38 bytes per (request, entry) (engines.cpp says which). CUDA graphs are captured after the
    // pool is sized, outside the budget. Non-torch memory: 0.13 GiB on every TP-1 run of llm-d's
    // measurements. The log's "GPU KV cache size" divides the blocks evenly among the KV cache groups
    // (kv_cache_utils.py _report_kv_cache_config, still so at 0.19: vllm-project/vllm issue #40691), and
    // hybrid models with linear-attention layers run without prefix caching ("Hybrid or mamba-based model
    // detected: disabling prefix caching", vllm/model_executor/models/config.py at 0.10.2).
    // When FlashInfer is installed the V1 sampler of 0.10-0.11 takes it (vllm/v1/sample/ops/
    // topk_topp_sampler.py, flashinfer_sample): with top-k and top-p both set,
    // top_k_top_p_sampling_from_logits masks the fp32 logits into a second fp32 tensor and takes their
    // softmax, so the bf16 logits (2), the fp32 copy the sampler starts from (4), the masked logits (4) and
    // the probabilities (4) are live: 14 bytes per entry, with no sort.
    // The worker sets its communicators up before the start-up snapshot (#25359) and refuses to start with
    // less than the budget free then. It pins torch 2.8.0, which ships NCCL 2.27.3: NVLS buffers of 2 MiB
    // per (channel, head), connected by the first collective NCCL runs through them.
    {.engine = Engine::Vllm,
     .name = "vllm 0.11",
     .samplerBytes = 38,
     .nonTorchBytes = 0.13 * kGiB,
     .modelRunner = "V1 GPUModelRunner",
     .flashinferSamplerBytes = 14,
     .communicatorsBeforeSnapshot = true,
     .checksFreeAtStartup = true,
     .nvlsBytesPerChannelHead = 2 * kMiB,
     .ncclConnectsOnFirstUse = true},
    // vLLM 0.19 (V1 GPUModelRunner still: its log loads the model from v1/worker/gpu_model_runner.py and
    // VLLM_USE_V2_MODEL_RUNNER is False). The budget, the pool and "GPU KV cache size" as in 0.11; CUDA
    // graphs are estimated but, in 0.19.0, left out of the budget (its log: "In v0.19, CUDA graph memory
    // profiling will be enabled by default ... To try it now, set
    // VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1").
    // Chunked local attention layers are pooled apart again (#29627; the 0.19.0 logs' environment dump has
    // VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE: True).
    // The sampler: from 0.17 vllm/v1/sample/ops/topk_topp_sampler.py's apply_top_k_top_p masks the fp32
    // logits in place with a Triton kernel for batches of 8 or more (apply_top_k_top_p_triton,
    // vllm-project/vllm #33538, merged February 2026) instead of sorting them; then forward_native takes
    // their softmax and random_sample draws exponential noise of the same size: the bf16 logits (2), the
    // sampler's fp32 copy (4), the probabilities (4) and the noise (4) are live, 14 bytes per (request,
    // entry). llm-d-planner's version sweep (accuracy/accuracy_report.md, Qwen3-14B on an H100) shows the
    // profiled peak falling from 5.64 to 2.23 GiB at v0.17.0, where the sort's 38 bytes become 14.
    // Non-torch memory at TP 1 grew to 0.25 GiB at v0.18.0 in the same sweep (0.24-0.26 in every v0.19.0
    // log; a measured constant, set on the Llama 3.1 8B run of examples/serving, a fit run).
    // Tensor parallelism on Hopper and Blackwell: the compile pipeline fuses each all-reduce with the next
    // RMSNorm through FlashInfer (PassConfig.fuse_allreduce_rms, on from -O2 when TP > 1, PP = 1 and
    // FlashInfer is installed, as vLLM's CUDA wheels install it; the log's pass_config shows it), whose
    // workspaces, with the symmetric-memory all-reduce (VLLM_ALLREDUCE_USE_SYMM_MEM: True in the logs) and
    // what the TP profile run connects, come to about 2.1 GiB of non-torch memory per GPU at TP 2 and 4
    // alike, against 0.54 GiB under 0.11. Which of them holds how much was not read from source: it is a
    // measured constant, the mean of llm-d-planner's four Llama 3.1 8B and Qwen2.5-7B TP 2 and 4 runs
    // (2.07, 2.13, 2.06, 2.13 GiB) less the TP-1 figure and NCCL's communicator allowance: 1.47 GiB.
    {.engine = Engine::Vllm,
     .name = "vllm 0.19",
     .samplerBytes = 14,
     .nonTorchBytes = 0.25 * kGiB,
     .modelRunner = "V1 GPUModelRunner",
     .flashinferSamplerBytes = 14,
     .communicatorsBeforeSnapshot = true,
     .checksFreeAtStartup = true,
     .poolsChunkedLayers = true,
     .nvlsBytesPerChannelHead = 2 * kMiB,
     .ncclConnectsOnFirstUse = true,
     .allReduceFusionBytes = 1.47 * kGiB},
    // vLLM 0.31 (V2 model runner, vllm/v1/worker/gpu/model_runner.py, which the v0.31.0 log names when it
    // loads the model): gpu_memory_utilization defaults to 0.92 (vllm/config/cache.py); _dummy_sampler_run
    // samples with no top-k or top-p, and Sampler.sample copies the bf16 logits to fp32 and draws with
    // Gumbel noise in a Triton kernel that keeps nothing per entry (vllm/v1/worker/gpu/sample/sampler.py,
    // gumbel.py): 2 + 4 bytes per (request, entry). CUDA graph memory is estimated before the pool is
    // sized and added to the profiled peak (gpu_worker.py determine_available_memory; the engine's own
    // log says "default since v0.21.0"); the estimate itself depends on the model and the capture sizes
    // (0.13 to 2.22 GiB in twelve logs), so the default is their median, 0.62 GiB, and a scenario gives
    // its own from the log's "Estimated CUDA graph memory". "GPU KV cache size" is max concurrency x
    // max_model_len (kv_cache_utils.py), and prefix caching covers hybrid models in mamba_cache_mode
    // "align", which holds two pages of a request's state per group (vllm/config/cache.py,
    // MambaSpec.max_memory_usage_bytes in vllm/v1/kv_cache_interface.py).
    // No top-k or top-p in the profiled step, so FlashInfer's path is never taken. FP8 weights run on Turing
    // (7.5) as well: vllm-project/vllm #29901 (merged 2025-12-02) ported Marlin's kernels to it. Its
    // PyTorch ships an NCCL from 2.27 on: NVLS as in 0.11. Nemotron-H's recurrent state is float32 by
    // default (#39032).
    // Non-torch memory and the tensor-parallel all-reduce fusion's as measured under 0.19: nothing read
    // between the two releases changes either (the one v0.31.0 log, at TP 1 on an A100, has 0.26 GiB).
    {.engine = Engine::Vllm,
     .name = "vllm 0.31",
     .defaultUtilization = 0.92,
     .samplerBytes = 6,
     .cudaGraphsInBudget = true,
     .defaultCudaGraphBytes = 0.62 * kGiB,
     .nonTorchBytes = 0.25 * kGiB,
     .modelRunner = "V2 model runner",
     .tokensFromConcurrency = true,
     .linearPagesPerRequest = 2,
     .fp8WeightsMinCapability = 7.5,
     .communicatorsBeforeSnapshot = true,
     .checksFreeAtStartup = true,
     .poolsChunkedLayers = true,
     .nvlsBytesPerChannelHead = 2 * kMiB,
     .ncclConnectsOnFirstUse = true,
     .allReduceFusionBytes = 1.47 * kGiB,
     .nemotronHSsmCacheBytes = 4},
    // SGLang 0.4 (python/sglang/srt/model_executor/model_runner.py profile_max_num_token,
    // server_args.py): the pool is mem_fraction_static x what was free once the CUDA context and NCCL
    // existed, less the weights; the step and CUDA graphs live in what the fraction leaves. FP8 weights
    // from compute capability 8.0 (python/sglang/srt/layers/quantization/fp8.py Fp8Config.
    // get_min_capability; Marlin below 8.9). NVLS off unless --enable-nccl-nvls (sgl-project/sglang #631,
    // #3502: NCCL_NVLS_ENABLE from that flag); torch 2.5's NCCL 2.21.5 would set its buffers up with the
    // communicator, before SGLang measures what is free.
    {.engine = Engine::Sglang,
     .name = "sglang 0.4",
     .defaultUtilization = 0,
     .samplerBytes = 10,
     .modelRunner = "ModelRunner",
     .nvlsBytesPerChannelHead = 6 * kMiB,
     .nvlsByDefault = false},
    // SGLang 0.5 as of 2026 (python/sglang/srt/server_args.py at 11e7c9e0, June 2026): the pool is sized as
    // in 0.4 (model_runner_kv_cache_mixin.py profile_max_num_token: the fraction of what was free once the
    // context and NCCL existed, less the weights), but the default fraction comes from the GPU's memory
    // (#10975, September 2025): chunked_prefill_size 2,048 below 35 GiB, 4,096 below 60, 8,192 below 160,
    // else 16,384, and cuda_graph_max_bs by bucket and TP; then reserved = 512 MiB + 1.5 MiB a prefill token
    // + 2 MiB a graph batch + TP x PP / 8 GiB + 8 MiB per piecewise graph token size (default since #16331,
    // January 2026), at least 10 GiB above 60 GiB of GPU, and the fraction is (GPU - reserved) / GPU to
    // three places. Checked against sgl-project/sglang issue #29092 (Qwen3-32B on an H100: 0.828). Its
    // PyTorch ships an NCCL from 2.27 on (2 MiB NVLS buffers per channel and head, off unless
    // --enable-nccl-nvls).
    {.engine = Engine::Sglang,
     .name = "sglang 0.5",
     .defaultUtilization = 0,
     .samplerBytes = 10,
     .modelRunner = "ModelRunner",
     .nvlsBytesPerChannelHead = 2 * kMiB,
     .nvlsByDefault = false,
     .sglangFractionFromMemory = true,
     .sglangPiecewiseGraphs = true,
     .sglangStatePool = true},
}};

} // namespace

std::span<const EngineVersion> engineVersions() {
    return kVersions;
}

bool hasHybridAllocator(const EngineVersion& v) {
    return v.engine == Engine::Vllm && v.stepDefaults != StepDefaults::V0;
}

bool poolsChunkedLayers(const EngineVersion& v, const InferenceSettings& in) {
    return in.poolChunkedLayers >= 0 && hasHybridAllocator(v) ? in.poolChunkedLayers == 1
                                                              : v.poolsChunkedLayers;
}

const EngineVersion* findEngineVersion(Engine engine, const std::string& name) {
    for (const EngineVersion& v : kVersions)
        if (v.engine == engine && name == v.name)
            return &v;
    return nullptr;
}

const EngineVersion* newestEngineVersion(Engine engine) {
    const EngineVersion* newest = nullptr;
    for (const EngineVersion& v : kVersions) // rows run oldest to newest within an engine
        if (v.engine == engine)
            newest = &v;
    return newest;
}

const EngineVersion* engineVersionOf(const Scenario& sc) {
    const Engine e = sc.inference.engine;
    if (e != Engine::Vllm && e != Engine::Sglang)
        return nullptr;
    if (const EngineVersion* v = findEngineVersion(e, sc.inference.engineVersion))
        return v;
    return newestEngineVersion(e);
}

} // namespace headroom
