// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/estimatejson.h"

#include "core/checkednumbers.h"
#include "core/compare/trackrecord.h"
#include "core/plan/settingnames.h"

#include <cmath>

namespace headroom {

using nlohmann::json;

// Saturating: a plan past 8 EiB (a million-token context at batch 4,096 keeps 2^64 bytes of scores) is
// written as the most an int64 holds, not as whatever llround leaves when the value does not fit (it wrote
// -9223372036854775808).
static long long bytes(double b) {
    return clampToInt64(std::round(b));
}

json breakdownToJson(const Breakdown& b) {
    json out = json::object();
    for (std::size_t i = 0; i < kCategoryCount; ++i)
        out[categoryKey(categoryAt(i))] = bytes(b.bytes[i]);
    return out;
}

// peak_bytes is the sum of the rounded categories so that the document adds up exactly.
static long long roundedTotal(const json& perGpu) {
    long long t = 0;
    for (const auto& [k, v] : perGpu.items())
        t = saturatingAdd(t, v.get<long long>());
    return t;
}

json estimateToJson(const Scenario& sc, const Estimate& est) {
    json out;
    out["schema"] = kEstimateSchema;
    out["mode"] = est.mode == Mode::Training ? "training" : "inference";
    out["name"] = sc.name;
    out["model"] = sc.modelLabel;
    out["parameters"] = est.parameters;
    out["active_parameters"] = est.activeParameters;
    if (est.mode == Mode::Training)
        out["trainable_parameters"] = est.trainableParameters;
    if (est.frozenWeightBytes() > 0) // fine-tuning: the weights split into the frozen base and what trains
        out["frozen_weight_bytes"] = bytes(est.frozenWeightBytes());
    out["per_gpu_bytes"] = breakdownToJson(est.perGpu);
    const long long peak = roundedTotal(out["per_gpu_bytes"]);
    const long long capacity = bytes(est.capacityBytes);
    out["peak_bytes"] = peak;
    // What PyTorch's own counters would report at the peak (torch.cuda.max_memory_allocated and
    // max_memory_reserved): frameworks log one or the other, never the CUDA context or NCCL.
    out["allocated_peak_bytes"] = bytes(est.allocatedPeakBytes);
    out["reserved_peak_bytes"] = bytes(est.reservedPeakBytes);
    if (est.wrappedReservedBytes() > 0) // FSDP1 with a PEFT model: reserved once wrapped, before any step
        out["wrapped_reserved_bytes"] = bytes(est.wrappedReservedBytes());
    if (est.eagerBlocksExcessBytes() > 0) // torchtitan's eager blocks: the fitted part of the overhead
        out["fitted_eager_blocks_bytes"] = bytes(est.eagerBlocksExcessBytes());
    out["capacity_bytes"] = capacity;
    // A paged optimizer's states beyond the GPU's room live in host memory (Estimate::pagedToHostBytes):
    // the rest must fit.
    const long long pagedToHost = bytes(est.pagedToHostBytes);
    out["headroom_bytes"] = capacity - peak;
    out["paged_to_host_bytes"] = pagedToHost;
    // An engine also needs room in its pool for one request of the longest length it accepts. With paged
    // states in host memory the estimate's own answer (the rest of the peak fits), not a difference of
    // rounded totals.
    out["fits"] = (pagedToHost > 0 ? est.fits : peak <= capacity) && (!est.serving.engine || est.fits);
    out["max_micro_batch_size"] = est.maxMicroBatchSize;
    if (est.mode == Mode::Training) {
        // How the scenario's framework profile has held against the runs the project checks (null where no
        // run checks it): errors are |planned / measured - 1|.
        json record = nullptr;
        if (const TrackRecord* r = trackRecordOf(sc.training.framework))
            record = {{"framework", nameOf(frameworkNames(), r->framework)},
                      {"validate_runs", r->validateRuns},
                      {"validate_median_abs_error", r->validateMedian},
                      {"validate_worst_abs_error", r->validateWorst},
                      {"fit_runs", r->fitRuns},
                      {"fit_median_abs_error", r->fitMedian},
                      {"counters", r->counters}};
        if (sc.calibration.present) {
            // How plans calibrated on recorded runs of the same code have held (all profiles).
            const CalibrationTrackRecord& c = calibrationTrackRecord();
            if (record.is_null())
                record = json::object();
            record["calibrated"] = {{"validate_runs", c.validateRuns},
                                    {"validate_median_abs_error", c.validateMedian},
                                    {"validate_worst_abs_error", c.validateWorst},
                                    {"fit_runs", c.fitRuns},
                                    {"fit_median_abs_error", c.fitMedian}};
        }
        out["track_record"] = std::move(record);
    } else if (est.serving.engine) {
        // A serving engine's plans against the start-up logs: the KV pool's error, and how many runs had
        // every part of the budget within its bound.
        json record = nullptr;
        if (const ServingTrackRecord* r = servingTrackRecordOf(sc.inference.engine))
            record = {{"engine", nameOf(engineNames(), r->engine)},
                      {"validate_runs", r->validateRuns},
                      {"validate_within_bounds", r->validateWithin},
                      {"validate_pool_median_abs_error", r->validatePoolMedian},
                      {"validate_pool_worst_abs_error", r->validatePoolWorst},
                      {"fit_runs", r->fitRuns},
                      {"fit_within_bounds", r->fitWithin},
                      {"fit_pool_median_abs_error", r->fitPoolMedian}};
        out["track_record"] = std::move(record);
    }
    out["peak_phase"] = phaseName(est.peakPhase);
    out["most_loaded_stage"] = est.mostLoadedStage;
    json ranks = json::array();
    for (const auto& r : est.ranks) {
        json j;
        j["stage"] = r.stage;
        j["first_layer"] = r.firstLayer;
        j["layers"] = r.layers;
        j["per_gpu_bytes"] = breakdownToJson(r.peak);
        j["peak_bytes"] = roundedTotal(j["per_gpu_bytes"]);
        j["peak_phase"] = phaseName(r.peakPhase);
        j["in_flight_micro_batches"] = r.inFlightMicroBatches;
        j["allocated_peak_bytes"] = bytes(r.allocatedBytes);
        j["reserved_peak_bytes"] = bytes(r.reservedBytes);
        if (sc.mode == Mode::Training)
            j["allocated_before_step_bytes"] = bytes(r.allocatedBeforeStepBytes);
        if (r.frozenWeightBytes > 0)
            j["frozen_weight_bytes"] = bytes(r.frozenWeightBytes);
        if (r.wrappedReservedBytes > 0)
            j["wrapped_reserved_bytes"] = bytes(r.wrappedReservedBytes);
        if (r.eagerBlocksExcessBytes > 0)
            j["fitted_eager_blocks_bytes"] = bytes(r.eagerBlocksExcessBytes);
        ranks.push_back(std::move(j));
    }
    out["ranks"] = std::move(ranks);
    const auto& c = sc.cluster;
    out["parallelism"] = {{"gpus", c.numGpus},
                          {"data", est.dataParallelSize},
                          {"tensor", c.tensorParallel},
                          {"pipeline", c.pipelineParallel},
                          {"context", c.contextParallel},
                          {"expert", c.expertParallel},
                          {"data_parallel", c.dataParallelName}};
    if (c.offloadOptimizer || c.offloadParameters || est.offload.cpuBytesPerGpu > 0)
        out["offload"] = {{"cpu_bytes_per_gpu", bytes(est.offload.cpuBytesPerGpu)},
                          {"host_to_device_bytes_per_step", bytes(est.offload.hostToDeviceBytes)},
                          {"device_to_host_bytes_per_step", bytes(est.offload.deviceToHostBytes)},
                          {"pcie_seconds_per_step", est.offload.secondsPerStep}};
    if (est.mode == Mode::Inference) {
        const ServingEstimate& sv = est.serving;
        json inf = {{"kv_bytes_per_token", bytes(sv.kvBytesPerToken)},
                    {"state_bytes_per_request", bytes(sv.stateBytesPerRequest)},
                    {"kv_cache_tokens", sv.kvCacheTokens},
                    {"max_concurrency", std::round(sv.maxConcurrency * 100) / 100},
                    {"request_length", sv.requestLength},
                    {"weight_storage", weightsStayQuantised(sc) ? sc.model.quantization.label()
                                       : sc.inference.weightDtype == "checkpoint"
                                           ? std::string("bf16")
                                           : sc.inference.weightDtype}};
        if (sv.engine) {
            inf["engine"] = sc.inference.engine == Engine::Vllm ? "vllm" : "sglang";
            inf["engine_version"] = sv.engineVersion;
            inf["cuda_graph_bytes"] = bytes(sv.cudaGraphBytes);
            inf["cuda_graphs_in_budget"] = sv.cudaGraphBytes > 0 && !sv.cudaGraphsBeyondBudget;
            if (sv.stateSlots > 0)
                inf["state_slots"] = sv.stateSlots;
            inf["budget_bytes"] = bytes(sv.budgetBytes);
            inf["profiled_step_bytes"] = bytes(sv.profiledBytes);
            inf["non_torch_bytes"] = bytes(sv.nonTorchBytes);
            inf["nccl_setup_bytes"] = bytes(sv.ncclSetupBytes);
            inf["nvls_bytes"] = bytes(sv.nvlsBytes);
            inf["rope_cache_bytes"] = bytes(sv.ropeCacheBytes);
            inf["load_reserved_bytes"] = bytes(sv.loadReservedBytes);
            if (sv.freeAtStartupBytes > 0)
                inf["free_at_startup_bytes"] = bytes(sv.freeAtStartupBytes);
            inf["available_kv_bytes"] = bytes(sv.availableBytes);
            inf["kv_pool_bytes"] = bytes(sv.poolBytes);
            inf["num_blocks"] = sv.numBlocks;
            inf["block_size"] = sv.blockSize;
            inf["step_tokens"] = sv.stepTokens;
            inf["max_num_seqs"] = sv.maxNumSeqs;
        }
        out["inference"] = std::move(inf);
    }
    out["warnings"] = est.warnings;
    return out;
}

json savingsToJson(const std::vector<Saving>& savings) {
    json out = json::array();
    for (const auto& s : savings)
        out.push_back({{"id", s.id},
                       {"description", s.description},
                       {"bytes_saved", bytes(s.bytesSaved)},
                       {"peak_bytes_after", bytes(s.peakAfter)},
                       {"fits_after", s.fitsAfter},
                       {"patch", s.patch}});
    for (std::size_t i = 0; i < savings.size(); ++i)
        if (savings[i].serving) {
            out[i]["kv_cache_tokens_after"] = savings[i].kvTokensAfter;
            out[i]["kv_cache_tokens_gained"] = savings[i].kvTokensGained;
            out[i]["max_concurrency_after"] = std::round(savings[i].concurrencyAfter * 100) / 100;
        }
    return out;
}

} // namespace headroom
