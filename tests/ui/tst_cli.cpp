// SPDX-License-Identifier: GPL-3.0-or-later
// headroom-cli through its entry point: the contract's outputs, exit codes and error lines, and real
// PNG/SVG/PDF exports.
#include "app/clicommands.h"
#include "bench/fleetgen.h"
#include "core/compare/trackrecord.h"
#include "core/fileio.h"
#include "core/io/scenariojson.h"
#include "core/serve/estimate.h"
#include "core/trace/formats/tracereader.h"
#include "tests/testutil.h"
#include "ui/common/categorycolors.h"
#include "ui/traceview/timelinerenderer.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>
#include <cstdlib>
#include <map>
#include <sstream>

using namespace headroom;
using nlohmann::json;

namespace {

struct Run {
    int code;
    std::string out, err;
};

Run cli(const std::vector<std::string>& args) {
    std::ostringstream out, err;
    const int code = runCli(args, out, err);
    return {code, out.str(), err.str()};
}

void writeFile(const std::string& path, const std::string& text) {
    QFile f(QString::fromStdString(path));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(text));
}

} // namespace

class TestCli : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void estimateJsonFollowsContract();
    void estimateHumanTable();
    void unknownKeysWarn();
    void badInputExitsOneWithFileAndField();
    void usageExitsTwo();
    void params();
    void renderFormats();
    void renderTrace();
    void compareScenarioWithTrace();
    void timelineByCategory();
    void calibrateFromTwoRuns();
    void calibrateRefusesWhatNoScenarioHolds();
    void totalsAreComparedNotCalibrated();
    void nvidiaSmiIsComparedByWhatIsInUse();
    void aSnapshotWithoutEventsIsNotARun();
    void traceSummary();
    void fleetOfRanks();
    void allocatorWhatIf();
    void reportsAndExports();
    void readmeExamplesAreWhatTheProgramPrints();
    void readmeTablesAreWhatTheProgramPrints();
    void validateReportsFitAndValidateApart();
    void badCasesFilesNameTheField();

private:
    QTemporaryDir m_dir;
    std::string m_scenario;
    std::string m_calibrated; // CS336 medium at 128 tokens with a calibration
};

