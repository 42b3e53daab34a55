// SPDX-License-Identifier: GPL-3.0-or-later
// Parameter counting from Hugging Face configs: every model in tests/data/reference/hf_models.json exactly,
// every preset against its published count, MoE active counts, and clear errors.
#include "core/error.h"
#include "core/model/hfconfig.h"
#include "core/model/presets.h"
#include "tests/testutil.h"

#include <QFile>
#include <QTest>
#include <cmath>

using namespace headroom;
using nlohmann::json;

namespace {

// Where the reader refuses a config (Error::where), or "(accepted)".
QString refusedAt(const json& cfg, const std::string& path = {}) {
    try {
        modelFromHfConfig(cfg, path);
    } catch (const Error& e) {
        return QString::fromStdString(e.where());
    }
    return QStringLiteral("(accepted)");
}

} // namespace

class TestParamCount : public QObject {
    Q_OBJECT
private slots:
    void referenceModelsExact_data();
    void referenceModelsExact();
    void presetsMatchPublishedCounts();
    void presetsCoverTheIssueList();
    void moeActiveParameters();
    void tiedEmbeddingsCountOnce();
    void unknownFamilyNamesModelType();
    void badValuesNameTheKey();
    void gemma3WithItsVisionTower();
    void qwen3NextHybridLayers();
    void qwen35TextAndTower();
    void llama4ChunkedAndInterleaved();
    void mistral3WithPixtral();
    void graniteMamba2Hybrid();
    void nemotronHBlocks();
    void qwen25VlTower();
    void qwen3VlTowerAndDeepstack();
    void qwen2VlTower();
};

void TestParamCount::referenceModelsExact_data() {
    QTest::addColumn<QByteArray>("config");
    QTest::addColumn<qulonglong>("expected");
    QFile f(test::dataDir() + "/reference/hf_models.json");
    QVERIFY(f.open(QIODevice::ReadOnly));
    const json doc = json::parse(f.readAll().toStdString());
    for (const auto& m : doc.at("models"))
        QTest::newRow(m.at("model").get<std::string>().c_str())
            << QByteArray::fromStdString(m.at("config").dump())
            << qulonglong(m.at("param_count").get<std::uint64_t>());
}

void TestParamCount::referenceModelsExact() {
    QFETCH(QByteArray, config);
    QFETCH(qulonglong, expected);
    const ModelSpec spec = modelFromHfConfig(json::parse(config.toStdString()));
    QCOMPARE(qulonglong(spec.totalParameters()), expected);
}

void TestParamCount::presetsMatchPublishedCounts() {
    int checked = 0;
    for (const auto& p : modelPresets()) {
        if (p.expectedParameters == 0)
            continue;
        QVERIFY2(p.spec.totalParameters() == p.expectedParameters,
                 qPrintable(QString::fromStdString(p.name) + ": " +
                            QString::number(p.spec.totalParameters()) +
                            " != " + QString::number(p.expectedParameters)));
        ++checked;
    }
    QVERIFY(checked >= 18);
}

void TestParamCount::presetsCoverTheIssueList() {
    for (const char* name : {"gpt2",
                             "gpt2-medium",
                             "gpt2-large",
                             "gpt2-xl",
                             "Llama-2-7b-hf",
                             "Llama-2-70b-hf",
                             "Meta-Llama-3-8B",
                             "Meta-Llama-3-70B",
                             "Llama-3.1-405B",
                             "Mistral-7B-v0.1",
                             "Mixtral-8x7B-v0.1",
                             "Qwen2.5-7B",
                             "Qwen2.5-72B",
                             "gemma-2-9b",
                             "Phi-3-mini-4k-instruct",
                             "DeepSeek-V3",
                             "gpt-oss-20b",
                             "gpt-oss-120b",
                             "Qwen3-30B-A3B",
                             "pythia-160m"})
        QVERIFY2(findModelPreset(name), name);
    // Every family the counter supports has at least one preset, but IBM's hybrid Granite 4.0: no
    // checkpoint's full config.json (which layers attend) was at hand, so it is read from the user's config
    // only.
    for (const auto& type : supportedModelTypes()) {
        if (type == "granitemoehybrid")
            continue;
        bool found = false;
        for (const auto& p : modelPresets())
            found = found || p.spec.modelType == type;
        QVERIFY2(found, type.c_str());
    }
}

void TestParamCount::moeActiveParameters() {
    // Mixtral: 2 of 8 experts per token; Mistral AI's "12.9B active" includes the embeddings.
    QCOMPARE(qulonglong(findModelPreset("Mixtral-8x7B-v0.1")->spec.activeParameters()), 12879925248ull);
    // gpt-oss-20b: 4 of 32 experts. OpenAI's 3.61B leaves out the input embedding (579,133,440).
    QCOMPARE(qulonglong(findModelPreset("gpt-oss-20b")->spec.activeParameters()), 4187440704ull);
    QCOMPARE(qulonglong(findModelPreset("gpt-oss-20b")->spec.activeParameters() - 201088ull * 2880),
             3608307264ull);
    // DeepSeek-V3: 671B total, ~37B active; shared expert and 3 dense layers always active.
    const ModelSpec& ds = findModelPreset("DeepSeek-V3")->spec;
    QVERIFY(ds.totalParameters() > 670e9 && ds.totalParameters() < 672e9);
    QVERIFY(ds.activeParameters() > 36e9 && ds.activeParameters() < 38e9);
    QVERIFY(!ds.isMoeLayer(2) && ds.isMoeLayer(3));
    // Qwen3-30B-A3B: ~3.3B active.
    const ModelSpec& q3 = findModelPreset("Qwen3-30B-A3B")->spec;
    QVERIFY(q3.activeParameters() > 3.2e9 && q3.activeParameters() < 3.4e9);
    // Dense models: active == total.
    const ModelSpec& llama = findModelPreset("Meta-Llama-3-8B")->spec;
    QCOMPARE(llama.activeParameters(), llama.totalParameters());
}

void TestParamCount::tiedEmbeddingsCountOnce() {
    json cfg = findModelPreset("gpt2")->config;
    const auto tied = modelFromHfConfig(cfg).totalParameters();
    cfg["tie_word_embeddings"] = false;
    const auto untied = modelFromHfConfig(cfg).totalParameters();
    QCOMPARE(qulonglong(untied - tied), qulonglong(50257ull * 768));
}

void TestParamCount::unknownFamilyNamesModelType() {
    const json cfg = {{"model_type", "mamba2"}, {"hidden_size", 2560}};
    try {
        modelFromHfConfig(cfg, "model");
        QFAIL("an unknown family must be an error");
    } catch (const Error& e) {
        QCOMPARE(QString::fromStdString(e.where()), QStringLiteral("model.model_type"));
        QVERIFY(QString(e.what()).contains("mamba2"));
        QVERIFY(QString(e.what()).contains("parameters"));
    }
    try {
        modelFromHfConfig(json{{"hidden_size", 1}});
        QFAIL("a config without model_type must be an error");
    } catch (const Error& e) {
        QCOMPARE(QString::fromStdString(e.where()), QStringLiteral("model_type"));
    }
}

