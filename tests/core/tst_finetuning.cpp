// SPDX-License-Identifier: GPL-3.0-or-later
// Fine-tuning (training.fine_tuning): the frozen base as bitsandbytes and torchao store it, the adapters PEFT
// and torchtune add, what their layers keep for the backward, each worked out by hand from the libraries'
// source (docs/frameworks.md, "Fine-tuning"); and the published fine-tuning runs of three stacks
// (examples/published/fine-tuning/cases.json) against the estimate.
#include "core/compare/attribution.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/io/estimatejson.h"
#include "core/io/scenariojson.h"
#include "core/io/validation.h"
#include "core/plan/activations.h"
#include "core/plan/finetuning.h"
#include "core/plan/peftstep.h"
#include "core/plan/solvers.h"
#include "core/plan/sweeps.h"
#include "core/plan/unslothreplay.h"
#include "core/serve/estimate.h"
#include "core/trace/formats/tracereader.h"
#include "core/trace/tracesummary.h"
#include "tests/testutil.h"

#include <QTest>
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

using namespace headroom;
using namespace headroom::test;
using nlohmann::json;

namespace {

json llama32(const json& fineTuning) {
    json doc = trainingDoc({{"preset", "meta-llama/Llama-3.2-3B"}});
    doc["training"]["precision"] = "bf16";
    doc["training"]["fine_tuning"] = fineTuning;
    return doc;
}

Breakdown at(const Scenario& sc, Phase phase) {
    for (const TimelinePoint& t : phaseTimeline(sc, 0, 4))
        if (t.phase == phase)
            return t.bytes;
    return Breakdown{};
}

// Where the loss runs: the forward's end or the backward's start (not the layer beside it).
Breakdown atLoss(const Scenario& sc, Phase phase) {
    const double progress = phase == Phase::Forward ? 1 : 0;
    for (const TimelinePoint& t : phaseTimeline(sc, 0, 4))
        if (t.phase == phase && t.progress == progress && !t.layerRunning)
            return t.bytes;
    return Breakdown{};
}

const Validation& runs() {
    static const Validation v =
        runValidation({loadValidationCases(HEADROOM_SOURCE_DIR "/examples/published/fine-tuning/cases.json")},
                      AttributionRules::pytorchDefaults());
    return v;
}

// The runs beyond 10%, with their error as recorded and their reasons: expected failures, counted by
// scripts/test. cases.json says the same to its readers ("open").
struct Miss {
    double recorded;
    const char* reason;
};
constexpr const char* kUnslothLongest =
    "Unsloth's long contexts on this GPU, planned with the allocator Unsloth sets on import (expandable "
    "segments and roundup_power2_divisions; 7.6-7.8% under with PyTorch's default before that was read) and "
    "its double-quantised NF4 base (0.3 GiB less than the plain absmax planned before, which had hidden as "
    "much of the gap): what Unsloth holds beyond its replayed layers at these lengths is not read.";
const std::map<std::string, Miss> kMisses = {
    {"answerai-llama2-70b-qo2",
     {0.104,
      "FSDP1 with CPUOffload(offload_params=True), with the wrap and the step replayed: 1.6 GiB reserved "
      "beyond the plan (3.4 before the step was replayed). The replay keeps bitsandbytes' quantisation state "
      "(no parameter: 1.0 GiB for 70B) and the cached rotary tables (0.3 GiB) on the GPU and copies each "
      "unit's shard back on the pre-unshard stream; what else 70B's offloaded units hold is not read."}},
    {"ftcourse-tinyllama-int8-lora",
     {0.124,
      "LLM.int8 on bitsandbytes 0.43 to 0.44, with each int8 layer's transposed int8 copy of its input "
      "planned: 3.07 GiB under (19.5% before those copies). LLM.int8's outlier decomposition keeps the "
      "input's columns past its threshold in fp32 (subA) and the weight's matching rows in its state "
      "(subB), as many as the data's outlier columns: no configuration says how many."}},
    {"ftcourse-tinyllama-int8-lora-reserved",
     {0.108, "The same run's reserved peak, under by about its allocated peak's gap (18.0% before)."}},
    {"unsloth-llama3.1-8b-qlora-16gb", {0.102, kUnslothLongest}},
    {"unsloth-llama3.1-8b-qlora-40gb", {0.108, kUnslothLongest}},
    {"unsloth-llama3.1-8b-qlora-48gb", {0.111, kUnslothLongest}},
    {"unsloth-llama3.1-8b-qlora-80gb", {0.109, kUnslothLongest}},
};
} // namespace

class TestFineTuning : public QObject {
    Q_OBJECT
private slots:
    void fourBitLayerToTheByte();
    void int8LayerToTheByte();
    void trainableCountsAsPeftPrints();
    void adapterStatesByHand();
    void quantisedBaseByHand();
    void frozenLayersKeepLess();
    void readerNamesTheField();
    void attributionKnowsTheAdapters();
    void pagedStatesLeavePytorchsCounters();
    void pagedStatesSpillToTheHost();
    void dpoKeepsAReference();
    void fsdp1RootStaysGathered();
    void fsdp1WrapLeavesAPool();
    void publishedRuns_data();
    void publishedRuns();
    void publishedMedian();
    void validatePerCounter_data();
    void validatePerCounter();
    void linearAttentionLayersAreNotTargeted();
    void unslothLayersByHand();
    void unslothStepReplayed();
    void unslothTablePerToken();
    void peftStepByHand();
    void unslothReaderChecks();
};

void TestFineTuning::fourBitLayerToTheByte() {
    // One 4096 x 4096 matrix as bitsandbytes' quantize_4bit stores it (blocksize 64): 16,777,216 values
    // packed two a byte, 262,144 blocks, and the 16-entry fp32 code (64 bytes).
    // Without double quantisation: an fp32 absmax per block.
    QCOMPARE(fourBitBytes(4096, 4096, false), 8388608.0 + 4 * 262144.0 + 64);
    QCOMPARE(fourBitBytes(4096, 4096, false), 9437248.0);
    // With it: a uint8 absmax per block, an fp32 scale per 256 of them (1,024), the fp32 offset: 4.127 bits
    // a value, the QLoRA paper's 0.127 bits of constants.
    QCOMPARE(fourBitBytes(4096, 4096, true), 8388608.0 + 262144 + 4 * 1024 + 4 + 64);
    QCOMPARE(fourBitBytes(4096, 4096, true), 8654916.0);
    QVERIFY(std::abs(8 * (8654916.0 - 64 - 4) / 16777216 - 4.127) < 0.001);
    // An odd count rounds up: 3 values take 2 bytes and one block.
    QCOMPARE(fourBitBytes(1, 3, false), 2.0 + 4 + 64);
}

void TestFineTuning::int8LayerToTheByte() {
    // LLM.int8 (Int8Params): CB, one int8 per value, and SCB, one fp32 scale per row.
    QCOMPARE(int8Bytes(4096, 11008), 4096.0 * 11008 + 4 * 4096);
}

void TestFineTuning::trainableCountsAsPeftPrints() {
    // PEFT's own counts (num_trainable_params in huggingface/peft's method_comparison/MetaMathQA/results,
    // print_trainable_parameters) for Llama 3.2 3B: hidden 3072, 8 KV heads of 128, FFN 8192, 28 layers.
    auto trainable = [](const json& ft) { return trainableParameters(scenarioFromJson(llama32(ft))); };
    // r32 on q (3072 -> 3072) and v (3072 -> 1024): 28 x 32 x (6144 + 4096).
    QCOMPARE(trainable({{"method", "lora"}, {"rank", 32}, {"target_modules", {"q_proj", "v_proj"}}}),
             std::uint64_t{9175040});
    QCOMPARE(trainable({{"method", "lora"}, {"rank", 64}, {"target_modules", {"q_proj", "v_proj"}}}),
             std::uint64_t{18350080});
    // r10 on gate, up (3072 -> 8192) and down (8192 -> 3072): 28 x 10 x 3 x 11264.
    QCOMPARE(
        trainable(
            {{"method", "lora"}, {"rank", 10}, {"target_modules", {"gate_proj", "up_proj", "down_proj"}}}),
        std::uint64_t{9461760});
    // DoRA adds a magnitude per output: 28 x (3072 + 1024) more.
    QCOMPARE(trainable({{"method", "dora"}, {"rank", 32}, {"target_modules", {"q_proj", "v_proj"}}}),
             std::uint64_t{9289728});
    // A second model: Llama 2 7B (hidden 4096, 32 layers), r8 on q and v: 32 x 8 x (8192 + 8192), the
    // "trainable params: 4,194,304" of PEFT's LoRA guides.
    json doc = trainingDoc({{"preset", "meta-llama/Llama-2-7b-hf"}});
    doc["training"]["fine_tuning"] = {
        {"method", "lora"}, {"rank", 8}, {"target_modules", {"q_proj", "v_proj"}}};
    QCOMPARE(trainableParameters(scenarioFromJson(doc)), std::uint64_t{4194304});
    // torchtune's names are the same modules: output_proj is o_proj, w1/w3/w2 gate/up/down.
    QCOMPARE(trainable({{"method", "lora"}, {"rank", 10}, {"target_modules", {"w1", "w3", "w2"}}}),
             std::uint64_t{9461760});
    // Full fine-tuning trains everything.
    QCOMPARE(trainable({{"method", "full"}}), std::uint64_t{3212749824});
}

