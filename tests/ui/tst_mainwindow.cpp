// SPDX-License-Identifier: GPL-3.0-or-later
// The planner window: settings panel round trip, undo/redo, open/save with failures, suggestions,
// item models under QAbstractItemModelTester, crash recovery, close confirmation, drag-and-drop imports.
#include "core/fileio.h"
#include "core/io/scenariojson.h"
#include "core/model/presets.h"
#include "core/plan/gpucatalogue.h"
#include "core/plan/sweeps.h"
#include "core/serve/estimate.h"
#include "core/version.h"
#include "tests/testutil.h"
#include "tests/windowfixture.h"
#include "ui/common/aboutdialog.h"
#include "ui/common/categorycolors.h"
#include "ui/common/richtextline.h"
#include "ui/common/tablecopy.h"
#include "ui/compare/scenariocomparepage.h"
#include "ui/mainwindow.h"
#include "ui/planner/breakdownchart.h"
#include "ui/planner/breakdownmodel.h"
#include "ui/planner/phasechart.h"
#include "ui/planner/savingsmodel.h"
#include "ui/planner/scenariodocument.h"
#include "ui/planner/servingchart.h"
#include "ui/planner/settingspanel.h"
#include "ui/planner/strategychart.h"
#include "ui/planner/sweepchart.h"

#include <QAbstractAxis>
#include <QAbstractItemModelTester>
#include <QAction>
#include <QApplication>
#include <QAreaSeries>
#include <QBarSet>
#include <QCategoryAxis>
#include <QChartView>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFontMetricsF>
#include <QLabel>
#include <QLineSeries>
#include <QLocale>
#include <QLogValueAxis>
#include <QMimeData>
#include <QScatterSeries>
#include <QSettings>
#include <QSlider>
#include <QSpinBox>
#include <QStackedBarSeries>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTextDocument>
#include <QToolTip>
#include <QUndoStack>
#include <QUrl>
#include <array>
#include <cmath>
#include <memory>

using namespace headroom;
using nlohmann::json;

namespace {

// Every setting the panel shows, written out, so that the round trip covers them all.
json fullTrainingScenario() {
    return json::parse(R"({
      "schema": "headroom.scenario/1", "name": "round trip",
      "model": {"preset": "meta-llama/Meta-Llama-3-70B"},
      "training": {"micro_batch_size": 3, "sequence_length": 8192, "gradient_accumulation_steps": 16,
                   "precision": "bf16_mixed_fp32_grads", "autocast": "bf16", "optimizer": "adam8bit",
                   "activation_checkpointing": "full", "attention": "eager", "framework": "torchtune",
                   "loss": "chunked", "compile": true, "float8": "rowwise",
                   "activation_offloading": true, "checkpoint_every": 2,
                   "recompute_method": "every_layer", "recompute_num_layers": 3,
                   "optimizer_implementation": "for_loop", "optimizer_in_backward": false, "paged_optimizer": true,
                   "first_step": true, "zero_grad": "after_forward",
                   "fine_tuning": {"method": "qlora", "rank": 32, "base_quantization": "fp4",
                                   "double_quantization": false, "adapter_dtype": "fp32", "preference": "dpo"}},
      "cluster": {"gpu": "H200-141GB", "gpu_memory_gib": 140.4013671875, "num_gpus": 128, "gpus_per_node": 8, "data_parallel": "fsdp_full_shard",
                  "tensor_parallel": 4, "pipeline_parallel": 2, "context_parallel": 2, "expert_parallel": 1,
                  "sequence_parallel": true, "offload_optimizer": true, "offload_parameters": false,
                  "offload_optimizer_step": "gpu", "virtual_pipeline_stages": 2, "microbatch_group_size_per_vp_stage": 2,
                  "prefetch": false, "expandable_segments": true},
      "overheads": {"cuda_context_mib": 600, "nccl_mib_per_communicator": 256},
      "x_notes": {"kept": true}})");
}

json fullInferenceScenario() {
    return json::parse(R"({
      "schema": "headroom.scenario/1", "name": "serving",
      "model": {"preset": "Qwen/Qwen3-30B-A3B"},
      "inference": {"engine": "none", "batch_size": 48, "context_length": 32768, "weight_dtype": "fp8",
                    "kv_cache_dtype": "fp8", "kv_block_size": 16, "attention": "flash", "framework": "pytorch",
                    "autocast": "bf16", "grad_mode": "inference_mode", "kv_cache": true, "logits": "all"},
      "cluster": {"gpu": "H100-SXM-80GB", "gpu_memory_gib": 79.6474609375, "num_gpus": 2, "gpus_per_node": 8, "data_parallel": "ddp",
                  "tensor_parallel": 2, "pipeline_parallel": 1, "context_parallel": 1, "expert_parallel": 1,
                  "sequence_parallel": false, "offload_optimizer": false, "offload_parameters": false,
                  "offload_optimizer_step": "cpu", "virtual_pipeline_stages": 1, "prefetch": true, "expandable_segments": false},
      "overheads": {"cuda_context_mib": 512, "nccl_mib_per_communicator": 384}})");
}

json fullServingScenario() {
    json doc = fullInferenceScenario();
    doc["inference"] = {
        {"engine", "vllm"},        {"engine_version", "vllm 0.11"},  {"cuda_graphs", false},
        {"context_length", 16384}, {"gpu_memory_utilization", 0.85}, {"max_num_batched_tokens", 4096},
        {"max_num_seqs", 256},     {"weight_dtype", "checkpoint"},   {"kv_cache_dtype", "fp8"},
        {"kv_block_size", 32},     {"sampler", "flashinfer"},        {"attention", "flash"}};
    return doc;
}

// The settings panel's shown widget for a field: a field can have one widget per context (its engine's,
// its framework's), only one of them visible. nullptr when none is.
template <typename Widget> Widget* shownField(MainWindow& w, const char* field) {
    for (Widget* widget : w.settingsPanel()->findChildren<Widget*>(QString::fromLatin1(field)))
        if (widget->isVisibleTo(w.settingsPanel()))
            return widget;
    return nullptr;
}

void writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

} // namespace

class TestMainWindow : public QObject {
    Q_OBJECT
private slots:
    void init();
    void showsDefaultScenario();
    void settingsRoundTrip_data();
    void settingsRoundTrip();
    void gpuMemoryField();
    void widgetsDriveTheDocument();
    void fineTuningGroup();
    void modeSwitchUsesTheReadersDefaults();
    void oddValuesAreErrorsNotCrashes();
    void changesCoalesceIntoOneViewUpdate();
    void sliderDragIsOneUndoStep();
    void undoRedoRestoresExactly();
    void openAndSaveFailuresKeepWork();
    void savingsApplyWithOneClick();
    void itemModelsAreConsistent();
    void crashRecoveryOffersAutosave();
    void closeAsksAboutUnsavedChanges();
    void configJsonReplacesTheModel();
    void dropScenarioAndConfig();
    void unitsAndLegend();
    void microbatchGroupWithInterleaving();
    void servingShowsTokensAndRequests();
    void frameworkRelease();
    void nvlsCheckBoxWhereNcclCanUseIt();
    void kvCacheCheckBox();
    void cudaGraphEstimateCheckBox();
    void expandableSegmentsFollowTheFramework();
    void doubleQuantisationFollowsTheFramework();
    void gradModeForAForwardThatKeepsItsGraph();
    void tablesCopyAsMarkdownAndCsv();
    void categoryColoursSurviveColourBlindness();
    void presentationMode();
    void scenariosSideBySide();
    void sweepMarksTheLimit();

private:
    std::unique_ptr<MainWindow> window(bool restore = false);
    QTemporaryDir m_dir;
};

void TestMainWindow::init() {
    QFile::remove(m_dir.filePath("settings.ini"));
    QFile::remove(m_dir.filePath("autosave.headroom.json"));
}

std::unique_ptr<MainWindow> TestMainWindow::window(bool restore) {
    return test::testWindow(m_dir, restore);
}

void TestMainWindow::showsDefaultScenario() {
    auto w = window();
    w->resize(1280, 800);
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    const Estimate expected = estimate(scenarioFromJson(defaultScenarioDocument()));
    QCOMPARE(w->document()->estimate().peakBytes, expected.peakBytes);
    double sum = 0;
    for (QBarSet* set : w->breakdownChart()->series()->barSets())
        sum += set->at(0);
    QVERIFY(std::abs(sum - expected.peakBytes / test::kGiB) < 1e-6);
    QVERIFY(w->findChild<QLabel*>("verdict")->text().contains("Fits"));
    QVERIFY(!w->grab().toImage().isNull());
}

void TestMainWindow::settingsRoundTrip_data() {
    QTest::addColumn<QByteArray>("document");
    QTest::newRow("training") << QByteArray::fromStdString(fullTrainingScenario().dump());
    QTest::newRow("inference") << QByteArray::fromStdString(fullInferenceScenario().dump());
    QTest::newRow("serving") << QByteArray::fromStdString(fullServingScenario().dump());
}

void TestMainWindow::settingsRoundTrip() {
    // scenario -> widgets -> scenario is identical, for every field the panel shows.
    QFETCH(QByteArray, document);
    const json doc = json::parse(document.toStdString());
    auto w = window();
    w->document()->reset(doc);
    QVERIFY2(w->document()->validationError().isEmpty(), qPrintable(w->document()->validationError()));
    const json fromWidgets = w->settingsPanel()->valuesFromWidgets();
    json rebuilt = doc;
    for (const auto& [section, values] : fromWidgets.items())
        for (const auto& [key, value] : values.items())
            rebuilt[section][key] = value;
    QVERIFY2(rebuilt == doc, rebuilt.dump().c_str());
    int covered = 0;
    for (const auto& [section, values] : fromWidgets.items())
        covered += static_cast<int>(values.size());
    QVERIFY2(covered >= 21, qPrintable(QString::fromStdString(fromWidgets.dump())));
    // An engine's own settings are shown only with that engine; the batch only without one.
    if (doc.contains("inference")) {
        const bool engine = doc.at("inference").value("engine", "none") == "vllm";
        const json& inf = fromWidgets.at("inference");
        QCOMPARE(inf.contains("gpu_memory_utilization"), engine);
        QCOMPARE(inf.contains("sampler"), engine); // vLLM's sampler kernels: a vLLM setting
        QCOMPARE(inf.contains("batch_size"), !engine);
        QVERIFY(!inf.contains("mem_fraction_static"));
    }
    // And the preset combo shows the model.
    QCOMPARE(w->settingsPanel()->findChild<QComboBox*>("preset")->currentData().toString(),
             QString::fromStdString(doc["model"]["preset"].get<std::string>()));
}

