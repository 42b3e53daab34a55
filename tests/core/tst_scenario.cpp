// SPDX-License-Identifier: GPL-3.0-or-later
// Scenario files (docs/formats.md section 2): the contract's example, the embedded default, every kind of
// model reference, validation errors that name their JSON path, and a save that keeps unknown keys.
#include "core/error.h"
#include "core/io/scenariojson.h"
#include "core/plan/settingnames.h"
#include "core/serve/estimate.h"
#include "tests/testutil.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

using namespace headroom;
using namespace headroom::test;
using nlohmann::json;

namespace {

const json kContractExample = json::parse(R"({
  "schema": "headroom.scenario/1",
  "name": "GPT-2 Large on 2x H100, FSDP SHARD_GRAD_OP",
  "model": { "preset": "openai-community/gpt2-large" },
  "training": {
    "micro_batch_size": 8, "sequence_length": 1024, "gradient_accumulation_steps": 2,
    "precision": "bf16_mixed", "optimizer": "adamw",
    "activation_checkpointing": "none", "attention": "flash"
  },
  "cluster": {
    "gpu": "H100-SXM-80GB", "num_gpus": 2, "gpus_per_node": 8,
    "data_parallel": "zero2", "tensor_parallel": 1, "pipeline_parallel": 1,
    "sequence_parallel": false, "context_parallel": 1, "expert_parallel": 1,
    "offload_optimizer": false, "offload_parameters": false
  }
})");

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

} // namespace

class TestScenario : public QObject {
    Q_OBJECT
private slots:
    void contractExample();
    void frameworkReleases();
    void defaultScenario();
    void modelReferences();
    void unknownFamilyWithParameters();
    void wrongTypesNeverEscape();
    void errorsNameTheirPath_data();
    void errorsNameTheirPath();
    void fileErrorsNameFileAndByte();
    void saveKeepsUnknownKeys();
    void unknownKeysAreReported();
    void gpuGivenByMemoryAlone();
};

void TestScenario::contractExample() {
    const Scenario sc = scenarioFromJson(kContractExample);
    QCOMPARE(sc.parameters(), std::uint64_t(774030080));
    QCOMPARE(sc.cluster.dataParallel, DataParallel::Zero2);
    QCOMPARE(sc.cluster.capacityBytes, std::uint64_t(81559) << 20);
    const Estimate e = estimate(sc);
    QVERIFY(e.fits);
    QCOMPARE(e.parameters, std::uint64_t(774030080));
}

void TestScenario::defaultScenario() {
    const Scenario sc = scenarioFromJson(defaultScenarioDocument());
    QVERIFY(!sc.name.empty());
    QVERIFY(sc.model.known);
    QVERIFY(estimate(sc).fits); // the first thing a user sees should be a plan that works
}

void TestScenario::modelReferences() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    // model.hf_config relative to the scenario file.
    QDir(dir.path()).mkdir("cfg");
    writeFile(dir.filePath("cfg/config.json"), QByteArray::fromStdString(json({{"model_type", "mistral"},
                                                                               {"hidden_size", 4096},
                                                                               {"intermediate_size", 14336},
                                                                               {"num_hidden_layers", 32},
                                                                               {"num_attention_heads", 32},
                                                                               {"num_key_value_heads", 8},
                                                                               {"vocab_size", 32000}})
                                                                             .dump()));
    json doc = kContractExample;
    doc["model"] = {{"hf_config", "cfg/config.json"}};
    writeFile(dir.filePath("s.headroom.json"), QByteArray::fromStdString(doc.dump()));
    const Scenario fromFile = loadScenarioFile(dir.filePath("s.headroom.json").toStdString());
    QCOMPARE(fromFile.parameters(), std::uint64_t(7241732096));
    // The parsed config is cached; an edited file is read again (Mistral 7B with 16 layers: 32 layers'
    // 7,241,732,096 minus 16 layers of 218,112,000 = 3,751,940,096).
    writeFile(dir.filePath("cfg/config.json"), QByteArray::fromStdString(json({{"model_type", "mistral"},
                                                                               {"hidden_size", 4096},
                                                                               {"intermediate_size", 14336},
                                                                               {"num_hidden_layers", 16},
                                                                               {"num_attention_heads", 32},
                                                                               {"num_key_value_heads", 8},
                                                                               {"vocab_size", 32000}})
                                                                             .dump()));
    QCOMPARE(loadScenarioFile(dir.filePath("s.headroom.json").toStdString()).parameters(),
             std::uint64_t(3751940096));
    // Inline config.json with its own key names.
    doc["model"] = {{"model_type", "gpt2"}, {"n_embd", 768},       {"n_head", 12},
                    {"n_layer", 12},        {"vocab_size", 50257}, {"n_positions", 1024}};
    QCOMPARE(scenarioFromJson(doc).parameters(), std::uint64_t(124439808));
    // Parameters alone.
    doc["model"] = {{"parameters", 1000000}};
    const Scenario sized = scenarioFromJson(doc);
    QCOMPARE(sized.parameters(), std::uint64_t(1000000));
    QVERIFY(!sized.model.known);
}