void TestFineTuning::adapterStatesByHand() {
    // PEFT's defaults: fp32 adapters on a bf16 base, torch's AdamW (two fp32 states each). r32 on q and v:
    // 9,175,040 adapter parameters.
    const Scenario sc = scenarioFromJson(
        llama32({{"method", "lora"}, {"rank", 32}, {"target_modules", {"q_proj", "v_proj"}}}));
    const double adapters = 9175040, base = 3212749824;
    const Breakdown step = at(sc, Phase::Optimizer);
    QCOMPARE(step[Category::Weights], 2 * base + 4 * adapters);
    QCOMPARE(step[Category::Gradients], 4 * adapters); // only the adapters have gradients
    QCOMPARE(step[Category::MasterWeights], 0.0);
    QCOMPARE(step[Category::OptimizerStates], 8 * adapters);
    QCOMPARE(step[Category::Temporaries], 4 * adapters); // foreach's denominator list, one state's worth
    // The weights' split that the CLI, the JSON and the window show: the bf16 base, frozen, and the rest.
    QCOMPARE(estimate(sc).frozenWeightBytes(), 2 * base);
    // torchtune: bf16 adapters and bf16 states (zeros_like the parameter), fused step.
    json doc = llama32({{"method", "lora"}, {"rank", 32}, {"target_modules", {"q_proj", "v_proj"}}});
    doc["training"]["framework"] = "torchtune";
    const Breakdown tt = at(scenarioFromJson(doc), Phase::Optimizer);
    QCOMPARE(tt[Category::Weights], 2 * base + 2 * adapters);
    QCOMPARE(tt[Category::OptimizerStates], 4 * adapters);
    QCOMPARE(tt[Category::Temporaries], 0.0);
    // modules_to_save trains a full copy of the (tied) head beside the frozen one: 128256 x 3072 more in
    // bf16, with its gradient and two fp32 states.
    doc = llama32({{"method", "lora"},
                   {"rank", 32},
                   {"target_modules", {"q_proj", "v_proj"}},
                   {"modules_to_save", {"lm_head"}}});
    const double head = 128256.0 * 3072;
    const Breakdown saved = at(scenarioFromJson(doc), Phase::Optimizer);
    QCOMPARE(saved[Category::Weights], 2 * base + 4 * adapters + 2 * head);
    QCOMPARE(saved[Category::Gradients], 4 * adapters + 2 * head);
    QCOMPARE(saved[Category::OptimizerStates], 8 * adapters + 4 * head);
    QCOMPARE(estimate(scenarioFromJson(doc)).frozenWeightBytes(), 2 * base); // the copy trains
    // Full fine-tuning has no frozen base to show.
    doc = llama32({{"method", "full"}});
    QCOMPARE(estimate(scenarioFromJson(doc)).frozenWeightBytes(), 0.0);
    // bytes_per_param.optimizer_states is every trained parameter's: 0 is a forward and backward without
    // an optimizer (no states, no step scratch), adapters or not; 2 is two bf16 states each.
    doc = llama32({{"method", "lora"}, {"rank", 32}, {"target_modules", {"q_proj", "v_proj"}}});
    doc["training"]["bytes_per_param"] = {{"optimizer_states", 0}};
    const Breakdown none = at(scenarioFromJson(doc), Phase::Optimizer);
    QCOMPARE(none[Category::OptimizerStates], 0.0);
    QCOMPARE(none[Category::Temporaries], 0.0);
    QCOMPARE(at(scenarioFromJson(doc), Phase::Backward)[Category::OptimizerStates], 0.0);
    doc["training"]["bytes_per_param"] = {{"optimizer_states", 2}};
    QCOMPARE(at(scenarioFromJson(doc), Phase::Optimizer)[Category::OptimizerStates], 2 * adapters);
}

void TestFineTuning::quantisedBaseByHand() {
    // QLoRA's base for Llama 3.2 3B, bitsandbytes NF4 with double quantisation: per layer q and o are
    // 3072 x 3072, k and v 1024 x 3072, gate, up and down 8192 x 3072; the norms (2 x 3072), the tied
    // embedding (128256 x 3072) and the final norm stay bf16.
    auto nf4 = [](double n) { // worked out here, not by fourBitBytes
        const double blocks = std::ceil(n / 64);
        return std::ceil(n / 2) + blocks + 4 * std::ceil(blocks / 256) + 4 + 64;
    };
    const double layer =
        2 * nf4(3072.0 * 3072) + 2 * nf4(1024.0 * 3072) + 3 * nf4(8192.0 * 3072) + 2 * 2 * 3072;
    const double base = 28 * layer + 2 * (128256.0 * 3072 + 3072);
    json doc = llama32({{"method", "qlora"},
                        {"rank", 32},
                        {"target_modules", {"q_proj", "v_proj"}},
                        {"double_quantization", true}});
    const Scenario sc = scenarioFromJson(doc);
    QCOMPARE(sc.training.fineTuning.baseQuantization, BaseQuantization::Nf4); // QLoRA's default
    QCOMPARE(at(sc, Phase::Optimizer)[Category::Weights], base + 4 * 9175040.0);
    // Each matmul dequantises its weight to bf16: the largest, an MLP matrix, while a layer runs.
    double layerRunning = 0;
    for (const TimelinePoint& t : phaseTimeline(sc, 0, 4))
        if (t.phase == Phase::Forward && t.progress > 0 && t.progress < 1)
            layerRunning = t.bytes[Category::Temporaries];
    QCOMPARE(layerRunning, 2 * 8192.0 * 3072);
    // LLM.int8: a byte per value and an fp32 scale per row.
    doc["training"]["fine_tuning"]["base_quantization"] = "int8";
    const double int8Layer = 2 * (3072.0 * 3072 + 4 * 3072) + 2 * (1024.0 * 3072 + 4 * 1024) +
                             2 * (8192.0 * 3072 + 4 * 8192) + (3072.0 * 8192 + 4 * 3072) + 2 * 2 * 3072;
    QCOMPARE(at(scenarioFromJson(doc), Phase::Optimizer)[Category::Weights],
             28 * int8Layer + 2 * (128256.0 * 3072 + 3072) + 4 * 9175040.0);
}

