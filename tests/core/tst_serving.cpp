// SPDX-License-Identifier: GPL-3.0-or-later
// Inference serving: quantised checkpoints, the engines' KV pools, and their published figures.
#include "core/compare/trackrecord.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/io/estimatejson.h"
#include "core/io/estimatewords.h"
#include "core/io/servingcases.h"
#include "core/model/hfconfig.h"
#include "core/model/presets.h"
#include "core/plan/gpucatalogue.h"
#include "core/plan/layout.h"
#include "core/serve/engineversions.h"
#include "core/serve/estimate.h"
#include "core/serve/kvpool.h"
#include "tests/testutil.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>

using namespace headroom;
using namespace headroom::test;
using nlohmann::json;

namespace {

json inferenceDoc(const json& model, const json& inference, const json& cluster) {
    json doc = {{"schema", "headroom.scenario/1"},
                {"name", "serving"},
                {"model", model},
                {"inference", inference},
                {"cluster", {{"gpu", "H100-SXM-80GB"}, {"num_gpus", 1}}}};
    if (!cluster.is_null()) // `{}` in a braced list is JSON null: merge_patch would delete everything
        doc["cluster"].merge_patch(cluster);
    return doc;
}

double weightBytes(const json& model) {
    const Scenario sc =
        scenarioFromJson(inferenceDoc(model, {{"context_length", 128}}, {{"gpu", "H200-141GB"}}));
    return estimate(sc).perGpu[Category::Weights];
}

// Qwen/Qwen3-235B-A22B's config.json (the FP8 checkpoint has the same shapes).
json qwen235() {
    return {
        {"model_type", "qwen3_moe"},       {"hidden_size", 4096},           {"num_hidden_layers", 94},
        {"num_attention_heads", 64},       {"num_key_value_heads", 4},      {"head_dim", 128},
        {"intermediate_size", 12288},      {"moe_intermediate_size", 1536}, {"num_experts", 128},
        {"num_experts_per_tok", 8},        {"vocab_size", 151936},          {"tie_word_embeddings", false},
        {"max_position_embeddings", 40960}};
}

// RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic: Llama 3.3 70B with llm-compressor's FP8 "dynamic" scheme
// (compressed-tensors: fp8 weights with one scale per output channel, lm_head left in bf16).
json llama70Fp8() {
    json m = findModelPreset("meta-llama/Meta-Llama-3-70B")->config;
    m["quantization_config"] = {
        {"quant_method", "compressed-tensors"},
        {"format", "float-quantized"},
        {"ignore", {"lm_head"}},
        {"config_groups",
         {{"group_0",
           {{"targets", {"Linear"}},
            {"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}, {"symmetric", true}}},
            {"input_activations",
             {{"num_bits", 8}, {"type", "float"}, {"strategy", "token"}, {"dynamic", true}}}}}}}};
    return m;
}

} // namespace

class TestServing : public QObject {
    Q_OBJECT
private slots:
    void mxfp4CheckpointsMatchTheirFiles();
    void fp8BlockCheckpointMatchesItsInventory();
    void gptqAndOverrides();
    void gptqCheckpointsMatchTheirFiles();
    void badQuantizationConfig();
    void aPlanPastWhatAnInt64Counts();
    void theTensorParallelThatServes();
    void skipListsInTheCheckpointsNames();
    void vllmMeasuredRuns_data();
    void vllmMeasuredRuns();
    void vllmPoolArithmeticFromLogs();
    void vllmHybridPool();
    void sglangPool();
    void sglangLoadReserve();
    void kvCacheKeepsTheComputeDtype();
    void engineBoundsPrefill();
    void engineSavingsSpeakInRequests();
    void servingExpertParallelWithoutDataParallel();
    void huggingFaceGenerate();
    void inferenceJson();
    void servingExamples();
    void vllmReleases();
    void servingLogs();
    void servingTrackRecordFollowsTheLogs();
    void gemma3Serving();
    void linearAttentionState();
    void v0StepAndFlashInferSampler();
    void whatEachReleaseRuns();
    void communicatorsAndStartup();
    void rotaryTablesAsVllmCachesThem();
    void engineQuantisesLinearLayersOnly();
    void allReduceFusionOnHopperAndBlackwell();
    void nvlsBuffersOnNvswitchSystems();
    void cudaGraphEstimateOutsideTheBudget();
    void chunkedAttentionByRelease();
    void mamba2StateInThePool();
    void nemotronHStateAndBlocks();
    void qwen35StateFromItsConfig();
    void sglangStatePool();
};

void TestServing::mxfp4CheckpointsMatchTheirFiles() {
    // The "total_size" of openai/gpt-oss-20b's model.safetensors.index.json is 13,761,264,768 bytes; that
    // of gpt-oss-120b is 65,248,815,744 (both quoted verbatim in public repositories' copies of the
    // index). Experts are MXFP4 (half a byte per value plus a one-byte scale per 32), everything that
    // modules_to_not_convert names stays bf16.
    QCOMPARE(weightBytes({{"preset", "openai/gpt-oss-20b"}}), 13761264768.0);
    QCOMPARE(weightBytes({{"preset", "openai/gpt-oss-120b"}}), 65248815744.0);
    // Costed as bf16, the 20b would be 2 bytes x 20,914,757,184 parameters: 3x the file.
    const json bf16Doc = inferenceDoc({{"preset", "openai/gpt-oss-20b"}},
                                      {{"context_length", 128}, {"weight_dtype", "bf16"}}, {});
    QCOMPARE(estimate(scenarioFromJson(bf16Doc)).perGpu[Category::Weights], 2.0 * 20914757184);
}

void TestServing::fp8BlockCheckpointMatchesItsInventory() {
    // A tensor inventory of deepseek-ai/DeepSeek-R1 (the DeepSeek-V3 architecture, same FP8 checkpoint
    // layout) lists 641.29 GiB of tensors: fp8 weights with one fp32 scale per 128 x 128 block (a 576-row
    // matrix has 5 row blocks), bf16 norms, router and embeddings, and the multi-token-prediction layer
    // 61 that the model itself does not include. That layer, computed from the inventory's rows:
    auto block = [](double out, double in) {
        return out * in + std::ceil(out / 128) * std::ceil(in / 128) * 4;
    };
    const double moeLayer = block(1536, 7168) + block(24576, 1536) + block(576, 7168) + block(32768, 512) +
                            block(7168, 16384) + (7168 * 2 + 1536 + 512) * 2.0 + 256 * 3 * block(2048, 7168) +
                            3 * block(2048, 7168) + 256 * 7168 * 2.0;
    const double mtp = moeLayer + 256 * 4 /* e_score_correction_bias, fp32 */ + 2 * 129280 * 7168 * 2.0 +
                       7168 * 14336 * 2.0 /* eh_proj */ + 3 * 7168 * 2.0 /* enorm, hnorm, head norm */;
    // The 58 MoE layers' fp32 e_score_correction_bias is a buffer the parameter count leaves out.
    const double total = weightBytes({{"preset", "deepseek-ai/DeepSeek-V3"}}) + 58 * 256 * 4 + mtp;
    QVERIFY2(total >= 641.285 * kGiB && total < 641.295 * kGiB,
             qPrintable(QString::number(total / kGiB, 'f', 4) + " GiB, inventory 641.29"));
}

void TestServing::gptqAndOverrides() {
    // GPTQ int4, groups of 128 (AutoGPTQ's QuantLinear): per out x in matrix, qweight in*out/2 bytes,
    // qzeros (in/128)*out/2, fp16 scales (in/128)*out*2, int32 g_idx in*4. Llama-2-7B: 32 layers of four
    // 4096 x 4096 and three 4096 x 11008 matrices; embeddings, head and norms stay fp16.
    json cfg = findModelPreset("meta-llama/Llama-2-7b-hf")->config;
    cfg["quantization_config"] = {
        {"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}, {"desc_act", false}};
    auto gptq = [](double out, double in) {
        return in * out / 2 + in / 128 * out / 2 + in / 128 * out * 2 + in * 4;
    };
    const double layer = 4 * gptq(4096, 4096) + 2 * gptq(11008, 4096) + gptq(4096, 11008) + 2 * 4096 * 2.0;
    const double expected = 32 * layer + 2 * 32000 * 4096 * 2.0 + 4096 * 2.0;
    QCOMPARE(weightBytes(cfg), expected);
    // AWQ: the same packing without g_idx.
    cfg["quantization_config"] = {
        {"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"zero_point", true}};
    QCOMPARE(weightBytes(cfg), expected - 32 * (6 * 4096 * 4.0 + 11008 * 4.0));
    // A listed module stays 16-bit: leaving every self_attn out adds back its 16-bit size.
    cfg["quantization_config"]["modules_to_not_convert"] = {"model.layers.*.self_attn"};
    auto awq = [](double out, double in) { return in * out / 2 + in / 128 * out / 2 + in / 128 * out * 2; };
    QCOMPARE(weightBytes(cfg),
             expected - 32 * (6 * 4096 * 4.0 + 11008 * 4.0) + 32 * 4 * (4096 * 4096 * 2.0 - awq(4096, 4096)));
    // An explicit weight_dtype overrides the checkpoint's storage.
    const json doc = inferenceDoc(cfg, {{"context_length", 128}, {"weight_dtype", "fp8"}}, {});
    QCOMPARE(estimate(scenarioFromJson(doc)).perGpu[Category::Weights], 6738415616.0);
}

void TestServing::gptqCheckpointsMatchTheirFiles() {
    // TheBloke/Llama-2-13B-GPTQ's "Provided files" table (AutoGPTQ, 4 bits, act order as listed): main,
    // groups of 128, "7.26 GB"; gptq-4bit-32g-actorder_True "8.00 GB" (decimal GB, two decimals). The same
    // table gives 7.51 GB for groups of 64 where the layout comes to 7.503 GB: 7 MB (0.1%) that the tensors'
    // shapes do not explain, so that row is not asserted.
    json cfg = findModelPreset("meta-llama/Llama-2-7b-hf")->config;
    cfg["hidden_size"] = 5120;
    cfg["intermediate_size"] = 13824;
    cfg["num_hidden_layers"] = 40;
    cfg["num_attention_heads"] = 40;
    cfg["num_key_value_heads"] = 40;
    auto gb = [&](int group, bool actOrder) {
        cfg["quantization_config"] = {
            {"quant_method", "gptq"}, {"bits", 4}, {"group_size", group}, {"desc_act", actOrder}};
        return weightBytes(cfg) / 1e9;
    };
    QCOMPARE(std::round(gb(128, false) * 100) / 100, 7.26);
    QCOMPARE(std::round(gb(32, true) * 100) / 100, 8.00);
    QVERIFY(std::abs(gb(64, true) - 7.51) < 0.01);
}

void TestServing::theTensorParallelThatServes() {
    // The FP8 Qwen3-235B example on one H100 instead of four: by hand, 235 billion parameters at about a
    // byte each are 220 GiB of weights (the plan's own figure below), 110 GiB a GPU at tensor parallel 2 and
    // 55 GiB at 4, against SGLang's 0.93 x 79.6 GiB = 74 GiB budget. One doubling serves nothing, so
    // "What would serve more?" was empty; the change offered is the smallest doubling that serves.
    json doc =
        loadScenarioFile(HEADROOM_SOURCE_DIR "/examples/serve-qwen3-235b-fp8-sglang-4xh100.headroom.json")
            .document;
    doc["cluster"]["num_gpus"] = 1;
    doc["cluster"]["tensor_parallel"] = 1;
    const Scenario one = scenarioFromJson(doc);
    const Estimate e = estimate(one);
    const double weights = e.perGpu[Category::Weights];
    QVERIFY(weights / 2 > 0.93 * 79.6 * test::kGiB && weights / 4 < 0.93 * 79.6 * test::kGiB);
    const auto savings = rankSavings(one);
    const auto tp = std::find_if(savings.begin(), savings.end(),
                                 [](const Saving& s) { return s.id == "tensor_parallel_that_serves"; });
    QVERIFY(tp != savings.end());
    QCOMPARE(QString::fromStdString(tp->description), QStringLiteral("Tensor parallel 4"));
    QCOMPARE(tp->patch["cluster"]["tensor_parallel"].get<int>(), 4);
    QCOMPARE(tp->patch["cluster"]["num_gpus"].get<int>(), 4);
    QVERIFY(tp->concurrencyAfter > 0 && tp->kvTokensGained > 0);
    // Applied, the plan serves.
    doc.merge_patch(tp->patch);
    QVERIFY(estimate(scenarioFromJson(doc)).serving.maxConcurrency > 0);
}

void TestServing::aPlanPastWhatAnInt64Counts() {
    // Llama 3 8B's forward with autograd on, eager attention in fp32, 4,096 sequences of a million tokens:
    // by hand, each of its 32 layers keeps a 4-byte score per head, query and key, 4,096 x 32 x 10^12 x 4
    // bytes = 5.2e17, and the 32 of them 1.7e19 bytes, past the 2^63 - 1 (9.2e18) an int64 counts. The
    // estimate's JSON wrote -9223372036854775808 for them (llround of a value it cannot hold); it saturates.
    const json doc = {{"schema", "headroom.scenario/1"},
                      {"model", {{"preset", "meta-llama/Meta-Llama-3-8B"}}},
                      {"inference",
                       {{"batch_size", 4096},
                        {"context_length", 1000000},
                        {"weight_dtype", "fp32"},
                        {"grad_mode", "enabled"},
                        {"attention", "eager"},
                        {"kv_cache", false}}},
                      {"cluster", {{"gpu", "H100-SXM-80GB"}, {"num_gpus", 1}}}};
    Scenario sc;
    Estimate est;
    json j;
    try {
        sc = scenarioFromJson(doc, ".");
        est = estimate(sc);
        j = estimateToJson(sc, est);
    } catch (const std::exception& e) {
        QFAIL(e.what());
    }
    QVERIFY(est.perGpu[Category::AttentionScores] >= 32 * 4096 * 32 * 4e12);
    constexpr long long most = std::numeric_limits<long long>::max();
    QCOMPARE(j["per_gpu_bytes"]["attention_scores"].get<long long>(), most);
    QCOMPARE(j["peak_bytes"].get<long long>(), most);
    QCOMPARE(j["allocated_peak_bytes"].get<long long>(), most);
    QCOMPARE(j["reserved_peak_bytes"].get<long long>(), most);
    for (const auto& [key, value] : j["per_gpu_bytes"].items())
        QVERIFY2(value.get<long long>() >= 0, key.c_str());
    for (const json& saving : j["savings"])
        QVERIFY(saving["bytes_saved"].get<long long>() >= 0);
}

void TestServing::badQuantizationConfig() {
    json cfg = findModelPreset("meta-llama/Llama-2-7b-hf")->config;
    auto error = [&](const json& q) {
        cfg["quantization_config"] = q;
        try {
            scenarioFromJson(inferenceDoc(cfg, {{"context_length", 128}}, {}));
        } catch (const Error& e) {
            return QString::fromUtf8(e.what());
        }
        return QString();
    };
    QVERIFY(error({{"quant_method", "hqq9"}}).contains("model.quantization_config.quant_method"));
    QVERIFY(error({{"quant_method", "hqq9"}}).contains("hqq9"));
    QVERIFY(error({{"bits", 4}}).contains("quant_method"));
    QVERIFY(error({{"quant_method", "fp8"}, {"weight_block_size", {128}}}).contains("weight_block_size"));
    QVERIFY(error({{"quant_method", "gptq"}, {"bits", 3000}}).contains("bits"));
    QVERIFY(error({{"quant_method", "awq"}, {"modules_to_not_convert", "lm_head"}})
                .contains("modules_to_not_convert"));
    // Meta's FP8 checkpoints (fbgemm_fp8) are read, not refused: the same fp8 values as the
    // compressed-tensors channel layout, with fp32 row scales where that one stores 16-bit ones. Llama 3 70B
    // with the LM head left in bf16: 2 more bytes per output row of every quantised matrix, 80 layers of q
    // (8,192), k and v (1,024 each), o (8,192), gate and up (28,672 each) and down (8,192) rows.
    json fbgemm = llama70Fp8();
    fbgemm["quantization_config"] = {{"quant_method", "fbgemm_fp8"},
                                     {"activation_scale_ub", 1200.0},
                                     {"modules_to_not_convert", {"lm_head"}}};
    QVERIFY(error(fbgemm["quantization_config"]).isEmpty());
    const double rows = 80.0 * (8192 + 1024 + 1024 + 8192 + 28672 + 28672 + 8192);
    QCOMPARE(weightBytes(fbgemm) - weightBytes(llama70Fp8()), 2 * rows);
    // Llama 4's skip list names the language model's modules under language_model and its MLP feed_forward
    // (modeling_llama4.py). Scout in fbgemm_fp8 with attention and the shared expert left in bf16: per layer,
    // each of those matrices costs 2 bytes a value instead of 1 and a 4-byte row scale, n - 4 x out more:
    // q and o 5120 x 5120, k and v 1024 x 5120; the shared expert's gate and up 8192 x 5120, down 5120 x
    // 8192; all 48 layers are MoE layers with a shared expert.
    json scout = findModelPreset("meta-llama/Llama-4-Scout-17B-16E-Instruct")->config;
    scout["quantization_config"] = {{"quant_method", "fbgemm_fp8"},
                                    {"modules_to_not_convert", {"vision_model"}}};
    const double allFp8 = weightBytes(scout);
    scout["quantization_config"]["modules_to_not_convert"] = {
        "language_model.model.layers.*.self_attn", "language_model.model.layers.*.feed_forward.shared_expert",
        "vision_model"};
    const double attention = 2 * (5120.0 * 5120 - 4 * 5120) + 2 * (1024.0 * 5120 - 4 * 1024);
    const double shared = 3 * 8192.0 * 5120 - 4 * (8192 + 8192 + 5120);
    QCOMPARE(weightBytes(scout) - allFp8, 48 * (attention + shared));
}

void TestServing::skipListsInTheCheckpointsNames() {
    // Skip lists name modules as each checkpoint writes them. Qwen3.5-35B-A3B in compressed-tensors FP8
    // (one byte a value and a 16-bit scale per output row) with llm-compressor's Qwen3.5-MoE ignore list
    // (examples/quantization_w8a8_fp8/qwen3_5_moe.py): its "re:.*linear_attn.*" keeps every Gated DeltaNet
    // projection in bf16, n - 2 x out more bytes each: in_proj_qkv 8192 x 2048, in_proj_z 4096 x 2048,
    // in_proj_b and in_proj_a 32 x 2048, out_proj 2048 x 4096, in 30 layers. "re:.*mlp\\.shared_expert$"
    // names the shared expert itself, not its gate_proj (re.match on a linear layer's own name), and
    // "re:.*mlp.gate$" the router, not gate_proj.
    json q35 = findModelPreset("Qwen/Qwen3.5-35B-A3B")->config;
    json ct = llama70Fp8()["quantization_config"];
    ct["ignore"] = {"lm_head"};
    q35["quantization_config"] = ct;
    const double plain = weightBytes(q35);
    q35["quantization_config"]["ignore"] = {"re:.*lm_head",
                                            "re:visual.*",
                                            "re:model.visual.*",
                                            "re:.*mlp.gate$",
                                            "re:.*embed_tokens$",
                                            "re:.*shared_expert_gate$",
                                            "re:.*mlp\\.shared_expert$",
                                            "re:.*linear_attn.*"};
    const double n = 8192.0 * 2048 + 4096.0 * 2048 + 2 * 32.0 * 2048 + 2048.0 * 4096;
    const double rows = 8192.0 + 4096 + 2 * 32 + 2048;
    QCOMPARE(weightBytes(q35) - plain, 30 * (n - 2 * rows));
    // The same projections by name, as transformers' modules_to_not_convert lists them.
    q35["quantization_config"]["ignore"] = {"lm_head", "model.language_model.layers.0.linear_attn.in_proj_b",
                                            "model.language_model.layers.0.linear_attn.in_proj_a"};
    QCOMPARE(weightBytes(q35) - plain, 2 * (32.0 * 2048 - 2 * 32));
    // Nemotron-H names every block's part its mixer under backbone: block 0 is a Mamba-2 mixer, whose
    // in_proj (10,240 gate + 12,288 convolution inputs + 128 time steps, from 4,480) and out_proj (4,480 from
    // 10,240) stay bf16 when the list names it.
    json nano = findModelPreset("nvidia/NVIDIA-Nemotron-Nano-9B-v2")->config;
    nano["quantization_config"] = ct;
    const double nanoPlain = weightBytes(nano);
    nano["quantization_config"]["ignore"] = {"lm_head", "backbone.layers.0.mixer"};
    QCOMPARE(weightBytes(nano) - nanoPlain, (22656.0 * 4480 - 2 * 22656) + (4480.0 * 10240 - 2 * 4480));
}

void TestServing::vllmMeasuredRuns_data() {
    // vLLM 0.11 on one H100 (79.18 GiB as cudaMemGetInfo reports it), gpu_memory_utilization 0.9,
    // max_model_len 16000, block size 128, from the engines' own log lines ("Model loading took",
    // "torch peak memory increase", "non-torch forward increase memory", "Available KV cache memory"),
    // collected in llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md. GiB.
    QTest::addColumn<QByteArray>("model");
    QTest::addColumn<int>("tp");
    QTest::addColumn<double>("weights");
    QTest::addColumn<double>("profiled");
    QTest::addColumn<double>("available");
    auto row = [](const char* name, const json& model, int tp, double w, double p, double kv) {
        QTest::newRow(name) << QByteArray::fromStdString(model.dump()) << tp << w << p << kv;
    };
    row("Llama-3.1-8B", {{"preset", "meta-llama/Meta-Llama-3-8B"}}, 1, 14.99, 4.76, 51.38);
    row("Qwen3-0.6B", {{"preset", "Qwen/Qwen3-0.6B"}}, 1, 1.12, 5.56, 64.45);
    row("Qwen3-32B", {{"preset", "Qwen/Qwen3-32B"}}, 1, 61.03, 5.64, 4.45);
    row("gpt-oss-20b", {{"preset", "openai/gpt-oss-20b"}}, 1, 13.47, 7.38, 50.28);
    row("Llama-3.3-70B-FP8 TP2", llama70Fp8(), 2, 33.88, 4.84, 32.0);
}

void TestServing::vllmMeasuredRuns() {
    QFETCH(QByteArray, model);
    QFETCH(int, tp);
    QFETCH(double, weights);
    QFETCH(double, profiled);
    QFETCH(double, available);
    const Scenario sc = scenarioFromJson(
        inferenceDoc(json::parse(model.toStdString()),
                     {{"engine", "vllm"},
                      {"engine_version", "vllm 0.11"},
                      {"gpu_memory_utilization", 0.9},
                      {"max_model_len", 16000},
                      {"block_size", 128}},
                     {{"gpu_memory_gib", 79.18}, {"num_gpus", tp}, {"tensor_parallel", tp}}));
    const Estimate est = estimate(sc);
    const ServingEstimate& sv = est.serving;
    auto near = [](double got, double want, double pct, const char* what) {
        QVERIFY2(std::abs(got / kGiB - want) <= want * pct / 100,
                 qPrintable(QStringLiteral("%1: %2 GiB, measured %3").arg(what).arg(got / kGiB).arg(want)));
    };
    near(est.perGpu[Category::Weights], weights, 1, "weights");
    near(sv.profiledBytes, profiled, 2, "profiled step");
    near(sv.availableBytes, available, 2, "available KV memory");
    QCOMPARE(sv.budgetBytes, 0.9 * std::llround(79.18 * kGiB));
    // The pool is whole blocks of what was available.
    QVERIFY(sv.poolBytes <= sv.availableBytes && sv.availableBytes - sv.poolBytes < sv.blockBytes);
}

void TestServing::vllmPoolArithmeticFromLogs() {
    // vllm-project/vllm PR #13596 (V1): "# GPU blocks: 127626" became "GPU KV cache size: 2,042,016
    // tokens" with "Maximum concurrency for 2,048 tokens per request: 997.08x" (blocks of 16).
    const double perLayer = 2.0 * 8 * 128 * 2; // any layer size: the log is in blocks
    const double block = 16 * perLayer * 32;
    KvPool p = vllmKvPool(127626.5 * block, perLayer, 32, 0, 16, 2048, 0, 8192);
    QCOMPARE(p.numBlocks, 127626LL);
    QCOMPARE(p.tokens, 2042016LL);
    QCOMPARE(std::round(p.maxConcurrency * 100) / 100, 997.08);
    // vllm-project/vllm issue #10517, meta-llama/Llama-3.1-8B-Instruct on an RTX 3090: 1,952 blocks
    // serve 20,000-token requests 1.56x; 1,478 blocks hold 23,648 tokens, fewer than one 29,000-token
    // request ("0.82x", and vLLM refuses to start).
    p = vllmKvPool(1952 * block, perLayer, 32, 0, 16, 20000, 0, 2048);
    QCOMPARE(std::round(p.maxConcurrency * 100) / 100, 1.56);
    p = vllmKvPool(1478 * block, perLayer, 32, 0, 16, 29000, 0, 2048);
    QCOMPARE(p.tokens, 23648LL);
    QCOMPARE(std::round(p.maxConcurrency * 100) / 100, 0.82);
    // Nothing available: no blocks.
    QCOMPARE(vllmKvPool(-1e9, perLayer, 32, 0, 16, 2048, 0, 8192).numBlocks, 0LL);
}

void TestServing::vllmHybridPool() {
    // gpt-oss-20b: 12 sliding (128-token window) and 12 full-attention layers, 8 KV heads of 64 in bf16:
    // 2,048 bytes per token per layer. vLLM's hybrid allocator makes two groups of 12 layers; a block of
    // 16 tokens is a 32 KiB page in each of 12 layers (384 KiB). With 10 GiB: floor(10 GiB / 384 KiB) =
    // 27,306 blocks, reported as 27,306 / 2 groups x 16 = 218,448 tokens. A 16,000-token request takes
    // 1,000 full-attention blocks and ceil(min(127 + 8,192, 16,000) / 16) + 1 = 521 sliding ones.
    const KvPool p = vllmKvPool(10 * kGiB, 2048, 12, 12, 16, 16000, 128, 8192);
    QCOMPARE(p.numBlocks, 27306LL);
    QCOMPARE(p.tokens, 218448LL);
    QCOMPARE(p.maxConcurrency, 27306.0 / 1521);
    // Through the estimator: the engine's pool follows layer_types.
    const Scenario sc = scenarioFromJson(
        inferenceDoc({{"preset", "openai/gpt-oss-20b"}}, {{"engine", "vllm"}, {"max_model_len", 16000}}, {}));
    const ServingEstimate& sv = estimate(sc).serving;
    QCOMPARE(sv.kvBytesPerToken, 24 * 2048.0);
    // The newest release reports the pool as max concurrency x max_model_len.
    const KvPool direct = vllmKvPool(sv.availableBytes, 2048, 12, 12, 16, 16000, 128, 8192, {}, {true, 2});
    QCOMPARE(sv.kvCacheTokens, direct.tokens);
    QCOMPARE(direct.tokens, static_cast<long long>(std::floor(direct.maxConcurrency * 16000)));
    QCOMPARE(sv.maxConcurrency, direct.maxConcurrency);
}

void TestServing::sglangPool() {
    // vllm-project/vllm issue #21348: SGLang serving Qwen3-235B-A22B-FP8 on 4 x H100 (TP 4) logged "KV Cache
    // is allocated. #tokens: 367404, K size: 8.23 GB" (SGLang's GB are 2^30 bytes). Each rank keeps one of
    // the 4 KV heads: 128 x 2 bytes of K per layer, 94 layers: K = 367,404 x 24,064 bytes = 8.23 GiB.
    const Scenario sc = scenarioFromJson(inferenceDoc(
        qwen235(), {{"engine", "sglang"}, {"mem_fraction_static", 0.93}, {"max_model_len", 32768}},
        {{"num_gpus", 4}, {"tensor_parallel", 4}}));
    const Estimate est = estimate(sc);
    QCOMPARE(est.serving.kvBytesPerToken, 2.0 * 128 * 2 * 94);
    QCOMPARE(std::round(367404 * est.serving.kvBytesPerToken / 2 / kGiB * 100) / 100, 8.23);
    // The pool arithmetic: whole tokens of what is left, in pages.
    QCOMPARE(sglangKvPool(367404.7 * 48128, 512, 94, 1, 32768).tokens, 367404LL);
    QCOMPARE(sglangKvPool(367404.7 * 48128, 512, 94, 64, 32768).tokens, 367360LL);
    // Degenerate sizes a scenario file can produce (the scenario fuzzer found a cell of 0 bytes: a division
    // to infinity, then a conversion the UB sanitizer stops at): no pool, never a wrapped count; a count past
    // any GPU's memory is capped at 10^15 tokens.
    QCOMPARE(sglangKvPool(1e12, 0, 94, 1, 32768).tokens, 0LL);
    QCOMPARE(vllmKvPool(1e12, 0, 94, 0, 16, 32768, 0, 1).numBlocks, 0LL);
    QCOMPARE(vllmKvPool(1e12, std::numeric_limits<double>::infinity(), 10, 5, 16, 32768, 512, 1).numBlocks,
             0LL);
    QCOMPARE(sglangKvPool(1e300, 1e-300, 1, 1, 1).tokens, 1000000000000000LL);
    // SGLang's budget is mem_fraction_static of what was free after the CUDA context and NCCL were set up
    // (init_torch_distributed's min_per_gpu_memory); the weights come out of it.
    const double freeAtInit =
        est.capacityBytes - est.perGpu[Category::CudaContext] - est.perGpu[Category::CommunicationBuffers];
    QCOMPARE(est.serving.budgetBytes, 0.93 * freeAtInit);
    QVERIFY(est.serving.loadReservedBytes > 0);
    QVERIFY(std::abs(est.serving.availableBytes - (0.93 * freeAtInit - est.perGpu[Category::Weights] -
                                                   est.serving.loadReservedBytes)) < 1);
    // 0.4's default fraction follows the tensor-parallel size (0.85 at TP 4).
    const Scenario dflt =
        scenarioFromJson(inferenceDoc(qwen235(), {{"engine", "sglang"}, {"engine_version", "sglang 0.4"}},
                                      {{"num_gpus", 4}, {"tensor_parallel", 4}}));
    QCOMPARE(estimate(dflt).serving.budgetBytes, 0.85 * freeAtInit);
    // 0.5's comes from the GPU's memory (server_args.py _handle_gpu_memory_settings). By hand for an H100
    // (nvidia-smi: 81,559 MiB) at TP 1: chunked_prefill_size 8,192, cuda_graph_max_bs 256, and 74 piecewise
    // graph sizes up to 8,192 (8 + 14 + 8 + 28 + 16): reserved = 512 + 8,192 x 1.5 + 256 x 2 + 1 / 8 x 1,024
    // + 74 x 8 = 14,032 MiB, and (81,559 - 14,032) / 81,559 = 0.828, the fraction sgl-project/sglang issue
    // #29092 found SGLang using for Qwen3-32B on an H100. At TP 4, cuda_graph_max_bs 512 and 512 MiB for
    // tensor parallelism: 14,928 MiB, 0.817.
    const json qwen32 = {{"preset", "Qwen/Qwen3-32B"}};
    QCOMPARE(
        estimate(scenarioFromJson(inferenceDoc(qwen32, {{"engine", "sglang"}}, {}))).serving.budgetFraction,
        0.828);
    QCOMPARE(estimate(dflt).serving.engineVersion, std::string("sglang 0.4"));
    json tp4 = inferenceDoc(qwen235(), {{"engine", "sglang"}}, {{"num_gpus", 4}, {"tensor_parallel", 4}});
    QCOMPARE(estimate(scenarioFromJson(tp4)).serving.budgetFraction, 0.817);
    // Above 160 GiB (a B200: 183,359 MiB) the prefill chunk is 16,384 tokens and cuda_graph_max_bs 512: 512 +
    // 24,576 + 1,024 + 128 + 8 x 106 piecewise sizes (the 74 up to 8,192 and 32 more by 256 to 16,384) =
    // 27,088 MiB, and (183,359 - 27,088) / 183,359 = 0.852.
    QCOMPARE(estimate(scenarioFromJson(inferenceDoc(qwen32, {{"engine", "sglang"}}, {{"gpu", "B200-180GB"}})))
                 .serving.budgetFraction,
             0.852);
    // A higher fraction is offered from the one in use: 0.4's 0.85 at TP 4 + 0.03 (the budget over the GPU's
    // size, 0.84 here, is not that fraction). The FP8 checkpoint of the example (its log is 0.4's), whose
    // weights leave a pool.
    json fp8 =
        loadScenarioFile(HEADROOM_SOURCE_DIR "/examples/serve-qwen3-235b-fp8-sglang-4xh100.headroom.json")
            .document;
    fp8["inference"].erase("mem_fraction_static");
    bool offered = false;
    for (const Saving& s : rankSavings(scenarioFromJson(fp8)))
        if (s.id == "raise_mem_fraction_static") {
            QCOMPARE(s.patch["inference"]["mem_fraction_static"].get<double>(), 0.88);
            offered = true;
        }
    QVERIFY(offered);
}

void TestServing::kvCacheKeepsTheComputeDtype() {
    // vLLM's kv_cache_dtype "auto" is the model's dtype (vllm/utils get_kv_cache_torch_dtype), which an FP8
    // checkpoint declares as bf16: FP8 weights do not halve the cache. Llama 3 8B, 8 KV heads of 128, 32
    // layers: K and V are 2 x 8 x 128 x 2 bytes x 32 = 131,072 bytes per token in bf16.
    auto perToken = [](const json& inference) {
        return estimate(
                   scenarioFromJson(inferenceDoc({{"preset", "meta-llama/Meta-Llama-3-8B"}}, inference, {})))
            .serving.kvBytesPerToken;
    };
    QCOMPARE(perToken({{"engine", "vllm"}}), 131072.0);
    QCOMPARE(perToken({{"engine", "vllm"}, {"weight_dtype", "fp8"}}), 131072.0);
    QCOMPARE(perToken({{"engine", "sglang"}, {"weight_dtype", "int4"}}), 131072.0);
    QCOMPARE(perToken({{"engine", "vllm"}, {"weight_dtype", "fp8"}, {"kv_cache_dtype", "fp8"}}), 65536.0);
    QCOMPARE(perToken({{"engine", "vllm"}, {"weight_dtype", "fp32"}}), 262144.0);
}

void TestServing::engineBoundsPrefill() {
    // The issue's case: Qwen3-30B-A3B, 48 requests of 32,768 tokens on one H200 with an FP8 KV cache.
    // Costed as one batch prefilled whole, 93 GiB of activations exceed the 72 GiB KV cache.
    const json plain = inferenceDoc(
        {{"preset", "Qwen/Qwen3-30B-A3B"}},
        {{"batch_size", 48}, {"context_length", 32768}, {"kv_cache_dtype", "fp8"}}, {{"gpu", "H200-141GB"}});
    const Estimate before = estimate(scenarioFromJson(plain));
    QCOMPARE(before.perGpu[Category::KvCache], 48.0 * 32768 * 48 * 2 * 4 * 128);
    QCOMPARE(before.perGpu[Category::KvCache] / kGiB, 72.0);
    QVERIFY(std::abs(before.perGpu[Category::Activations] / kGiB - 93) < 0.5);
    // vLLM takes steps of max_num_batched_tokens (8,192 on a 141 GB GPU): the step is what it profiles,
    // independent of batch and context, and the rest of its budget is KV cache.
    json engine = plain;
    engine["inference"]["engine"] = "vllm";
    engine["inference"]["engine_version"] = "vllm 0.11"; // the release whose sampler sorts
    const Estimate est = estimate(scenarioFromJson(engine));
    const ServingEstimate& sv = est.serving;
    QCOMPARE(sv.stepTokens, 8192);
    QCOMPARE(sv.maxNumSeqs, 1024);
    QVERIFY(sv.profiledBytes < 6 * kGiB);
    engine["inference"]["batch_size"] = 1;
    engine["inference"]["context_length"] = 4096;
    QCOMPARE(estimate(scenarioFromJson(engine)).serving.profiledBytes, sv.profiledBytes);
    // The sampler step of 1,024 requests over a 151,936-entry vocabulary is the larger part: 38 bytes each.
    QCOMPARE(est.perGpu[Category::Logits], 1024.0 * 151936 * 38);
    // 0.9 of the GPU less weights, step and non-torch memory, in whole blocks of 16 tokens x 48 layers.
    const double expected =
        0.9 * est.capacityBytes - est.perGpu[Category::Weights] - sv.profiledBytes - sv.nonTorchBytes;
    QCOMPARE(sv.availableBytes, expected);
    QCOMPARE(sv.numBlocks, static_cast<long long>(std::floor(expected / (16 * 48 * 1024.0)))); // fp8: 1 KiB
    QCOMPARE(sv.kvCacheTokens, sv.numBlocks * 16);
    QCOMPARE(est.perGpu[Category::KvCache], sv.numBlocks * 16 * 48 * 1024.0);
    QVERIFY(est.fits);
    QCOMPARE(est.maxMicroBatchSize, static_cast<long long>(std::floor(sv.maxConcurrency)));
    // A request longer than the pool cannot be served.
    engine["inference"]["max_model_len"] = 4000000;
    QVERIFY(!estimate(scenarioFromJson(engine)).fits);
}

void TestServing::engineSavingsSpeakInRequests() {
    const json doc = inferenceDoc({{"preset", "meta-llama/Meta-Llama-3-8B"}},
                                  {{"engine", "vllm"}, {"max_model_len", 32768}}, {{"gpu", "RTX-4090-24GB"}});
    const Scenario sc = scenarioFromJson(doc);
    const Estimate est = estimate(sc);
    const auto savings = rankSavings(sc);
    QVERIFY(savings.size() >= 3);
    for (std::size_t i = 0; i < savings.size(); ++i) {
        const Saving& s = savings[i];
        QVERIFY(s.serving);
        QVERIFY2(s.concurrencyAfter > est.serving.maxConcurrency, s.id.c_str());
        if (i > 0)
            QVERIFY(savings[i - 1].concurrencyGained >= s.concurrencyGained);
        // The patch, applied to the document and read again, gives the same pool.
        json patched = doc;
        patched.merge_patch(s.patch);
        const Estimate again = estimate(scenarioFromJson(patched));
        QCOMPARE(again.serving.kvCacheTokens, s.kvTokensAfter);
        QCOMPARE(again.serving.kvCacheTokens - est.serving.kvCacheTokens, s.kvTokensGained);
    }
    // FP8 KV cache doubles the tokens the same bytes hold (to a block).
    bool sawFp8 = false;
    for (const auto& s : savings)
        if (s.id == "fp8_kv_cache") {
            sawFp8 = true;
            QVERIFY(std::abs(s.kvTokensAfter - 2 * est.serving.kvCacheTokens) <= 16);
        }
    QVERIFY(sawFp8);
}

void TestServing::servingExpertParallelWithoutDataParallel() {
    // Two GPUs, tensor parallel 2, expert parallel 2, no data parallelism: vLLM's --enable-expert-parallel.
    const json doc = inferenceDoc({{"preset", "Qwen/Qwen3-30B-A3B"}}, {{"engine", "vllm"}},
                                  {{"num_gpus", 2}, {"tensor_parallel", 2}, {"expert_parallel", 2}});
    const Scenario sc = scenarioFromJson(doc);
    checkLayout(sc); // accepted for serving
    // Each rank holds half the experts whole: the same bytes as slicing every expert in two.
    json tpOnly = doc;
    tpOnly["cluster"]["expert_parallel"] = 1;
    QCOMPARE(estimate(sc).perGpu[Category::Weights],
             estimate(scenarioFromJson(tpOnly)).perGpu[Category::Weights]);
    // Training keeps Megatron's rule: expert parallelism divides the data-parallel size.
    json training = trainingDoc({{"preset", "Qwen/Qwen3-30B-A3B"}});
    training["cluster"].merge_patch({{"num_gpus", 2}, {"tensor_parallel", 2}, {"expert_parallel", 2}});
    try {
        checkLayout(scenarioFromJson(training));
        QFAIL("training accepted expert parallelism without data parallelism");
    } catch (const Error& e) {
        QVERIFY(QString::fromUtf8(e.what()).contains("cluster.expert_parallel"));
    }
}

void TestServing::huggingFaceGenerate() {
    // transformers' generate with its DynamicCache (4.56, cache_utils.py and the modeling files), by hand.
    auto at = [](const Scenario& sc, Phase phase) {
        Breakdown last;
        for (const TimelinePoint& p : phaseTimeline(sc, 0, 4))
            if (p.phase == phase && !p.headRunning)
                last = p.bytes; // the phase's end (the layers', not a forward's head)
        return last;
    };
    // Llama 3 8B, 4 sequences of 2,048 tokens: 8 KV heads x 128 x 2 (K and V) x 2 bytes = 4,096 bytes per
    // token and layer, 32 layers: 1 GiB of cache. A decode step's torch.cat holds one layer's old and new
    // keys at once: 8 x 128 x 2 bytes x 2,048 tokens x 4 sequences more. The logits are the last
    // position's, bf16 and their fp32 copy, 6 bytes per vocabulary entry per sequence.
    const Scenario llama = scenarioFromJson(
        inferenceDoc({{"preset", "meta-llama/Meta-Llama-3-8B"}},
                     {{"engine", "huggingface"}, {"batch_size", 4}, {"context_length", 2048}}, {}));
    QCOMPARE(at(llama, Phase::Prefill)[Category::KvCache], 1073741824.0);
    QCOMPARE(at(llama, Phase::Decode)[Category::KvCache], 1073741824.0 + 16777216.0);
    QCOMPARE(at(llama, Phase::Decode)[Category::Logits], 6.0 * 128256 * 4);
    // With attn_implementation="eager" the prefill's softmax (softmax(x, dtype=torch.float32)) holds the bf16
    // scores, their fp32 conversion and the fp32 output: 2 + 4 + 4 bytes for each of 4 x 32 heads x 2,048 x
    // 2,048 scores. Without transformers, a softmax in bf16 writes its bf16 output beside the bf16 scores it
    // reads, which the caller holds until it returns: 2 + 2 bytes.
    json eager = inferenceDoc(
        {{"preset", "meta-llama/Meta-Llama-3-8B"}},
        {{"engine", "huggingface"}, {"batch_size", 4}, {"context_length", 2048}, {"attention", "eager"}}, {});
    QCOMPARE(at(scenarioFromJson(eager), Phase::Prefill)[Category::AttentionScores],
             (2.0 + 4 + 4) * 4 * 32 * 2048 * 2048);
    eager["inference"].erase("engine");
    QCOMPARE(at(scenarioFromJson(eager), Phase::Prefill)[Category::AttentionScores],
             (2.0 + 2) * 4 * 32 * 2048 * 2048);
    // gpt-oss-20b: 12 sliding layers (128-token window) and 12 full ones, 2,048 bytes per token and layer.
    // Decoding, a sliding layer keeps window - 1 = 127 tokens; at the end of the prefill it still holds
    // the whole prompt (a view of the concatenated states keeps their storage).
    const Scenario oss = scenarioFromJson(
        inferenceDoc({{"preset", "openai/gpt-oss-20b"}},
                     {{"engine", "huggingface"}, {"batch_size", 2}, {"context_length", 4096}}, {}));
    QCOMPARE(at(oss, Phase::Prefill)[Category::KvCache], 2048.0 * 24 * 4096 * 2);
    QCOMPARE(at(oss, Phase::Decode)[Category::KvCache],
             2048.0 * (12 * 4096 + 12 * 127) * 2 + 1024.0 * 4096 * 2); // + one layer's keys
    // DeepSeek-V3 under transformers caches every head's decompressed keys (192) and values (128), not the
    // 576-wide latent vLLM and SGLang keep: 128 x 320 x 2 bytes = 81,920 bytes per token and layer, 71x.
    // Tensor parallel 8 splits the heads: 16 per rank.
    const json ds = inferenceDoc({{"preset", "deepseek-ai/DeepSeek-V3"}},
                                 {{"engine", "huggingface"}, {"context_length", 1000}},
                                 {{"num_gpus", 8}, {"tensor_parallel", 8}});
    const Estimate hf = estimate(scenarioFromJson(ds));
    QCOMPARE(hf.serving.kvBytesPerToken, 16.0 * (192 + 128) * 2 * 61);
    json latent = ds;
    latent["inference"].erase("engine");
    QCOMPARE(estimate(scenarioFromJson(latent)).serving.kvBytesPerToken, (512.0 + 64) * 2 * 61);
    // An FP8 checkpoint on a GPU without FP8: transformers dequantizes it to bf16 on load (its
    // FineGrainedFP8 quantizer, compute capability below 8.9), vLLM does not. Qwen3-30B-A3B-FP8's blocks:
    json fp8 = findModelPreset("Qwen/Qwen3-30B-A3B")->config;
    fp8["quantization_config"] = {
        {"quant_method", "fp8"}, {"activation_scheme", "dynamic"}, {"weight_block_size", {128, 128}}};
    auto weights = [&](const char* engine, const char* gpu) {
        const Scenario sc = scenarioFromJson(inferenceDoc(
            fp8, {{"engine", engine}, {"context_length", 1024}, {"max_model_len", 1024}}, {{"gpu", gpu}}));
        return std::make_pair(
            estimate(sc).perGpu[Category::Weights],
            estimateToJson(sc, estimate(sc))["inference"]["weight_storage"].get<std::string>());
    };
    QCOMPARE(weights("huggingface", "A100-80GB").first, 2.0 * 30532122624);
    QCOMPARE(weights("huggingface", "A100-80GB").second, std::string("bf16"));
    // vLLM holds its rotary table beside the weights (40,960 positions x 128 in bf16), transformers' is
    // built per forward.
    QCOMPARE(weights("huggingface", "H100-SXM-80GB").first + 40960.0 * 128 * 2,
             weights("vllm", "A100-80GB").first);
    QVERIFY(weights("vllm", "A100-80GB").first < 0.6 * 2.0 * 30532122624);
    QVERIFY(weights("vllm", "A100-80GB").second != "bf16");
    // An 8-bit checkpoint still computes, and caches, in bf16; an FP8 cache or a paged block asked of
    // generate is flagged, not silently planned.
    const Scenario fp8Weights = scenarioFromJson(
        inferenceDoc({{"preset", "meta-llama/Meta-Llama-3-8B"}},
                     {{"engine", "huggingface"}, {"weight_dtype", "fp8"}, {"context_length", 2048}}, {}));
    QCOMPARE(estimate(fp8Weights).serving.kvBytesPerToken, 2.0 * 8 * 128 * 2 * 32);
    QVERIFY(fp8Weights.warnings.empty());
    const Scenario asked = scenarioFromJson(
        inferenceDoc({{"preset", "meta-llama/Meta-Llama-3-8B"}},
                     {{"engine", "huggingface"}, {"kv_cache_dtype", "fp8"}, {"kv_block_size", 16}}, {}));
    QCOMPARE(asked.warnings.size(), std::size_t(2));
    QVERIFY(QString::fromStdString(asked.warnings[0] + asked.warnings[1]).contains("DynamicCache"));
    // FP8 KV cache is not a DynamicCache option: it is not offered as a saving under generate.
    for (const Saving& sv : rankSavings(scenarioFromJson(ds)))
        QVERIFY2(sv.id != "fp8_kv_cache", sv.description.c_str());
}

void TestServing::inferenceJson() {
    const Scenario sc = scenarioFromJson(inferenceDoc({{"preset", "openai/gpt-oss-120b"}},
                                                      {{"engine", "vllm"}, {"max_model_len", 8192}},
                                                      {{"gpu", "H200-141GB"}}));
    const json j = estimateToJson(sc, estimate(sc));
    QCOMPARE(j["inference"]["kv_bytes_per_token"].get<long long>(), 36LL * 2048);
    QVERIFY(j["inference"]["kv_cache_tokens"].get<long long>() > 8192);
    QCOMPARE(j["inference"]["engine"].get<std::string>(), std::string("vllm"));
    QCOMPARE(j["inference"]["weight_storage"].get<std::string>(), std::string("mxfp4"));
    // The release that sized it (the newest modelled, none being named) and its CUDA graphs' bytes.
    QCOMPARE(j["inference"]["engine_version"].get<std::string>(),
             std::string(newestEngineVersion(Engine::Vllm)->name));
    QCOMPARE(j["inference"]["cuda_graph_bytes"].get<double>(), std::round(0.62 * kGiB));
    // Without an engine: the batch's own tokens, and how many requests of its length fit.
    const Scenario plain = scenarioFromJson(inferenceDoc({{"preset", "meta-llama/Meta-Llama-3-8B"}},
                                                         {{"batch_size", 4}, {"context_length", 1000}}, {}));
    const Estimate est = estimate(plain);
    const json p = estimateToJson(plain, est);
    QCOMPARE(p["inference"]["kv_cache_tokens"].get<long long>(), 4000LL);
    QCOMPARE(p["inference"]["kv_bytes_per_token"].get<long long>(), 2LL * 32 * 8 * 128 * 2);
    QCOMPARE(p["inference"]["max_concurrency"].get<double>(), double(est.maxMicroBatchSize));
    QVERIFY(!p["inference"].contains("engine"));
    // Engine settings without an engine are flagged, not silently ignored.
    const Scenario odd = scenarioFromJson(
        inferenceDoc({{"preset", "meta-llama/Meta-Llama-3-8B"}}, {{"gpu_memory_utilization", 0.8}}, {}));
    QCOMPARE(odd.warnings.size(), std::size_t(1));
    try {
        scenarioFromJson(inferenceDoc({{"preset", "meta-llama/Meta-Llama-3-8B"}}, {{"engine", "tgi"}}, {}));
        QFAIL("an unknown engine was accepted");
    } catch (const Error& e) {
        QVERIFY(QString::fromUtf8(e.what()).contains("inference.engine"));
    }
}

void TestServing::servingExamples() {
    // The examples the README points at read and plan: gpt-oss-120b fits an H200 under vLLM with room for
    // many 16k requests, the SGLang one keeps its explicit fraction, the GPTQ one is costed at int4.
    const QString dir = QStringLiteral(HEADROOM_SOURCE_DIR "/examples/");
    const Estimate oss =
        estimate(loadScenarioFile((dir + "serve-gpt-oss-120b-vllm-h200.headroom.json").toStdString()));
    QVERIFY(oss.fits && oss.serving.engine && oss.serving.maxConcurrency > 16);
    const Scenario sg =
        loadScenarioFile((dir + "serve-qwen3-235b-fp8-sglang-4xh100.headroom.json").toStdString());
    const Estimate sge = estimate(sg);
    QCOMPARE(sge.serving.budgetBytes,
             0.93 * (double(sg.cluster.capacityBytes) - sge.perGpu[Category::CudaContext] -
                     sge.perGpu[Category::CommunicationBuffers]));
    const Scenario gptq =
        loadScenarioFile((dir + "serve-llama2-7b-gptq-rtx4090.headroom.json").toStdString());
    QVERIFY(gptq.inference.quantised);
    QVERIFY(estimate(gptq).perGpu[Category::Weights] < 4.0e9); // 6.7B parameters at about half a byte
    // Llama 4 Scout on four H100s: the newest vLLM pools its chunked layers apart
    // (chunkedAttentionByRelease).
    const Estimate scout =
        estimate(loadScenarioFile((dir + "serve-llama4-scout-vllm-4xh100.headroom.json").toStdString()));
    QVERIFY(scout.fits && scout.serving.maxConcurrency > 7);
}

void TestServing::vllmReleases() {
    // One scenario, two releases (docs/serving.md, Engine versions): Qwen3-30B-A3B on one H200, steps of
    // 8,192 tokens from 1,024 requests, FP8 KV cache.
    json doc = inferenceDoc({{"preset", "Qwen/Qwen3-30B-A3B"}},
                            {{"engine", "vllm"}, {"context_length", 32768}, {"kv_cache_dtype", "fp8"}},
                            {{"gpu", "H200-141GB"}});
    doc["inference"]["engine_version"] = "vllm 0.11";
    const Estimate v11 = estimate(scenarioFromJson(doc));
    doc["inference"]["engine_version"] = "vllm 0.31";
    const Scenario sc31 = scenarioFromJson(doc);
    const Estimate v31 = estimate(sc31);
    // 0.11 sorts the sampled logits (38 bytes a request and entry); 0.31's V2 runner samples without top-k
    // or top-p from an fp32 copy of the bf16 logits: 2 + 4 bytes.
    QCOMPARE(v11.perGpu[Category::Logits], 1024.0 * 151936 * 38);
    QVERIFY(v31.serving.profiledBytes < v11.serving.profiledBytes);
    QCOMPARE(v31.perGpu[Category::Logits], 1024.0 * 151936 * 6); // still more than the 8,192-token forward
    // 0.31's budget is 0.92 of the GPU (0.11's 0.9), and it takes the CUDA graphs' estimate (the median of
    // twelve logged estimates, 0.62 GiB) before the pool: 0.92 x capacity - weights - step - non-torch -
    // graphs, in blocks of 16 tokens x 48 layers x 1 KiB.
    QCOMPARE(sc31.inference.gpuMemoryUtilization, 0.92);
    QCOMPARE(v11.serving.budgetBytes, 0.9 * v11.capacityBytes);
    QCOMPARE(v31.serving.budgetBytes, 0.92 * v31.capacityBytes);
    QCOMPARE(v31.serving.cudaGraphBytes, 0.62 * kGiB);
    QCOMPARE(v11.serving.cudaGraphBytes, 0.0); // captured after the pool, outside the budget
    const ServingEstimate& sv = v31.serving;
    const double available = 0.92 * v31.capacityBytes - v31.perGpu[Category::Weights] - sv.profiledBytes -
                             sv.nonTorchBytes - 0.62 * kGiB;
    QCOMPARE(sv.availableBytes, available);
    QCOMPARE(sv.numBlocks, static_cast<long long>(std::floor(available / (16 * 48 * 1024.0))));
    // The graphs' buffers are memory the GPU holds: the peak is the budget and the CUDA context.
    QCOMPARE(v31.perGpu[Category::Temporaries], 0.62 * kGiB);
    // A logged estimate replaces the default; --enforce-eager (cuda_graphs false) captures none.
    doc["inference"]["cuda_graph_gib"] = 1.5;
    QCOMPARE(estimate(scenarioFromJson(doc)).serving.cudaGraphBytes, 1.5 * kGiB);
    doc["inference"]["cuda_graphs"] = false;
    const Estimate eager = estimate(scenarioFromJson(doc));
    QCOMPARE(eager.serving.cudaGraphBytes, 0.0);
    QCOMPARE(eager.serving.availableBytes, available + 0.62 * kGiB);
    // What would serve more offers it, worth the graphs' estimate in tokens.
    doc["inference"].erase("cuda_graphs");
    doc["inference"].erase("cuda_graph_gib");
    const Scenario withGraphs = scenarioFromJson(doc);
    const auto savings = rankSavings(withGraphs);
    const auto eagerSaving =
        std::find_if(savings.begin(), savings.end(), [](const Saving& s) { return s.id == "enforce_eager"; });
    QVERIFY(eagerSaving != savings.end());
    QCOMPARE(eagerSaving->kvTokensGained, eager.serving.kvCacheTokens - v31.serving.kvCacheTokens);
    QVERIFY(eagerSaving->kvTokensGained > 0);
    // Without a release named, the newest; an unknown one is an error naming the field and the known.
    doc["inference"].erase("engine_version");
    QCOMPARE(scenarioFromJson(doc).inference.engineVersion, std::string("vllm 0.31"));
    doc["inference"]["engine_version"] = "vllm 0.7";
    try {
        scenarioFromJson(doc);
        QFAIL("an unmodelled release was accepted");
    } catch (const Error& e) {
        QCOMPARE(QString::fromStdString(e.where()), QStringLiteral("inference.engine_version"));
        QVERIFY(QString::fromStdString(e.why()).contains("\"vllm 0.11\", \"vllm 0.19\", \"vllm 0.31\""));
    }
    doc["inference"]["engine_version"] = "sglang 0.4"; // a release of another engine
    QVERIFY_THROWS_EXCEPTION(Error, scenarioFromJson(doc));
    // Without an engine the release means nothing, and says so.
    const Scenario none = scenarioFromJson(
        inferenceDoc({{"preset", "Qwen/Qwen3-0.6B"}}, {{"engine_version", "vllm 0.31"}}, {}));
    QCOMPARE(none.warnings.size(), std::size_t(1));
}

void TestServing::sglangLoadReserve() {
    // What SGLang's load holds beyond the parameters, by hand from the caching allocator's rules
    // (c10/cuda/CUDACachingAllocator.cpp): requests up to 1 MiB share 2 MiB small-pool segments; larger ones
    // get a segment of their size rounded up to 2 MiB (20 MiB below 10 MiB), split when more than 1 MiB is
    // left, and a segment holding any live block survives empty_cache.
    // Llama 3.1 8B at TP 1: every matrix is a whole number of 2 MiB (q, k and v fused: 6,144 x 4,096 x 2 =
    // 48 MiB; o_proj 32; gate and up 224; down 112; the embedding and the head 128,256 x 4,096 x 2 = 1,002
    // MiB), so they leave no slack. The rotary table is built first in layer 0 from fp32 intermediates:
    // positions (131,072 x 4 = 512 KiB, small pool), angles, cos and sin (131,072 x 64 x 4 = 32 MiB
    // each, a segment each), then the table (64 MiB); the three 32 MiB segments freed then are taken by the
    // next three layers' o_proj. The small pool ends with the 65 norms (8 KiB each) in one segment: 2,048 -
    // 520 KiB of slack. Total: the table and that slack, 67,108,864 + 1,564,672 bytes.
    const json llama = {{"preset", "meta-llama/Llama-3.1-8B"}};
    const Estimate est = estimate(scenarioFromJson(inferenceDoc(llama, {{"engine", "sglang"}}, {})));
    QCOMPARE(est.serving.loadReservedBytes, 67108864.0 + 1564672.0);
    // It is what the load adds to SGLang's logged "mem usage", out of the pool, and shown as allocator
    // overhead in the breakdown; vLLM counts allocated bytes and never sees it.
    QCOMPARE(est.perGpu[Category::AllocatorOverhead], est.serving.loadReservedBytes);
    const Estimate vllm = estimate(scenarioFromJson(inferenceDoc(llama, {{"engine", "vllm"}}, {})));
    QCOMPARE(vllm.serving.loadReservedBytes, 0.0);
    // At TP 4 (the logged Qwen3-14B run, examples/serving/): q, k and v are 1,792 x 5,120 x 2 = 17.5 MiB in
    // an 18 MiB segment; o_proj 12.5 MiB in 14 (1.5 split off, which no later request that large takes); gate
    // and up 85 MiB in 86; down 42.5 in 44 (1.5 split off): 4.5 MiB a layer, 180 MiB over 40 layers, against
    // the 7.08 GB SGLang logged and the 6.88 GiB of parameters.
    const Scenario qwen = loadScenarioFile(
        HEADROOM_SOURCE_DIR "/examples/serving/sglang-0.5-qwen3-14b-tp4-rtx4090.headroom.json");
    const double slack = estimate(qwen).serving.loadReservedBytes;
    const double table = 40960.0 * 128 * 4;
    QVERIFY2(std::abs(slack - table - 180 * kMiB) < 4 * kMiB,
             qPrintable(QString::number((slack - table) / kMiB)));
}

void TestServing::servingLogs() {
    // examples/serving/cases.json: every logged run's budget part by part, each part within 0.3 GiB and the
    // pool's tokens within 3%, or a miss the case names; and a named miss must still miss (else its note
    // is stale).
    const ServingCases cases = loadServingCases(HEADROOM_SOURCE_DIR "/examples/serving/cases.json");
    const std::vector<ServingCaseResult> results = runServingCases(cases);
    QCOMPARE(results.size(), std::size_t(37));
    int named = 0;
    for (const ServingCaseResult& r : results) {
        QVERIFY2(r.holds(), qPrintable(QString::fromStdString(r.c->id)));
        for (const std::string& part : r.c->knownMissParts) {
            ++named;
            const auto it = std::find_if(r.parts.begin(), r.parts.end(),
                                         [&](const ServingPart& p) { return p.name == part; });
            QVERIFY2(it != r.parts.end() && !it->within,
                     qPrintable(QString::fromStdString(r.c->id + ": " + part + " no longer misses")));
        }
    }
    // vLLM 0.31's step with graphs and its pool; Mistral-Small's multimodal profile and pool (its Pixtral
    // tower is planned: the weights hold); Qwen3-Next's non-torch memory at TP 2 and its KV memory; the
    // Qwen3-235B SGLang pool; the V0 runs' tight pools (Qwen3-4B on 12 GB, Phi-4 at utilisation 0.15); under
    // 0.19 Gemma 3's multimodal load and profile (and the 27B's pool), gpt-oss's weights at TP 2, the float32
    // run's pool.
    QCOMPARE(named, 19);
    // The fit runs are vLLM 0.11's, from llm-d's measurements; each part's error as the table prints it.
    const ServingCaseResult& llama = results.front();
    QCOMPARE(llama.engineVersion, std::string("vllm 0.11"));
    QCOMPARE(llama.parts.front().name, std::string("budget"));
    QCOMPARE(llama.parts.front().planned, 0.9 * std::llround(79.18 * kGiB));
    const std::string table = servingCasesMarkdown(results);
    QVERIFY(
        table.find("| Llama 3.1 8B Instruct, one A100 80GB, vLLM's defaults | vllm 0.31 | 72.91 / 72.91") !=
        std::string::npos);
    // A schema that is not a string is refused as a bad schema (it once escaped as a JSON type error: a
    // finding of fuzz_scenario).
    try {
        servingCasesFromJson(json::parse(R"({"schema": {"framework": "torchtitan"}})"), ".");
        QFAIL("an object schema was accepted");
    } catch (const Error& e) {
        QCOMPARE(QString::fromStdString(e.where()), QStringLiteral("schema"));
    }
    // A file with an unknown part names where.
    QTemporaryDir dir;
    const QString bad = dir.filePath("cases.json");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"schema": "headroom.serving-cases/1", "cases": [{"id": "a", "title": "t", "role": "fit",
               "source": "s", "scenario": "x.json", "logged_gib": {"kv": 1}}]})");
    f.close();
    try {
        loadServingCases(bad.toStdString());
        QFAIL("an unknown part was accepted");
    } catch (const Error& e) {
        QVERIFY2(QString::fromStdString(e.where()).endsWith("cases[0].logged_gib.kv"), e.what());
    }
}

void TestServing::servingTrackRecordFollowsTheLogs() {
    // The track record a serving plan shows (core/compare/trackrecord) against examples/serving/cases.json,
    // recomputed here: per engine, the logs never used to choose a rule apart from those that were; the KV
    // pool's error (its tokens, or its bytes where the log gives no count) and how many runs had every part
    // within its bound, named misses or not.
    const ServingCases cases = loadServingCases(HEADROOM_SOURCE_DIR "/examples/serving/cases.json");
    const std::vector<ServingCaseResult> results = runServingCases(cases);
    struct Set {
        std::vector<double> pool;
        int within = 0;
    };
    std::map<Engine, std::array<Set, 2>> byEngine; // [0] validate, [1] fit
    for (const ServingCaseResult& r : results) {
        const Engine engine = r.engineVersion.rfind("sglang", 0) == 0 ? Engine::Sglang : Engine::Vllm;
        Set& set = byEngine[engine][r.c->role == "fit" ? 1 : 0];
        const auto part = [&](const char* name) {
            return std::find_if(r.parts.begin(), r.parts.end(),
                                [&](const ServingPart& p) { return p.name == name; });
        };
        auto pool = part("tokens");
        if (pool == r.parts.end())
            pool = part("available_kv");
        QVERIFY2(pool != r.parts.end(), r.c->id.c_str());
        set.pool.push_back(std::abs(pool->planned / pool->logged - 1));
        set.within +=
            std::all_of(r.parts.begin(), r.parts.end(), [](const ServingPart& p) { return p.within; });
    }
    const auto median = [](std::vector<double> v) {
        if (v.empty())
            return 0.0;
        std::sort(v.begin(), v.end());
        const std::size_t n = v.size();
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    };
    const auto worst = [](const std::vector<double>& v) {
        return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
    };
    QCOMPARE(servingTrackRecords().size(), byEngine.size());
    for (const auto& [engine, sets] : byEngine) {
        const Set &validate = sets[0], &fit = sets[1];
        const QString row = QStringLiteral("{Engine::%1, %2, %3, %4, %5, %6, %7, %8}")
                                .arg(engine == Engine::Vllm ? "Vllm" : "Sglang")
                                .arg(validate.pool.size())
                                .arg(validate.within)
                                .arg(median(validate.pool), 0, 'f', 5)
                                .arg(worst(validate.pool), 0, 'f', 5)
                                .arg(fit.pool.size())
                                .arg(fit.within)
                                .arg(median(fit.pool), 0, 'f', 5);
        const ServingTrackRecord* r = servingTrackRecordOf(engine);
        QVERIFY2(r, qPrintable(row));
        const auto near = [](double table, double computed) {
            return std::abs(table - computed) <= 0.000005;
        };
        QVERIFY2(
            r->validateRuns == static_cast<int>(validate.pool.size()) &&
                r->validateWithin == validate.within && r->fitRuns == static_cast<int>(fit.pool.size()) &&
                r->fitWithin == fit.within && near(r->validatePoolMedian, median(validate.pool)) &&
                near(r->validatePoolWorst, worst(validate.pool)) && near(r->fitPoolMedian, median(fit.pool)),
            qPrintable(row));
    }
    // The estimate's JSON carries the engine's row.
    const Scenario served =
        loadScenarioFile(HEADROOM_SOURCE_DIR "/examples/serving/vllm-0.11-llama3.1-8b-h100.headroom.json");
    const json record = estimateToJson(served, estimate(served)).at("track_record");
    QCOMPARE(record.at("engine").get<std::string>(), std::string("vllm"));
    QCOMPARE(record.at("validate_runs").get<int>(), static_cast<int>(byEngine[Engine::Vllm][0].pool.size()));
    // Written out by hand: SGLang's five logs, none of them fit; the Qwen3-235B pool is 6.0% over.
    QCOMPARE(
        QString::fromStdString(servingTrackRecordText(Engine::Sglang)),
        QStringLiteral("Track record: 5 SGLang start-up logs it was not built on, KV pool median 0.3% off "
                       "(worst 6.0%); none it was"));
}

void TestServing::gemma3Serving() {
    // google/gemma-3-27b-it under vLLM on one H100: every weight 16-bit, its vision tower's included (2 bytes
    // x 27,432,406,640), and two rotary tables of 128 in bf16 (gemma3.py's get_rope: the global layers'
    // linear scaling by 8 over 131,072 positions, LinearScalingRotaryEmbedding, and the local layers'
    // unscaled one; llm-d-planner's v0.19.0 log: "weights memory: 51.45GiB"); 16 KV heads of 128 in bf16
    // are 8 KiB per token and layer; ten of the 62 layers
    // are global (5, 11, ..., 59) and 52 slide over 1,024 tokens, which vLLM's hybrid allocator pools as
    // one full group and ceil(52 / 10) sliding groups of the same page.
    const Scenario sc = scenarioFromJson(
        inferenceDoc({{"preset", "google/gemma-3-27b-it"}},
                     {{"engine", "vllm"}, {"engine_version", "vllm 0.11"}, {"context_length", 32768}},
                     {{"gpu", "H100-SXM-80GB"}, {"gpu_memory_gib", 79.18}}));
    const Estimate est = estimate(sc);
    QCOMPARE(est.perGpu[Category::Weights], 2.0 * 27432406640 + (8 * 131072.0 + 131072) * 128 * 2);
    QCOMPARE(est.serving.ropeCacheBytes, (8 * 131072.0 + 131072) * 128 * 2);
    const ServingEstimate& sv = est.serving;
    QCOMPARE(sv.kvBytesPerToken, 8192.0 * 62);
    const KvPool p = vllmKvPool(sv.availableBytes, 8192, 10, 52, 16, 32768, 1024, sv.stepTokens);
    QCOMPARE(sv.kvCacheTokens, p.tokens);
    QCOMPARE(sv.numBlocks, p.numBlocks);
    QVERIFY(sv.kvCacheTokens > 0);
}

void TestServing::linearAttentionState() {
    // Qwen3-Next-80B-A3B-Instruct under vLLM 0.10.2 on two H200s (examples/serving/cases.json): 12 attention
    // layers keep one KV head of 256 per rank, 2 x 256 x 2 bytes = 1,024 bytes a token; 36 Gated DeltaNet
    // layers keep a state per request of (8,192 / 2) x 3 convolution values and 16 x 128 x 128 recurrent ones
    // in bf16: 548,864 bytes. vLLM grows the attention block to 16 x ceil(548,864 / (16 x 1,024)) = 544
    // tokens ("Setting attention block size to 544 tokens"), a page of 557,056 bytes (the state padded by
    // 1.49%), and groups the layers 12 by 12: one attention group and three linear ones. The log's pool,
    // 47,878,721,024 bytes, is floor(47,878,721,024 / (557,056 x 12)) = 7,162 blocks; it reported
    // 7,162 // 4 x 544 = 973,760 tokens and, a request of 262,144 tokens holding 482 attention blocks and one
    // page in each linear group, 7,162 / 485 = 14.77 requests at once.
    const LinearStateLayers linear{36, 2.0 * (4096 * 3 + 16 * 128 * 128)};
    QCOMPARE(linear.stateBytes, 548864.0);
    const KvPool p = vllmKvPool(47878721024.0, 1024, 12, 0, 16, 262144, 0, 8192, linear, {false, 1});
    QCOMPARE(p.blockSize, 544);
    QCOMPARE(p.blockBytes, 557056.0 * 12);
    QCOMPARE(p.numBlocks, 7162LL);
    QCOMPARE(p.tokens, 973760LL);
    QCOMPARE(p.maxConcurrency, 7162.0 / 485);
    QCOMPARE(std::round(p.maxConcurrency * 100) / 100, 14.77);
    // The newest rules: two pages per linear group in mamba_cache_mode "align", and the size reported as
    // concurrency x max_model_len.
    const KvPool align = vllmKvPool(47878721024.0, 1024, 12, 0, 16, 262144, 0, 8192, linear, {true, 2});
    QCOMPARE(align.maxConcurrency, 7162.0 / 488);
    QCOMPARE(align.tokens, static_cast<long long>(std::floor(7162.0 / 488 * 262144)));
    // A block size asked for is the alignment: 128 x ceil(548,864 / (128 x 1,024)) = 640.
    QCOMPARE(vllmKvPool(1e10, 1024, 12, 0, 128, 262144, 0, 8192, linear).blockSize, 640);

    // Through the estimator: the state per request, no KV bytes per token for the linear layers, and the
    // pool as above from what the budget leaves.
    const Scenario sc = loadScenarioFile(HEADROOM_SOURCE_DIR
                                         "/examples/serving/vllm-0.10-qwen3-next-80b-tp2-h200.headroom.json");
    QVERIFY(sc.warnings.empty());
    const ServingEstimate& sv = estimate(sc).serving;
    QCOMPARE(sv.kvBytesPerToken, 12 * 1024.0);
    QCOMPARE(sv.stateBytesPerRequest, 36 * 548864.0);
    QCOMPARE(sv.blockSize, 544);
    const KvPool direct = vllmKvPool(sv.availableBytes, 1024, 12, 0, 16, 262144, 0, sv.stepTokens, linear);
    QCOMPARE(sv.kvCacheTokens, direct.tokens);
    QCOMPARE(sv.numBlocks, direct.numBlocks);

    // transformers' generate keeps the recurrent state in fp32 (one GPU: 8,192 x 3 bf16 and 32 x 128 x 128
    // fp32 a layer) besides the 12 attention layers' keys and values of 2 heads.
    const Scenario hf = scenarioFromJson(inferenceDoc({{"preset", "Qwen/Qwen3-Next-80B-A3B-Instruct"}},
                                                      {{"engine", "huggingface"}, {"context_length", 4096}},
                                                      {{"gpu", "H200-141GB"}, {"num_gpus", 2}}));
    const Estimate he = estimate(hf);
    QCOMPARE(he.serving.stateBytesPerRequest, 36 * (2.0 * 8192 * 3 + 4.0 * 32 * 128 * 128));
    QCOMPARE(he.perGpu[Category::KvCache], 12 * 2.0 * 2 * 256 * 2 * 4096 + he.serving.stateBytesPerRequest);
    // sglang 0.4's state pool is not modelled, and says so (0.5's is: sglangStatePool).
    const Scenario sg = scenarioFromJson(
        inferenceDoc({{"preset", "Qwen/Qwen3-Next-80B-A3B-Instruct"}},
                     {{"engine", "sglang"}, {"engine_version", "sglang 0.4"}, {"context_length", 4096}},
                     {{"gpu", "H200-141GB"}, {"num_gpus", 2}, {"tensor_parallel", 2}}));
    QCOMPARE(sg.warnings.size(), std::size_t(1));
    QVERIFY(sg.warnings.front().find("SGLang keeps the linear-attention layers' states") !=
            std::string::npos);
}

void TestServing::v0StepAndFlashInferSampler() {
    // vLLM's V0 engine (engine_version "vllm 0.8"): without chunked prefill one step holds a whole prompt of
    // max(max_model_len, 2,048) tokens, from 256 requests (vllm/config.py SchedulerConfig); past 32K tokens
    // V0 turned chunked prefill on and the step is 2,048.
    const json qwen = {{"preset", "Qwen/Qwen3-32B"}};
    auto step = [&](int length) {
        const ServingEstimate sv = estimate(scenarioFromJson(inferenceDoc(qwen,
                                                                          {{"engine", "vllm"},
                                                                           {"engine_version", "vllm 0.8"},
                                                                           {"max_model_len", length},
                                                                           {"context_length", length}},
                                                                          {{"gpu", "H100-SXM-80GB"}})))
                                       .serving;
        return std::pair(sv.stepTokens, sv.maxNumSeqs);
    };
    QCOMPARE(step(1024), std::pair(2048, 256));
    QCOMPARE(step(10000), std::pair(10000, 256));
    QCOMPARE(step(40960), std::pair(2048, 256));
    // V1 (0.11) on an H100 takes the OpenAI server's larger defaults instead.
    const ServingEstimate v1 =
        estimate(scenarioFromJson(inferenceDoc(
                     qwen, {{"engine", "vllm"}, {"engine_version", "vllm 0.11"}, {"context_length", 10000}},
                     {{"gpu", "H100-SXM-80GB"}})))
            .serving;
    QCOMPARE(v1.stepTokens, 8192);
    QCOMPARE(v1.maxNumSeqs, 1024);

    // FlashInfer's sampler (vllm/v1/sample/ops/topk_topp_sampler.py): the bf16 logits (2), the fp32 copy
    // (4), the top-k-masked logits (4) and their softmax (4) for each of 256 requests x 151,936 entries,
    // against 38 bytes when PyTorch sorts them. A step of 512 tokens keeps the forward far smaller, and its
    // output hidden states (512 x 5,120 x 2 bytes) stay alive beside the sampler.
    auto profiled = [&](const char* sampler, const char* version) {
        const Scenario sc = scenarioFromJson(inferenceDoc(qwen,
                                                          {{"engine", "vllm"},
                                                           {"engine_version", version},
                                                           {"sampler", sampler},
                                                           {"max_num_batched_tokens", 512},
                                                           {"context_length", 4096}},
                                                          {{"gpu", "RTX-4090-24GB"}}));
        return std::pair(estimate(sc).serving.profiledBytes, sc.warnings.size());
    };
    const double kept = 512.0 * 5120 * 2;
    QCOMPARE(profiled("flashinfer", "vllm 0.11").first, 256.0 * 151936 * 14 + kept);
    QCOMPARE(profiled("pytorch", "vllm 0.11").first, 256.0 * 151936 * 38 + kept);
    // V0's dummy run never samples through FlashInfer: the setting is refused with a warning, not applied.
    const auto v0 = profiled("flashinfer", "vllm 0.8");
    QCOMPARE(v0.first, 256.0 * 151936 * 38 + kept);
    QVERIFY(v0.second >= 1);
    try {
        scenarioFromJson(inferenceDoc(qwen, {{"engine", "vllm"}, {"sampler", "triton"}}, {{"gpu", "H100"}}));
        QFAIL("an unknown sampler was accepted");
    } catch (const Error& e) {
        QVERIFY2(QString::fromStdString(e.where()).endsWith("inference.sampler"), e.what());
    }
}

// What an engine's release runs on a GPU, and what it does when the pool is short: FP8 weights need compute
// capability 8.0 (vLLM to 0.11, SGLang) or 7.5 (vLLM 0.31); V0 takes no step below max_model_len; SGLang
// caps requests at the pool where vLLM refuses to start.
void TestServing::whatEachReleaseRuns() {
    // Compute capability: the catalogue's, else the generation a name says, else a current GPU's.
    QCOMPARE(computeCapability("RTX-2060-12GB"), 7.5);
    QCOMPARE(computeCapability("A100-SXM4-80GB"), 8.0); // an alias
    QCOMPARE(computeCapability("Tesla-T4"), 7.5);
    QCOMPARE(computeCapability("A10G"), 8.6);
    QCOMPARE(computeCapability("RTX4080"), 9.0); // "T4" inside a longer name is not a T4
    QCOMPARE(computeCapability("GPU-24GiB"), 9.0);

    const json llama = {{"preset", "meta-llama/Llama-3.2-3B"}};
    auto ids = [](const Scenario& sc) {
        std::set<std::string> out;
        for (const Saving& s : rankSavings(sc))
            out.insert(s.id);
        return out;
    };
    auto onTuring = [&](const char* version, const json& extra) {
        json in = {{"engine", "vllm"}, {"engine_version", version}, {"context_length", 8192}};
        in.merge_patch(extra);
        return scenarioFromJson(inferenceDoc(llama, in, {{"gpu", "RTX-2060-12GB"}}));
    };
    auto warnsOfFp8 = [](const Scenario& sc) {
        return std::any_of(sc.warnings.begin(), sc.warnings.end(), [](const std::string& w) {
            return w.find("loads FP8 weights on compute capability") != std::string::npos;
        });
    };
    // An RTX 2060 (7.5): 0.11 loads no FP8 weights there, 0.31 does (Marlin on Turing).
    QVERIFY(!ids(onTuring("vllm 0.11", json::object())).count("fp8_weights"));
    QVERIFY(ids(onTuring("vllm 0.31", json::object())).count("fp8_weights"));
    QVERIFY(warnsOfFp8(onTuring("vllm 0.11", {{"weight_dtype", "fp8"}})));
    QVERIFY(!warnsOfFp8(onTuring("vllm 0.31", {{"weight_dtype", "fp8"}})));
    QVERIFY(!warnsOfFp8(onTuring("vllm 0.11", json::object())));

    // V0 with a 10,000-token max_model_len steps 10,000 tokens; a 2,048-token step would be refused.
    const Scenario v0 = onTuring("vllm 0.8", {{"context_length", 10000}, {"max_model_len", 10000}});
    QCOMPARE(estimate(v0).serving.stepTokens, 10000);
    QVERIFY(!ids(v0).count("max_num_batched_tokens_2048"));
    // V1 (0.11) on an H100 steps 8,192 and does offer the smaller step.
    const Scenario v1 = scenarioFromJson(inferenceDoc(
        llama, {{"engine", "vllm"}, {"engine_version", "vllm 0.11"}, {"context_length", 10000}}, {}));
    QCOMPARE(estimate(v1).serving.stepTokens, 8192);
    QVERIFY(ids(v1).count("max_num_batched_tokens_2048"));

    // QwQ-32B at TP 4 on L4s under SGLang 0.4 with a 131,072-token context: the pool holds fewer tokens than
    // the context, so SGLang starts with max_req_input_len = pool - 1 (scheduler.py) and the verdict says
    // so; the shorter limit it offers is SGLang's own flag, context_length.
    json doc = json::parse(
        readTextFile(HEADROOM_SOURCE_DIR "/examples/serving/sglang-0.4-qwq-32b-tp4-l4.headroom.json"));
    doc["inference"]["context_length"] = 131072;
    const Scenario sg = scenarioFromJson(doc);
    const Estimate e = estimate(sg);
    QVERIFY(!e.fits);
    QVERIFY(e.serving.kvCacheTokens > 0 && e.serving.kvCacheTokens < 131072);
    const std::string verdict = describeEstimate(sg, e, ByteUnit::GiB, {}).verdict;
    QVERIFY2(verdict.find("SGLang caps requests at " +
                          formatCount(static_cast<unsigned long long>(e.serving.kvCacheTokens - 1)) +
                          " tokens") != std::string::npos,
             verdict.c_str());
    bool shorter = false;
    for (const Saving& s : rankSavings(sg))
        if (s.id == "halve_max_model_len") {
            shorter = true;
            QCOMPARE(s.description, std::string("context_length 65536"));
            QVERIFY(s.patch["inference"].contains("context_length"));
        }
    QVERIFY(shorter);
}

void TestServing::communicatorsAndStartup() {
    // Llama 3.1 70B over two pipeline stages of H100s. Headroom's NCCL allowance is 384 MiB a communicator
    // and the releases' non-torch memory 0.13 GiB.
    const double perCommunicator = 384.0 * 1048576;
    const json llama70 = {{"preset", "meta-llama/Meta-Llama-3-70B"}};
    auto plan = [&](const char* version, int tp, int pp, double utilization) {
        const json in = {{"engine", "vllm"},
                         {"engine_version", version},
                         {"context_length", 8192},
                         {"gpu_memory_utilization", utilization}};
        return scenarioFromJson(inferenceDoc(
            llama70, in, {{"num_gpus", tp * pp}, {"tensor_parallel", tp}, {"pipeline_parallel", pp}}));
    };
    // vLLM 0.11 sets its communicators up before the start-up snapshot (#25359) and its profile run never
    // sends or receives between stages: the pipeline's communicator is outside the budget's parts, so the
    // non-torch memory in the budget is the release's 0.13 GiB alone (the issue's logs: 0.07 at PP > 1).
    const Scenario pp2 = plan("vllm 0.11", 1, 2, 0.9);
    const Estimate e = estimate(pp2);
    QCOMPARE(e.serving.nonTorchBytes, 0.13 * kGiB);
    QCOMPARE(e.serving.ncclSetupBytes, perCommunicator);
    // ... but it is on the GPU: the bar's non-torch part holds both, and the KV cache gets the budget less
    // weights, step and the 0.13 GiB.
    QCOMPARE(e.perGpu[Category::CommunicationBuffers], 0.13 * kGiB + perCommunicator);
    QCOMPARE(e.serving.availableBytes,
             0.9 * e.capacityBytes - e.perGpu[Category::Weights] - e.serving.profiledBytes - 0.13 * kGiB);
    // What is free at that snapshot: the GPU less the CUDA context (512 MiB) and the communicator.
    QCOMPARE(e.serving.freeAtStartupBytes, e.capacityBytes - 512.0 * 1048576 - perCommunicator);
    // The V0 worker took its snapshot before setting up NCCL: there the communicator is non-torch memory.
    const Estimate v0 = estimate(plan("vllm 0.8", 1, 2, 0.9));
    QCOMPARE(v0.serving.nonTorchBytes, 0.13 * kGiB + perCommunicator);
    QCOMPARE(v0.serving.ncclSetupBytes, 0.0);
    QCOMPARE(v0.serving.freeAtStartupBytes, 0.0); // V0 makes no such check
    // Tensor parallelism's all-reduces run in the profiled forward: that allowance stays in non-torch
    // memory under every release (0.54-0.55 GiB measured at TP 2 on llm-d's 0.11 runs).
    const Estimate tp2 = estimate(plan("vllm 0.11", 2, 1, 0.9));
    QCOMPARE(tp2.serving.nonTorchBytes, 0.13 * kGiB + perCommunicator);
    QCOMPARE(tp2.serving.ncclSetupBytes, 0.0);
    // Both: the pipeline's is outside, the tensor-parallel one's inside (0.31's 0.25 GiB, measured under
    // 0.19; with a pipeline vLLM does not fuse the all-reduces through FlashInfer, so no workspace).
    const Estimate both = estimate(plan("vllm 0.31", 2, 2, 0.92));
    QCOMPARE(both.serving.nonTorchBytes, 0.25 * kGiB + perCommunicator);
    QCOMPARE(both.serving.ncclSetupBytes, perCommunicator);

    // A budget above what is free at start-up: V1 refuses to start ("Free memory on device ... on startup is
    // less than desired GPU memory utilization"). H100: 79.65 GiB; free 79.65 - 0.5 - 0.375 = 78.77 GiB,
    // below 0.99 x 79.65 = 78.85.
    const Scenario greedy = plan("vllm 0.11", 1, 2, 0.99);
    const Estimate g = estimate(greedy);
    QVERIFY(g.serving.budgetBytes > g.serving.freeAtStartupBytes);
    QVERIFY(g.serving.refusedAtStartup());
    QVERIFY(!g.fits);
    const std::string verdict = describeEstimate(greedy, g, ByteUnit::GiB, {}).verdict;
    QVERIFY2(verdict.find("vLLM refuses to start") != std::string::npos, verdict.c_str());
    // The one utilisation change offered is the highest that starts, floor(78.77 / 79.65, 2) = 0.98, and
    // applying its patch gives a plan that starts and serves.
    bool lower = false;
    for (const Saving& s : rankSavings(greedy)) {
        QVERIFY(s.id != "raise_gpu_memory_utilization");
        if (s.id != "lower_gpu_memory_utilization")
            continue;
        lower = true;
        QCOMPARE(s.patch["inference"]["gpu_memory_utilization"].get<double>(), 0.98);
        json doc = inferenceDoc(llama70,
                                {{"engine", "vllm"},
                                 {"engine_version", "vllm 0.11"},
                                 {"context_length", 8192},
                                 {"gpu_memory_utilization", 0.99}},
                                {{"num_gpus", 2}, {"pipeline_parallel", 2}});
        doc.merge_patch(s.patch);
        const Estimate after = estimate(scenarioFromJson(doc));
        QVERIFY(!after.serving.refusedAtStartup());
        QVERIFY(after.fits);
        QCOMPARE(s.concurrencyAfter, after.serving.maxConcurrency);
    }
    QVERIFY(lower);
    // Without the pipeline the same utilisation starts: the context alone leaves 79.15 GiB free.
    QVERIFY(!estimate(plan("vllm 0.11", 2, 1, 0.99)).serving.refusedAtStartup());
}

void TestServing::cudaGraphEstimateOutsideTheBudget() {
    // vLLM from 0.21 adds its CUDA graphs' estimate to the profiled peak; its start-up log then says which
    // utilisation would leave the same pool without it. A public log (qwen3.8-27b on a 119.63 GiB GPU):
    // "The current --gpu-memory-utilization=0.9200 is equivalent to --gpu-memory-utilization=0.9038 without
    // CUDA graph memory profiling. To maintain the same effective KV cache size as before, increase
    // --gpu-memory-utilization to 0.9362", with "Estimated CUDA graph memory: 1.94 GiB total".
    const json model = {{"preset", "meta-llama/Llama-3.1-8B"}};
    json in = {{"engine", "vllm"},
               {"engine_version", "vllm 0.31"},
               {"context_length", 131072},
               {"cuda_graph_gib", 1.94},
               {"gpu_memory_utilization", 0.92}};
    const json cluster = {{"gpu_memory_gib", 119.63}, {"num_gpus", 1}};
    const Estimate on = estimate(scenarioFromJson(inferenceDoc(model, in, cluster)));
    QVERIFY(on.serving.cudaGraphBytes > 0 && !on.serving.cudaGraphsBeyondBudget);
    QCOMPARE(std::round(on.serving.utilizationForTheSamePool() * 10000) / 10000, 0.9362);
    // VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0: the pool gets the estimate's 1.94 GiB back, the graphs
    // stay on the GPU (captured after the pool), so the peak rises by what the pool grew.
    in["cuda_graph_estimate"] = false;
    const Estimate off = estimate(scenarioFromJson(inferenceDoc(model, in, cluster)));
    QVERIFY(off.serving.cudaGraphsBeyondBudget);
    QCOMPARE(off.serving.availableBytes - on.serving.availableBytes, 1.94 * kGiB);
    QCOMPARE(off.serving.cudaGraphBytes, on.serving.cudaGraphBytes);
    QCOMPARE(off.peakBytes - on.peakBytes, off.serving.poolBytes - on.serving.poolBytes);
    // 1.94 GiB at 131,072 bytes a token (32 layers x 8 KV heads x 128 x 2 x bf16) is 15,892.48 tokens:
    // 993 or 994 blocks of 16, as the remainder of the old pool falls.
    const long long gained = off.serving.kvCacheTokens - on.serving.kvCacheTokens;
    QVERIFY2(gained == 993 * 16 || gained == 994 * 16, qPrintable(QString::number(gained)));
    QCOMPARE(off.serving.utilizationForTheSamePool(), 0.92);
    // The savings offer it, and the releases that size their pool without the graphs ignore it with a
    // warning.
    in.erase("cuda_graph_estimate");
    bool offered = false;
    for (const Saving& s : rankSavings(scenarioFromJson(inferenceDoc(model, in, cluster))))
        offered = offered || s.id == "cuda_graph_estimate_off";
    QVERIFY(offered);
    in["engine_version"] = "vllm 0.11";
    in.erase("cuda_graph_gib");
    in["cuda_graph_estimate"] = false;
    const Scenario old = scenarioFromJson(inferenceDoc(model, in, cluster));
    QVERIFY(!old.warnings.empty() && old.warnings.back().find("cuda_graph_estimate") != std::string::npos);
    QCOMPARE(estimate(old).serving.cudaGraphBytes, 0.0);
}

void TestServing::rotaryTablesAsVllmCachesThem() {
    // vLLM's get_rope keeps one cos/sin table per distinct RoPE (rotary_embedding/base.py cos_sin_cache),
    // rotary_dim values a position. By hand from the checkpoints' configs:
    auto table = [](const char* preset) {
        const ModelSpec m = modelFromHfConfig(findModelPreset(preset)->config);
        return std::pair(m.ropeCacheRows, m.ropeCacheDim);
    };
    // Llama 3's RoPE (llama3 scaling changes the frequencies, not the length): 131,072 positions of 128.
    QCOMPARE(table("meta-llama/Llama-3.1-8B"), std::pair(131072.0, 128));
    // Gemma 3: the global layers' linear scaling by 8 builds its table over 8 x 131,072 positions
    // (LinearScalingRotaryEmbedding), the local layers' unscaled one over 131,072; head_dim 256.
    QCOMPARE(table("google/gemma-3-4b-it"), std::pair(9 * 131072.0, 256));
    // Llama 4 Scout: max_position_embeddings 10,485,760 of 128: 2.5 GiB in bf16.
    QCOMPARE(table("meta-llama/Llama-4-Scout-17B-16E-Instruct"), std::pair(10485760.0, 128));
    // Qwen3-Next rotates a quarter of each 256-wide head (partial_rotary_factor 0.25).
    QCOMPARE(table("Qwen/Qwen3-Next-80B-A3B-Instruct"), std::pair(262144.0, 64));
    // DeepSeek-V3 rotates its 64-wide rope part of each head.
    QCOMPARE(table("deepseek-ai/DeepSeek-V3"), std::pair(163840.0, 64));
    // YaRN builds its table over original_max_position_embeddings x factor.
    json yarn = findModelPreset("Qwen/Qwen3-32B")->config;
    yarn["rope_scaling"] = {
        {"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
    QCOMPARE(modelFromHfConfig(yarn).ropeCacheRows, 131072.0);
    // GPT-2's learned positions: none.
    QCOMPARE(modelFromHfConfig(findModelPreset("openai-community/gpt2")->config).ropeCacheRows, 0.0);
    // Under vLLM the table sits with the weights, in the model's dtype; Scout's at TP 4 is 2.5 GiB a GPU.
    const Scenario scout =
        scenarioFromJson(inferenceDoc({{"preset", "meta-llama/Llama-4-Scout-17B-16E-Instruct"}},
                                      {{"engine", "vllm"}, {"context_length", 8192}},
                                      {{"gpu", "H100-SXM-80GB"}, {"num_gpus", 4}, {"tensor_parallel", 4}}));
    QCOMPARE(estimate(scout).serving.ropeCacheBytes, 10485760.0 * 128 * 2);
}

void TestServing::engineQuantisesLinearLayersOnly() {
    // vllm serve --quantization fp8 (inference.weight_dtype fp8) quantises what its FP8 method is handed:
    // LinearBase layers (Fp8Config.get_quant_method); the embedding, the head (a VocabParallelEmbedding) and
    // the final norm stay in the model's 16 bits. Llama 3.1 8B by hand: 8,030,261,248 parameters, of which
    // the embedding and the untied head are 128,256 x 4,096 each and the final norm 4,096; the 32 layers'
    // 6,979,584,000 at one byte, the rest at two: 9,080,938,496 bytes, and 33,554,432 of RoPE table,
    // 9,114,492,928 bytes against llm-d-planner's v0.19.0 log of that run: "Model loading took 8.49 GiB".
    const double layers = 8030261248.0 - 2 * 128256.0 * 4096 - 4096;
    // Beside them the rotary table vLLM caches, 131,072 positions x 128 in bf16.
    const double expected = layers + 2 * (2 * 128256.0 * 4096 + 4096) + 131072.0 * 128 * 2;
    auto weights = [](const char* engine) {
        json in = {{"engine", engine}, {"context_length", 8192}, {"weight_dtype", "fp8"}};
        if (std::string(engine) == "none")
            in.erase("engine");
        const Scenario sc = scenarioFromJson(inferenceDoc({{"preset", "meta-llama/Llama-3.1-8B"}}, in,
                                                          {{"gpu", "H100-SXM-80GB"}, {"num_gpus", 1}}));
        return estimate(sc).perGpu[Category::Weights];
    };
    QCOMPARE(weights("vllm"), expected);
    // SGLang's table is counted in what its load reserves (loadreserve.cpp), not in the weights.
    QCOMPARE(weights("sglang"), expected - 131072.0 * 128 * 2);
    QVERIFY(std::abs(expected / kGiB - 8.49) < 0.05);
    // Without an engine weight_dtype is every weight's dtype, as before.
    QCOMPARE(weights("none"), 8030261248.0);
}

void TestServing::allReduceFusionOnHopperAndBlackwell() {
    // vLLM 0.19's tensor-parallel profile on Hopper adds about 2.1 GiB of non-torch memory per GPU at TP 2
    // and 4 alike (llm-d-planner's v0.19.0 sweep: Llama 3.1 8B 2.07 and 2.13, Qwen2.5-7B 2.06 and 2.13),
    // where 0.11 added NCCL's 0.375 GiB allowance to its 0.13: the FlashInfer all-reduce + RMSNorm fusion
    // vLLM's compile pipeline turns on for TP > 1 without a pipeline on compute capability 9.0 and 10.x. The
    // constant is their mean less the TP-1 figure (0.25) and the allowance: 2.0975 - 0.25 - 0.375 = 1.4725,
    // kept as 1.47 GiB (engineversions.cpp, a measured constant).
    const double mib = 1048576.0;
    const double perCommunicator = 384 * mib;
    auto plan = [](const char* gpu, int tp, int pp) {
        return scenarioFromJson(inferenceDoc(
            {{"preset", "meta-llama/Llama-3.1-8B"}},
            {{"engine", "vllm"}, {"engine_version", "vllm 0.19"}, {"context_length", 8192}},
            {{"gpu", gpu}, {"num_gpus", tp * pp}, {"tensor_parallel", tp}, {"pipeline_parallel", pp}}));
    };
    const double fusion = 1.47 * kGiB;
    // Llama 3.1 8B at TP 2 on H100s: the step's all-reduce is 8,192 x 4,096 x 2 = 64 MiB, which vLLM's own
    // all-reduce takes at TP 2 (up to 64 MiB): no NCCL, no NVLS. 0.25 + 0.375 + 1.47 = 2.095 GiB (2.07
    // logged).
    const Estimate tp2 = estimate(plan("H100-SXM-80GB", 2, 1));
    QCOMPARE(tp2.serving.nvlsBytes, 0.0);
    QCOMPARE(tp2.serving.nonTorchBytes, 0.25 * kGiB + perCommunicator + fusion);
    QVERIFY(std::abs(tp2.serving.nonTorchBytes / kGiB - 2.07) < 0.03);
    // Not on an A100 (no FI_ALLREDUCE_FUSION_MAX_SIZE_MB row for 8.0), nor with a pipeline, nor at TP 1.
    QCOMPARE(estimate(plan("A100-80GB", 2, 1)).serving.nonTorchBytes, 0.25 * kGiB + perCommunicator);
    QCOMPARE(estimate(plan("H100-SXM-80GB", 2, 2)).serving.nonTorchBytes, 0.25 * kGiB + perCommunicator);
    QCOMPARE(estimate(plan("H100-SXM-80GB", 1, 1)).serving.nonTorchBytes, 0.25 * kGiB);
    // Blackwell has its row: the fusion too.
    QCOMPARE(estimate(plan("B200-180GB", 2, 1)).serving.nonTorchBytes,
             0.25 * kGiB + perCommunicator + fusion);
    // vLLM 0.11 had no such fusion: its TP-2 runs logged 0.54-0.55 GiB.
    Scenario v11 = plan("H100-SXM-80GB", 2, 1);
    v11.inference.engineVersion = "vllm 0.11";
    QCOMPARE(estimate(v11).serving.nonTorchBytes, 0.13 * kGiB + perCommunicator);
}

void TestServing::nvlsBuffersOnNvswitchSystems() {
    // NCCL's NVLink SHARP buffers, by hand from src/transport/nvls.cc (ncclNvlsBufferSetup): nvlsChannels x 2
    // x the per-step buffer, for each head, one head per GPU of the tensor-parallel communicator. Llama 3 70B
    // (hidden 8,192) at vLLM's 8,192-token step on H100 SXMs: the step's all-reduce is 8,192 x 8,192 x 2 =
    // 128 MiB, above what vLLM's own all-reduces take (32 MiB at TP 4, 64 at TP 8), so NCCL runs it and
    // connects NVLS during the profile: non-torch memory.
    const double mib = 1048576.0;
    const double perCommunicator = 384 * mib;
    auto plan = [](const json& model, const json& inference, const char* gpu, int tp) {
        return scenarioFromJson(
            inferenceDoc(model, inference, {{"gpu", gpu}, {"num_gpus", tp}, {"tensor_parallel", tp}}));
    };
    const json llama70 = {{"preset", "meta-llama/Meta-Llama-3-70B"}};
    auto vllm = [](const char* version) {
        return json{{"engine", "vllm"}, {"engine_version", version}, {"context_length", 8192}};
    };
    // NCCL 2.27 (vLLM 0.11 and 0.31 pin torch 2.8 and later): 16 channels x 2 x (8 steps x 128 KiB) = 32 MiB
    // a head.
    const Estimate tp4 = estimate(plan(llama70, vllm("vllm 0.11"), "H100-SXM-80GB", 4));
    QCOMPARE(tp4.serving.nvlsBytes, 4 * 32 * mib);
    QCOMPARE(tp4.serving.nonTorchBytes, 0.13 * kGiB + perCommunicator + 4 * 32 * mib);
    const Estimate tp8 = estimate(plan(llama70, vllm("vllm 0.11"), "H100-SXM-80GB", 8));
    QCOMPARE(tp8.serving.nvlsBytes, 8 * 32 * mib);
    // V0 (vllm 0.8 pins torch 2.6, NCCL 2.21): 16 x 2 x (1 MiB + a 2 MiB credit area) = 96 MiB a head, set
    // up with the communicator, after V0's snapshot.
    const Estimate v0 = estimate(plan(llama70, vllm("vllm 0.8"), "H100-SXM-80GB", 8));
    QCOMPARE(v0.serving.nvlsBytes, 8 * 96 * mib);
    QCOMPARE(v0.serving.nonTorchBytes, 0.13 * kGiB + perCommunicator + 8 * 96 * mib);
    // Blackwell in one node, from NCCL 2.27: 24 channels (NVLS_NCHANNELS_SM100_NVL). vLLM's own all-reduces
    // take up to 128 MiB at TP 8 there, and the step's is 128 MiB: not below, so NCCL's.
    QCOMPARE(estimate(plan(llama70, vllm("vllm 0.31"), "B200-180GB", 8)).serving.nvlsBytes, 8 * 24 * 2 * mib);
    // None on two GPUs (vllm-project/vllm #9699), on A100s (SM 80) or on PCIe H100s (no NVSwitch).
    QCOMPARE(estimate(plan(llama70, vllm("vllm 0.31"), "H100-SXM-80GB", 2)).serving.nvlsBytes, 0.0);
    QCOMPARE(estimate(plan(llama70, vllm("vllm 0.31"), "A100-80GB", 8)).serving.nvlsBytes, 0.0);
    QCOMPARE(estimate(plan(llama70, vllm("vllm 0.31"), "H100-PCIe-80GB", 8)).serving.nvlsBytes, 0.0);
    // A step whose all-reduce vLLM keeps: Qwen3-0.6B (hidden 1,024) at TP 4 all-reduces 8,192 x 1,024 x 2 =
    // 16 MiB, below 32: NCCL never reduces, so from NCCL 2.22 it never connects NVLS...
    const json qwen = {{"preset", "Qwen/Qwen3-0.6B"}};
    QCOMPARE(estimate(plan(qwen, vllm("vllm 0.31"), "H100-SXM-80GB", 4)).serving.nvlsBytes, 0.0);
    // ... where NCCL 2.21 set it up with the communicator whatever ran through it.
    QCOMPARE(estimate(plan(qwen, vllm("vllm 0.8"), "H100-SXM-80GB", 4)).serving.nvlsBytes, 4 * 96 * mib);

    // NCCL_NVLS_ENABLE=0 (inference.nccl_nvls false) frees them; What would serve more offers it, and its
    // patch gives that plan.
    json off = vllm("vllm 0.11");
    off["nccl_nvls"] = false;
    const Estimate without = estimate(plan(llama70, off, "H100-SXM-80GB", 8));
    QCOMPARE(without.serving.nvlsBytes, 0.0);
    QCOMPARE(without.serving.availableBytes, tp8.serving.availableBytes + 8 * 32 * mib);
    const Scenario tp8Scenario = plan(llama70, vllm("vllm 0.11"), "H100-SXM-80GB", 8);
    bool offered = false;
    for (const Saving& s : rankSavings(tp8Scenario))
        if (s.id == "disable_nccl_nvls") {
            offered = true;
            QCOMPARE(s.patch["inference"]["nccl_nvls"].get<bool>(), false);
        }
    QVERIFY(offered);

    // SGLang sets NCCL_NVLS_ENABLE=0 unless --enable-nccl-nvls (inference.nccl_nvls true); with it, torch
    // 2.5's NCCL 2.21 sets the 96 MiB a head up before SGLang measures what is free, so the fraction applies
    // to that much less.
    const json sglang = {{"engine", "sglang"}, {"engine_version", "sglang 0.4"}, {"context_length", 8192}};
    const Estimate sgDefault = estimate(plan(llama70, sglang, "H100-SXM-80GB", 8));
    QCOMPARE(sgDefault.serving.nvlsBytes, 0.0);
    json sglangNvls = sglang;
    sglangNvls["nccl_nvls"] = true;
    const Estimate sgNvls = estimate(plan(llama70, sglangNvls, "H100-SXM-80GB", 8));
    QCOMPARE(sgNvls.serving.nvlsBytes, 8 * 96 * mib);
    QCOMPARE(sgNvls.serving.budgetBaseBytes, sgDefault.serving.budgetBaseBytes - 8 * 96 * mib);
    // Without an engine the setting only warns.
    const Scenario plain =
        plan(llama70, {{"context_length", 8192}, {"nccl_nvls", false}}, "H100-SXM-80GB", 8);
    QVERIFY(std::any_of(plain.warnings.begin(), plain.warnings.end(), [](const std::string& w) {
        return w.find("inference.nccl_nvls only applies to a serving engine") != std::string::npos;
    }));
}

void TestServing::chunkedAttentionByRelease() {
    // Llama 4 Scout at TP 4 on H100s, 131,072-token requests: 12 global layers and 36 with chunked attention
    // of 8,192 tokens; one token's keys and values in one layer on one GPU: 2 KV heads x 128 x 2 x 2 bytes.
    const double layerBytes = 2 * 128 * 2 * 2;
    auto plan = [&](const char* version) {
        return estimate(scenarioFromJson(
            inferenceDoc({{"preset", "meta-llama/Llama-4-Scout-17B-16E-Instruct"}},
                         {{"engine", "vllm"}, {"engine_version", version}, {"context_length", 131072}},
                         {{"num_gpus", 4}, {"tensor_parallel", 4}})));
    };
    // vLLM 0.11 switches the hybrid allocator off for chunked local attention (#21761): one group of all 48
    // layers, blocks of 16 tokens, a request needs 131,072 / 16 of them.
    const Estimate old = plan("vllm 0.11");
    const ServingEstimate& o = old.serving;
    QCOMPARE(o.blockBytes, 16 * layerBytes * 48);
    QCOMPARE(o.numBlocks, static_cast<long long>(std::floor(o.availableBytes / (16 * layerBytes * 48))));
    QCOMPARE(o.kvCacheTokens, o.numBlocks * 16);
    QCOMPARE(o.maxConcurrency, static_cast<double>(o.numBlocks) / 8192);
    // vLLM 0.31 pools them apart: groups of 12 layers (one global, three chunked) share blocks of 12 layers;
    // a request needs 8,192 blocks in the global group and cdiv(8,192 + the step's 8,192, 16) = 1,024 in
    // each chunked one (ChunkedLocalAttentionSpec).
    const Estimate now = plan("vllm 0.31");
    const ServingEstimate& n = now.serving;
    QCOMPARE(n.stepTokens, 8192);
    QCOMPARE(n.blockBytes, 16 * layerBytes * 12);
    QCOMPARE(n.numBlocks, static_cast<long long>(std::floor(n.availableBytes / (16 * layerBytes * 12))));
    QCOMPARE(n.maxConcurrency, static_cast<double>(n.numBlocks) / (8192 + 3 * 1024));
    // The same memory serves 48 / (12 + 36 x 2,048 / 131,072 x 8) = 2.9 times the requests.
    QVERIFY(n.maxConcurrency / n.availableBytes > 2.9 * o.maxConcurrency / o.availableBytes);
    QVERIFY(now.fits && old.fits);
    // inference.chunked_layers overrides the release: VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 on
    // 0.11 pools the chunked layers as 0.31 does, =0 on 0.31 caches them in full.
    auto with = [&](const char* version, const char* chunked) {
        return scenarioFromJson(inferenceDoc({{"preset", "meta-llama/Llama-4-Scout-17B-16E-Instruct"}},
                                             {{"engine", "vllm"},
                                              {"engine_version", version},
                                              {"context_length", 131072},
                                              {"chunked_layers", chunked}},
                                             {{"num_gpus", 4}, {"tensor_parallel", 4}}));
    };
    const ServingEstimate pooled = estimate(with("vllm 0.11", "pooled")).serving;
    QCOMPARE(pooled.blockBytes, 16 * layerBytes * 12);
    QCOMPARE(pooled.maxConcurrency, static_cast<double>(pooled.numBlocks) / (8192 + 3 * 1024));
    QCOMPARE(estimate(with("vllm 0.31", "full")).serving.blockBytes, 16 * layerBytes * 48);
    // What would serve more offers the variable where the release does not pool them, and its patch gives
    // the pooled plan.
    auto offered = [](const Scenario& sc) {
        for (const Saving& s : rankSavings(sc))
            if (s.id == "pool_chunked_layers")
                return s;
        return Saving{};
    };
    const Saving lever = offered(with("vllm 0.11", "release"));
    QCOMPARE(lever.id, std::string("pool_chunked_layers"));
    QCOMPARE(lever.concurrencyAfter, pooled.maxConcurrency);
    QCOMPARE(lever.patch["inference"]["chunked_layers"].get<std::string>(), std::string("pooled"));
    QVERIFY(offered(with("vllm 0.31", "release")).id.empty());
    // V0 has no hybrid allocator: the setting warns and changes nothing; an unknown value is named.
    const Scenario v0 = with("vllm 0.8", "pooled");
    QCOMPARE(v0.warnings.size(), std::size_t(1));
    try {
        with("vllm 0.11", "sometimes");
        QFAIL("an unknown chunked_layers was accepted");
    } catch (const Error& e) {
        QCOMPARE(QString::fromStdString(e.where()), QStringLiteral("inference.chunked_layers"));
    }
}

void TestServing::mamba2StateInThePool() {
    // granite-4.0-h-small's shape (tst_paramcount::graniteMamba2Hybrid) served by vLLM 0.11 on one H200 with
    // 32,768-token requests. A Mamba-2 layer's state per request (mamba2_state_shape, bf16): 3 x 8,448
    // convolution inputs and 128 x 64 x 128, 2 x 1,073,920 = 2,147,840 bytes; an attention layer's keys and
    // values 2 x 8 x 128 x 2 = 4,096 bytes a token. vLLM grows the attention block in steps of 16 until a
    // page holds a state: ceil(2,147,840 / (16 x 4,096)) x 16 = 528 tokens; 4 attention layers and 36 Mamba
    // layers make groups of 4 (one attention group, nine Mamba groups) sharing blocks of 528 x 4,096 x 4
    // bytes, and a request holds ceil(32,768 / 528) = 63 blocks plus one page in each Mamba group.
    json model = {{"model_type", "granitemoehybrid"},
                  {"hidden_size", 4096},
                  {"intermediate_size", 768},
                  {"num_hidden_layers", 40},
                  {"num_attention_heads", 32},
                  {"num_key_value_heads", 8},
                  {"num_local_experts", 72},
                  {"num_experts_per_tok", 10},
                  {"shared_intermediate_size", 1536},
                  {"mamba_n_heads", 128},
                  {"mamba_d_head", 64},
                  {"mamba_d_state", 128},
                  {"mamba_d_conv", 4},
                  {"mamba_n_groups", 1},
                  {"mamba_expand", 2},
                  {"tie_word_embeddings", true},
                  {"vocab_size", 100352}};
    model["layer_types"] = json::array();
    for (int i = 0; i < 40; ++i)
        model["layer_types"].push_back(i % 10 == 5 ? "attention" : "mamba");
    const Estimate e = estimate(scenarioFromJson(
        inferenceDoc(model, {{"engine", "vllm"}, {"engine_version", "vllm 0.11"}, {"context_length", 32768}},
                     {{"gpu", "H200-141GB"}})));
    const ServingEstimate& sv = e.serving;
    QCOMPARE(sv.stateBytesPerRequest, 36 * 2147840.0);
    QCOMPARE(sv.blockSize, 528);
    QCOMPARE(sv.blockBytes, 528 * 4096.0 * 4);
    QCOMPARE(sv.numBlocks, static_cast<long long>(std::floor(sv.availableBytes / (528 * 4096.0 * 4))));
    QCOMPARE(sv.maxConcurrency, static_cast<double>(sv.numBlocks) / (63 + 9));
    // transformers' generate (HybridMambaAttentionDynamicCache) keeps the convolution's whole kernel, in
    // bf16.
    json hf = inferenceDoc(model, {{"engine", "huggingface"}, {"context_length", 1024}}, {});
    QCOMPARE(estimate(scenarioFromJson(hf)).serving.stateBytesPerRequest,
             36 * 2.0 * (4.0 * 8448 + 128.0 * 64 * 128));
}

void TestServing::qwen35StateFromItsConfig() {
    // Qwen3.5-35B-A3B (examples/serve-qwen3.5-35b-a3b-vllm-h200.headroom.json, its config's fields) served by
    // vLLM on one H200. Keys and values: 10 attention layers x 2 x 2 KV heads x 256 x 2 bytes = 20,480 a
    // token. Each of the 30 Gated DeltaNet layers keeps per request 3 x 8,192 convolution inputs in bf16
    // (49,152 bytes) and 32 x 128 x 128 recurrent elements in the checkpoint's mamba_ssm_dtype, float32
    // (2,097,152 bytes), as vLLM's Qwen3.5 hook takes it.
    const Scenario sc =
        loadScenarioFile(HEADROOM_SOURCE_DIR "/examples/serve-qwen3.5-35b-a3b-vllm-h200.headroom.json");
    QCOMPARE(sc.model.mambaSsmCacheBytes, 4);
    const ServingEstimate s = estimate(sc).serving;
    QCOMPARE(s.kvBytesPerToken, 20480.0);
    QCOMPARE(s.stateBytesPerRequest, 30 * (49152.0 + 2097152.0));
    // The attention block grows in steps of 16 tokens (16 x 2,048 bytes a layer) until a page holds a layer's
    // state: ceil(2,146,304 / 32,768) = 66 steps, 1,056 tokens.
    QCOMPARE(s.blockSize, 1056);
    // --mamba-ssm-cache-dtype bfloat16 overrides the checkpoint (vLLM warns and takes the flag).
    json doc = nlohmann::json::parse(
        readTextFile(HEADROOM_SOURCE_DIR "/examples/serve-qwen3.5-35b-a3b-vllm-h200.headroom.json"));
    doc["inference"]["mamba_ssm_cache_dtype"] = "bfloat16";
    const ServingEstimate half = estimate(scenarioFromJson(doc)).serving;
    QCOMPARE(half.stateBytesPerRequest, 30 * (49152.0 + 1048576.0));
    QCOMPARE(half.blockSize, 544); // ceil(1,097,728 / 32,768) = 34 steps
    // A config that says nothing keeps the model's dtype; one that names a dtype vLLM does not know is
    // refused.
    doc["inference"].erase("mamba_ssm_cache_dtype");
    doc["model"]["text_config"].erase("mamba_ssm_dtype");
    QCOMPARE(estimate(scenarioFromJson(doc)).serving.stateBytesPerRequest, half.stateBytesPerRequest);
    // SGLang 0.5 takes the config's mamba_ssm_dtype too (mamba_utils.py mamba2_state_dtype), float32 when
    // it says nothing.
    doc["inference"]["engine"] = "sglang";
    QCOMPARE(estimate(scenarioFromJson(doc)).serving.stateBytesPerRequest, s.stateBytesPerRequest);
    doc["model"]["text_config"]["mamba_ssm_dtype"] = "bfloat16";
    QCOMPARE(estimate(scenarioFromJson(doc)).serving.stateBytesPerRequest, half.stateBytesPerRequest);
    doc["inference"]["engine"] = "vllm";
    doc["model"]["text_config"]["mamba_ssm_dtype"] = "float8";
    bool refused = false;
    try {
        scenarioFromJson(doc);
    } catch (const Error& e) {
        refused = std::string(e.what()).find("text_config.mamba_ssm_dtype") != std::string::npos;
    }
    QVERIFY(refused);
}

void TestServing::nemotronHStateAndBlocks() {
    // nvidia/NVIDIA-Nemotron-Nano-9B-v2 (27 Mamba-2 blocks, 4 attention blocks, 25 MLP blocks that cache
    // nothing) served by vLLM on one A10G with 131,072-token requests, as its model card runs it. Keys and
    // values: 4 layers x 2 x 8 x 128 x 2 bytes = 16,384 a token. A Mamba-2 block's state per request
    // (mamba2_state_shape): 3 x 12,288 convolution inputs in bf16 (73,728 bytes) and 128 x 80 x 128 recurrent
    // elements in what vLLM's NemotronH hook picks: float32 from #39032 (vllm 0.31: 5,242,880 bytes), float16
    // before it (vllm 0.11: 2,621,440), unless the config or --mamba-ssm-cache-dtype names one.
    const json model = {{"preset", "nvidia/NVIDIA-Nemotron-Nano-9B-v2"}};
    auto serve = [&](json in) {
        in["engine"] = "vllm";
        in["context_length"] = 131072;
        return estimate(scenarioFromJson(inferenceDoc(model, in, {{"gpu", "A10G-24GB"}}))).serving;
    };
    const ServingEstimate v31 = serve({{"engine_version", "vllm 0.31"}});
    QCOMPARE(v31.kvBytesPerToken, 16384.0);
    QCOMPARE(v31.stateBytesPerRequest, 27 * (73728.0 + 5242880.0));
    // The attention block grows in steps of 16 tokens until a page (16 x 4,096 bytes a layer) holds a
    // block's state: ceil(5,316,608 / 65,536) = 82 steps, 1,312 tokens. The 27 Mamba blocks make 7 groups of
    // the 4 attention layers' size (one padded); a request takes ceil(131,072 / 1,312) = 100 attention
    // blocks and, with prefix caching in mamba_cache_mode "align", two pages in each Mamba group.
    QCOMPARE(v31.blockSize, 1312);
    QCOMPARE(v31.blockBytes, 1312 * 4096.0 * 4);
    QCOMPARE(v31.maxConcurrency, static_cast<double>(v31.numBlocks) / (100 + 2 * 7));
    const ServingEstimate v11 = serve({{"engine_version", "vllm 0.11"}});
    QCOMPARE(v11.stateBytesPerRequest, 27 * (73728.0 + 2621440.0));
    QCOMPARE(v11.blockSize, 672); // ceil(2,695,168 / 65,536) = 42 steps
    // --mamba-ssm-cache-dtype float32, as the model card's command gives it, and the same from a config
    // that says so (NVIDIA's later checkpoints do).
    QCOMPARE(
        serve({{"engine_version", "vllm 0.11"}, {"mamba_ssm_cache_dtype", "float32"}}).stateBytesPerRequest,
        v31.stateBytesPerRequest);
    json said = findModelPreset("nvidia/NVIDIA-Nemotron-Nano-9B-v2")->config;
    said["mamba_ssm_cache_dtype"] = "float32";
    QCOMPARE(
        estimate(scenarioFromJson(inferenceDoc(
                     said, {{"engine", "vllm"}, {"engine_version", "vllm 0.11"}, {"context_length", 131072}},
                     {{"gpu", "A10G-24GB"}})))
            .serving.stateBytesPerRequest,
        v31.stateBytesPerRequest);
    QCOMPARE(serve({{"mamba_ssm_cache_dtype", "bfloat16"}}).stateBytesPerRequest, v11.stateBytesPerRequest);
    // A dtype vLLM does not take is named.
    bool refused = false;
    try {
        serve({{"mamba_ssm_cache_dtype", "fp8"}});
    } catch (const Error& e) {
        refused = std::string(e.what()).find("mamba_ssm_cache_dtype") != std::string::npos;
    }
    QVERIFY(refused);
}

void TestServing::sglangStatePool() {
    // SGLang 0.5 pools a hybrid model's linear-attention states apart (model_runner_kv_cache_mixin.py):
    // with --mamba-full-memory-ratio r (0.9), r / (1 + r) of what the fraction leaves holds whole requests'
    // states, and the KV pool of the attention layers gets the rest. Qwen3-Next-80B-A3B at TP 2 on H200s,
    // by hand: a Gated DeltaNet layer's state on one rank is (2 x 16 x 128 + 32 x 128) / 2 = 4,096
    // convolution channels x 3 in bf16 and 16 x 128 x 128 recurrent elements in float32 (SGLang's default,
    // configs/mamba_utils.py): 24,576 + 1,048,576 bytes, 36 such layers; the 12 attention layers keep one KV
    // head of 256 a rank, 2 x 256 x 2 = 1,024 bytes a token and layer.
    const json next = {{"preset", "Qwen/Qwen3-Next-80B-A3B-Instruct"}};
    const json in = {{"engine", "sglang"}, {"engine_version", "sglang 0.5"}, {"context_length", 262144}};
    const json cluster = {{"gpu", "H200-141GB"}, {"num_gpus", 2}, {"tensor_parallel", 2}};
    const Scenario sc = scenarioFromJson(inferenceDoc(next, in, cluster));
    QVERIFY(std::none_of(sc.warnings.begin(), sc.warnings.end(), [](const std::string& w) {
        return w.find("pool of its own") != std::string::npos;
    }));
    const ServingEstimate sv = estimate(sc).serving;
    const double perRequest = 36 * (4096.0 * 3 * 2 + 16.0 * 128 * 128 * 4);
    QCOMPARE(sv.stateBytesPerRequest, perRequest);
    const long long held = static_cast<long long>(std::floor(sv.availableBytes * 0.9 / 1.9 / perRequest));
    QCOMPARE(sv.stateSlots, held);
    QCOMPARE(sv.kvBytesPerToken, 12 * 1024.0);
    const long long tokens =
        static_cast<long long>(std::floor((sv.availableBytes - held * perRequest) / (12 * 1024.0)));
    QCOMPARE(sv.kvCacheTokens, tokens);
    // Requests run at once: the pool's, and max_mamba_cache_size // 3 (_calculate_mamba_ratio with the
    // radix cache and the no_buffer strategy, _resolve_max_num_reqs).
    QCOMPARE(sv.maxConcurrency, std::min(static_cast<double>(tokens) / 262144, std::floor(held / 3.0)));
    json shortRequests = in;
    shortRequests["context_length"] = 1024;
    QCOMPARE(
        estimate(scenarioFromJson(inferenceDoc(next, shortRequests, cluster))).serving.maxConcurrency,
        std::floor(estimate(scenarioFromJson(inferenceDoc(next, shortRequests, cluster))).serving.stateSlots /
                   3.0));
    // Both pools are on the GPU: the plan's pool is the tokens' bytes and the states'.
    QCOMPARE(sv.poolBytes, tokens * 12 * 1024.0 + held * perRequest);
    // A smaller ratio gives the KV pool more; sglang 0.4 pools nothing apart and says so.
    json lower = in;
    lower["mamba_full_memory_ratio"] = 0.5;
    const ServingEstimate half = estimate(scenarioFromJson(inferenceDoc(next, lower, cluster))).serving;
    QCOMPARE(half.stateSlots,
             static_cast<long long>(std::floor(half.availableBytes * 0.5 / 1.5 / perRequest)));
    QVERIFY(half.kvCacheTokens > sv.kvCacheTokens);
    // What would serve more: a lower ratio where tokens bind (262,144-token requests), a higher one where the
    // states do (1,024-token requests).
    auto offered = [&](const json& inference, const std::string& id) {
        for (const Saving& s : rankSavings(scenarioFromJson(inferenceDoc(next, inference, cluster))))
            if (s.id == id)
                return true;
        return false;
    };
    QVERIFY(offered(in, "lower_mamba_full_memory_ratio"));
    QVERIFY(!offered(in, "raise_mamba_full_memory_ratio"));
    QVERIFY(offered(shortRequests, "raise_mamba_full_memory_ratio"));
    json old = in;
    old["engine_version"] = "sglang 0.4";
    const Scenario v04 = scenarioFromJson(inferenceDoc(next, old, cluster));
    QCOMPARE(estimate(v04).serving.stateSlots, 0LL);
    QVERIFY(std::any_of(v04.warnings.begin(), v04.warnings.end(),
                        [](const std::string& w) { return w.find("pool of its own") != std::string::npos; }));
}

QTEST_APPLESS_MAIN(TestServing)
#include "tst_serving.moc"
