// SPDX-License-Identifier: GPL-3.0-or-later
// How the serving engines (vLLM, SGLang) and transformers' generate size an inference stage: each from the
// engine's own source (docs/serving.md names the versions and files).
#include "core/serve/engines.h"

#include "core/plan/gpucatalogue.h"
#include "core/serve/engineversions.h"
#include "core/serve/kvpool.h"
#include "core/serve/loadreserve.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

namespace headroom {

namespace {

// Engine defaults, each from the engine's own source (docs/serving.md names the versions and files).
constexpr double kGiB = 1073741824.0;

// vllm/engine/arg_utils.py (_set_default_args, v0.11, the OpenAI server) gives GPUs of at least 70 GiB that
// are not A100s larger defaults: 8,192 batched tokens and 1,024 sequences instead of 2,048 and 256.
bool vllmLargeDefaults(const Scenario& sc) {
    return static_cast<double>(sc.cluster.capacityBytes) / kGiB >= 70 &&
           sc.cluster.gpu.find("A100") == std::string::npos;
}

// Whether the scenario's vLLM release steps as the V0 engine did (engineversions.h, StepDefaults::V0).
bool vllmV0Defaults(const Scenario& sc) {
    const EngineVersion* v = engineVersionOf(sc);
    return v && v->stepDefaults == StepDefaults::V0;
}

// NCCL's NVLink SHARP (NVLS) buffers on each GPU of the tensor-parallel communicator, where NCCL sets them
// up: src/transport/nvls.cc ncclNvlsBufferSetup allocates nvlsChannels x 2 x the per-step buffer (the
// release's nvlsBytesPerChannelHead) for each of nHeads heads, one head per GPU of the communicator on
// the node (src/graph/connect.cc; NCCL's own log: "NVLS comm ... nHeads 8 ... nvlsPerRankSize 201326592
// nvlsTotalSize 1610612736"). nvlsChannels is NVLS_NCHANNELS_SM90 (16), or from NCCL 2.27 on Blackwell in
// one node NVLS_NCHANNELS_SM100_NVL (24). NCCL only takes NVLS on NVSwitch systems of compute capability
// 9.0 or above (src/graph/search.cc), and vLLM measured it in use only for more than two GPUs
// (vllm-project/vllm #9699); a communicator spanning nodes (NVLS tree) is not modelled.
double nvlsBufferBytes(const Scenario& sc, const EngineVersion& v) {
    const ClusterSettings& c = sc.cluster;
    const int tp = c.tensorParallel;
    const bool on = sc.inference.ncclNvls >= 0 ? sc.inference.ncclNvls == 1 : v.nvlsByDefault;
    if (!on || tp <= 2 || tp > c.gpusPerNode || !hasNvlinkSharp(c.gpu))
        return 0;
    const int channels = v.ncclConnectsOnFirstUse && computeCapability(c.gpu) >= 10 ? 24 : 16;
    return channels * v.nvlsBytesPerChannelHead * std::min(tp, 32);
}

// The largest all-reduce vLLM keeps off NCCL at this TP size: its custom all-reduce and its symmetric-memory
// all-reduce take smaller messages (vllm/distributed/device_communicators/all_reduce_utils.py,
// CUSTOM_ALL_REDUCE_MAX_SIZES and SYMM_MEM_ALL_REDUCE_MAX_SIZES, "9.0" and "10.0"; cuda_communicator.py
// tries them before pynccl). 0 for TP sizes neither table lists: NCCL reduces everything.
double vllmInHouseAllReduceBytes(double computeCapability, int tp) {
    constexpr double kMiB = 1048576.0;
    const bool blackwell = computeCapability >= 10;
    switch (tp) {
    case 2:
        return (blackwell ? 8 : 64) * kMiB;
    case 4:
        return 32 * kMiB;
    case 6:
    case 8:
        return (blackwell ? 128 : 64) * kMiB;
    default:
        return 0;
    }
}

} // namespace

int engineStepTokens(const Scenario& sc) {
    const InferenceSettings& in = sc.inference;
    if (in.maxNumBatchedTokens > 0)
        return in.maxNumBatchedTokens;
    if (in.engine == Engine::Vllm) {
        if (vllmV0Defaults(sc)) {
            // vllm/config.py SchedulerConfig.__post_init__ (V0): one prompt of max_model_len fits a step
            // unless chunked prefill is on, which arg_utils.py turned on for contexts over 32K.
            const int length = in.requestLength();
            return length > 32768 ? 2048 : std::max(length, 2048);
        }
        return vllmLargeDefaults(sc) ? 8192 : 2048;
    }
    const double gib = static_cast<double>(sc.cluster.capacityBytes) / kGiB;
    // SGLang's chunked_prefill_size (python/sglang/srt/server_args.py): 2048 below 35 GiB, 4096 below
    // 60 GiB, else 8192; from #10975 16,384 from 160 GiB (B200, MI300X).
    const EngineVersion* v = engineVersionOf(sc);
    if (v && v->sglangFractionFromMemory && gib >= 160)
        return 16384;
    return gib < 35 ? 2048 : gib < 60 ? 4096 : 8192;
}

int engineMaxSeqs(const Scenario& sc) {
    const InferenceSettings& in = sc.inference;
    if (in.maxNumSeqs > 0)
        return in.maxNumSeqs;
    return in.engine == Engine::Vllm && (vllmV0Defaults(sc) || !vllmLargeDefaults(sc)) ? 256 : 1024;
}

// SGLang's default mem_fraction_static (server_args.py): by tensor-parallel size in 0.4; from 0.5 what the
// GPU's memory leaves once the prefill's activations, the CUDA graphs and tensor parallelism are set aside
// (_handle_gpu_memory_settings, engineversions.cpp), in MiB as SGLang reads the GPU (nvidia-smi's total).
double sglangStaticFraction(const Scenario& sc) {
    if (sc.inference.memFractionStatic > 0)
        return sc.inference.memFractionStatic;
    const int tp = sc.cluster.tensorParallel;
    const EngineVersion* v = engineVersionOf(sc);
    if (!v || !v->sglangFractionFromMemory)
        return tp >= 16 ? 0.79 : tp >= 8 ? 0.81 : tp >= 4 ? 0.85 : tp >= 2 ? 0.87 : 0.88;
    const double gpu = static_cast<double>(sc.cluster.capacityBytes) / 1048576.0;
    const int chunk = engineStepTokens(sc);
    const int graphBatch = gpu < 20 * 1024    ? 8
                           : gpu < 35 * 1024  ? (tp < 4 ? 24 : 80)
                           : gpu < 60 * 1024  ? (tp < 4 ? 32 : 160)
                           : gpu < 160 * 1024 ? (tp < 4 ? 256 : 512)
                                              : 512;
    double reserved =
        512 + std::max(chunk, 2048) * 1.5 + graphBatch * 2.0 + tp * sc.cluster.pipelineParallel / 8.0 * 1024;
    if (v->sglangPiecewiseGraphs) {
        // _generate_piecewise_cuda_graph_tokens up to piecewise_cuda_graph_max_tokens, the chunked prefill
        // size (2,048 for MLA models, #15927): 4-32 by 4, 48-256 by 16, 288-512 by 32, 640-4,096 by 128,
        // then by 256; 8 MiB of non-torch memory each.
        const int most = sc.model.mla ? 2048 : chunk;
        int sizes = 0;
        for (auto [from, to, step] : {std::array{4, 32, 4}, std::array{48, 256, 16}, std::array{288, 512, 32},
                                      std::array{640, 4096, 128}, std::array{4352, 1 << 30, 256}})
            if (const int last = std::min(to, most); last >= from)
                sizes += (last - from) / step + 1;
        reserved += 8.0 * sizes;
    }
    if (gpu > 60 * 1024)
        reserved = std::max(reserved, 10.0 * 1024);
    return std::round((gpu - reserved) / gpu * 1000) / 1000;
}

namespace {

// The profiled sampler step's bytes per (request, vocabulary entry) are each release's (engineversions.cpp):
// vLLM 0.11's `_dummy_sampler_run` samples max_num_seqs requests with top-k and top-p on, so
// apply_top_k_top_p sorts the fp32 logits. Live at the sort: the bf16 logits (2), their fp32 copy (4), the
// sorted values and int64 indices (4 + 8), the radix sort's second buffers for both (4 + 8) and its int64
// input index (8): 38 bytes. Measured on H100 with vLLM 0.11 (llm-d-benchmark,
// config_explorer/empirical-vllm-memory-results.md): 38.4 to 38.9 bytes per entry for Qwen3-0.6B,
// Qwen3-32B, Llama-3.1-8B and gpt-oss-20b. vLLM 0.31's V2 runner samples without top-k or top-p: the bf16
// logits and their fp32 copy (6). SGLang samples from probabilities without sorting (FlashInfer's
// top-k/top-p kernels): the bf16 logits, their fp32 copy and the probabilities (10).

// transformers' generate with its default DynamicCache (transformers 4.56: generation/utils.py,
// cache_utils.py, and each family's modeling file). What it does differently from a paged cache:
// - It caches what the attention module hands it. For multi-head latent attention that is the
//   decompressed keys and values of every head (DeepseekV3Attention updates the cache after kv_b_proj),
//   not the latent: heads x (qk_nope + qk_rope + v_head_dim) per token and layer.
// - DynamicLayer.update grows a layer by torch.cat, so at a decode step the old and the new keys of one
//   layer coexist for a moment: one layer's keys for the batch on top of the cache.
// - DynamicSlidingWindowLayer keeps the last window - 1 tokens as a view of the concatenated states,
//   and a view keeps its storage: until the first decode step replaces it, a sliding layer holds the whole
//   prompt. The prompt is taken as the context (its worst case).
// - generate passes logits_to_keep = 1 and copies the last position's logits to fp32: per sequence the
//   model's bf16 logits and the fp32 copy, over the whole vocabulary on every rank (lm_head is
//   "colwise_rep" in the families' tensor-parallel plans).
// Sampling processors (top-k/top-p) are not modelled: greedy decoding. The prefill's working set is the
// batch's own, as without an engine; this replaces what the cache and the logits hold.
void huggingFaceGenerate(const Scenario& sc, StageModel& st, const InferenceShape& shape) {
    const int fullLayers = shape.fullLayers, slidingLayers = shape.slidingLayers;
    const ModelSpec& m = sc.model;
    const InferenceSettings& in = sc.inference;
    const double t = sc.cluster.tensorParallel;
    const double ctx = in.contextLength;
    double keys = 0, values = 0; // elements per token and layer on one GPU
    if (m.mla) {
        const double heads = std::max(1.0, std::floor(m.heads / t));
        keys = heads * (m.qkNopeHeadDim + m.qkRopeHeadDim);
        values = heads * m.vHeadDim;
    } else {
        keys = values = std::max(1.0, std::floor(m.kvHeads / t)) * m.headDim;
    }
    const double layerBytes = (keys + values) * in.kvCacheBytes;
    st.serving.kvBytesPerToken = layerBytes * (fullLayers + slidingLayers);
    const double window = std::min<double>(ctx, std::max(1, m.slidingWindow - 1));
    // A linear-attention layer's cache (transformers' Qwen3NextDynamicCache) keeps the convolution's state
    // in the activations' dtype and the recurrent state as the chunked delta rule returns it, in fp32
    // (modeling_qwen3_next.py, torch_chunk_gated_delta_rule).
    // A Mamba-2 layer's (HybridMambaAttentionDynamicCache, modeling_bamba.py) keeps both in the model's
    // dtype, the convolution's state over the whole kernel rather than kernel - 1 inputs.
    st.serving.stateBytesPerRequest =
        m.linearKind == ModelSpec::LinearKind::Mamba2
            ? shape.linearLayers * 2.0 *
                  (m.mambaConvChannels(sc.cluster.tensorParallel) * m.linearConvKernel +
                   shape.linearRecurrentElements)
            : shape.linearLayers * (2.0 * shape.linearConvElements + 4.0 * shape.linearRecurrentElements);
    st.kvCache = layerBytes * (fullLayers * ctx + slidingLayers * window) + st.serving.stateBytesPerRequest;
    st.prefillKvExtra = layerBytes * slidingLayers * (ctx - window);
    st.decodeKvTransient = std::max(keys, values) * in.kvCacheBytes * (fullLayers > 0 ? ctx : window);
    if (st.last)
        st.logits = (2.0 + 4.0) * m.vocab;
}

} // namespace

void sizeEngine(const Scenario& sc, const InferenceShape& shape, StageModel& st) {
    const InferenceSettings& in = sc.inference;
    if (in.engine == Engine::HuggingFace) {
        huggingFaceGenerate(sc, st, shape);
        return;
    }
    if (in.engine != Engine::Vllm && in.engine != Engine::Sglang)
        return;
    const ModelSpec& m = sc.model;
    const ClusterSettings& c = sc.cluster;
    ServingEstimate& sv = st.serving;
    const double e = 2;
    const double perToken = shape.perTokenActivations;
    const double kvLayerBytes = shape.kvLayerBytes;
    const int fullLayers = shape.fullLayers, slidingLayers = shape.slidingLayers;
    // A serving engine: one step of `step` tokens from up to `seqs` requests, then the KV pool.
    const int step = engineStepTokens(sc);
    const int seqs = std::min(engineMaxSeqs(sc), step);
    sv.engine = true;
    sv.stepTokens = step;
    sv.maxNumSeqs = seqs;
    const double capacity = static_cast<double>(c.capacityBytes);
    const double forward = step * perToken;
    const double kept = e * step * m.hidden; // the step's output hidden states, held while sampling
    const bool vllm = in.engine == Engine::Vllm;
    const EngineVersion& version = *engineVersionOf(sc);
    sv.engineVersion = version.name;
    // Logits are gathered to the full vocabulary on every tensor-parallel rank of the last stage.
    sv.flashinferSampler = in.flashinferSampler && version.flashinferSamplerBytes > 0;
    const double samplerBytes = sv.flashinferSampler ? version.flashinferSamplerBytes : version.samplerBytes;
    const double sampler = st.last ? static_cast<double>(seqs) * m.vocab * samplerBytes : 0;
    if (sampler > forward)
        st.logits = sampler;
    else
        st.activations = forward;
    st.activations += kept;
    sv.profiledBytes = std::max(forward, sampler) + kept;
    st.allocatorFraction = 0; // the engines budget allocated bytes themselves
    if (vllm) {
        // vllm/v1/worker/gpu_worker.py determine_available_memory: the budget minus weights, the
        // profiled peak and non-torch memory is the KV cache. From 0.21 the profiled peak includes the
        // CUDA graphs' estimate (engineversions.cpp); --enforce-eager (cuda_graphs false) captures none.
        // NCCL's communicators (inferenceStage: one allowance each). Where the release sets them up before
        // its start-up snapshot, a pipeline's stays outside the budget: the profile run never sends or
        // receives (engineversions.h). Tensor and expert parallelism's collectives run in the profiled
        // forward and count as non-torch memory (0.54-0.55 GiB at TP 2 in llm-d's 0.11 runs).
        const bool pipeline = c.pipelineParallel > 1;
        sv.ncclSetupBytes = version.communicatorsBeforeSnapshot && pipeline
                                ? static_cast<double>(sc.overheads.ncclBytesPerCommunicator)
                                : 0;
        // NVLS: V0's NCCL (2.21) sets its buffers up with the communicator, after V0's snapshot; from 2.22
        // NCCL connects them at the first all-reduce it runs through them, which is the profiled step's
        // when that step's all-reduce (its tokens x hidden in the compute dtype) is too large for vLLM's own
        // all-reduces, and never otherwise: no later step is larger.
        double nvls = nvlsBufferBytes(sc, version);
        if (nvls > 0 && version.ncclConnectsOnFirstUse &&
            step * m.hidden * e < vllmInHouseAllReduceBytes(computeCapability(c.gpu), c.tensorParallel))
            nvls = 0;
        sv.nvlsBytes = nvls;
        // The FlashInfer all-reduce fusion (engineversions.h), on Hopper and Blackwell only
        // (FI_ALLREDUCE_FUSION_MAX_SIZE_MB has rows for compute capability 9.0 and 10.0).
        const double cc = computeCapability(c.gpu);
        const double fusion =
            c.tensorParallel > 1 && !pipeline && cc >= 9 && cc < 11 ? version.allReduceFusionBytes : 0;
        sv.nonTorchBytes = version.nonTorchBytes + st.communication - sv.ncclSetupBytes + nvls + fusion;
        if (version.cudaGraphsInBudget && in.cudaGraphs) {
            sv.cudaGraphBytes = in.cudaGraphBytes >= 0 ? in.cudaGraphBytes : version.defaultCudaGraphBytes;
            // VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 (envs.py; gpu_worker.py determine_available_memory
            // then adds no estimate to the profiled peak): the pool is sized as before 0.21 and the graphs,
            // captured after it (capture_model), hold their memory beyond the budget.
            sv.cudaGraphsBeyondBudget = !in.cudaGraphEstimate;
        }
        // The rotary tables vLLM's get_rope caches (ModelSpec::ropeCacheRows), whole on every GPU of a stage
        // with attention layers, in the model's dtype: buffers, which "Model loading took" counts. Llama 4
        // Scout's 10,485,760 positions x 128 in bf16 are 2.5 GiB a GPU.
        if (m.known && st.layers > 0) {
            sv.ropeCacheBytes = m.ropeCacheRows * m.ropeCacheDim * (in.weightBytes >= 4 ? 4.0 : 2.0);
            st.weights += sv.ropeCacheBytes;
        }
        // The stacked bar's non-torch part is all the GPU holds outside PyTorch besides the context.
        st.communication = sv.nonTorchBytes + sv.ncclSetupBytes;
        sv.budgetFraction = in.gpuMemoryUtilization;
        sv.budgetBaseBytes = capacity;
        sv.budgetBytes = sv.budgetFraction * sv.budgetBaseBytes;
        if (version.checksFreeAtStartup)
            sv.freeAtStartupBytes = std::max(1.0, capacity - st.cudaContext - sv.ncclSetupBytes);
        sv.availableBytes = sv.budgetBytes - st.weights - sv.profiledBytes - sv.nonTorchBytes -
                            (sv.cudaGraphsBeyondBudget ? 0 : sv.cudaGraphBytes);
    } else {
        // SGLang's profile_max_num_token: rest = free memory after loading the weights - total x (1 -
        // mem_fraction_static), where "total" is what init_torch_distributed measured free once the CUDA
        // context and NCCL's communicators existed (model_runner.py: min_per_gpu_memory). So the fraction
        // applies to that, and the weights come out of it.
        // NVLS, where --enable-nccl-nvls turns it on: torch 2.5's NCCL (2.21) sets it up with the
        // communicator, before SGLang measures what is free.
        sv.nvlsBytes = nvlsBufferBytes(sc, version);
        st.communication += sv.nvlsBytes;
        sv.nonTorchBytes = st.communication;
        sv.budgetFraction = sglangStaticFraction(sc);
        sv.budgetBaseBytes = capacity - st.cudaContext - st.communication;
        sv.budgetBytes = sv.budgetFraction * sv.budgetBaseBytes;
        // SGLang measures what its load used as free memory lost (torch.cuda.mem_get_info after
        // empty_cache), which counts the caching allocator's segments, not the tensors in them.
        sv.loadReservedBytes = loadReservedBytes(sc, st.firstLayer, st.layers, st.firstLayer == 0, st.last);
        st.reservedExtra += sv.loadReservedBytes;
        sv.availableBytes = sv.budgetBytes - st.weights - sv.loadReservedBytes;
    }
    const int block = std::max(1, in.kvBlockSize);
    // A linear-attention layer's state per request as vLLM keeps it: both parts in the model's dtype
    // (mamba_cache_dtype and mamba_ssm_cache_dtype "auto", vllm/model_executor/layers/mamba/mamba_utils.py),
    // unless --mamba-ssm-cache-dtype names the recurrent state's, or a model's hook does: NemotronH's, the
    // checkpoint's mamba_ssm_cache_dtype, else the release's default; Qwen3.5's
    // (vllm/model_executor/models/config.py, and qwen3_5.py get_mamba_state_dtype_from_config), the
    // checkpoint's mamba_ssm_dtype. SGLang 0.5 keeps the recurrent state in float32 unless said otherwise,
    // the convolution's in bf16.
    int ssm = 0; // bytes per recurrent element; 0: as the shape has it (the model's dtype)
    if (!vllm && version.sglangStatePool)
        // mamba2_state_dtype (python/sglang/srt/configs/mamba_utils.py): SGLANG_MAMBA_SSM_DTYPE, else the
        // config's mamba_ssm_dtype (Qwen3.5's, in text_config), else float32.
        ssm = in.mambaSsmCacheBytes > 0                  ? in.mambaSsmCacheBytes
              : m.isQwen35() && m.mambaSsmCacheBytes > 0 ? m.mambaSsmCacheBytes
                                                         : 4;
    else if (vllm && m.vllmTakesSsmDtype()) {
        ssm = in.mambaSsmCacheBytes > 0 ? in.mambaSsmCacheBytes : m.mambaSsmCacheBytes;
        if (ssm == 0 && m.modelType == "nemotron_h")
            ssm = version.nemotronHSsmCacheBytes;
    }
    const double linearStateBytes =
        ssm > 0 ? e * shape.linearConvElements + ssm * shape.linearRecurrentElements : shape.linearStateBytes;
    sv.stateBytesPerRequest = shape.linearLayers * linearStateBytes;
    const LinearStateLayers linear{shape.linearLayers, linearStateBytes};
    // Chunked local attention (Llama 4): pooled apart where the release's hybrid allocator takes such layers
    // (engineversions.h), else cached in full like every other layer.
    const bool chunkedInFull = m.chunkedAttention && !poolsChunkedLayers(version, in);
    const bool chunkedApart = m.chunkedAttention && !chunkedInFull;
    const int pooledFull = chunkedInFull ? fullLayers + slidingLayers : fullLayers;
    const int pooledLocal = chunkedInFull ? 0 : slidingLayers;
    // SGLang 0.5's state pool comes first (model_runner_kv_cache_mixin.py, the ratio-based branch when
    // neither --max-mamba-cache-size nor --disable-radix-cache with --max-running-requests is given): its
    // budget is ratio / (1 + ratio) of the rest, in whole requests' states; the KV pool gets what is left.
    double kvAvailable = sv.availableBytes;
    if (!vllm && version.sglangStatePool && shape.linearLayers > 0 && sv.stateBytesPerRequest > 0 &&
        sv.availableBytes > 0) {
        const double ratio = in.mambaFullMemoryRatio;
        const double slots = std::floor(sv.availableBytes * ratio / (1 + ratio) / sv.stateBytesPerRequest);
        sv.stateSlots = static_cast<long long>(std::min(slots, 1e15));
        kvAvailable -= static_cast<double>(sv.stateSlots) * sv.stateBytesPerRequest;
    }
    KvPool pool =
        vllm ? vllmKvPool(sv.availableBytes, kvLayerBytes, pooledFull, pooledLocal, block, sv.requestLength,
                          m.slidingWindow, step, linear,
                          {version.tokensFromConcurrency, version.linearPagesPerRequest, chunkedApart})
             : sglangKvPool(kvAvailable, kvLayerBytes, fullLayers + slidingLayers, block, sv.requestLength);
    if (sv.stateSlots > 0) {
        // A running request needs state slots as well as its tokens: _resolve_max_num_reqs caps the
        // requests at max_mamba_cache_size // _calculate_mamba_ratio(), 3 with the radix cache and the
        // default no_buffer strategy (the slot being computed and what the radix cache keeps of it). The
        // pool on the GPU holds both kinds.
        constexpr double kSlotsPerRunningRequest = 3; // MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO
        pool.maxConcurrency = std::min(
            pool.maxConcurrency, std::floor(static_cast<double>(sv.stateSlots) / kSlotsPerRunningRequest));
        pool.poolBytes += static_cast<double>(sv.stateSlots) * sv.stateBytesPerRequest;
    }
    sv.blockSize = pool.blockSize > 0 ? pool.blockSize : block;
    sv.numBlocks = pool.numBlocks;
    sv.blockBytes = pool.blockBytes;
    sv.poolBytes = pool.poolBytes;
    sv.kvCacheTokens = pool.tokens;
    sv.maxConcurrency = pool.maxConcurrency;
    st.kvCache = sv.poolBytes;
}

} // namespace headroom