void TestFineTuning::frozenLayersKeepLess() {
    // What one Llama 3.2 3B layer keeps per token under transformers' eager modules (bf16, SDPA), counted
    // from the modules' source by hand (docs/frameworks.md): in full training, the two norms' fp32 inputs
    // and bf16 normalised outputs (2 x (4 + 2) x 3072), the q/k/v and MLP inputs (2 x 2 x 3072), q, k, v and
    // attention's output (2 x (3072 + 1024 + 1024 + 3072)), the contiguous copy for o_proj (2 x 3072), K and
    // V expanded to 24 heads (2 x 16 x 256), gate, up, their activation and product (4 x 2 x 8192), the
    // log-sum-exp (4 x 24).
    const double h = 3072;
    const double full = 2 * 6 * h + 2 * 2 * h + 2 * (3072 + 1024 + 1024 + 3072) + 2 * h + 2 * 16 * 256 +
                        4 * 2 * 8192 + 4 * 24;
    // LoRA r32 on q and v (PEFT: fp32 adapters): the frozen norms' normalised outputs, the MLP's input, its
    // product (down_proj's input) and o_proj's copy are kept by nobody; q and v each cast their input to
    // fp32 for lora_A (4 x 3072, twice) and keep lora_A's fp32 output (4 x 32, twice); the 16-bit q/k/v
    // input goes too (the adapters have their copies).
    const double lora = full - 2 * 2 * h - 2 * h - 2 * 8192 - 2 * h - 2 * h + 2 * (4 * h + 4 * 32);
    json doc = llama32({{"method", "full"}});
    doc["training"]["framework"] = "huggingface";
    const double tokens = 2048;
    QCOMPARE(layerActivations(scenarioFromJson(doc), 3, 1).stored, tokens * full);
    doc["training"]["fine_tuning"] = {
        {"method", "lora"}, {"rank", 32}, {"target_modules", {"q_proj", "v_proj"}}};
    QCOMPARE(layerActivations(scenarioFromJson(doc), 3, 1).stored, tokens * lora);
    // torchtune's bf16 adapters need no cast: q and v share the layer's input, kept once, and each keeps
    // its bf16 r-wide output.
    doc["training"]["framework"] = "torchtune";
    doc["training"]["compile"] = true; // torchtune compiled: no eager norm, rotation or copy terms
    const double compiled = 2 * 2 * h /* norm inputs */ + 2 * h /* q/k/v input */ +
                            2 * (3072 + 1024 + 1024 + 3072) + 2 * 16 * 256 + 3 * 2 * 8192 + 4 * 24 +
                            2 * (2 * 32);
    QCOMPARE(layerActivations(scenarioFromJson(doc), 3, 1).stored, tokens * compiled);
    // QLoRA under transformers with bitsandbytes before 0.43.2, whose MatMul4Bit kept its input
    // (ctx.tensors = (A, B), removed by bitsandbytes #1270): every 4-bit layer keeps what a trained one
    // keeps, the q/k/v and MLP inputs, down_proj's and o_proj's, so the layer keeps all of full training's
    // but the frozen norms' normalised outputs, and the adapters' own. A current release: LoRA's.
    doc = llama32({{"method", "qlora"}, {"rank", 32}, {"target_modules", {"q_proj", "v_proj"}}});
    doc["training"]["framework"] = "huggingface";
    QCOMPARE(layerActivations(scenarioFromJson(doc), 3, 1).stored, tokens * lora);
    doc["training"]["fine_tuning"]["bitsandbytes_version"] = "0.43.1";
    QCOMPARE(layerActivations(scenarioFromJson(doc), 3, 1).stored,
             tokens * (full - 2 * 2 * h + 2 * (4 * h + 4 * 32)));
    for (const char* later : {"0.43.2", "0.44", "1.0.0"}) {
        doc["training"]["fine_tuning"]["bitsandbytes_version"] = later;
        QCOMPARE(layerActivations(scenarioFromJson(doc), 3, 1).stored, tokens * lora);
    }
    // LLM.int8 keeps its input whatever (MatMul8bitLt: ctx.tensors = (CAt, subA, A)), so an int8 base keeps
    // what the 4-bit one before 0.43.2 did. Before bitsandbytes 0.45.0 each int8 layer also made and kept
    // CAt, the int8 transposed copy of its own 16-bit cast of the input, one byte per element of its input:
    // q, k and v 3072 each, o 3072, gate and up 3072 each, down 8192 (0.45.0, #1401, makes it only for a
    // weight that needs its gradient).
    doc["training"]["fine_tuning"]["bitsandbytes_version"] = "0.45.0";
    doc["training"]["fine_tuning"]["base_quantization"] = "int8";
    const double int8 = full - 2 * 2 * h + 2 * (4 * h + 4 * 32);
    QCOMPARE(layerActivations(scenarioFromJson(doc), 3, 1).stored, tokens * int8);
    doc["training"]["fine_tuning"].erase("bitsandbytes_version"); // a current release
    QCOMPARE(layerActivations(scenarioFromJson(doc), 3, 1).stored, tokens * int8);
    for (const char* before : {"0.44.1", "0.43.1", "0.42.0"}) {
        doc["training"]["fine_tuning"]["bitsandbytes_version"] = before;
        QCOMPARE(layerActivations(scenarioFromJson(doc), 3, 1).stored,
                 tokens * (int8 + 3 * 3072 + 3072 + 2 * 3072 + 8192));
    }
}

void TestFineTuning::readerNamesTheField() {
    auto error = [](const json& ft) {
        try {
            scenarioFromJson(llama32(ft));
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    QVERIFY(error({{"method", "qlora"}, {"base_quantization", "none"}})
                .find("training.fine_tuning.base_quantization") != std::string::npos);
    QVERIFY(error({{"method", "lora"}, {"target_modules", {"q_proj", "qproj"}}})
                .find("training.fine_tuning.target_modules[1]") != std::string::npos);
    QVERIFY(error({{"method", "lora"}, {"rank", 0}}).find("training.fine_tuning.rank") != std::string::npos);
    for (const char* bad : {"0.43.x", "latest", "0", ".43", "0.43.1.2"})
        QVERIFY2(error({{"method", "qlora"}, {"bitsandbytes_version", bad}})
                         .find("training.fine_tuning.bitsandbytes_version") != std::string::npos,
                 bad);
    // Without a quantised base the release changes nothing, and the reader says so; with LLM.int8 it
    // does (its layers' transposed copies before 0.45.0), said by no warning.
    auto saysRelease = [](const Scenario& sc) {
        return std::any_of(sc.warnings.begin(), sc.warnings.end(), [](const std::string& w) {
            return w.find("training.fine_tuning.bitsandbytes_version") != std::string::npos;
        });
    };
    QVERIFY(saysRelease(scenarioFromJson(
        llama32({{"method", "lora"}, {"base_quantization", "none"}, {"bitsandbytes_version", "0.42.0"}}))));
    const Scenario int8 = scenarioFromJson(
        llama32({{"method", "lora"}, {"base_quantization", "int8"}, {"bitsandbytes_version", "0.42.0"}}));
    QVERIFY(!saysRelease(int8));
    QVERIFY(int8.training.fineTuning.int8KeepsTransposedInput);
    // Nor under torchtune, whose 4-bit base is torchao's NF4: said, and planned as without it.
    json tune = llama32({{"method", "qlora"}, {"bitsandbytes_version", "0.42.0"}});
    tune["training"]["framework"] = "torchtune";
    const Scenario torchao = scenarioFromJson(tune);
    QVERIFY(!torchao.training.fineTuning.fourBitKeepsInput);
    QVERIFY(std::any_of(torchao.warnings.begin(), torchao.warnings.end(), [](const std::string& w) {
        return w.find("torchao's NF4") != std::string::npos;
    }));
    QVERIFY(error({{"method", "lora"}, {"target_modules", json::array()}}).find("names no module") !=
            std::string::npos);
    QVERIFY(error({{"method", "full"}, {"base_quantization", "nf4"}}).find("cannot be trained in full") !=
            std::string::npos);
    QVERIFY(error({{"method", "lora"}, {"target_modules", "all-linear"}}).empty());
    // GPT-2's plain MLP has no gate_proj: a warning names it.
    json gpt2 = trainingDoc({{"preset", "openai-community/gpt2"}});
    gpt2["training"]["fine_tuning"] = {{"method", "lora"}, {"target_modules", {"gate_proj", "up_proj"}}};
    const Scenario sc = scenarioFromJson(gpt2);
    QVERIFY(std::any_of(sc.warnings.begin(), sc.warnings.end(), [](const std::string& w) {
        return w.find("no gate_proj layer") != std::string::npos;
    }));
}

void TestFineTuning::attributionKnowsTheAdapters() {
    // A trace of an optimizer step keeping two tensors: 16,384 bytes (a 64 x 64 fp32 matrix of the model's,
    // a state of full training) and 1,024 bytes (a rank-4 adapter's 4 x 64 fp32 lora_A or 64 x 4 lora_B).
    const Trace t = readTrace(R"({"segments": [], "device_traces": [[
      {"action": "alloc", "addr": 4096, "size": 16384, "time_us": 1,
       "frames": [{"name": "step", "filename": "/x/torch/optim/adamw.py", "line": 10}]},
      {"action": "alloc", "addr": 32768, "size": 1024, "time_us": 2,
       "frames": [{"name": "step", "filename": "/x/torch/optim/adamw.py", "line": 10}]}
    ]]})");
    const TraceSummary summary = summarize(t);
    const TraceIndex index(t.devices.at(0), summary.devices.at(0));
    json doc = trainingDoc(tinyLlama());
    doc["training"]["precision"] = "fp32";
    const Scenario full = scenarioFromJson(doc);
    const Attribution a = attribute(t, index, 1, AttributionRules::pytorchDefaults(), &full);
    QCOMPARE(a.of(MeasuredCategory::OptimizerStates), 16384LL); // the model has 64 x 64 tensors
    QCOMPARE(a.of(MeasuredCategory::Temporaries), 1024LL);      // and none of 256 elements
    doc["training"]["fine_tuning"] = {
        {"method", "lora"}, {"rank", 4}, {"target_modules", {"q_proj", "v_proj"}}};
    const Scenario lora = scenarioFromJson(doc);
    const Attribution b = attribute(t, index, 1, AttributionRules::pytorchDefaults(), &lora);
    QCOMPARE(b.of(MeasuredCategory::OptimizerStates), 1024LL); // an adapter's state
    QCOMPARE(b.of(MeasuredCategory::Temporaries), 16384LL);    // the frozen base has none
}