void TestCli::initTestCase() {
    QVERIFY(m_dir.isValid());
    m_scenario = m_dir.filePath("gpt2l.headroom.json").toStdString();
    json doc = test::trainingDoc({{"preset", "openai-community/gpt2-large"}});
    doc["training"]["micro_batch_size"] = 8;
    doc["training"]["sequence_length"] = 1024;
    doc["training"]["gradient_accumulation_steps"] = 2; // gradients persist between micro-batches
    doc["cluster"]["num_gpus"] = 2;
    doc["cluster"]["data_parallel"] = "zero2";
    QFile f(QString::fromStdString(m_scenario));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(doc.dump(2)));
    QFile medium(
        QStringLiteral(HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-128-training.headroom.json"));
    QVERIFY(medium.open(QIODevice::ReadOnly));
    json calibrated = json::parse(medium.readAll().toStdString());
    calibrated["calibration"] = {{"factors", {{"linear", 1.28}}}};
    m_calibrated = m_dir.filePath("calibrated.headroom.json").toStdString();
    QFile c(QString::fromStdString(m_calibrated));
    QVERIFY(c.open(QIODevice::WriteOnly));
    c.write(QByteArray::fromStdString(calibrated.dump()));
}

void TestCli::estimateJsonFollowsContract() {
    const Run r = cli({"estimate", m_scenario, "--json"});
    QCOMPARE(r.code, 0);
    QVERIFY(r.err.empty());
    const json j = json::parse(r.out);
    QCOMPARE(j.at("schema").get<std::string>(), std::string("headroom.estimate/1"));
    QCOMPARE(j.at("mode").get<std::string>(), std::string("training"));
    QCOMPARE(j.at("parameters").get<long long>(), 774030080LL);
    // Section 4's twelve keys, temporaries (the step's scratch, apart from the optimizer's states) and
    // workspaces (the GEMM libraries', held throughout).
    const char* keys[] = {
        "weights",     "gradients",        "master_weights", "optimizer_states",  "temporaries",
        "activations", "attention_scores", "logits",         "gather_buffers",    "communication_buffers",
        "kv_cache",    "workspaces",       "cuda_context",   "allocator_overhead"};
    long long sum = 0;
    for (const char* k : keys) {
        QVERIFY2(j.at("per_gpu_bytes").contains(k), k);
        QVERIFY(j.at("per_gpu_bytes").at(k).is_number_integer());
        sum += j.at("per_gpu_bytes").at(k).get<long long>();
    }
    QCOMPARE(j.at("per_gpu_bytes").size(), size_t(14));
    QCOMPARE(j.at("peak_bytes").get<long long>(), sum);
    QCOMPARE(j.at("headroom_bytes").get<long long>(), j.at("capacity_bytes").get<long long>() - sum);
    QCOMPARE(j.at("fits").get<bool>(), sum <= j.at("capacity_bytes").get<long long>());
    // The plain PyTorch profile's track record: its validate runs are the CS336 runs of
    // examples/measured/cases.json planned with it and kept apart from every rule, uncalibrated (counted
    // here from that file: neither calibrate_on nor a calibration in the scenario).
    const json& record = j.at("track_record");
    QCOMPARE(record.at("framework").get<std::string>(), std::string("pytorch"));
    QFile cases(QStringLiteral(HEADROOM_SOURCE_DIR "/examples/measured/cases.json"));
    QVERIFY(cases.open(QIODevice::ReadOnly));
    const json measured = json::parse(cases.readAll().toStdString());
    int validate = 0, calibratedValidate = 0;
    for (const json& c : measured.at("cases")) {
        QFile scenario(QStringLiteral(HEADROOM_SOURCE_DIR "/examples/measured/") +
                       QString::fromStdString(c.at("scenario").get<std::string>()));
        QVERIFY(scenario.open(QIODevice::ReadOnly));
        const bool calibrated = c.contains("calibrate_on") ||
                                json::parse(scenario.readAll().toStdString()).contains("calibration");
        validate += c.at("role") == "validate" && c.at("framework") == "pytorch" && !calibrated;
        calibratedValidate += c.at("role") == "validate" && calibrated;
    }
    QCOMPARE(record.at("validate_runs").get<int>(), validate);
    QVERIFY(record.at("validate_worst_abs_error").get<double>() >= record.at("validate_median_abs_error"));
    // No run checks DeepSpeed's profile: null, and the text says so.
    json deepspeed = test::trainingDoc({{"preset", "openai-community/gpt2-large"}});
    deepspeed["training"]["framework"] = "deepspeed";
    const QString path = m_dir.filePath("deepspeed.headroom.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(deepspeed.dump()));
    f.close();
    QVERIFY(json::parse(cli({"estimate", path.toStdString(), "--json"}).out).at("track_record").is_null());
    QVERIFY(cli({"estimate", path.toStdString()})
                .out.find("Track record: no published or recorded run checks the DeepSpeed profile yet") !=
            std::string::npos);
    QVERIFY(!j.at("track_record").contains("calibrated")); // not calibrated
    // A calibrated plan also says how calibrated plans have held: the cases planned with calibrate_on or a
    // calibrated scenario, counted above from the file (the published files have none).
    const json cj = json::parse(cli({"estimate", m_calibrated, "--json"}).out);
    QCOMPARE(cj.at("track_record").at("calibrated").at("validate_runs").get<int>(), calibratedValidate);
    QVERIFY(cli({"estimate", m_calibrated})
                .out.find("\n  Calibrated plans (on recorded runs of the same code): " +
                          std::to_string(calibratedValidate) + " runs no rule was chosen on") !=
            std::string::npos);
    QVERIFY(j.at("max_micro_batch_size").get<long long>() >= 8);
    QCOMPARE(j.at("ranks").size(), size_t(1));
    QVERIFY(j.at("warnings").is_array());
    // ZeRO-2 over 2 GPUs: bf16 weights whole, gradients and fp32 states halved.
    QCOMPARE(j["per_gpu_bytes"]["weights"].get<long long>(), 2 * 774030080LL);
    QCOMPARE(j["per_gpu_bytes"]["gradients"].get<long long>(), 774030080LL);
}

void TestCli::unknownKeysWarn() {
    // A misspelt key is reported on the CLI's warning lines and in the JSON's warnings, with its path.
    json doc = loadScenarioFile(m_scenario).document;
    doc["cluster"]["tensor_paralel"] = 2;
    const QString path = m_dir.filePath("misspelt.headroom.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(doc.dump()));
    f.close();
    const std::string warning =
        "cluster.tensor_paralel is not a setting Headroom reads here: kept in the file, "
        "planned as if absent (did you mean tensor_parallel?)";
    Run r = cli({"estimate", path.toStdString()});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.find("warning: " + warning) != std::string::npos, r.out.c_str());
    r = cli({"estimate", path.toStdString(), "--json"});
    const json warnings = json::parse(r.out).at("warnings");
    QVERIFY(std::find(warnings.begin(), warnings.end(), json(warning)) != warnings.end());
}

void TestCli::estimateHumanTable() {
    const Run r = cli({"estimate", m_scenario});
    QCOMPARE(r.code, 0);
    const QString out = QString::fromStdString(r.out);
    QVERIFY(out.contains("774,030,080 parameters"));
    QVERIFY(out.contains("Optimizer states"));
    QVERIFY(out.contains("largest micro-batch that fits"));
    QVERIFY(out.contains("fits"));
    QVERIFY(!out.contains("frozen base")); // full training: no frozen base
    // LoRA: the weights split into the frozen base and the adapters, in the text and the JSON. torchtune's
    // QLoRA of Llama 3.1 8B (rank 8 on q, k, v, output_proj and the MLP) trains per layer
    // 8 x ((4096 + 4096) x 2 + (4096 + 1024) x 2 + (4096 + 14336) x 3) = 655,360 adapter parameters, over
    // 32 layers 20,971,520, in bf16: 41,943,040 bytes beside the base.
    const std::string lora =
        HEADROOM_SOURCE_DIR "/examples/published/fine-tuning/torchtune-llama3.1-8b-qlora-4090.headroom.json";
    const Run text = cli({"estimate", lora});
    QVERIFY2(text.out.find("    frozen base ") != std::string::npos &&
                 text.out.find("    trained (adapters) ") != std::string::npos,
             text.out.c_str());
    const json j = json::parse(cli({"estimate", lora, "--json"}).out);
    QCOMPARE(j.at("per_gpu_bytes").at("weights").get<long long>() -
                 j.at("frozen_weight_bytes").get<long long>(),
             2LL * 20971520);
    QVERIFY(j.at("ranks").at(0).at("frozen_weight_bytes") == j.at("frozen_weight_bytes"));
    QVERIFY(!json::parse(cli({"estimate", m_scenario, "--json"}).out).contains("frozen_weight_bytes"));
    // torchtitan's eager blocks under per-op SAC: the fitted part of the overhead, in the text and the JSON.
    // Table 1's eager run: 2.6 bytes per hidden unit, token and block, 2.6 x 4096 x 16384 x 32 = 5.2 GiB
    // (5,583,457,485 bytes, rounded).
    const std::string eager =
        HEADROOM_SOURCE_DIR "/examples/published/torchtitan-llama3-8b-fsdp8-sac-op.headroom.json";
    const Run eagerText = cli({"estimate", eager});
    QVERIFY2(eagerText.out.find("    eager blocks (fitted)         5.20 ") != std::string::npos,
             eagerText.out.c_str());
    const json eagerJson = json::parse(cli({"estimate", eager, "--json"}).out);
    QCOMPARE(eagerJson.at("fitted_eager_blocks_bytes").get<long long>(), 5583457485LL);
    QVERIFY(eagerJson.at("ranks").at(0).at("fitted_eager_blocks_bytes") ==
            eagerJson.at("fitted_eager_blocks_bytes"));
    QVERIFY(!json::parse(cli({"estimate", m_scenario, "--json"}).out).contains("fitted_eager_blocks_bytes"));
    // A paged optimizer whose states the 4090 has no room for fits with the excess in host memory, and says
    // so in the verdict, the table and the JSON.
    const std::string paged =
        HEADROOM_SOURCE_DIR "/examples/published/fine-tuning/torchtune-llama3.1-8b-full-4090.headroom.json";
    const Run pagedText = cli({"estimate", paged});
    QCOMPARE(pagedText.code, 0);
    QVERIFY2(pagedText.out.find("Fits with the GPU full: 10.88 GiB of the paged optimizer's states in host "
                                "memory") != std::string::npos &&
                 pagedText.out.find("Paged to host") != std::string::npos,
             pagedText.out.c_str());
    const json pj = json::parse(cli({"estimate", paged, "--json"}).out);
    QCOMPARE(pj.at("fits").get<bool>(), true);
    // Headroom is capacity less the peak (a sum of rounded categories), the states in host memory the same
    // excess rounded once: equal to within the categories' rounding.
    QVERIFY(std::llabs(pj.at("headroom_bytes").get<long long>() + pj.at("paged_to_host_bytes").get<long long>()) <=
            16);
}

void TestCli::badInputExitsOneWithFileAndField() {
    const QString bad = m_dir.filePath("bad.json");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    json doc = test::trainingDoc({{"preset", "gpt2"}});
    doc["cluster"]["data_parallel"] = "zero9";
    f.write(QByteArray::fromStdString(doc.dump()));
    f.close();
    Run r = cli({"estimate", bad.toStdString()});
    QCOMPARE(r.code, 1);
    QVERIFY(r.out.empty());
    QVERIFY2(QString::fromStdString(r.err).startsWith("error: " + bad + ": cluster.data_parallel: "),
             r.err.c_str());
    QCOMPARE(QString::fromStdString(r.err).count('\n'), 1);

    r = cli({"estimate", "/nonexistent/x.json"});
    QCOMPARE(r.code, 1);
    QVERIFY(QString::fromStdString(r.err).startsWith("error: /nonexistent/x.json"));

    const QString cfg = m_dir.filePath("config.json");
    QFile c(cfg);
    QVERIFY(c.open(QIODevice::WriteOnly));
    c.write(R"({"model_type": "mamba", "hidden_size": 768})");
    c.close();
    r = cli({"params", "--hf-config", cfg.toStdString()});
    QCOMPARE(r.code, 1);
    QVERIFY2(QString::fromStdString(r.err).contains(cfg + ": model_type: unknown model family 'mamba'"),
             r.err.c_str());
}

void TestCli::usageExitsTwo() {
    QCOMPARE(cli({}).code, 2);
    QCOMPARE(cli({"frobnicate"}).code, 2);
    QCOMPARE(cli({"estimate"}).code, 2);
    QCOMPARE(cli({"estimate", m_scenario, "--bogus"}).code, 2);
    QCOMPARE(cli({"params", "--preset"}).code, 2);
    QCOMPARE(cli({"params", "--preset", "gpt2", "--hf-config", "x"}).code, 2);
    QCOMPARE(cli({"render", m_scenario}).code, 2);
    QCOMPARE(cli({"--help"}).code, 0);
}

void TestCli::params() {
    Run r = cli({"params", "--preset", "gpt2", "--json"});
    QCOMPARE(r.code, 0);
    QVERIFY(json::parse(r.out) == json({{"parameters", 124439808}, {"active_parameters", 124439808}}));
    r = cli({"params", "--preset", "mistralai/Mixtral-8x7B-v0.1", "--json"});
    QCOMPARE(json::parse(r.out).at("active_parameters").get<long long>(), 12879925248LL);
    // A real config.json file from the reference set, written out as a user would have it.
    QFile f(test::dataDir() + "/reference/hf_models.json");
    QVERIFY(f.open(QIODevice::ReadOnly));
    const json ref = json::parse(f.readAll().toStdString());
    const QString cfg = m_dir.filePath("llama3-config.json");
    QFile out(cfg);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(QByteArray::fromStdString(ref["models"][4]["config"].dump()));
    out.close();
    r = cli({"params", "--hf-config", cfg.toStdString(), "--json"});
    QCOMPARE(r.code, 0);
    QCOMPARE(json::parse(r.out)["parameters"].get<long long>(),
             ref["models"][4]["param_count"].get<long long>());
    // The GPU catalogue with each GPU's compute capability (NVIDIA's tables: A100 8.0, H100 9.0, L4 8.9,
    // RTX 2060 7.5), which decides what an engine release runs on it.
    r = cli({"gpus", "--json"});
    QCOMPARE(r.code, 0);
    std::map<std::string, double> cc;
    for (const json& g : json::parse(r.out))
        cc[g.at("name").get<std::string>()] = g.at("compute_capability").get<double>();
    QCOMPARE(cc.at("A100-80GB"), 8.0);
    QCOMPARE(cc.at("H100-SXM-80GB"), 9.0);
    QCOMPARE(cc.at("L4-24GB"), 8.9);
    QCOMPARE(cc.at("RTX-2060-12GB"), 7.5);
}

void TestCli::timelineByCategory() {
    const std::string trace =
        (test::dataDir() + "/traces/snapshots/cs336_Wedsonlin_medium_1024_training_memory_snapshot.pickle")
            .toStdString();
    const std::string scenario =
        HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-1024-training-bf16-autocast.headroom.json";
    Run r = cli({"timeline", trace, "--scenario", scenario, "--buckets", "40", "--json"});
    QCOMPARE(r.code, 0);
    const json t = json::parse(r.out);
    QCOMPARE(t["schema"].get<std::string>(), std::string("headroom.timeline/1"));
    QCOMPARE(t["axis"].get<std::string>(), std::string("time"));
    QVERIFY(t["by_category"].get<bool>());
    QVERIFY(t["buckets"].size() <= 40 && t["buckets"].size() >= 30);
    // Each row: the categories at its end sum to its allocated bytes, at its maximum to its maximum.
    long long highest = 0;
    for (const json& b : t["buckets"]) {
        long long end = 0, atMax = 0;
        for (const auto& [k, v] : b["by_category"].items())
            end += v.get<long long>();
        for (const auto& [k, v] : b["by_category_at_max"].items())
            atMax += v.get<long long>();
        QCOMPARE(end, b["allocated_bytes"].get<long long>());
        QCOMPARE(atMax, b["allocated_max_bytes"].get<long long>());
        highest = std::max(highest, atMax);
        QVERIFY(b["end"].get<double>() > b["start"].get<double>());
    }
    // The peak is compare's split, category by category.
    QCOMPARE(highest, t["peak"]["allocated_bytes"].get<long long>());
    const Run c = cli({"compare", scenario, trace, "--json"});
    QCOMPARE(c.code, 0);
    const json cmp = json::parse(c.out);
    QVERIFY(t["peak"]["by_category"] == cmp["measured"]["by_category"]);
    QCOMPARE(t["peak"]["event"].get<long long>(), cmp["at_event"].get<long long>());
    // The plan over the run: placed by the recorded optimizer step, its peak the estimate compare reports,
    // and every row it covers carries the plan's split there.
    QCOMPARE(t["plan"]["alignment"].get<std::string>(), std::string("optimizer step"));
    QCOMPARE(t["plan"]["peak_allocated_bytes"].get<long long>(),
             cmp["estimate"]["allocated_bytes"].get<long long>());
    QVERIFY(t["buckets"][0].contains("plan_by_category"));
    // The text table marks the stretch holding the peak, in GiB.
    r = cli({"timeline", trace, "--scenario", scenario, "--buckets", "6"});
    QCOMPARE(r.code, 0);
    QVERIFY(QString::fromStdString(r.out).contains(QStringLiteral("22.54")));
    QCOMPARE(QString::fromStdString(r.out).count(QStringLiteral("<- peak")), 1);
    // Totals-only formats have no categories, and say so.
    r = cli({"timeline",
             (test::dataDir() + "/traces/memory_timeline/HTA_memory_timeline.raw.gz").toStdString(),
             "--json"});
    QCOMPARE(r.code, 0);
    QVERIFY(!json::parse(r.out)["by_category"].get<bool>());
    // Usage and input errors.
    QCOMPARE(cli({"timeline", trace, "--buckets", "0"}).code, 2);
    r = cli({"timeline", trace, "--device", "7"});
    QCOMPARE(r.code, 1);
    QVERIFY(QString::fromStdString(r.err).contains(QStringLiteral("no device '7' (its devices: 0)")));
    // render --by-category draws the same split: the weights' colour along the plot's bottom mid-run.
    const QString png = m_dir.filePath("by-category.png");
    r = cli({"render", trace, "--by-category", "--scenario", scenario, "-o", png.toStdString(), "--size",
             "1000x400"});
    QCOMPARE(r.code, 0);
    QImage img(png);
    QVERIFY(!img.isNull());
    const QRect plot = TimelineRenderer::plotRect(QRect(0, 0, 1000, 400), 1, 0);
    QCOMPARE(img.pixelColor(2 * plot.center().x(), 2 * plot.bottom() - 4),
             categoryColor(MeasuredCategory::Weights));
}

void TestCli::renderTrace() {
    const std::string trace = (test::dataDir() + "/traces/snapshots/DeComFL_memory.pickle").toStdString();
    for (const char* ext : {"png", "svg", "pdf"}) {
        const QString out = m_dir.filePath(QStringLiteral("timeline.%1").arg(ext));
        const Run r = cli({"render", trace, "-o", out.toStdString(), "--size", "1000x400"});
        QCOMPARE(r.code, 0);
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        if (QByteArray(ext) == "png") {
            QImage img;
            QVERIFY(img.loadFromData(bytes, "PNG"));
            QCOMPARE(img.size(), QSize(2000, 800));
            // The largest allocations are bands of their own colours, besides the grey rest and the lines.
            QSet<QRgb> colours;
            for (int y = 0; y < img.height(); y += 5)
                for (int x = 0; x < img.width(); x += 5)
                    colours.insert(img.pixel(x, y));
            QVERIFY(colours.size() > 10);
        } else if (QByteArray(ext) == "svg") {
            QVERIFY(bytes.contains("<svg"));
            QVERIFY(bytes.contains(
                "peak 1.66 GiB")); // trace-summary: peak_allocated_bytes 1,783,664,516 = 1.661 GiB
        } else {
            QVERIFY(bytes.startsWith("%PDF"));
            QCOMPARE(bytes.count("/Type /Page\n") + bytes.count("/Type /Page "), 1);
        }
    }
    // A file that is not a trace of any kind fails naming it.
    const QString junk = m_dir.filePath("junk.pickle");
    QFile j(junk);
    QVERIFY(j.open(QIODevice::WriteOnly));
    j.write("\x80\x04\x95garbage");
    j.close();
    const Run bad = cli({"render", junk.toStdString(), "-o", m_dir.filePath("x.png").toStdString()});
    QCOMPARE(bad.code, 1);
    QVERIFY(QString::fromStdString(bad.err).contains("junk.pickle"));
}

void TestCli::compareScenarioWithTrace() {
    const std::string sc = HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-256-training.headroom.json";
    const std::string trace =
        (test::dataDir() + "/traces/snapshots/cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle")
            .toStdString();
    const Run r = cli({"compare", sc, trace, "--json"});
    QCOMPARE(r.code, 0);
    const auto j = nlohmann::json::parse(r.out);
    QCOMPARE(j["schema"].get<std::string>(), std::string("headroom.compare/1"));
    QCOMPARE(j["measured"]["allocated_bytes"].get<long long>(), 9103544320LL); // MEASURED.md
    QCOMPARE(j["device"].get<std::string>(), std::string("0"));
    // Reserved beside it: the snapshot's segments at their most, 9,265,217,536 bytes as trace-summary reads
    // them (tst_attribution::calibrationLearnsTheAllocatorsOverhead), and the plan's max_memory_reserved.
    QCOMPARE(j["reserved"]["measured_bytes"].get<long long>(), 9265217536LL);
    const auto planned = nlohmann::json::parse(cli({"estimate", sc, "--json"}).out);
    QCOMPARE(j["reserved"]["estimate_bytes"].get<double>(), planned["reserved_peak_bytes"].get<double>());
    const Run text = cli({"compare", sc, trace});
    QCOMPARE(text.code, 0);
    QVERIFY(QString::fromStdString(text.out).contains("below the measured peak"));
    QVERIFY2(QString::fromStdString(text.out).contains(QRegularExpression("\\n  Reserved +[0-9.]+ +8\\.63 ")),
             text.out.c_str());
    QCOMPARE(cli({"compare", sc}).code, 2);
    // A recording of a first step (test::firstStepRecording: 8,192 bytes of a forward, then two 3,072-byte
    // states the step creates), written out. Planned as a later step, compare names it and
    // points at the setting; planned as the first (training.first_step), it says nothing of it.
    const std::string firstTrace = m_dir.filePath("first-step.json").toStdString();
    writeFile(firstTrace, test::firstStepRecording());
    nlohmann::json tiny = nlohmann::json::parse(R"({"schema": "headroom.scenario/1", "model": {"parameters": 768},
        "training": {"micro_batch_size": 1, "sequence_length": 16, "precision": "fp32"},
        "cluster": {"gpu": "A100-80GB", "num_gpus": 1}})");
    const std::string later = m_dir.filePath("later-step.headroom.json").toStdString();
    writeFile(later, tiny.dump());
    const Run asLater = cli({"compare", later, firstTrace});
    QCOMPARE(asLater.code, 0);
    QVERIFY2(asLater.out.find("this trace records a first step") != std::string::npos &&
                 asLater.out.find("training.first_step: true plans the first step itself") != std::string::npos,
             asLater.out.c_str());
    tiny["training"]["first_step"] = true;
    const std::string first = m_dir.filePath("first-step.headroom.json").toStdString();
    writeFile(first, tiny.dump());
    const Run asFirst = cli({"compare", first, firstTrace});
    QCOMPARE(asFirst.code, 0);
    QVERIFY2(asFirst.out.find("records a first step") == std::string::npos, asFirst.out.c_str());
    const Run diff = cli({"diff", trace, trace, "--json"});
    QCOMPARE(diff.code, 0);
    QCOMPARE(nlohmann::json::parse(diff.out)["difference_bytes"].get<long long>(), 0LL);
    QCOMPARE(cli({"diff", trace}).code, 2);
    // The rules as a file: printed, edited (optimizer allocations made temporaries), passed back.
    const Run rules = cli({"rules"});
    QCOMPARE(rules.code, 0);
    auto doc = nlohmann::json::parse(rules.out);
    for (auto& rule : doc["rules"])
        if (rule.contains("phase") && rule["phase"] == "optimizer") {
            rule.erase("phase");
            rule["category"] = "temporaries";
        }
    const QString path = m_dir.filePath("rules.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(doc.dump()));
    f.close();
    const Run edited = cli({"compare", sc, trace, "--json", "--rules", path.toStdString()});
    QCOMPARE(edited.code, 0);
    const auto e = nlohmann::json::parse(edited.out);
    QCOMPARE(e["measured"]["by_category"]["optimizer_states"].get<long long>(), 0LL);
    QVERIFY(e["measured"]["by_category"]["temporaries"].get<long long>() >= 8LL * 423183360);
    const Run badRules = cli({"compare", sc, trace, "--rules", sc});
    QCOMPARE(badRules.code, 1);
    QVERIFY(QString::fromStdString(badRules.err).contains("schema"));
    const Run missing = cli({"compare", sc, "/nonexistent.pickle"});
    QCOMPARE(missing.code, 1);
    QVERIFY(QString::fromStdString(missing.err).contains("/nonexistent.pickle"));
}

// The factors' texts as they are fitted against the scenario's own profile (--own-profile: plain PyTorch
// over CS336's hand-written code, what code Headroom has no tables of gets); by default CS336's runs are
// fitted against cs336_basics' tables, and the command says so.
void TestCli::calibrateFromTwoRuns() {
    const std::string m = HEADROOM_SOURCE_DIR "/examples/measured/";
    const std::string t = (test::dataDir() + "/traces/snapshots/").toStdString();
    const std::string out = m_dir.filePath("calibrated.headroom.json").toStdString();
    const Run byDefault = cli({"calibrate", m + "cs336-medium-128-training.headroom.json",
                               t + "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle", "-o", out});
    QCOMPARE(byDefault.code, 0);
    QVERIFY2(QString::fromStdString(byDefault.out)
                 .contains("  tables fitted against              cs336_basics's (the runs' stacks name it"),
             byDefault.out.c_str());
    QVERIFY(loadScenarioFile(out).calibration.codeTables);
    const Run r = cli({"calibrate", m + "cs336-medium-128-training.headroom.json",
                       t + "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle",
                       m + "cs336-medium-256-training.headroom.json",
                       t + "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle", "-o", out, "--json",
                       "--own-profile"});
    QCOMPARE(r.code, 0);
    const auto j = nlohmann::json::parse(r.out);
    QCOMPARE(j["schema"].get<std::string>(), std::string("headroom.calibration/1"));
    QCOMPARE(j["runs"].size(), size_t(2));
    QCOMPARE(j["runs"][1]["measured_bytes"].get<long long>(), 9103544320LL);
    // OUT is the first scenario, calibrated: compare with it reproduces the first run within 2%.
    const Run c =
        cli({"compare", out, t + "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle", "--json"});
    QCOMPARE(c.code, 0);
    QVERIFY(std::abs(nlohmann::json::parse(c.out)["relative_error"].get<double>()) <= 0.02);
    // The 128-token run tells what the attention backward held (x2, tst_attribution); alone, the 256-token
    // run cannot (its fp32 scores are the size of its fp32 FFN outputs): the text says so, and the backward
    // takes as many times the plan's copies as its forward keeps score copies, x2, which is what the
    // 128-token run measured.
    QCOMPARE(j["factors"]["backward_score_scratch"].get<double>(), 2.0);
    const Run alone =
        cli({"calibrate", m + "cs336-medium-256-training.headroom.json",
             t + "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle", "-o", out, "--own-profile"});
    QCOMPARE(alone.code, 0);
    QVERIFY2(QString::fromStdString(alone.out).contains(
                 "attention backward's scratch       x 2 (not measured: the scores have the size of "
                 "other tensors, or no backward was recorded; as many times the plan's two as the "
                 "forward's saved copies)"),
             alone.out.c_str());
    // Its scores it tells from its FFN outputs by the calls that allocated them (tst_attribution::
    // scoresToldByCalls): the x2 the 128-token run measures by size. And by the operators that made them
    // (its trace has C++ frames), what autocast would keep of them: exp's output at 4 bytes and the
    // division the next einsum saves as its 16-bit cast, what the plain profile plans under autocast, x1.
    QVERIFY2(QString::fromStdString(alone.out).contains(
                 "tensors that grow with tokens^2    x 2 (with 4-byte activations; x 1 with 2-byte ones); "
                 "the 2-byte factor read from the fp32 runs by the operator that made each score tensor"),
             alone.out.c_str());
    QVERIFY2(QString::fromStdString(alone.out).contains(
                 "the scores' tensors by the operator that made them: exp 24, div_Tensor 24\n"),
             alone.out.c_str());
    // Code whose calls do not tell (torch's softmax keeps no per-head vector), one length: one factor for
    // both, said on the tokens^2 line.
    const std::string handScenario = m_dir.filePath("hand.headroom.json").toStdString();
    const std::string handTrace = m_dir.filePath("hand.json").toStdString();
    writeFile(handScenario, test::handWrittenForwardDoc(64).dump());
    writeFile(handTrace, test::handWrittenForward(64, true, false, false));
    const Run untold = cli({"calibrate", handScenario, handTrace, "-o",
                            m_dir.filePath("hand-calibrated.headroom.json").toStdString()});
    QCOMPARE(untold.code, 0);
    QVERIFY2(QString::fromStdString(untold.out).contains("(with 4-byte activations), one factor for both"),
             untold.out.c_str());
    // An autocast forward tells the fp32 plan too (tst_attribution::forwardMomentsMeasured): both factors on
    // the line, its bf16 copies x2 the plan's and, at 4 bytes each, x2 the fp32 plan's two (the softmax's
    // input and output) as well.
    const Run autocast =
        cli({"calibrate", m + "cs336-medium-512-inference-bf16-autocast.headroom.json",
             t + "cs336_Wedsonlin_medium_512_inference_memory_snapshot.pickle", "-o",
             m_dir.filePath("autocast-calibrated.headroom.json").toStdString(), "--own-profile"});
    QCOMPARE(autocast.code, 0);
    QVERIFY2(QString::fromStdString(autocast.out)
                 .contains("tokens^2    x 2 (with 2-byte activations; x 2 with 4-byte ones)\n"),
             autocast.out.c_str());
    // A forward is measured inside its attention and elsewhere (tst_attribution::forwardMomentsMeasured): the
    // 128-token one holds four fp32 score copies there, x2 the plan's two, and the factor is in the JSON and
    // the text.
    const std::string forwardOut = m_dir.filePath("forward-calibrated.headroom.json").toStdString();
    const Run forward = cli({"calibrate", m + "cs336-medium-128-inference.headroom.json",
                             t + "cs336_Wedsonlin_medium_128_inference_memory_snapshot.pickle", "-o",
                             forwardOut, "--own-profile"});
    QCOMPARE(forward.code, 0);
    QVERIFY2(QString::fromStdString(forward.out)
                 .contains("tensors that grow with tokens^2    x 2 (with 4-byte "
                           "activations)\n"),
             forward.out.c_str());
    QVERIFY2(QString::fromStdString(forward.out).contains("inside a layer's attention         x 0.335"),
             forward.out.c_str());
    QFile written(QString::fromStdString(forwardOut));
    QVERIFY(written.open(QIODevice::ReadOnly));
    const double share = nlohmann::json::parse(
        written.readAll().toStdString())["calibration"]["factors"]["prefill_attention_linear"];
    QVERIFY(share > 0.3 && share < 0.4);
    QCOMPARE(cli({"calibrate", m + "cs336-medium-128-training.headroom.json", "-o", out}).code, 2);
}

void TestCli::totalsAreComparedNotCalibrated() {
    // HTA's memory timeline records allocated totals, not allocations. compare measured 0 bytes at its peak
    // and called the plan "0.0% above" it; calibrate fitted the default scenario to it (x0.117) and stayed
    // 1,007% off. The measured peak is the file's own total, the one trace-summary gives, all of it
    // unattributed (nothing places it); calibrate refuses the file, naming it.
    const std::string timeline =
        (test::dataDir() + "/traces/memory_timeline/HTA_memory_timeline.raw.gz").toStdString();
    const std::string def = HEADROOM_SOURCE_DIR "/resources/default.headroom.json";
    const long long peak =
        json::parse(cli({"trace-summary", timeline, "--json"}).out)["devices"]["0"]["peak_allocated_bytes"]
            .get<long long>();
    QVERIFY(peak > 0);
    const Run c = cli({"compare", def, timeline, "--json"});
    QCOMPARE(c.code, 0);
    const json j = json::parse(c.out);
    QCOMPARE(j["measured"]["allocated_bytes"].get<long long>(), peak);
    QCOMPARE(j["measured"]["by_category"]["unattributed"].get<long long>(), peak);
    const double planned = static_cast<double>(estimate(loadScenarioFile(def)).allocatedPeakBytes);
    QVERIFY(std::abs(j["relative_error"].get<double>() - (planned / static_cast<double>(peak) - 1)) < 0.01);
    const std::string out = m_dir.filePath("timeline-calibrated.headroom.json").toStdString();
    const Run k = cli({"calibrate", def, timeline, "-o", out});
    QCOMPARE(k.code, 1);
    QVERIFY2(k.err.rfind("error: " + timeline + ": records memory totals, not allocations", 0) == 0,
             k.err.c_str());
    QVERIFY(!QFileInfo::exists(QString::fromStdString(out)));
}

void TestCli::nvidiaSmiIsComparedByWhatIsInUse() {
    // nvidia-smi's memory.used records no allocated bytes: compare set the plan's 6.40 GiB allocated against
    // 0 and called it "0.0% above". What it can be compared by is the memory in use, the CUDA context and
    // what lives outside PyTorch included: the plan's peak on the GPU (estimate's peak_bytes) against the
    // most the log saw.
    const std::string log = m_dir.filePath("node-03.csv").toStdString();
    writeFile(log, "timestamp, index, memory.used [MiB], memory.total [MiB]\n"
                   "2024/01/15 10:20:30.000, 0, 2000 MiB, 81559 MiB\n"
                   "2024/01/15 10:20:31.000, 0, 11700 MiB, 81559 MiB\n"
                   "2024/01/15 10:20:32.000, 0, 9000 MiB, 81559 MiB\n");
    const std::string sc = HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-128-training.headroom.json";
    const json planned = json::parse(cli({"estimate", sc, "--json"}).out);
    const long long onGpu =
        planned["peak_bytes"].get<long long>() - planned["paged_to_host_bytes"].get<long long>();
    const Run c = cli({"compare", sc, log, "--json"});
    QCOMPARE(c.code, 0);
    const json j = json::parse(c.out);
    QCOMPARE(j["allocated_recorded"].get<bool>(), false);
    QVERIFY(j["relative_error"].is_null());
    QCOMPARE(j["used"]["measured_bytes"].get<long long>(), 11700LL << 20);
    QVERIFY(std::llabs(j["used"]["estimate_bytes"].get<long long>() - onGpu) <= 1);
    const double error = static_cast<double>(onGpu) / static_cast<double>(11700LL << 20) - 1;
    QVERIFY(std::abs(j["used"]["relative_error"].get<double>() - error) < 1e-6);
    const Run text = cli({"compare", sc, log});
    const std::string said =
        QString::number(100 * std::abs(error), 'f', 1).toStdString() + "% below the most the log saw in use";
    QVERIFY2(text.out.find(said) != std::string::npos, text.out.c_str());
    QVERIFY2(text.out.find("above the measured peak") == std::string::npos, text.out.c_str());
    // The one-page report says the same, and no measured category.
    const std::string md = m_dir.filePath("node-03-report.md").toStdString();
    QCOMPARE(cli({"report", sc, log, "-o", md}).code, 0);
    const std::string report = readTextFile(md);
    const auto total = report.find("| Total | ");
    QVERIFY(total != std::string::npos);
    QVERIFY(report.substr(total, report.find('\n', total) - total).find("| not recorded |") !=
            std::string::npos);
    QVERIFY2(report.find("| In use on the GPU (context included) |") != std::string::npos, report.c_str());

    // Two nodes' logs diffed: by the memory in use (B - A: 11,700 - 9,000 MiB), where both peaked at
    // "0.0 MiB" and differed by 0.
    const std::string other = m_dir.filePath("node-04.csv").toStdString();
    writeFile(other, "2024/01/15 10:20:30.000, 0, 9000, 81559\n2024/01/15 10:20:31.000, 0, 8000, 81559\n");
    const Run d = cli({"diff", other, log});
    QCOMPARE(d.code, 0);
    QVERIFY2(d.out.find("B - A: 2700.0 MiB reserved") != std::string::npos, d.out.c_str());
    const json dj = json::parse(cli({"diff", other, log, "--json"}).out);
    QCOMPARE(dj["reserved"]["difference_bytes"].get<long long>(), 2700LL << 20);
    QVERIFY(dj["difference_bytes"].is_null());
    QCOMPARE(dj["allocated_recorded"].get<bool>(), false);
    // Its timeline marks the peak where the log used the most (its second second), not at its first sample.
    const Run t = cli({"timeline", log, "--buckets", "3"});
    QCOMPARE(t.code, 0);
    QVERIFY2(t.out.find("      0.0000         -      1.95\n") != std::string::npos &&
                 t.out.find("         -     11.43   <- peak") != std::string::npos,
             t.out.c_str());
    QCOMPARE(json::parse(cli({"timeline", log, "--json"}).out)["allocated_recorded"].get<bool>(), false);
    // A cases file that checks a plan against such a log: validate measured it at 0 bytes, "+0.0%" and
    // "within 5%"; now it names the case, since a traced case is measured at its allocated peak.
    const std::string cases = m_dir.filePath("node-cases.json").toStdString();
    writeFile(cases, json{{"schema", "headroom.cases/1"},
                          {"cases",
                           {{{"id", "node-03"},
                             {"role", "validate"},
                             {"framework", "pytorch"},
                             {"scenario", sc},
                             {"metric", "allocated"},
                             {"trace", log},
                             {"source", "a node's nvidia-smi log"}}}}}
                         .dump());
    const Run v = cli({"validate", cases});
    QCOMPARE(v.code, 1);
    QVERIFY2(v.err.rfind("error: " + cases + ": cases[0].trace: " + log + " records no allocated bytes", 0) ==
                 0,
             v.err.c_str());
}

void TestCli::aSnapshotWithoutEventsIsNotARun() {
    // torch.cuda.memory._snapshot() without _record_memory_history: one segment of 1 GiB, half of it
    // allocated, when it was taken. calibrate fitted the medium model's plan to those 0.5 GiB (+1,176% off
    // after) and wrote the file; compare called it the measured peak without a word.
    const std::string snap = m_dir.filePath("taken-late.json").toStdString();
    const long long base = 1LL << 32, half = 512LL << 20;
    const json seg = {
        {"device", 0},
        {"address", base},
        {"total_size", 2 * half},
        {"allocated_size", half},
        {"active_size", half},
        {"requested_size", half},
        {"stream", 0},
        {"segment_type", "large"},
        {"blocks",
         {{{"size", half}, {"requested_size", half}, {"state", "active_allocated"}, {"address", base}},
          {{"size", half}, {"requested_size", 0}, {"state", "inactive"}, {"address", base + half}}}}};
    writeFile(snap, json{{"segments", {seg}}, {"device_traces", {json::array()}}}.dump());
    const std::string sc = HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-128-training.headroom.json";
    const std::string out = m_dir.filePath("taken-late-calibrated.headroom.json").toStdString();
    const Run k = cli({"calibrate", sc, snap, "-o", out});
    QCOMPARE(k.code, 1);
    QVERIFY2(k.err.rfind("error: " + snap + ": records no allocation events", 0) == 0, k.err.c_str());
    QVERIFY(!QFileInfo::exists(QString::fromStdString(out)));
    const Run c = cli({"compare", sc, snap});
    QCOMPARE(c.code, 0);
    QVERIFY2(c.out.find("this snapshot records no allocation events") != std::string::npos, c.out.c_str());
    const json j = json::parse(cli({"compare", sc, snap, "--json"}).out);
    QCOMPARE(j["events_recorded"].get<bool>(), false);
    QCOMPARE(j["measured"]["allocated_bytes"].get<long long>(), half);
}

void TestCli::calibrateRefusesWhatNoScenarioHolds() {
    // A forward of one 64-token sequence fitted to the 1,024-token training step: over a thousand times what
    // the scenario plans for the tokens (tst_attribution::calibrationIsOneAScenarioHolds). calibrate wrote
    // it, and every command then refused the file; now it says why, exits 1 and writes nothing.
    auto doc = nlohmann::json::parse(
        readTextFile(HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-128-inference.headroom.json"));
    doc["inference"]["batch_size"] = 1;
    doc["inference"]["context_length"] = 64;
    const std::string scenario = m_dir.filePath("one-sequence.headroom.json").toStdString();
    writeFile(scenario, doc.dump());
    const std::string out = m_dir.filePath("one-sequence-calibrated.headroom.json").toStdString();
    const std::string trace =
        (test::dataDir() + "/traces/snapshots/cs336_Wedsonlin_medium_1024_training_memory_snapshot.pickle")
            .toStdString();
    const Run r = cli({"calibrate", scenario, trace, "-o", out});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.rfind("error: calibration.factors.linear: fitted to ", 0) == 0 &&
                 r.err.find("beyond the x1000 a scenario can hold") != std::string::npos &&
                 r.err.find("nothing was calibrated") != std::string::npos,
             r.err.c_str());
    QVERIFY(!QFileInfo::exists(QString::fromStdString(out)));
    // The same pair asked for by a cases file's calibrate_on: validate names the case that asked.
    const nlohmann::json cases = {{"schema", "headroom.cases/1"},
                                  {"cases",
                                   {{{"id", "mismatched"},
                                     {"role", "fit"},
                                     {"framework", "pytorch"},
                                     {"scenario", scenario},
                                     {"metric", "allocated"},
                                     {"trace", trace},
                                     {"source", "a forward's scenario on a training step"}},
                                    {{"id", "calibrated"},
                                     {"role", "validate"},
                                     {"framework", "pytorch"},
                                     {"scenario", scenario},
                                     {"metric", "allocated"},
                                     {"trace", trace},
                                     {"calibrate_on", {"mismatched"}},
                                     {"source", "calibrated on it"}}}}};
    const std::string casesPath = m_dir.filePath("mismatched-cases.json").toStdString();
    writeFile(casesPath, cases.dump());
    const Run v = cli({"validate", casesPath});
    QCOMPARE(v.code, 1);
    QVERIFY2(
        v.err.rfind("error: " + casesPath + ": cases[1].calibrate_on: calibration.factors.linear: ", 0) == 0,
        v.err.c_str());
}

void TestCli::renderFormats() {
    for (const char* ext : {"png", "svg", "pdf"}) {
        const QString out = m_dir.filePath(QStringLiteral("chart.%1").arg(ext));
        const Run r = cli({"render", m_scenario, "-o", out.toStdString(), "--size", "900x500"});
        QCOMPARE(r.code, 0);
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        QVERIFY(bytes.size() > 1000);
        if (QByteArray(ext) == "png") {
            QImage img;
            QVERIFY(img.loadFromData(bytes, "PNG"));
            QCOMPARE(img.size(), QSize(1800, 1000)); // 2x device pixel ratio
            // Not blank: the bars put many distinct colours on the page.
            QSet<QRgb> colours;
            for (int y = 0; y < img.height(); y += 7)
                for (int x = 0; x < img.width(); x += 7)
                    colours.insert(img.pixel(x, y));
            QVERIFY(colours.size() > 20);
        } else if (QByteArray(ext) == "svg") {
            QVERIFY(bytes.contains("<svg"));
            QVERIFY(bytes.contains("Optimizer states"));
        } else {
            QVERIFY(bytes.startsWith("%PDF"));
        }
    }
    const Run bad = cli({"render", m_scenario, "-o", m_dir.filePath("chart.bmp").toStdString()});
    QCOMPARE(bad.code, 1);
    QVERIFY(QString::fromStdString(bad.err).contains("unsupported output type"));
    const Run readOnly = cli({"render", m_scenario, "-o", "/proc/headroom.png"});
    QCOMPARE(readOnly.code, 1);
}

void TestCli::traceSummary() {
    const QString evil = m_dir.filePath("evil.pickle");
    QFile e(evil);
    QVERIFY(e.open(QIODevice::WriteOnly));
    e.write(QByteArray("\x80\x02"
                       "cos\nsystem\n"
                       "\x8c\x02ls\x85R.",
                       20));
    e.close();
    Run r = cli({"trace-summary", evil.toStdString()});
    QCOMPARE(r.code, 1);
    QCOMPARE(QString::fromStdString(r.err),
             "error: " + evil +
                 ": byte 2: opcode GLOBAL (0x63) is not allowed: Headroom reads plain data only\n");
    QCOMPARE(cli({"trace-summary"}).code, 2);
    // An action name that is not UTF-8 (a hostile pickle can write any bytes): the JSON output used to
    // throw; it now writes U+FFFD for each bad byte and exits 0.
    auto str = [](const std::string& t) { return std::string("\x8c") + char(t.size()) + t; };
    const std::string badUtf8 = std::string("\x80\x02}(") + str("segments") + "]" + str("device_traces") +
                                "]]}(" + str("action") + str("\xff\xfe") + str("addr") +
                                std::string("K\x00", 2) + str("size") + "K\x01" + "uaau.";
    const QString odd = m_dir.filePath("odd-action.pickle");
    QFile o(odd);
    QVERIFY(o.open(QIODevice::WriteOnly));
    o.write(QByteArray::fromStdString(badUtf8));
    o.close();
    r = cli({"trace-summary", odd.toStdString(), "--json"});
    QCOMPARE(r.code, 0);
    const json oddJson = json::parse(r.out);
    QCOMPARE(oddJson.at("devices").at("0").at("actions").begin().key(),
             std::string("\xef\xbf\xbd\xef\xbf\xbd"));
    r = cli({"trace-summary",
             (test::dataDir() + "/traces/snapshots/cs336_MAGMA27_memory_snapshot.pickle").toStdString(),
             "--json"});
    QCOMPARE(r.code, 0);
    const json j = json::parse(r.out);
    QCOMPARE(j.at("schema").get<std::string>(), std::string("headroom.trace-summary/1"));
    QCOMPARE(j.at("format").get<std::string>(), std::string("pytorch-snapshot"));
    const json& d = j.at("devices").at("0");
    QCOMPARE(d.at("trace_entries").get<long long>(), 5163LL);
    QVERIFY(d.at("actions") == json({{"alloc", 1721}, {"free_requested", 1721}, {"free_completed", 1721}}));
    for (const char* k : {"final_allocated_bytes", "final_active_bytes", "final_reserved_bytes",
                          "peak_allocated_bytes", "peak_active_bytes", "peak_reserved_bytes", "segments"})
        QVERIFY2(d.at(k).is_number_integer(), k);
    QVERIFY(d.at("peak_allocated_bytes").get<long long>() >= d.at("final_allocated_bytes").get<long long>());
    r = cli({"trace-summary",
             (test::dataDir() + "/traces/chrome_traces/HTA_df_index_resolver.json.gz").toStdString()});
    QCOMPARE(r.code, 0);
    QVERIFY(QString::fromStdString(r.out).contains("chrome-trace"));
}

void TestCli::allocatorWhatIf() {
    // A snapshot written as JSON: one 20 MiB segment allocated during the trace, two 6 MiB blocks in it;
    // the first is freed and its space taken again.
    const long long base = 140000000000000;
    const long long mib = 1048576;
    json snap = {{"segments",
                  {{{"device", 0},
                    {"address", base},
                    {"total_size", 20 * mib},
                    {"stream", 0},
                    {"segment_type", "large"},
                    {"blocks",
                     {{{"address", base}, {"size", 6 * mib}, {"state", "active_allocated"}},
                      {{"address", base + 6 * mib}, {"size", 6 * mib}, {"state", "active_allocated"}},
                      {{"address", base + 12 * mib}, {"size", 8 * mib}, {"state", "inactive"}}}}}}},
                 {"device_traces",
                  {{{{"action", "segment_alloc"}, {"addr", base}, {"size", 20 * mib}, {"stream", 0}},
                    {{"action", "alloc"}, {"addr", base}, {"size", 6 * mib}, {"stream", 0}},
                    {{"action", "alloc"}, {"addr", base + 6 * mib}, {"size", 6 * mib}, {"stream", 0}},
                    {{"action", "free_requested"}, {"addr", base}, {"size", 6 * mib}, {"stream", 0}},
                    {{"action", "free_completed"}, {"addr", base}, {"size", 6 * mib}, {"stream", 0}},
                    {{"action", "alloc"}, {"addr", base}, {"size", 6 * mib}, {"stream", 0}}}}}};
    const QString path = m_dir.filePath("whatif.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(snap.dump()));
    f.close();
    Run r = cli({"allocator-whatif", path.toStdString(), "--json"});
    QCOMPARE(r.code, 0);
    const json j = json::parse(r.out);
    QCOMPARE(j["schema"].get<std::string>(), std::string("headroom.allocator-whatif/1"));
    const json& d = j["devices"]["0"];
    QCOMPARE(d["recorded"]["peak_reserved_bytes"].get<long long>(), 20 * mib);
    QCOMPARE(d["recorded"]["segment_allocs"].get<int>(), 1);
    QCOMPARE(d["replayed"]["matches_recording"].get<bool>(), true);
    QCOMPARE(d["replayed"]["addresses_reproduced"].get<int>(), 3);
    QCOMPARE(d["whatif"]["peak_reserved_bytes"].get<long long>(), 20 * mib);
    // Expandable segments map 20 MiB pages: 12 MiB of blocks need one.
    r = cli({"allocator-whatif", path.toStdString(), "--expandable-segments", "--json"});
    QCOMPARE(r.code, 0);
    const json e = json::parse(r.out);
    QCOMPARE(e["devices"]["0"]["whatif"]["settings"]["expandable_segments"].get<bool>(), true);
    QCOMPARE(e["devices"]["0"]["whatif"]["peak_reserved_bytes"].get<long long>(), 20 * mib);
    // A device of 10 MiB cannot hold the 20 MiB segment: both requests that need one fail.
    r = cli({"allocator-whatif", path.toStdString(), "--device-memory-gib", "0.009765625", "--json"});
    QCOMPARE(json::parse(r.out)["devices"]["0"]["whatif"]["ooms"].get<int>(), 3);
    QVERIFY(
        cli({"allocator-whatif", path.toStdString()}).out.find("reproduces every recorded segment event") !=
        std::string::npos);
    // Usage errors exit 2; a trace with nothing to replay exits 1 naming why.
    QCOMPARE(cli({"allocator-whatif", path.toStdString(), "--max-split-size-mb", "lots"}).code, 2);
    // A file it cannot replay is named, as every reader's errors name it (it said "trace: is a ...").
    const std::string smi = m_dir.filePath("whatif-node.csv").toStdString();
    writeFile(smi, "2024/01/15 10:20:30.000, 0, 2000, 81559\n");
    const Run bad = cli({"allocator-whatif", smi});
    QCOMPARE(bad.code, 1);
    QVERIFY2(bad.err.rfind("error: " + smi + ": format: the file is nvidia-smi-csv;", 0) == 0,
             bad.err.c_str());
    QCOMPARE(cli({"allocator-whatif", path.toStdString(), "--roundup-power2-divisions", "3"}).code, 2);
    QCOMPARE(cli({"allocator-whatif", path.toStdString(), "--garbage-collection-threshold", "0.5"}).code, 2);
    const QString csv = m_dir.filePath("smi.csv");
    QFile c(csv);
    QVERIFY(c.open(QIODevice::WriteOnly));
    c.write("timestamp, index, memory.used [MiB], memory.total [MiB]\n2024/01/01 00:00:00.000, 0, 100 MiB, "
            "80000 MiB\n");
    c.close();
    r = cli({"allocator-whatif", csv.toStdString()});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.find("PyTorch memory snapshot") != std::string::npos, r.err.c_str());
    // Its summary says allocated bytes are not recorded, where it printed a peak of 0.00 GiB; the JSON keeps
    // its zeros (docs/formats.md section 5).
    r = cli({"trace-summary", csv.toStdString()});
    QVERIFY2(r.out.find("allocated  not recorded (the file has the device's used memory, read as reserved)\n"
                        "    reserved   peak 0.10 GiB") != std::string::npos,
             r.out.c_str());
    QCOMPARE(
        json::parse(
            cli({"trace-summary", csv.toStdString(), "--json"}).out)["devices"]["0"]["peak_allocated_bytes"]
            .get<long long>(),
        0LL);
}

void TestCli::reportsAndExports() {
    const std::string def = HEADROOM_SOURCE_DIR "/resources/default.headroom.json";
    const Scenario sc = loadScenarioFile(def);
    const Estimate est = estimate(sc);
    const QString peak = QString::number(est.peakBytes / 1073741824.0, 'f', 2);
    // The one-page PDF: one page, the scenario's name and its peak as text.
    const QString pdf = m_dir.filePath("report.pdf");
    Run r = cli({"report", def, "-o", pdf.toStdString()});
    QCOMPARE(r.code, 0);
    QCOMPARE(test::pdfPages(pdf), 1);
    const QString text = test::pdfText(pdf);
    QVERIFY2(text.contains(QString::fromStdString(sc.name)), qPrintable(text));
    QVERIFY2(text.contains(peak), qPrintable(peak + " not in:\n" + text));
    // The profile's track record in two rows of the settings.
    QVERIFY2(text.contains(QStringLiteral("Checked on")) && text.contains(QStringLiteral("Error on them")),
             qPrintable(text));
    // A calibrated scenario's report adds how calibrated plans have held.
    const QString calibratedPdf = m_dir.filePath("calibrated.pdf");
    QCOMPARE(cli({"report", m_calibrated, "-o", calibratedPdf.toStdString()}).code, 0);
    const QString calibratedText = test::pdfText(calibratedPdf);
    QVERIFY2(calibratedText.contains(
                 QStringLiteral("%1 runs kept apart").arg(calibrationTrackRecord().validateRuns)),
             qPrintable(calibratedText));
    QVERIFY(!text.contains(QStringLiteral("Calibrated")));
    // Markdown: the same numbers in its tables, its charts beside it as real PNGs.
    const QString md = m_dir.filePath("plan.md");
    QCOMPARE(cli({"report", def, "-o", md.toStdString()}).code, 0);
    QFile f(md);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QString markdown = QString::fromUtf8(f.readAll());
    QVERIFY(markdown.contains(QStringLiteral("| Peak | %1 | 100.0% |").arg(peak)));
    QVERIFY(markdown.contains(QStringLiteral("![Per-GPU breakdown](plan-breakdown.png)")));
    QVERIFY(!QImage(m_dir.filePath("plan-breakdown.png")).isNull());
    QVERIFY(!QImage(m_dir.filePath("plan-strategies.png")).isNull());
    QVERIFY(!markdown.contains(QStringLiteral("(fitted)")));
    // torchtitan's eager blocks: the overhead's fitted part on a row of its own (Table 1's eager run: 2.6 x
    // 4096 x 16384 x 32 bytes = 5.20 GiB, 6.2% of the 83.31 GiB peak).
    const QString eagerMd = m_dir.filePath("eager.md");
    QCOMPARE(cli({"report",
                  HEADROOM_SOURCE_DIR "/examples/published/torchtitan-llama3-8b-fsdp8-sac-op.headroom.json",
                  "-o", eagerMd.toStdString()})
                 .code,
             0);
    QFile e(eagerMd);
    QVERIFY(e.open(QIODevice::ReadOnly));
    const QString eagerText = QString::fromUtf8(e.readAll());
    QVERIFY2(eagerText.contains(QStringLiteral("| Overhead: eager blocks (fitted) | 5.20 | 6.2% |")),
             qPrintable(eagerText));
    // A forward with autograd on keeps no KV cache, and its report's settings say so and name the mode.
    json graph = parseJsonText(
        readTextFile(HEADROOM_SOURCE_DIR
                     "/examples/measured/cs336-basics/cs336-2.7b-128-forward-with-graph-h800.headroom.json"));
    graph["inference"].erase("framework");
    const QString graphFile = m_dir.filePath("graph.headroom.json");
    writeFile(graphFile.toStdString(), graph.dump());
    const QString graphMd = m_dir.filePath("graph.md");
    QCOMPARE(cli({"report", graphFile.toStdString(), "-o", graphMd.toStdString()}).code, 0);
    QFile g(graphMd);
    QVERIFY(g.open(QIODevice::ReadOnly));
    const QString graphText = QString::fromUtf8(g.readAll());
    QVERIFY2(graphText.contains(QStringLiteral("| KV cache | none |")) &&
                 graphText.contains(QStringLiteral("| Grad mode | autograd on (no backward) |")),
             qPrintable(graphText));
    // A generation loop that asks for every position's logits (inference.logits "all" with a cache): its
    // settings name what the forward returns, which the cache alone would not say.
    json loop = graph;
    loop["inference"].erase("grad_mode");
    loop["inference"]["logits"] = "all";
    writeFile(graphFile.toStdString(), loop.dump());
    QCOMPARE(cli({"report", graphFile.toStdString(), "-o", graphMd.toStdString()}).code, 0);
    QFile l(graphMd);
    QVERIFY(l.open(QIODevice::ReadOnly));
    const QString loopText = QString::fromUtf8(l.readAll());
    QVERIFY2(loopText.contains(QStringLiteral("| Logits | every position's (model(input_ids)) |")) &&
                 !graphText.contains(QStringLiteral("| Logits | every")),
             qPrintable(loopText));
    // With a trace: the measured peak beside the estimate.
    const std::string scenario =
        HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-256-training.headroom.json";
    const std::string trace = test::dataDir().toStdString() +
                              "/traces/snapshots/cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle";
    const QString measured = m_dir.filePath("measured.pdf");
    QCOMPARE(cli({"report", scenario, trace, "-o", measured.toStdString()}).code, 0);
    const QString measuredText = test::pdfText(measured);
    QVERIFY(measuredText.contains(QStringLiteral("Estimate vs measured")));
    // Planned as plain PyTorch, the trace's code is cs336_basics': the note under the table says so
    // (tst_attribution::codeOriginFromTheStacks), whole.
    QVERIFY2(measuredText.contains(QStringLiteral("framework \"cs336_basics\" plans this trace's code")) &&
                 measuredText.simplified().contains(QStringLiteral("the most through")) &&
                 measuredText.contains(QStringLiteral("optimizer.py")),
             qPrintable(measuredText));
    // And what that profile plans for it: the run's 8.48 GiB (MEASURED.md: 9,103,544,320 bytes), which the
    // cs336_basics profile meets (tst_attribution::codeOriginFromTheStacks).
    QVERIFY2(measuredText.simplified().contains(QStringLiteral("planned with it, 8.48 GiB allocated")),
             qPrintable(measuredText));
    // With a trace, the run over time by category with the plan over it takes the second chart's place.
    QVERIFY2(measuredText.contains(QStringLiteral("The run over time by category")),
             qPrintable(measuredText));
    QVERIFY2(measuredText.contains(QStringLiteral("plan (dashed)")), qPrintable(measuredText));
    QVERIFY2(measuredText.contains(QStringLiteral("Optimizer.step")), qPrintable(measuredText));
    // On one GPU without a trace, DDP and the ZeRO stages are one plan: the report shows how long a sequence
    // fits instead of four equal bars; the default's eight ranks keep their strategies.
    const QString oneGpu = m_dir.filePath("one-gpu.pdf");
    QCOMPARE(cli({"report", scenario, "-o", oneGpu.toStdString()}).code, 0);
    const QString oneGpuText = test::pdfText(oneGpu);
    QVERIFY2(!oneGpuText.contains(QStringLiteral("over 1 ranks")), qPrintable(oneGpuText));
    QVERIFY2(oneGpuText.contains(QStringLiteral("Peak against sequence length")), qPrintable(oneGpuText));
    QVERIFY(oneGpuText.contains(QStringLiteral("largest that")));
    QVERIFY2(!measuredText.contains(QChar(0x2026)), qPrintable(measuredText)); // no ellipsis
    QVERIFY2(text.contains(QStringLiteral("DDP and ZeRO over %1 ranks").arg(est.dataParallelSize)),
             qPrintable(text));
    // No text is drawn over other text: the default, the trace-paired and (below) the served report.
    QVERIFY2(test::pdfOverlappingWords(pdf).isEmpty(), qPrintable(test::pdfOverlappingWords(pdf).join("; ")));
    QVERIFY2(test::pdfOverlappingWords(measured).isEmpty(),
             qPrintable(test::pdfOverlappingWords(measured).join("; ")));
    // Nothing a reader needs is cut short: a long title takes a smaller type, a long setting wraps.
    const std::string served =
        HEADROOM_SOURCE_DIR "/examples/serve-qwen3-235b-fp8-sglang-4xh100.headroom.json";
    const QString servedPdf = m_dir.filePath("served.pdf");
    QCOMPARE(cli({"report", served, "-o", servedPdf.toStdString()}).code, 0);
    const QString servedText = test::pdfText(servedPdf);
    QVERIFY2(test::pdfOverlappingWords(servedPdf).isEmpty(),
             qPrintable(test::pdfOverlappingWords(servedPdf).join("; ")));
    QVERIFY2(servedText.contains(QString::fromStdString(loadScenarioFile(served).name)),
             qPrintable(servedText));
    QVERIFY2(!servedText.contains(QChar(0x2026)), qPrintable(servedText)); // no ellipsis anywhere
    // A fine-tuning plan's report splits the weights into the frozen base and the adapters, text over none.
    const std::string qlora =
        HEADROOM_SOURCE_DIR "/examples/published/fine-tuning/torchtune-llama3.1-8b-qlora-4090.headroom.json";
    const QString qloraPdf = m_dir.filePath("qlora.pdf");
    QCOMPARE(cli({"report", qlora, "-o", qloraPdf.toStdString()}).code, 0);
    QCOMPARE(test::pdfPages(qloraPdf), 1);
    const QString qloraText = test::pdfText(qloraPdf);
    QVERIFY2(qloraText.contains(QStringLiteral("frozen base")) &&
                 qloraText.contains(QStringLiteral("adapters")),
             qPrintable(qloraText));
    QVERIFY2(test::pdfOverlappingWords(qloraPdf).isEmpty(),
             qPrintable(test::pdfOverlappingWords(qloraPdf).join("; ")));
    QVERIFY2(!text.contains(QChar(0x2026)), qPrintable(text));
    QCOMPARE(cli({"report", def, "-o", m_dir.filePath("x.docx").toStdString()}).code, 1);
    QCOMPARE(cli({"report", def}).code, 2);
    // Chart exports: a PNG at 3 pixels per point decodes at that size, the SVG parses, the PDF has a page.
    const QString png = m_dir.filePath("chart.png"), svg = m_dir.filePath("chart.svg"),
                  cpdf = m_dir.filePath("chart.pdf");
    QCOMPARE(cli({"render", def, "-o", png.toStdString(), "--size", "400x300", "--scale", "3"}).code, 0);
    QCOMPARE(QImage(png).size(), QSize(1200, 900));
    QCOMPARE(cli({"render", def, "-o", svg.toStdString()}).code, 0);
    QFile s(svg);
    QVERIFY(s.open(QIODevice::ReadOnly));
    QXmlStreamReader xml(&s);
    int elements = 0;
    while (!xml.atEnd())
        if (xml.readNext() == QXmlStreamReader::StartElement)
            ++elements;
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    QVERIFY(elements > 50);
    QCOMPARE(cli({"render", def, "-o", cpdf.toStdString()}).code, 0);
    QCOMPARE(test::pdfPages(cpdf), 1);
    QCOMPARE(cli({"render", def, "-o", png.toStdString(), "--scale", "20"}).code, 2);
}

// Every example in README.md and docs/*.md that shows a headroom-cli command with its output ("$ headroom-cli
// ..." as the first line of a code block) is run from the source folder, and each line the document shows
// must be printed, in that order ("..." stands for lines left out). A figure in the README that the program
// no longer prints fails here.
void TestCli::readmeExamplesAreWhatTheProgramPrints() {
    const QString previous = QDir::currentPath();
    QVERIFY(QDir::setCurrent(QStringLiteral(HEADROOM_SOURCE_DIR)));
    QStringList documents{QStringLiteral("README.md")};
    for (const QString& f : QDir(QStringLiteral("docs")).entryList({QStringLiteral("*.md")}, QDir::Files))
        documents << QStringLiteral("docs/") + f;
    int examples = 0;
    for (const QString& document : documents) {
        QFile f(document);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'));
        for (int i = 0; i + 1 < lines.size(); ++i) {
            if (lines[i].trimmed() != QLatin1String("```") ||
                !lines[i + 1].trimmed().startsWith(QLatin1String("$ headroom-cli ")))
                continue;
            const QString command = lines[i + 1].trimmed().mid(QStringLiteral("$ headroom-cli ").size());
            QStringList expected;
            int j = i + 2;
            for (; j < lines.size() && lines[j].trimmed() != QLatin1String("```"); ++j)
                if (lines[j].trimmed() != QLatin1String("..."))
                    expected << lines[j];
            i = j;
            std::vector<std::string> args;
            for (const QString& a : command.split(QLatin1Char(' '), Qt::SkipEmptyParts))
                args.push_back(a.toStdString());
            const Run r = cli(args);
            const QStringList printed = QString::fromStdString(r.out + r.err).split(QLatin1Char('\n'));
            // Each shown line, in order, among the printed ones (trailing spaces aside).
            int at = 0;
            for (const QString& want : expected) {
                while (at < printed.size() && printed[at].trimmed() != want.trimmed())
                    ++at;
                QVERIFY2(
                    at < printed.size(),
                    qPrintable(QStringLiteral("%1: `headroom-cli %2` does not print\n%3\nIt prints:\n%4")
                                   .arg(document, command, want, QString::fromStdString(r.out + r.err))));
                ++at;
            }
            ++examples;
        }
    }
    QVERIFY(QDir::setCurrent(previous));
    QVERIFY2(examples >= 4, qPrintable(QString::number(examples)));
}

void TestCli::readmeTablesAreWhatTheProgramPrints() {
    // A block between `<!-- headroom-cli ARGS -->` and `<!-- end -->` in the README or docs/ is the program's
    // output, whole (scripts/update-docs rewrites them): the figures it quotes cannot drift from it.
    const QString previous = QDir::currentPath();
    QVERIFY(QDir::setCurrent(QStringLiteral(HEADROOM_SOURCE_DIR)));
    QStringList documents{QStringLiteral("README.md")};
    for (const QString& f : QDir(QStringLiteral("docs")).entryList({QStringLiteral("*.md")}, QDir::Files))
        documents << QStringLiteral("docs/") + f;
    static const QRegularExpression open(QStringLiteral("^<!-- headroom-cli (.+) -->$"));
    int blocks = 0;
    for (const QString& document : documents) {
        QFile f(document);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'));
        for (int i = 0; i < lines.size(); ++i) {
            const QRegularExpressionMatch m = open.match(lines[i]);
            if (!m.hasMatch())
                continue;
            QStringList shown;
            int j = i + 1;
            for (; j < lines.size() && lines[j] != QLatin1String("<!-- end -->"); ++j)
                shown << lines[j];
            QVERIFY2(j < lines.size(), qPrintable(document + ": a block with no <!-- end -->"));
            std::vector<std::string> args;
            for (const QString& a : m.captured(1).split(QLatin1Char(' '), Qt::SkipEmptyParts))
                args.push_back(a.toStdString());
            const Run r = cli(args);
            QCOMPARE(r.code, 0);
            const QString printed = QString::fromStdString(r.out).chopped(1); // its last newline
            QVERIFY2(printed == shown.join(QLatin1Char('\n')),
                     qPrintable(QStringLiteral("%1, line %2: `headroom-cli %3` prints otherwise now; run "
                                               "scripts/update-docs. It prints:\n%4")
                                    .arg(document)
                                    .arg(i + 1)
                                    .arg(m.captured(1), printed)));
            ++blocks;
            i = j;
        }
    }
    QVERIFY(QDir::setCurrent(previous));
    QVERIFY2(blocks >= 2, qPrintable(QString::number(blocks)));
}

void TestCli::validateReportsFitAndValidateApart() {
    // Two published peaks of the README's table, one marked validate, and a traced run: the JSON keeps
    // the roles apart and measures the trace at its allocated peak.
    QDir dir(m_dir.path());
    QVERIFY(dir.mkpath(QStringLiteral("cases")));
    const QString examples = QStringLiteral(HEADROOM_SOURCE_DIR "/examples/");
    const QString trace =
        test::dataDir() +
        QStringLiteral("/traces/snapshots/cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle");
    const json cases = {
        {"schema", "headroom.cases/1"},
        {"cases",
         {{{"id", "tp4"},
           {"framework", "megatron"},
           {"role", "fit"},
           {"scenario", (examples + "published/megatron-gpt-7b-tp4-pp1-h100.headroom.json").toStdString()},
           {"metric", "allocated"},
           {"stage", "last"},
           {"measured_bytes", 57143791616},
           {"source", "Megatron-LM golden values"}},
          {{"id", "tune"},
           {"framework", "torchtune"},
           {"role", "validate"},
           {"scenario", (examples + "published/torchtune-llama3.2-3b-full-ac.headroom.json").toStdString()},
           {"metric", "active"},
           {"measured_gib", 24.9},
           {"source", "torchtune README"}},
          {{"id", "traced"},
           {"framework", "pytorch"},
           {"role", "validate"},
           {"scenario", (examples + "measured/cs336-medium-128-training.headroom.json").toStdString()},
           {"metric", "allocated"},
           {"trace", trace.toStdString()},
           {"source", "CS336"}}}}};
    const QString path = m_dir.filePath("cases/cases.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(cases.dump()));
    f.close();
    const Run r = cli({"validate", path.toStdString(), "--json"});
    QCOMPARE(r.code, 0);
    const json j = json::parse(r.out);
    QCOMPARE(j.at("schema").get<std::string>(), std::string("headroom.validation/1"));
    QCOMPARE(j.at("runs").size(), std::size_t(3));
    // The trace's allocated peak, as trace-summary reads it (docs/measured.md: 7,013,335,044 B).
    QCOMPARE(j["runs"][2]["measured_bytes"].get<long long>(), 7013335044LL);
    QCOMPARE(j["runs"][1]["measured_bytes"].get<long long>(), std::llround(24.9 * 1073741824.0));
    QCOMPARE(j["summary"]["fit"]["runs"].get<int>(), 1);
    QCOMPARE(j["summary"]["validate"]["runs"].get<int>(), 2);
    QCOMPARE(j["summary"]["validate"]["by_framework"].size(), std::size_t(2));
    // The validate median of two runs is the mean of their |errors|, computed here from the runs' bytes.
    const auto err = [&](int i) {
        return std::abs(
            j["runs"][i]["estimate_bytes"].get<double>() / j["runs"][i]["measured_bytes"].get<double>() - 1);
    };
    QVERIFY(std::abs(j["summary"]["validate"]["median_abs_error"].get<double>() - (err(1) + err(2)) / 2) <
            1e-9);
    // Plain PyTorch is given beside a profile, never beside a run that is plain PyTorch already.
    QVERIFY(j["runs"][0].contains("plain_pytorch_bytes"));
    QVERIFY(!j["runs"][2].contains("plain_pytorch_bytes"));
    QCOMPARE(j["runs"][2]["measured_by_category"].size(), std::size_t(8));
    // The trace records the other counters too: its reserved and active peaks as trace-summary reads them
    // (7,235,174,400 B reserved; active is allocated in this single-stream run), beside the estimate's
    // reserved and allocated; the published runs have none.
    const json& traced = j["runs"][2];
    QCOMPARE(traced["reserved"]["measured_bytes"].get<long long>(), 7235174400LL);
    QCOMPARE(traced["active"]["measured_bytes"].get<long long>(), 7013335044LL);
    QCOMPARE(traced["active"]["estimate_bytes"].get<long long>(), traced["estimate_bytes"].get<long long>());
    QVERIFY(traced["reserved"]["estimate_bytes"].get<long long>() >
            traced["estimate_bytes"].get<long long>());
    QVERIFY(!j["runs"][0].contains("reserved") && !j["runs"][1].contains("active"));
    const json& counters = j["summary"]["validate"]["traced_counters"];
    QCOMPARE(counters["reserved"]["runs"].get<int>(), 1);
    QVERIFY(std::abs(counters["reserved"]["median_abs_error"].get<double>() -
                     std::abs(traced["reserved"]["estimate_bytes"].get<double>() / 7235174400.0 - 1)) < 1e-9);
    QVERIFY(!j["summary"]["fit"].contains("traced_counters"));
    // --summary: every line of the full Markdown but the runs' rows and the traced runs' table, in order.
    const Run full = cli({"validate", path.toStdString()});
    const Run summary = cli({"validate", "--summary", path.toStdString()});
    QCOMPARE(summary.code, 0);
    QVERIFY(summary.out.find("| run |") == std::string::npos &&
            summary.out.find("| tp4") == std::string::npos);
    QVERIFY(summary.out.find("By framework: megatron") == std::string::npos); // one fit run: no split
    QVERIFY(summary.out.find("**validate** (never used to choose one): 2 runs") != std::string::npos);
    QVERIFY(summary.out.find("Every counter the traced runs record: allocated 1 run") != std::string::npos);
    std::size_t from = 0;
    for (const QString& line :
         QString::fromStdString(summary.out).split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        const std::size_t at = full.out.find(line.toStdString(), from);
        QVERIFY2(at != std::string::npos, qPrintable(line));
        from = at + static_cast<std::size_t>(line.size());
    }
}

void TestCli::badCasesFilesNameTheField() {
    // One well-formed case with `change` merged over it (a null value removes the key).
    const auto oneCase = [](const json& change) {
        json c = {{"id", "a"},     {"framework", "x"},     {"role", "fit"},      {"metric", "allocated"},
                  {"source", "s"}, {"scenario", "s.json"}, {"measured_bytes", 1}};
        c.merge_patch(change);
        return json{{"schema", "headroom.cases/1"}, {"cases", json::array({c})}};
    };
    const std::pair<json, std::string> bad[] = {
        {{{"schema", "headroom.cases/1"}, {"cases", {{{"id", "a"}}}}}, "cases[0].framework: is missing"},
        {oneCase({{"role", "tuned"}}), "cases[0].role: must be one of fit, validate"},
        {oneCase({{"measured_bytes", nullptr}}), "cases[0]: needs exactly one of"},
        {oneCase({{"calibrate_on", {"b"}}}), "cases[0].calibrate_on[0]: no case has the id \"b\""},
        {oneCase({{"between_steps_bytes", -5}}), "cases[0].between_steps_bytes: must be a positive number"},
        {oneCase({{"plain_pytorch", "yes"}}), "cases[0].plain_pytorch: must be true or false"},
        {oneCase({{"plain_pytorch", true}}),
         "cases[0].framework: a case planned as plain PyTorch is \"pytorch\""},
        {oneCase({{"moment", "after_step"}}), "cases[0].moment: must be one of step, before_step"},
        {oneCase({{"moment", "before_step"}, {"metric", "reserved"}}),
         "cases[0].moment: the peak before the step is planned for allocated memory"},
        {{{"schema", "headroom.cases/2"}}, "schema: must be"},
    };
    for (const auto& [doc, message] : bad) {
        const QString path = m_dir.filePath("bad-cases.json");
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(QByteArray::fromStdString(doc.dump()));
        f.close();
        const Run r = cli({"validate", path.toStdString()});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.find(path.toStdString() + ": " + message) != std::string::npos, r.err.c_str());
    }
}

void TestCli::fleetOfRanks() {
    // Eight ranks of DeComFL's run in two stages, rank 5 planted 3 GiB high; and a rank's trace-summary
    // document (what a node would send) in place of one snapshot gives the same row.
    bench::FleetPlan plan;
    plan.ranks = 8;
    plan.stages = 2;
    plan.outlier = 5;
    const std::string dir = m_dir.filePath("fleet").toStdString();
    const auto files = bench::writeFleet(
        readTraceFile((test::dataDir() + "/traces/snapshots/DeComFL_memory.pickle").toStdString()), "0", plan,
        dir);
    Run r = cli({"fleet", dir, "--layout", "pp=2", "--json"});
    QCOMPARE(r.code, 0);
    const nlohmann::json doc = nlohmann::json::parse(r.out);
    QCOMPARE(doc["schema"].get<std::string>(), std::string("headroom.fleet/1"));
    QCOMPARE(doc["ranks"].size(), std::size_t(8));
    QCOMPARE(doc["job"]["worst_rank"].get<int>(), 5);
    QVERIFY(doc["job"]["outliers"] == nlohmann::json::array({5}));
    QCOMPARE(doc["job"]["stages"][1]["worst_rank"].get<int>(), 5);
    QCOMPARE(doc["ranks"][5]["peak_allocated_bytes"].get<std::int64_t>() -
                 doc["ranks"][6]["peak_allocated_bytes"].get<std::int64_t>(),
             bench::extraBytes(plan, 5) - bench::extraBytes(plan, 6));
    Run summary = cli({"trace-summary", "--json", files[3]});
    QCOMPARE(summary.code, 0);
    QFile::remove(QString::fromStdString(files[3]));
    QFile f(QString::fromStdString(dir + "/rank_03.summary.json"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(summary.out));
    f.close();
    const nlohmann::json mixed = nlohmann::json::parse(cli({"fleet", dir, "--layout", "pp=2", "--json"}).out);
    QCOMPARE(mixed["ranks"][3]["source"].get<std::string>(), std::string("trace-summary"));
    QVERIFY(mixed["ranks"][3]["peak_allocated_bytes"] == doc["ranks"][3]["peak_allocated_bytes"]);
    QVERIFY(mixed["ranks"][3]["peak_time_us"] == doc["ranks"][3]["peak_time_us"]);
    QVERIFY(mixed["ranks"][3]["by_category"].is_null());
    // The table a person reads names the outlier and why.
    r = cli({"fleet", dir, "--layout", "pp=2"});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.find("outlier: rank 5: peak") != std::string::npos, r.out.c_str());
    QVERIFY(r.out.find("stage 1: 4 ranks") != std::string::npos);
    // Usage: no folder, a layout that cannot be read.
    QCOMPARE(cli({"fleet"}).code, 2);
    r = cli({"fleet", dir, "--layout", "pp=0"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.find("--layout: 'pp=0'") != std::string::npos, r.err.c_str());
    QCOMPARE(cli({"fleet", m_dir.filePath("no-such-folder").toStdString()}).code, 1);
}

QTEST_MAIN(TestCli)
#include "tst_cli.moc"