void TestScenario::unknownFamilyWithParameters() {
    json doc = kContractExample;
    doc["model"] = {{"model_type", "rwkv"}, {"parameters", 3000000000LL}};
    const Scenario sc = scenarioFromJson(doc);
    QCOMPARE(sc.parameters(), std::uint64_t(3000000000));
    QVERIFY(!sc.warnings.empty());
    doc["model"].erase("parameters");
    try {
        scenarioFromJson(doc);
        QFAIL("unknown family without parameters");
    } catch (const Error& e) {
        QCOMPARE(QString::fromStdString(e.where()), QStringLiteral("model.model_type"));
        QVERIFY(QString(e.what()).contains("rwkv"));
    }
}

void TestScenario::errorsNameTheirPath_data() {
    QTest::addColumn<QByteArray>("patch");
    QTest::addColumn<QString>("path");
    auto row = [](const char* name, const json& patch, const char* path) {
        QTest::newRow(name) << QByteArray::fromStdString(patch.dump()) << QString::fromLatin1(path);
    };
    row("micro batch 0", {{"training", {{"micro_batch_size", 0}}}}, "training.micro_batch_size");
    row("micro batch string", {{"training", {{"micro_batch_size", "8"}}}}, "training.micro_batch_size");
    row("sequence negative", {{"training", {{"sequence_length", -1}}}}, "training.sequence_length");
    row("precision", {{"training", {{"precision", "fp12"}}}}, "training.precision");
    row("optimizer", {{"training", {{"optimizer", "lion"}}}}, "training.optimizer");
    row("checkpointing", {{"training", {{"activation_checkpointing", true}}}},
        "training.activation_checkpointing");
    row("attention", {{"training", {{"attention", "paged"}}}}, "training.attention");
    row("bytes override type", {{"training", {{"bytes_per_param", {{"weights", "two"}}}}}},
        "training.bytes_per_param.weights");
    row("bytes override key", {{"training", {{"bytes_per_param", {{"activations", 2}}}}}},
        "training.bytes_per_param.activations");
    row("data parallel", {{"cluster", {{"data_parallel", "zero4"}}}}, "cluster.data_parallel");
    row("gpu", {{"cluster", {{"gpu", "Z100"}}}}, "cluster.gpu");
    row("gpus not multiple", {{"cluster", {{"num_gpus", 6}, {"tensor_parallel", 4}}}}, "cluster.num_gpus");
    row("tp vs heads", {{"cluster", {{"num_gpus", 6}, {"tensor_parallel", 3}}}}, "cluster.tensor_parallel");
    row("pp vs layers", {{"cluster", {{"num_gpus", 64}, {"pipeline_parallel", 64}}}},
        "cluster.pipeline_parallel");
    row("ep dense", {{"cluster", {{"expert_parallel", 2}}}}, "cluster.expert_parallel");
    row("cp vs sequence", {{"cluster", {{"num_gpus", 6}, {"context_parallel", 3}}}},
        "cluster.context_parallel");
    row("offload type", {{"cluster", {{"offload_optimizer", "yes"}}}}, "cluster.offload_optimizer");
    row("memory override", {{"cluster", {{"gpu_memory_gib", -3}}}}, "cluster.gpu_memory_gib");
    row("preset", {{"model", {{"preset", "gpt-5"}}}}, "model.preset");
    row("no model", {{"model", {{"preset", nullptr}}}}, "model");
    row("inline bad key", {{"model", {{"preset", nullptr}, {"model_type", "llama"}, {"hidden_size", 0}}}},
        "model.hidden_size");
    row("schema", {{"schema", "headroom.scenario/9"}}, "schema");
    row("cluster type", {{"cluster", 3}}, "cluster");
    row("overheads", {{"overheads", {{"allocator_overhead_fraction", "x"}}}},
        "overheads.allocator_overhead_fraction");
    row("both modes", {{"inference", {{"batch_size", 1}}}}, "inference");
    // A non-string model_type aborted the window (an uncaught nlohmann type_error), with or without a size.
    row("model_type number", {{"model", {{"preset", nullptr}, {"model_type", 5}, {"hidden_size", 64}}}},
        "model.model_type");
    // A known family with a bad key is an error even with the size given (it was planned by size alone
    // under a warning that called llama an unknown family).
    row("known family bad key with parameters",
        {{"model", {{"preset", nullptr}, {"model_type", "llama"}, {"hidden_size", 0}, {"parameters", 1000}}}},
        "model.hidden_size");
    row("model_type number with parameters",
        {{"model", {{"preset", nullptr}, {"model_type", 5}, {"parameters", 1000}}}}, "model.model_type");
}