void TestFineTuning::pagedStatesLeavePytorchsCounters() {
    // bitsandbytes' PagedAdamW8bit pages a parameter's states only from 100,000 elements up
    // (bitsandbytes/optim/optimizer.py get_state_buffer). Llama 3.2 3B, rank 32 on q and v: every adapter is
    // 32 x 3,072 = 98,304 elements or fewer, so none is paged and the plan is the unpaged one's.
    json doc = llama32({{"method", "lora"}, {"rank", 32}, {"target_modules", {"q_proj", "v_proj"}}});
    doc["training"]["optimizer"] = "adam8bit";
    const Estimate small = estimate(scenarioFromJson(doc));
    doc["training"]["paged_optimizer"] = true;
    const Estimate smallPaged = estimate(scenarioFromJson(doc));
    QCOMPARE(smallPaged.perGpu[Category::OptimizerStates], 2 * 9175040.0);
    QCOMPARE(smallPaged.allocatedPeakBytes, small.allocatedPeakBytes);
    QCOMPARE(smallPaged.reservedPeakBytes, small.reservedPeakBytes);
    QCOMPARE(smallPaged.peakBytes, small.peakBytes);
    // Rank 64: q's lora_A and lora_B and v's lora_A are 64 x 3,072 = 196,608 elements, paged; v's lora_B,
    // 1,024 x 64 = 65,536, is not. Per layer 589,824 paged and 65,536 resident, 28 layers: two 8-bit states
    // of 16,515,072 elements (33,030,144 bytes) in unified memory, on the GPU at the plan's peak but outside
    // what PyTorch counts as allocated or reserved (and the allocator's 3% overhead on them); 3,670,016
    // bytes of states where they were.
    doc["training"]["fine_tuning"]["rank"] = 64;
    doc["training"]["paged_optimizer"] = false;
    const Estimate plain = estimate(scenarioFromJson(doc));
    doc["training"]["paged_optimizer"] = true;
    const Estimate paged = estimate(scenarioFromJson(doc));
    const double states = 2 * 18350080.0, pagedStates = 2 * 28 * 589824.0;
    QCOMPARE(pagedStates, 33030144.0);
    QCOMPARE(paged.perGpu[Category::OptimizerStates], states);
    QCOMPARE(plain.perGpu[Category::OptimizerStates], states);
    // Differences of ~2e10-byte totals: compared to the byte.
    QVERIFY(std::abs(plain.allocatedPeakBytes - paged.allocatedPeakBytes - pagedStates) < 1);
    QVERIFY(std::abs(plain.reservedPeakBytes - paged.reservedPeakBytes - pagedStates * 1.03) < 1);
    QVERIFY(std::abs(plain.peakBytes - paged.peakBytes - pagedStates * 0.03) < 1);
    // A first step (training.first_step): no states before the step, paged or not, so the forward and
    // backward are the same with either, and PyTorch's counters never go below what the allocator holds.
    doc["training"]["first_step"] = true;
    const Scenario firstPaged = scenarioFromJson(doc);
    doc["training"]["paged_optimizer"] = false;
    const Scenario firstPlain = scenarioFromJson(doc);
    for (Phase p : {Phase::Forward, Phase::Backward}) {
        const Breakdown a = at(firstPaged, p), b = at(firstPlain, p);
        QCOMPARE(a[Category::OptimizerStates], 0.0);
        QCOMPARE(a[Category::AllocatorOverhead], b[Category::AllocatorOverhead]);
        QCOMPARE(a.total(), b.total());
    }
    const Estimate firstPagedEstimate = estimate(firstPaged), firstPlainEstimate = estimate(firstPlain);
    QVERIFY(firstPagedEstimate.allocatedPeakBytes <= firstPlainEstimate.allocatedPeakBytes);
    QVERIFY(firstPagedEstimate.allocatedPeakBytes >= firstPlainEstimate.allocatedPeakBytes - states);
    doc["training"]["paged_optimizer"] = true;
    doc["training"]["optimizer"] = "sgd";
    QVERIFY_THROWS_EXCEPTION(Error, scenarioFromJson(doc));
    // The 32-bit PagedAdamW keeps fp32 states whatever the weights' dtype (Optimizer2State.init_state) and
    // steps each parameter in place. Full fine-tuning of the bf16 model under transformers: torch's AdamW
    // keeps two bf16 states of its 3,212,749,824 parameters and, foreach, one state's worth of temporaries
    // at the step (3,212,749,824 x 2 bytes); PagedAdamW two fp32 states and no temporaries.
    json full = llama32({{"method", "full"}});
    full["training"]["framework"] = "huggingface";
    const Scenario torchAdamw = scenarioFromJson(full);
    full["training"]["paged_optimizer"] = true;
    const Scenario pagedAdamw = scenarioFromJson(full);
    QCOMPARE(at(torchAdamw, Phase::Optimizer)[Category::OptimizerStates], 4 * 3212749824.0);
    QCOMPARE(at(torchAdamw, Phase::Optimizer)[Category::Temporaries], 2 * 3212749824.0);
    QCOMPARE(at(pagedAdamw, Phase::Optimizer)[Category::OptimizerStates], 8 * 3212749824.0);
    QCOMPARE(at(pagedAdamw, Phase::Optimizer)[Category::Temporaries], 0.0);
}

void TestFineTuning::pagedStatesSpillToTheHost() {
    // torchtune's README runs Llama 3.1 8B's full fine-tune on one 24 GB RTX 4090 with PagedAdamW8bit: its
    // two 8-bit states, 2 x 8,030,261,248 bytes, are in unified memory, and what the GPU has no room for the
    // driver keeps in host memory and pages in for the step. So the plan fits: what must be resident is the
    // peak without them, the host holds the peak's excess over the card, and that excess crosses PCIe both
    // ways each step. Without the paged optimizer the same states must all be resident: it does not fit.
    const std::string file =
        HEADROOM_SOURCE_DIR "/examples/published/fine-tuning/torchtune-llama3.1-8b-full-4090.headroom.json";
    json doc = parseJsonText(readTextFile(file));
    const Estimate paged = estimate(scenarioFromJson(doc));
    const double states = 2 * 8030261248.0;
    QCOMPARE(paged.perGpu[Category::OptimizerStates], states);
    QVERIFY(paged.peakBytes > paged.capacityBytes);
    QVERIFY(paged.fits);
    QCOMPARE(paged.pagedToHostBytes, paged.peakBytes - paged.capacityBytes);
    QVERIFY(paged.pagedToHostBytes < states);
    // The figures the README quotes: 10.88 GiB of the 14.96 GiB of states in host memory.
    QVERIFY(std::abs(paged.pagedToHostBytes / test::kGiB - 10.88) < 0.005);
    QVERIFY(std::abs(states / test::kGiB - 14.96) < 0.005);
    QCOMPARE(paged.offload.hostToDeviceBytes, paged.pagedToHostBytes);
    QCOMPARE(paged.offload.deviceToHostBytes, paged.pagedToHostBytes);
    QVERIFY(paged.maxMicroBatchSize >= 2);
    // The JSON says the same: fits, with the bytes in host memory, and the contract's headroom (capacity
    // less the peak) negative.
    const json out = estimateToJson(scenarioFromJson(doc), paged);
    QCOMPARE(out["fits"].get<bool>(), true);
    QVERIFY(out["paged_to_host_bytes"].get<long long>() > 0);
    QVERIFY(out["headroom_bytes"].get<long long>() < 0);
    // The micro-batch sweep draws what the GPU holds: the card full at the planned batch, and the curve
    // crosses the line past the largest micro-batch that fits.
    const SweepResult sweep = computeSweep(scenarioFromJson(doc), paged, SweepVariable::MicroBatch,
                                           [](const Scenario& s) { return estimate(s); });
    QCOMPARE(sweep.limit, paged.maxMicroBatchSize);
    for (const auto& [batch, bytes] : sweep.points) {
        if (batch == 2)
            QCOMPARE(bytes, paged.capacityBytes);
        if (batch == double(sweep.limit))
            QVERIFY(bytes <= paged.capacityBytes);
        if (batch == double(sweep.limit + 1))
            QVERIFY(bytes > paged.capacityBytes);
    }
    doc["training"]["paged_optimizer"] = false;
    const Estimate resident = estimate(scenarioFromJson(doc));
    QVERIFY(!resident.fits);
    QCOMPARE(resident.pagedToHostBytes, 0.0);
    // What would make it fit offers the paged optimizer, worth what it moves off the GPU: the whole peak
    // less the card, the card full after.
    auto pagedSaving = [](const Scenario& sc) {
        for (const Saving& s : rankPlanSavings(sc, [](const Scenario& x) { return estimate(x); }))
            if (s.id == "paged_optimizer")
                return std::optional<Saving>(s);
        return std::optional<Saving>();
    };
    const std::optional<Saving> offered = pagedSaving(scenarioFromJson(doc));
    QVERIFY(offered);
    QVERIFY(offered->fitsAfter);
    QVERIFY(std::abs(offered->peakAfter - paged.capacityBytes) < 1); // a difference of ~2e10-byte totals
    QVERIFY(std::abs(offered->bytesSaved - (resident.peakBytes - paged.capacityBytes)) < 1);
    QVERIFY(offered->patch == json({{"training", {{"paged_optimizer", true}}}}));
    // On an 80 GB card everything fits on the GPU: nothing is paged out.
    doc["training"]["paged_optimizer"] = true;
    doc["cluster"]["gpu"] = "A100-80GB";
    const Estimate roomy = estimate(scenarioFromJson(doc));
    QVERIFY(roomy.fits);
    QCOMPARE(roomy.pagedToHostBytes, 0.0);
    // There, paging would leave every state where it is: not offered.
    doc["training"]["paged_optimizer"] = false;
    QVERIFY(!pagedSaving(scenarioFromJson(doc)));
}