void TestMainWindow::frameworkRelease() {
    // torchtitan's release: shown with torchtitan only, the newest by default; "before 0.2" writes 0.1 and
    // the plan keeps the root unit gathered (docs/frameworks.md); another framework drops the release.
    auto w = window();
    json doc = fullTrainingScenario();
    doc["training"]["framework"] = "torchtitan";
    doc["training"].erase("fine_tuning");
    doc["training"]["loss"] = "full";
    doc["cluster"]["data_parallel"] = "fsdp";
    w->document()->reset(doc);
    QVERIFY2(w->document()->validationError().isEmpty(), qPrintable(w->document()->validationError()));
    QComboBox* release = nullptr;
    for (auto* combo : w->settingsPanel()->findChildren<QComboBox*>("/training/framework_version"))
        if (combo->findData(QStringLiteral("0.1")) >= 0)
            release = combo;
    QVERIFY(release);
    QCOMPARE(release->currentData().toString(), QStringLiteral("0.2"));
    QVERIFY(!w->settingsPanel()->valuesFromWidgets()["training"].contains("framework_version") ||
            w->settingsPanel()->valuesFromWidgets()["training"]["framework_version"] == "0.2");
    const int old = release->findData(QStringLiteral("0.1"));
    release->setCurrentIndex(old);
    emit release->activated(old);
    QCOMPARE(w->document()->json()["training"]["framework_version"].get<std::string>(), std::string("0.1"));
    QVERIFY(w->document()->scenario().training.versionBefore(0, 2));
    auto* framework = w->settingsPanel()->findChild<QComboBox*>("/training/framework");
    QVERIFY(framework);
    const int tune = framework->findData(QStringLiteral("torchtune"));
    framework->setCurrentIndex(tune);
    emit framework->activated(tune);
    QVERIFY(!w->document()->json()["training"].contains("framework_version"));
    QVERIFY(!w->settingsPanel()->valuesFromWidgets()["training"].contains("framework_version"));
    // A release the list does not offer reads as the one whose memory it has, and is kept as written.
    doc["training"]["framework"] = "huggingface";
    doc["training"]["framework_version"] = "4.37";
    w->document()->reset(doc);
    QComboBox* transformers = nullptr;
    for (auto* combo : w->settingsPanel()->findChildren<QComboBox*>("/training/framework_version"))
        if (combo->findData(QStringLiteral("4.44")) >= 0)
            transformers = combo;
    QVERIFY(transformers);
    QCOMPARE(transformers->currentText(), QStringLiteral("4.37 (before 4.46)"));
    QCOMPARE(transformers->currentData().toString(), QStringLiteral("4.37"));
    // transformers has three: 4.46 to 4.48 kept a second fp32 copy in the loss (docs/frameworks.md).
    QVERIFY(transformers->findData(QStringLiteral("4.47")) >= 0);
    QVERIFY(transformers->findData(QStringLiteral("4.49")) >= 0);
    doc["training"]["framework_version"] = "4.48";
    w->document()->reset(doc);
    QCOMPARE(transformers->currentText(), QStringLiteral("4.48 (4.46 to 4.48)"));
    QVERIFY(w->document()->scenario().training.versionBefore(4, 49));
    QVERIFY(!w->document()->scenario().training.versionBefore(4, 46));
    doc["training"]["framework_version"] = "4.50";
    w->document()->reset(doc);
    QCOMPARE(transformers->currentText(), QStringLiteral("4.50 (4.49 and later)"));
}

void TestMainWindow::nvlsCheckBoxWhereNcclCanUseIt() {
    // The NCCL NVLS box shows for more than two GPUs of an NVSwitch system in the tensor-parallel group,
    // checked as vLLM leaves NCCL; unchecking it writes nccl_nvls false and the plan's NVLS buffers go (TP 4
    // of H100 SXMs under NCCL 2.27: 4 x 32 MiB).
    auto w = window();
    json doc = {
        {"schema", "headroom.scenario/1"},
        {"name", "nvls"},
        {"model", {{"preset", "meta-llama/Meta-Llama-3-70B"}}},
        {"inference", {{"engine", "vllm"}, {"engine_version", "vllm 0.31"}, {"context_length", 8192}}},
        {"cluster", {{"gpu", "H100-SXM-80GB"}, {"num_gpus", 4}, {"tensor_parallel", 4}}}};
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    QCheckBox* nvls = shownField<QCheckBox>(*w, "/inference/nccl_nvls");
    QVERIFY(nvls);
    QVERIFY(nvls->isChecked());
    QCOMPARE(w->document()->estimate().serving.nvlsBytes, 4 * 32 * 1048576.0);
    nvls->setChecked(false);
    QCOMPARE(w->document()->json()["inference"]["nccl_nvls"].get<bool>(), false);
    QVERIFY(w->waitForPlanner());
    QCOMPARE(w->document()->estimate().serving.nvlsBytes, 0.0);
    // Two GPUs: NCCL takes no NVLS there, and the box goes.
    doc["cluster"]["num_gpus"] = 2;
    doc["cluster"]["tensor_parallel"] = 2;
    w->document()->reset(doc);
    QVERIFY(!shownField<QCheckBox>(*w, "/inference/nccl_nvls"));
}