void TestParamCount::badValuesNameTheKey() {
    json cfg = findModelPreset("Meta-Llama-3-8B")->config;
    auto expectKey = [](const json& c, const char* key) {
        try {
            modelFromHfConfig(c);
            QFAIL(key);
        } catch (const Error& e) {
            QCOMPARE(QString::fromStdString(e.where()), QString::fromLatin1(key));
        }
    };
    json c = cfg;
    c["hidden_size"] = -4096;
    expectKey(c, "hidden_size");
    c = cfg;
    c["num_hidden_layers"] = "32";
    expectKey(c, "num_hidden_layers");
    c = cfg;
    c["num_key_value_heads"] = 7;
    expectKey(c, "num_key_value_heads");
    c = cfg;
    c.erase("intermediate_size");
    expectKey(c, "intermediate_size");
    c = cfg;
    c["vocab_size"] = 1e30;
    expectKey(c, "vocab_size");
    c = cfg;
    c["num_hidden_layers"] = 3.21111e+102; // the fuzzer's find: out of long long's range
    expectKey(c, "num_hidden_layers");
    c = cfg;
    c["hidden_size"] = 4096.5;
    expectKey(c, "hidden_size");
    c = cfg;
    c["hidden_size"] = 4096.0; // a whole float is the integer it spells
    QCOMPARE(modelFromHfConfig(c).hidden, 4096);
}

// Gemma 3 (Gemma3ForConditionalGeneration): the keys google/gemma-3-4b-it's and google/gemma-3-27b-it's
// config.json set, the rest Gemma3TextConfig's and SiglipVisionConfig's defaults. Expected counts:
// keras-team/keras-hub keras_hub/src/models/gemma3/gemma3_presets.py, whose medgemma_4b (4,300,079,472) and
// medgemma_instruct_27b (27,432,406,640) presets are Gemma 3 4B and 27B with Hugging Face's 262,208-entry
// vocabulary, and whose gemma3_1b (999,885,952) and gemma3_27b_text (27,009,002,240) are text-only with
// 262,144 entries.
void TestParamCount::gemma3WithItsVisionTower() {
    const json vision = {{"hidden_size", 1152},       {"image_size", 896},
                         {"intermediate_size", 4304}, {"model_type", "siglip_vision_model"},
                         {"num_attention_heads", 16}, {"num_hidden_layers", 27},
                         {"patch_size", 14},          {"vision_use_head", false}};
    json g4 = {{"model_type", "gemma3"},
               {"mm_tokens_per_image", 256},
               {"text_config",
                {{"hidden_size", 2560},
                 {"intermediate_size", 10240},
                 {"model_type", "gemma3_text"},
                 {"num_hidden_layers", 34},
                 {"rope_scaling", {{"factor", 8.0}, {"rope_type", "linear"}}},
                 {"sliding_window", 1024}}},
               {"vision_config", vision}};
    const ModelSpec m4 = modelFromHfConfig(g4);
    QCOMPARE(m4.totalParameters(), 4300079472ULL);
    // The tower by hand: patch embedding 1152 x 3 x 14 x 14 + 1152, positions (896 / 14)^2 x 1152, 27 layers
    // of 4 x (1152^2 + 1152) + 2 x 1152 x 4304 + 4304 + 1152 + 2 x 2 x 1152, the final LayerNorm; the
    // projector 1152 x 2560 + 1152.
    const std::uint64_t tower =
        1152ULL * 3 * 14 * 14 + 1152 + 64ULL * 64 * 1152 +
        27ULL * (4 * (1152ULL * 1152 + 1152) + 2ULL * 1152 * 4304 + 4304 + 1152 + 4 * 1152) + 2 * 1152;
    QCOMPARE(m4.visionParams(), tower + 1152ULL * 2560 + 1152);
    std::uint64_t tensors = 0;
    for (std::uint64_t t : m4.parameterTensors())
        tensors += t;
    QCOMPARE(tensors, m4.totalParameters());
    // Five local layers to one global: layers 5, 11, ..., 29 attend to everything, the rest to 1,024 tokens.
    QCOMPARE(m4.slidingWindow, 1024);
    int global = 0;
    for (int l = 0; l < m4.layers; ++l)
        global += m4.isSlidingLayer(l) ? 0 : 1;
    QCOMPARE(global, 5);
    QVERIFY(!m4.isSlidingLayer(5) && m4.isSlidingLayer(6) && !m4.isSlidingLayer(29));
    json g27 = g4;
    g27["text_config"].update({{"head_dim", 128},
                               {"hidden_size", 5376},
                               {"intermediate_size", 21504},
                               {"num_attention_heads", 32},
                               {"num_hidden_layers", 62},
                               {"num_key_value_heads", 16},
                               {"query_pre_attn_scalar", 168}});
    QCOMPARE(modelFromHfConfig(g27).totalParameters(), 27432406640ULL);
    json text27 = g27["text_config"];
    text27["vocab_size"] = 262144;
    QCOMPARE(modelFromHfConfig(text27).totalParameters(), 27009002240ULL);
    const json g1 = {{"model_type", "gemma3_text"},
                     {"hidden_size", 1152},
                     {"intermediate_size", 6912},
                     {"num_hidden_layers", 26},
                     {"num_attention_heads", 4},
                     {"num_key_value_heads", 1},
                     {"head_dim", 256},
                     {"sliding_window", 512},
                     {"vocab_size", 262144}};
    QCOMPARE(modelFromHfConfig(g1).totalParameters(), 999885952ULL);
    // layer_types, where a config gives them, decide instead; a bad vision width names its key.
    json typed = g1;
    typed["layer_types"] = json::array();
    for (int l = 0; l < 26; ++l)
        typed["layer_types"].push_back(l % 2 ? "full_attention" : "sliding_attention");
    const ModelSpec alternating = modelFromHfConfig(typed);
    QVERIFY(alternating.isSlidingLayer(0) && !alternating.isSlidingLayer(1));
    json bad = g4;
    bad["vision_config"]["hidden_size"] = -1;
    QCOMPARE(refusedAt(bad), QStringLiteral("vision_config.hidden_size"));
}

