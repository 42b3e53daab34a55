// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/scenario.h"

#include <span>
#include <string>

namespace headroom {

// How a release sizes its profiled step when the scenario leaves max_num_batched_tokens and max_num_seqs out.
enum class StepDefaults {
    // V1 (and SGLang): chunked prefill always on; vLLM's OpenAI server takes 8,192 tokens and 1,024 requests
    // on GPUs of 70 GiB or more that are not A100s, else 2,048 and 256.
    Chunked,
    // vLLM's V0 engine (vllm/config.py SchedulerConfig): without chunked prefill the step is one prefill of
    // max(max_model_len, 2,048) tokens; chunked prefill, which V0 switched on for contexts over 32K, makes it
    // 2,048. Always 256 requests.
    V0,
};

// What a serving engine's release does that its budget depends on: one row per modelled release, each
// value read from the file named in docs/serving.md ("Engine versions"). inference.engine_version names a
// row; without it, the newest row of the engine.
struct EngineVersion {
    Engine engine = Engine::Vllm;
    const char* name = ""; // as inference.engine_version spells it: "vllm 0.11"
    // vLLM's gpu_memory_utilization when the scenario leaves it out.
    double defaultUtilization = 0.9;
    // Bytes per (request, vocabulary entry) alive at the profiled sampler step.
    double samplerBytes = 0;
    // Whether the engine estimates its CUDA graphs before sizing the pool and counts them in the profiled
    // peak (vLLM from 0.21), or captures them afterwards, outside the budget.
    bool cudaGraphsInBudget = false;
    // The CUDA graph memory planned when the scenario does not give cuda_graph_gib (0 where the release
    // does not count it).
    double defaultCudaGraphBytes = 0;
    // What the engine measures outside PyTorch at one GPU (cuBLAS workspaces and the like).
    double nonTorchBytes = 0;
    const char* modelRunner = ""; // which code profiled the step, for the text and the report
    // "GPU KV cache size" from max concurrency x max_model_len rather than blocks / groups x block size.
    bool tokensFromConcurrency = false;
    // Pages a request holds in each group of linear-attention layers: 1 with prefix caching off for hybrid
    // models, 2 in mamba_cache_mode "align".
    int linearPagesPerRequest = 1;
    StepDefaults stepDefaults = StepDefaults::Chunked;
    // Bytes per (request, vocabulary entry) of the profiled sampler step when the engine samples with
    // FlashInfer (its log says "Using FlashInfer for top-p & top-k sampling"; inference.sampler
    // "flashinfer"); 0 where this release's profiled step never takes FlashInfer's path.
    double flashinferSamplerBytes = 0;
    // The lowest compute capability whose GPUs the release runs FP8 weights on (below it the engine refuses
    // to load them): 8.0 where Ampere runs them weight-only through FP8 Marlin, 7.5 once Marlin ran on
    // Turing (docs/serving.md, "Engine versions").
    double fp8WeightsMinCapability = 8.0;
    // The worker sets up its communicators before it takes its start-up memory snapshot (vllm-project/vllm
    // #25359, merged for v0.11.0): what NCCL allocates then sits outside the budget's parts, as the CUDA
    // context does, and only the collectives the profiled step runs add non-torch memory. Tensor and
    // expert parallelism reduce and exchange inside the forward; a pipeline's communicator sends and
    // receives between steps, which the profile run never does. The V0 worker took its snapshot first, so
    // every communicator counted.
    bool communicatorsBeforeSnapshot = false;
    // The worker refuses to start when less than the budget is free at that snapshot (V1's gpu_worker.py
    // init_device: "Free memory on device ... on startup is less than desired GPU memory utilization").
    bool checksFreeAtStartup = false;
    // Whether the hybrid allocator pools chunked local attention layers (Llama 4) apart, one chunk a request.
    // vllm-project/vllm #21761 (0.10.1) switched the hybrid allocator off for such models unless
    // VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 (a latency regression), so every layer caches the
    // whole context; #29627 made that the default again.
    bool poolsChunkedLayers = false;
    // NCCL's NVLink SHARP (NVLS) buffers on each GPU per (channel, head), as the NCCL the release's PyTorch
    // ships lays them out (src/transport/nvls.cc ncclNvlsBufferSetup): 2 x (NCCL_STEPS 8 x the 128 KiB
    // chunk + a 2 MiB credit area) = 6 MiB up to NCCL 2.21, 2 x 8 x 128 KiB = 2 MiB from 2.22.
    double nvlsBytesPerChannelHead = 0;
    // NCCL connects an algorithm's buffers at its first collective rather than when the communicator is
    // created (NCCL_RUNTIME_CONNECT, on by default from 2.22: src/init.cc, src/group.cc).
    bool ncclConnectsOnFirstUse = false;
    // Non-torch memory the tensor-parallel profile run adds on Hopper and Blackwell when the compile
    // pipeline fuses all-reduces with RMSNorm through FlashInfer (PassConfig.fuse_allreduce_rms: TP > 1 and
    // no pipeline); 0 where the release does not or it was not measured.
    double allReduceFusionBytes = 0;
    // Whether the engine leaves NVLS on (vLLM leaves NCCL_NVLS_ENABLE alone; SGLang sets it to 0 unless
    // --enable-nccl-nvls).
    bool nvlsByDefault = true;
    // Bytes per element of a Nemotron-H model's Mamba-2 recurrent state when neither the scenario nor the
    // checkpoint's config names mamba_ssm_cache_dtype: vLLM's NemotronHForCausalLMConfig hook
    // (vllm/model_executor/models/config.py) took float16 until vllm-project/vllm #39032 (2026-04-05) made it
    // float32; V0 keeps the model's dtype.
    int nemotronHSsmCacheBytes = 2;
    // SGLang: mem_fraction_static by default from the GPU's memory (server_args.py
    // _handle_gpu_memory_settings, sgl-project/sglang #10975): chunked_prefill_size and cuda_graph_max_bs by
    // memory bucket, then what they and tensor parallelism need kept out of the fraction; false: by
    // tensor-parallel size alone (0.4).
    bool sglangFractionFromMemory = false;
    // SGLang's piecewise CUDA graphs on by default (#16331), whose non-torch memory the default fraction
    // keeps out as 8 MiB per captured token size.
    bool sglangPiecewiseGraphs = false;
    // SGLang keeps a hybrid model's linear-attention states in a pool of their own, sized before the KV
    // pool from mamba_full_memory_ratio (model_runner_kv_cache_mixin.py): its requests' states take
    // ratio / (1 + ratio) of what the fraction leaves, in bf16 with the recurrent part in float32 unless
    // the config or --mamba-ssm-dtype says otherwise (configs/mamba_utils.py mamba2_state_dtype).
    bool sglangStatePool = false;
};

std::span<const EngineVersion> engineVersions();
// Whether the release allocates its KV cache through V1's hybrid allocator, which pools layer kinds apart
// (vLLM's V1 rows; the V0 engine's block manager has none).
bool hasHybridAllocator(const EngineVersion& v);
// Whether vLLM pools chunked-attention layers apart under these settings: inference.chunked_layers where the
// release has the hybrid allocator, else the release's default.
bool poolsChunkedLayers(const EngineVersion& v, const InferenceSettings& in);
// The row inference.engine_version names for `engine`, or nothing.
const EngineVersion* findEngineVersion(Engine engine, const std::string& name);
// The newest modelled row of a serving engine (vLLM, SGLang); nothing for the others.
const EngineVersion* newestEngineVersion(Engine engine);
// The scenario's row: the one it names, else the newest of its engine; nothing without a serving engine.
const EngineVersion* engineVersionOf(const Scenario& sc);

} // namespace headroom