void TestScenario::wrongTypesNeverEscape() {
    // Found by fuzz_scenario: a number beyond double range is a nlohmann out_of_range, not a parse_error.
    try {
        parseJsonText("{\"training\": {\"micro_batch_size\": 1e400}}");
        QFAIL("1e400 accepted");
    } catch (const Error& e) {
        QVERIFY2(QString(e.what()).contains("invalid JSON"), e.what());
    }
    // With parameters given, an unknown family is planned by size; a model_type that is not even a string
    // is still an error naming it (the label used to be read with get<std::string>() and threw).
    json doc = kContractExample;
    doc["model"] = {{"model_type", 5}, {"parameters", 3000000000LL}};
    try {
        scenarioFromJson(doc);
        QFAIL("numeric model_type accepted");
    } catch (const Error& e) {
        QCOMPARE(QString::fromStdString(e.where()), QStringLiteral("model.model_type"));
        QVERIFY2(QString(e.what()).contains("must be a string"), e.what());
    }
}

void TestScenario::errorsNameTheirPath() {
    QFETCH(QByteArray, patch);
    QFETCH(QString, path);
    json doc = kContractExample;
    doc.merge_patch(json::parse(patch.toStdString()));
    try {
        scenarioFromJson(doc);
        QFAIL("expected a validation error");
    } catch (const Error& e) {
        QCOMPARE(QString::fromStdString(e.where()), path);
        QVERIFY2(QString(e.what()).size() > path.size() + 8, e.what()); // says why, not only where
    }
}

void TestScenario::fileErrorsNameFileAndByte() {
    QTemporaryDir dir;
    const QString bad = dir.filePath("bad.headroom.json");
    writeFile(bad, "{\"schema\": \"headroom.scenario/1\",\n \"model\": {\"preset\": \"gpt2\"},, }");
    try {
        loadScenarioFile(bad.toStdString());
        QFAIL("expected a syntax error");
    } catch (const Error& e) {
        QVERIFY2(QString(e.what()).startsWith(bad + ": byte "), e.what());
    }
    const QString missing = dir.filePath("missing.json");
    try {
        loadScenarioFile(missing.toStdString());
        QFAIL("expected a read error");
    } catch (const Error& e) {
        QVERIFY2(QString(e.what()).startsWith(missing), e.what());
    }
    json doc = kContractExample;
    doc["training"]["micro_batch_size"] = -2;
    writeFile(bad, QByteArray::fromStdString(doc.dump()));
    try {
        loadScenarioFile(bad.toStdString());
        QFAIL("expected a validation error");
    } catch (const Error& e) {
        QVERIFY2(QString(e.what()).startsWith(bad + ": training.micro_batch_size: "), e.what());
    }
}