void TestParamCount::qwen3NextHybridLayers() {
    // Qwen/Qwen3-Next-80B-A3B-Instruct, counted by hand from transformers' modeling_qwen3_next.py:
    // - 36 Gated DeltaNet layers: in_proj_qkvz 2048 x (2 x 16 x 128 + 2 x 32 x 128) = 25,165,824;
    //   in_proj_ba 2048 x 64 = 131,072; conv1d (2 x 2048 + 4096) channels x 4 = 32,768; dt_bias and A_log
    //   32 each; the gated norm 128; out_proj 4096 x 2048 = 8,388,608: 33,718,464.
    // - 12 attention layers: q_proj with its output gate 2048 x 2 x 16 x 256 = 16,777,216; k and v 2048 x 512
    //   each; o_proj 4096 x 2048; q and k norms 256 each: 27,263,488.
    // - every layer: 512 experts x 3 x 2048 x 512 = 1,610,612,736, the router 2048 x 512, the shared expert
    //   3 x 2048 x 512 and its gate 2048, two norms of 2048: 1,614,813,184.
    // - embeddings and the untied head 2 x 151,936 x 2048, the final norm 2048.
    const std::uint64_t linear = 25165824ull + 131072 + 32768 + 32 + 32 + 128 + 8388608;
    const std::uint64_t attention = 16777216ull + 2 * 1048576 + 8388608 + 512;
    const std::uint64_t perLayer = 1610612736ull + 1048576 + 3145728 + 2048 + 4096;
    QCOMPARE(linear, 33718464ull);
    QCOMPARE(attention, 27263488ull);
    const std::uint64_t expected = 36 * linear + 12 * attention + 48 * perLayer + 2 * 151936ull * 2048 + 2048;
    const ModelPreset* p = findModelPreset("Qwen/Qwen3-Next-80B-A3B-Instruct");
    QVERIFY(p);
    QCOMPARE(p->spec.totalParameters(), expected);
    QCOMPARE(p->spec.totalParameters(), 79674391296ull);
    // The tensors attribution matches against add up to the same, and every fourth layer attends.
    std::uint64_t sum = 0;
    for (std::uint64_t n : p->spec.parameterTensors())
        sum += n;
    QCOMPARE(sum, expected);
    QVERIFY(p->spec.isLinearLayer(0) && p->spec.isLinearLayer(2) && !p->spec.isLinearLayer(3) &&
            !p->spec.isLinearLayer(47));
    // vLLM's state per request and layer at TP 2 (gated_delta_net_state_shape): the convolution's 8,192 / 2
    // channels by 3 positions, the recurrent state's 16 heads of 128 x 128.
    QCOMPARE(p->spec.linearConvStateElements(2), 4096.0 * 3);
    QCOMPARE(p->spec.linearRecurrentStateElements(2), 16.0 * 128 * 128);
    // layer_types, when given, decide the kinds, and a kind the reader does not know is named.
    json cfg = p->config;
    cfg["layer_types"] = json::array();
    for (int i = 0; i < 48; ++i)
        cfg["layer_types"].push_back(i < 24 ? "linear_attention" : "full_attention");
    const ModelSpec half = modelFromHfConfig(cfg);
    QCOMPARE(half.totalParameters(),
             24 * linear + 24 * attention + 48 * perLayer + 2 * 151936ull * 2048 + 2048);
    cfg["layer_types"][5] = "sliding_attention";
    QCOMPARE(refusedAt(cfg, "config.json"), QStringLiteral("config.json.layer_types[5]"));
}

