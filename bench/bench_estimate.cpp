// SPDX-License-Identifier: GPL-3.0-or-later
// Estimator speed: one training estimate, and a 1,000-point micro-batch sweep.
// Prints one JSON object per line (docs/formats.md section 1).
#include "bench/benchtiming.h"
#include "core/io/scenariojson.h"
#include "core/serve/estimate.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace headroom;
using bench::Clock;
using bench::median;

int main() {
    const Scenario sc = scenarioFromJson(defaultScenarioDocument());
    volatile double sink = 0;

    // One estimate: median over batches of 10,000 calls.
    std::vector<double> perCall;
    for (int rep = 0; rep < 15; ++rep) {
        const auto t0 = Clock::now();
        for (int i = 0; i < 10000; ++i)
            sink = sink + estimate(sc).peakBytes;
        perCall.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / 10000);
    }
    std::printf(
        "{\"metric\": \"estimate_ns\", \"value\": %.1f, \"unit\": \"ns\", \"detail\": \"median of 15 x 10000 "
        "estimates, default scenario (%s); target < 1000 ns\"}\n",
        median(perCall), sc.name.c_str());

    // A sweep over micro-batch size 1..points (1,000 unless said): the median of `reps` (15), in ms.
    auto sweep = [&](Scenario probe, int points = 1000, int reps = 15) {
        std::vector<double> ms;
        for (int rep = 0; rep < reps; ++rep) {
            const auto t0 = Clock::now();
            for (int b = 1; b <= points; ++b) {
                probe.training.microBatchSize = b;
                sink = sink + estimatePeak(probe).peakBytes;
            }
            ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        }
        return median(ms);
    };
    const double plain = sweep(sc);
    std::printf("{\"metric\": \"sweep_1000_ms\", \"value\": %.3f, \"unit\": \"ms\", \"detail\": \"median of "
                "15 sweeps over micro-batch 1..1000; target < 5 ms\"}\n",
                plain);
    // A LoRA plan under FSDP1 (huggingface profile): its first estimate replays the wrap through the
    // allocator's model (core/plan/fsdp1pools.h); the others find the replay kept, after listing the units
    // that key it.
    nlohmann::json doc = defaultScenarioDocument();
    doc["model"] = {{"preset", "meta-llama/Llama-2-7b-hf"}};
    doc["training"]["framework"] = "huggingface";
    doc["training"]["precision"] = "bf16";
    doc["training"]["fine_tuning"] = {{"method", "qlora"}, {"rank", 64}, {"adapter_dtype", "bf16"}};
    doc["cluster"]["num_gpus"] = 2;
    doc["cluster"]["data_parallel"] = "fsdp";
    const double fsdp1 = sweep(scenarioFromJson(doc));
    std::printf("{\"metric\": \"sweep_1000_fsdp1_qlora_ms\", \"value\": %.3f, \"unit\": \"ms\", \"detail\": "
                "\"median of 15 sweeps over micro-batch 1..1000 of Llama 2 7B QLoRA under FSDP1 (the wrap "
                "replayed); %.2f x the default scenario's sweep in this run\"}\n",
                fsdp1, fsdp1 / plain);
    // Unsloth's own layers under its offloaded checkpointing (Unsloth's default): every estimate at a new
    // micro-batch replays the step's layers through the allocator's model (core/plan/unslothreplay.h).
    nlohmann::json un = defaultScenarioDocument();
    un["model"] = {{"preset", "meta-llama/Llama-3.1-8B"}};
    un["training"]["framework"] = "unsloth";
    un["training"]["precision"] = "bf16";
    un["training"]["sequence_length"] = 4096;
    un["training"]["activation_checkpointing"] = "full";
    un["training"]["activation_offloading"] = true;
    un["training"]["fine_tuning"] = {
        {"method", "qlora"},
        {"rank", 32},
        {"target_modules", {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}}};
    const double unsloth = sweep(scenarioFromJson(un));
    std::printf("{\"metric\": \"sweep_1000_unsloth_ms\", \"value\": %.3f, \"unit\": \"ms\", \"detail\": "
                "\"median of 15 sweeps over micro-batch 1..1000 of Llama 3.1 8B QLoRA under Unsloth at 4,096 "
                "tokens (each layer replayed); %.2f x the default scenario's sweep in this run\"}\n",
                unsloth, unsloth / plain);
    // One estimate of it, layers kept on the GPU (torch's checkpointing: every layer replayed), with the
    // search for the largest micro-batch that fits, which replays each batch it tries (the allocator's
    // slack is not linear in the batch). A rank of its own each time, so that no replay is found kept.
    un["training"]["activation_offloading"] = false;
    un["cluster"]["gpu_memory_gib"] = 24;
    Scenario unslothPlan = scenarioFromJson(un);
    std::vector<double> unslothMs;
    for (int rep = 0; rep < 5; ++rep) {
        unslothPlan.training.fineTuning.rank = 40 + rep;
        const auto t0 = Clock::now();
        sink = sink + static_cast<double>(estimate(unslothPlan).maxMicroBatchSize);
        unslothMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::printf(
        "{\"metric\": \"estimate_unsloth_search_ms\", \"value\": %.3f, \"unit\": \"ms\", "
        "\"detail\": \"median of 5 estimates of Llama 3.1 8B QLoRA under Unsloth at 4,096 tokens on a "
        "24 GB GPU, inputs kept on the GPU (32 layers replayed), with the search for the largest "
        "micro-batch that fits, a replay per batch tried\"}\n",
        median(unslothMs));
    // FSDP1's step replayed after the wrap (core/plan/peftstep.h): Answer.AI's Llama 2 7B QLoRA on two 24 GB
    // GPUs, every layer checkpointed. Each micro-batch is a replay of the whole step; one full estimate
    // also searches the largest micro-batch that fits, a replay per batch tried.
    nlohmann::json step = doc;
    step["training"]["framework_version"] = "4.37";
    step["training"]["sequence_length"] = 2048;
    step["training"]["activation_checkpointing"] = "full";
    step["training"]["attention"] = "flash";
    step["training"]["fine_tuning"] = {
        {"method", "qlora"},
        {"rank", 64},
        {"alpha", 16},
        {"dropout", 0.1},
        {"adapter_dtype", "bf16"},
        {"target_modules", {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "down_proj"}}};
    step["cluster"]["gpu_memory_gib"] = 24;
    Scenario stepped = scenarioFromJson(step);
    // A rank of its own for each sweep: the estimator keeps its last 256 replays, so a repeated sweep would
    // time the lookups, not the replays.
    std::vector<double> fsdpSweeps;
    for (int rep = 0; rep < 5; ++rep) {
        stepped.training.fineTuning.rank = 64 + rep;
        fsdpSweeps.push_back(sweep(stepped, 64, 1));
    }
    const double stepSweep = median(fsdpSweeps);
    stepped.training.fineTuning.rank = 64;
    std::printf(
        "{\"metric\": \"sweep_64_fsdp1_step_ms\", \"value\": %.3f, \"unit\": \"ms\", \"detail\": "
        "\"median of 5 sweeps over micro-batch 1..64 of Llama 2 7B QLoRA under FSDP1 on 24 GB GPUs, the "
        "step replayed at each\"}\n",
        stepSweep);
    std::vector<double> ms;
    stepped.training.microBatchSize = 10;
    for (int rep = 0; rep < 5; ++rep) {
        // A rank of its own each time, so that no replay is found kept from an earlier one.
        stepped.training.fineTuning.rank = 50 + rep;
        const auto t0 = Clock::now();
        sink = sink + static_cast<double>(estimate(stepped).maxMicroBatchSize);
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::printf("{\"metric\": \"estimate_fsdp1_step_ms\", \"value\": %.3f, \"unit\": \"ms\", \"detail\": "
                "\"median of 5 estimates of the same plan at micro-batch 10 (ranks 60 to 64, none kept from "
                "before), with the search for the largest micro-batch that fits\"}\n",
                median(ms));
    // cs336_basics' forward without autograd, replayed through the allocator's model with its parameters
    // (core/plan/cs336replay.h): the 2.7B model (32 layers) at 512 tokens, fp32 under inference_mode (blocks
    // stop being replayed once the allocator's state repeats) and under autocast with torch.no_grad (every
    // block replayed, its casts kept). A sweep over batch 1..64, a replay at each; then full estimates, each
    // searching the largest batch that fits (a replay per batch tried), at lengths none was kept for.
    // Five sweeps over batch 1..`batches` at lengths from `sweepLength` on, then five full estimates at batch
    // 4 from `estimateLength` on (a length of its own each time, so that no replay is found kept from
    // before): the milliseconds of each. `batch` and `length` are the scenario's fields.
    auto replayTimes = [&](Scenario& plan, int& batch, int& length, int batches, int sweepLength,
                           int estimateLength) {
        std::vector<double> sweeps, full;
        for (int rep = 0; rep < 5; ++rep) {
            length = sweepLength + rep;
            const auto t0 = Clock::now();
            for (int b = 1; b <= batches; ++b) {
                batch = b;
                sink = sink + estimatePeak(plan).peakBytes;
            }
            sweeps.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
            batch = 4;
            length = estimateLength + rep;
            const auto t1 = Clock::now();
            sink = sink + static_cast<double>(estimate(plan).maxMicroBatchSize);
            full.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t1).count());
        }
        return std::pair{sweeps, full};
    };
    nlohmann::json cs;
    cs["schema"] = "headroom.scenario/1";
    cs["model"] = {{"model_type", "llama"},      {"vocab_size", 10000},          {"hidden_size", 2560},
                   {"intermediate_size", 10240}, {"num_hidden_layers", 32},      {"num_attention_heads", 32},
                   {"num_key_value_heads", 32},  {"tie_word_embeddings", false}, {"hidden_act", "silu"}};
    cs["inference"] = {{"framework", "cs336_basics"}, {"batch_size", 4},
                       {"context_length", 512},       {"weight_dtype", "fp32"},
                       {"attention", "eager"},        {"grad_mode", "inference_mode"}};
    cs["cluster"] = {{"gpu", "A100-80GB"}, {"num_gpus", 1}};
    for (const bool cached : {false, true}) {
        nlohmann::json d = cs;
        if (cached) {
            d["inference"]["autocast"] = "bf16";
            d["inference"]["grad_mode"] = "no_grad";
        }
        Scenario probe = scenarioFromJson(d);
        const auto [sweeps, full] =
            replayTimes(probe, probe.inference.batchSize, probe.inference.contextLength, 64, 512, 600);
        const char* what = cached ? "cs336_autocast_no_grad" : "cs336_inference_mode";
        std::printf("{\"metric\": \"sweep_64_%s_ms\", \"value\": %.3f, \"unit\": \"ms\", \"detail\": "
                    "\"median of 5 sweeps over batch 1..64 of cs336_basics' 2.7B forward at 512 tokens, "
                    "replayed at each; %.2f x the default scenario's 1,000-point sweep in this run\"}\n",
                    what, median(sweeps), median(sweeps) / plain);
        std::printf("{\"metric\": \"estimate_%s_ms\", \"value\": %.3f, \"unit\": \"ms\", \"detail\": "
                    "\"median of 5 estimates of the same forward, with the search for the largest batch that "
                    "fits\"}\n",
                    what, median(full));
    }
    // Its training step in fp32 (cs336replay.h cs336StepReplay): the same model's first AdamW step at 128
    // tokens, the forward saving what autograd keeps, the backward and the step replayed at each batch of a
    // sweep over 1..16 (past 48 it does not fit an 80 GB GPU), then full estimates with the batch search.
    nlohmann::json tr = cs;
    tr.erase("inference");
    tr["training"] = {{"framework", "cs336_basics"}, {"micro_batch_size", 4}, {"sequence_length", 128},
                      {"precision", "fp32"},         {"optimizer", "adamw"},  {"attention", "eager"},
                      {"first_step", true}};
    Scenario step336 = scenarioFromJson(tr);
    const auto [stepSweeps, stepFull] =
        replayTimes(step336, step336.training.microBatchSize, step336.training.sequenceLength, 16, 128, 160);
    std::printf(
        "{\"metric\": \"sweep_16_cs336_first_step_ms\", \"value\": %.3f, \"unit\": \"ms\", \"detail\": "
        "\"median of 5 sweeps over micro-batch 1..16 of cs336_basics' 2.7B first step at 128 tokens, "
        "fp32, replayed at each; %.2f x the default scenario's 1,000-point sweep in this run\"}\n",
        median(stepSweeps), median(stepSweeps) / plain);
    std::printf(
        "{\"metric\": \"estimate_cs336_first_step_ms\", \"value\": %.3f, \"unit\": \"ms\", \"detail\": "
        "\"median of 5 estimates of the same step, with the search for the largest micro-batch that "
        "fits\"}\n",
        median(stepFull));
    // The same step calibrated (factors as kkaitlyn111's 128-token first step measured them,
    // examples/measured/cs336-basics/): the replay still runs, on the profile's own tensors, for what the
    // allocator keeps beyond them (Calibration::replayedOverhead), so a calibrated plan costs what the
    // uncalibrated one does.
    tr["calibration"] = {{"factors",
                          {{"linear", 1.022},
                           {"quadratic", 1.125},
                           {"quadratic_activation_bytes", 4},
                           {"measured_on", "training"},
                           {"allocator_overhead_fraction", 0.115},
                           {"reserved_beyond_replay_fraction", 0.0008}}}};
    Scenario calibrated336 = scenarioFromJson(tr);
    const auto [calSweeps, calFull] = replayTimes(calibrated336, calibrated336.training.microBatchSize,
                                                  calibrated336.training.sequenceLength, 16, 128, 160);
    std::printf("{\"metric\": \"estimate_cs336_first_step_calibrated_ms\", \"value\": %.3f, \"unit\": "
                "\"ms\", \"detail\": \"median of 5 estimates of the same step calibrated (the replay of the "
                "profile's tensors beside the calibrated ones), with the search; %.2f x uncalibrated in this "
                "run\"}\n",
                median(calFull), median(calFull) / median(stepFull));
    // The same step planned as plain PyTorch and calibrated on runs of cs336_basics' code against that
    // code's own tables (Calibration::codeTables; the factors `headroom-cli calibrate` writes from the
    // medium model's two fp32 steps, examples/measured): each estimate plans a copy of the scenario with
    // cs336_basics' profile (estimator.cpp calibratedCode) and replays the code as recorded for the
    // allocator's cache, so a slider over it costs that copy besides the replay.
    nlohmann::json plainTables = tr;
    plainTables["training"]["framework"] = "pytorch";
    plainTables["training"]["optimizer_implementation"] = "for_loop";
    plainTables["calibration"] = {{"factors",
                                   {{"allocator_overhead_fraction", 0.0247},
                                    {"backward_score_scratch", 1.0},
                                    {"code", "cs336_basics"},
                                    {"code_optimizer", true},
                                    {"code_tables", true},
                                    {"held_logit_copies", 1.0},
                                    {"linear", 1.0042},
                                    {"logits", 0.9287},
                                    {"logits_measured_with", "full"},
                                    {"measured_on", "training"},
                                    {"optimizer_step_bytes_per_parameter", 0.0},
                                    {"optimizer_step_measured_with", "for_loop"},
                                    {"optimizer_step_scratch_bytes_per_parameter", 0.4842},
                                    {"optimizer_step_scratch_largest_tensors", 5.003},
                                    {"quadratic", 1.0},
                                    {"quadratic_activation_bytes", 4.0},
                                    {"reserved_beyond_replay_fraction", 0.0062},
                                    {"workspace_bytes", 17039360.0}}}};
    Scenario tables336 = scenarioFromJson(plainTables);
    // (At lengths of their own: the replays of the cs336_basics step above, kept, would be found.)
    const auto [tableSweeps, tableFull] = replayTimes(tables336, tables336.training.microBatchSize,
                                                      tables336.training.sequenceLength, 16, 192, 224);
    // One JSON line per figure (docs/formats.md section 1), in milliseconds.
    const auto milliseconds = [](const char* metric, double value, const std::string& detail) {
        // (`detail` is this file's own text, with no quote or backslash to escape.)
        std::printf("{\"metric\": \"%s\", \"value\": %.3f, \"unit\": \"ms\", \"detail\": \"%s\"}\n", metric,
                    value, detail.c_str());
    };
    char ratio[64];
    std::snprintf(ratio, sizeof ratio, "%.2f", median(tableSweeps) / median(stepSweeps));
    milliseconds("sweep_16_cs336_first_step_code_tables_ms", median(tableSweeps),
                 "median of 5 sweeps over micro-batch 1..16 of the same step planned as plain PyTorch, "
                 "calibrated against cs336_basics' tables (each estimate plans the code's profile); " +
                     std::string(ratio) + " x the cs336_basics sweep in this run");
    std::snprintf(ratio, sizeof ratio, "%.2f", median(tableFull) / median(stepFull));
    milliseconds("estimate_cs336_first_step_code_tables_ms", median(tableFull),
                 "median of 5 estimates of it, with the search; " + std::string(ratio) +
                     " x the cs336_basics estimate in this run (at other lengths)");
    // The same sweeps again, their replays kept: what is left is the tables, and the copy. (Each swept
    // twice in a row, the second timed: the searches above evict what a sweep kept.)
    auto keptSweep = [&](Scenario& plan, int& batch, int& length, int at) {
        std::vector<double> times;
        length = at;
        for (int rep = 0; rep < 6; ++rep) {
            const auto t0 = Clock::now();
            for (int b = 1; b <= 16; ++b) {
                batch = b;
                sink = sink + estimatePeak(plan).peakBytes;
            }
            if (rep > 0)
                times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        }
        return times;
    };
    const auto keptTables =
        keptSweep(tables336, tables336.training.microBatchSize, tables336.training.sequenceLength, 256);
    const auto keptCode =
        keptSweep(step336, step336.training.microBatchSize, step336.training.sequenceLength, 256);
    std::snprintf(ratio, sizeof ratio, "%.2f", median(keptTables) / median(keptCode));
    char kept[32];
    std::snprintf(kept, sizeof kept, "%.3f", median(keptCode));
    milliseconds(
        "sweep_16_cs336_code_tables_kept_ms", median(keptTables),
        "median of 5 sweeps over micro-batch 1..16 of the plain plan calibrated against cs336_basics' "
        "tables, every replay kept from before (the tables and the scenario's copy alone); " +
            std::string(ratio) + " x the same sweep of the cs336_basics plan, its replays kept (" + kept +
            " ms)");
    return sink > 0 ? 0 : 1;
}
