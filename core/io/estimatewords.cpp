// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/estimatewords.h"

#include "core/compare/trackrecord.h"

#include <algorithm>
#include <cstdio>

namespace headroom {

namespace {

std::string fixed(double v, int decimals) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, v);
    return text;
}

} // namespace

EstimateWords describeEstimate(const Scenario& sc, const Estimate& est, ByteUnit unit,
                               const std::function<std::string(const std::string&)>& strongOf) {
    const auto strong = [&](const std::string& s) { return strongOf ? strongOf(s) : s; };
    const auto bytes = [&](double b) { return formatBytes(b, unit); };
    const auto count = [](long long n) {
        return formatCount(static_cast<unsigned long long>(std::max(0LL, n)));
    };
    EstimateWords w;
    const double used = est.capacityBytes > 0 ? 100.0 * est.peakBytes / est.capacityBytes : 0;
    const ServingEstimate& sv = est.serving;
    if (est.fits && est.pagedToHostBytes > 0)
        // The GPU full, the paged optimizer's states beyond it in host memory, paged in for each step.
        w.verdict = "Fits with the GPU full: " + bytes(est.pagedToHostBytes) +
                    " of the paged optimizer's states in host memory (" + fixed(used, 1) + "% of " +
                    bytes(est.capacityBytes) + " asked)";
    else if (est.fits)
        w.verdict = "Fits: " + bytes(est.headroomBytes()) + " headroom (" + fixed(used, 1) + "% of " +
                    bytes(est.capacityBytes) + " used)";
    else if (sv.refusedAtStartup())
        w.verdict = "Does not fit: vLLM refuses to start (" + bytes(sv.freeAtStartupBytes) +
                    " free at start-up, budget " + bytes(sv.budgetBytes) + ")";
    else if (sv.engine && est.headroomBytes() >= 0) // the engine runs within its budget; its pool fails
        w.verdict = sv.availableBytes <= 0 ? "Does not fit: no memory left for the KV cache (" +
                                                 bytes(-sv.availableBytes) + " short)"
                    // SGLang starts and caps a request's input at the pool (scheduler.py: max_req_input_len =
                    // min(context_len - 1, max_total_num_tokens - 1)); vLLM refuses to start.
                    : sc.inference.engine == Engine::Sglang
                        ? "Does not fit: SGLang caps requests at " + count(sv.kvCacheTokens - 1) +
                              " tokens (its KV pool), not " + count(sv.requestLength)
                        : "Does not fit: the KV cache holds " + count(sv.kvCacheTokens) +
                              " tokens, less than one " + count(sv.requestLength) + "-token request";
    else
        w.verdict = "Does not fit: over by " + bytes(-est.headroomBytes()) + " (" + fixed(used, 1) + "% of " +
                    bytes(est.capacityBytes) + ")";

    const auto& c = sc.cluster;
    const std::string layout =
        sc.mode == Mode::Training
            ? "data " + std::to_string(est.dataParallelSize) + " (" + c.dataParallelName + ") × tensor " +
                  std::to_string(c.tensorParallel) + " × pipeline " + std::to_string(c.pipelineParallel) +
                  " × context " + std::to_string(c.contextParallel)
            : "tensor " + std::to_string(c.tensorParallel) + " × pipeline " +
                  std::to_string(c.pipelineParallel);
    if (sc.mode == Mode::Training) {
        w.record = trackRecordText(sc.training.framework);
        if (sc.calibration.present)
            w.record.append("\n").append(calibrationTrackRecordText());
    } else if (sv.engine && sc.inference.engine != Engine::HuggingFace)
        w.record = servingTrackRecordText(sc.inference.engine);
    w.setup = sc.modelLabel + " — " + std::to_string(c.numGpus) + " × " + c.gpu + ", " + layout;

    std::string& l = w.limits;
    l = (sc.mode == Mode::Training ? "largest micro-batch that fits: " : "largest batch that fits: ") +
        strong(std::to_string(est.maxMicroBatchSize));
    if (sv.engine)
        // The release whose rules sized it: the engines' budgets change between releases.
        l = std::string(sc.inference.engine == Engine::Vllm ? "vLLM" : "SGLang") + " (" + sv.engineVersion +
            ") KV cache: " + strong(count(sv.kvCacheTokens) + " tokens") + " — " +
            strong(fixed(sv.maxConcurrency, 2)) + " requests of " + count(sv.requestLength) +
            " tokens at once";
    else if (sc.mode == Mode::Inference && sc.inference.framework == Framework::Cs336Basics)
        l += " — no KV cache: cs336_basics runs one forward over each sequence";
    else if (sc.mode == Mode::Inference && sc.inference.gradEnabled)
        l += " — no KV cache: a forward with autograd on keeps what a training forward saves";
    else if (sc.mode == Mode::Inference && !sc.inference.kvCache)
        l.append(" — no KV cache: one forward over each sequence (inference.kv_cache false)");
    else if (sc.keepsNoKvCache())
        l += " — no KV cache: the forward-only runs it was calibrated on kept none";
    else if (sc.mode == Mode::Inference)
        l += " — KV cache " + count(sv.kvCacheTokens) + " tokens, " +
             count(static_cast<long long>(sv.kvBytesPerToken)) + " bytes per token";
    if (sc.mode == Mode::Training)
        // What the user's own logs show: frameworks print PyTorch's counters, which leave out the CUDA
        // context and NCCL (torchtitan and torchtune: reserved; Megatron: allocated).
        l += " — PyTorch would report " + bytes(est.allocatedPeakBytes) + " allocated, " +
             bytes(est.reservedPeakBytes) + " reserved" +
             (est.wrappedReservedBytes() > 0 ? " (" + bytes(est.wrappedReservedBytes()) + " once wrapped)"
                                             : std::string());
    if (c.offloadOptimizer || c.offloadParameters || est.offload.cpuBytesPerGpu > 0)
        l += " — offload moves " +
             bytes(std::max(est.offload.hostToDeviceBytes, est.offload.deviceToHostBytes)) +
             " over PCIe per step (" + fixed(est.offload.secondsPerStep, 2) + " s)";
    return w;
}

} // namespace headroom