void TestParamCount::qwen35TextAndTower() {
    // Qwen3.5 and 3.6 (model_type qwen3_5_moe): Qwen3-Next's language model under text_config and Qwen3-VL's
    // vision tower without DeepStack mergers. The fields are Qwen3.5-35B-A3B's config.json as published
    // (40 layers of width 2048, three Gated DeltaNet layers to one attention layer, 256 experts of 512 with a
    // shared one, vocabulary 248,320, no intermediate_size, a multi-token-prediction layer transformers
    // does not build), counted by hand from transformers' modeling_qwen3_5_moe.py:
    // - a DeltaNet layer: in_proj_qkv 2048 x (2 x 16 x 128 + 32 x 128), in_proj_z 2048 x 4096, in_proj_b and
    //   in_proj_a 2048 x 32 each, conv1d 8192 x 4, dt_bias and A_log 32 each, the gated norm 128, out_proj
    //   4096 x 2048: 33,718,464 (Qwen3-Next's, split into four projections);
    // - an attention layer: q_proj with its gate 2048 x 2 x 16 x 256, k and v 2048 x 512, o_proj 4096 x 2048,
    //   q and k norms 256: 27,263,488;
    // - every layer: 256 experts x 3 x 2048 x 512, the router 2048 x 256, the shared expert 3 x 2048 x 512
    //   and its gate 2048, two norms of 2048: 808,982,528;
    // - embeddings and the untied head 2 x 248,320 x 2048, the final norm 2048;
    // - the tower: the patch convolution 3 x 2 x 16 x 16 x 1152 and its bias, 2304 positions x 1152, 27
    // blocks
    //   (two LayerNorms, qkv 1152 x 3456 and proj 1152 x 1152 with biases, fc1/fc2 1152 x 4304 with biases:
    //   15,239,504 each), the merger's LayerNorm over 1152, fc1 4608 x 4608 and fc2 4608 x 2048 with biases.
    const json cfg = json::parse(R"({
      "architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
      "tie_word_embeddings": false,
      "text_config": {"model_type": "qwen3_5_moe_text", "hidden_size": 2048, "num_hidden_layers": 40,
        "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "vocab_size": 248320,
        "max_position_embeddings": 262144, "full_attention_interval": 4, "linear_conv_kernel_dim": 4,
        "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
        "linear_value_head_dim": 128, "num_experts": 256, "num_experts_per_tok": 8,
        "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "mtp_num_hidden_layers": 1},
      "vision_config": {"deepstack_visual_indexes": [], "depth": 27, "hidden_size": 1152, "in_channels": 3,
        "intermediate_size": 4304, "num_heads": 16, "num_position_embeddings": 2304, "out_hidden_size": 2048,
        "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2}})");
    const std::uint64_t linear = 16777216ull + 8388608 + 2 * 65536 + 32768 + 32 + 32 + 128 + 8388608;
    const std::uint64_t attention = 16777216ull + 2 * 1048576 + 8388608 + 512;
    const std::uint64_t perLayer = 805306368ull + 524288 + 3145728 + 2048 + 4096;
    QCOMPARE(linear, 33718464ull);
    QCOMPARE(perLayer, 808982528ull);
    const std::uint64_t text = 30 * linear + 10 * attention + 40 * perLayer + 2 * 248320ull * 2048 + 2048;
    const std::uint64_t block = 2 * 2304 + (1152ull * 3456 + 3456) + (1152ull * 1152 + 1152) +
                                (1152ull * 4304 + 4304) + (4304ull * 1152 + 1152);
    QCOMPARE(block, 15239504ull);
    const std::uint64_t tower = 3ull * 2 * 16 * 16 * 1152 + 1152 + 2304ull * 1152 + 27 * block + 2304 +
                                (4608ull * 4608 + 4608) + (4608ull * 2048 + 2048);
    const ModelSpec m = modelFromHfConfig(cfg);
    QCOMPARE(m.totalParameters(), text + tower);
    QCOMPARE(m.totalParameters(), 35107181936ull);
    QCOMPARE(m.visionParams(), tower);
    QVERIFY(m.isLinearLayer(0) && !m.isLinearLayer(3) && m.isLinearLayer(38) && !m.isLinearLayer(39));
    // vLLM's per-request state at TP 1: 8,192 channels x 3 positions, 32 heads of 128 x 128.
    QCOMPARE(m.linearConvStateElements(1), 8192.0 * 3);
    QCOMPARE(m.linearRecurrentStateElements(1), 32.0 * 128 * 128);

    // A Qwen3.5-MoE checkpoint built from Qwen3.5-4B's backbone (hidden 2560, 32 layers, 16 query and 4 KV
    // heads of 256, tied embeddings, its vision tower: Qwen3-VL-4B's 24 blocks of width 1024 and FFN 4096)
    // with 8 experts and a shared one, top 2 (kshitijthakkar/qwen3.5-moe-4.7B-d4B, README at b8aa0f3e): its
    // card prints 4,540,002,816 parameters, 3,030,053,376 active. The expert width is the difference of the
    // two over 6 idle experts x 32 layers x 3 x 2560: 1,024.
    json small = cfg;
    small["tie_word_embeddings"] = true;
    json& t = small["text_config"];
    t["hidden_size"] = 2560;
    t["num_hidden_layers"] = 32;
    t["num_key_value_heads"] = 4;
    t["num_experts"] = 8;
    t["num_experts_per_tok"] = 2;
    t["moe_intermediate_size"] = t["shared_expert_intermediate_size"] =
        (4540002816 - 3030053376) / (6 * 32 * 3 * 2560);
    QCOMPARE(t["moe_intermediate_size"].get<int>(), 1024);
    json& v = small["vision_config"];
    v["depth"] = 24;
    v["hidden_size"] = 1024;
    v["intermediate_size"] = 4096;
    v["out_hidden_size"] = 2560;
    const ModelSpec s = modelFromHfConfig(small);
    QCOMPARE(s.totalParameters(), 4540002816ull);
    QCOMPARE(s.activeParameters(), 3030053376ull);
    // The presets: Qwen3.5-35B-A3B is the config above; Qwen3.5-4B is that checkpoint's backbone with a
    // 9,216-wide MLP (its published FFN) where the MoE block was: 8 experts and the shared one of 1,024, the
    // router and the shared expert's gate (70,801,920 a layer) out, 3 x 2560 x 9216 in.
    const ModelPreset* big = findModelPreset("Qwen/Qwen3.5-35B-A3B");
    const ModelPreset* four = findModelPreset("Qwen/Qwen3.5-4B");
    QVERIFY(big && four);
    QCOMPARE(big->spec.totalParameters(), text + tower);
    QCOMPARE(big->spec.mambaSsmCacheBytes, 4); // the checkpoint's mamba_ssm_dtype, float32
    const std::uint64_t moeBlock = 9 * 3 * 2560ull * 1024 + 2560 * 8 + 2560;
    QCOMPARE(moeBlock, 70801920ull);
    QCOMPARE(four->spec.totalParameters(), 4540002816ull - 32 * moeBlock + 32 * (3 * 2560ull * 9216));
    QCOMPARE(four->spec.totalParameters(), 4539265536ull);

    // The dense family (qwen3_5, Qwen3_5ForConditionalGeneration) has an MLP of intermediate_size in every
    // layer and needs it; the text-only spelling reads the same keys at the top.
    json dense = json::parse(R"({"model_type": "qwen3_5_text", "hidden_size": 256, "num_hidden_layers": 4,
      "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64, "vocab_size": 1000,
      "intermediate_size": 512, "tie_word_embeddings": true, "linear_num_key_heads": 2,
      "linear_num_value_heads": 4, "linear_key_head_dim": 32, "linear_value_head_dim": 32})");
    // DeltaNet: qkv 256 x (2 x 64 + 128), z 256 x 128, b and a 256 x 4, conv 256 x 4, 4 + 4, norm 32, out
    // 128 x 256; attention: q 256 x 2 x 128, k and v 256 x 64, o 128 x 256, norms 64 + 64; MLP 3 x 256 x 512;
    // two norms a layer, the tied embedding 1000 x 256 and the final norm.
    const std::uint64_t dn = 256ull * 256 + 256 * 128 + 2 * 256 * 4 + 256 * 4 + 8 + 32 + 128 * 256;
    const std::uint64_t at = 256ull * 256 + 2 * 256 * 64 + 128 * 256 + 128;
    QCOMPARE(modelFromHfConfig(dense).totalParameters(),
             3 * dn + at + 4 * (3 * 256ull * 512 + 512) + 1000ull * 256 + 256);
    dense.erase("intermediate_size");
    QCOMPARE(refusedAt(dense, "config.json"), QStringLiteral("config.json.intermediate_size"));
    json bad = cfg;
    bad["text_config"]["layer_types"] = json::array({"linear_attention"});
    QCOMPARE(refusedAt(bad, "config.json"), QStringLiteral("config.json.text_config.layer_types"));
    bad = cfg;
    bad["vision_config"] = 3;
    QCOMPARE(refusedAt(bad, "config.json"), QStringLiteral("config.json.vision_config"));
}

void TestParamCount::llama4ChunkedAndInterleaved() {
    // Llama 4, counted by hand from transformers' modeling_llama4.py and checked against the totals the
    // Hugging Face Hub reports for meta-llama/Llama-4-Scout-17B-16E-Instruct (108,641,793,536) and
    // Llama-4-Maverick-17B-128E-Instruct (401,583,781,376):
    // - attention per layer: q and o 5120 x 5120, k and v 5120 x 1024, no biases; the q/k L2 norm has no
    //   weights: 62,914,560;
    // - an expert 3 x 5120 x 8192 = 125,829,120 (gate_up_proj and down_proj slices), the shared expert the
    //   same, the router 5120 x experts; a dense layer 3 x 5120 x 16,384; two norms of 5120;
    // - embeddings and the untied head 2 x 202,048 x 5120, the final norm;
    // - the vision tower: patch projection 588 x 1408, class embedding, 577 positions x 1408, two LayerNorms,
    //   34 layers of four 1408 x 1408 projections with biases, fc1/fc2 1408 x 5632 with biases and two
    //   LayerNorms (23,807,872 each), the adapter's 5632 x 4096 and 4096 x 4096, the projector 4096 x 5120.
    const std::uint64_t attention = 2 * 5120ull * 5120 + 2 * 5120ull * 1024;
    const std::uint64_t expert = 3 * 5120ull * 8192;
    const std::uint64_t norms = 2 * 5120;
    const std::uint64_t outer = 2 * 202048ull * 5120 + 5120;
    const std::uint64_t visionLayer =
        4 * (1408ull * 1408 + 1408) + 2 * 1408ull * 5632 + 5632 + 1408 + 4 * 1408;
    QCOMPARE(visionLayer, 23807872ull);
    const std::uint64_t vision = 588ull * 1408 + 1408 + 577ull * 1408 + 4 * 1408 + 34 * visionLayer +
                                 5632ull * 4096 + 4096ull * 4096 + 4096ull * 5120;
    const std::uint64_t scout = 48 * (attention + norms + 17 * expert + 5120 * 16) + outer + vision;
    const std::uint64_t maverick = 24 * (attention + norms + 129 * expert + 5120 * 128) +
                                   24 * (attention + norms + 3 * 5120ull * 16384) + outer + vision;
    QCOMPARE(scout, 108641793536ull);
    QCOMPARE(maverick, 401583781376ull);
    const ModelPreset* s = findModelPreset("meta-llama/Llama-4-Scout-17B-16E-Instruct");
    const ModelPreset* mv = findModelPreset("meta-llama/Llama-4-Maverick-17B-128E-Instruct");
    QVERIFY(s && mv);
    QCOMPARE(s->spec.totalParameters(), scout);
    QCOMPARE(mv->spec.totalParameters(), maverick);
    QCOMPARE(s->spec.visionParams(), vision);
    // Every Scout layer is sparse; Maverick's odd layers are (interleave_moe_layer_step 2).
    QVERIFY(s->spec.isMoeLayer(0) && s->spec.isMoeLayer(47));
    QVERIFY(!mv->spec.isMoeLayer(0) && mv->spec.isMoeLayer(1) && !mv->spec.isMoeLayer(46) &&
            mv->spec.isMoeLayer(47));
    // Chunked attention of 8,192 tokens in three layers of four; every fourth layer (NoPE) is global.
    QVERIFY(s->spec.chunkedAttention);
    QCOMPARE(s->spec.slidingWindow, 8192);
    QCOMPARE(std::count(s->spec.slidingLayers.begin(), s->spec.slidingLayers.end(), 1), 36);
    QVERIFY(s->spec.isSlidingLayer(0) && s->spec.isSlidingLayer(2) && !s->spec.isSlidingLayer(3) &&
            !s->spec.isSlidingLayer(47));
    // The experts are two batched tensors a layer, as a trace shows them, and the tensors add up.
    const std::vector<std::uint64_t> tensors = s->spec.parameterTensors();
    QCOMPARE(std::count(tensors.begin(), tensors.end(), 16 * 5120ull * 2 * 8192), 48);
    QCOMPARE(std::count(tensors.begin(), tensors.end(), 16 * 8192ull * 5120), 48);
    std::uint64_t sum = 0;
    for (std::uint64_t n : tensors)
        sum += n;
    QCOMPARE(sum, scout);
    // no_rope_layers and layer_types, when given, decide which layers are chunked; a null chunk size makes
    // every layer global; moe_layers lists the sparse layers.
    json text = s->config["text_config"];
    text["no_rope_layers"] = json::array();
    for (int i = 0; i < 48; ++i)
        text["no_rope_layers"].push_back(i < 40 ? 1 : 0);
    const ModelSpec forty = modelFromHfConfig(text);
    QCOMPARE(std::count(forty.slidingLayers.begin(), forty.slidingLayers.end(), 1), 40);
    text["layer_types"] = json::array();
    for (int i = 0; i < 48; ++i)
        text["layer_types"].push_back(i % 2 ? "full_attention" : "chunked_attention");
    const ModelSpec typed = modelFromHfConfig(text);
    QVERIFY(typed.isSlidingLayer(0) && !typed.isSlidingLayer(1));
    text["attention_chunk_size"] = nullptr;
    QVERIFY(!modelFromHfConfig(text).chunkedAttention);
    json listed = s->config["text_config"];
    listed["moe_layers"] = {0, 5};
    const ModelSpec two = modelFromHfConfig(listed);
    QVERIFY(two.isMoeLayer(0) && two.isMoeLayer(5) && !two.isMoeLayer(1));
    json bad = s->config;
    bad["text_config"]["layer_types"] = json::array();
    for (int i = 0; i < 48; ++i)
        bad["text_config"]["layer_types"].push_back(i == 7 ? "sliding_attention" : "full_attention");
    QCOMPARE(refusedAt(bad, "config.json"), QStringLiteral("config.json.text_config.layer_types[7]"));
}

void TestParamCount::mistral3WithPixtral() {
    // Mistral-Small-3.2-24B-Instruct-2506 by hand from transformers' modeling_mistral3.py and
    // modeling_pixtral.py, against keras-hub's mistral3 preset and the Hub (24,011,361,280):
    // - the language model: embeddings and untied head 2 x 131,072 x 5120; per layer q and o 5120 x 4096, k
    // and
    //   v 5120 x 1024, the MLP 3 x 5120 x 32,768, two norms; the final norm;
    // - Pixtral: the patch convolution 3 x 14 x 14 x 1024 and ln_pre; per layer two norms of 1024, four
    //   1024 x 1024 projections and a gated MLP 3 x 1024 x 4096, no biases;
    // - the projector: a norm of 1024, the patch merger 4096 x 1024, linear_1 1024 x 5120, linear_2 5120 x
    // 5120.
    const std::uint64_t text =
        2 * 131072ull * 5120 +
        40 * (2 * 5120ull * 4096 + 2 * 5120ull * 1024 + 3 * 5120ull * 32768 + 2 * 5120) + 5120;
    const std::uint64_t pixtral =
        588ull * 1024 + 1024 + 24 * (2 * 1024 + 4 * 1024ull * 1024 + 3 * 1024ull * 4096);
    const std::uint64_t projector = 1024 + 4096ull * 1024 + 1024ull * 5120 + 5120ull * 5120;
    QCOMPARE(text + pixtral + projector, 24011361280ull);
    const ModelPreset* p = findModelPreset("mistralai/Mistral-Small-3.2-24B-Instruct-2506");
    QVERIFY(p);
    QCOMPARE(p->spec.totalParameters(), text + pixtral + projector);
    QCOMPARE(p->spec.visionParams(), pixtral + projector);
    // multimodal_projector_bias adds the two linears' biases; a text_config that is not an object is named.
    json cfg = p->config;
    cfg["multimodal_projector_bias"] = true;
    QCOMPARE(modelFromHfConfig(cfg).totalParameters(), text + pixtral + projector + 2 * 5120);
    cfg["text_config"] = 3;
    QCOMPARE(refusedAt(cfg, "config.json"), QStringLiteral("config.json.text_config"));
}

void TestParamCount::graniteMamba2Hybrid() {
    // transformers' GraniteMoeHybrid example config (its model documentation): 8 layers, the 4th and 8th
    // attention, hidden 512, 8 experts of 1024 (top 2), a shared MLP of 512, Mamba-2 with 8 heads of 128,
    // state 128, one group, kernel 4. By hand from modular_granitemoehybrid.py and BambaMixer:
    // - Mamba-2 mixer: inner 1024, conv channels 1024 + 2 x 128 = 1280; in_proj 512 x (1024 + 1280 + 8),
    //   conv1d 1280 x 4 and its bias 1280, dt_bias, A_log and D 8 each, the gated norm 1024, out_proj
    //   1024 x 512;
    // - attention: four 512 x 512 projections, no biases;
    // - every layer: experts 8 x 512 x 2048 (gate and up) and 8 x 1024 x 512 (down), the router 512 x 8, the
    //   shared MLP 512 x 1024 and 512 x 512, two norms of 512;
    // - tied embeddings 49,152 x 512 and the final norm.
    const std::uint64_t mixer = 512ull * (1024 + 1280 + 8) + 1280 * 4 + 1280 + 3 * 8 + 1024 + 1024ull * 512;
    const std::uint64_t attention = 4 * 512ull * 512;
    const std::uint64_t mlp =
        8 * 512ull * 2048 + 8 * 1024ull * 512 + 512 * 8 + 512ull * 1024 + 512ull * 512 + 2 * 512;
    const json tiny = {
        {"model_type", "granitemoehybrid"},
        {"hidden_size", 512},
        {"intermediate_size", 1024},
        {"layer_types", {"mamba", "mamba", "mamba", "attention", "mamba", "mamba", "mamba", "attention"}},
        {"mamba_chunk_size", 256},
        {"mamba_conv_bias", true},
        {"mamba_d_conv", 4},
        {"mamba_d_head", 128},
        {"mamba_d_state", 128},
        {"mamba_expand", 2},
        {"mamba_n_groups", 1},
        {"mamba_n_heads", 8},
        {"mamba_proj_bias", false},
        {"num_attention_heads", 8},
        {"num_experts_per_tok", 2},
        {"num_hidden_layers", 8},
        {"num_key_value_heads", 8},
        {"num_local_experts", 8},
        {"shared_intermediate_size", 512},
        {"tie_word_embeddings", true},
        {"vocab_size", 49152}};
    const ModelSpec m = modelFromHfConfig(tiny);
    QCOMPARE(m.totalParameters(), 6 * mixer + 2 * attention + 8 * mlp + 49152ull * 512 + 512);
    std::uint64_t sum = 0;
    for (std::uint64_t n : m.parameterTensors())
        sum += n;
    QCOMPARE(sum, m.totalParameters());
    QVERIFY(m.isLinearLayer(0) && !m.isLinearLayer(3) && !m.isLinearLayer(7));
    // vLLM's state per request and layer (mamba2_state_shape) at TP 1: 3 x 1280 convolution inputs and
    // 8 x 128 x 128; at TP 2 the single group is replicated to both ranks: 3 x (1024 + 2 x 2 x 128) / 2.
    QCOMPARE(m.linearConvStateElements(1), 3.0 * 1280);
    QCOMPARE(m.linearRecurrentStateElements(1), 8.0 * 128 * 128);
    QCOMPARE(m.linearConvStateElements(2), 3.0 * (1024 + 4 * 128) / 2);
    QCOMPARE(m.linearRecurrentStateElements(2), 4.0 * 128 * 128);
    // granite-4.0-h-small's published shape (hidden 4096, 40 layers of which 4 attend, 72 experts of 768, a
    // shared MLP of 1536, Mamba-2 of 128 heads x 64 with state 128, tied 100,352-entry vocabulary) comes to
    // 32,207,337,984 parameters, 59.99 GiB in bf16: the size of its safetensors files.
    json small = tiny;
    small["hidden_size"] = 4096;
    small["intermediate_size"] = 768;
    small["num_hidden_layers"] = 40;
    small["num_attention_heads"] = 32;
    small["num_key_value_heads"] = 8;
    small["num_local_experts"] = 72;
    small["num_experts_per_tok"] = 10;
    small["shared_intermediate_size"] = 1536;
    small["mamba_n_heads"] = 128;
    small["mamba_d_head"] = 64;
    small["vocab_size"] = 100352;
    small["layer_types"] = json::array();
    for (int i = 0; i < 40; ++i)
        small["layer_types"].push_back(i % 10 == 5 ? "attention" : "mamba");
    const std::uint64_t big = modelFromHfConfig(small).totalParameters();
    QCOMPARE(big, 32207337984ull);
    QVERIFY(std::abs(2.0 * static_cast<double>(big) / 1073741824.0 - 59.99) < 0.005);
    // A head size that does not multiply out, and a layer kind the reader does not know, are named.
    json bad = tiny;
    bad["mamba_d_head"] = 100;
    QCOMPARE(refusedAt(bad, "config.json"), QStringLiteral("config.json.mamba_d_head"));
    bad = tiny;
    bad["layer_types"][2] = "moe";
    QCOMPARE(refusedAt(bad, "config.json"), QStringLiteral("config.json.layer_types[2]"));
}

void TestParamCount::nemotronHBlocks() {
    // nvidia/NVIDIA-Nemotron-Nano-9B-v2: 8,888,227,328 parameters in the Hub's safetensors metadata (a public
    // model registry quotes it beside the config). By hand from modeling_nemotron_h.py, 56 blocks of one
    // norm (4,480) and one part, as hybrid_override_pattern spells them:
    // - 27 Mamba-2 mixers (M): 128 heads x 80 = 10,240 channels, 8 groups of state 128, so the convolution
    //   runs over 10,240 + 2 x 8 x 128 = 12,288 channels; in_proj 4,480 x (10,240 + 12,288 + 128), conv1d
    //   12,288 x 4 and its bias, dt_bias, A_log and D of 128 each, the gated norm 10,240, out_proj
    //   10,240 x 4,480, no projection biases;
    // - 4 attention blocks (*): q and o 4,480 x 5,120 (40 heads of 128), k and v 4,480 x 1,024;
    // - 25 MLP blocks (-): up and down 4,480 x 15,680 around a squared ReLU, no gate;
    // - untied 131,072-entry embeddings and head, the final norm.
    const std::uint64_t norm = 4480;
    const std::uint64_t mamba =
        4480ull * (10240 + 12288 + 128) + 12288 * 4 + 12288 + 3 * 128 + 10240 + 10240ull * 4480 + norm;
    const std::uint64_t attention = 2 * 4480ull * 5120 + 2 * 4480ull * 1024 + norm;
    const std::uint64_t mlp = 2 * 4480ull * 15680 + norm;
    const std::uint64_t total = 27 * mamba + 4 * attention + 25 * mlp + 2 * 131072ull * 4480 + norm;
    QCOMPARE(total, 8888227328ull);
    const ModelPreset* p = findModelPreset("nvidia/NVIDIA-Nemotron-Nano-9B-v2");
    QVERIFY(p);
    const ModelSpec& m = p->spec;
    QCOMPARE(m.totalParameters(), total);
    std::uint64_t sum = 0;
    for (std::uint64_t n : m.parameterTensors())
        sum += n;
    QCOMPARE(sum, total);
    // Block 0 is a mixer, block 1 an MLP, block 14 attends.
    QVERIFY(m.isLinearLayer(0) && m.hasMixer(0) && !m.hasMlp(0));
    QVERIFY(!m.hasMixer(1) && m.hasMlp(1) && !m.isLinearLayer(1));
    QVERIFY(!m.isLinearLayer(14) && m.hasMixer(14) && !m.hasMlp(14));
    QCOMPARE(m.layerParams(14).total(), attention);
    QCOMPARE(m.layerParams(1).total(), mlp);
    // transformers' own spelling, layers_block_type, reads the same.
    json listed = p->config;
    listed.erase("hybrid_override_pattern");
    listed["layers_block_type"] = json::array();
    for (char b : p->config["hybrid_override_pattern"].get<std::string>())
        listed["layers_block_type"].push_back(b == 'M' ? "mamba" : b == '*' ? "attention" : "mlp");
    QCOMPARE(modelFromHfConfig(listed).totalParameters(), total);
    // MoE blocks (E, as NVIDIA-Nemotron-3-Nano spells them): by hand for a small config, 4 blocks "ME*E" of
    // hidden 64: each E has 8 non-gated experts of 32 (up 64 x 32, down 32 x 64), a shared expert of 48,
    // the router 8 x 64 (its e_score_correction_bias is a buffer) and the norm.
    json moe = {{"model_type", "nemotron_h"},
                {"hidden_size", 64},
                {"intermediate_size", 128},
                {"num_hidden_layers", 4},
                {"num_attention_heads", 4},
                {"num_key_value_heads", 2},
                {"head_dim", 16},
                {"vocab_size", 256},
                {"hybrid_override_pattern", "ME*E"},
                {"mamba_num_heads", 4},
                {"mamba_head_dim", 16},
                {"n_groups", 2},
                {"ssm_state_size", 16},
                {"conv_kernel", 4},
                {"n_routed_experts", 8},
                {"num_experts_per_tok", 2},
                {"moe_intermediate_size", 32},
                {"moe_shared_expert_intermediate_size", 48},
                {"n_shared_experts", 1}};
    const std::uint64_t tinyMamba = 64ull * (64 + 128 + 4) + 128 * 4 + 128 + 3 * 4 + 64 + 64ull * 64 + 64;
    const std::uint64_t tinyAttention = 2 * 64ull * 64 + 2 * 64ull * 32 + 64;
    const std::uint64_t tinyMoe = 8 * 2 * 64ull * 32 + 2 * 64ull * 48 + 8 * 64 + 64;
    const ModelSpec small = modelFromHfConfig(moe);
    QCOMPARE(small.totalParameters(), tinyMamba + tinyAttention + 2 * tinyMoe + 2 * 256ull * 64 + 64);
    QCOMPARE(small.activeParameters(), small.totalParameters() - 2 * 6 * 2 * 64ull * 32);
    // nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16: 31,577,937,344 parameters in its safetensors index
    // ("total_parameters"; the fp32 e_score_correction_bias buffers are the 11,776 bytes its total_size holds
    // beyond 2 bytes a parameter). By hand, 23 M, 23 E and 6 * blocks of hidden 2,688: the mixer of 64 heads
    // x 64 (4,096 channels, 8 groups of state 128: 6,144 convolution channels); 128 routed experts of 1,856
    // and a shared one of 3,712, non-gated, with the router; 32 query heads and 2 KV heads of 128.
    const std::uint64_t h = 2688;
    const std::uint64_t nanoMamba = h * (4096 + 6144 + 64) + 6144 * 4 + 6144 + 3 * 64 + 4096 + 4096 * h + h;
    const std::uint64_t nanoMoe = 128 * 2 * h * 1856 + 2 * h * 3712 + 128 * h + h;
    const std::uint64_t nanoAttention = 2 * h * 4096 + 2 * h * 256 + h;
    const std::uint64_t nano = 23 * nanoMamba + 23 * nanoMoe + 6 * nanoAttention + 2 * 131072 * h + h;
    QCOMPARE(nano, 31577937344ull);
    const ModelPreset* n3 = findModelPreset("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16");
    QVERIFY(n3);
    QCOMPARE(n3->spec.totalParameters(), nano);
    // Active: 6 of the 128 routed experts (NVIDIA's "3.6B including embeddings").
    QCOMPARE(n3->spec.activeParameters(), nano - 23 * 122 * 2 * h * 1856);
    // A block letter or a length that does not match is named.
    json bad = moe;
    bad["hybrid_override_pattern"] = "ME*X";
    QCOMPARE(refusedAt(bad, "config.json"), QStringLiteral("config.json.hybrid_override_pattern[3]"));
    bad["hybrid_override_pattern"] = "ME*";
    QCOMPARE(refusedAt(bad, "config.json"), QStringLiteral("config.json.hybrid_override_pattern"));
    bad = listed;
    bad["layers_block_type"][3] = "conv";
    QCOMPARE(refusedAt(bad, "config.json"), QStringLiteral("config.json.layers_block_type[3]"));
}

void TestParamCount::qwen25VlTower() {
    // Qwen/Qwen2.5-VL-7B-Instruct: 8,292,166,656 parameters on the Hub, its visual module 676,550,144 (a
    // public fine-tuning script prints both), the rest Qwen2.5-7B's 7,615,616,512. The tower by hand from
    // transformers' modeling_qwen2_5_vl.py: the Conv3d patch embedding 3 x 2 x 14 x 14 x 1280 without bias;
    // 32 blocks of two RMSNorms of 1280, qkv 1280 x 3840 and proj 1280 x 1280 with biases, and a gated MLP
    // 1280 x 3420 (gate, up) and 3420 x 1280 with biases; the merger's RMSNorm of 1280 and its two linears
    // 5120 x 5120 and 5120 x 3584 with biases.
    const std::uint64_t block = 2 * 1280 + 1280ull * 3840 + 3840 + 1280ull * 1280 + 1280 +
                                2 * (1280ull * 3420 + 3420) + 3420ull * 1280 + 1280;
    const std::uint64_t vision =
        3 * 2 * 14 * 14 * 1280ull + 32 * block + 1280 + 5120ull * 5120 + 5120 + 5120ull * 3584 + 3584;
    QCOMPARE(vision, 676550144ull);
    const ModelPreset* p = findModelPreset("Qwen/Qwen2.5-VL-7B-Instruct");
    QVERIFY(p);
    QCOMPARE(p->spec.visionParams(), vision);
    QCOMPARE(p->spec.totalParameters(), 8292166656ull);
    QCOMPARE(p->spec.totalParameters() - vision, findModelPreset("Qwen/Qwen2.5-7B")->spec.totalParameters());
    // Newer configs put the language model's keys under text_config: the same count.
    json nested = p->config;
    json text = json::object();
    for (const char* key : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                            "num_key_value_heads", "vocab_size", "max_position_embeddings"}) {
        text[key] = nested[key];
        nested.erase(key);
    }
    nested["text_config"] = text;
    QCOMPARE(modelFromHfConfig(nested).totalParameters(), 8292166656ull);
}