void TestMainWindow::kvCacheCheckBox() {
    // Plain PyTorch's forward without an engine: the "Keep a KV cache" box shows, unchecked for CS336's
    // medium forward (its file says kv_cache false: one forward over each sequence), the cache's fields
    // hidden and no cache planned. Checking it writes kv_cache true and the plan keeps the batch's keys and
    // values: 2 (K and V) x 24 layers x 1,024 (16 heads of 64) x 4 x 1,024 tokens x 4 bytes (fp32).
    auto w = window();
    json doc = parseJsonText(
        readTextFile(HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-1024-inference.headroom.json"));
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    QCheckBox* box = shownField<QCheckBox>(*w, "/inference/kv_cache");
    QVERIFY(box);
    QVERIFY(!box->isChecked());
    QCOMPARE(w->document()->estimate().perGpu[Category::KvCache], 0.0);
    QVERIFY(!shownField<QComboBox>(*w, "/inference/kv_cache_dtype"));
    box->setChecked(true);
    QCOMPARE(w->document()->json()["inference"]["kv_cache"].get<bool>(), true);
    QVERIFY(w->waitForPlanner());
    QCOMPARE(w->document()->estimate().perGpu[Category::KvCache], 2.0 * 24 * 1024 * 4 * 1024 * 4);
    QVERIFY(shownField<QComboBox>(*w, "/inference/kv_cache_dtype"));
    // cs336_basics' forward keeps none whatever the box would say, and an engine always keeps one: no box.
    doc["inference"]["framework"] = "cs336_basics";
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    QVERIFY(!shownField<QCheckBox>(*w, "/inference/kv_cache"));
    doc["inference"].erase("kv_cache");
    doc["inference"]["framework"] = "pytorch";
    doc["inference"]["engine"] = "vllm";
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    QVERIFY(!shownField<QCheckBox>(*w, "/inference/kv_cache"));
}

void TestMainWindow::gradModeForAForwardThatKeepsItsGraph() {
    // CS336 basics' forward in fp32 without autocast: the Grad mode box shows (a forward can keep its graph),
    // here on "autograd on"; choosing torch.no_grad writes grad_mode and the plan loses every saved tensor
    // (the 2.7B model at 4 x 128: from the head's moment with all 32 layers' saved tensors to the softmax's
    // working set), as the reader plans both documents.
    auto w = window();
    const std::string file = HEADROOM_SOURCE_DIR
        "/examples/measured/cs336-basics/cs336-2.7b-128-forward-with-graph-h800.headroom.json";
    json doc = parseJsonText(readTextFile(file));
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    QComboBox* grad = shownField<QComboBox>(*w, "/inference/grad_mode");
    QVERIFY(grad);
    QCOMPARE(grad->currentData().toString(), QStringLiteral("enabled"));
    const double withGraph = w->document()->estimate().allocatedPeakBytes;
    QCOMPARE(withGraph, estimate(scenarioFromJson(doc)).allocatedPeakBytes);
    const int noGrad = grad->findData(QStringLiteral("no_grad"));
    grad->setCurrentIndex(noGrad);
    emit grad->activated(noGrad);
    QCOMPARE(w->document()->json()["inference"]["grad_mode"].get<std::string>(), std::string("no_grad"));
    QVERIFY(w->waitForPlanner());
    doc["inference"]["grad_mode"] = "no_grad";
    QCOMPARE(w->document()->estimate().allocatedPeakBytes, estimate(scenarioFromJson(doc)).allocatedPeakBytes);
    QVERIFY(withGraph - w->document()->estimate().allocatedPeakBytes > 5 * test::kGiB);
    // Plain PyTorch without autocast: the box shows too (its forward can keep its graph), and autograd on
    // plans what a training forward saves, far above the forward's working set.
    doc["inference"]["framework"] = "pytorch";
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    QComboBox* plain = shownField<QComboBox>(*w, "/inference/grad_mode");
    QVERIFY(plain);
    const double noGradPlain = w->document()->estimate().allocatedPeakBytes;
    const int enabled = plain->findData(QStringLiteral("enabled"));
    plain->setCurrentIndex(enabled);
    emit plain->activated(enabled);
    QVERIFY(w->waitForPlanner());
    doc["inference"]["grad_mode"] = "enabled";
    QCOMPARE(w->document()->estimate().allocatedPeakBytes,
             estimate(scenarioFromJson(doc)).allocatedPeakBytes);
    QVERIFY(w->document()->estimate().allocatedPeakBytes - noGradPlain > 3 * test::kGiB);
    // It keeps no KV cache, so the cache's fields go, as they do for cs336_basics' forward; torch.no_grad's
    // forward of the same code caches its keys and values, and they come back.
    QVERIFY(!shownField<QComboBox>(*w, "/inference/kv_cache_dtype"));
    QVERIFY(!shownField<QSpinBox>(*w, "/inference/kv_block_size#spin"));
    // Such a forward has nothing to decode: its phase chart is the one forward, its peak at the top.
    const Scenario graph = scenarioFromJson(doc);
    const Estimate graphEstimate = estimate(graph);
    PhaseChart phases;
    phases.setTimeline(phaseTimeline(graph, graphEstimate.mostLoadedStage), graph, graphEstimate);
    QCOMPARE(phases.title(), QStringLiteral("One forward"));
    QCOMPARE(phases.axes(Qt::Horizontal).size(), qsizetype(1));
    QCOMPARE(static_cast<QCategoryAxis*>(phases.axes(Qt::Horizontal).first())->categoriesLabels(),
             QStringList{QStringLiteral("forward")});
    doc["inference"]["grad_mode"] = "no_grad";
    const Scenario cached = scenarioFromJson(doc);
    phases.setTimeline(phaseTimeline(cached, 0), cached, estimate(cached));
    QCOMPARE(phases.title(), QStringLiteral("One request"));
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    QVERIFY(shownField<QComboBox>(*w, "/inference/kv_cache_dtype"));
    QVERIFY(shownField<QSpinBox>(*w, "/inference/kv_block_size#spin"));
    // With an engine the forward runs without autograd: no box.
    doc["inference"]["engine"] = "vllm";
    doc["inference"].erase("framework");
    w->document()->reset(doc);
    QVERIFY(!shownField<QComboBox>(*w, "/inference/grad_mode"));
}

void TestMainWindow::cudaGraphEstimateCheckBox() {
    // vLLM 0.31 estimates its CUDA graphs inside the budget: the box shows, checked; unchecking it writes
    // cuda_graph_estimate false and the pool takes the estimate (0.5 GiB here) back. Under --enforce-eager
    // and under 0.11, which sizes its pool without the graphs, the box goes.
    auto w = window();
    json doc = {{"schema", "headroom.scenario/1"},
                {"name", "graphs"},
                {"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                {"inference",
                 {{"engine", "vllm"},
                  {"engine_version", "vllm 0.31"},
                  {"context_length", 8192},
                  {"cuda_graph_gib", 0.5}}},
                {"cluster", {{"gpu", "H100-SXM-80GB"}, {"num_gpus", 1}}}};
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    auto* box = w->settingsPanel()->findChild<QCheckBox*>("/inference/cuda_graph_estimate");
    QVERIFY(box);
    QVERIFY(box->isVisibleTo(w->settingsPanel()));
    QVERIFY(box->isChecked());
    const double before = w->document()->estimate().serving.availableBytes;
    box->setChecked(false);
    QCOMPARE(w->document()->json()["inference"]["cuda_graph_estimate"].get<bool>(), false);
    QVERIFY(w->waitForPlanner());
    QCOMPARE(w->document()->estimate().serving.availableBytes - before, 0.5 * test::kGiB);
    doc["inference"]["cuda_graphs"] = false;
    w->document()->reset(doc);
    QVERIFY(!box->isVisibleTo(w->settingsPanel()));
    doc["inference"]["cuda_graphs"] = true;
    doc["inference"]["engine_version"] = "vllm 0.11";
    w->document()->reset(doc);
    QVERIFY(!box->isVisibleTo(w->settingsPanel()));
}

void TestMainWindow::expandableSegmentsFollowTheFramework() {
    // The check box shows what the reader plans when the file says nothing: Unsloth sets expandable segments
    // on import and torchtitan's launcher sets them, PyTorch does not. Unticked, it writes false and the plan
    // follows.
    auto w = window();
    json doc = {{"schema", "headroom.scenario/1"},
                {"name", "unsloth"},
                {"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                {"training",
                 {{"framework", "unsloth"},
                  {"precision", "bf16"},
                  {"activation_checkpointing", "full"},
                  {"attention", "flash"},
                  {"fine_tuning",
                   {{"method", "qlora"},
                    {"rank", 32},
                    {"target_modules",
                     {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}}}}}},
                {"cluster", {{"gpu", "A100-80GB"}, {"num_gpus", 1}}}};
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    auto* box = w->settingsPanel()->findChild<QCheckBox*>("/cluster/expandable_segments");
    QVERIFY(box);
    QVERIFY(w->document()->scenario().cluster.expandableSegments);
    QVERIFY(box->isChecked());
    const double reserved = w->document()->estimate().reservedPeakBytes;
    box->setChecked(false);
    QCOMPARE(w->document()->json()["cluster"]["expandable_segments"].get<bool>(), false);
    QVERIFY(w->waitForPlanner());
    QVERIFY(w->document()->estimate().reservedPeakBytes > reserved);
    doc["training"]["framework"] = "huggingface";
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    QVERIFY(!box->isChecked());
    QVERIFY(!w->document()->scenario().cluster.expandableSegments);
    // torchtitan's launcher (run_train.sh) sets it.
    doc["training"] = {{"framework", "torchtitan"}, {"activation_checkpointing", "full"}};
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    QVERIFY(box->isChecked());
    QVERIFY(w->document()->scenario().cluster.expandableSegments);
}

void TestMainWindow::doubleQuantisationFollowsTheFramework() {
    // A 4-bit base's double quantisation, shown as the reader plans it when the file says nothing: Unsloth's
    // loader asks bitsandbytes for it, PEFT's leaves bitsandbytes' default (off). Unticked, it writes false
    // and the frozen base grows by an fp32 scale per 64 weights where a uint8 one was.
    auto w = window();
    json doc = test::trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
    doc["training"]["framework"] = "unsloth";
    doc["training"]["precision"] = "bf16";
    doc["training"]["activation_checkpointing"] = "full";
    doc["training"]["fine_tuning"] = {
        {"method", "qlora"},
        {"rank", 32},
        {"target_modules", {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}}};
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    auto* box = w->settingsPanel()->findChild<QCheckBox*>("/training/fine_tuning/double_quantization");
    QVERIFY(box);
    QVERIFY(w->document()->scenario().training.fineTuning.doubleQuantization);
    QVERIFY(box->isChecked());
    QVERIFY(w->settingsPanel()
                ->fieldWidget("/training/fine_tuning/double_quantization")
                ->isVisibleTo(w->settingsPanel()));
    const double base = w->document()->estimate().frozenWeightBytes();
    box->setChecked(false);
    QCOMPARE(w->document()->json()["training"]["fine_tuning"]["double_quantization"].get<bool>(), false);
    QVERIFY(w->waitForPlanner());
    // Llama 3.1 8B's 6,979,321,856 quantised weights: 3/64 of a byte each, less the second-level scales.
    QVERIFY(std::abs(w->document()->estimate().frozenWeightBytes() - base - (327155712.0 - 1703936.0)) <
            4096);
    doc["training"]["framework"] = "huggingface";
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    QVERIFY(!box->isChecked());
    QVERIFY(!w->document()->scenario().training.fineTuning.doubleQuantization);
    // Without a 4-bit base it means nothing and is not shown.
    doc["training"]["fine_tuning"]["method"] = "lora";
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    QVERIFY(!w->settingsPanel()
                 ->fieldWidget("/training/fine_tuning/double_quantization")
                 ->isVisibleTo(w->settingsPanel()));
}

void TestMainWindow::fineTuningGroup() {
    // The Fine-tuning group: choosing LoRA shows the rank, base, adapter dtype and adapted layers; a layer's
    // check box writes target_modules, and the model line counts the trainable parameters.
    auto w = window();
    json doc = test::trainingDoc({{"preset", "meta-llama/Llama-3.2-3B"}});
    doc["training"]["precision"] = "bf16";
    w->document()->reset(doc);
    auto* method = qobject_cast<QComboBox*>(w->settingsPanel()->fieldWidget("/training/fine_tuning/method"));
    QVERIFY(method);
    auto* gate = w->settingsPanel()->findChild<QCheckBox*>("/training/fine_tuning/target_modules#gate_proj");
    QVERIFY(gate);
    QVERIFY(!gate->isVisibleTo(w->settingsPanel())); // full fine-tuning adapts nothing
    method->setCurrentIndex(method->findData(QStringLiteral("lora")));
    emit method->activated(method->currentIndex()); // as a person's choice does
    QCOMPARE(w->document()->json()["training"]["fine_tuning"]["method"].get<std::string>(),
             std::string("lora"));
    QVERIFY(gate->isVisibleTo(w->settingsPanel()));
    QVERIFY(!gate->isChecked()); // the reader's default: q and v
    gate->setChecked(true);
    QVERIFY(w->document()->json()["training"]["fine_tuning"]["target_modules"] ==
            json({"q_proj", "v_proj", "gate_proj"}));
    // 28 x 16 x ((3072 + 3072) + (3072 + 1024) + (3072 + 8192)) trainable, as PEFT would count them.
    const auto* info = w->settingsPanel()->findChild<QLabel*>("modelInfo");
    QVERIFY(info);
    QVERIFY2(info->text().contains(QStringLiteral("9,633,792")), qPrintable(info->text()));
    QCOMPARE(w->document()->estimate().trainableParameters, std::uint64_t{28 * 16 * (6144 + 4096 + 11264)});
    // Undo takes the layer back.
    w->document()->undoStack()->undo();
    QVERIFY(!gate->isChecked());
    // Names as the reader resolves them: torchtune's w1 is gate_proj, "all-linear" every layer.
    doc["training"]["fine_tuning"] = {{"method", "lora"}, {"target_modules", {"w1"}}};
    w->document()->reset(doc);
    QVERIFY(gate->isChecked());
    doc["training"]["fine_tuning"]["target_modules"] = "all-linear";
    w->document()->reset(doc);
    for (const char* m : {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"})
        QVERIFY2(w->settingsPanel()
                     ->findChild<QCheckBox*>(QStringLiteral("/training/fine_tuning/target_modules#") + m)
                     ->isChecked(),
                 m);
    // A quantised base shows bitsandbytes' release (LoRA on a 16-bit base has none to ask for). Choosing one
    // writes it, and the window plans what the reader plans of the same document, more than a current
    // release does; a release the list does not name reads as the side of 0.43.2 and 0.45.0 it is on.
    QVERIFY(!shownField<QComboBox>(*w, "/training/fine_tuning/bitsandbytes_version"));
    auto releases = [&](const json& fineTuning, const char* chosen, const char* unlisted, const char* reads) {
        doc["training"]["fine_tuning"] = fineTuning;
        w->document()->reset(doc);
        QVERIFY(w->waitForPlanner());
        QComboBox* bnb = shownField<QComboBox>(*w, "/training/fine_tuning/bitsandbytes_version");
        QVERIFY(bnb);
        QCOMPARE(bnb->currentData().toString(), QStringLiteral("0.45.0")); // a current release
        const double current = w->document()->estimate().allocatedPeakBytes;
        const int index = bnb->findData(QString::fromLatin1(chosen));
        QVERIFY(index >= 0);
        bnb->setCurrentIndex(index);
        emit bnb->activated(index);
        QCOMPARE(w->document()->json()["training"]["fine_tuning"]["bitsandbytes_version"].get<std::string>(),
                 std::string(chosen));
        QVERIFY(w->waitForPlanner());
        doc["training"]["fine_tuning"]["bitsandbytes_version"] = chosen;
        QCOMPARE(w->document()->estimate().allocatedPeakBytes,
                 estimate(scenarioFromJson(doc)).allocatedPeakBytes);
        QVERIFY(w->document()->estimate().allocatedPeakBytes > current);
        doc["training"]["fine_tuning"]["bitsandbytes_version"] = unlisted;
        w->document()->reset(doc);
        QVERIFY2(bnb->currentText().contains(QString::fromLatin1(reads)), qPrintable(bnb->currentText()));
    };
    // 4-bit before 0.43.2: every 4-bit layer keeps its input.
    releases({{"method", "qlora"}}, "0.43.1", "0.42.0", "0.42.0 (before 0.43.2)");
    if (QTest::currentTestFailed())
        return;
    // LLM.int8 from 0.43.2 to 0.44: each int8 layer keeps a transposed int8 copy of its input.
    releases({{"method", "lora"}, {"base_quantization", "int8"}}, "0.44.1", "0.44.0",
             "0.44.0 (0.43.2 to 0.44)");
}

void TestMainWindow::gpuMemoryField() {
    // The GPU's memory in MiB, as nvidia-smi prints memory.total: by default the GPU's own, as the reader
    // resolved it; set, it is written as gpu_memory_gib and plans that capacity; another GPU drops it.
    auto w = window();
    json doc = test::trainingDoc({{"preset", "meta-llama/Llama-3.2-3B"}});
    doc["cluster"] = {{"gpu", "A100-80GB"}, {"num_gpus", 1}};
    w->document()->reset(doc);
    auto* mib = w->settingsPanel()->findChild<QSpinBox*>("/cluster/gpu_memory_gib#spin");
    QVERIFY(mib);
    const GpuSpec* a100 = findGpu("A100-80GB");
    QVERIFY(a100);
    QCOMPARE(mib->value(), static_cast<int>(std::lround(double(a100->memoryBytes) / 1048576.0)));
    mib->setValue(15360); // a 15 GiB slice
    QCOMPARE(w->document()->json()["cluster"]["gpu_memory_gib"].get<double>(), 15.0);
    QCOMPARE(w->document()->scenario().cluster.capacityBytes, std::uint64_t{15} << 30);
    auto* gpu = w->settingsPanel()->findChild<QComboBox*>("/cluster/gpu");
    const int h100 = gpu->findData(QStringLiteral("H100-SXM-80GB"));
    QVERIFY(h100 >= 0);
    gpu->setCurrentIndex(h100);
    emit gpu->activated(h100);
    QVERIFY(!w->document()->json()["cluster"].contains("gpu_memory_gib"));
    QCOMPARE(w->document()->scenario().cluster.capacityBytes, findGpu("H100-SXM-80GB")->memoryBytes);
    QCOMPARE(mib->value(),
             static_cast<int>(std::lround(double(findGpu("H100-SXM-80GB")->memoryBytes) / 1048576.0)));
    w->document()->undoStack()->undo(); // one step: the A100 and its 15 GiB again
    QCOMPARE(w->document()->json()["cluster"]["gpu"].get<std::string>(), std::string("A100-80GB"));
    QCOMPARE(w->document()->json()["cluster"]["gpu_memory_gib"].get<double>(), 15.0);
    QCOMPARE(mib->value(), 15360);
}

void TestMainWindow::widgetsDriveTheDocument() {
    auto w = window();
    const double before = w->document()->estimate().peakBytes;
    auto* spin = w->settingsPanel()->findChild<QSpinBox*>("/training/micro_batch_size#spin");
    QVERIFY(spin);
    spin->setValue(4);
    QCOMPARE(w->document()->json()["training"]["micro_batch_size"].get<int>(), 4);
    QVERIFY(w->document()->estimate().peakBytes > before);
    QVERIFY(w->document()->isModified());
    auto* dp = w->settingsPanel()->findChild<QComboBox*>("/cluster/data_parallel");
    dp->setCurrentIndex(dp->findData("zero3"));
    emit dp->activated(dp->currentIndex());
    QCOMPARE(w->document()->scenario().cluster.dataParallel, DataParallel::Zero3);
    // A setting that makes the scenario invalid is shown as such; the last valid plan stays.
    const double valid = w->document()->estimate().peakBytes;
    w->settingsPanel()->findChild<QSpinBox*>("/cluster/tensor_parallel#spin")->setValue(3);
    QVERIFY(w->document()->validationError().contains("cluster.num_gpus"));
    QCOMPARE(w->document()->estimate().peakBytes, valid);
    QVERIFY(w->waitForPlanner()); // the views follow the document once per event-loop pass, details off the
                                  // GUI thread
    QVERIFY(!w->findChild<QLabel*>("validationError")->isHidden());
    w->document()->undoStack()->undo();
    QVERIFY(w->document()->validationError().isEmpty());
    // A key the reader does not know is planned as absent, and the banner says so with its path.
    QVERIFY(w->findChild<QLabel*>("scenarioWarnings")->isHidden());
    json misspelt = w->document()->json();
    misspelt["training"]["micro_batchsize"] = 64;
    w->document()->reset(misspelt);
    QVERIFY(w->waitForPlanner());
    auto* banner = w->findChild<QLabel*>("scenarioWarnings");
    QVERIFY(!banner->isHidden());
    QVERIFY2(banner->text().contains("training.micro_batchsize is not a setting Headroom reads here") &&
                 banner->text().contains("did you mean micro_batch_size?"),
             qPrintable(banner->text()));
    // A lone warning with quotes in it reads with its quotes, as the label shows it (its text is escaped
    // HTML; shown as plain text it read "&quot;chunked&quot;").
    json chunked = w->document()->json();
    chunked["training"].erase("micro_batchsize");
    chunked["training"]["framework"] = "huggingface";
    chunked["training"]["loss"] = "chunked";
    w->document()->reset(chunked);
    QVERIFY(w->waitForPlanner());
    const auto shown = [](const QLabel* l) {
        const bool rich = l->textFormat() == Qt::RichText ||
                          (l->textFormat() == Qt::AutoText && Qt::mightBeRichText(l->text()));
        if (!rich)
            return l->text();
        QTextDocument d;
        d.setHtml(l->text());
        return d.toPlainText();
    };
    QVERIFY2(shown(banner).contains(QStringLiteral("training.loss \"chunked\"")) &&
                 !shown(banner).contains(QStringLiteral("&quot;")),
             qPrintable(shown(banner)));
}

void TestMainWindow::oddValuesAreErrorsNotCrashes() {
    // The panel reads the document being edited (which settings to show, the loss's default) while it is
    // invalid too: wrong types are the reader's errors, never the panel's exceptions.
    auto w = window();
    json doc = fullTrainingScenario();
    doc["training"]["compile"] = "yes";
    doc["training"]["framework"] = 5;
    doc["training"]["activation_checkpointing"] = json::array();
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    QVERIFY(w->document()->validationError().contains("training."));
    doc["training"] = "fast";
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner());
    QVERIFY(!w->document()->validationError().isEmpty());
}

void TestMainWindow::modeSwitchUsesTheReadersDefaults() {
    // Switching to inference and back writes the sections a file without those keys gets, and the panel
    // shows the same values for an empty section: one source of defaults (they were 2048/none in the
    // reader, 4096/selective in the panel).
    auto w = window();
    auto* mode = w->settingsPanel()->findChild<QComboBox*>("mode");
    mode->setCurrentIndex(mode->findData("inference"));
    emit mode->activated(mode->currentIndex());
    QVERIFY(w->document()->json().contains("inference"));
    mode->setCurrentIndex(mode->findData("training"));
    emit mode->activated(mode->currentIndex());
    const json training = w->document()->json().at("training");
    QCOMPARE(training.at("sequence_length").get<int>(), 2048);
    QCOMPARE(training.at("activation_checkpointing").get<std::string>(), std::string("none"));
    json empty = w->document()->json();
    empty["training"] = json::object();
    QCOMPARE(estimate(scenarioFromJson(empty)).peakBytes, w->document()->estimate().peakBytes);
    w->document()->reset(empty);
    QCOMPARE(w->settingsPanel()->findChild<QSpinBox*>("/training/sequence_length#spin")->value(), 2048);
    QCOMPARE(w->settingsPanel()
                 ->findChild<QComboBox*>("/training/activation_checkpointing")
                 ->currentData()
                 .toString(),
             QString("none"));
}

void TestMainWindow::changesCoalesceIntoOneViewUpdate() {
    // Ten values arriving within one event-loop pass (a fast drag) refresh the views once, with the last.
    auto w = window();
    QVERIFY(w->waitForPlanner());
    const int before = w->viewUpdates();
    auto* spin = w->settingsPanel()->findChild<QSpinBox*>("/training/micro_batch_size#spin");
    for (int v = 1; v <= 10; ++v)
        spin->setValue(v);
    QCOMPARE(w->viewUpdates(), before);
    QVERIFY(w->waitForPlanner());
    QCOMPARE(w->viewUpdates(), before + 1);
    QCOMPARE(w->savingsModel()->savings().empty(), rankSavings(w->document()->scenario()).empty());
    QCOMPARE(w->document()->scenario().training.microBatchSize, 10);
}

void TestMainWindow::sliderDragIsOneUndoStep() {
    auto w = window();
    auto* slider = w->settingsPanel()->findChild<QSlider*>("/training/sequence_length#slider");
    QVERIFY(slider);
    const int steps = w->document()->undoStack()->count();
    const json before = w->document()->json();
    emit slider->sliderPressed();
    slider->setSliderDown(true);
    for (int v = 100; v <= 600; v += 50)
        slider->setValue(v);
    slider->setSliderDown(false);
    emit slider->sliderReleased();
    QCOMPARE(w->document()->undoStack()->count(), steps + 1);
    QVERIFY(w->document()->json() != before);
    w->document()->undoStack()->undo();
    QVERIFY(w->document()->json() == before);
    // The spin box follows the slider.
    QCOMPARE(w->settingsPanel()->findChild<QSpinBox*>("/training/sequence_length#spin")->value(),
             before["training"]["sequence_length"].get<int>());
}

void TestMainWindow::undoRedoRestoresExactly() {
    auto w = window();
    w->document()->reset(fullTrainingScenario());
    const json original = w->document()->json();
    w->document()->setValue("/training/micro_batch_size", 7);
    w->document()->setValue("/cluster/gpu", "A100-80GB");
    w->document()->applyPatch({{"training", {{"attention", "flash"}}}}, "flash");
    const json changed = w->document()->json();
    QUndoStack* undo = w->document()->undoStack();
    QCOMPARE(undo->count(), 3);
    while (undo->canUndo())
        undo->undo();
    QVERIFY(w->document()->json() == original);
    QVERIFY(!w->document()->isModified());
    QCOMPARE(w->settingsPanel()->findChild<QSpinBox*>("/training/micro_batch_size#spin")->value(), 3);
    while (undo->canRedo())
        undo->redo();
    QVERIFY(w->document()->json() == changed);
    QCOMPARE(w->settingsPanel()->findChild<QComboBox*>("/cluster/gpu")->currentData().toString(),
             QStringLiteral("A100-80GB"));
}

void TestMainWindow::openAndSaveFailuresKeepWork() {
    auto w = window();
    w->document()->reset(fullTrainingScenario());
    w->document()->setValue("/training/micro_batch_size", 2);
    const json work = w->document()->json();
    // Save into a folder that cannot be written: a clear message, nothing lost, still unsaved.
    QString error;
    QVERIFY(!w->saveAs("/proc/headroom-test/x.headroom.json", &error));
    QVERIFY2(error.startsWith("/proc/headroom-test/x.headroom.json"), qPrintable(error));
    QVERIFY(w->document()->isModified());
    QVERIFY(w->document()->filePath().isEmpty());
    // A real save: the file holds the document (unknown keys too) and the window is clean.
    const QString path = m_dir.filePath("plan.headroom.json");
    QVERIFY(w->saveAs(path, &error));
    QVERIFY(!w->document()->isModified());
    QFile saved(path);
    QVERIFY(saved.open(QIODevice::ReadOnly));
    QVERIFY(json::parse(saved.readAll().toStdString()) == work);
    QVERIFY(w->windowTitle().contains("plan.headroom.json"));
    QSettings settings(m_dir.filePath("settings.ini"), QSettings::IniFormat);
    QCOMPARE(settings.value("recentFiles").toStringList().value(0), QFileInfo(path).absoluteFilePath());
    // A corrupt file: a message naming it, and the open scenario stays.
    const QString corrupt = m_dir.filePath("corrupt.headroom.json");
    writeFile(corrupt, "{\"schema\": \"headroom.scenario/1\", \"model\": ");
    QVERIFY(!w->openScenario(corrupt, &error));
    QVERIFY2(error.startsWith(corrupt + ": byte"), qPrintable(error));
    QVERIFY(w->document()->json() == work);
    QCOMPARE(w->document()->filePath(), QFileInfo(path).absoluteFilePath());
    // A well-formed file with a value of the wrong type (this aborted the window): named, plan kept.
    const QString wrongType = m_dir.filePath("wrongtype.headroom.json");
    writeFile(wrongType,
              "{\"schema\": \"headroom.scenario/1\", \"model\": {\"model_type\": 5, \"parameters\": 1000},"
              " \"training\": {}, \"cluster\": {\"gpu\": \"H100-SXM-80GB\", \"num_gpus\": 1}}");
    QVERIFY(!w->openScenario(wrongType, &error));
    QVERIFY2(error.startsWith(wrongType + ": model.model_type: must be a string"), qPrintable(error));
    QVERIFY(w->document()->json() == work);
    // And opening the saved file reads it back.
    QVERIFY(w->openScenario(path, &error));
    QVERIFY(w->document()->json() == work);
}

void TestMainWindow::savingsApplyWithOneClick() {
    auto w = window();
    json doc = fullTrainingScenario();
    doc["cluster"]["offload_optimizer"] = false;
    doc["training"]["activation_checkpointing"] = "none";
    doc["training"].erase("checkpoint_every");
    w->document()->reset(doc);
    QVERIFY(w->waitForPlanner()); // the views follow the document once per event-loop pass, details off the
                                  // GUI thread
    const auto& savings = w->savingsModel()->savings();
    QVERIFY(savings.size() >= 3);
    const double before = w->document()->estimate().peakBytes;
    const Saving first = savings.front();
    QCOMPARE(w->savingsModel()->data(w->savingsModel()->index(0, SavingsModel::ChangeColumn)).toString(),
             QString::fromStdString(first.description));
    auto* view = w->findChild<QTableView*>("savings");
    emit view->doubleClicked(w->savingsModel()->index(0, 0));
    QCOMPARE(w->document()->estimate().peakBytes, before - first.bytesSaved);
    w->document()->undoStack()->undo();
    QCOMPARE(w->document()->estimate().peakBytes, before);
}

void TestMainWindow::itemModelsAreConsistent() {
    // Testers attached before any data is set, then the models are driven through real changes.
    SavingsModel savings;
    BreakdownModel breakdown;
    QAbstractItemModelTester t1(&savings, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester t2(&breakdown, QAbstractItemModelTester::FailureReportingMode::QtTest);
    for (const json& doc : {fullTrainingScenario(), fullInferenceScenario(), defaultScenarioDocument()}) {
        const Scenario sc = scenarioFromJson(doc);
        savings.setSavings(rankSavings(sc), sc);
        breakdown.setEstimate(estimate(sc));
    }
    ChartStyle gb;
    gb.unit = ByteUnit::GB;
    savings.setStyle(gb);
    breakdown.setStyle(gb);
    QCOMPARE(breakdown.rowCount(), int(kCategoryCount));
    QCOMPARE(breakdown.headerData(BreakdownModel::SizeColumn, Qt::Horizontal).toString(),
             QStringLiteral("GB"));
    double total = 0;
    for (int r = 0; r < breakdown.rowCount(); ++r)
        total += breakdown.data(breakdown.index(r, 0), Qt::UserRole).toDouble();
    QCOMPARE(total, estimate(scenarioFromJson(defaultScenarioDocument())).peakBytes);
    // Fine-tuning with adapters: the weights are two rows (the frozen base, what trains), and back to one.
    json lora = defaultScenarioDocument();
    lora["training"]["fine_tuning"] = {{"method", "lora"}, {"rank", 16}};
    const Estimate loraEstimate = estimate(scenarioFromJson(lora));
    breakdown.setEstimate(loraEstimate);
    QCOMPARE(breakdown.rowCount(), int(kCategoryCount) + 1);
    QCOMPARE(breakdown.data(breakdown.index(0, 0)).toString(), QStringLiteral("Weights: frozen base"));
    QCOMPARE(breakdown.data(breakdown.index(0, 0), Qt::UserRole).toDouble(),
             loraEstimate.frozenWeightBytes());
    QCOMPARE(breakdown.data(breakdown.index(2, 0)).toString(), QStringLiteral("Gradients (adapters)"));
    total = 0;
    for (int r = 0; r < breakdown.rowCount(); ++r)
        total += breakdown.data(breakdown.index(r, 0), Qt::UserRole).toDouble();
    QCOMPARE(total, loraEstimate.peakBytes);
    breakdown.setEstimate(estimate(scenarioFromJson(defaultScenarioDocument())));
    QCOMPARE(breakdown.rowCount(), int(kCategoryCount));
    const int overheadRow = [] {
        for (std::size_t i = 0; i < kCategoryCount; ++i)
            if (categoryAt(i) == Category::AllocatorOverhead)
                return static_cast<int>(i);
        return -1;
    }();
    QVERIFY(breakdown.data(breakdown.index(overheadRow, 0), Qt::ToolTipRole).isNull());
    // torchtitan's eager blocks under per-op SAC: the allocator's overhead says how much of it is the
    // fitted term, 2.6 bytes per hidden unit, token and block (here 4,096 x 8,192 x 32: 2.6 x 2^30 bytes).
    json titan = defaultScenarioDocument();
    titan["model"] = {{"preset", "meta-llama/Llama-3.1-8B"}};
    titan["training"]["framework"] = "torchtitan";
    titan["training"]["micro_batch_size"] = 1;
    titan["training"]["sequence_length"] = 8192;
    titan["training"]["activation_checkpointing"] = "selective_op";
    titan["cluster"]["num_gpus"] = 8;
    titan["cluster"]["data_parallel"] = "zero3";
    breakdown.setEstimate(estimate(scenarioFromJson(titan)));
    breakdown.setStyle(ChartStyle{});
    QCOMPARE(breakdown.data(breakdown.index(overheadRow, 0), Qt::ToolTipRole).toString().left(24),
             QStringLiteral("Of which 2.60 GiB is fit"));

    // The stacked chart splits the weights the same way: the frozen base in its own darker segment at the
    // bottom of the bar, the adapters in the weights' blue above it, the bar still summing to the peak.
    const Scenario loraScenario = scenarioFromJson(lora);
    BreakdownChart chart;
    chart.setEstimate(loraScenario, loraEstimate);
    QCOMPARE(chart.series()->barSets().first(), chart.frozenSet());
    QCOMPARE(chart.frozenSet()->at(0), loraEstimate.frozenWeightBytes() / test::kGiB);
    QCOMPARE(chart.categorySet(Category::Weights)->at(0),
             (loraEstimate.perGpu[Category::Weights] - loraEstimate.frozenWeightBytes()) / test::kGiB);
    QCOMPARE(chart.categorySet(Category::Weights)->label(), QStringLiteral("Weights: adapters"));
    QCOMPARE(chart.frozenSet()->color(), frozenWeightsColor());
    double stacked = 0;
    for (QBarSet* set : chart.series()->barSets())
        stacked += set->at(0);
    QVERIFY(std::abs(stacked - loraEstimate.peakBytes / test::kGiB) < 1e-6);
    QVERIFY2(chart.frozenSegmentText(0).startsWith("Weights, frozen base: "),
             qPrintable(chart.frozenSegmentText(0)));
    QVERIFY2(chart.segmentText(Category::Weights, 0).startsWith("Weights, adapters: "),
             qPrintable(chart.segmentText(Category::Weights, 0)));
    // The step's phases and the ZeRO comparison draw the same split.
    PhaseChart phases;
    phases.setTimeline(phaseTimeline(loraScenario, loraEstimate.mostLoadedStage), loraScenario, loraEstimate);
    QVERIFY(phases.frozenArea()->isVisible());
    QCOMPARE(phases.frozenArea()->upperSeries()->at(0).y(), loraEstimate.frozenWeightBytes() / test::kGiB);
    QCOMPARE(phases.frozenArea()->color(), frozenWeightsColor());
    StrategyChart strategies;
    strategies.setEstimates(strategyEstimates(loraScenario, &estimate), loraEstimate);
    QCOMPARE(strategies.frozenSet()->at(0), strategies.estimates()[0].frozenWeightBytes() / test::kGiB);
    QVERIFY(strategies.frozenSet()->at(0) > 0);
    // Hiding the weights hides both segments; a full fine-tuning plan has no frozen segment at all.
    chart.setCategoryHidden(Category::Weights, true);
    QCOMPARE(chart.frozenSet()->at(0), 0.0);
    chart.setCategoryHidden(Category::Weights, false);
    const Scenario plain = scenarioFromJson(defaultScenarioDocument());
    const Estimate plainEstimate = estimate(plain);
    chart.setEstimate(plain, plainEstimate);
    QCOMPARE(chart.frozenSet()->at(0), 0.0);
    QCOMPARE(chart.categorySet(Category::Weights)->label(), QStringLiteral("Weights"));
    QCOMPARE(chart.categorySet(Category::Weights)->at(0),
             plainEstimate.perGpu[Category::Weights] / test::kGiB);
}

void TestMainWindow::crashRecoveryOffersAutosave() {
    json doc = fullTrainingScenario();
    doc["name"] = "recovered work";
    writeFile(m_dir.filePath("autosave.headroom.json"), QByteArray::fromStdString(doc.dump()));
    auto w = window(true);
    QVERIFY(w->document()->json() == doc);
    QVERIFY(w->document()->isModified()); // recovered, not yet saved
    // Editing writes the autosave again (after a short delay), and a deliberate close removes it.
    QFile::remove(w->autosavePath());
    w->document()->setValue("/training/micro_batch_size", 5);
    QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(w->autosavePath()), 5000);
    w->close();
    QVERIFY(!QFileInfo::exists(w->autosavePath()));
}

void TestMainWindow::closeAsksAboutUnsavedChanges() {
    auto w = window();
    w->show();
    w->document()->setValue("/training/micro_batch_size", 9);
    int asked = 0;
    w->askToSave = [&] {
        ++asked;
        return QMessageBox::Cancel;
    };
    QVERIFY(!w->close());
    QCOMPARE(asked, 1);
    QVERIFY(w->isVisible());
    w->askToSave = [&] {
        ++asked;
        return QMessageBox::Discard;
    };
    QVERIFY(w->close());
    QCOMPARE(asked, 2);
}

void TestMainWindow::configJsonReplacesTheModel() {
    auto w = window();
    const QString cfg = m_dir.filePath("config.json");
    const json mistral = findModelPreset("Mistral-7B-v0.1")->config;
    writeFile(cfg, QByteArray::fromStdString(mistral.dump()));
    QString error;
    QVERIFY(w->openFile(cfg, &error));
    QCOMPARE(w->document()->scenario().parameters(), std::uint64_t(7241732096));
    QVERIFY(w->document()->json()["model"] == mistral);
    QVERIFY(w->document()->filePath().isEmpty()); // still the same scenario, now with this model
    writeFile(cfg, R"({"model_type": "mamba", "hidden_size": 5})");
    QVERIFY(!w->openFile(cfg, &error));
    QVERIFY(error.contains("mamba"));
    QCOMPARE(w->document()->scenario().parameters(), std::uint64_t(7241732096));
}

void TestMainWindow::dropScenarioAndConfig() {
    auto w = window();
    w->show();
    auto drop = [&](const QString& path) {
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(path)});
        QDragEnterEvent enter(QPoint(400, 300), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(w.get(), &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent dropEvent(QPointF(400, 300), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(w.get(), &dropEvent);
    };
    // A scenario dropped on the window opens it.
    const QString scenario = m_dir.filePath("dropped.headroom.json");
    writeFile(scenario, QByteArray::fromStdString(fullInferenceScenario().dump()));
    drop(scenario);
    QCOMPARE(w->document()->scenario().mode, Mode::Inference);
    QCOMPARE(w->document()->filePath(), QFileInfo(scenario).absoluteFilePath());
    // A config.json dropped on it replaces the model of the open scenario.
    QDir().mkpath(m_dir.filePath("mixtral"));
    const QString cfg = m_dir.filePath("mixtral/config.json");
    writeFile(cfg, QByteArray::fromStdString(findModelPreset("Mixtral-8x7B-v0.1")->config.dump()));
    drop(cfg);
    QCOMPARE(w->document()->scenario().parameters(), std::uint64_t(46702792704));
    QCOMPARE(w->document()->scenario().mode, Mode::Inference);
    QVERIFY(w->document()->isModified());
}

void TestMainWindow::unitsAndLegend() {
    auto w = window();
    ChartStyle s = w->style();
    s.unit = ByteUnit::GB;
    w->setStyle(s);
    QVERIFY(w->findChild<QLabel*>("verdict")->text().contains(" GB"));
    QCOMPARE(w->breakdownChart()->axes(Qt::Vertical).first()->titleText(), QStringLiteral("GB per GPU"));
    BreakdownChart* chart = w->breakdownChart();
    const QString tip = chart->segmentText(Category::Activations, 0);
    QVERIFY2(tip.startsWith("Activations: ") && tip.contains(" GB (") && tip.endsWith("%)"), qPrintable(tip));
    // Hovering a segment shows that text.
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    emit chart->series()->hovered(true, 0, chart->categorySet(Category::Activations));
    QTRY_COMPARE(QToolTip::text(), tip);
    chart->setCategoryHidden(Category::Activations, true);
    QCOMPARE(chart->categorySet(Category::Activations)->at(0), 0.0);
    chart->setCategoryHidden(Category::Activations, false);
    QVERIFY(chart->categorySet(Category::Activations)->at(0) > 0);
}

void TestMainWindow::microbatchGroupWithInterleaving() {
    // Shown with interleaving only; its default is the pipeline size, as Megatron's; a value written is the
    // key the reader takes, and the plan follows (a larger group warms up more chunks: more in flight).
    auto w = window();
    json doc = fullTrainingScenario();
    doc["training"]["framework"] = "megatron";
    doc["cluster"].erase("microbatch_group_size_per_vp_stage");
    w->document()->reset(doc);
    QVERIFY2(w->document()->validationError().isEmpty(), qPrintable(w->document()->validationError()));
    QVERIFY(w->waitForPlanner());
    auto* group =
        w->settingsPanel()->findChild<QSpinBox*>("/cluster/microbatch_group_size_per_vp_stage#spin");
    QVERIFY(group);
    QCOMPARE(group->isVisible(), w->settingsPanel()->isVisible());
    QCOMPARE(group->value(), 2); // pipeline_parallel 2
    const double before = w->document()->estimate().ranks.front().inFlightMicroBatches;
    group->setValue(4);
    QCOMPARE(w->document()->json()["cluster"]["microbatch_group_size_per_vp_stage"].get<int>(), 4);
    QVERIFY(w->waitForPlanner());
    QVERIFY(w->document()->estimate().ranks.front().inFlightMicroBatches > before);
    doc["cluster"]["virtual_pipeline_stages"] = 1;
    w->document()->reset(doc);
    QVERIFY(!group->isVisibleTo(w->settingsPanel()));
}

void TestMainWindow::servingShowsTokensAndRequests() {
    auto w = window();
    w->document()->reset(fullServingScenario());
    QVERIFY2(w->document()->validationError().isEmpty(), qPrintable(w->document()->validationError()));
    QVERIFY(w->waitForPlanner());
    const Estimate& est = w->document()->estimate();
    QVERIFY(est.serving.engine);
    // The panel writes the utilisation as the fraction vLLM takes.
    auto* util = w->settingsPanel()->findChild<QSpinBox*>("/inference/gpu_memory_utilization#spin");
    QVERIFY(util);
    QCOMPARE(util->value(), 85);
    util->setValue(92);
    QCOMPARE(w->document()->json()["inference"]["gpu_memory_utilization"].get<double>(), 0.92);
    QCOMPARE(w->document()->scenario().inference.gpuMemoryUtilization, 0.92);
    QVERIFY(w->waitForPlanner());
    // The release: the panel shows the one named; without one, the newest, with its default budget.
    auto* release = w->settingsPanel()->findChild<QComboBox*>("/inference/engine_version");
    QVERIFY(release && release->isVisible() == w->settingsPanel()->isVisible());
    QCOMPARE(release->currentData().toString(), QStringLiteral("vllm 0.11"));
    {
        json doc = fullServingScenario();
        doc["inference"].erase("engine_version");
        doc["inference"].erase("gpu_memory_utilization");
        w->document()->reset(doc);
        QCOMPARE(release->currentData().toString(), QStringLiteral("vllm 0.31"));
        QCOMPARE(util->value(), 92); // 0.31's default, as the reader resolved it
        doc["inference"]["engine_version"] = "vllm 0.11";
        w->document()->reset(doc);
        QCOMPARE(util->value(), 90);
        // Another engine drops the release, which names vLLM, in one undo step.
        auto* engine = w->settingsPanel()->findChild<QComboBox*>("/inference/engine");
        QVERIFY(engine);
        const int sglang = engine->findData(QStringLiteral("sglang"));
        engine->setCurrentIndex(sglang);
        emit engine->activated(sglang);
        QVERIFY2(w->document()->validationError().isEmpty(), qPrintable(w->document()->validationError()));
        QVERIFY(!w->document()->json()["inference"].contains("engine_version"));
        QCOMPARE(w->document()->scenario().inference.engineVersion, std::string("sglang 0.5"));
        w->document()->undoStack()->undo();
        QCOMPARE(w->document()->json()["inference"]["engine_version"].get<std::string>(),
                 std::string("vllm 0.11"));
        w->document()->reset(fullServingScenario());
        util->setValue(92);
        QVERIFY(w->waitForPlanner());
    }
    // The verdict line and the serving chart give the pool in tokens and requests; the peak sweep, flat
    // under an engine, gives way to it.
    const ServingEstimate& sv = w->document()->estimate().serving;
    const QString details = w->findChild<RichTextLine*>("verdictDetails")->text();
    QVERIFY2(details.contains(QLocale().toString(sv.kvCacheTokens)), qPrintable(details));
    // The engine's track record against the start-up logs, not a training profile's.
    QVERIFY2(details.contains(QStringLiteral("vLLM start-up logs it was not built on")), qPrintable(details));
    auto* serving = w->findChild<QChartView*>("servingChart");
    QVERIFY(serving && !serving->isHidden());
    // Each length on its axis has room for its label at any width: 460 pixels gave each of 13 powers of
    // two less than "128k" takes, and the axis printed "12...". Narrow, it labels every second or fourth.
    {
        // Llama 4 Scout's curve runs from 1k to 4,096k tokens: 13 lengths.
        const Scenario sc =
            loadScenarioFile(HEADROOM_SOURCE_DIR "/examples/serve-llama4-scout-vllm-4xh100.headroom.json");
        const Estimate scout = estimate(sc);
        for (int width : {1400, 460}) {
            auto* chart = new ServingChart;
            QChartView view(chart);
            view.resize(width, 380);
            chart->setCurve(servingCurve(sc), sc, scout);
            view.show();
            QVERIFY(QTest::qWaitForWindowExposed(&view));
            QCoreApplication::processEvents();
            auto* lengths = static_cast<QCategoryAxis*>(chart->axes(Qt::Horizontal).first());
            const QStringList shown = lengths->categoriesLabels();
            QVERIFY2(shown.size() >= 3, qPrintable(shown.join(',')));
            const double step = chart->plotArea().width() *
                                (lengths->endValue(shown[1]) - lengths->endValue(shown[0])) /
                                (lengths->max() - lengths->min());
            for (const QString& l : shown)
                QVERIFY2(
                    QFontMetricsF(lengths->labelsFont()).horizontalAdvance(l) < step,
                    qPrintable(QStringLiteral("%1 at %2 px: %3 px a label").arg(l).arg(width).arg(step)));
        }
    }
    QVERIFY(w->findChild<QWidget*>("sweepBox")->isHidden());
    // The savings table speaks in tokens and requests, each row from an estimate of the changed scenario.
    auto* savings = w->findChild<QTableView*>("savings");
    QCOMPARE(savings->model()->headerData(1, Qt::Horizontal).toString(), QStringLiteral("KV tokens"));
    QVERIFY(savings->model()->rowCount() > 0);
    const QString first = savings->model()->index(0, 0).data().toString();
    const QString requests = savings->model()->index(0, 2).data().toString();
    for (const Saving& s : rankSavings(w->document()->scenario()))
        if (QString::fromStdString(s.description) == first)
            QCOMPARE(requests, QString::number(s.concurrencyAfter, 'f', 2));
    // Back to no engine: the batch sweep returns.
    w->document()->applyPatch({{"inference", {{"engine", "none"}, {"batch_size", 4}}}},
                              QStringLiteral("none"));
    QVERIFY(w->waitForPlanner());
    QVERIFY(!w->findChild<QWidget*>("sweepBox")->isHidden());
    QVERIFY(serving->isHidden() == false); // inference without an engine keeps the serving chart
    QCOMPARE(savings->model()->headerData(1, Qt::Horizontal).toString(), QStringLiteral("Saves"));
    // The scenario's point is labelled on both axes, unless the two labels would print over each other:
    // CS336's medium forward, 4 x 1,024 in fp32, planned with a KV cache (the file says it keeps none),
    // fits 197 requests and 202k KV tokens, one height on the two axes. The tokens' label alone then; the
    // requests are the headline's.
    json cs336 = parseJsonText(
        readTextFile(HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-1024-inference.headroom.json"));
    cs336["inference"].erase("kv_cache");
    w->document()->reset(cs336);
    QVERIFY(w->waitForPlanner());
    QVERIFY(w->findChild<RichTextLine*>("verdictDetails")->text().contains(QStringLiteral("197")));
    QStringList labels;
    for (QAbstractSeries* s : serving->chart()->series())
        if (auto* point = qobject_cast<QScatterSeries*>(s); point && point->pointLabelsVisible())
            labels << point->pointLabelsFormat();
    QCOMPARE(labels, QStringList{QStringLiteral("202k tokens")});
    // The point is at the plot's left edge (1,024 tokens, the curve's first length): its label is moved in
    // to start inside the plot, not centred on the point over the axis's ticks and title.
    for (QAbstractSeries* s : serving->chart()->series())
        if (auto* label = qobject_cast<QScatterSeries*>(s); label && label->pointLabelsVisible()) {
            const QRectF area = serving->chart()->plotArea();
            const double centre = serving->chart()->mapToPosition(label->at(0), label).x();
            const double half =
                QFontMetricsF(label->pointLabelsFont()).horizontalAdvance(label->pointLabelsFormat()) / 2;
            QVERIFY2(centre - half >= area.left() - 0.5,
                     qPrintable(QString::number(centre - half - area.left())));
            QVERIFY(centre + half <= area.right() + 0.5);
        }
    // Calibrated on forward-only runs that kept no KV cache (kv_cache 0, as CS336's do), the plan keeps
    // none, and the headline and the chart say tokens at once, not a cache.
    json calibrated = cs336;
    calibrated["calibration"] = {{"factors", {{"kv_cache", 0}, {"measured_on", "inference"}}}};
    w->document()->reset(calibrated);
    QVERIFY(w->waitForPlanner());
    const QString said = w->findChild<RichTextLine*>("verdictDetails")->text();
    QVERIFY2(
        said.contains(QStringLiteral("no KV cache: the forward-only runs it was calibrated on kept none")),
        qPrintable(said));
    QStringList names;
    for (QAbstractSeries* s : serving->chart()->series())
        names << s->name();
    QVERIFY2(names.contains(QStringLiteral("tokens at once (k)")), qPrintable(names.join(", ")));
}

void TestMainWindow::tablesCopyAsMarkdownAndCsv() {
    auto w = window();
    QVERIFY(w->waitForPlanner());
    auto* savings = w->findChild<QTableView*>("savings");
    QVERIFY(savings->model()->rowCount() > 0);
    // The actions are in the table's context menu.
    QStringList actions;
    for (QAction* a : savings->actions())
        actions << a->text();
    QVERIFY(actions.contains("Copy Table as Markdown") && actions.contains("Copy Table as CSV"));
    const TextTable t = tableFromModel(*savings->model(), "What would make it fit");
    // Markdown: every row gives back the model's own text, cell by cell.
    const QStringList lines = tableToMarkdown(t).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), savings->model()->rowCount() + 2);
    for (int r = 0; r < savings->model()->rowCount(); ++r) {
        QStringList cells = lines[r + 2].split(" | ");
        cells.first().remove(0, 2);
        cells.last().chop(2);
        for (int c = 0; c < savings->model()->columnCount(); ++c)
            QCOMPARE(cells[c], savings->model()->index(r, c).data().toString());
    }
    // CSV (RFC 4180): quotes and commas survive; parsed back it is the same table.
    TextTable odd;
    odd.header = {"a", "b"};
    odd.rows = {{"1,5", "say \"hi\""}, {"plain", "x"}};
    QCOMPARE(tableToCsv(odd), QStringLiteral("a,b\r\n\"1,5\",\"say \"\"hi\"\"\"\r\nplain,x\r\n"));
    const QString csv = tableToCsv(t);
    QCOMPARE(csv.count("\r\n"), savings->model()->rowCount() + 1);
    QVERIFY(csv.contains(savings->model()->index(0, 1).data().toString()));
    // Triggering the action puts it on the clipboard.
    for (QAction* a : savings->actions())
        if (a->text() == "Copy Table as Markdown")
            a->trigger();
    QCOMPARE(QApplication::clipboard()->text(), tableToMarkdown(t));
    // Charts copy as images.
    auto* view = w->findChildren<QChartView*>().first();
    bool copied = false;
    for (QAction* a : view->actions())
        if (a->text() == "Copy Chart as Image") {
            a->trigger();
            copied = true;
        }
    QVERIFY(copied);
    QVERIFY(!QApplication::clipboard()->image().isNull());
}

namespace {
// Colour-vision deficiencies simulated as Machado, Oliveira and Fernandes (2009) do at severity 1, on
// linear RGB; differences in CIELAB (D65).
using Matrix = std::array<std::array<double, 3>, 3>;
const Matrix kProtanopia = {
    {{0.152286, 1.052583, -0.204868}, {0.114503, 0.786281, 0.099216}, {-0.003882, -0.048116, 1.051998}}};
const Matrix kDeuteranopia = {
    {{0.367322, 0.860646, -0.227968}, {0.280085, 0.672501, 0.047413}, {-0.011820, 0.042940, 0.968881}}};
const Matrix kTritanopia = {
    {{1.255528, -0.076749, -0.178779}, {-0.078411, 0.930809, 0.147602}, {0.004733, 0.691367, 0.303900}}};
std::array<double, 3> toLinear(const QColor& c) {
    auto l = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
    return {l(c.redF()), l(c.greenF()), l(c.blueF())};
}
std::array<double, 3> labOf(std::array<double, 3> rgb) {
    for (double& v : rgb)
        v = std::clamp(v, 0.0, 1.0);
    const double X = 0.4124 * rgb[0] + 0.3576 * rgb[1] + 0.1805 * rgb[2];
    const double Y = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2];
    const double Z = 0.0193 * rgb[0] + 0.1192 * rgb[1] + 0.9505 * rgb[2];
    auto f = [](double t) { return t > 0.008856 ? std::cbrt(t) : 7.787 * t + 16.0 / 116; };
    const double fx = f(X / 0.95047), fy = f(Y), fz = f(Z / 1.08883);
    return {116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)};
}
std::array<double, 3> seenAs(const QColor& c, const Matrix* m) {
    const auto lin = toLinear(c);
    if (!m)
        return labOf(lin);
    std::array<double, 3> out{};
    for (int i = 0; i < 3; ++i)
        out[i] = (*m)[i][0] * lin[0] + (*m)[i][1] * lin[1] + (*m)[i][2] * lin[2];
    return labOf(out);
}
double worstDifference(const std::vector<QColor>& colours, QString* which) {
    double worst = 1e9;
    const Matrix* kinds[] = {nullptr, &kProtanopia, &kDeuteranopia, &kTritanopia};
    const char* names[] = {"normal vision", "protanopia", "deuteranopia", "tritanopia"};
    for (int k = 0; k < 4; ++k)
        for (std::size_t i = 0; i < colours.size(); ++i)
            for (std::size_t j = i + 1; j < colours.size(); ++j) {
                const auto a = seenAs(colours[i], kinds[k]), b = seenAs(colours[j], kinds[k]);
                const double d = std::hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
                if (d < worst) {
                    worst = d;
                    *which = QStringLiteral("%1 vs %2 (%3)").arg(i).arg(j).arg(names[k]);
                }
            }
    return worst;
}
} // namespace

void TestMainWindow::categoryColoursSurviveColourBlindness() {
    std::vector<QColor> all;
    for (std::size_t i = 0; i < kCategoryCount; ++i)
        all.push_back(categoryColor(categoryAt(i)));
    QString which;
    // Every two categories stay at least 20 apart in CIELAB for normal vision and each deficiency
    // (a difference of about 2 is just noticeable; 20 reads at a glance).
    const double worst = worstDifference(all, &which);
    QVERIFY2(worst >= 20, qPrintable(QStringLiteral("%1: %2").arg(which).arg(worst)));
    // Neighbours in the stacked bars differ in lightness by at least 25: they read in greyscale print.
    for (std::size_t i = 0; i + 1 < all.size(); ++i) {
        const double dl = std::abs(seenAs(all[i], nullptr)[0] - seenAs(all[i + 1], nullptr)[0]);
        QVERIFY2(
            dl >= 25,
            qPrintable(
                QStringLiteral("categories %1 and %2: lightness differs by %3").arg(i).arg(i + 1).arg(dl)));
    }
    // A fine-tuning plan's frozen base sits under the adapters' weights: apart from them in lightness as
    // stacked neighbours are, and at least 20 apart from every category for each vision.
    const double frozenL = seenAs(frozenWeightsColor(), nullptr)[0];
    QVERIFY2(std::abs(frozenL - seenAs(categoryColor(Category::Weights), nullptr)[0]) >= 25,
             qPrintable(QStringLiteral("frozen base lightness %1").arg(frozenL)));
    std::vector<QColor> withFrozen = all;
    withFrozen.push_back(frozenWeightsColor());
    const double worstFrozen = worstDifference(withFrozen, &which);
    QVERIFY2(worstFrozen >= 20, qPrintable(QStringLiteral("%1: %2").arg(which).arg(worstFrozen)));
    // The trace view's eight measured categories, unattributed grey included.
    std::vector<QColor> measured;
    for (std::size_t i = 0; i < kMeasuredCategories; ++i)
        measured.push_back(categoryColor(static_cast<MeasuredCategory>(i)));
    const double worstMeasured = worstDifference(measured, &which);
    QVERIFY2(worstMeasured >= 12, qPrintable(QStringLiteral("%1: %2").arg(which).arg(worstMeasured)));
}

void TestMainWindow::presentationMode() {
    auto w = window();
    // The window fits a 1280 x 800 screen from its first show (its minimum width is fixed then).
    QVERIFY2(w->minimumSizeHint().width() <= 1280, qPrintable(QString::number(w->minimumSizeHint().width())));
    const double before = QApplication::font().pointSizeF();
    const double title = w->sweepChart()->titleFont().pointSizeF();
    QAction* mode = w->findChild<QAction*>("presentationMode");
    QVERIFY(mode);
    mode->setChecked(true);
    // (The offscreen test platform does not keep a full-screen window state: the mode is checked instead.)
    QVERIFY(w->isPresentationMode());
    QVERIFY(QApplication::font().pointSizeF() > before * 1.3);
    QVERIFY(w->sweepChart()->titleFont().pointSizeF() > title * 1.5);
    // The verdict's lines grow with the type instead of being cut off.
    auto* verdict = w->findChild<QLabel*>("verdict");
    auto* details = w->findChild<RichTextLine*>("verdictDetails");
    QVERIFY(verdict->height() >= verdict->fontMetrics().height());
    // Three lines in training: the setup, the limits and the profile's track record.
    QVERIFY2(details->text().contains(QStringLiteral("Track record: ")), qPrintable(details->text()));
    QVERIFY(details->height() >= 3 * details->fontMetrics().height());
    // High contrast: black on white (WCAG's contrast ratio, 21:1 at most; AAA asks 7:1 of text), grid lines
    // that a projector keeps (3:1, what WCAG asks of graphics), and each stacked segment outlined in the
    // background so that neighbours with close greys stay apart in print.
    auto luminance = [](const QColor& c) {
        auto lin = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
        return 0.2126 * lin(c.redF()) + 0.7152 * lin(c.greenF()) + 0.0722 * lin(c.blueF());
    };
    auto contrast = [&](const QColor& a, const QColor& b) {
        const double la = luminance(a), lb = luminance(b);
        return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
    };
    auto blend = [](const QColor& over, const QColor& under) { // a translucent pen on the background
        const double a = over.alphaF();
        return QColor::fromRgbF(static_cast<float>(over.redF() * a + under.redF() * (1 - a)),
                                static_cast<float>(over.greenF() * a + under.greenF() * (1 - a)),
                                static_cast<float>(over.blueF() * a + under.blueF() * (1 - a)));
    };
    BreakdownChart* chart = w->breakdownChart();
    const QColor bg = chart->backgroundBrush().color();
    QAbstractAxis* axis = chart->axes(Qt::Vertical).first();
    QVERIFY2(contrast(axis->labelsColor(), bg) >= 7, qPrintable(axis->labelsColor().name()));
    QVERIFY(contrast(chart->titleBrush().color(), bg) >= 7);
    QVERIFY(contrast(blend(axis->gridLinePen().color(), bg), bg) >= 3);
    for (QBarSet* set : chart->findChildren<QBarSet*>()) {
        QCOMPARE(set->pen().color(), bg);
        QVERIFY(set->pen().widthF() >= 1.5);
    }
    mode->setChecked(false);
    QVERIFY(!w->isPresentationMode());
    // Outside presentation the theme's quieter grid is back and the bars have their own darker borders.
    QVERIFY(contrast(blend(chart->axes(Qt::Vertical).first()->gridLinePen().color(), bg), bg) < 3);
    for (QBarSet* set : chart->findChildren<QBarSet*>())
        QVERIFY(set->pen().color() != bg);
    // Help > About: the version, Qt's, and the dependencies with their licences.
    const QString about = aboutText();
    QVERIFY(about.contains(QString::fromUtf8(version())));
    QVERIFY(about.contains(QString::fromUtf8(qVersion())));
    for (const char* licence : {"LGPL-3.0", "GPL-3.0", "MIT", "Zlib", "GPL-3.0-or-later"})
        QVERIFY2(about.contains(licence), licence);
    // Licences...: the third-party notices (nlohmann/json's Expat notice is compiled into the binaries)
    // and the GPL's full text, as the repository's files hold them.
    const QString notices = licenceNoticesText();
    QFile copyright(HEADROOM_SOURCE_DIR "/packaging/copyright"), gpl(HEADROOM_SOURCE_DIR "/LICENSE");
    QVERIFY(copyright.open(QIODevice::ReadOnly) && gpl.open(QIODevice::ReadOnly));
    QVERIFY(notices.startsWith(QString::fromUtf8(copyright.readAll())));
    QVERIFY(notices.endsWith(QString::fromUtf8(gpl.readAll())));
    QVERIFY(notices.contains(QStringLiteral("Niels Lohmann")));
    QVERIFY(notices.contains(QStringLiteral("GNU GENERAL PUBLIC LICENSE")));
    QCOMPARE(QApplication::font().pointSizeF(), before);
}

void TestMainWindow::scenariosSideBySide() {
    auto w = window();
    // The current plan (the default: 8 GPUs, ZeRO-2) beside the same with 16 GPUs and ZeRO-3.
    json other = w->document()->json();
    other["name"] = "sixteen";
    other["cluster"]["num_gpus"] = 16;
    other["cluster"]["data_parallel"] = "zero3";
    const QString path = m_dir.filePath("sixteen.headroom.json");
    writeFile(path, QByteArray::fromStdString(other.dump()));
    ScenarioComparePage* view = w->compareScenarioFiles({path});
    QVERIFY(view);
    QCOMPARE(w->tabs()->currentWidget(), view);
    // The peak row: each scenario's own estimate, and the difference of the second from the first.
    const Estimate a = w->document()->estimate();
    const Estimate b = estimate(scenarioFromJson(other));
    QTableWidget* t = view->differences();
    int peakRow = -1;
    for (int r = 0; r < t->rowCount(); ++r)
        if (t->item(r, 0)->text() == "Peak")
            peakRow = r;
    QVERIFY(peakRow >= 0);
    const ChartStyle style;
    QCOMPARE(t->item(peakRow, 1)->text(), style.format(a.peakBytes));
    QCOMPARE(t->item(peakRow, 2)->text(), style.format(b.peakBytes));
    QCOMPARE(t->item(peakRow, 3)->text(), style.format(b.peakBytes - a.peakBytes));
    // ZeRO-3 on 16 GPUs shards the weights: that row changes, the model's settings do not.
    const QStringList differing = view->differingSettings();
    QVERIFY2(differing.contains("GPUs") && differing.contains("Layout"), qPrintable(differing.join(", ")));
    QVERIFY(!differing.contains("Model") && !differing.contains("Parameters"));
    // The chart has one bar per scenario.
    auto* bars = qobject_cast<QStackedBarSeries*>(view->chart()->series().first());
    QVERIFY(bars);
    QCOMPARE(bars->barSets().first()->count(), 2);
    if (!qEnvironmentVariableIsEmpty("HEADROOM_TEST_SHOTS")) {
        w->resize(1400, 800);
        w->show();
        QVERIFY(w->waitForPlanner());
        w->grab().save(qEnvironmentVariable("HEADROOM_TEST_SHOTS") + "/scenarios.png");
    }
    // A file that is not a scenario is an error naming it, and no tab.
    const int tabs = w->tabs()->count();
    QString error;
    QVERIFY(!w->compareScenarioFiles({m_dir.filePath("missing.headroom.json")}, &error));
    QVERIFY(error.contains("missing.headroom.json"));
    QCOMPARE(w->tabs()->count(), tabs);
}

void TestMainWindow::sweepMarksTheLimit() {
    auto w = window();
    QVERIFY(w->waitForPlanner()); // the sweep is computed off the GUI thread
    const SweepResult r = w->sweepChart()->result();
    // The marked limit, checked by two estimates made here: it fits, one more does not.
    QVERIFY(r.limit >= 1);
    json at = w->document()->json(), over = at;
    const char* key = at.contains("inference") ? "inference" : "training";
    const char* field = at.contains("inference") ? "batch_size" : "micro_batch_size";
    at[key][field] = r.limit;
    over[key][field] = r.limit + 1;
    QVERIFY(estimate(scenarioFromJson(at)).fits);
    QVERIFY(!estimate(scenarioFromJson(over)).fits);
    QVERIFY(r.points.size() > 10);
    for (std::size_t i = 1; i < r.points.size(); ++i)
        QVERIFY(r.points[i].second >= r.points[i - 1].second); // memory grows with the micro-batch
    // Its axis labels every doubling; a sweep into the thousands (CS336's forward: the largest batch that
    // fits is in the thousands, 7,013) every power of ten, where fourteen doublings' labels were elided to
    // "..." at the chart's width.
    auto base = [&] {
        const auto axes = w->sweepChart()->axes(Qt::Horizontal);
        const auto* log = axes.isEmpty() ? nullptr : qobject_cast<QLogValueAxis*>(axes.front());
        return log ? log->base() : 0.0;
    };
    QVERIFY(std::log2(r.points.back().first / r.points.front().first) <= 9);
    QCOMPARE(base(), 2.0);
    QString error;
    QVERIFY(w->openScenario(
        QStringLiteral(HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-128-inference.headroom.json"),
        &error));
    QVERIFY(w->waitForPlanner());
    const SweepResult forward = w->sweepChart()->result();
    QVERIFY(forward.limit > 1000 &&
            std::log2(forward.points.back().first / forward.points.front().first) > 9);
    QCOMPARE(base(), 10.0);
    // Nothing fits: Llama 3 70B fully fine-tuned on one 80 GB GPU holds, by hand, 70,553,706,496 parameters
    // x (2 + 2 + 8) bytes of bf16 weights, gradients and AdamW's fp32 states, 788 GiB, at any micro-batch,
    // over three times the GPU, where the value axis stopped: the chart was empty. Its lowest point is
    // drawn.
    w->document()->reset(json{
        {"schema", "headroom.scenario/1"},
        {"model", {{"preset", "meta-llama/Meta-Llama-3-70B"}}},
        {"training",
         {{"micro_batch_size", 1}, {"sequence_length", 4096}, {"precision", "bf16"}, {"optimizer", "adamw"}}},
        {"cluster", {{"gpu", "A100-80GB"}, {"num_gpus", 1}}}});
    QVERIFY(w->waitForPlanner());
    const SweepResult none = w->sweepChart()->result();
    QCOMPARE(none.limit, 0);
    QVERIFY(!none.points.empty() && none.points.front().second >= 70553706496.0 * 12);
    const auto vertical = w->sweepChart()->axes(Qt::Vertical);
    const auto* value = vertical.isEmpty() ? nullptr : qobject_cast<QValueAxis*>(vertical.front());
    QVERIFY(value);
    QVERIFY2(value->max() >= none.points.front().second / test::kGiB,
             qPrintable(QStringLiteral("axis to %1 GiB, lowest point %2 GiB")
                            .arg(value->max())
                            .arg(none.points.front().second / test::kGiB)));
}

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
