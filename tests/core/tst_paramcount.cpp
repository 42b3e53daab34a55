// SPDX-License-Identifier: GPL-3.0-or-later
// Parameter counting from Hugging Face configs: every model in tests/data/reference/hf_models.json exactly,
// every preset against its published count, MoE active counts, and clear errors.
#include "core/error.h"
#include "core/model/hfconfig.h"
#include "core/model/presets.h"
#include "tests/testutil.h"

#include <QFile>
#include <QTest>

using namespace headroom;
using nlohmann::json;

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
    // Every family the counter supports has at least one preset.
    for (const auto& type : supportedModelTypes()) {
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

QTEST_GUILESS_MAIN(TestParamCount)
#include "tst_paramcount.moc"