void TestFineTuning::dpoKeepsAReference() {
    // DPO: full fine-tuning keeps a frozen copy of the model as its reference (3,212,749,824 bf16 weights
    // more); with LoRA the reference is the base with the adapters disabled, no copy. Chosen and rejected run
    // together: a layer keeps twice what one sequence's would.
    json doc = llama32({{"method", "full"}});
    const double base = 3212749824;
    const Breakdown full = at(scenarioFromJson(doc), Phase::Optimizer);
    doc["training"]["fine_tuning"]["preference"] = "dpo";
    const Scenario dpo = scenarioFromJson(doc);
    QCOMPARE(at(dpo, Phase::Optimizer)[Category::Weights], full[Category::Weights] + 2 * base);
    json lora = llama32({{"method", "lora"}, {"rank", 32}, {"target_modules", {"q_proj", "v_proj"}}});
    const Scenario plain = scenarioFromJson(lora);
    lora["training"]["fine_tuning"]["preference"] = "dpo";
    const Scenario loraDpo = scenarioFromJson(lora);
    QCOMPARE(at(loraDpo, Phase::Optimizer)[Category::Weights],
             at(plain, Phase::Optimizer)[Category::Weights]);
    QCOMPARE(atLoss(loraDpo, Phase::Forward)[Category::Activations],
             2 * atLoss(plain, Phase::Forward)[Category::Activations]);
    // The reference's forward runs after the policy's, its bf16 logits (2 x 2048 x 128256 per sequence)
    // beside the policy's: for both sequences.
    QCOMPARE(atLoss(loraDpo, Phase::Forward)[Category::Logits],
             2 * (atLoss(plain, Phase::Forward)[Category::Logits] + 2 * 2048.0 * 128256));
    // Gone when the backward starts: there it is twice the plain loss.
    QCOMPARE(atLoss(loraDpo, Phase::Backward)[Category::Logits],
             2 * atLoss(plain, Phase::Backward)[Category::Logits]);
    lora["training"]["fine_tuning"]["preference"] = "ppo";
    QVERIFY_THROWS_EXCEPTION(Error, scenarioFromJson(lora));
}

void TestFineTuning::fsdp1RootStaysGathered() {
    // FSDP1 (FULL_SHARD) as Accelerate and fsdp_qlora wrap Llama 2 7B: each decoder layer a unit, the root
    // the rest. In the backward a layer and the one prefetched are gathered, 2 x 202,383,360 bf16
    // parameters (4 x 4096^2 attention, 3 x 4096 x 11,008 MLP, two norms of 4,096), and the root's
    // unsharded flat parameter stays from the forward on: embeddings and head 2 x 32,000 x 4,096 and the
    // final norm's 4,096, in bf16.
    json doc = trainingDoc({{"preset", "meta-llama/Llama-2-7b-hf"}});
    doc["training"]["framework"] = "huggingface";
    doc["training"]["precision"] = "bf16";
    doc["training"]["fine_tuning"] = {
        {"method", "lora"}, {"rank", 8}, {"target_modules", {"q_proj", "v_proj"}}};
    doc["cluster"]["num_gpus"] = 2;
    doc["cluster"]["data_parallel"] = "fsdp";
    const double layers = 2 * 2 * 202383360.0;
    const double root = 2 * (2 * 32000 * 4096.0 + 4096);
    QCOMPARE(at(scenarioFromJson(doc), Phase::Backward)[Category::GatherBuffers], layers + root);
    QCOMPARE(at(scenarioFromJson(doc), Phase::Forward)[Category::GatherBuffers], layers + root);
    // The generic profile does not assume how the model was wrapped: no root is kept there.
    doc["training"]["framework"] = "pytorch";
    QCOMPARE(at(scenarioFromJson(doc), Phase::Backward)[Category::GatherBuffers], layers);
}

void TestFineTuning::fsdp1WrapLeavesAPool() {
    // Answer.AI's benchmark of fsdp_qlora (AnswerDotAI/fsdp_qlora 05ed9f2, benchmarks_03_2024.md, the 3090
    // case study) states two reserved figures that are not peaks the published cases compare, and that the
    // replay of FSDP1's wrap (core/plan/fsdp1pools.h) must reproduce.
    // 1. Llama 2 7B in QLoRA on two GPUs is "actually about 3.72GiB (see reserved_after_model_wrap)" a
    //    GPU once wrapped, where its shard of weights and adapters is 2.07 GiB: the rest is what the wrap
    //    freed and the allocator kept.
    const Scenario q = loadScenarioFile(
        HEADROOM_SOURCE_DIR "/examples/published/fine-tuning/answerai-llama2-7b-q512.headroom.json");
    const double wrapped = estimate(q).wrappedReservedBytes();
    const double logged = 3.72 * (1ull << 30);
    QEXPECT_FAIL(
        "",
        "The replay reserves 3.62 GiB, 0.10 GiB less than the log, with bitsandbytes' double-quantised "
        "state (Linear4bit's compress_statistics defaults to True) and transformers 4.37's cached rotary "
        "tables. What else rank 0 holds after loading (the state's small blocks, packed as the loading "
        "threads left them around quantize_4bit's freed temporaries) is not replayed.",
        Continue);
    QVERIFY2(std::abs(wrapped / logged - 1) <= 0.01,
             qPrintable(QString("after the wrap %1 GiB, logged 3.72").arg(wrapped / (1ull << 30))));
    // 2. LoRA at 512 and 2048 tokens: "the reported peak reserved memory for both 512 and 2048 context
    //    length is roughly the same" (10.24 and 10.22 GiB) while their allocated peaks are 8.28 and 9.16
    //    GiB: the longer run's activations fit in what the wrap left cached.
    auto reserved = [](const char* name) {
        return estimate(loadScenarioFile(std::string(HEADROOM_SOURCE_DIR "/examples/published/fine-tuning/") +
                                         name + ".headroom.json"))
            .reservedPeakBytes;
    };
    const double r512 = reserved("answerai-llama2-7b-l512"), r2048 = reserved("answerai-llama2-7b-l2048");
    const double gib = 1ull << 30;
    QVERIFY2(std::abs(r512 / (10.24 * gib) - 1) <= 0.05, qPrintable(QString::number(r512 / gib)));
    QVERIFY2(std::abs(r2048 / (10.22 * gib) - 1) <= 0.05, qPrintable(QString::number(r2048 / gib)));
    QVERIFY2(std::abs(r2048 / r512 - 1) <= 0.01, qPrintable(QString::number((r2048 - r512) / gib)));
    // The cache takes the first of a larger batch's tensors, so memory is no longer one line in the batch:
    // the largest micro-batch said to fit does, and one more does not.
    Scenario atMost = q;
    atMost.training.microBatchSize = static_cast<int>(estimate(q).maxMicroBatchSize);
    QVERIFY(atMost.training.microBatchSize > 1);
    QVERIFY(estimate(atMost).fits);
    atMost.training.microBatchSize += 1;
    QVERIFY(!estimate(atMost).fits);
    // 3. Under CPUOffload(offload_params=True) FSDP moves every shard to host memory, but bitsandbytes'
    //    quantisation state is no parameter and stays whole on each GPU: for Llama 2 70B in NF4 with double
    //    quantisation, per matrix of n values a uint8 absmax per 64, an fp32 scale per 256 of those, the fp32
    //    offset and the two 16-entry fp32 codes (68 bytes); q and o are 8192 x 8192, k and v 1024 x 8192,
    //    gate, up and down 28672 x 8192, in each of 80 layers. Beside them, transformers 4.37's rotary
    //    embedding in each attention layer caches cos and sin for 4,096 positions of 128 in fp32 (buffers,
    //    which FSDP neither shards nor offloads; fsdp_qlora builds the QLoRA model from its config, in fp32).
    auto state = [](double n) { return n / 64 + 4 * std::ceil(n / 64 / 256) + 68; };
    const double layer = 2 * state(8192.0 * 8192) + 2 * state(1024.0 * 8192) + 3 * state(28672.0 * 8192);
    const Estimate offloaded = estimate(loadScenarioFile(
        HEADROOM_SOURCE_DIR "/examples/published/fine-tuning/answerai-llama2-70b-qo2.headroom.json"));
    const double rotary = 2 * 4096 * 128 * 4.0;
    QCOMPARE(offloaded.perGpu[Category::Weights], 80 * (layer + rotary));
    QCOMPARE(offloaded.frozenWeightBytes(), 80 * (layer + rotary));
    qInfo().noquote() << QStringLiteral("FSDP1 wrap: %1 GiB reserved once wrapped (logged 3.72); LoRA "
                                        "reserves %2 GiB at 512 tokens, %3 GiB at 2048 (10.24, 10.22)")
                             .arg(wrapped / gib, 0, 'f', 2)
                             .arg(r512 / gib, 0, 'f', 2)
                             .arg(r2048 / gib, 0, 'f', 2);
}

void TestFineTuning::publishedRuns_data() {
    QTest::addColumn<QString>("id");
    std::map<std::string, int> stacks;
    for (const CaseResult& r : runs().results) {
        QTest::newRow(r.c->id.c_str()) << QString::fromStdString(r.c->id);
        ++stacks[r.c->id.substr(0, r.c->id.find('-'))];
    }
    // Five sources (PEFT's benchmark, torchtune, Answer.AI's fsdp_qlora, Unsloth, a course's notebook), 42
    // runs.
    QCOMPARE(stacks.size(), std::size_t{5});
    QCOMPARE(runs().results.size(), std::size_t{42});
}