QTEST_GUILESS_MAIN(TestParamCount)
#include "tst_paramcount.moc"

void TestParamCount::qwen3VlTowerAndDeepstack() {
    // Qwen/Qwen3-VL-8B-Instruct: 8,767,123,696 parameters on the Hub (its safetensors total; public scripts
    // assert the same sum of numel). By hand from transformers' modeling_qwen3_vl.py. The tower: a Conv3d
    // 3 x 2 x 16 x 16 x 1152 with bias, a position table of 2,304 x 1152; 27 blocks of two LayerNorms (weight
    // and bias), qkv 1152 x 3456 and proj 1152 x 1152 with biases, fc1 1152 x 4304 and fc2 4304 x 1152 with
    // biases; the merger's LayerNorm of 1152 and its linears 4608 x 4608 and 4608 x 4096 with biases; three
    // deepstack mergers (deepstack_visual_indexes [8, 16, 24]) whose LayerNorm is over 4608.
    const std::uint64_t h = 1152, f = 4304, merged = 4 * h;
    const std::uint64_t block = 4 * h + 3 * h * h + 3 * h + h * h + h + h * f + f + f * h + h;
    auto merger = [&](std::uint64_t norm, std::uint64_t out) {
        return 2 * norm + merged * merged + merged + merged * out + out;
    };
    auto tower = [&](std::uint64_t out) {
        return 3 * 2 * 16 * 16 * h + h + 2304 * h + 27 * block + merger(h, out) + 3 * merger(merged, out);
    };
    const std::uint64_t tower8 = tower(4096);
    QCOMPARE(tower8, 576388336ull);
    // The language model: Qwen3's layout at hidden 4096 (32 heads of 128, 8 KV heads, q/k norms), MLP 12,288,
    // 36 layers, 151,936 entries, embeddings and output untied.
    const std::uint64_t layer8 =
        2 * 4096ull * 4096 + 2 * 4096ull * 1024 + 2 * 128 + 3 * 4096ull * 12288 + 2 * 4096;
    const std::uint64_t text8 = 2 * 151936ull * 4096 + 36 * layer8 + 4096;
    QCOMPARE(text8 + tower8, 8767123696ull);
    // The preset's reader comes to the same tower and total.
    auto preset = [](const char* name, std::uint64_t vision, std::uint64_t total) {
        const ModelPreset* p = findModelPreset(name);
        if (!p || p->spec.visionParams() != vision || p->spec.totalParameters() != total)
            return static_cast<const ModelPreset*>(nullptr);
        return p;
    };
    const ModelPreset* p8 = preset("Qwen/Qwen3-VL-8B-Instruct", tower8, 8767123696ull);
    QVERIFY(p8);

    // Qwen/Qwen3-VL-30B-A3B-Instruct: 31,070,754,032 on the Hub. The same tower with its mergers ending at
    // 2048; Qwen3-MoE's language model: hidden 2048, 32 heads of 128 and 4 KV heads, 48 layers of 128
    // experts of 768 (three matrices each, batched) behind a 2048 x 128 router.
    const std::uint64_t tower30 = tower(2048);
    const std::uint64_t layer30 =
        2 * 2048ull * 4096 + 2 * 2048ull * 512 + 2 * 128 + 2048ull * 128 + 128 * 3 * 2048ull * 768 + 2 * 2048;
    const std::uint64_t text30 = 2 * 151936ull * 2048 + 48 * layer30 + 2048;
    QCOMPARE(text30 + tower30, 31070754032ull);
    const ModelPreset* p30 = preset("Qwen/Qwen3-VL-30B-A3B-Instruct", tower30, 31070754032ull);
    QVERIFY(p30);
    QVERIFY(p30->spec.fusedExperts); // PEFT's q_proj-style names do not reach the batched experts
    // A deepstack tap past the tower's last block is refused, naming the entry.
    json badTap = p8->config;
    badTap["vision_config"]["deepstack_visual_indexes"] = {8, 27};
    QCOMPARE(refusedAt(badTap), QStringLiteral("vision_config.deepstack_visual_indexes[1]"));
    // A Qwen3-VL config without text_config is refused with the field named.
    json flat = p8->config;
    flat.erase("text_config");
    QCOMPARE(refusedAt(flat), QStringLiteral("text_config"));
}

