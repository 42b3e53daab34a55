// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/serve/estimate.h"

#include "core/error.h"
#include "core/plan/gpucatalogue.h"
#include "core/plan/layout.h"
#include "core/plan/solvers.h"
#include "core/serve/engines.h"
#include "core/serve/engineversions.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

namespace headroom {

using nlohmann::json;

Estimate estimate(const Scenario& sc) {
    return estimateWith(sc, &sizeEngine);
}

Estimate estimatePeak(const Scenario& sc) {
    return estimatePeakWith(sc, &sizeEngine);
}

std::vector<TimelinePoint> phaseTimeline(const Scenario& sc, int stage, int pointsPerPhase) {
    return phaseTimelineWith(sc, &sizeEngine, stage, pointsPerPhase);
}

long long maxSequenceLength(const Scenario& sc, long long limit) {
    return maxSequenceLength(sc, &estimatePeak, limit);
}

namespace {

// Changes to a serving engine's settings; each is judged by the requests it lets run at once.
std::vector<Change> engineChanges(const Scenario& sc, const Estimate& est) {
    std::vector<Change> out = inferenceChanges(sc);
    const auto& in = sc.inference;
    const EngineVersion* version = engineVersionOf(sc);
    // Batch and attention kind are not the engine's: it batches up to max_num_seqs and uses FlashAttention.
    // FP8 weights only where the release loads them on this GPU (engineversions.h).
    const bool fp8Runs = !version || computeCapability(sc.cluster.gpu) >= version->fp8WeightsMinCapability;
    out.erase(std::remove_if(out.begin(), out.end(),
                             [fp8Runs](const Change& c) {
                                 return c.id == "halve_batch" || c.id == "flash_attention" ||
                                        (c.id == "fp8_weights" && !fp8Runs);
                             }),
              out.end());
    // A budget larger than what is free at start-up: the highest utilisation that starts.
    if (est.serving.refusedAtStartup()) {
        const double to =
            std::floor(est.serving.freeAtStartupBytes / est.serving.budgetBaseBytes * 100) / 100;
        out.push_back(
            {"lower_gpu_memory_utilization",
             "gpu_memory_utilization " + std::to_string(to).substr(0, 4) + " (what is free at start-up)",
             {{"inference", {{"gpu_memory_utilization", to}}}},
             [to](Scenario& s) { s.inference.gpuMemoryUtilization = to; }});
    } else if (in.engine == Engine::Vllm && in.gpuMemoryUtilization < 0.95) {
        const double to = std::min(0.95, std::round((in.gpuMemoryUtilization + 0.05) * 100) / 100);
        out.push_back({"raise_gpu_memory_utilization",
                       "gpu_memory_utilization " + std::to_string(to).substr(0, 4),
                       {{"inference", {{"gpu_memory_utilization", to}}}},
                       [to](Scenario& s) { s.inference.gpuMemoryUtilization = to; }});
    }
    if (in.engine == Engine::Sglang) {
        const double current = est.serving.budgetFraction; // given, or SGLang's default
        if (current < 0.93) {
            const double to = std::min(0.93, std::round((current + 0.03) * 100) / 100);
            out.push_back({"raise_mem_fraction_static",
                           "mem_fraction_static " + std::to_string(to).substr(0, 4),
                           {{"inference", {{"mem_fraction_static", to}}}},
                           [to](Scenario& s) { s.inference.memFractionStatic = to; }});
        }
    }
    // From vLLM 0.21 the CUDA graphs' estimate comes out of the pool's budget: --enforce-eager gives it
    // back, at the cost of decoding speed.
    if (in.engine == Engine::Vllm && in.cudaGraphs && est.serving.cudaGraphBytes > 0)
        out.push_back({"enforce_eager",
                       "--enforce-eager: no CUDA graphs (slower decoding)",
                       {{"inference", {{"cuda_graphs", false}}}},
                       [](Scenario& s) { s.inference.cudaGraphs = false; }});
    // The same release with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 sizes the pool without the graphs'
    // estimate and captures them beyond the budget: more tokens, while the GPU has the room above
    // gpu_memory_utilization for them (the estimate is the engine's, and its own log compares it with what
    // the capture took).
    if (in.engine == Engine::Vllm && est.serving.cudaGraphBytes > 0 && !est.serving.cudaGraphsBeyondBudget)
        out.push_back({"cuda_graph_estimate_off",
                       "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 (graphs past the budget)",
                       {{"inference", {{"cuda_graph_estimate", false}}}},
                       [](Scenario& s) { s.inference.cudaGraphEstimate = false; }});
    // SGLang 0.5 splits a hybrid model's rest between its state pool and its KV pool by
    // --mamba-full-memory-ratio: half the ratio gives long requests more tokens, twice it short ones more
    // states (only a change that serves more is listed).
    if (est.serving.stateSlots > 0)
        for (const double to : {in.mambaFullMemoryRatio / 2, in.mambaFullMemoryRatio * 2}) {
            const double r = std::round(to * 100) / 100;
            std::ostringstream text; // 0.45, 1.8: as few digits as the value needs
            text << r;
            out.push_back(
                {r < in.mambaFullMemoryRatio ? "lower_mamba_full_memory_ratio"
                                             : "raise_mamba_full_memory_ratio",
                 "mamba_full_memory_ratio " + text.str() +
                     (r < in.mambaFullMemoryRatio ? " (more KV cache, fewer states)" : " (more states)"),
                 {{"inference", {{"mamba_full_memory_ratio", r}}}},
                 [r](Scenario& s) { s.inference.mambaFullMemoryRatio = r; }});
        }
    // NCCL's NVLink SHARP buffers go with NCCL_NVLS_ENABLE=0, at the cost of large all-reduces' speed.
    if (est.serving.nvlsBytes > 0)
        out.push_back({"disable_nccl_nvls",
                       "NCCL_NVLS_ENABLE=0 (slower large all-reduces)",
                       {{"inference", {{"nccl_nvls", false}}}},
                       [](Scenario& s) { s.inference.ncclNvls = 0; }});
    // vLLM's hybrid allocator pools chunked-attention layers apart where the environment allows it (0.11
    // turned it off by default for a latency regression, vllm #21761); V0 has no hybrid allocator.
    if (sc.model.chunkedAttention && version && hasHybridAllocator(*version) &&
        !poolsChunkedLayers(*version, in))
        out.push_back({"pool_chunked_layers",
                       "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1",
                       {{"inference", {{"chunked_layers", "pooled"}}}},
                       [](Scenario& s) { s.inference.poolChunkedLayers = 1; }});
    if (in.engine == Engine::Vllm && est.serving.maxNumSeqs > 256)
        out.push_back({"max_num_seqs_256",
                       "max_num_seqs 256 (a smaller sampler step to profile)",
                       {{"inference", {{"max_num_seqs", 256}}}},
                       [](Scenario& s) { s.inference.maxNumSeqs = 256; }});
    // V0 (vllm 0.8) refuses a step smaller than max_model_len unless chunked prefill is on, which it turns
    // on by itself only past 32K tokens, where the step is 2,048 already (engines.cpp engineStepTokens).
    if (est.serving.stepTokens > 2048 && !(version && version->stepDefaults == StepDefaults::V0))
        out.push_back({"max_num_batched_tokens_2048",
                       "max_num_batched_tokens 2048 (smaller prefill chunks)",
                       {{"inference", {{"max_num_batched_tokens", 2048}}}},
                       [](Scenario& s) { s.inference.maxNumBatchedTokens = 2048; }});
    const int len = in.requestLength();
    if (len >= 2048 && in.engine == Engine::Sglang) // SGLang's name for it: --context-length
        out.push_back({"halve_max_model_len",
                       "context_length " + std::to_string(len / 2),
                       {{"inference", {{"context_length", len / 2}}}},
                       [len](Scenario& s) {
                           s.inference.contextLength = len / 2;
                           if (s.inference.maxModelLen > 0)
                               s.inference.maxModelLen = len / 2;
                       }});
    else if (len >= 2048)
        out.push_back({"halve_max_model_len",
                       "max_model_len " + std::to_string(len / 2),
                       {{"inference", {{"max_model_len", len / 2}}}},
                       [len](Scenario& s) { s.inference.maxModelLen = len / 2; }});
    return out;
}

} // namespace

std::vector<Saving> rankSavings(const Scenario& sc) {
    if (sc.mode != Mode::Inference ||
        (sc.inference.engine != Engine::Vllm && sc.inference.engine != Engine::Sglang))
        return rankPlanSavings(sc, &estimatePeak);
    const Estimate current = estimate(sc);
    const double before = current.peakBytes;
    std::vector<Saving> out;
    const Scenario base = sc.settingsCopy();
    // An engine that does not start serves nothing.
    const auto served = [](const Estimate& e) {
        return e.serving.refusedAtStartup() ? 0.0 : e.serving.maxConcurrency;
    };
    const auto tokens = [](const Estimate& e) {
        return e.serving.refusedAtStartup() ? 0LL : e.serving.kvCacheTokens;
    };
    {
        for (auto& ch : engineChanges(sc, current)) {
            Scenario changed = base;
            ch.edit(changed);
            try {
                checkLayout(changed);
            } catch (const Error&) {
                continue;
            }
            Estimate after = estimate(changed);
            // An engine that serves nothing (its weights past its budget) may need more than one doubling of
            // tensor parallelism: the smallest power of two that serves is the change, where the table
            // stayed empty (Qwen3-235B in FP8 blocks on one H100 under SGLang, 220 GiB of weights: tensor
            // parallel 2 serves nothing, 4 does).
            if (ch.id == "double_tensor_parallel" && served(current) <= 0 && served(after) <= 0) {
                const int from = sc.cluster.tensorParallel;
                for (int tp = 4 * from; tp <= 64 && sc.model.heads % tp == 0; tp *= 2) {
                    Scenario wider = base;
                    wider.cluster.tensorParallel = tp;
                    setNumGpus(wider.cluster, sc.cluster.numGpus / from * tp);
                    try {
                        checkLayout(wider);
                    } catch (const Error&) {
                        break;
                    }
                    const Estimate e = estimate(wider);
                    if (served(e) <= 0)
                        continue;
                    ch.id = "tensor_parallel_that_serves";
                    ch.description = "Tensor parallel " + std::to_string(tp);
                    ch.patch = {{"cluster", {{"tensor_parallel", tp}, {"num_gpus", wider.cluster.numGpus}}}};
                    after = e;
                    break;
                }
            }
            const double gain = served(after) - served(current);
            // A change that takes the GPU past its memory (graphs beyond the budget) serves nothing.
            if (gain <= 1e-9 || (current.fits && !after.fits))
                continue;
            Saving s{ch.id, ch.description, ch.patch, before - after.peakBytes, after.peakBytes, after.fits};
            s.serving = true;
            s.kvTokensAfter = after.serving.kvCacheTokens;
            s.kvTokensGained = tokens(after) - tokens(current);
            s.concurrencyAfter = after.serving.maxConcurrency;
            s.concurrencyGained = gain;
            out.push_back(std::move(s));
        }
        std::stable_sort(out.begin(), out.end(), [](const Saving& a, const Saving& b) {
            return a.concurrencyGained > b.concurrencyGained;
        });
        return out;
    }
    return out;
}

std::vector<ServingPoint> servingCurve(const Scenario& sc, int count) {
    std::vector<ServingPoint> out;
    if (sc.mode != Mode::Inference)
        return out;
    Scenario probe = sc.settingsCopy();
    const long long current = sc.inference.requestLength();
    const long long modelMax = sc.model.known && sc.model.maxPositions > 0 ? sc.model.maxPositions : 131072;
    const double lo = 1024;
    const double hi =
        static_cast<double>(std::min<long long>(1 << 22, std::max({2 * current, modelMax, 2048LL})));
    count = std::max(2, count);
    for (int i = 0; i < count; ++i) {
        const long long len =
            std::llround(std::exp2(std::log2(lo) + (std::log2(hi) - std::log2(lo)) * i / (count - 1)));
        if (!out.empty() && len <= out.back().requestLength)
            continue;
        probe.inference.contextLength = static_cast<int>(len);
        if (probe.inference.maxModelLen > 0)
            probe.inference.maxModelLen = static_cast<int>(len);
        const Estimate e = estimate(probe);
        ServingPoint p;
        p.requestLength = len;
        if (e.serving.engine) {
            p.kvTokens = e.serving.kvCacheTokens;
            p.maxConcurrency = e.serving.maxConcurrency;
        } else {
            p.maxConcurrency = static_cast<double>(e.maxMicroBatchSize);
            p.kvTokens = e.maxMicroBatchSize * len;
        }
        out.push_back(p);
    }
    return out;
}

} // namespace headroom