void TestFineTuning::publishedRuns() {
    QFETCH(QString, id);
    const CaseResult* r = nullptr;
    for (const CaseResult& c : runs().results)
        if (c.c->id == id.toStdString())
            r = &c;
    QVERIFY(r);
    const QString what = caseLine(*r);
    qInfo().noquote() << what;
    QCOMPARE(!r->c->knownMiss.empty(), kMisses.count(id.toStdString()) == 1);
    if (const auto miss = kMisses.find(id.toStdString()); miss != kMisses.end()) {
        // No worse than recorded, and an unexpected pass (XPASS) once the plan closes the gap.
        QVERIFY2(std::abs(r->error()) <= miss->second.recorded + 0.005, qPrintable(what));
        QEXPECT_FAIL("", miss->second.reason, Continue);
    }
    QVERIFY2(std::abs(r->error()) <= 0.10, qPrintable(what));
}

void TestFineTuning::publishedMedian() {
    // The issue's target: the median of all runs within 5%. Computed here; each role's is reported.
    // (5.3% before FSDP1's step was replayed through the allocator, core/plan/peftstep.h.)
    auto median = [](const char* role) {
        std::vector<double> errors;
        for (const CaseResult& r : runs().results)
            if (!role || r.c->role == role)
                errors.push_back(std::abs(r.error()));
        std::sort(errors.begin(), errors.end());
        return (errors[(errors.size() - 1) / 2] + errors[errors.size() / 2]) / 2;
    };
    qInfo().noquote() << QStringLiteral("fine-tuning runs: median %1% (fit %2%, validate %3%)")
                             .arg(100 * median(nullptr), 0, 'f', 1)
                             .arg(100 * median("fit"), 0, 'f', 1)
                             .arg(100 * median("validate"), 0, 'f', 1);
    QVERIFY2(median(nullptr) <= 0.05, qPrintable(QString::number(100 * median(nullptr), 'f', 2) + "%"));
}

void TestFineTuning::validatePerCounter_data() {
    QTest::addColumn<QString>("counter");
    for (const char* counter : {"active", "allocated", "device", "reserved"})
        QTest::newRow(counter) << QString::fromLatin1(counter);
}

void TestFineTuning::validatePerCounter() {
    // Issue 21's target for the runs nothing was chosen on, per counter: median at most 5%, worst at most
    // 12%.
    QFETCH(QString, counter);
    std::vector<double> errors;
    for (const CaseResult& r : runs().results)
        if (r.c->role == "validate" && QString::fromStdString(r.c->metric) == counter)
            errors.push_back(std::abs(r.error()));
    QVERIFY(!errors.empty());
    std::sort(errors.begin(), errors.end());
    const double median = (errors[(errors.size() - 1) / 2] + errors[errors.size() / 2]) / 2;
    const QString what = QStringLiteral("validate, %1: %2 runs, median %3%, worst %4%")
                             .arg(counter)
                             .arg(errors.size())
                             .arg(100 * median, 0, 'f', 1)
                             .arg(100 * errors.back(), 0, 'f', 1);
    qInfo().noquote() << what;
    QVERIFY2(errors.back() <= 0.12, qPrintable(what));
    // Active: torchtune's seven validate rows. The five LoRA and QLoRA ones have a median of 5.3%, both
    // signs (QLoRA 3B +8.6%, LoRA 8B on a 4090 +5.9%, 405B QLoRA -5.3%), not read further; the median of
    // the seven holds since the README table's two full fine-tuning rows came in (planned as they came,
    // -0.3% and -0.5%), which is growth of the set, not a fix of those five.
    QEXPECT_FAIL(
        "device",
        "Unsloth's context tables: the 8B rows 7.6-11.1% under, the 70B rows 1.8% and 6.3%, median 9.9% "
        "(8.5% before their NF4 base was planned double-quantised, as Unsloth always loads it; 5.5-7.9% "
        "before the allocator Unsloth sets on import was planned), the gap per token in the ratio of the "
        "models' extra query heads, as xformers' K/V expansion would make; the table's runs are planned with "
        "flash-attn, which Unsloth's Ampere install brings, and nothing is chosen on them.",
        Continue);
    QVERIFY2(median <= 0.05, qPrintable(what));
}

void TestFineTuning::linearAttentionLayersAreNotTargeted() {
    // Qwen3-Next: PEFT's q_proj/v_proj match the 12 attention layers only (the Gated DeltaNet layers name
    // theirs in_proj_qkvz, in_proj_ba, out_proj), and q_proj carries the output gate: 2 x 16 x 256 = 8,192
    // outputs. Rank 16: 12 x 16 x ((2,048 + 8,192) + (2,048 + 512)) = 2,457,600 trainable.
    json doc = trainingDoc({{"preset", "Qwen/Qwen3-Next-80B-A3B-Instruct"}});
    doc["training"]["fine_tuning"] = {
        {"method", "lora"}, {"rank", 16}, {"target_modules", {"q_proj", "v_proj"}}};
    const Scenario sc = scenarioFromJson(doc);
    QCOMPARE(trainableParameters(sc), std::uint64_t{12} * 16 * ((2048 + 8192) + (2048 + 512)));
    // Targeting the linear layers' projections adapts the other 36: in_proj_qkvz 2,048 -> 12,288.
    doc["training"]["fine_tuning"]["target_modules"] = {"in_proj_qkvz"};
    QCOMPARE(trainableParameters(scenarioFromJson(doc)), std::uint64_t{36} * 16 * (2048 + 12288));
    // Qwen3.5 keeps the DeltaNet's projections apart (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a), which
    // "all-linear" adapts with the rest. Qwen3.5-4B (hidden 2560, FFN 9216), rank 16: 24 DeltaNet layers of
    // qkv 2560 -> 8192, z 2560 -> 4096, b and a 2560 -> 32, out_proj 4096 -> 2560; 8 attention layers of
    // q 2560 -> 8192 (with its gate), k and v 2560 -> 1024, o 4096 -> 2560; 32 MLPs of 2560 <-> 9216 three
    // times.
    json q35 = trainingDoc({{"preset", "Qwen/Qwen3.5-4B"}});
    q35["training"]["fine_tuning"] = {{"method", "lora"}, {"rank", 16}, {"target_modules", "all-linear"}};
    const std::uint64_t deltaNet = (2560 + 8192) + (2560 + 4096) + 2 * (2560 + 32) + (4096 + 2560);
    const std::uint64_t attention = (2560 + 8192) + 2 * (2560 + 1024) + (4096 + 2560);
    const std::uint64_t mlp = 3 * (2560 + 9216);
    QCOMPARE(trainableParameters(scenarioFromJson(q35)), 16 * (24 * deltaNet + 8 * attention + 32 * mlp));
    QCOMPARE(trainableParameters(scenarioFromJson(q35)), std::uint64_t{32464896});
    // "all-linear" resolves to the names this model has, as PEFT finds them, so the plan and the report
    // list those and no other family's.
    const std::vector<std::string> resolved = {"q_proj",    "k_proj",    "v_proj",    "o_proj",
                                               "gate_proj", "up_proj",   "down_proj", "in_proj_qkv",
                                               "in_proj_z", "in_proj_b", "in_proj_a", "out_proj"};
    QVERIFY(scenarioFromJson(q35).training.fineTuning.targets == resolved);
}

namespace {

json unslothLlama8b(int sequence) {
    json doc = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
    doc["training"]["framework"] = "unsloth";
    doc["training"]["precision"] = "bf16";
    doc["training"]["sequence_length"] = sequence;
    doc["training"]["activation_checkpointing"] = "full";
    doc["training"]["fine_tuning"] = {
        {"method", "qlora"},
        {"rank", 32},
        {"target_modules", {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}}};
    return doc;
}

} // namespace