void TestParamCount::qwen2VlTower() {
    // Qwen/Qwen2-VL-7B-Instruct: 8,291,375,616 parameters per its safetensors metadata. Its language model is
    // Qwen2-7B's shape, the same 7,615,616,512 as Qwen2.5-VL-7B's. The tower by hand from transformers'
    // modeling_qwen2_vl.py: the bias-free Conv3d 3 x 2 x 14 x 14 x 1280; 32 blocks of two LayerNorms (weight
    // and bias), qkv 1280 x 3840 and proj 1280 x 1280 with biases, fc1 1280 x 5120 (mlp_ratio 4) and fc2 with
    // biases; the merger's LayerNorm of 1280 and its linears 5120 x 5120 and 5120 x 3584 with biases.
    const std::uint64_t h = 1280, f = 4 * h, merged = 4 * h;
    const std::uint64_t block = 4 * h + 3 * h * h + 3 * h + h * h + h + h * f + f + f * h + h;
    auto tower = [&](std::uint64_t out) {
        return 3 * 2 * 14 * 14 * h + 32 * block + 2 * h + merged * merged + merged + merged * out + out;
    };
    QCOMPARE(tower(3584), 675759104ull);
    const ModelPreset* p = findModelPreset("Qwen/Qwen2-VL-7B-Instruct");
    QVERIFY(p);
    QCOMPARE(p->spec.visionParams(), tower(3584));
    QCOMPARE(p->spec.totalParameters(), 8291375616ull);
    QCOMPARE(p->spec.totalParameters() - tower(3584),
             findModelPreset("Qwen/Qwen2.5-VL-7B-Instruct")->spec.totalParameters() - 676550144ull);
    // Qwen2-VL-2B-Instruct, 2,208,985,600 on the Hub: Qwen2-1.5B's language model (hidden 1536, 28 layers of
    // 12 heads and 2 KV heads of 128 with q/k/v biases, MLP 8960, 151,936 entries tied) and the same tower
    // merging into 1536.
    json small = p->config;
    for (auto [key, value] : {std::pair<const char*, int>{"hidden_size", 1536},
                              {"intermediate_size", 8960},
                              {"num_attention_heads", 12},
                              {"num_key_value_heads", 2},
                              {"vocab_size", 151936}})
        small[key] = value;
    small["tie_word_embeddings"] = true;
    small["vision_config"]["hidden_size"] = 1536;
    const std::uint64_t layer =
        1536ull * 1536 + 1536 + 2 * (1536ull * 256 + 256) + 1536ull * 1536 + 3 * 1536ull * 8960 + 2 * 1536;
    const std::uint64_t lm = 151936ull * 1536 + 28 * layer + 1536;
    QCOMPARE(lm + tower(1536), 2208985600ull);
    QCOMPARE(modelFromHfConfig(small).totalParameters(), 2208985600ull);
}