void TestScenario::saveKeepsUnknownKeys() {
    json doc = kContractExample;
    doc["x_team_notes"] = {{"owner", "infra"}, {"ticket", 42}};
    doc["cluster"]["x_rack"] = "b7";
    const Scenario sc = scenarioFromJson(doc);
    const json saved = json::parse(scenarioToJsonString(sc));
    QVERIFY(saved == doc);
    QCOMPARE(saved["cluster"]["x_rack"].get<std::string>(), std::string("b7"));
    QCOMPARE(estimate(scenarioFromJson(saved)).peakBytes, estimate(sc).peakBytes);
}

// A misspelt or newer key is kept in the file but reported with its JSON path (and the nearest key Headroom
// reads, when one is close), so that it is never silently planned as its default.
void TestScenario::unknownKeysAreReported() {
    json doc = kContractExample;
    doc["training"]["micro_batchsize"] = 64;       // one letter off micro_batch_size
    doc["training"]["zero_bubble"] = true;         // a setting Headroom does not know
    doc["cluster"]["tensor_paralel"] = 2;          // misspelt
    doc["model"]["num_hidden_layers"] = 40;        // beside a preset: ignored
    doc["overheads"] = {{"cuda_context_mb", 600}}; // _mib
    doc["x_team_notes"] = "top-level keys are free-form metadata";
    const Scenario sc = scenarioFromJson(doc);
    // The plan is the one without the unknown keys ...
    QCOMPARE(sc.training.microBatchSize, 8);
    QCOMPARE(sc.cluster.tensorParallel, 1);
    // ... and says so, once per key, under the key's own path.
    const std::vector<std::string> expected = {
        "model.num_hidden_layers is not a setting Headroom reads here: kept in the file, planned as if "
        "absent",
        "training.micro_batchsize is not a setting Headroom reads here: kept in the file, planned as if "
        "absent "
        "(did you mean micro_batch_size?)",
        "training.zero_bubble is not a setting Headroom reads here: kept in the file, planned as if absent",
        "cluster.tensor_paralel is not a setting Headroom reads here: kept in the file, planned as if absent "
        "(did you mean tensor_parallel?)",
        "overheads.cuda_context_mb is not a setting Headroom reads here: kept in the file, planned as if "
        "absent "
        "(did you mean cuda_context_mib?)"};
    QCOMPARE(sc.warnings, expected);
    // The estimate carries them (its JSON's "warnings", the CLI's "warning:" lines, the window's banner).
    QCOMPARE(estimate(sc).warnings, expected);
    // Top-level keys are free-form metadata, but one a section reads is a setting at the wrong level: a
    // top-level fine_tuning planned a full fine-tune without a word. Said, with where it goes; a free key
    // and a key its section already sets stay silent.
    json misplaced = kContractExample;
    misplaced["fine_tuning"] = {{"method", "lora"}, {"rank", 16}};
    misplaced["gpu"] = "H100-SXM-80GB"; // cluster.gpu is set already
    misplaced["team"] = "infra";
    misplaced["expandable_segments"] = "yes"; // read by cluster, with a value it would refuse
    const Scenario ms = scenarioFromJson(misplaced);
    QCOMPARE(ms.training.fineTuning.method, FineTuneMethod::Full);
    const std::vector<std::string> said = { // in the keys' order
        "expandable_segments at the top of the scenario is metadata, not a setting: planned as if absent "
        "(did you mean cluster.expandable_segments?)",
        "fine_tuning at the top of the scenario is metadata, not a setting: planned as if absent (did you "
        "mean training.fine_tuning?)"};
    QCOMPARE(ms.warnings, said);
    // The same in an inference scenario.
    json inf = kContractExample;
    inf.erase("training");
    inf["inference"] = {{"batch_size", 1}, {"context_length", 1024}, {"kv_cache_dtyp", "fp8"}};
    const Scenario si = scenarioFromJson(inf);
    QCOMPARE(si.warnings.size(), std::size_t(1));
    QCOMPARE(si.warnings[0],
             std::string("inference.kv_cache_dtyp is not a setting Headroom reads here: kept in "
                         "the file, planned as if absent (did you mean kv_cache_dtype?)"));
    // An inline config.json keeps its own keys (token ids, architectures): none of them is reported.
    json cfg = kContractExample;
    cfg["model"] = {{"model_type", "llama"},     {"hidden_size", 512},
                    {"intermediate_size", 1024}, {"num_hidden_layers", 2},
                    {"num_attention_heads", 8},  {"vocab_size", 1000},
                    {"bos_token_id", 1},         {"architectures", {"LlamaForCausalLM"}}};
    QVERIFY(scenarioFromJson(cfg).warnings.empty());
    // A chunked loss outside torchtune is not planned as one, and says so; under torchtune it is.
    json chunked = kContractExample;
    chunked["training"]["loss"] = "chunked";
    chunked["training"]["framework"] = "huggingface";
    const Scenario hf = scenarioFromJson(chunked);
    QCOMPARE(hf.warnings.size(), std::size_t(1));
    QVERIFY2(hf.warnings[0].find("torchtune's CEWithChunkedOutputLoss") != std::string::npos,
             hf.warnings[0].c_str());
    chunked["training"]["framework"] = "torchtune";
    QVERIFY(scenarioFromJson(chunked).warnings.empty());
    // Every shipped scenario reads without such a warning.
    for (const QString& dir : {QStringLiteral("/examples"), QStringLiteral("/examples/published"),
                               QStringLiteral("/examples/measured")})
        for (const QString& f :
             QDir(HEADROOM_SOURCE_DIR + dir).entryList({QStringLiteral("*.headroom.json")}, QDir::Files))
            for (const std::string& w :
                 loadScenarioFile((HEADROOM_SOURCE_DIR + dir + "/" + f).toStdString()).warnings)
                QVERIFY2(w.find("is not a setting") == std::string::npos,
                         (f.toStdString() + ": " + w).c_str());
}