void TestFineTuning::peftStepByHand() {
    // Answer.AI's LoRA run of Llama 2 7B, one sample of 2,048 tokens (core/plan/peftstep.cpp): the most the
    // step's own tensors hold is when log_softmax's backward has written its gradient, before nll's goes:
    // every layer's checkpointed input (32 x 2,048 x 4,096 x 2 bytes), the final norm's saved fp32 input
    // and inverse RMS (2,048 x 4,096 x 4 + 2,048 x 4), and four fp32 tensors of the logits' size: the
    // output's fp32 logits (fsdp_qlora keeps the output until the backward is done), log_softmax's output,
    // nll's gradient and log_softmax's (4 x 4 x 2,048 x 32,000).
    PeftStepShape d;
    d.tokens = d.sequence = 2048;
    d.hidden = d.q = d.kv = 4096;
    d.ffn = 11008;
    d.heads = 32;
    d.headDim = 128;
    d.vocab = 32000;
    d.rank = 64;
    for (int m : {0, 1, 2, 4, 5, 6}) // q, k, v, gate, up, down: fsdp_qlora's "all"
        d.targets[m] = true;
    d.dropout = true;
    d.layers = 32;
    d.loss = true;
    CachingAllocatorModel unlimited{AllocatorSettings{}};
    const StepPeaks peaks = replayPeftStep(unlimited, d);
    QCOMPARE(peaks.allocated, 32.0 * 2048 * 4096 * 2 + 2048.0 * 4096 * 4 + 2048.0 * 4 + 16.0 * 2048 * 32000);
    QVERIFY(peaks.reserved > peaks.allocated);
    // The same step on a device that cannot hold what it reserves unbounded (31% beyond the tensors): the
    // allocator releases its cached segments and retries before it fails, as PyTorch's does, and the step
    // runs within the device, reserving less.
    AllocatorSettings device;
    device.deviceMemory = static_cast<std::uint64_t>(peaks.allocated * 1.2);
    CachingAllocatorModel bounded{device};
    const StepPeaks tight = replayPeftStep(bounded, d);
    QCOMPARE(tight.allocated, peaks.allocated);
    QVERIFY(tight.reserved <= static_cast<double>(device.deviceMemory));
    QVERIFY(tight.reserved < peaks.reserved);
    // Less than the tensors need: out of memory, and the figure says by how much it would have needed more.
    device.deviceMemory = static_cast<std::uint64_t>(peaks.allocated * 0.9);
    CachingAllocatorModel small{device};
    QVERIFY(replayPeftStep(small, d).reserved > static_cast<double>(device.deviceMemory));
}

void TestFineTuning::unslothStepReplayed() {
    // The step through the caching allocator (core/plan/unslothreplay.cpp), Unsloth's table's 80 GB row:
    // Llama 3.1 8B, QLoRA r32 on every projection, 342,733 tokens, inputs offloaded. The most it holds is in
    // LoRA_MLP.backward, once matmul_lora has made DW and is adding (dY B^T)(s A^T) into it: dY, the
    // rebuilt layer's input and output, the first norm's output, the residual sum and the second norm's
    // output (6 x 4096); Q and the attention output (2 x 4096), K and V (2 x 1024); e, g, DW and the
    // product being added (4 x 14336); X A (32): 92,192 values, 184,384 bytes; two fp32 inverse RMS (8) and
    // the fp32 log-sum-exp per head (128): 184,520 bytes a token; and the scaled cast of the fp32 adapter
    // (s * B.to(bf16)), 32 x 14336 x 2 bytes, whatever the length.
    json doc = unslothLlama8b(342733);
    doc["training"]["activation_offloading"] = true;
    doc["training"]["optimizer"] = "adam8bit";
    doc["cluster"] = {{"gpu_memory_gib", 80}, {"num_gpus", 1}};
    // Unsloth sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True on import (unsloth/__init__.py at
    // e3162dc5bf): the reader's default for it, the allocator the replay runs.
    const Scenario sc = scenarioFromJson(doc);
    QVERIFY(sc.cluster.expandableSegments);
    QCOMPARE(sc.overheads.allocatorOverheadFraction, 0.015);
    // With roundup_power2_divisions:[32:256,64:128,256:64,>:32] beside it: PyTorch's parse gives 256
    // divisions to the five intervals from 1 MiB to 32 MiB, 128 to [32, 64), 64 to [64, 256) and 32 to the
    // rest. An f-wide tensor here, 342,733 x 14,336 x 2 = 9,826,840,576 bytes, lies in [8, 16) GiB: steps of
    // 256 MiB, 37 of them, 9,932,111,872 bytes (1.07% more).
    const AllocatorSettings unsloth = unslothAllocatorSettings(sc);
    QVERIFY(unsloth.expandableSegments);
    QCOMPARE(unsloth.roundupPower2Divisions,
             (std::vector<int>{256, 256, 256, 256, 256, 128, 64, 64, 32, 32, 32, 32, 32, 32, 32, 32}));
    QCOMPARE(alloc::roundSize(9826840576ull, unsloth), std::uint64_t{37} * 268435456);
    const StepReplay replay = unslothStepReplay(sc, 32, 14336);
    QVERIFY(replay.replayed);
    QCOMPARE(replay.allocated, 342733.0 * 184520 + 32.0 * 14336 * 2);
    // The segments around them: ascending addresses, tensors of five widths freed in another order than they
    // came, in segments that grow at their end (a free block inside one serves any smaller request, a larger
    // one maps pages at the end). No constant; what it comes to is 5.5% beyond the tensors here.
    QVERIFY(replay.reserved > replay.allocated);
    qInfo().noquote() << QStringLiteral("Unsloth 8B at 342,733 tokens: %1 GiB allocated, %2 GiB reserved")
                             .arg(replay.allocated / kGiB, 0, 'f', 2)
                             .arg(replay.reserved / kGiB, 0, 'f', 2);
    // In the estimate the layers' tensors reserve what the replay found instead of the fraction that stands
    // for the allocator elsewhere (1.5% with expandable segments): the overhead at the peak is the fraction
    // of the rest plus the replay's slack.
    const Estimate est = estimate(sc);
    double managed = 0;
    for (Category c :
         {Category::Weights, Category::Gradients, Category::MasterWeights, Category::OptimizerStates,
          Category::Temporaries, Category::Activations, Category::AttentionScores, Category::Logits,
          Category::GatherBuffers, Category::Workspaces})
        managed += est.perGpu[c];
    QVERIFY(std::abs(est.perGpu[Category::AllocatorOverhead] -
                     (0.015 * managed + replay.reserved - replay.allocated - 0.015 * replay.allocated)) < 1);
    // With PyTorch's default allocator (expandable_segments false in the file, which the replay ignored
    // before) the same tensors, each large one in a segment of its own: 8.9% beyond them.
    json plain = doc;
    plain["cluster"]["expandable_segments"] = false;
    QCOMPARE(unslothAllocatorSettings(scenarioFromJson(plain)).roundupPower2Divisions,
             AllocatorSettings{}.roundupPower2Divisions);
    const StepReplay cached = unslothStepReplay(scenarioFromJson(plain), 32, 14336);
    QVERIFY(cached.replayed);
    QCOMPARE(cached.allocated, replay.allocated);
    QVERIFY(cached.reserved > replay.reserved);
    qInfo().noquote() << QStringLiteral("with PyTorch's default allocator: %1 GiB reserved")
                             .arg(cached.reserved / kGiB, 0, 'f', 2);
    // xformers' path (no flash-attn, or a GPU before Ampere) saves K and V copied out to all 32 query heads:
    // 2 x (4096 - 1024) values more at the same point, 196,808 bytes a token.
    json xformers = doc;
    xformers["training"]["attention"] = "xformers";
    const StepReplay wide = unslothStepReplay(scenarioFromJson(xformers), 32, 14336);
    QVERIFY(wide.replayed);
    QCOMPARE(wide.allocated, 342733.0 * 196808 + 32.0 * 14336 * 2);
    // Without Unsloth's kernels (lora_dropout > 0 runs PEFT's layers) nothing is replayed.
    doc["training"]["fine_tuning"]["dropout"] = 0.05;
    QVERIFY(!unslothStepReplay(scenarioFromJson(doc), 32, 14336).replayed);
}

void TestFineTuning::unslothTablePerToken() {
    // Unsloth's context tables per token between two rows: what the table grows by (the GPUs' sizes over the
    // tokens between them) and what the plan grows by as planned (with the allocator Unsloth sets on
    // import), which is less: the per-token part of the rows' miss (docs/frameworks.md, *Against Unsloth's
    // tables*). The plan's figures are pinned, so that they do not move unnoticed.
    struct Rows {
        const char *from, *to;
        double fromTokens, toTokens, gib; // the two rows' lengths and the GiB between their GPUs
        double table, plan;               // KiB a token
        double tableFixed, planFixed;     // GiB, the lines through the two rows at no tokens
    };
    // Llama 3.1 8B, 12 GB to 80 GB: 68 GiB over 320,885 tokens, 222.2 KiB a token (1 GiB per 4,719);
    // Llama 3.3 70B, 48 GB to 80 GB: 32 GiB over 77,283 tokens, 434.2.
    const Rows rows[] = {{"unsloth-llama3.1-8b-qlora-12gb", "unsloth-llama3.1-8b-qlora-80gb", 21848, 342733,
                          68, 222.2, 197.5, 7.37, 6.75},
                         {"unsloth-llama3.3-70b-qlora-48gb", "unsloth-llama3.3-70b-qlora-80gb", 12106, 89389,
                          32, 434.2, 377.5, 42.99, 42.79}};
    for (const Rows& row : rows) {
        const CaseResult *from = nullptr, *to = nullptr;
        for (const CaseResult& r : runs().results) {
            if (r.c->id == row.from)
                from = &r;
            if (r.c->id == row.to)
                to = &r;
        }
        QVERIFY(from && to);
        const double tokens = row.toTokens - row.fromTokens;
        const double table = (to->measured - from->measured) / tokens / 1024;
        const double plan = (to->estimated - from->estimated) / tokens / 1024;
        // Where each line meets no tokens: what neither grows with the length.
        const double tableFixed = (from->measured - table * 1024 * row.fromTokens) / kGiB;
        const double planFixed = (from->estimated - plan * 1024 * row.fromTokens) / kGiB;
        const QString what = QStringLiteral("%1 to %2, KiB a token: the table %3, the plan %4; GiB at no "
                                            "tokens: the table %5, the plan %6")
                                 .arg(row.from, row.to)
                                 .arg(table, 0, 'f', 1)
                                 .arg(plan, 0, 'f', 1)
                                 .arg(tableFixed, 0, 'f', 2)
                                 .arg(planFixed, 0, 'f', 2);
        qInfo().noquote() << what;
        QVERIFY2(std::abs(table - row.gib * 1048576 / tokens) < 0.01 && std::abs(table - row.table) < 0.1,
                 qPrintable(what));
        QVERIFY2(std::abs(plan - row.plan) < 0.5, qPrintable(what));
        QVERIFY2(std::abs(tableFixed - row.tableFixed) < 0.005 && std::abs(planFixed - row.planFixed) < 0.02,
                 qPrintable(what));
    }
}

void TestFineTuning::unslothLayersByHand() {
    // Llama 3.1 8B under Unsloth's kernels (unsloth/kernels/fast_lora.py at e3162dc5), per token in bf16:
    // hidden 4096, 32 query heads and 8 KV heads of 128, MLP 14336.
    // Saved: the first norm's output, the residual sum and the second norm's output (3 x 4096); Q, K, V and
    // the attention output (4096 + 1024 + 1024 + 4096); the gate and up results (2 x 14336): 51,200 values,
    // 102,400 bytes; two fp32 inverse RMS (8) and the attention's fp32 log-sum-exp per head (128): 102,536.
    // The backward's working set in LoRA_MLP.backward: dY and the rebuilt output (2 x 4096), DW and the
    // f-wide LoRA product (2 x 14336): 36,864 values, 73,728 bytes. The layer's input: 8,192 bytes.
    const double tokens = 4096;
    const Scenario sc = scenarioFromJson(unslothLlama8b(4096));
    QVERIFY(unslothFallback(sc).empty());
    const LayerActivations full = perSample(sc, false, 14336, Checkpointing::Full);
    QCOMPARE(full.stored, 8192 * tokens);
    QCOMPARE(full.transient, (102536 + 73728) * tokens);
    QCOMPARE(full.scores + full.transientScores, 0.0);
    const LayerActivations none = perSample(sc, false, 14336, Checkpointing::None);
    QCOMPARE(none.stored, (8192 + 102536) * tokens);
    QCOMPARE(none.transient, 73728 * tokens);
    // PEFT's layers for the same run keep an fp32 copy of each adapted input (six of 4096 values and one
    // of 14336: 155,648 bytes a token on their own), which Unsloth's kernels never make.
    json peft = unslothLlama8b(4096);
    peft["training"]["framework"] = "huggingface";
    const double peftLayer = perSample(scenarioFromJson(peft), false, 14336, Checkpointing::Full).transient;
    QVERIFY(peftLayer - 155648 * tokens > 102536 * tokens);

    // xformers' path (no flash-attn installed, or a GPU before Ampere) saves K and V expanded to all 32 query
    // heads: 2 x (4096 - 1024) values more, 12,288 bytes a token (114,824 saved).
    json xformers = unslothLlama8b(4096);
    xformers["training"]["attention"] = "xformers";
    const LayerActivations x = perSample(scenarioFromJson(xformers), false, 14336, Checkpointing::Full);
    QCOMPARE(x.transient, (114824 + 73728) * tokens);
    // On a T4 (compute capability 7.5) Unsloth never takes flash-attn: the reader plans xformers and says so.
    json t4 = unslothLlama8b(4096);
    t4["cluster"] = {{"gpu", "Tesla-T4"}, {"gpu_memory_gib", 14.74}, {"num_gpus", 1}};
    const Scenario onT4 = scenarioFromJson(t4);
    QCOMPARE(onT4.training.attention, Attention::Xformers);
    QVERIFY(std::any_of(onT4.warnings.begin(), onT4.warnings.end(), [](const std::string& w) {
        return w.find("runs xformers' path") != std::string::npos;
    }));
    // Elsewhere xformers is not a setting: the other frameworks and inference say so, naming the field.
    json other = unslothLlama8b(4096);
    other["training"]["framework"] = "huggingface";
    other["training"]["attention"] = "xformers";
    try {
        scenarioFromJson(other);
        QFAIL("xformers outside Unsloth was accepted");
    } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("training.attention") != std::string::npos, e.what());
    }

    // The loss: Cut Cross-Entropy by default (no logits); at most 1,024 tokens a micro-batch Unsloth returns
    // the logits and its fast cross-entropy keeps them in bf16 and writes their gradient in place: the
    // output layer's input (2 x 4096 bytes, as every profile counts it) and 2 bytes a vocabulary entry,
    // 128,256 of them, the same at the backward's start.
    QCOMPARE(atLoss(sc, Phase::Backward)[Category::Logits], 2.0 * 2 * 4096 * tokens);
    const Scenario shortRun = scenarioFromJson(unslothLlama8b(1024));
    const double logits = 2.0 * 2 * 4096 * 1024 + 2.0 * 1024 * 128256;
    QCOMPARE(atLoss(shortRun, Phase::Forward)[Category::Logits], logits);
    QCOMPARE(atLoss(shortRun, Phase::Backward)[Category::Logits], logits);
}

void TestFineTuning::unslothReaderChecks() {
    // One GPU (or data-parallel copies), whole layers checkpointed.
    json tp = unslothLlama8b(2048);
    tp["cluster"]["tensor_parallel"] = 2;
    tp["cluster"]["num_gpus"] = 2;
    QVERIFY_THROWS_EXCEPTION(Error, scenarioFromJson(tp));
    json selective = unslothLlama8b(2048);
    selective["training"]["activation_checkpointing"] = "selective";
    try {
        scenarioFromJson(selective);
        QFAIL("selective checkpointing under Unsloth was accepted");
    } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("training.activation_checkpointing") != std::string::npos,
                 e.what());
    }
    // Where its fast LoRA kernels do not run, the plan says so and uses PEFT's layers.
    json dropout = unslothLlama8b(2048);
    dropout["training"]["fine_tuning"]["dropout"] = 0.05;
    const Scenario sc = scenarioFromJson(dropout);
    QVERIFY(!unslothFallback(sc).empty());
    QVERIFY(std::any_of(sc.warnings.begin(), sc.warnings.end(),
                        [](const std::string& w) { return w.find("lora_dropout 0") != std::string::npos; }));
    json partial = unslothLlama8b(2048);
    partial["training"]["fine_tuning"]["target_modules"] = {"q_proj", "v_proj"};
    QVERIFY(!unslothFallback(scenarioFromJson(partial)).empty());
    QVERIFY(unslothFallback(scenarioFromJson(unslothLlama8b(2048))).empty());
    // Its 4-bit base is double-quantised whatever the file leaves out (FastLlamaModel.from_pretrained's
    // BitsAndBytesConfig sets bnb_4bit_use_double_quant): one uint8 absmax per 64 values, not an fp32 one,
    // 0.29 GiB less for Llama 3.1 8B's 6,979,321,856 quantised weights (3/64 of a byte each, 327,155,712
    // bytes, less the second-level scales of 256 blocks each, 4 bytes per 16,384 values: 1,703,936).
    const Scenario unsloth = scenarioFromJson(unslothLlama8b(2048));
    QVERIFY(unsloth.training.fineTuning.doubleQuantization);
    json plainAbsmax = unslothLlama8b(2048);
    plainAbsmax["training"]["fine_tuning"]["double_quantization"] = false;
    const double weights = at(unsloth, Phase::Optimizer)[Category::Weights];
    const double fp32Absmax = at(scenarioFromJson(plainAbsmax), Phase::Optimizer)[Category::Weights];
    QVERIFY2(std::abs(fp32Absmax - weights - (327155712.0 - 1703936.0)) < 4096,
             qPrintable(QString::number(fp32Absmax - weights, 'f', 0)));
    // PEFT's own loader leaves it to the caller's BitsAndBytesConfig, whose default is off; What would make
    // it fit offers it there, worth those bytes and the 3% the allocator keeps beyond its blocks (the
    // fraction that stands for it without a replay), and not where it is already on.
    json peft = unslothLlama8b(2048);
    peft["training"]["framework"] = "huggingface";
    const Scenario hf = scenarioFromJson(peft);
    QVERIFY(!hf.training.fineTuning.doubleQuantization);
    auto doubleQuantSaving = [](const Scenario& plan) -> std::optional<double> {
        for (const Saving& s : rankSavings(plan))
            if (s.id == "double_quantization")
                return s.bytesSaved;
        return std::nullopt;
    };
    const std::optional<double> saved = doubleQuantSaving(hf);
    QVERIFY(saved);
    QVERIFY2(std::abs(*saved - 1.03 * (327155712.0 - 1703936.0)) < 8192,
             qPrintable(QString::number(*saved, 'f', 0)));
    QVERIFY(!doubleQuantSaving(unsloth));
}

QTEST_GUILESS_MAIN(TestFineTuning)
#include "tst_finetuning.moc"