// A cluster given only by gpu_memory_gib is named by that memory: the default GPU's name would put an
// H100 in the title, the setup line and the report of a 24 GiB card.
void TestScenario::gpuGivenByMemoryAlone() {
    json doc = kContractExample;
    doc["cluster"].erase("gpu");
    doc["cluster"]["gpu_memory_gib"] = 23.5;
    const Scenario sc = scenarioFromJson(doc);
    QCOMPARE(sc.cluster.gpu, std::string("GPU-23.5GiB"));
    QCOMPARE(sc.cluster.capacityBytes, std::uint64_t(23.5 * 1024) << 20);
    // With a GPU named too, the name stays and the memory overrides the catalogue's.
    doc["cluster"]["gpu"] = "A100-80GB";
    const Scenario named = scenarioFromJson(doc);
    QCOMPARE(named.cluster.gpu, std::string("A100-80GB"));
    QCOMPARE(named.cluster.capacityBytes, std::uint64_t(23.5 * 1024) << 20);
}

QTEST_GUILESS_MAIN(TestScenario)
void TestScenario::frameworkReleases() {
    // major.minor[.patch], digits only; compared as numbers, so 4.9 comes before 4.46.
    QCOMPARE(parseRelease("4.44.2")->major, 4);
    QCOMPARE(parseRelease("4.44.2")->minor, 44);
    QVERIFY(*parseRelease("4.9") < *parseRelease("4.46"));
    QVERIFY(*parseRelease("0.1") < *parseRelease("0.2"));
    QVERIFY(!(*parseRelease("4.46") < *parseRelease("4.46.1")));
    for (const char* bad : {"", "4", "4.", "v4.44", "4.x", ".5", "1001.0", "99999999999.1"})
        QVERIFY2(!parseRelease(bad), bad);
    // The reader names the field.
    json doc = trainingDoc(json{{"parameters", 1000000000}});
    doc["training"]["framework"] = "huggingface";
    auto refused = [&](const char* key, const char* value) {
        json bad = doc;
        bad["training"][key] = value;
        try {
            scenarioFromJson(bad);
        } catch (const Error& e) {
            return QString::fromUtf8(e.what()).contains(QStringLiteral("training.") + QLatin1String(key));
        }
        return false;
    };
    QVERIFY(refused("framework_version", "4.x"));
    // PyTorch's release the same way, under its own field.
    QVERIFY(refused("torch_version", "two"));
    doc["training"]["torch_version"] = "2.5.1";
    const Scenario sc = scenarioFromJson(doc);
    QVERIFY(sc.training.torchBefore(2, 7));
    QVERIFY(!sc.training.torchBefore(2, 5));
}

#include "tst_scenario.moc"
