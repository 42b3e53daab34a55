// SPDX-License-Identifier: GPL-3.0-or-later
// Attribution of a recorded peak: on every run of docs/measured.md, at the peak, at most 5%
// of the live bytes unattributed and the model-state categories within 1% of what the parameter count and
// the run's description imply (worked out per run below); the rules and size matching on hand-written
// snapshots; parameter tensors summing to the exact parameter count; the comparison's arithmetic.
#include "core/compare/attribution.h"
#include "core/compare/calibration.h"
#include "core/compare/comparison.h"
#include "core/compare/scoresites.h"
#include "core/compare/tensortable.h"
#include "core/compare/tracediff.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/io/attributionrulesjson.h"
#include "core/io/codeprofile.h"
#include "core/io/comparejson.h"
#include "core/io/estimatejson.h"
#include "core/io/scenariojson.h"
#include "core/io/validation.h"
#include "core/model/presets.h"
#include "core/plan/cs336replay.h"
#include "core/serve/estimate.h"
#include "core/trace/formats/tracereader.h"
#include "core/trace/traceloadjob.h"
#include "core/trace/tracesummary.h"
#include "tests/testutil.h"

#include <QTest>
#include <map>
#include <numeric>

using namespace headroom;
using nlohmann::json;

namespace {

std::int64_t modelState(const Attribution& a) {
    return a.of(MeasuredCategory::Weights) + a.of(MeasuredCategory::Gradients) +
           a.of(MeasuredCategory::OptimizerStates);
}

} // namespace

class TestAttribution : public QObject {
    Q_OBJECT
private slots:
    void parameterTensorsSumToTheCount();
    void measuredRunsAtTheirPeaks_data();
    void measuredRunsAtTheirPeaks();
    void rulesAndSizes();
    void statesMadeBeforeTheRecordingWithoutAScenario();
    void modelBuiltOnTheDeviceWithoutAScenario();
    void comparisonArithmetic();
    void diffOfTwoRuns();
    void hugeSizesSaturate();
    void rulesAsAFile();
    void annotatedPhases();
    void firstStepIsNamed();
    void reservedPlannedWithTheRunsAllocator();
    void calibrationReproducesAndPredicts();
    void calibrationLearnsTheLossLogitsApart();
    void calibratedStepScratchIsItsImplementations();
    void calibratedReplayStepsTheRunsOptimizer();
    void calibratedPlanCheckpointed_data();
    void calibratedPlanCheckpointed();
    void calibrationAgainstTheCodesTables();
    void calibrationInTheScenario();
    void runShapePerRank();
    void calibrationLearnsTheAllocatorsOverhead();
    void framelessRunsByLifetime();
    void calibratedProfileCarriesToOtherLengths();
    void calibratedWhatIfsFollowTheCodesProfile();
    void codeOriginFromTheStacks();
    void calibrationSaysWhenTheScenarioIsNotTheRun();
    void calibrationIsOneAScenarioHolds();
    void scoresFactorKeepsToItsDtype();
    void calibrationWhateverTheOptimizer();
    void stepScratchFollowsTheLargestParameter();
    void calibrationAcrossDtypes();
    void backwardScoresMeasured();
    void forwardMomentsMeasured();
    void scoresToldByCalls();
    void forwardWithGraphCalibrated();
    void normsOfAMaskSizeAreTokensLinear();
    void calibrationReproducesEveryRecordedRun_data();
    void calibrationReproducesEveryRecordedRun();
    void zeroGradFreesGradients();
    void previousOutputHeldIsAWholeGraph();
    void calibrationFindsTheStepPastTheConstructor();
    void calibrationReadsAutocastScoresByOperator();
    void calibrationReadsTheLossByOperator();
    void calibratedPredictions_data();
    void calibratedPredictions();
    void reservedOfTheTracedRuns();
    void measuredValidateAgainstTheTargets_data();
    void measuredValidateAgainstTheTargets();
    void calibratedValidatePredictions();
};

void TestAttribution::parameterTensorsSumToTheCount() {
    // The CS336 model of MEASURED.md: 2·V·d + L·(4·d² + 3·d·d_ff + 2·d) + d = 423,183,360 for the medium one.
    const Scenario sc =
        loadScenarioFile((test::measuredDir() + "cs336-medium-128-training.headroom.json").toStdString());
    const auto tensors = sc.model.parameterTensors();
    QCOMPARE(std::accumulate(tensors.begin(), tensors.end(), std::uint64_t(0)), std::uint64_t(423183360));
    // 2 embeddings + 24 layers x (4 projections + 3 MLP matrices + 2 norms) + the final norm.
    QCOMPARE(tensors.size(), size_t(2 + 24 * 9 + 1));
    // Every preset, whatever its structure (biases, tied embeddings, learned positions, GQA, q/k norms,
    // sinks, MoE, MLA): the same sum as the exact count.
    QVERIFY(modelPresets().size() >= 10);
    for (const ModelPreset& preset : modelPresets()) {
        const auto t = preset.spec.parameterTensors();
        QVERIFY2(std::accumulate(t.begin(), t.end(), std::uint64_t(0)) == preset.spec.totalParameters(),
                 preset.name.c_str());
    }
}

void TestAttribution::measuredRunsAtTheirPeaks_data() {
    QTest::addColumn<QString>("scenario");
    QTest::addColumn<QString>("trace");
    QTest::addColumn<qlonglong>("params");
    QTest::addColumn<int>("stateBytesPerParam");
    QTest::addColumn<qlonglong>("peak");
    // MEASURED.md, column by column. fp32 throughout: weights 4 bytes per parameter, gradients 4, AdamW's
    // m and v 8.
    // Inference: weights only.
    QTest::newRow("medium 128 inference")
        << "cs336-medium-128-inference"
        << "cs336_Wedsonlin_medium_128_inference_memory_snapshot.pickle" << 423183360LL << 4 << 1736962048LL;
    QTest::newRow("medium 256 inference")
        << "cs336-medium-256-inference"
        << "cs336_Wedsonlin_medium_256_inference_memory_snapshot.pickle" << 423183360LL << 4 << 1793775616LL;
    // Peak in the optimizer step after backward: weights, gradients, m and v: 16 bytes per parameter.
    QTest::newRow("medium 128 training")
        << "cs336-medium-128-training"
        << "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle" << 423183360LL << 16 << 7013335044LL;
    // Peak in the loss; gradients were set to None before recording, so weights, m and v: 12.
    QTest::newRow("medium 256 training")
        << "cs336-medium-256-training"
        << "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle" << 423183360LL << 12 << 9103544320LL;
    // No optimizer; gradients kept from warm-up: weights and gradients, 8.
    QTest::newRow("small no optimizer")
        << "cs336-small-32x256-no-optimizer"
        << "cs336_MAGMA27_memory_snapshot.pickle" << 128625408LL << 8 << 13923997700LL;
    // Full step with AdamW, peak in the step: 16.
    QTest::newRow("small compiled step")
        << "cs336-small-gpt2vocab-1x64-compiled"
        << "cs336_bcrafton_memory_snapshot.pickle" << 190460160LL << 16 << 3849232640LL;
    // Another student's XL model (vocabulary 1: 48 x (4·1600² + 3·1600·6400 + 2·1600) + 1600 + 2 x 1600),
    // dumped at the end of a later step's forward: weights, the previous step's gradients (zero_grad after
    // the forward) and AdamW's m and v: 16.
    QTest::newRow("xl forward, gradients held")
        << "cs336-xl-256-forward-zero-grad-after"
        << "cs336_notHanmin_xl_256_forward_memory_snapshot.pickle" << 1966238400LL << 16 << 44087612420LL;
    QTest::newRow("xl forward under autocast")
        << "cs336-xl-256-forward-zero-grad-after-bf16-autocast"
        << "cs336_notHanmin_xl_256_forward_bf16_autocast_memory_snapshot.pickle" << 1966238400LL << 16
        << 43754773506LL;
}

void TestAttribution::statesMadeBeforeTheRecordingWithoutAScenario() {
    // Wedsonlin's 256-token step without a scenario: CS336's hand-written AdamW writes new m and v every step
    // (state["m"] = m_t), so the states alive while this step's forward and backward run were made by the
    // previous step, before the recording began, and are freed in this step's optimizer. They are
    // optimizer states by their frames and by outliving the step that made them: at the loss's peak, two
    // fp32 tensors per parameter, 2 x 4 x 423,183,360 bytes (MEASURED.md's count), and no temporaries.
    const auto loaded = loadTrace(
        (test::dataDir() + "/traces/snapshots/cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle")
            .toStdString());
    const TraceIndex& index = *loaded->indexes.at(0);
    const AttributionRules rules = AttributionRules::pytorchDefaults();
    const Attribution a = attribute(loaded->trace, index, index.peakAfter(), rules);
    QCOMPARE(a.of(MeasuredCategory::OptimizerStates), 2LL * 4 * 423183360);
    QCOMPARE(a.of(MeasuredCategory::Temporaries), 0LL);
    // Over the run, the same: every optimizer allocation alive at the start is a state, and what the step
    // makes and frees inside itself (its per-parameter temporaries) stays scratch.
    const std::vector<MeasuredCategory> run = categorizeRun(loaded->trace, index, rules);
    std::int64_t before = 0, scratch = 0;
    OptimizerStacks optimizerStack(loaded->trace, rules);
    for (std::size_t i = 0; i < run.size(); ++i) {
        const Allocation& x = index.allocations()[i];
        if (!optimizerStack(x.stack))
            continue;
        if (x.start == kBeforeFirstEvent) {
            QCOMPARE(run[i], MeasuredCategory::OptimizerStates);
            before += x.size;
        } else if (x.end < index.events()) {
            QCOMPARE(run[i], MeasuredCategory::Temporaries);
            scratch += x.size;
        }
    }
    QCOMPARE(before, 2LL * 4 * 423183360);
    QVERIFY(scratch > 0);
}

// NiuHuangxiaozi's 100-token steps without a scenario, recorded from before the model was built: its modules
// allocate their parameters in their constructors on the GPU (`device="cuda"`, no Module.to), 22,696,448 of
// them (2 x 10,000 x 512 + 4 x (4 x 512^2 + 3 x 512 x 1,344 + 2 x 512) + 512), 90,785,792 bytes in fp32,
// and its Adam's constructor makes m and v, twice that. No frame says the parameters are weights (a
// constructor is no rule: DDP's buckets, DeepSpeed's and Megatron's buffers are made in constructors too),
// so without a scenario's sizes they stay unattributed. Its steps are annotated
// (Optimizer.step#NIUAdam.step) and write every state anew, so the second step's are alive at the third's
// peak, as are the parameters it wrote anew (`p.data = ...`): without a model's sizes nothing tells those
// from states.
void TestAttribution::modelBuiltOnTheDeviceWithoutAScenario() {
    const auto loaded = loadTrace(
        (test::dataDir() + "/traces/snapshots/cs336_NiuHuangxiaozi_small_100_step_memory_snapshot.pickle")
            .toStdString());
    const TraceIndex& index = *loaded->indexes.at(0);
    const AttributionRules rules = AttributionRules::pytorchDefaults();
    // The last event before the first allocation outside a constructor (the batch's token ids).
    const DeviceTrace& d = index.device();
    std::size_t built = 0;
    for (std::size_t e = 0; e < d.entries() && built == 0; ++e)
        if (d.action[e] == TraceAction::Alloc && d.size[e] == 10 * 100 * 8)
            built = e - 1;
    QVERIFY(built > 0);
    const Attribution a = attribute(loaded->trace, index, built, rules);
    QCOMPARE(a.of(MeasuredCategory::Unattributed), 90785792LL);
    QCOMPARE(a.of(MeasuredCategory::OptimizerStates), 2 * 90785792LL);
    const Attribution peak = attribute(loaded->trace, index, index.peakAfter(), rules);
    QCOMPARE(peak.of(MeasuredCategory::OptimizerStates), 3 * 90785792LL);
}

void TestAttribution::measuredRunsAtTheirPeaks() {
    QFETCH(QString, scenario);
    QFETCH(QString, trace);
    QFETCH(qlonglong, params);
    QFETCH(int, stateBytesPerParam);
    QFETCH(qlonglong, peak);
    const Scenario sc = loadScenarioFile((test::measuredDir() + scenario + ".headroom.json").toStdString());
    QCOMPARE(static_cast<qlonglong>(sc.parameters()), params);
    const auto loaded = loadTrace((test::dataDir() + "/traces/snapshots/" + trace).toStdString());
    const TraceIndex& index = *loaded->indexes.at(0);
    const Attribution a =
        attribute(loaded->trace, index, index.peakAfter(), AttributionRules::pytorchDefaults(), &sc);
    QCOMPARE(static_cast<qlonglong>(a.total), peak); // the measured peak of MEASURED.md
    const double unattributed =
        static_cast<double>(a.of(MeasuredCategory::Unattributed)) / static_cast<double>(a.total);
    QVERIFY2(unattributed <= 0.05, qPrintable(QString::number(unattributed * 100) + "% unattributed"));
    const double expected = static_cast<double>(params) * stateBytesPerParam;
    const double got = static_cast<double>(modelState(a));
    QVERIFY2(std::abs(got - expected) <= 0.01 * expected,
             qPrintable(QStringLiteral("model state %1 vs %2").arg(got, 0, 'f', 0).arg(expected, 0, 'f', 0)));
    // Weights alone are the 4 bytes per parameter in every run.
    QVERIFY(std::abs(static_cast<double>(a.of(MeasuredCategory::Weights)) - 4.0 * params) <=
            0.01 * 4.0 * params);
}

void TestAttribution::rulesAndSizes() {
    // Event 0: an allocation from AccumulateGrad (gradients). Event 1: from torch/optim, freed at event 7
    // (without a scenario no size is known to be state: freed within the recording, a step temporary).
    // Event 6: from torch/optim and never freed (kept between steps: a state). Event 2: user_metadata
    // "kv_cache". Event 3: a cuBLAS workspace of 8,519,680 bytes without a stack. Event 4: a forward. Event
    // 5: nothing known.
    const std::string js = R"({"segments": [], "device_traces": [[
      {"action": "alloc", "addr": 4096, "size": 16384, "time_us": 1,
       "frames": [{"name": "torch::autograd::AccumulateGrad::apply", "filename": "??", "line": 0}]},
      {"action": "alloc", "addr": 8192, "size": 16384, "time_us": 2,
       "frames": [{"name": "step", "filename": "/x/torch/optim/adamw.py", "line": 10}]},
      {"action": "alloc", "addr": 12288, "size": 100, "time_us": 3, "user_metadata": "kv_cache"},
      {"action": "alloc", "addr": 16384, "size": 8519680, "time_us": 4},
      {"action": "alloc", "addr": 9000000, "size": 300, "time_us": 5,
       "frames": [{"name": "einsum", "filename": "/x/torch/functional.py", "line": 3},
                  {"name": "forward", "filename": "/home/u/model.py", "line": 9}]},
      {"action": "alloc", "addr": 9100000, "size": 700, "time_us": 6},
      {"action": "alloc", "addr": 20480, "size": 4096, "time_us": 7,
       "frames": [{"name": "step", "filename": "/x/torch/optim/adamw.py", "line": 12}]},
      {"action": "free_requested", "addr": 8192, "size": 16384, "time_us": 8}
    ]]})";
    const Trace t = readTrace(js);
    const TraceSummary s = summarize(t);
    const TraceIndex index(t.devices.at(0), s.devices.at(0));
    const Attribution a = attribute(t, index, 6, AttributionRules::pytorchDefaults());
    QCOMPARE(a.of(MeasuredCategory::Gradients), 16384LL);
    QCOMPARE(a.of(MeasuredCategory::Temporaries), 16384LL);
    QCOMPARE(a.of(MeasuredCategory::OptimizerStates), 4096LL);
    QCOMPARE(a.of(MeasuredCategory::KvCache), 100LL);
    QCOMPARE(a.of(MeasuredCategory::Workspaces), 8519680LL);
    QCOMPARE(a.of(MeasuredCategory::Activations), 300LL);
    QCOMPARE(a.of(MeasuredCategory::Unattributed), 700LL);
    QCOMPARE(a.total, 16384LL * 2 + 100 + 8519680 + 300 + 700 + 4096);
    // With a scenario whose model has tensors of 16,384 bytes, the optimizer's allocation is a state; a
    // second one of the same size beyond what the model has would be a temporary.
    json doc = test::trainingDoc(test::tinyLlama());
    doc["training"]["precision"] = "fp32";
    const Scenario sc = scenarioFromJson(doc);
    // 64 x 64 fp32 = 16,384 bytes: q, k, v, o and three MLP matrices, seven such tensors, each with m and v.
    // The 4,096-byte one matches no tensor of the model: scratch.
    const Attribution b = attribute(t, index, 6, AttributionRules::pytorchDefaults(), &sc);
    QCOMPARE(b.of(MeasuredCategory::OptimizerStates), 16384LL);
    QCOMPARE(b.of(MeasuredCategory::Temporaries), 4096LL);
    // Rules can be edited: a user's rule on the innermost frame of the forward allocation (functional.py)
    // decides before the default "forward" rule on an outer frame.
    AttributionRules custom = AttributionRules::pytorchDefaults();
    custom.rules.insert(custom.rules.begin(),
                        {"functional.py", AttributionRule::Target::Category, MeasuredCategory::Temporaries});
    const Attribution c = attribute(t, index, 6, custom);
    QCOMPARE(c.of(MeasuredCategory::Temporaries), 16384LL + 300);
    QCOMPARE(c.of(MeasuredCategory::Activations), 0LL);
}

void TestAttribution::comparisonArithmetic() {
    const Scenario sc =
        loadScenarioFile((test::measuredDir() + "cs336-medium-128-training.headroom.json").toStdString());
    const Estimate est = estimate(sc);
    const auto loaded = loadTrace(
        (test::dataDir() + "/traces/snapshots/cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle")
            .toStdString());
    const Comparison c =
        compareAtPeak(sc, est, loaded->trace, *loaded->indexes.at(0), AttributionRules::pytorchDefaults());
    // The estimate without CUDA context, allocator overhead and communication buffers.
    const double expected = est.peakBytes - est.perGpu[Category::CudaContext] -
                            est.perGpu[Category::AllocatorOverhead] -
                            est.perGpu[Category::CommunicationBuffers];
    QVERIFY(std::abs(static_cast<double>(c.estimatedTotal) - expected) < 16);
    QCOMPARE(c.measured.total, 7013335044LL);
    // The step's scratch (3% of the peak) is what the plan misses most, and it is named.
    QVERIFY(QString::fromStdString(namedDifferences(c)).startsWith("temporaries"));
    const json j = comparisonToJson(c, "run.pickle");
    QCOMPARE(j["schema"].get<std::string>(), std::string("headroom.compare/1"));
    QCOMPARE(j["measured"]["allocated_bytes"].get<long long>(), 7013335044LL);
    QCOMPARE(j["difference_bytes"].get<long long>(), c.estimatedTotal - 7013335044LL);
    QVERIFY(std::abs(j["relative_error"].get<double>() -
                     (static_cast<double>(c.estimatedTotal) - 7013335044.0) / 7013335044.0) < 1e-12);
    std::int64_t sum = 0;
    for (const auto& [k, v] : j["measured"]["by_category"].items())
        sum += v.get<std::int64_t>();
    QCOMPARE(sum, 7013335044LL);
    QCOMPARE(j["measured"]["by_category"].size(), size_t(8));
}

void TestAttribution::diffOfTwoRuns() {
    const QString dir = test::dataDir() + "/traces/snapshots/";
    const auto a =
        loadTrace((dir + "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle").toStdString());
    const auto b =
        loadTrace((dir + "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle").toStdString());
    const auto rules = AttributionRules::pytorchDefaults();
    // A run against itself: nothing differs and every allocation has its counterpart.
    const TraceDiff same = diffAtPeaks(a->trace, *a->indexes[0], a->trace, *a->indexes[0], rules);
    QCOMPARE(same.difference(), 0LL);
    QVERIFY(same.unmatched.empty());
    for (const FrameDelta& f : same.byFrame)
        QCOMPARE(f.difference(), 0LL);
    // 128 tokens at its optimizer-step peak against 256 tokens at its loss peak (MEASURED.md): the same
    // weights and AdamW states (423,183,360 parameters, 4 and 8 bytes each), gradients only in the first.
    const Scenario sc =
        loadScenarioFile((test::measuredDir() + "cs336-medium-128-training.headroom.json").toStdString());
    const TraceDiff d = diffAtPeaks(a->trace, *a->indexes[0], b->trace, *b->indexes[0], rules, &sc);
    QCOMPARE(d.difference(), 9103544320LL - 7013335044LL);
    QCOMPARE(d.b.of(MeasuredCategory::Weights) - d.a.of(MeasuredCategory::Weights), 0LL);
    QCOMPARE(d.b.of(MeasuredCategory::OptimizerStates) - d.a.of(MeasuredCategory::OptimizerStates), 0LL);
    QCOMPARE(d.a.of(MeasuredCategory::Gradients) - d.b.of(MeasuredCategory::Gradients), 4LL * 423183360);
    std::int64_t byFrame = 0;
    for (const FrameDelta& f : d.byFrame)
        byFrame += f.difference();
    QCOMPARE(byFrame, d.difference());
    const json j = traceDiffToJson(d, "a", "b", 5);
    QCOMPARE(j["schema"].get<std::string>(), std::string("headroom.diff/1"));
    QCOMPARE(j["by_top_frame"].size(), size_t(5));
    QCOMPARE(j["by_category"]["gradients"]["difference"].get<long long>(), -4LL * 423183360);
}

void TestAttribution::rulesAsAFile() {
    // The defaults survive a round trip through their JSON form, rule for rule.
    const AttributionRules defaults = AttributionRules::pytorchDefaults();
    const AttributionRules back = attributionRulesFromJson(attributionRulesToJson(defaults));
    QCOMPARE(back.rules.size(), defaults.rules.size());
    for (std::size_t i = 0; i < back.rules.size(); ++i) {
        QCOMPARE(back.rules[i].match, defaults.rules[i].match);
        QVERIFY(back.rules[i].target == defaults.rules[i].target);
        if (back.rules[i].target == AttributionRule::Target::Category)
            QVERIFY(back.rules[i].category == defaults.rules[i].category);
    }
    // Mistakes name the field.
    auto error = [](const json& doc) -> QString {
        try {
            attributionRulesFromJson(doc);
        } catch (const Error& e) {
            return QString::fromUtf8(e.what());
        }
        return {};
    };
    const json ok = {{"schema", "headroom.attribution-rules/1"}, {"rules", json::array()}};
    QVERIFY(error(ok).isEmpty());
    json bad = ok;
    bad["rules"] = {{{"match", "x"}, {"category", "weight"}}};
    QVERIFY(error(bad).contains("rules[0].category"));
    bad["rules"] = {{{"match", "x"}, {"phase", "forward"}}};
    QVERIFY(error(bad).contains("rules[0].phase"));
    bad["rules"] = {{{"match", ""}, {"category", "weights"}}};
    QVERIFY(error(bad).contains("rules[0].match"));
    bad["rules"] = {{{"match", "x"}, {"category", "weights"}, {"phase", "optimizer"}}};
    QVERIFY(error(bad).contains("exactly one"));
    bad = ok;
    bad["schema"] = "headroom.scenario/1";
    QVERIFY(error(bad).contains("schema"));
}

void TestAttribution::annotatedPhases() {
    // No frames at all (stacks were not recorded), but the optimizer's record_function region holds events
    // 1 and 2, and a user's "backward" region event 3. Event 1 (16,384 bytes) is never freed, event 2
    // (4,096) is freed at event 4, event 3 (16,384) stays; event 0 falls in no region.
    const std::string js = R"({"segments": [], "device_traces": [[
      {"action": "alloc", "addr": 4096, "size": 512, "time_us": 5},
      {"action": "alloc", "addr": 8192, "size": 16384, "time_us": 12},
      {"action": "alloc", "addr": 40960, "size": 4096, "time_us": 13},
      {"action": "alloc", "addr": 81920, "size": 16384, "time_us": 22},
      {"action": "free_requested", "addr": 40960, "size": 4096, "time_us": 30}
    ]], "external_annotations": [
      {"name": "Optimizer.step#AdamW.step", "stage": "START", "device": 0, "time_us": 10},
      {"name": "Optimizer.step#AdamW.step", "stage": "END", "device": 0, "time_us": 15},
      {"name": "model backward", "stage": "START", "device": 0, "time_us": 20},
      {"name": "model backward", "stage": "END", "device": 0, "time_us": 25}
    ]})";
    const Trace t = readTrace(js);
    const TraceSummary s = summarize(t);
    const TraceIndex index(t.devices.at(0), s.devices.at(0));
    // Without a scenario: what outlives the recording is state, the rest scratch.
    const Attribution a = attribute(t, index, 3, AttributionRules::pytorchDefaults());
    QCOMPARE(a.of(MeasuredCategory::OptimizerStates), 16384LL);
    QCOMPARE(a.of(MeasuredCategory::Temporaries), 4096LL);
    QCOMPARE(a.of(MeasuredCategory::Gradients), 16384LL);
    QCOMPARE(a.of(MeasuredCategory::Unattributed), 512LL);
    QVERIFY(categoryOf(t, index, a.allocations.back().allocation, AttributionRules::pytorchDefaults()) ==
            MeasuredCategory::Unattributed); // the 512-byte one, smallest, last
}

namespace {
struct Run {
    Scenario scenario;
    std::shared_ptr<LoadedTrace> trace;
};
Run loadRun(const char* scenario, const char* trace) {
    return {loadScenarioFile((test::measuredDir() + scenario + ".headroom.json").toStdString()),
            loadTrace((test::dataDir() + "/traces/snapshots/" + trace).toStdString())};
}
// Wedsonlin's medium training runs (MEASURED.md): fp32 at 128 and 256 tokens, bf16 autocast at 512 and 1,024.
Run mediumTraining(int tokens) {
    const std::string n = std::to_string(tokens);
    const std::string scenario = "cs336-medium-" + n + "-training" + (tokens >= 512 ? "-bf16-autocast" : "");
    const std::string trace = "cs336_Wedsonlin_medium_" + n + "_training_memory_snapshot.pickle";
    return loadRun(scenario.c_str(), trace.c_str());
}
// examples/measured/cases.json validated once for the tests that read it.
const Validation& measuredValidation() {
    static const Validation v = runValidation(
        {loadValidationCases((test::measuredDir() + QStringLiteral("cases.json")).toStdString())},
        AttributionRules::pytorchDefaults());
    return v;
}
CalibrationInput inputOf(const Run& r, const char* name) {
    return {&r.scenario, &r.trace->trace, r.trace->indexes[0].get(), name};
}
// Calibration fitted against the scenario's own profile's tables (`headroom-cli calibrate --own-profile`):
// how the fit learns a code's tensors over a profile that does not know them (plain PyTorch's over CS336's
// hand-written code, whose runs these mostly are), which is what every run of code Headroom has no tables of
// gets. By default CS336's runs are fitted against cs336_basics' tables (calibrationAgainstTheCodesTables).
CalibrationResult fitOwn(const std::vector<CalibrationInput>& runs, const AttributionRules& rules) {
    return calibrate(runs, rules, {}, FitAgainst::ScenarioProfile);
}
// Where the scenario reader refused `doc` (Error::where), or "" when it accepted it.
QString refusedAt(const json& doc, const std::string& baseDir = ".") {
    try {
        scenarioFromJson(doc, baseDir);
    } catch (const Error& err) {
        return QString::fromStdString(err.where());
    }
    return {};
}
double relative(std::int64_t estimate, std::int64_t measuredBytes) {
    return std::abs(static_cast<double>(estimate - measuredBytes)) / static_cast<double>(measuredBytes);
}
} // namespace

void TestAttribution::firstStepIsNamed() {
    // test::firstStepRecording(): a forward's 8,192 bytes, then two 3,072-byte states the step creates; a
    // later step would hold 8,192 + 6,144 = 14,336 at the peak.
    const std::string js = test::firstStepRecording();
    const Trace t = readTrace(js);
    const TraceSummary s = summarize(t);
    const TraceIndex index(t.devices.at(0), s.devices.at(0));
    // A model known by its size only: what the step creates and outlives the recording is state.
    const Scenario sc = scenarioFromJson(json::parse(R"({"model": {"parameters": 768},
        "training": {"micro_batch_size": 1, "sequence_length": 16, "precision": "fp32"},
        "cluster": {"gpu": "A100-80GB", "num_gpus": 1}})"));
    const Comparison c = compareAtPeak(sc, estimate(sc), t, index, AttributionRules::pytorchDefaults());
    QCOMPARE(c.measured.total, 8192LL);
    QVERIFY(c.firstStep);
    QCOMPARE(c.createdStates, 6144LL);
    QCOMPARE(c.laterStepPeak, 14336LL);
    QCOMPARE(comparisonToJson(c, "t")["first_step"]["later_step_peak_bytes"].get<std::int64_t>(), 14336LL);
    // Calibration measures such a run as the later step too.
    const CalibrationResult cal =
        calibrate({{&sc, &t, &index, "first step"}}, AttributionRules::pytorchDefaults());
    QVERIFY(cal.runs.at(0).firstStep);
    QCOMPARE(cal.runs.at(0).measured, 14336LL);
    // A scenario that plans the first step (training.first_step) describes the recording as it is: no
    // note, and calibration measures the recorded peak.
    Scenario first = sc;
    first.training.firstStep = true;
    QVERIFY(!compareAtPeak(first, estimate(first), t, index, AttributionRules::pytorchDefaults()).firstStep);
    const CalibrationResult asIs =
        calibrate({{&first, &t, &index, "first step"}}, AttributionRules::pytorchDefaults());
    QVERIFY(!asIs.runs.at(0).firstStep);
    QCOMPARE(asIs.runs.at(0).measured, 8192LL);
    // The runs of docs/measured.md recorded a later step (their states predate the recording): no note.
    const Run t256 = mediumTraining(256);
    QVERIFY(!compareAtPeak(t256.scenario, estimate(t256.scenario), t256.trace->trace, *t256.trace->indexes[0],
                           AttributionRules::pytorchDefaults())
                 .firstStep);
}

void TestAttribution::reservedPlannedWithTheRunsAllocator() {
    // A snapshot records its allocator's settings (allocator_settings; every one of tests/data's says
    // expandable_segments False). What a run reserved is compared with a plan of the same allocator: a
    // scenario that declares expandable segments for Wedsonlin's 1,024-token forward (the cs336_basics
    // profile, whose replay reserves what this run did within 4 MiB: tst_cs336replay) is planned without them
    // for the comparison, and says so.
    const Scenario declared = loadScenarioFile(
        (test::measuredDir() + "cs336-basics/cs336-medium-1024-inference.headroom.json").toStdString());
    QVERIFY(!declared.cluster.expandableSegments);
    const auto loaded = loadTrace(
        (test::dataDir() + "/traces/snapshots/cs336_Wedsonlin_medium_1024_inference_memory_snapshot.pickle")
            .toStdString());
    QVERIFY(loaded->trace.allocatorSettings.recorded && !loaded->trace.allocatorSettings.expandableSegments);
    const TraceIndex& index = *loaded->indexes.at(0);
    const auto rules = AttributionRules::pytorchDefaults();
    const Comparison asDeclared = compareAtPeak(declared, estimate(declared), loaded->trace, index, rules);
    QVERIFY(asDeclared.allocatorNote.empty());
    QCOMPARE(asDeclared.reservedEstimated, estimate(declared).reservedPeakBytes);
    QVERIFY(std::abs(asDeclared.reservedError()) < 0.002);
    nlohmann::json doc = declared.document;
    doc["cluster"]["expandable_segments"] = true;
    const Scenario wrong = scenarioFromJson(doc, declared.baseDir);
    const Estimate wrongPlan = estimate(wrong);
    // Planned with the setting it declares, this run's reserved would be 9% under.
    QVERIFY(wrongPlan.reservedPeakBytes / static_cast<double>(asDeclared.reservedMeasured) - 1 < -0.08);
    const Comparison c = compareAtPeak(wrong, wrongPlan, loaded->trace, index, rules);
    QCOMPARE(c.reservedEstimated, asDeclared.reservedEstimated);
    QVERIFY(c.estimatedTotal == asDeclared.estimatedTotal); // allocated does not depend on it
    QVERIFY(c.advice().find("had no expandable segments") != std::string::npos);
    QVERIFY(comparisonToJson(c, "t")["reserved"].contains("planned_as_recorded"));
    // Calibrating that scenario on the run: the fit measures the cache the run's allocator made, so the
    // calibrated plan still reproduces what it reserved (within the 2% every recorded run is held to), and
    // the run's note says which setting to plan its other lengths with.
    const CalibrationResult cal = calibrate({{&wrong, &loaded->trace, &index, "run"}}, rules);
    QVERIFY(cal.runs.at(0).advice.find("the fit measured the cache the run's allocator made") !=
            std::string::npos);
    Scenario calibrated = wrong;
    calibrated.calibration = cal.factors;
    const double reserved = estimate(calibrated).reservedPeakBytes;
    QVERIFY2(std::abs(reserved / static_cast<double>(asDeclared.reservedMeasured) - 1) <= 0.02,
             qPrintable(QString::number(reserved / static_cast<double>(asDeclared.reservedMeasured) - 1)));
    // The other way round: the same recording with its settings read as expandable segments (what a
    // torchtitan run records: run_train.sh sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) against
    // the scenario as it is: planned with them, the figure tst_cs336replay checks against this run's own
    // allocations replayed so.
    Trace expandable = loaded->trace;
    expandable.allocatorSettings.expandableSegments = true;
    const Comparison e = compareAtPeak(declared, estimate(declared), expandable, index, rules);
    QCOMPARE(e.reservedEstimated, wrongPlan.reservedPeakBytes);
    QVERIFY(e.advice().find("had expandable segments") != std::string::npos);
    // A recording without settings (older snapshots) is compared as the scenario says.
    expandable.allocatorSettings.recorded = false;
    QVERIFY(compareAtPeak(declared, estimate(declared), expandable, index, rules).allocatorNote.empty());
}

void TestAttribution::calibrationReproducesAndPredicts() {
    const auto rules = AttributionRules::pytorchDefaults();
    // The two training runs of MEASURED.md (4 x 128 and 4 x 256 tokens, the same code).
    const Run t128 = mediumTraining(128);
    const Run t256 = mediumTraining(256);
    const CalibrationResult train = fitOwn({inputOf(t128, "128"), inputOf(t256, "256")}, rules);
    QCOMPARE(train.runs.size(), size_t(2));
    QCOMPARE(train.runs[0].measured, 7013335044LL);
    QCOMPARE(train.runs[1].measured, 9103544320LL);
    for (const CalibrationRun& r : train.runs) {
        QVERIFY2(relative(r.after, r.measured) <= 0.02, qPrintable(QString::fromStdString(r.trace)));
        QVERIFY(relative(r.after, r.measured) < relative(r.before, r.measured));
    }
    // The scores told apart by their sizes. At 128 tokens a score tensor is 4 x 16 heads x 128 x 128 x 4
    // bytes = 4 MiB, a size no tokens-linear tensor of this model has (4 x 128 x {1024, 4096, 3072,
    // 10000} x {1, 4} bytes): 48 of them live at the loss peak, two per layer (the hand-written softmax's
    // exp and its quotient, both kept), where the estimate plans one: x2 exactly. At 256 tokens a score
    // tensor (4 x 16 x 256 x 256 x 4) and an FFN output (4 x 256 x 4096 x 4) are both 16 MiB, and the run
    // alone tells them apart by the calls that allocated them (ScoreSites, scoresToldByCalls): the softmax's
    // lines, whose call also keeps its b·a·s sums (4 x 16 x 256 x 4 bytes), hold scores; the FFN's, whose
    // call holds w2's b·s·h output and no such vector, do not. It then holds what the 128-token run holds
    // by size alone, two score tensors a layer (48) and five FFN-wide ones (w1's and w3's outputs, the
    // sigmoid, SiLU and the product: 120), at the new sizes; and 4 MiB, its q, k, v in fp32 and a 1-byte
    // b·a·s², is hidden-wide (no dropout: no such mask).
    const RunMeasurement m128 = measureRun(inputOf(t128, "128"), rules);
    QCOMPARE(m128.quadratic, 48LL * 4194304);
    QCOMPARE(m128.ambiguous, 0LL);
    const RunMeasurement m256 = measureRun(inputOf(t256, "256"), rules);
    QCOMPARE(4.0 * 16 * 256 * 256 * 4, 4.0 * 256 * 4096 * 4);
    QCOMPARE(m256.quadratic, 48LL * 4 * 16 * 256 * 256 * 4);
    QCOMPARE(m256.ambiguous, 0LL);
    // Calibrated together the two runs say the same (where a run's calls do not tell, the two runs'
    // lines do: a line whose 16 MiB tensor at 256 tokens was 4 MiB at 128 allocates scores).
    auto count = [](const TensorTable& t, const std::string& shape, std::int64_t each) {
        std::size_t n = 0;
        for (const TensorRow& r : t.rows)
            n += r.shape == shape && r.each == each ? r.count : 0;
        return n;
    };
    const TensorTable& told = train.runs[1].atLoss;
    QCOMPARE(count(told, "b·a·s²", 4LL * 16 * 256 * 256 * 4), size_t(48));
    QCOMPARE(count(told, "b·s·f", 4LL * 256 * 4096 * 4), size_t(120));
    QCOMPARE(count(m128.atLoss, "b·s·f", 4LL * 128 * 4096 * 4), size_t(120));
    for (const TensorRow& r : told.rows)
        QVERIFY2(r.dtypeBytes != 0, r.shape.c_str()); // nothing left with two names
    // Every live allocation at both peaks placed: the model state, workspaces and KV cache as attribution
    // found them, the rest matched to a tensor shape of the model by its size, and what no shape explains
    // left as residual. Sizes worked out here (b = 4, s = 128, h = 1024, f = 4096, 16 heads, V = 10,000).
    auto row = [](const TensorTable& t, std::int64_t each) -> const TensorRow* {
        for (const TensorRow& r : t.rows)
            if (r.each == each)
                return &r;
        return nullptr;
    };
    for (const TensorTable* t : {&m128.atLoss, &m128.atStep, &m256.atLoss, &m256.atStep}) {
        QCOMPARE(t->modelState + t->workspaces + t->kvCache + t->matched() + t->residual, t->total);
        QVERIFY(t->residual < t->total / 100);
    }
    // The step's scratch is shaped like the parameters: at 128 tokens the step holds tensors of the
    // embedding's shape in fp32 (10,000 x 1,024 x 4 bytes), which no activation of that run has.
    const TensorRow* scratch = row(m128.atStep, 10000LL * 1024 * 4);
    QVERIFY(scratch && scratch->shape == "p" && scratch->count > 0);
    const TensorRow* scores = row(m128.atLoss, 4LL * 16 * 128 * 128 * 4);
    QVERIFY(scores && scores->shape == "b·a·s²" && scores->dtypeBytes == 4 && scores->count == 48);
    const TensorRow* ffn = row(m128.atLoss, 4LL * 128 * 4096 * 4);
    QVERIFY(ffn && ffn->shape == "b·s·f" && ffn->dtypeBytes == 4);
    const TensorRow* hidden = row(m128.atLoss, 4LL * 128 * 1024 * 4);
    QVERIFY(hidden && hidden->shape == "b·s·h");
    const TensorRow* logits = row(m128.atLoss, 4LL * 128 * 10000 * 4);
    QVERIFY(logits && logits->shape == "b·s·V");
    // At 256 tokens, alone: the rows the calls told, none left with two names.
    QCOMPARE(count(m256.atLoss, "b·a·s²", 4LL * 16 * 256 * 256 * 4), size_t(48));
    QCOMPARE(count(m256.atLoss, "b·s·f", 4LL * 256 * 4096 * 4), size_t(120));
    for (const TensorRow& r : m256.atLoss.rows)
        QVERIFY2(r.dtypeBytes != 0, r.shape.c_str());
    QCOMPARE(train.factors.quadratic, 2.0);
    QCOMPARE(train.factors.quadraticActivationBytes, 4.0); // measured on fp32 activations
    // Calibrated on the 256-token run alone, the same x2; its attention backward, unreadable there (its
    // temporaries have the FFN's size), taken from the forward's copies: x2, what the 128-token run
    // measures. Beside the cs336_basics profile, which reads this code op by op, the step at four and
    // sixteen times the length, in fp32 and under bf16 autocast, within 2% and 1% (one factor for both,
    // before the calls told the scores apart, was 10% under at 1,024 tokens, 24% at 4,096; the plan's own
    // backward copies, before the forward's were taken, 2.4% and 5.0% under at 4,096).
    const CalibrationResult from256 = fitOwn({inputOf(t256, "256")}, rules);
    QCOMPARE(from256.factors.quadratic, 2.0);
    QVERIFY(!from256.scoresUntold);
    QVERIFY(from256.backwardFromForward);
    QCOMPARE(from256.factors.backwardScratchScores, train.factors.backwardScratchScores);
    for (const char* autocast : {"none", "bf16"})
        for (const int tokens : {1024, 4096}) {
            json doc = t256.scenario.document;
            doc["training"]["sequence_length"] = tokens;
            doc["training"]["autocast"] = autocast;
            json own = doc;
            own["training"]["framework"] = "cs336_basics";
            own["training"].erase("optimizer_implementation"); // its own AdamW, as the profile's default
            doc["calibration"] = {{"factors", calibrationFactorsToJson(from256.factors)}};
            const double a =
                estimate(scenarioFromJson(doc, t256.scenario.baseDir)).ranks.at(0).allocatedBytes;
            const double b =
                estimate(scenarioFromJson(own, t256.scenario.baseDir)).ranks.at(0).allocatedBytes;
            const QString what = QStringLiteral("%1 %2: %3 against %4 (%5%)")
                                     .arg(autocast)
                                     .arg(tokens)
                                     .arg(a)
                                     .arg(b)
                                     .arg(100 * (a / b - 1), 0, 'f', 2);
            qInfo().noquote() << what;
            if (std::string(autocast) == "bf16" && tokens == 4096) {
                QVERIFY2(std::abs(a / b - 1) <= 0.0155, qPrintable(what)); // no worse than recorded
                QEXPECT_FAIL("",
                             "1.50% under: measured apart from the loss's logits (x1.81 the plan's in fp32, "
                             "Calibration::logits), the layers' factor is x1.26 where one factor for both "
                             "was x1.28, which under autocast, where the plan's activations are most of the "
                             "step, had covered its own 0.85% shortfall; and 0.4% more since the plan "
                             "releases the last layer's MLP tensors before its softmax's backward, as "
                             "autograd does (LayerActivations::freedBeforeScores), where it had counted them "
                             "beside the softmax's scratch. In fp32 the same step moved from +0.74% to "
                             "+0.46%, and with that release to -0.12%; a vocabulary five times larger from "
                             "9.8% under to 2.8%",
                             Continue);
            }
            QVERIFY2(std::abs(a / b - 1) <= (tokens == 4096 ? 0.01 : 0.02), qPrintable(what));
        }
    // The two inference runs, separately.
    const Run i128 =
        loadRun("cs336-medium-128-inference", "cs336_Wedsonlin_medium_128_inference_memory_snapshot.pickle");
    const Run i256 =
        loadRun("cs336-medium-256-inference", "cs336_Wedsonlin_medium_256_inference_memory_snapshot.pickle");
    const CalibrationResult infer = fitOwn({inputOf(i128, "128"), inputOf(i256, "256")}, rules);
    for (const CalibrationRun& r : infer.runs)
        QVERIFY2(relative(r.after, r.measured) <= 0.02, qPrintable(QString::fromStdString(r.trace)));
    QCOMPARE(infer.factors.kvCache, 0.0); // one forward keeps no KV cache
    // Forward only, the two peaks are in different places: at 128 tokens in an FFN (three b·s·f tensors,
    // one layer's scores already freed), at 256 in an attention, four 16 MiB tensors from the softmax's and
    // the attention's lines, which allocate 4 MiB at 128 tokens: scores, not FFN outputs (8 MiB there).
    // Told apart, they are four fp32 score copies: 64 MiB where the plain estimate plans two fp32 score
    // tensors (the softmax's input and output; the model computes in fp32), 32 MiB: x2, what the 128-token
    // run shows inside its attention (forwardMomentsMeasured).
    QCOMPARE(count(infer.runs[1].atLoss, "b·a·s²", 4LL * 16 * 256 * 256 * 4), size_t(4));
    QCOMPARE(count(infer.runs[1].atLoss, "b·s·h", 4LL * 256 * 1024 * 4), size_t(6));
    QCOMPARE(infer.factors.quadratic, 2.0);
    // A prediction: the same code (MEASURED.md) at another size, batch and length: CS336 small, 32 x 256,
    // forward and backward. Its activations at the peak, which the training fit never saw, within 5%.
    Run small = loadRun("cs336-small-32x256-no-optimizer", "cs336_MAGMA27_memory_snapshot.pickle");
    Scenario before = small.scenario;
    small.scenario.calibration = train.factors;
    const Comparison c = compareAtPeak(small.scenario, estimate(small.scenario), small.trace->trace,
                                       *small.trace->indexes[0], rules);
    const Comparison u =
        compareAtPeak(before, estimate(before), small.trace->trace, *small.trace->indexes[0], rules);
    const auto act = static_cast<std::size_t>(MeasuredCategory::Activations);
    QVERIFY2(
        relative(c.estimated[act], c.measured.bytes[act]) <= 0.05,
        qPrintable(QStringLiteral("activations %1 vs %2").arg(c.estimated[act]).arg(c.measured.bytes[act])));
    QVERIFY(std::abs(c.relativeError()) < std::abs(u.relativeError()));
    QVERIFY(std::abs(c.relativeError()) <= 0.10); // what is left: gradients kept from warm-up
}

void TestAttribution::runShapePerRank() {
    // One rank's tensor sizes, by hand, for Llama 3 8B (h 4096, f 14336, V 128256, 32 heads of 128 in 8 KV
    // groups) under TP 2 and CP 2 at micro-batch 2 x 8192: each rank holds 4096 of the tokens (queries and
    // keys alike, as ring attention's blocks) and half of f, V and the heads.
    json doc = test::trainingDoc(json{{"preset", "meta-llama/Meta-Llama-3-8B"}});
    doc["training"]["micro_batch_size"] = 2;
    doc["training"]["sequence_length"] = 8192;
    doc["cluster"] = {
        {"gpu", "H100-SXM-80GB"}, {"num_gpus", 4}, {"tensor_parallel", 2}, {"context_parallel", 2}};
    const RunShape s(scenarioFromJson(doc));
    QCOMPARE(s.b, 2.0);
    QCOMPARE(s.queries, 4096.0);
    QCOMPARE(s.keys, 4096.0);
    QCOMPARE(s.ffn, 7168.0);
    QCOMPARE(s.vocab, 64128.0);
    QCOMPARE(s.heads, 16.0);
    QCOMPARE(s.kvHeads, 4.0);
    QCOMPARE(s.headDim, 128.0);
    // b·a·s² in bf16: 2 x 16 x 4096 x 4096 x 2 bytes; b·s·V in fp32: 2 x 4096 x 64128 x 4 (both multiples of
    // 512, so the allocator hands them out as they are).
    QCOMPARE(s.scores(2), 2.0 * 16 * 4096 * 4096 * 2);
    QCOMPARE(s.linear(s.vocab, 4), 2.0 * 4096 * 64128 * 4);
    // A rounded size: one token of hidden 4096 in one byte is 4096; 3 x 100 bytes round up to 512.
    QCOMPARE(RunShape::rounded(300), 512.0);
    // Inference: the prefill's chunk of the prompt against the whole context; TP 8 leaves one KV head a rank
    // of Llama 3 8B's 8, never fewer.
    json inf = doc;
    inf.erase("training");
    inf["inference"] = {{"batch_size", 3}, {"context_length", 32768}, {"prefill_chunk", 2048}};
    inf["cluster"] = {{"gpu", "H100-SXM-80GB"}, {"num_gpus", 8}, {"tensor_parallel", 8}};
    const RunShape p(scenarioFromJson(inf));
    QCOMPARE(p.queries, 2048.0);
    QCOMPARE(p.keys, 32768.0);
    QCOMPARE(p.heads, 4.0);
    QCOMPARE(p.kvHeads, 1.0);
}

void TestAttribution::calibrationLearnsTheLossLogitsApart() {
    // CS336's 128-token medium step holds four fp32 tensors of micro-batch x tokens x vocabulary at its loss
    // peak (the head's logits and its hand-written cross-entropy's: 4 x 4 x 128 x 10,000 x 4 bytes, read
    // off the trace's tensor table). Calibrated, the plan holds exactly those there, whatever the profile
    // planned, and the tokens' factor scales the layers' tensors alone.
    const Run t128 =
        loadRun("cs336-medium-128-training", "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle");
    const auto rules = AttributionRules::pytorchDefaults();
    const CalibrationResult r = fitOwn({inputOf(t128, "128")}, rules);
    const double each = 4.0 * 128 * 10000 * 4;
    std::size_t copies = 0;
    for (const TensorRow& row : r.runs.at(0).atLoss.rows)
        if (row.shape == "b·s·V") {
            QCOMPARE(static_cast<double>(row.each), each);
            copies += row.count;
        }
    QCOMPARE(copies, std::size_t(4));
    QVERIFY(r.factors.logits > 0);
    json doc = t128.scenario.document;
    doc["calibration"] = {{"factors", calibrationFactorsToJson(r.factors)}};
    const Scenario calibrated = scenarioFromJson(doc, t128.scenario.baseDir);
    double atLoss = -1;
    for (const TimelinePoint& t : phaseTimeline(calibrated, 0, 2))
        if (t.phase == Phase::Backward && t.progress == 0 && !t.layerRunning && !t.headRunning)
            atLoss = t.bytes[Category::Logits];
    QVERIFY2(std::abs(atLoss / (4 * each) - 1) < 1e-9, qPrintable(QString::number(atLoss / each)));
    // A what-if the run did not have: GPT-2's vocabulary (50,257) on six of its layers at 1,024 tokens,
    // where the vocabulary-sized tensors are most of the step. Beside the cs336_basics profile, which reads
    // this code op by op (within 0.2% of every traced CS336 run), within 3%; one factor for the logits and
    // the layers was 9.8% under.
    json whatIf = doc;
    whatIf["model"]["vocab_size"] = 50257;
    whatIf["model"]["num_hidden_layers"] = 6;
    whatIf["training"]["sequence_length"] = 1024;
    whatIf["cluster"] = {{"gpu_memory_gib", 1000}, {"num_gpus", 1}};
    json own = whatIf;
    own.erase("calibration");
    own["training"]["framework"] = "cs336_basics";
    own["training"].erase("optimizer_implementation");
    const double a = estimate(scenarioFromJson(whatIf, t128.scenario.baseDir)).ranks.at(0).allocatedBytes;
    const double b = estimate(scenarioFromJson(own, t128.scenario.baseDir)).ranks.at(0).allocatedBytes;
    QVERIFY2(std::abs(a / b - 1) <= 0.03, qPrintable(QString::number(100 * (a / b - 1), 'f', 2) + "%"));
    // The factor is the copies CS336's own cross-entropy keeps (the loss its scenario plans, `full`). A
    // what-if that swaps in a compiled cross-entropy plans that loss's tensors, not those copies x1.81, and
    // says so; one fused with the output layer writes no logits, so none are held through the step either.
    QCOMPARE(calibrationFactorsToJson(r.factors)["logits_measured_with"].get<std::string>(),
             std::string("full"));
    auto logitsAt = [&](const json& d, Phase phase, double progress) {
        double most = 0;
        for (const TimelinePoint& t : phaseTimeline(scenarioFromJson(d, t128.scenario.baseDir), 0, 2))
            if (t.phase == phase && t.progress == progress && !t.layerRunning && !t.headRunning)
                most = std::max(most, t.bytes[Category::Logits]);
        return most;
    };
    for (const char* loss : {"fused", "fused_linear"}) {
        json swapped = whatIf, plain = whatIf;
        swapped["training"]["loss"] = loss;
        plain["training"]["loss"] = loss;
        plain.erase("calibration");
        QCOMPARE(logitsAt(swapped, Phase::Backward, 0), logitsAt(plain, Phase::Backward, 0));
        const Scenario sc = scenarioFromJson(swapped, t128.scenario.baseDir);
        QVERIFY(std::any_of(sc.warnings.begin(), sc.warnings.end(), [](const std::string& w) {
            return w.find("were measured with the loss \"full\"") != std::string::npos;
        }));
    }
    json fusedLinear = whatIf;
    fusedLinear["training"]["loss"] = "fused_linear";
    QCOMPARE(logitsAt(fusedLinear, Phase::Optimizer, 0), 0.0);
}

// The optimizer step's scratch a calibration measures is the code's that ran, whatever the scenario called
// it (so a run is reproduced whatever implementation was declared); a what-if that steps with another
// implementation plans that one's. CS336's 128-token run steps with its own AdamW, one parameter at a time,
// declared `for_loop`; asked what torch's foreach AdamW would hold, the plan holds foreach's list of
// temporaries, one fp32 state's worth: 4 x 423,183,360 bytes (MEASURED.md's parameter count).
void TestAttribution::calibratedStepScratchIsItsImplementations() {
    const Run t128 =
        loadRun("cs336-medium-128-training", "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle");
    QCOMPARE(t128.scenario.training.optimizerImpl, OptimizerImpl::ForLoop);
    const CalibrationResult r = calibrate({inputOf(t128, "128")}, AttributionRules::pytorchDefaults());
    QVERIFY(r.factors.stepMeasuredWith == OptimizerImpl::ForLoop);
    json doc = t128.scenario.document;
    doc["calibration"] = {{"factors", calibrationFactorsToJson(r.factors)}};
    QCOMPARE(doc["calibration"]["factors"]["optimizer_step_measured_with"].get<std::string>(),
             std::string("for_loop"));
    auto stepTemporaries = [&](const json& d) {
        double most = 0;
        for (const TimelinePoint& t : phaseTimeline(scenarioFromJson(d, t128.scenario.baseDir), 0, 2))
            if (t.phase == Phase::Optimizer)
                most = std::max(most, t.bytes[Category::Temporaries]);
        return most;
    };
    // As calibrated: what the run's step held (its trace's scratch, not the plan's two tensors).
    const double measured = stepTemporaries(doc);
    QVERIFY(measured > 0);
    doc["training"]["optimizer_implementation"] = "foreach";
    QCOMPARE(stepTemporaries(doc), 4.0 * 423183360);
    // The whole step beside the cs336_basics profile's plan of the same code stepped with foreach (its
    // layers read op by op): within 0.5% (the measured loop's scratch in its place was 17.5% under).
    json own = doc;
    own.erase("calibration");
    own["training"]["framework"] = "cs336_basics";
    const double a = estimate(scenarioFromJson(doc, t128.scenario.baseDir)).ranks.at(0).allocatedBytes;
    const double b = estimate(scenarioFromJson(own, t128.scenario.baseDir)).ranks.at(0).allocatedBytes;
    QVERIFY2(std::abs(a / b - 1) <= 0.005, qPrintable(QString::number(100 * (a / b - 1), 'f', 2) + "%"));
    const Scenario whatIf = scenarioFromJson(doc, t128.scenario.baseDir);
    QVERIFY(std::any_of(whatIf.warnings.begin(), whatIf.warnings.end(), [](const std::string& w) {
        return w.find("measured with AdamW's for_loop implementation and this plan steps with foreach") !=
               std::string::npos;
    }));
    doc["training"]["optimizer_implementation"] = "fused";
    QCOMPARE(stepTemporaries(doc), 0.0); // torch's fused kernel allocates none
    // A file from before the field: the measured scratch stands whatever the plan declares.
    doc["calibration"]["factors"].erase("optimizer_step_measured_with");
    QCOMPARE(stepTemporaries(doc), measured);
}

// A plain plan calibrated on code the runs' stacks name replays that code for its reserved peak
// (Calibration::code), stepping the AdamW the runs stepped: CS336's runs step cs336_basics/optimizer.py's,
// which holds five tensors of the largest parameter at once, whatever implementation their scenarios declared
// (for_loop, two). The step's innermost Python frames tell (stepsOwnOptimizer).
void TestAttribution::calibratedReplayStepsTheRunsOptimizer() {
    const auto rules = AttributionRules::pytorchDefaults();
    // By hand: 4,096 bytes made in torch/optim's AdamW (called from a cs336_basics training loop, further
    // out) and 1,024 in cs336_basics' own: torch's stepped. The same sizes the other way round: its own.
    // A run that allocated nothing in a step: neither.
    auto own = [&](int torchBytes, int ownBytes) {
        const std::string js = R"({"segments": [], "device_traces": [[
          {"action": "alloc", "addr": 4096, "size": )" +
                               std::to_string(torchBytes) +
                               R"(, "time_us": 1,
           "frames": [{"name": "at::empty", "filename": "??", "line": 0},
                      {"name": "_multi_tensor_adamw", "filename": "/x/torch/optim/adamw.py", "line": 10},
                      {"name": "train", "filename": "/home/u/cs336_basics/train.py", "line": 5}]},
          {"action": "alloc", "addr": 65536, "size": )" +
                               std::to_string(ownBytes) +
                               R"(, "time_us": 2,
           "frames": [{"name": "step", "filename": "/home/u/cs336_basics/optimizer.py", "line": 40},
                      {"name": "wrapper", "filename": "/x/torch/optim/optimizer.py", "line": 7}]},
          {"action": "alloc", "addr": 131072, "size": 8192, "time_us": 3,
           "frames": [{"name": "forward", "filename": "/home/u/cs336_basics/model.py", "line": 9}]}
        ]]})";
        const Trace t = readTrace(js);
        const TraceSummary s = summarize(t);
        const TraceIndex index(t.devices.at(0), s.devices.at(0));
        return stepsOwnOptimizer(t, index, Framework::Cs336Basics, rules);
    };
    QVERIFY(own(4096, 1024) == false);
    QVERIFY(own(1024, 4096) == true);
    {
        const Run forward = loadRun("cs336-medium-128-inference",
                                    "cs336_Wedsonlin_medium_128_inference_memory_snapshot.pickle");
        QVERIFY(!stepsOwnOptimizer(forward.trace->trace, *forward.trace->indexes[0], Framework::Cs336Basics,
                                   rules));
    }
    const Run t128 =
        loadRun("cs336-medium-128-training", "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle");
    const Run t256 =
        loadRun("cs336-medium-256-training", "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle");
    QVERIFY(stepsOwnOptimizer(t128.trace->trace, *t128.trace->indexes[0], Framework::Cs336Basics, rules) ==
            true);
    const CalibrationResult cal = calibrate({inputOf(t128, "128"), inputOf(t256, "256")}, rules);
    QVERIFY(cal.factors.code == Framework::Cs336Basics);
    QVERIFY(cal.factors.codeOptimizer);
    json doc = t128.scenario.document;
    doc["calibration"] = {{"factors", calibrationFactorsToJson(cal.factors)}};
    QCOMPARE(doc["calibration"]["factors"]["code_optimizer"].get<bool>(), true);
    QVERIFY(scenarioFromJson(doc, t128.scenario.baseDir).calibration.codeOptimizer);
    // The what-if: GPT-2's vocabulary on six layers, 8 x 128 tokens, beside the cs336_basics profile's plan
    // of the same code (read from it op by op; within 0.2% of every traced CS336 run). Replaying the declared
    // for_loop step, the calibrated plan reserved 15.2% under it, its allocated peak the same.
    doc["model"]["vocab_size"] = 50257;
    doc["model"]["num_hidden_layers"] = 6;
    doc["training"]["micro_batch_size"] = 8;
    doc["training"]["sequence_length"] = 128;
    json code = doc;
    code.erase("calibration");
    code["training"]["framework"] = "cs336_basics";
    code["training"].erase("optimizer_implementation"); // the profile's default: the code's own AdamW
    const Estimate calibrated = estimate(scenarioFromJson(doc, t128.scenario.baseDir));
    const Estimate profile = estimate(scenarioFromJson(code, t128.scenario.baseDir));
    const QString what =
        QStringLiteral("allocated %1%, reserved %2%")
            .arg(100 * (calibrated.allocatedPeakBytes / profile.allocatedPeakBytes - 1), 0, 'f', 2)
            .arg(100 * (calibrated.reservedPeakBytes / profile.reservedPeakBytes - 1), 0, 'f', 2);
    qInfo().noquote() << what;
    QVERIFY2(std::abs(calibrated.allocatedPeakBytes / profile.allocatedPeakBytes - 1) <= 0.02,
             qPrintable(what));
    QVERIFY2(std::abs(calibrated.reservedPeakBytes / profile.reservedPeakBytes - 1) <= 0.02,
             qPrintable(what));
    // A file from before the field replays the declared step, as before.
    doc["calibration"]["factors"].erase("code_optimizer");
    QVERIFY(!scenarioFromJson(doc, t128.scenario.baseDir).calibration.codeOptimizer);
}

// "Calibrate, then ask what-if" with the what-if the planner offers first when a step does not fit:
// checkpointing every block. Calibrated on CS336's 128- and 256-token traces (no block checkpointed), the
// plain-PyTorch plan of the same code checkpointed, beside the cs336_basics profile's plan of it (read from
// that code op by op, within 0.2% of every traced CS336 run; its checkpointing follows
// torch/utils/checkpoint.py, no recorded run checks it): within 5%. Before the inputs a checkpoint keeps were
// held out of the layers' factor, the first block's softmax backward was planned, and autocast's cache was
// modelled, these were 7.5% under to 13% over; then 4.9% over to 10.7% over in fp32 (the rebuilt block's
// MLP tensors counted beside its softmax's backward, which runs after their release) and +1.6% and +2.1%
// under autocast. With the release planned (LayerActivations::freedBeforeScores): fp32 +0.3%, -0.5% and
// -0.2% (4 micro-batches), under autocast -1.0%, -4.2% and -0.2%; the 16 x 1,024 autocast step, now
// nearest the bound, is under it because the scores' factor, measured in fp32, is not applied there. With
// two blocks, where what a rebuilt block holds is most of the step, 16 x 512 went from 26.2% over to 0.2%
// under in fp32 and from 11.3% over to 4.3% under under autocast. All of that is the plain profile's tables
// calibrated (--own-profile, the rows so named). By default the factors are fitted against cs336_basics'
// tables, the code these runs ran, and the plan is made with them (Calibration::codeTables): the same
// what-ifs within 0.1%, where the two blocks under autocast were 5.4% under.
void TestAttribution::calibratedPlanCheckpointed_data() {
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("tokens");
    QTest::addColumn<int>("accumulation");
    QTest::addColumn<bool>("autocast");
    QTest::addColumn<int>("layers");
    QTest::addColumn<bool>("ownProfile");
    for (const bool own : {true, false}) {
        const char* how = own ? ", own profile" : "";
        auto row = [&](const char* name) -> QTestData& {
            return QTest::newRow(qPrintable(QString(name) + how));
        };
        row("4 x 1024 fp32") << 4 << 1024 << 1 << false << 24 << own;
        row("4 x 1024 autocast") << 4 << 1024 << 1 << true << 24 << own;
        row("16 x 1024 fp32") << 16 << 1024 << 1 << false << 24 << own;
        row("16 x 1024 autocast") << 16 << 1024 << 1 << true << 24 << own;
        row("4 x 128 x 4 micro-batches autocast") << 4 << 128 << 4 << true << 24 << own;
        row("4 x 1024 x 4 micro-batches fp32") << 4 << 1024 << 4 << false << 24 << own;
        // Two blocks, where the rebuilt block's tensors are a larger share of the step.
        row("2 blocks, 16 x 512 fp32") << 16 << 512 << 1 << false << 2 << own;
        row("2 blocks, 16 x 512 autocast") << 16 << 512 << 1 << true << 2 << own;
    }
}

void TestAttribution::calibratedPlanCheckpointed() {
    QFETCH(int, batch);
    QFETCH(int, tokens);
    QFETCH(int, accumulation);
    QFETCH(bool, autocast);
    QFETCH(int, layers);
    QFETCH(bool, ownProfile);
    auto calibratedAgainst = [](FitAgainst against) {
        const Run t128 = loadRun("cs336-medium-128-training",
                                 "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle");
        const Run t256 = loadRun("cs336-medium-256-training",
                                 "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle");
        const CalibrationResult r = calibrate({inputOf(t128, "128"), inputOf(t256, "256")},
                                              AttributionRules::pytorchDefaults(), {}, against);
        json doc = t128.scenario.document;
        doc["calibration"] = {{"factors", calibrationFactorsToJson(r.factors)}};
        return doc;
    };
    static const json byDefault = calibratedAgainst(FitAgainst::CodeWhereKnown);
    static const json againstItsOwn = calibratedAgainst(FitAgainst::ScenarioProfile);
    QCOMPARE(byDefault["calibration"]["factors"].value("code_tables", false), true);
    QVERIFY(!againstItsOwn["calibration"]["factors"].contains("code_tables"));
    json whatIf = ownProfile ? againstItsOwn : byDefault;
    whatIf["training"]["micro_batch_size"] = batch;
    whatIf["training"]["sequence_length"] = tokens;
    whatIf["training"]["gradient_accumulation_steps"] = accumulation;
    whatIf["training"]["activation_checkpointing"] = "full";
    whatIf["model"]["num_hidden_layers"] = layers;
    if (autocast)
        whatIf["training"]["autocast"] = "bf16";
    json own = whatIf;
    own.erase("calibration");
    own["training"]["framework"] = "cs336_basics";
    own["training"].erase("optimizer_implementation");
    const double a = estimate(scenarioFromJson(whatIf)).ranks.at(0).allocatedBytes;
    const double b = estimate(scenarioFromJson(own)).ranks.at(0).allocatedBytes;
    const QString what = QString::number(100 * (a / b - 1), 'f', 2) + "%";
    qInfo().noquote() << what;
    QEXPECT_FAIL(
        "2 blocks, 16 x 512 autocast, own profile",
        "5.43% under: both plans peak in the first block's backward, its rebuilt softmax's backward "
        "beside every later gradient, where the calibrated plan holds 0.14 GiB fewer score-sized "
        "tensors than the code's profile; the code's softmax runs in fp32 under autocast (exp and the "
        "division on autocast's fp32 list), and fp32 runs cannot say which of its copies would run in "
        "16 bits. It was 4.26% under while the plain plan counted the embedding's gradient there, "
        "which autograd writes only after that block's backward (StageModel::gradientsBeforeLayers).",
        Continue);
    QVERIFY2(std::abs(a / b - 1) <= 0.05, qPrintable(what));
}

// CS336's runs planned as plain PyTorch, their stacks naming cs336_basics: by default the factors are fitted
// against that code's tables and the calibrated plan is the code's plan, scaled (Calibration::codeTables).
// The plain scenario's calibrated estimate is then the cs336_basics scenario's with the same factors, byte
// for byte; a what-if the code cannot run (grouped-query attention: its attention has one head per key)
// is planned with the plain profile and says so.
void TestAttribution::calibrationAgainstTheCodesTables() {
    const Run t128 =
        loadRun("cs336-medium-128-training", "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle");
    const Run t256 =
        loadRun("cs336-medium-256-training", "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle");
    const CalibrationResult r =
        calibrate({inputOf(t128, "128"), inputOf(t256, "256")}, AttributionRules::pytorchDefaults());
    QVERIFY(r.factors.code == Framework::Cs336Basics && r.factors.codeTables);
    // Over the code's own tables, which reproduce these runs within 0.1% uncalibrated (tst_cs336), the
    // factors are about 1 where the plain profile's were x1.26 the tokens and x2 the scores.
    QVERIFY2(std::abs(r.factors.linear - 1) <= 0.05 && std::abs(r.factors.quadratic - 1) <= 0.05,
             qPrintable(QString::number(r.factors.linear) + " " + QString::number(r.factors.quadratic)));
    for (const CalibrationRun& run : r.runs)
        QVERIFY2(relative(run.after, run.measured) <= 0.005, run.trace.c_str());
    json plain = t128.scenario.document;
    plain["calibration"] = {{"factors", calibrationToJson(r)["factors"]}};
    QVERIFY(plain["calibration"]["factors"].contains("own_profile"));
    plain["training"]["sequence_length"] = 1024;
    plain["training"]["autocast"] = "bf16";
    json code = plain;
    code["training"]["framework"] = "cs336_basics";
    const Scenario asPlain = scenarioFromJson(plain, t128.scenario.baseDir);
    const Scenario asCode = scenarioFromJson(code, t128.scenario.baseDir);
    // Said among its warnings (the window's banner): the plan is the code's, not the profile it names.
    QVERIFY(std::any_of(asPlain.warnings.begin(), asPlain.warnings.end(), [](const std::string& w) {
        return w.find("calibration.factors.code_tables: planned with the tables of cs336_basics") == 0;
    }));
    for (const std::string& w : asCode.warnings)
        QVERIFY2(w.find("code_tables") == std::string::npos, w.c_str());
    const Estimate a = estimate(asPlain), b = estimate(asCode);
    QCOMPARE(a.warnings, asPlain.warnings); // the estimate (the CLI, the window's note) says it too
    QCOMPARE(a.allocatedPeakBytes, b.allocatedPeakBytes);
    QCOMPARE(a.reservedPeakBytes, b.reservedPeakBytes);
    // Four key-value heads for sixteen query heads: not cs336_basics' attention. Planned with the plain
    // profile, so with the factors the same runs gave against its tables (calibration.factors.own_profile,
    // which calibrate writes beside the code's): the plan --own-profile's calibration makes, to the byte.
    QVERIFY(r.ownProfile && !r.ownProfile->codeTables);
    const CalibrationResult own =
        calibrate({inputOf(t128, "128"), inputOf(t256, "256")}, AttributionRules::pytorchDefaults(), {},
                  FitAgainst::ScenarioProfile);
    QVERIFY(calibrationFactorsToJson(*r.ownProfile) == calibrationFactorsToJson(own.factors));
    QVERIFY2(own.factors.quadratic > 1.5,
             qPrintable(QString::number(own.factors.quadratic))); // the x2 scores
    json grouped = plain;
    grouped["model"]["num_key_value_heads"] = 4;
    const Scenario g = scenarioFromJson(grouped, t128.scenario.baseDir);
    QVERIFY(std::any_of(g.warnings.begin(), g.warnings.end(), [](const std::string& w) {
        return w.find("calibration.factors.own_profile: the factors were fitted against the tables of "
                      "cs336_basics") == 0 &&
               w.find("the factors the same runs gave against the pytorch profile's own tables") !=
                   std::string::npos;
    }));
    QVERIFY(!g.calibration.codeTables);
    json groupedOwn = grouped;
    groupedOwn["calibration"] = {{"factors", calibrationToJson(own)["factors"]}};
    QVERIFY(!calibrationToJson(own)["factors"].contains("own_profile")); // fitted against its own already
    const Estimate ge = estimate(g), go = estimate(scenarioFromJson(groupedOwn, t128.scenario.baseDir));
    QCOMPARE(ge.allocatedPeakBytes, go.allocatedPeakBytes);
    QCOMPARE(ge.reservedPeakBytes, go.reservedPeakBytes);
    // A calibration written before both sets were fitted: the code's factors on the plain tables, and said.
    json older = grouped;
    older["calibration"]["factors"].erase("own_profile");
    const Scenario o = scenarioFromJson(older, t128.scenario.baseDir);
    QVERIFY(std::any_of(o.warnings.begin(), o.warnings.end(), [](const std::string& w) {
        return w.find("calibration.factors.code_tables: the factors were fitted against the tables of "
                      "cs336_basics") == 0 &&
               w.find("applied to the pytorch profile's tables") != std::string::npos;
    }));
    QVERIFY(estimate(o).allocatedPeakBytes < a.allocatedPeakBytes); // smaller K and V, planned all the same
    // The x2 scores the plain tables need for this code: the own profile's factors plan more than the
    // code's factors on those tables.
    QVERIFY(ge.allocatedPeakBytes > estimate(o).allocatedPeakBytes);
    // Errors in the own profile's factors are said whichever set the plan reads, by their place.
    for (const json* doc : {&plain, &grouped}) {
        json bad = *doc;
        bad["calibration"]["factors"]["own_profile"]["linear"] = -1;
        QCOMPARE(refusedAt(bad), QStringLiteral("calibration.factors.own_profile.linear"));
        bad["calibration"]["factors"]["own_profile"] = 3;
        QCOMPARE(refusedAt(bad), QStringLiteral("calibration.factors.own_profile"));
        bad["calibration"]["factors"]["own_profile"] = {{"own_profile", json::object()}};
        QCOMPARE(refusedAt(bad), QStringLiteral("calibration.factors.own_profile.own_profile"));
    }
    // A forward without autograd is not what these training runs measured: the factors do not apply, and
    // the plan (the plain profile's own) does not claim the code's tables.
    json forward = plain;
    forward.erase("training");
    forward["inference"] = {{"batch_size", 4},      {"context_length", 128},  {"weight_dtype", "fp32"},
                            {"attention", "eager"}, {"framework", "pytorch"}, {"kv_cache", false}};
    const Scenario f = scenarioFromJson(forward, t128.scenario.baseDir);
    QVERIFY(std::none_of(f.warnings.begin(), f.warnings.end(),
                         [](const std::string& w) { return w.find("code_tables") != std::string::npos; }));
    QVERIFY(std::any_of(f.warnings.begin(), f.warnings.end(),
                        [](const std::string& w) { return w.find("measured_on") != std::string::npos; }));
}

void TestAttribution::calibrationInTheScenario() {
    json doc = json::parse(
        readTextFile((test::measuredDir() + "cs336-medium-256-training.headroom.json").toStdString()));
    const Scenario plain = scenarioFromJson(doc);
    QVERIFY(!plain.calibration.present);
    doc["calibration"] = {{"factors", {{"linear", 2.0}, {"quadratic", 3.0}, {"workspace_bytes", 1048576}}},
                          {"runs", json::array()}};
    const Scenario cal = scenarioFromJson(doc);
    QVERIFY(cal.calibration.present);
    QCOMPARE(cal.calibration.linear, 2.0);
    QCOMPARE(cal.calibration.quadratic, 3.0);
    // Applied: the calibrated peak holds twice the tokens-linear tensors, three times the scores (the loss
    // peak, where activations, scores and logits all live), and the measured workspace in place of the
    // planned ones: PyTorch's two cuBLAS workspaces of a training step on an A100, 4096 KiB x 2 + 16 KiB x 8
    // each (CublasHandlePool.cpp's default before Hopper).
    const Estimate e0 = estimate(plain), e1 = estimate(cal);
    const double transient0 = e0.perGpu[Category::Activations] + e0.perGpu[Category::Logits];
    const double expected = 2 * transient0 + 3 * e0.perGpu[Category::AttentionScores];
    const double got =
        e1.perGpu[Category::Activations] + e1.perGpu[Category::Logits] + e1.perGpu[Category::AttentionScores];
    QVERIFY2(std::abs(got - expected) < 1, qPrintable(QStringLiteral("%1 vs %2").arg(got).arg(expected)));
    QCOMPARE(plain.cluster.gpu, std::string("A100-80GB"));
    QCOMPARE(e0.perGpu[Category::Workspaces], 2 * (4096.0 * 1024 * 2 + 16.0 * 1024 * 8));
    QCOMPARE(e1.perGpu[Category::Workspaces], 1048576.0);
    // Measured on forward-only runs, the same factors say nothing of what training keeps: not applied but
    // the workspaces, and the scenario says why. Measured on training runs, they are.
    doc["calibration"]["factors"]["measured_on"] = "inference";
    const Scenario other = scenarioFromJson(doc);
    const Estimate e2 = estimate(other);
    QCOMPARE(e2.perGpu[Category::Activations], e0.perGpu[Category::Activations]);
    QCOMPARE(e2.perGpu[Category::AttentionScores], e0.perGpu[Category::AttentionScores]);
    QCOMPARE(e2.perGpu[Category::Workspaces], 1048576.0);
    QVERIFY(std::any_of(other.warnings.begin(), other.warnings.end(), [](const std::string& w) {
        return w.find("calibrated on forward-only runs without autograd and this is a training plan") !=
               std::string::npos;
    }));
    doc["calibration"]["factors"]["measured_on"] = "training";
    QCOMPARE(estimate(scenarioFromJson(doc)).perGpu[Category::Activations], e1.perGpu[Category::Activations]);
    doc["calibration"]["factors"]["measured_on"] = "serving";
    QCOMPARE(refusedAt(doc), QStringLiteral("calibration.factors.measured_on")); // an unknown mode
    doc["calibration"]["factors"].erase("measured_on");
    doc["calibration"]["factors"]["linear"] = -1;
    QCOMPARE(refusedAt(doc), QStringLiteral("calibration.factors.linear")); // a negative factor
    // calibrate() writes the runs' mode: the 128-token training run's factors, in an inference plan of the
    // same code, leave it as planned but for the workspaces (applied, they had put the 1,024-token forward
    // 19.5% over its trace, where the plain plan was then 6.9% over).
    const Run t128 =
        loadRun("cs336-medium-128-training", "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle");
    const Run i1024 = loadRun("cs336-medium-1024-inference",
                              "cs336_Wedsonlin_medium_1024_inference_memory_snapshot.pickle");
    const CalibrationResult fromTraining =
        calibrate({inputOf(t128, "128")}, AttributionRules::pytorchDefaults());
    QVERIFY(fromTraining.factors.measuredOn == Mode::Training);
    QCOMPARE(calibrationFactorsToJson(fromTraining.factors)["measured_on"].get<std::string>(),
             std::string("training"));
    json forward = i1024.scenario.document;
    forward["calibration"] = {{"factors", calibrationFactorsToJson(fromTraining.factors)}};
    const Scenario crossed = scenarioFromJson(forward, i1024.scenario.baseDir);
    Scenario uncalibrated = i1024.scenario;
    uncalibrated.calibration.workspaceBytes = fromTraining.factors.workspaceBytes;
    uncalibrated.calibration.present = true;
    QCOMPARE(estimate(crossed).ranks.at(0).allocatedBytes, estimate(uncalibrated).ranks.at(0).allocatedBytes);
}

// A snapshot recorded without stacks (torch.cuda.memory._record_memory_history(stacks=...) off, or frames
// dropped to keep the file small) says only sizes and lifetimes. Wedsonlin's two fp32 training traces with
// every frame dropped: at 4 x 256 tokens the model's h x h and h x f matrices have the sizes of its b·s·h and
// b·s·f activations (4 x 256 = 1,024 = h), and by size alone the gradients' pool took 1.6 GiB of activations,
// which put the calibrated plan 14.5% under the run it was fitted on. The recording shows those tensors made
// and freed before the next Optimizer.step region began, which no gradient, weight or optimizer state is;
// and a cuBLAS workspace by its size is one the recording never saw freed.
void TestAttribution::framelessRunsByLifetime() {
    struct Frameless {
        Scenario scenario;
        Trace trace;
        TraceSummary summary;
        std::unique_ptr<TraceIndex> index;
    };
    auto frameless = [](const char* scenario, const char* trace) {
        const Run run = loadRun(scenario, trace);
        auto f = std::make_unique<Frameless>();
        f->scenario = run.scenario;
        f->trace = run.trace->trace;
        f->trace.stacks.resize(1); // index 0: no stack
        for (DeviceTrace& d : f->trace.devices)
            std::fill(d.stack.begin(), d.stack.end(), 0u);
        f->summary = summarize(f->trace);
        f->index = std::make_unique<TraceIndex>(f->trace.devices.at(0), f->summary.devices.at(0));
        return f;
    };
    const auto t128 =
        frameless("cs336-medium-128-training", "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle");
    const auto t256 =
        frameless("cs336-medium-256-training", "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle");
    const AttributionRules rules = AttributionRules::pytorchDefaults();
    // At the 256-token run's peak (its loss: weights and AdamW's m and v, 12 bytes per parameter of
    // MEASURED.md's 423,183,360; the gradients set to None before the recording), one gradient-sized tensor
    // left: the logits (4 x 256 x 10,000 x 4 bytes, the embedding's V x h x 4), which the loop holds through
    // the step as a gradient is held; neither lifetime nor size tells them apart.
    const Attribution a =
        attribute(t256->trace, *t256->index, t256->index->peakAfter(), rules, &t256->scenario);
    QCOMPARE(a.total, 9103544320LL);
    QCOMPARE(a.of(MeasuredCategory::Gradients), 4LL * 256 * 10000 * 4);
    const double state =
        static_cast<double>(a.of(MeasuredCategory::Weights) + a.of(MeasuredCategory::OptimizerStates));
    QVERIFY2(std::abs(state / (12.0 * 423183360) - 1) <= 0.01, qPrintable(QString::number(state)));
    // One allocation coloured on its own (a range of the timeline) says the same of a b·s·h activation of
    // the h x h matrices' size: not a weight.
    std::size_t activations = 0;
    for (const AttributedAllocation& p : a.allocations)
        if (p.allocation.size == 4LL * 256 * 1024 * 4 && p.category == MeasuredCategory::Unattributed) {
            QCOMPARE(categoryOf(t256->trace, *t256->index, p.allocation, rules, &t256->scenario),
                     MeasuredCategory::Unattributed);
            ++activations;
        }
    QVERIFY(activations > 0);
    // Calibrated on both, each run reproduced within 2%, as with its frames.
    const CalibrationResult cal = fitOwn({{&t128->scenario, &t128->trace, t128->index.get(), "128"},
                                          {&t256->scenario, &t256->trace, t256->index.get(), "256"}},
                                         rules);
    QCOMPARE(cal.runs.size(), size_t(2));
    // The 1,024-token step under bf16 autocast: 115 of its b·s·f activations (4 x 1,024 x 4,096 x 2 bytes)
    // have the Hopper cuBLAS workspace's size, 32 MiB, and are freed in the backward, which no workspace is:
    // its workspaces are the A100's two of 8,519,680 bytes, and calibrated alone it gets the factors it gets
    // with its frames.
    const auto t1024 = frameless("cs336-medium-1024-training-bf16-autocast",
                                 "cs336_Wedsonlin_medium_1024_training_memory_snapshot.pickle");
    const Attribution at1024 =
        attribute(t1024->trace, *t1024->index, t1024->index->peakAfter(), rules, &t1024->scenario);
    QCOMPARE(at1024.of(MeasuredCategory::Workspaces), 2LL * 8519680);
    const Run framed = mediumTraining(1024);
    const CalibrationResult withFrames = fitOwn({inputOf(framed, "1024")}, rules);
    const CalibrationResult without =
        fitOwn({{&t1024->scenario, &t1024->trace, t1024->index.get(), "1024"}}, rules);
    // (Within 0.5%: without frames one 16 MiB tensor of the 23 GiB at its peak is placed otherwise.)
    QVERIFY2(std::abs(without.factors.linear / withFrames.factors.linear - 1) <= 0.005,
             qPrintable(
                 QStringLiteral("%1 against %2").arg(without.factors.linear).arg(withFrames.factors.linear)));
    QCOMPARE(without.factors.quadratic, withFrames.factors.quadratic);
    QCOMPARE(without.factors.backwardScratchScores, withFrames.factors.backwardScratchScores);
    for (const CalibrationRun& r : cal.runs)
        QVERIFY2(relative(r.after, r.measured) <= 0.02,
                 qPrintable(
                     QStringLiteral("%1: %2 against %3").arg(r.trace.c_str()).arg(r.after).arg(r.measured)));
}

// The allocator's overhead a calibration measures: a run's reserved at its most over its allocated at its
// most, less one, which the plan then reserves beyond its tensors in place of its 3%.
void TestAttribution::calibrationLearnsTheAllocatorsOverhead() {
    const Run run =
        loadRun("cs336-medium-256-training", "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle");
    const DeviceSummary& d = run.trace->summary.devices.at(0);
    // Its segments are the snapshot's (the recording has no segment events): reserved holds throughout.
    QCOMPARE(d.peakReserved, d.finalReserved);
    const CalibrationResult cal = calibrate({inputOf(run, "256")}, AttributionRules::pytorchDefaults());
    const double share = static_cast<double>(d.peakReserved) / static_cast<double>(d.peakAllocated) - 1;
    QCOMPARE(cal.factors.allocatorOverhead, share);
    QVERIFY(share > 0.017 && share < 0.018); // 9,265,217,536 bytes reserved, 9,103,544,320 allocated at most
    // Kept in the scenario and read back.
    json doc = run.scenario.document;
    doc["calibration"] = {{"factors", calibrationFactorsToJson(cal.factors)}};
    QCOMPARE(scenarioFromJson(doc, run.scenario.baseDir).calibration.allocatorOverhead, share);
    // By hand: a plain-PyTorch step on one GPU reserves its allocated peak times 1 + the share, where the
    // uncalibrated plan reserves 3% more.
    doc["calibration"] = {{"factors", {{"allocator_overhead_fraction", 0.1}, {"measured_on", "training"}}}};
    const Estimate withShare = estimate(scenarioFromJson(doc, run.scenario.baseDir));
    QVERIFY(std::abs(withShare.reservedPeakBytes - 1.1 * withShare.allocatedPeakBytes) < 1);
    const Estimate plain = estimate(run.scenario);
    QVERIFY(std::abs(plain.reservedPeakBytes - 1.03 * plain.allocatedPeakBytes) < 1);
    // Measured on forward-only runs, it is not a training step's: not applied.
    doc["calibration"]["factors"]["measured_on"] = "inference";
    const Estimate other = estimate(scenarioFromJson(doc, run.scenario.baseDir));
    QVERIFY(std::abs(other.reservedPeakBytes - 1.03 * other.allocatedPeakBytes) < 1);
    doc["calibration"]["factors"]["allocator_overhead_fraction"] = 11;
    QCOMPARE(refusedAt(doc, run.scenario.baseDir),
             QStringLiteral("calibration.factors.allocator_overhead_fraction")); // a share of 1,100%
}

// Calibrate, then ask what-if: the plain medium-model scenario calibrated on Wedsonlin's 128- and 256-token
// fp32 steps, or on its two forwards without autograd (what a user who planned CS336's code as plain
// PyTorch would do), then planned at 2 to 16 times
// the length, at other micro-batches and under bf16 autocast, against the cs336_basics profile read from that
// code, uncalibrated, which plans the traces of this code at 128 to 1,024 tokens, fp32 and autocast, within
// 0.002% (tst_cs336). The issue this answers had the same calibration 25% and 56% over at 512 and 1,024
// tokens under autocast. When first run: within 0.2% everywhere here (shorter sequences, whose peak is the
// optimizer step, within 1.8%).
void TestAttribution::calibratedWhatIfsFollowTheCodesProfile() {
    const auto rules = AttributionRules::pytorchDefaults();
    const Run t128 = mediumTraining(128), t256 = mediumTraining(256);
    const Run f128 =
        loadRun("cs336-medium-128-inference", "cs336_Wedsonlin_medium_128_inference_memory_snapshot.pickle");
    const Run f256 =
        loadRun("cs336-medium-256-inference", "cs336_Wedsonlin_medium_256_inference_memory_snapshot.pickle");
    const std::vector<CalibrationInput> steps = {inputOf(t128, "128"), inputOf(t256, "256")};
    const std::vector<CalibrationInput> forwards = {inputOf(f128, "128"), inputOf(f256, "256")};
    // Fitted against the code's tables (calibrate's default where the stacks name them), and against the
    // plain profile's own (`calibrate --own-profile`), whose fitted factors carry through its own tables:
    // within 1% and 2% (1.8% when first run: under autocast, which the fp32 runs tell the plain tables less
    // of); the forwards without autograd (their two traces) within 1% (0.3%).
    struct Fit {
        const Run& run;
        CalibrationResult cal;
        double bound;
    };
    const Fit fits[] = {{t128, calibrate(steps, rules), 0.01},
                        {t128, fitOwn(steps, rules), 0.02},
                        {f128, calibrate(forwards, rules), 0.01}};
    for (const Fit& fit : fits) {
        const bool training = fit.run.scenario.mode == Mode::Training;
        const char* const section = training ? "training" : "inference";
        json calibrated = fit.run.scenario.document;
        calibrated["calibration"] = {{"factors", calibrationFactorsToJson(fit.cal.factors)},
                                     {"runs", json::array()}};
        double worst = 0;
        int planned = 0;
        for (const int tokens : {512, 1024, 2048, 4096})
            for (const int batch : {1, 4, 16})
                for (const bool autocast : {false, true}) {
                    json doc = calibrated;
                    doc[section][training ? "sequence_length" : "context_length"] = tokens;
                    doc[section][training ? "micro_batch_size" : "batch_size"] = batch;
                    if (autocast)
                        doc[section]["autocast"] = "bf16";
                    const Scenario plan = scenarioFromJson(doc, fit.run.scenario.baseDir);
                    json codeDoc = doc;
                    codeDoc.erase("calibration");
                    const std::optional<Scenario> code = scenarioWithFramework(
                        scenarioFromJson(codeDoc, fit.run.scenario.baseDir), Framework::Cs336Basics);
                    QVERIFY(code.has_value());
                    const double off =
                        estimatePeak(plan).allocatedPeakBytes / estimatePeak(*code).allocatedPeakBytes - 1;
                    worst = std::max(worst, std::abs(off));
                    ++planned;
                    QVERIFY2(std::abs(off) <= fit.bound, qPrintable(QStringLiteral("%1: %2 x %3%4: %5%")
                                                                        .arg(QString::fromLatin1(section))
                                                                        .arg(batch)
                                                                        .arg(tokens)
                                                                        .arg(autocast ? " bf16 autocast" : "")
                                                                        .arg(100 * off, 0, 'f', 2)));
                }
        QCOMPARE(planned, 24);
        qInfo().noquote() << QStringLiteral("%1: worst %2% (bound %3%)")
                                 .arg(QString::fromLatin1(section))
                                 .arg(100 * worst, 0, 'f', 2)
                                 .arg(100 * fit.bound);
    }
}

// A profile that names its moments (cs336_basics) calibrated on one run and planned at another length: the
// calibration reads the plan at its own largest moment and scales each moment, and reserved is the
// allocator's replay of the plan's shape plus what the run reserved beyond the replay of its own. Wedsonlin's
// medium forward peaks in the MLP at 128 tokens and in the attention at 1,024, where each 256 MiB score
// tensor takes a segment of its own (11.4% beyond the tensors against 1.5% at 128). The expected figures
// are the traces' own peaks. Before: +8.7% allocated (the 128-token run's MLP read against the plan's
// attention, x1.21 on a profile that matched) and -8.8% reserved (the 128-token run's share).
void TestAttribution::calibratedProfileCarriesToOtherLengths() {
    const auto rules = AttributionRules::pytorchDefaults();
    struct Pair {
        const char *from, *fromTrace, *to, *toTrace;
        double allocated, reserved; // how far off the calibrated plan may be, each counter
        const char* dir = "cs336-basics/";
    };
    const Pair pairs[] = {
        {"cs336-medium-128-inference", "128_inference", "cs336-medium-1024-inference", "1024_inference",
         0.002, 0.005},
        {"cs336-medium-1024-inference", "1024_inference", "cs336-medium-128-inference", "128_inference",
         0.002, 0.005},
        // A step at 8x the length under autocast, from an fp32 one: the scores' factor measured in fp32 is
        // not applied in bf16 (scoresFactorKeepsToItsDtype).
        {"cs336-medium-128-training", "128_training", "cs336-medium-1024-training-bf16-autocast",
         "1024_training", 0.002, 0.005},
        // The same code planned as plain PyTorch: the calibration scales the plain plan's tensors to the
        // run's and replays the code the run's stacks name, cs336_basics', for the allocator's cache
        // (Calibration::code). With the cache a share of the tensors it was 8.9% under at 1,024 tokens and
        // 9.7% over the reverse way.
        {"cs336-medium-128-inference", "128_inference", "cs336-medium-1024-inference", "1024_inference",
         0.002, 0.005, ""},
        {"cs336-medium-1024-inference", "1024_inference", "cs336-medium-128-inference", "128_inference",
         0.002, 0.005, ""},
    };
    for (const Pair& p : pairs) {
        const std::string dir = p.dir;
        const std::string traceFrom =
            std::string("cs336_Wedsonlin_medium_") + p.fromTrace + "_memory_snapshot.pickle";
        const std::string traceTo =
            std::string("cs336_Wedsonlin_medium_") + p.toTrace + "_memory_snapshot.pickle";
        const Run from = loadRun((dir + p.from).c_str(), traceFrom.c_str());
        const Run to = loadRun((dir + p.to).c_str(), traceTo.c_str());
        const CalibrationResult cal = calibrate({inputOf(from, p.from)}, rules);
        QVERIFY(cal.factors.replayedOverheadMeasured());
        // The code replayed is named only where it is not the scenario's own profile, and read back.
        QCOMPARE(cal.factors.code.has_value(), dir.empty());
        if (cal.factors.code) {
            QVERIFY(*cal.factors.code == Framework::Cs336Basics);
            json back = from.scenario.document;
            back["calibration"] = {{"factors", calibrationFactorsToJson(cal.factors)}};
            QVERIFY(scenarioFromJson(back, from.scenario.baseDir).calibration.code == Framework::Cs336Basics);
            back["calibration"]["factors"]["code"] = "cs336";
            QCOMPARE(refusedAt(back, from.scenario.baseDir), QStringLiteral("calibration.factors.code"));
        }
        // Calibrating the run reproduces it, both counters.
        QVERIFY2(relative(cal.runs.at(0).after, cal.runs.at(0).measured) <= 0.002, p.from);
        QVERIFY2(relative(cal.runs.at(0).reservedAfter, cal.runs.at(0).reservedMeasured) <= 0.002, p.from);
        json doc = to.scenario.document;
        doc["calibration"] = {{"factors", calibrationFactorsToJson(cal.factors)}, {"runs", json::array()}};
        const Estimate e = estimate(scenarioFromJson(doc, to.scenario.baseDir));
        const DeviceSummary& d = to.trace->summary.devices.at(0);
        const QString what =
            QStringLiteral("%1 from %2: allocated %3%, reserved %4%")
                .arg(QString::fromLatin1(p.to), QString::fromLatin1(p.from))
                .arg(100 * (e.allocatedPeakBytes / static_cast<double>(d.peakAllocated) - 1), 0, 'f', 2)
                .arg(100 * (e.reservedPeakBytes / static_cast<double>(d.peakReserved) - 1), 0, 'f', 2);
        qInfo().noquote() << what;
        QVERIFY2(relative(static_cast<std::int64_t>(e.allocatedPeakBytes), d.peakAllocated) <= p.allocated,
                 qPrintable(what));
        QVERIFY2(relative(static_cast<std::int64_t>(e.reservedPeakBytes), d.peakReserved) <= p.reserved,
                 qPrintable(what));
    }
    // The plain profile calibrated on cs336_basics' code replays that code only where the code can run the
    // scenario: with grouped-query attention (4 KV heads of 16) it cannot, and the plan reserves the runs'
    // share of its allocated peak (Calibration::allocatorOverhead), 1.5% for the 128-token forward.
    {
        const Scenario whatIf = loadScenarioFile(
            (test::measuredDir() + "cs336-medium-1024-inference-calibrated-from-128.headroom.json")
                .toStdString());
        json gqa = whatIf.document;
        gqa["model"]["num_key_value_heads"] = 4;
        const Scenario grouped = scenarioFromJson(gqa, whatIf.baseDir);
        QVERIFY(grouped.calibration.code == Framework::Cs336Basics && !cs336CanRun(grouped));
        const Estimate e = estimate(grouped);
        QVERIFY(std::abs(grouped.calibration.allocatorOverhead - 0.0154) < 0.0005);
        QVERIFY2(std::abs(e.reservedPeakBytes / e.allocatedPeakBytes - 1 -
                          grouped.calibration.allocatorOverhead) < 1e-6,
                 qPrintable(QString::number(e.reservedPeakBytes / e.allocatedPeakBytes - 1)));
        // MHA as shipped, the code replayed: the 1,024-token trace's 3,204,448,256 bytes reserved, 11.4%
        // beyond its tensors, within 0.5%.
        QVERIFY(cs336CanRun(whatIf));
        QVERIFY(relative(static_cast<std::int64_t>(estimate(whatIf).reservedPeakBytes), 3204448256LL) <=
                0.005);
    }
    // By hand: the factor is read back from the scenario, and a plan reserves its allocated peak plus what
    // the replay keeps beyond its own plus the share of the allocated peak (here 10%).
    const Run run = loadRun("cs336-basics/cs336-medium-1024-inference",
                            "cs336_Wedsonlin_medium_1024_inference_memory_snapshot.pickle");
    const Estimate plain = estimate(run.scenario);
    const StageEstimate& stage = plain.ranks.at(0);
    QVERIFY(stage.replayedReservedBytes > stage.replayedAllocatedBytes);
    json doc = run.scenario.document;
    // (A calibration's workspaces replace the plan's: the same 8 MiB + 128 KiB that this run measured.)
    doc["calibration"] = {{"factors",
                           {{"reserved_beyond_replay_fraction", 0.1},
                            {"measured_on", "inference"},
                            {"workspace_bytes", 8519680}}}};
    const Scenario withShare = scenarioFromJson(doc, run.scenario.baseDir);
    QCOMPARE(withShare.calibration.replayedOverhead, 0.1);
    const Estimate e = estimate(withShare);
    QCOMPARE(e.allocatedPeakBytes, plain.allocatedPeakBytes); // every other factor 1
    const double beyond = stage.replayedReservedBytes - stage.replayedAllocatedBytes;
    QVERIFY(std::abs(e.reservedPeakBytes - (1.1 * e.allocatedPeakBytes + beyond)) < 1);
    doc["calibration"]["factors"]["reserved_beyond_replay_fraction"] = -1.5;
    QCOMPARE(refusedAt(doc, run.scenario.baseDir),
             QStringLiteral("calibration.factors.reserved_beyond_replay_fraction")); // a share of -150%
}

// A scenario calibrated on a run it does not describe fits factors all the same, and a what-if then carries
// them: calibrate says so (CalibrationRun::mismatch; the CLI's warning, the JSON's `mismatch`, the window's
// message). Every shipped scenario on its own trace is reproduced within 2% and says nothing.
void TestAttribution::calibrationSaysWhenTheScenarioIsNotTheRun() {
    const auto rules = AttributionRules::pytorchDefaults();
    const std::pair<const char*, const char*> own[] = {
        {"cs336-medium-128-inference", "cs336_Wedsonlin_medium_128_inference_memory_snapshot.pickle"},
        {"cs336-medium-256-training", "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle"},
        {"cs336-medium-1024-training-bf16-autocast",
         "cs336_Wedsonlin_medium_1024_training_memory_snapshot.pickle"},
        {"cs336-small-32x256-no-optimizer", "cs336_MAGMA27_memory_snapshot.pickle"},
        {"cs336-small-gpt2vocab-1x64-compiled", "cs336_bcrafton_memory_snapshot.pickle"},
        {"cs336-xl-256-forward-zero-grad-after-bf16-autocast",
         "cs336_notHanmin_xl_256_forward_bf16_autocast_memory_snapshot.pickle"},
    };
    for (const auto& [scenario, trace] : own) {
        const Run run = loadRun(scenario, trace);
        const CalibrationResult r = fitOwn({inputOf(run, trace)}, rules);
        QVERIFY2(r.runs.at(0).mismatch.empty(), r.runs.at(0).mismatch.c_str());
        // Their factors, as the README gives them: x0.9 to x3.5 (bcrafton's compiled step the most: the
        // 147 MiB of Inductor's buffers no shape of the model explains fall on its layers' 54 MiB, since
        // its logits, x0.985 the plan's, are measured apart).
        for (const double f : {r.factors.linear, r.factors.quadratic})
            QVERIFY2(f >= 0.9 && f <= 3.55, qPrintable(QStringLiteral("%1: x%2").arg(scenario).arg(f)));
    }
    // The 128-token forward's scenario on the 1,024-token run of the same code and model: its weights are
    // the scenario's, and the fit puts eight times the tokens (and 64 times the scores) into what grows with
    // them, more than 4 times the plan's.
    {
        const Run run = loadRun("cs336-medium-128-inference",
                                "cs336_Wedsonlin_medium_1024_inference_memory_snapshot.pickle");
        const CalibrationResult r = fitOwn({inputOf(run, "1024")}, rules);
        QVERIFY(r.factors.linear > 4);
        const std::string& said = r.runs.at(0).mismatch;
        QVERIFY2(said.find("the scenario may not describe this run: what grows with the tokens is "
                           "fitted at x31.0") == 0 && // as the README quotes it
                     std::abs(static_cast<double>(r.runs.at(0).after) /
                                  static_cast<double>(r.runs.at(0).measured) -
                              1) <= 0.0005 &&
                     said.find("weights") == std::string::npos,
                 said.c_str());
        QVERIFY(calibrationToJson(r)["runs"][0].at("mismatch") == said);
        // Written into the calibrated scenario (as calibrate -o and the window write it), every plan read
        // from it says so, wherever the file is opened.
        json doc = json::parse(
            readTextFile((test::measuredDir() + "cs336-medium-128-inference.headroom.json").toStdString()));
        const json fitted = calibrationToJson(r);
        doc["calibration"] = {{"factors", fitted["factors"]}, {"runs", fitted["runs"]}};
        const Scenario calibrated = scenarioFromJson(doc, ".");
        QVERIFY(
            std::find(calibrated.warnings.begin(), calibrated.warnings.end(),
                      "calibration.runs[0]: " + said + " (its factors are in every figure of this plan)") !=
            calibrated.warnings.end());
        // What a file says there is cut to 2,000 bytes at a character's first byte (the warning is written
        // out as UTF-8 JSON); a run without it, or not an object, says nothing.
        // Two bytes a character after one: byte 2,000 continues the character that starts at 1,999.
        std::string longer(1, 'x');
        for (int i = 0; i < 1500; ++i)
            longer += "\u00e9";
        doc["calibration"]["runs"] = json::array({json::object({{"mismatch", longer}}), 3, json::object()});
        const Scenario cut = scenarioFromJson(doc, ".");
        const auto it = std::find_if(cut.warnings.begin(), cut.warnings.end(), [](const std::string& w) {
            return w.rfind("calibration.runs[", 0) == 0;
        });
        QVERIFY(it != cut.warnings.end() && it->rfind("calibration.runs[0]: x", 0) == 0);
        QCOMPARE(it->size(), std::string("calibration.runs[0]: ").size() + 1999 + 3 +
                                 std::string(" (its factors are in every figure of this plan)").size());
        QCOMPARE(std::count_if(cut.warnings.begin(), cut.warnings.end(),
                               [](const std::string& w) { return w.rfind("calibration.runs[", 0) == 0; }),
                 1L);
        (void)estimateToJson(cut, estimate(cut)).dump(-1, ' ', false, json::error_handler_t::strict);
    }
    // A forward's scenario on a training run of the same model: it stepped an optimizer (and its factors,
    // x6.2, are past four times the plan's). The 256-token training scenario on the 1,024-token autocast
    // run: x6.5 (the shipped traces on their own scenarios need x0.9 to x2.7).
    {
        const Run run = loadRun("cs336-medium-1024-inference",
                                "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle");
        const std::string said = fitOwn({inputOf(run, "128")}, rules).runs.at(0).mismatch;
        QVERIFY2(said.find("the run stepped an optimizer where the scenario plans a forward") !=
                     std::string::npos,
                 said.c_str());
        const Run longer = loadRun("cs336-medium-256-training",
                                   "cs336_Wedsonlin_medium_1024_training_memory_snapshot.pickle");
        const CalibrationResult r = fitOwn({inputOf(longer, "1024")}, rules);
        QVERIFY(r.factors.linear > 4);
        QVERIFY2(r.runs.at(0).mismatch.find("what grows with the tokens is fitted at x6.5") !=
                     std::string::npos,
                 r.runs.at(0).mismatch.c_str());
    }
    // The same scenario on DeComFL's run (zero-order federated fine-tuning of a transformers model,
    // tests/data/traces/NOTICES.txt): the medium model's weights are
    // 423,183,360 x 4 bytes (MEASURED.md), 1.58 GiB, and its peak holds far fewer tensors of their sizes.
    {
        const Run run = loadRun("cs336-medium-128-inference", "DeComFL_memory.pickle");
        const CalibrationResult r = fitOwn({inputOf(run, "DeComFL")}, rules);
        const std::string& said = r.runs.at(0).mismatch;
        QVERIFY2(said.find("of this model's weights where the scenario plans 1.58 GiB") != std::string::npos,
                 said.c_str());
        QVERIFY(
            std::abs(static_cast<double>(r.runs.at(0).after) / static_cast<double>(r.runs.at(0).measured) -
                     1) > 0.05);
        // As the README quotes them.
        QVERIFY2(said.find("holds 0.47 GiB of this model's weights") != std::string::npos &&
                     said.find("calibrated, the plan is +66.8%") != std::string::npos,
                 said.c_str());
    }
    // The 256-token run's own scenario with 8-bit Adam declared where the run stepped AdamW: no
    // implementation of AdamW is the matter here (each reproduces the run to 0.0%), the states' dtype is.
    // By hand: 8-bit Adam plans two 1-byte states a parameter, 2 x 423,183,360 bytes, 0.79 GiB; of the
    // run's fp32 states attribution finds those whose 4 x n bytes are a 1-byte state of some parameter of
    // 4 x n elements: each layer's eight of its four 1,024 x 1,024 matrices are the size of the 1-byte
    // states of its three 1,024 x 4,096 ones, six of them, so 6 x 24 x 4 MiB = 0.56 GiB. The calibrated plan
    // lands 3% over its own run, inside the 5% the rule above needs.
    {
        json doc = json::parse(
            readTextFile((test::measuredDir() + "cs336-medium-256-training.headroom.json").toStdString()));
        doc["training"]["optimizer"] = "adam8bit";
        const Run itsRun = loadRun("cs336-medium-256-training",
                                   "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle");
        const Scenario eightBit = scenarioFromJson(doc, ".");
        const CalibrationResult r =
            fitOwn({{&eightBit, &itsRun.trace->trace, itsRun.trace->indexes[0].get(), "256"}}, rules);
        const std::string& said = r.runs.at(0).mismatch;
        const double over =
            static_cast<double>(r.runs.at(0).after) / static_cast<double>(r.runs.at(0).measured) - 1;
        QVERIFY2(over > 0.02 && over < 0.05, qPrintable(QString::number(100 * over)));
        QVERIFY2(said.find("its peak holds 0.56 GiB of this optimizer's states where the scenario plans "
                           "0.79 GiB (another optimizer, or states of another dtype)") != std::string::npos,
                 said.c_str());
    }
}

// Every calibration calibrate returns is one a scenario holds: written as `calibrate -o` writes it, the file
// reads back. A fit beyond that is refused, naming the factor and the run, where calibrate wrote a file its
// own reader then refused ("calibration.factors.linear: must be between 0 and 1000, got 4240.5", found by
// calibrating generated scenarios on the shipped traces).
void TestAttribution::calibrationIsOneAScenarioHolds() {
    const auto rules = AttributionRules::pytorchDefaults();
    json doc = json::parse(
        readTextFile((test::measuredDir() + "cs336-medium-128-inference.headroom.json").toStdString()));
    doc.erase("x_measured");
    // Mismatched, within what a scenario holds: the 128-token forward on the 1,024-token forward (x31).
    {
        const Run run = loadRun("cs336-medium-128-inference",
                                "cs336_Wedsonlin_medium_1024_inference_memory_snapshot.pickle");
        json written = doc;
        const json fitted = calibrationToJson(fitOwn({inputOf(run, "1024")}, rules));
        written["calibration"] = {{"factors", fitted["factors"]}, {"runs", fitted["runs"]}};
        QCOMPARE(refusedAt(written), QString());
    }
    // One 64-token sequence's forward fitted to the 1,024-token training step of the same model. By hand:
    // the run held 17.6 GB of activations at its peak (16.4 GiB, the README's table), the forward plans a
    // layer's working set of about 64 x (4 x 1,024 + 3 x 4,096) x 4 bytes, 4.2 MB, and its 2.6 MB of logits
    // (64 x 10,000 x 4 bytes): over a thousand times what grows with the tokens.
    doc["inference"]["batch_size"] = 1;
    doc["inference"]["context_length"] = 64;
    const Scenario one = scenarioFromJson(doc, ".");
    const auto step = loadTrace(
        (test::dataDir() + "/traces/snapshots/cs336_Wedsonlin_medium_1024_training_memory_snapshot.pickle")
            .toStdString());
    QString where, why;
    try {
        (void)fitOwn({{&one, &step->trace, step->indexes[0].get(), "the 1,024-token step"}}, rules);
    } catch (const Error& e) {
        where = QString::fromStdString(e.where());
        why = QString::fromStdString(e.why());
    }
    QCOMPARE(where, QStringLiteral("calibration.factors.linear"));
    qInfo().noquote() << why;
    QVERIFY2(why.startsWith(
                 QStringLiteral("fitted to the 1,024-token step, what grows with the tokens would be x")),
             qPrintable(why));
    QVERIFY2(
        why.contains(QStringLiteral(" the plan's, beyond the x1000 a scenario can hold: the scenario does "
                                    "not describe this run: the run stepped an optimizer where the "
                                    "scenario plans a forward; nothing was calibrated")),
        qPrintable(why));
    bool ok = false;
    const double factor = why.section(QLatin1Char('x'), 1).section(QLatin1Char(' '), 0, 0).toDouble(&ok);
    QVERIFY2(ok && factor > 1000, qPrintable(why));
    QCOMPARE(static_cast<long>(factor), 4240L); // as the README quotes it (x4,240)
}

// Which framework's code made a run, from the files its stacks name, and the advice a plan with another
// profile gets. The CS336 traces' activations are allocated through cs336_basics/model.py and nn_utils.py
// (Wedsonlin's on Linux, MAGMA27's with Windows backslashes); notHanmin's XL model is the student's own
// (cs336_systems/adapters.py): no profile's code.
void TestAttribution::codeOriginFromTheStacks() {
    const auto rules = AttributionRules::pytorchDefaults();
    struct Case {
        const char *scenario, *trace;
        bool found;
        const char* file; // the code's file that holds the most of the peak's bytes
    };
    // The 1,024-token forward peaks inside the hand-written softmax (nn_utils.py), whose x - max, exp and
    // quotient outweigh the scores model.py made (every one 256 MiB: the advice named the largest
    // allocation's file, "(among others)", before it named the one that holds the most); MAGMA27's loss peak
    // holds the model's activations.
    const Case cases[] = {
        {"cs336-medium-1024-inference", "cs336_Wedsonlin_medium_1024_inference_memory_snapshot.pickle", true,
         "/cs336_basics/nn_utils.py"},
        {"cs336-small-32x256-no-optimizer", "cs336_MAGMA27_memory_snapshot.pickle", true,
         "\\cs336_basics\\model.py"},
        {"cs336-xl-256-forward-zero-grad-after", "cs336_notHanmin_xl_256_forward_memory_snapshot.pickle",
         false, ""},
    };
    for (const Case& k : cases) {
        const Run run = loadRun(k.scenario, k.trace);
        const Estimate est = estimate(run.scenario);
        const Comparison c =
            compareAtPeak(run.scenario, est, run.trace->trace, *run.trace->indexes[0], rules);
        QCOMPARE(c.code.found, k.found);
        QCOMPARE(c.planned, Framework::PyTorch);
        if (!k.found) {
            QVERIFY(c.advice().empty());
            continue;
        }
        QCOMPARE(c.code.framework, Framework::Cs336Basics);
        QVERIFY2(QString::fromStdString(c.code.file).endsWith(QString::fromUtf8(k.file)),
                 c.code.file.c_str());
        // Every stacked byte at the peak is the model's but the script's own scalars (4 bytes in MAGMA27's;
        // the weights were allocated without a stack).
        QVERIFY(c.code.bytes <= c.code.stacked && c.code.stacked - c.code.bytes < 1024);
        const std::string advice = c.advice();
        QVERIFY2(advice.find("framework \"cs336_basics\" plans this trace's code") == 0 &&
                     advice.find("as pytorch") != std::string::npos &&
                     advice.find("allocated through its source, the most through " + c.code.file) !=
                         std::string::npos,
                 advice.c_str());
        QVERIFY(comparisonToJson(c, k.trace).at("code").at("framework") == "cs336_basics");
        // Planned with that profile: nothing to say.
        QVERIFY(codeOriginAdvice(c.code, Framework::Cs336Basics).empty());
        // Calibrating the plain plan on it says the same beside the run.
        QCOMPARE(calibrate({inputOf(run, k.trace)}, rules).runs.at(0).advice, advice);
        // The same scenario read again with the code's profile goes beside it (core/io/codeprofile.h):
        // the 1,024-token forward, 11.7% under as plain PyTorch, within 0.5% of the trace's peaks
        // (MEASURED.md and the trace's segments: 2,877,435,904 bytes allocated, 3,204,448,256 reserved);
        // MAGMA27's scenario runs no optimizer, as the profile plans it too.
        Comparison with = c;
        planWithCodeProfile(with, run.scenario);
        QVERIFY(with.codePlanAllocated > 0 && with.codePlanReserved >= with.codePlanAllocated);
        const std::string said = with.advice();
        QVERIFY2(said.find(advice + "; planned with it, ") == 0, said.c_str());
        // calibrate says the same beside the run when its caller plans the code's profile (as the CLI does).
        QCOMPARE(calibrate({inputOf(run, k.trace)}, rules, planWithCodeProfile).runs.at(0).advice, said);
        const json code = comparisonToJson(with, k.trace).at("code").at("planned_with_code_profile");
        QCOMPARE(code.at("allocated_bytes").get<double>(), std::round(with.codePlanAllocated));
        if (std::string(k.scenario) == "cs336-medium-1024-inference") {
            QVERIFY2(relative(static_cast<std::int64_t>(with.codePlanAllocated), 2877435904LL) <= 0.005 &&
                         relative(static_cast<std::int64_t>(with.codePlanReserved), 3204448256LL) <= 0.005,
                     said.c_str());
            QVERIFY2(said.find("planned with it, 2.68 GiB allocated (+0.0%) and 2.98 GiB reserved (-0.1%)") !=
                         std::string::npos,
                     said.c_str());
        }
        // A calibrated scenario's factors were measured against its own profile: the code's profile plans
        // it uncalibrated (the shipped what-if, the plain profile calibrated on the 128-token forward and
        // asked at 1,024 tokens: the same figures as the uncalibrated file's).
        if (std::string(k.scenario) == "cs336-medium-1024-inference") {
            const Run calibrated = loadRun("cs336-medium-1024-inference-calibrated-from-128", k.trace);
            QVERIFY(calibrated.scenario.calibration.present &&
                    calibrated.scenario.calibration.code == Framework::Cs336Basics);
            Comparison fromCalibrated = compareAtPeak(calibrated.scenario, estimate(calibrated.scenario),
                                                      run.trace->trace, *run.trace->indexes[0], rules);
            // The calibrated plain plan itself: the run's peaks, allocated and reserved, within 0.5%.
            QVERIFY(std::abs(fromCalibrated.relativeError()) <= 0.005 &&
                    std::abs(fromCalibrated.reservedError()) <= 0.005);
            planWithCodeProfile(fromCalibrated, calibrated.scenario);
            QCOMPARE(fromCalibrated.codePlanAllocated, with.codePlanAllocated);
            QCOMPARE(fromCalibrated.codePlanReserved, with.codePlanReserved);
            // A plain scenario that asks for the last position's logits (inference.logits, which
            // cs336_basics refuses: its model returns them all) is planned with the code's profile as the
            // code runs, the same figures.
            json last = run.scenario.document;
            last["inference"]["logits"] = "last";
            Comparison fromLast = c;
            planWithCodeProfile(fromLast, scenarioFromJson(last, run.scenario.baseDir));
            QCOMPARE(fromLast.codePlanAllocated, with.codePlanAllocated);
            QCOMPARE(fromLast.codePlanReserved, with.codePlanReserved);
        }
        // A scenario the profile cannot plan (two GPUs with tensor parallelism): the advice alone.
        json twoGpus = run.scenario.document;
        twoGpus["cluster"]["num_gpus"] = 2;
        twoGpus["cluster"]["tensor_parallel"] = 2;
        const Scenario split = scenarioFromJson(twoGpus, run.scenario.baseDir);
        QVERIFY(!scenarioWithFramework(split, Framework::Cs336Basics));
        Comparison alone = c;
        planWithCodeProfile(alone, split);
        QVERIFY(alone.codePlanAllocated < 0 && alone.advice() == advice);
    }
    // By hand: DeepSpeed's engine around transformers' modules is DeepSpeed's (the outer framework that plans
    // its own code decides); transformers alone is Hugging Face's; a directory that merely contains a
    // framework's name is none; a quarter of the stacked bytes is the least that counts.
    auto originOf = [&](const std::string& events) {
        const Trace t = readTrace(R"({"segments": [], "device_traces": [[)" + events + "]]}");
        const TraceSummary s = summarize(t);
        const TraceIndex index(t.devices.at(0), s.devices.at(0));
        return codeOrigin(t, attribute(t, index, index.events() - 1, rules));
    };
    auto alloc = [](int addr, int size, const std::string& frames) {
        return R"({"action": "alloc", "addr": )" + std::to_string(addr) + R"(, "size": )" +
               std::to_string(size) + R"(, "time_us": 1, "frames": [)" + frames + "]}";
    };
    const std::string hf =
        R"({"name": "forward", "filename": "/v/site-packages/transformers/models/llama/modeling_llama.py", "line": 5})";
    const std::string ds =
        R"({"name": "forward", "filename": "/v/site-packages/deepspeed/runtime/engine.py", "line": 9})";
    const std::string mine =
        R"({"name": "forward", "filename": "/home/u/mytransformers/model.py", "line": 3})";
    const CodeOrigin both = originOf(alloc(4096, 1000, hf + "," + ds));
    QVERIFY(both.found && both.framework == Framework::DeepSpeed);
    const CodeOrigin alone = originOf(alloc(4096, 1000, hf));
    QVERIFY(alone.found && alone.framework == Framework::HuggingFace);
    QVERIFY(!originOf(alloc(4096, 1000, mine)).found);
    QVERIFY(originOf(alloc(4096, 250, hf) + "," + alloc(8192, 750, mine)).found);
    QVERIFY(!originOf(alloc(4096, 249, hf) + "," + alloc(8192, 751, mine)).found);
}

void TestAttribution::scoresFactorKeepsToItsDtype() {
    // Calibrated on the fp32 128-token run, the scores' factor (x2: the fp32 softmax's two kept copies) is
    // not applied under bf16 autocast, where the softmax stays fp32 and the next matmul keeps a bf16 copy
    // instead; the tokens-linear factor is. What is applied there is what the run's operators say of
    // autocast (its trace has C++ frames: exp's output and the division the next einsum saves, 4 + 2 bytes
    // a score, what the profile plans under autocast): x1. Without that reading the estimate says the
    // factor is not applied.
    const auto rules = AttributionRules::pytorchDefaults();
    const Run t128 = mediumTraining(128);
    const CalibrationResult cal = fitOwn({inputOf(t128, "128")}, rules);
    json doc = json::parse(readTextFile(
        (test::measuredDir() + "cs336-medium-1024-training-bf16-autocast.headroom.json").toStdString()));
    const Scenario plain = scenarioFromJson(doc);
    doc["calibration"] = {{"factors", calibrationFactorsToJson(cal.factors)}, {"runs", json::array()}};
    const Scenario calibrated = scenarioFromJson(doc);
    QCOMPARE(calibrated.calibration.quadraticActivationBytes, 4.0);
    QCOMPARE(calibrated.calibration.quadraticFor(2).value_or(0), 1.0);
    doc["calibration"]["factors"].erase("quadratic_by_activation_bytes");
    const Scenario unread = scenarioFromJson(doc);
    QVERIFY(!unread.calibration.quadraticFor(2));
    QVERIFY(std::any_of(unread.warnings.begin(), unread.warnings.end(), [](const std::string& w) {
        return w.find("calibration.factors.quadratic") != std::string::npos &&
               w.find("not applied") != std::string::npos;
    }));
    QCOMPARE(estimate(unread).perGpu[Category::AttentionScores],
             estimate(plain).perGpu[Category::AttentionScores]);
    const Estimate e0 = estimate(plain), e1 = estimate(calibrated);
    QCOMPARE(e1.perGpu[Category::AttentionScores], e0.perGpu[Category::AttentionScores]);
    QVERIFY(e1.perGpu[Category::Activations] > e0.perGpu[Category::Activations]);
    // What the rule rests on: the tokens-linear factor (what this code keeps per token beyond the profile's
    // plan) carries over between dtypes far better than the scores' does. Calibrated on the 1,024-token
    // autocast run alone they are 1.25 and 1, against 1.26 and 2 on the 128-token fp32 run: the linear
    // factors within the issue's 10% bound for extrapolating to autocast, the scores' twice apart (the
    // fp32 softmax's two copies against one fp32 and one bf16). (The linear factors were 1.29 and 1.28
    // until the profile planned autocast's casts once per matmul, which this code keeps too; 1.16 and
    // 1.12 until the attention backward, where that run peaks, was measured apart from the loss; 1.28 on
    // the fp32 run until its loss's logits were, Calibration::logits.)
    const Run t1024 = mediumTraining(1024);
    const CalibrationResult cal1024 = fitOwn({inputOf(t1024, "1024")}, rules);
    QCOMPARE(cal1024.factors.quadraticActivationBytes, 2.0);
    const QString factors = QStringLiteral("linear %1 vs %2, quadratic %3 vs %4")
                                .arg(cal1024.factors.linear)
                                .arg(cal.factors.linear)
                                .arg(cal1024.factors.quadratic)
                                .arg(cal.factors.quadratic);
    qInfo().noquote() << factors;
    QVERIFY2(std::abs(cal1024.factors.linear / cal.factors.linear - 1) <= 0.10, qPrintable(factors));
    QVERIFY2(cal.factors.quadratic / cal1024.factors.quadratic >= 1.5, qPrintable(factors));
    // The same factors on an fp32 scenario do apply: twice the scores.
    json fp32 = json::parse(
        readTextFile((test::measuredDir() + "cs336-medium-256-training.headroom.json").toStdString()));
    const Scenario p32 = scenarioFromJson(fp32);
    fp32["calibration"] = doc["calibration"];
    const Scenario c32 = scenarioFromJson(fp32);
    QVERIFY(c32.warnings.size() == p32.warnings.size());
    QCOMPARE(estimate(c32).perGpu[Category::AttentionScores],
             2 * estimate(p32).perGpu[Category::AttentionScores]);
}

void TestAttribution::calibrationWhateverTheOptimizer() {
    // The 128-token run used PyTorch's default AdamW; a user who declares another implementation still gets
    // the run back: calibration measures the step's scratch and replaces the modelled one, rather than
    // fitting an excess over it (which could never take a foreach estimate's copies back down: +21%).
    const auto rules = AttributionRules::pytorchDefaults();
    const Run run = mediumTraining(128);
    for (const char* impl : {"for_loop", "foreach", "fused"}) {
        json doc = run.scenario.document;
        doc["training"]["optimizer_implementation"] = impl;
        const Scenario sc = scenarioFromJson(doc, run.scenario.baseDir);
        const CalibrationResult cal =
            calibrate({{&sc, &run.trace->trace, run.trace->indexes[0].get(), impl}}, rules);
        QCOMPARE(cal.runs.at(0).measured, 7013335044LL);
        QVERIFY2(
            relative(cal.runs[0].after, cal.runs[0].measured) <= 0.02,
            qPrintable(
                QStringLiteral("%1: %2 vs %3").arg(impl).arg(cal.runs[0].after).arg(cal.runs[0].measured)));
    }
}

// What a step that goes one parameter at a time holds follows the model's widest matrix, not its parameter
// count (torch/optim/adamw.py, _single_tensor_adamw: each parameter's temporaries are freed before the next
// one's), and the logits a caller keeps through the step follow the tokens: calibration measures both in
// those units, so that a model of another size and length is planned with its own.
void TestAttribution::stepScratchFollowsTheLargestParameter() {
    const auto rules = AttributionRules::pytorchDefaults();
    const Run run = mediumTraining(128);
    const CalibrationResult cal = calibrate({inputOf(run, "128")}, rules);
    // At the step's peak, besides the states: five fp32 tensors of the embedding (10,000 x 1,024 x 4 bytes,
    // the model's widest matrix) and the loss's fp32 logits (4 x 128 x 10,000 x 4 bytes), which the
    // benchmark still holds: one copy in the activation dtype.
    auto count = [](const TensorTable& t, const std::string& shape, std::int64_t each) {
        std::size_t n = 0;
        for (const TensorRow& r : t.rows)
            n += r.shape == shape && r.each == each ? r.count : 0;
        return n;
    };
    QCOMPARE(count(cal.runs.at(0).atStep, "p", 10000LL * 1024 * 4), size_t(5));
    QCOMPARE(count(cal.runs.at(0).atStep, "b·s·V", 4LL * 128 * 10000 * 4), size_t(1));
    QCOMPARE(qRound(100 * cal.factors.stepScratchLargestTensors), 500);
    QCOMPARE(qRound(100 * cal.factors.heldLogitCopies), 100);
    // The 2.7B model at 4 x 512 (examples/measured/cs336-basics), planned as plain PyTorch with these
    // factors: its widest matrix is an FFN weight, 2,560 x 10,240 = 26,214,400 elements (the embedding has
    // 25,600,000), so the step holds 5 x 26,214,400 x 4 bytes of scratch beside 4 x 512 x 10,000 x 4 bytes of
    // logits. Per parameter (0.48 bytes measured on the medium model) it would have been 1.3 GB.
    json doc = json::parse(readTextFile(
        (test::measuredDir() + "cs336-basics/cs336-2.7b-512-step-hopper.headroom.json").toStdString()));
    doc["training"]["framework"] = "pytorch";
    Scenario big = scenarioFromJson(doc);
    big.calibration = cal.factors;
    double temporaries = 0, logits = 0;
    for (const TimelinePoint& t : phaseTimeline(big, 0, 2))
        if (t.phase == Phase::Optimizer) {
            temporaries = std::max(temporaries, t.bytes[Category::Temporaries]);
            logits = std::max(logits, t.bytes[Category::Logits]);
        }
    QVERIFY2(std::abs(temporaries / (5.0 * 26214400 * 4) - 1) <= 0.001,
             qPrintable(QString::number(temporaries)));
    QVERIFY2(std::abs(logits / (4.0 * 512 * 10000 * 4) - 1) <= 0.001, qPrintable(QString::number(logits)));
    // A step that holds a whole state's worth or more (bcrafton's compiled step, 4.1 bytes a parameter
    // against 4-byte states) is measured per parameter.
    const Run compiled =
        loadRun("cs336-small-gpt2vocab-1x64-compiled", "cs336_bcrafton_memory_snapshot.pickle");
    const CalibrationResult c2 = calibrate({inputOf(compiled, "c")}, rules);
    QVERIFY2(c2.factors.stepScratchBytesPerParameter >= 2,
             qPrintable(QString::number(c2.factors.stepScratchBytesPerParameter)));
    QCOMPARE(c2.factors.stepScratchLargestTensors, -1.0);
}

// Runs of two activation dtypes calibrated together (what a user who has an fp32 run and an autocast one
// does): the scores' factor is measured per dtype, x2 in fp32 (the hand-written softmax's two fp32 outputs)
// and far less under autocast; one factor for both put each run 12% under. A run whose score-sized tensors
// are ambiguous at its length (256 tokens: 16 MiB is a score tensor and an FFN output), beside a run of
// another dtype whose sizes cannot tell them apart, takes for its dtype's scores what the tokens' factor
// leaves.
void TestAttribution::calibrationAcrossDtypes() {
    const auto rules = AttributionRules::pytorchDefaults();
    const Run t128 = mediumTraining(128);
    const Run t256 = mediumTraining(256);
    const Run a512 = mediumTraining(512);
    const Run a1024 = mediumTraining(1024);
    // Against each run's own trace, with the calibrated plan (as compare counts it).
    auto off = [&](const Calibration& c, const Run& r) {
        Scenario sc = r.scenario;
        sc.calibration = c;
        const Comparison cmp = compareAtPeak(sc, estimate(sc), r.trace->trace, *r.trace->indexes[0],
                                             AttributionRules::pytorchDefaults());
        return static_cast<double>(cmp.estimatedTotal) / static_cast<double>(cmp.measured.total) - 1;
    };
    const CalibrationResult mixed = fitOwn({inputOf(t128, "128"), inputOf(a512, "512 autocast")}, rules);
    // fp32: the 128-token run's 48 score tensors of 4 MiB, two a layer where one is planned (as above).
    QCOMPARE(mixed.factors.quadraticFor(4).value_or(0), 2.0);
    // Under autocast, what the tokens' factor leaves of the 512-token run: far fewer copies than in fp32.
    const double q2 = mixed.factors.quadraticFor(2).value_or(0);
    qInfo().noquote() << "scores' factor under autocast:" << q2;
    QVERIFY2(q2 > 0 && 2.0 / q2 >= 1.5, qPrintable(QString::number(q2)));
    for (const CalibrationRun& r : mixed.runs)
        QVERIFY2(relative(r.after, r.measured) <= 0.02, r.trace.c_str());
    QVERIFY2(std::abs(off(mixed.factors, t256)) <= 0.05,
             qPrintable(QString::number(off(mixed.factors, t256))));
    QVERIFY2(std::abs(off(mixed.factors, a1024)) <= 0.10,
             qPrintable(QString::number(off(mixed.factors, a1024))));
    // The ambiguous fp32 run beside an autocast one: both reproduced.
    const CalibrationResult other = fitOwn({inputOf(t256, "256"), inputOf(a1024, "1024 autocast")}, rules);
    for (const CalibrationRun& r : other.runs)
        QVERIFY2(relative(r.after, r.measured) <= 0.02, r.trace.c_str());
    QVERIFY(other.factors.quadraticFor(4).has_value() && other.factors.quadraticFor(2).has_value());
    // Either factor written out and read back: the same plan.
    json doc = t256.scenario.document;
    doc["calibration"] = {{"factors", calibrationFactorsToJson(mixed.factors)}};
    QVERIFY(doc["calibration"]["factors"].contains("quadratic_by_activation_bytes"));
    const Scenario back = scenarioFromJson(doc, t256.scenario.baseDir);
    QCOMPARE(back.calibration.quadraticFor(4).value_or(0), mixed.factors.quadraticFor(4).value_or(-1));
    QCOMPARE(back.calibration.quadraticFor(2).value_or(0), mixed.factors.quadraticFor(2).value_or(-1));
    QVERIFY(back.warnings.size() == t256.scenario.warnings.size()); // its dtype was measured: no warning
}

// Eager attention's backward, which the loss peak does not show: cs336_basics' softmax (nn_utils.py: x minus
// its max, exp, sum, division) has, as the last layer's backward begins, five fp32 gradients of the scores'
// size alive and has freed one of the saved score tensors: four more than at the loss peak. At 128 tokens
// one is 4 x 16 x 128 x 128 x 4 bytes = 4 MiB, so 16 MiB, over the two any softmax's backward holds
// (_softmax_backward_data's incoming and outgoing gradients, 8 MiB): x2. The 256-token run cannot tell: its
// 16 MiB fp32 scores are the size of its fp32 FFN outputs (4 x 256 x 4,096 x 4).
void TestAttribution::backwardScoresMeasured() {
    const auto rules = AttributionRules::pytorchDefaults();
    const Run t128 = mediumTraining(128);
    const Run t256 = mediumTraining(256);
    const RunMeasurement m128 = measureRun(inputOf(t128, "128"), rules);
    QVERIFY(m128.backwardMeasured);
    QCOMPARE(m128.backwardScores, std::int64_t{16} << 20);
    QVERIFY(!measureRun(inputOf(t256, "256"), rules).backwardMeasured);
    const CalibrationResult cal = fitOwn({inputOf(t128, "128"), inputOf(t256, "256")}, rules);
    QCOMPARE(cal.factors.backwardScratchScores, 2.0);

    // The plan, uncalibrated: the two fp32 copies at 4 x 1,024 under autocast, 2 x 4 x 4 x 16 x 1,024^2 bytes
    // = 512 MiB where the last layer's backward begins; none under Megatron, whose fused softmax backward
    // writes over its incoming gradient.
    auto backwardTemporaries = [](const Scenario& sc) {
        double most = 0;
        for (const TimelinePoint& t : phaseTimeline(sc, 0, 2))
            if (t.phase == Phase::Backward && t.layerRunning)
                most = std::max(most, t.bytes[Category::Temporaries]);
        return most;
    };
    const Run a1024 = mediumTraining(1024);
    QCOMPARE(backwardTemporaries(a1024.scenario), 512.0 * 1024 * 1024);
    json doc = a1024.scenario.document;
    doc["training"]["framework"] = "megatron";
    QCOMPARE(backwardTemporaries(scenarioFromJson(doc, a1024.scenario.baseDir)), 0.0);

    // The 1,024-token run under autocast peaks where that backward begins, not at the loss: there its
    // softmax's five fp32 gradients (20 bytes a score) less the bf16 matmul output it has freed (2) are
    // 18 bytes a score beyond the loss, x2.25 the plan's two fp32 copies, and what the forward keeps is
    // read at the loss: exp's fp32 output and P's bf16 copy, the 6 bytes a score the plain plan holds
    // under autocast (x1). Calibrated on that run alone, it is reproduced.
    {
        const CalibrationResult own = fitOwn({inputOf(a1024, "1024")}, rules);
        QCOMPARE(own.factors.backwardScratchScores, 2.25);
        QCOMPARE(own.factors.quadraticFor(2).value_or(0), 1.0);
        // The same two tensors a layer (exp's fp32 output, P's bf16 copy) are what an fp32 run keeps, each
        // at 4 bytes (the fp32 runs measure x2): so the run tells the fp32 plan x2, where it left it at x1.
        QCOMPARE(own.factors.quadraticFor(4).value_or(0), 2.0);
        QVERIFY2(relative(own.runs.at(0).after, own.runs.at(0).measured) <= 0.02,
                 qPrintable(QString::number(own.runs.at(0).after)));
    }
    // Calibrated, at 4,096 tokens under autocast, where this moment is the step's peak: x2 the plan's two
    // fp32 copies, 16 bytes per score element, 4 x 16 x 4,096^2 x 16 bytes = 16 GiB.
    doc = a1024.scenario.document;
    doc["training"]["sequence_length"] = 4096;
    doc["calibration"] = {{"factors", calibrationFactorsToJson(cal.factors)}};
    QCOMPARE(doc["calibration"]["factors"].value("backward_score_scratch", 0.0), 2.0);
    const Scenario long4k = scenarioFromJson(doc, a1024.scenario.baseDir);
    QCOMPARE(long4k.calibration.backwardScratchScores, 2.0);
    QVERIFY(std::abs(backwardTemporaries(long4k) / (16.0 * 4 * 16 * 4096 * 4096) - 1) <= 0.001);
    const Estimate plain = estimate(long4k);
    QCOMPARE(plain.ranks.at(0).peakPhase, Phase::Backward);
    // Beside the cs336_basics profile, which reads this code op by op (its figures: docs/measured.md), the
    // calibrated plan was 5% under here in fp32 and 8% under autocast without the backward measured.
    for (const char* autocast : {"bf16", "none"}) {
        doc["training"]["autocast"] = autocast;
        json own = doc;
        own.erase("calibration");
        own["training"]["framework"] = "cs336_basics";
        const double a = estimate(scenarioFromJson(doc, a1024.scenario.baseDir)).ranks.at(0).allocatedBytes;
        const double b = estimate(scenarioFromJson(own, a1024.scenario.baseDir)).ranks.at(0).allocatedBytes;
        QVERIFY2(std::abs(a / b - 1) <= 0.02,
                 qPrintable(QStringLiteral("%1: %2 against %3").arg(autocast).arg(a).arg(b)));
    }
}

// A forward holds one layer's work at a time: inside the attention its score copies, elsewhere its FFN or
// head. Wedsonlin's medium forwards (MEASURED.md) peak in an FFN at 128 tokens and in the softmax at 1,024,
// so each run is measured at both kinds of moment (RunMeasurement::momentsMeasured) and the plan peaks at
// the larger. By hand, 4 x 16 heads x 128^2 x 4 bytes = 4 MiB a score copy; the hand-written softmax
// (cs336_basics/nn_utils.py) has the scores, x - max, exp and the quotient alive at once: 16 MiB, x4 the one
// copy the plain plan holds.
void TestAttribution::forwardMomentsMeasured() {
    const auto rules = AttributionRules::pytorchDefaults();
    const Run i128 =
        loadRun("cs336-medium-128-inference", "cs336_Wedsonlin_medium_128_inference_memory_snapshot.pickle");
    const Run i256 =
        loadRun("cs336-medium-256-inference", "cs336_Wedsonlin_medium_256_inference_memory_snapshot.pickle");
    const Run i1024 = loadRun("cs336-medium-1024-inference",
                              "cs336_Wedsonlin_medium_1024_inference_memory_snapshot.pickle");
    const RunMeasurement m128 = measureRun(inputOf(i128, "128"), rules);
    QVERIFY(m128.momentsMeasured);
    QCOMPARE(m128.attentionScores, 4LL * (4 * 16 * 128 * 128 * 4));
    // Its peak is elsewhere: three b·s·f and five b·s·h fp32 tensors (the FFN), 34 MiB, no score alive.
    QVERIFY(m128.restTransient >= 3LL * (4 * 128 * 4096 * 4) + 5LL * (4 * 128 * 1024 * 4));
    QVERIFY(m128.restTransient > m128.attentionTransient);
    // At 1,024 tokens the same four copies, 1 GiB, and the peak inside the attention.
    const RunMeasurement m1024 = measureRun(inputOf(i1024, "1024"), rules);
    QVERIFY(m1024.momentsMeasured);
    QCOMPARE(m1024.attentionScores, 4LL * (4 * 16 * 1024 * 1024 * 4));
    QVERIFY(m1024.attentionTransient > m1024.restTransient);
    // At 256 tokens an fp32 score copy is an fp32 FFN output's size (4 x 256 x 4,096 x 4 bytes); the calls
    // that allocated them tell (scoresToldByCalls): the same four copies, and alone the run predicts the
    // 1,024-token one within 1% too (below).
    const RunMeasurement m256 = measureRun(inputOf(i256, "256"), rules);
    QVERIFY(m256.momentsMeasured);
    QCOMPARE(m256.attentionScores, 4LL * (4 * 16 * 256 * 256 * 4));
    const CalibrationResult from256 = fitOwn({inputOf(i256, "256")}, rules);
    QVERIFY(!from256.scoresUntold);
    QCOMPARE(from256.factors.quadratic, 2.0); // four copies over the plan's two

    const CalibrationResult from128 = fitOwn({inputOf(i128, "128")}, rules);
    QVERIFY(!from128.scoresUntold);
    QCOMPARE(from128.factors.quadratic, 2.0);
    QVERIFY(from128.factors.prefillAttentionLinear > 0 && from128.factors.prefillAttentionLinear < 1);
    const CalibrationResult from1024 = fitOwn({inputOf(i1024, "1024")}, rules);
    QCOMPARE(from1024.factors.quadratic, 2.0);
    // Each run alone predicts the other, eight times the length apart, within 1% of its trace: the
    // 1,024-token plan holds the four copies, 1 GiB of scores, at its peak; the 128-token one none.
    auto predicted = [&](const Run& r, const Calibration& c) {
        Scenario sc = r.scenario;
        sc.calibration = c;
        const Estimate e = estimate(sc);
        const Comparison cmp = compareAtPeak(sc, e, r.trace->trace, *r.trace->indexes[0], rules);
        return std::make_pair(cmp.relativeError(), e.perGpu[Category::AttentionScores]);
    };
    const auto [error1024, scores1024] = predicted(i1024, from128.factors);
    QVERIFY2(std::abs(error1024) <= 0.01, qPrintable(QString::number(error1024)));
    QCOMPARE(scores1024, 4.0 * (4 * 16 * 1024.0 * 1024 * 4));
    const auto [error128, scores128] = predicted(i128, from1024.factors);
    QVERIFY2(std::abs(error128) <= 0.01, qPrintable(QString::number(error128)));
    QCOMPARE(scores128, 0.0);
    const auto [error1024from256, scores1024from256] = predicted(i1024, from256.factors);
    QVERIFY2(std::abs(error1024from256) <= 0.01, qPrintable(QString::number(error1024from256)));
    QCOMPARE(scores1024from256, 4.0 * (4 * 16 * 1024.0 * 1024 * 4));
    // Beside the cs336_basics profile, which reads this code op by op, from 128 to 4,096 tokens within 1%
    // calibrated on either run alone (one factor for both was 24% under at 1,024 tokens and 67% at 4,096
    // from the 128-token run; 21% and 63% from the 256-token run).
    for (const auto& [tokens, from] :
         {std::pair{512, &from128}, std::pair{2048, &from128}, std::pair{4096, &from128},
          std::pair{1024, &from256}, std::pair{4096, &from256}}) {
        json doc = i128.scenario.document;
        doc["inference"]["context_length"] = tokens;
        json own = doc;
        own["inference"]["framework"] = "cs336_basics";
        doc["calibration"] = {{"factors", calibrationFactorsToJson(from->factors)}};
        const double a = estimate(scenarioFromJson(doc, i128.scenario.baseDir)).ranks.at(0).allocatedBytes;
        const double b = estimate(scenarioFromJson(own, i128.scenario.baseDir)).ranks.at(0).allocatedBytes;
        QVERIFY2(std::abs(a / b - 1) <= 0.01,
                 qPrintable(QStringLiteral("%1: %2 against %3").arg(tokens).arg(a).arg(b)));
    }
    // Under bf16 autocast the plain plan holds the bf16 scores and the softmax's fp32 output (autocast's
    // fp32 list): 6 bytes a score. Calibrated on fp32 forwards only, the four copies are each taken at the
    // mean of 2 and 4 bytes, 12 bytes a score (10 to 14 possible, the warning says), x2 the plan's 6: at
    // 4 x 512, 12 x 4 x 16 x 512^2 = 192 MiB; the 512-token autocast forward's trace within 2%.
    const Run a512 = loadRun("cs336-medium-512-inference-bf16-autocast",
                             "cs336_Wedsonlin_medium_512_inference_memory_snapshot.pickle");
    json doc = a512.scenario.document;
    doc["calibration"] = {{"factors", calibrationFactorsToJson(from128.factors)}};
    const Scenario amp = scenarioFromJson(doc, a512.scenario.baseDir);
    QVERIFY(std::any_of(amp.warnings.begin(), amp.warnings.end(), [](const std::string& w) {
        return w.find("12 bytes a score, where they may hold from 10 to 14") != std::string::npos;
    }));
    QCOMPARE(estimate(amp).perGpu[Category::AttentionScores], 12.0 * 4 * 16 * 512 * 512);
    const Comparison cmp =
        compareAtPeak(amp, estimate(amp), a512.trace->trace, *a512.trace->indexes[0], rules);
    QVERIFY2(std::abs(cmp.relativeError()) <= 0.02, qPrintable(QString::number(cmp.relativeError())));
    // The other way: the 512-token autocast forward alone (its bf16 scores the size of fp32 FFN outputs,
    // told apart by their calls) holds twice the plan's score copies, and its four copies, each counted at 4
    // bytes, twice the fp32 plan's two: the 128- and 1,024-token fp32 forwards within the issue's 5% (a
    // quarter and twice the length, another precision; one factor for both, before, was 65% under at 4,096
    // tokens).
    const CalibrationResult fromAutocast = fitOwn({inputOf(a512, "512 autocast")}, rules);
    QVERIFY(!fromAutocast.scoresUntold);
    QCOMPARE(fromAutocast.factors.quadratic, 2.0);
    QVERIFY(std::find(fromAutocast.factors.quadraticByDtype.begin(),
                      fromAutocast.factors.quadraticByDtype.end(),
                      std::pair<double, double>{4.0, 2.0}) != fromAutocast.factors.quadraticByDtype.end());
    for (const Run* r : {&i128, &i1024}) {
        const double error = predicted(*r, fromAutocast.factors).first;
        QVERIFY2(std::abs(error) <= 0.05, qPrintable(QString::number(error)));
    }
}

void TestAttribution::scoresToldByCalls() {
    const Scenario sc64 = scenarioFromJson(test::handWrittenForwardDoc(64));
    const Scenario sc32 = scenarioFromJson(test::handWrittenForwardDoc(32));
    QCOMPARE(4 * 4 * 64 * 64 * 4, 4 * 64 * 256 * 4); // 256 KiB: a score, or an FFN output
    // Each tensor of that size by the line that allocated it (frames innermost first, as recorded).
    auto readings = [&](const Trace& t, const TraceIndex& index) {
        const ScoreSites sites(sc64, t, index);
        std::map<std::string, ScoreSites::Reading> out;
        const DeviceTrace& d = index.device();
        for (std::size_t e = 0; e < d.entries(); ++e)
            if (d.size[e] == 4 * 64 * 256 * 4) {
                const Frame& top = t.stacks[d.stack[e]].front();
                out[t.strings[top.filename] + ":" + std::to_string(top.line)] = sites.reading(d.stack[e]);
            }
        return out;
    };
    using R = ScoreSites::Reading;
    {
        // The softmax's max is b·a·s, a per-head vector only attention has: q·kᵀ (under the attention's
        // call, line 51) and the exp (under the softmax's call, line 63) are scores. The FFN's call (53)
        // holds w2's b·s·h output and no such vector: not attention. The layer's call (90) also holds the
        // norms' b·s statistics: it spans sublayers, and nothing is read from it.
        const Trace t = readTrace(test::handWrittenForward(64, false, false, false));
        const TraceSummary summary = summarize(t);
        const auto r = readings(t, TraceIndex(t.devices.at(0), summary.devices.at(0)));
        QCOMPARE(r.size(), size_t(4));
        QVERIFY(r.at("/home/u/model.py:62") == R::Scores);
        QVERIFY(r.at("/home/u/nn.py:6") == R::Scores);
        QVERIFY(r.at("/home/u/model.py:70") == R::TokensLinear);
        QVERIFY(r.at("/home/u/model.py:71") == R::TokensLinear);
    }
    // Told nothing: a softmax that keeps no per-head vector (torch's own, one kernel), norms that keep no
    // per-token one (fused: no call is seen to span sublayers), or an FFN written in the block itself (its
    // nearest call with anything in it is the layer's).
    for (const auto& [fusedSoftmax, fusedNorm, flat] :
         {std::tuple{true, false, false}, std::tuple{false, true, false}}) {
        const Trace t = readTrace(test::handWrittenForward(64, fusedSoftmax, fusedNorm, flat));
        const TraceSummary summary = summarize(t);
        for (const auto& [line, reading] : readings(t, TraceIndex(t.devices.at(0), summary.devices.at(0))))
            QVERIFY2(reading == R::Untold, line.c_str());
    }
    {
        const Trace t = readTrace(test::handWrittenForward(64, false, false, true));
        const TraceSummary summary = summarize(t);
        const auto r = readings(t, TraceIndex(t.devices.at(0), summary.devices.at(0)));
        QVERIFY(r.at("/home/u/model.py:53") == R::Untold && r.at("/home/u/model.py:54") == R::Untold);
        QVERIFY(r.at("/home/u/model.py:62") == R::Scores);
    }
    // Calibration counts what the calls tell: two scores (512 KiB) and three FFN outputs in the loss
    // peak's table. With torch's softmax the 64-token run alone cannot tell; beside the 32-token run
    // (scores 64 KiB there, FFN outputs 128 KiB) the lines tell the same.
    auto rowsOf = [](const TensorTable& table, const std::string& shape) {
        std::size_t n = 0;
        for (const TensorRow& row : table.rows)
            n += row.shape == shape && row.each == 4 * 64 * 256 * 4 ? row.count : 0;
        return n;
    };
    for (const bool fusedSoftmax : {false, true}) {
        const Trace t64 = readTrace(test::handWrittenForward(64, fusedSoftmax, false, false));
        const Trace t32 = readTrace(test::handWrittenForward(32, fusedSoftmax, false, false));
        const TraceSummary s64 = summarize(t64), s32 = summarize(t32);
        const TraceIndex i64(t64.devices.at(0), s64.devices.at(0)), i32(t32.devices.at(0), s32.devices.at(0));
        const RunMeasurement alone =
            measureRun({&sc64, &t64, &i64, "64"}, AttributionRules::pytorchDefaults());
        QCOMPARE(alone.quadratic, fusedSoftmax ? 0LL : 2LL * 4 * 4 * 64 * 64 * 4);
        // (untold, the five of 256 KiB; the seven b·s·h fp32 tensors, 64 KiB, a 1-byte b·a·s² too, are
        // hidden-wide whatever their calls: without dropout a 1-byte score is only a mask)
        QCOMPARE(alone.ambiguous, fusedSoftmax ? 5LL * 4 * 64 * 256 * 4 : 0LL);
        const CalibrationResult both = calibrate({{&sc64, &t64, &i64, "64"}, {&sc32, &t32, &i32, "32"}},
                                                 AttributionRules::pytorchDefaults());
        QCOMPARE(rowsOf(both.runs[0].atLoss, "b·a·s²"), size_t(2));
        QCOMPARE(rowsOf(both.runs[0].atLoss, "b·s·f"), size_t(3));
    }
}

void TestAttribution::forwardWithGraphCalibrated() {
    // A forward with autograd on and no backward keeps every tensor it makes (the hand-written one-layer
    // forward frees nothing): calibrated on it at 64 tokens as plain code with grad_mode "enabled", the plan
    // there and at 32 tokens is that forward's own bytes, added up by hand from what it allocates: two norms'
    // b·s rows and b·s·h outputs, q, k, v and the attention output (b·s·h), q·kᵀ and exp's output (b·a·s²),
    // the softmax's max (b·a·s), three b·s·f FFN tensors and w2's b·s·h output, all fp32.
    const auto byHand = [](double s) {
        const double b = 4, h = 64, f = 256, a = 4;
        return 4 * (2 * b * s + 7 * b * s * h + 2 * b * a * s * s + b * a * s + 3 * b * s * f);
    };
    nlohmann::json doc = test::handWrittenForwardDoc(64);
    doc.erase("training");
    doc["inference"] = {{"batch_size", 4},
                        {"context_length", 64},
                        {"weight_dtype", "fp32"},
                        {"attention", "eager"},
                        {"grad_mode", "enabled"}};
    const Scenario sc64 = scenarioFromJson(doc);
    const Trace t64 = readTrace(test::handWrittenForward(64, false, false, false));
    const TraceSummary s64 = summarize(t64);
    const TraceIndex i64(t64.devices.at(0), s64.devices.at(0));
    const CalibrationResult cal = calibrate({{&sc64, &t64, &i64, "64"}}, AttributionRules::pytorchDefaults());
    // What it keeps is what training keeps: measured as training, and applied to either.
    QVERIFY(cal.factors.measuredOn == Mode::Training);
    QVERIFY(!cal.runs.at(0).noBackward);
    // Planned as a training step instead, the run is named for what it is: no gradient, no step.
    const Scenario step = scenarioFromJson(test::handWrittenForwardDoc(64));
    QVERIFY(calibrate({{&step, &t64, &i64, "64"}}, AttributionRules::pytorchDefaults()).runs.at(0).noBackward);
    QCOMPARE(cal.factors.quadratic, 2.0); // q·kᵀ and exp, over the plan's one softmax output
    for (const int tokens : {64, 32}) {
        doc["inference"]["context_length"] = tokens;
        Scenario sc = scenarioFromJson(doc);
        sc.calibration = cal.factors;
        const Estimate e = estimate(sc);
        const double kept = e.perGpu[Category::Activations] + e.perGpu[Category::AttentionScores] +
                            e.perGpu[Category::Logits];
        QVERIFY2(std::abs(kept / byHand(tokens) - 1) < 0.01, qPrintable(QStringLiteral("%1 tokens: %2 vs %3")
                                                                            .arg(tokens)
                                                                            .arg(kept, 0, 'f', 0)
                                                                            .arg(byHand(tokens), 0, 'f', 0)));
        QCOMPARE(e.perGpu[Category::KvCache], 0.0);
    }
    // A forward without autograd holds one layer's work at a time: the factors are not applied there.
    doc["inference"]["grad_mode"] = "no_grad";
    Scenario noGrad = scenarioFromJson(doc);
    const double plain = estimate(noGrad).perGpu[Category::AttentionScores];
    noGrad.calibration = cal.factors;
    QCOMPARE(estimate(noGrad).perGpu[Category::AttentionScores], plain);
}

void TestAttribution::normsOfAMaskSizeAreTokensLinear() {
    // notHanmin's XL forwards (d 1,600, 25 heads, 4 x 256): a norm's fp32 output, 4 x 256 x 1,600 x 4 bytes,
    // is a 1-byte b·a·s²'s size, 4 x 25 x 256², and the norm's call keeps per-token vectors, so no call tells
    // which. Without dropout it is taken for the hidden-wide tensor: every ambiguity goes, and each run
    // tells its scores from its tokens alone: in fp32 two copies a layer (x2, as CS336's code), under
    // autocast one bf16 copy and, at fp32 widths, x2 again (the two runs agree). Each then predicts the other
    // within 2% (cases.json, fit rows: the rule was chosen on them).
    QCOMPARE(4LL * 256 * 1600 * 4, 4LL * 25 * 256 * 256);
    const auto rules = AttributionRules::pytorchDefaults();
    const Run fp32 = loadRun("cs336-xl-256-forward-zero-grad-after",
                             "cs336_notHanmin_xl_256_forward_memory_snapshot.pickle");
    const Run bf16 = loadRun("cs336-xl-256-forward-zero-grad-after-bf16-autocast",
                             "cs336_notHanmin_xl_256_forward_bf16_autocast_memory_snapshot.pickle");
    const RunMeasurement m = measureRun(inputOf(fp32, "fp32"), rules);
    QCOMPARE(m.ambiguous, 0LL);
    const CalibrationResult a = calibrate({inputOf(fp32, "fp32")}, rules);
    QVERIFY(!a.scoresUntold);
    QCOMPARE(a.factors.quadratic, 2.0);
    const CalibrationResult b = calibrate({inputOf(bf16, "bf16")}, rules);
    QVERIFY(!b.scoresUntold);
    QCOMPARE(b.factors.quadraticFor(2).value_or(0), 1.0);
    QCOMPARE(b.factors.quadraticFor(4).value_or(0), 2.0);
}

// Calibrating any recorded run reproduces it within 2% whatever optimizer implementation its scenario
// declares (the issue's bound): every trace of tests/data with the plain-PyTorch scenario of
// examples/measured that describes it (all sixteen: DeComFL's and LLM-inference's record no workload that
// is known), and NiuHuangxiaozi's steps and forwards with their cs336_basics ones (their only cases), each on
// its own. NiuHuangxiaozi's steps under autocast missed by 6.4% until the cs336_basics profile's softmax
// backward stopped being scaled with the forward's score copies and a training step's second cuBLAS
// workspace (its backward thread's) was read: 1.5% under since. MAGMA27's
// run held its gradients from a warm-up step where the scenario frees them (3.7% under after calibration
// until it learned that: Calibration::gradientsHeld).
void TestAttribution::calibrationReproducesEveryRecordedRun_data() {
    QTest::addColumn<QString>("scenario");
    QTest::addColumn<QString>("trace");
    QTest::addColumn<QString>("implementation");
    const std::pair<const char*, const char*> runs[] = {
        {"cs336-medium-128-training", "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle"},
        {"cs336-medium-256-training", "cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle"},
        {"cs336-medium-512-training-bf16-autocast",
         "cs336_Wedsonlin_medium_512_training_memory_snapshot.pickle"},
        {"cs336-medium-1024-training-bf16-autocast",
         "cs336_Wedsonlin_medium_1024_training_memory_snapshot.pickle"},
        {"cs336-small-32x256-no-optimizer", "cs336_MAGMA27_memory_snapshot.pickle"},
        {"cs336-small-gpt2vocab-1x64-compiled", "cs336_bcrafton_memory_snapshot.pickle"},
        {"cs336-medium-128-inference", "cs336_Wedsonlin_medium_128_inference_memory_snapshot.pickle"},
        {"cs336-medium-256-inference", "cs336_Wedsonlin_medium_256_inference_memory_snapshot.pickle"},
        {"cs336-medium-1024-inference", "cs336_Wedsonlin_medium_1024_inference_memory_snapshot.pickle"},
        {"cs336-medium-512-inference-bf16-autocast",
         "cs336_Wedsonlin_medium_512_inference_memory_snapshot.pickle"},
        // notHanmin's XL forwards, another hand-written model: a training scenario (the previous step's
        // gradients and AdamW's moments are alive) recorded at its forward's end.
        {"cs336-xl-256-forward-zero-grad-after", "cs336_notHanmin_xl_256_forward_memory_snapshot.pickle"},
        {"cs336-xl-256-forward-zero-grad-after-bf16-autocast",
         "cs336_notHanmin_xl_256_forward_bf16_autocast_memory_snapshot.pickle"},
        // Athrun0109's runs of the package at 2.7B: steps with the previous step's gradients alive through
        // the forward, and forwards while the loop holds the previous forward's graph.
        {"cs336-2.7b-128-step-zero-grad-after-athrun",
         "cs336_Athrun0109_2.7b_128_step_memory_snapshot.pickle"},
        {"cs336-2.7b-128-step-zero-grad-after-athrun-bf16-autocast",
         "cs336_Athrun0109_2.7b_128_step_bf16_autocast_memory_snapshot.pickle"},
        {"cs336-2.7b-128-forward-previous-graph-athrun",
         "cs336_Athrun0109_2.7b_128_forward_memory_snapshot.pickle"},
        {"cs336-2.7b-512-forward-previous-graph-athrun",
         "cs336_Athrun0109_2.7b_512_forward_memory_snapshot.pickle"},
        // NiuHuangxiaozi's three steps of a third student's model, with its cs336_basics scenario (its own
        // Adam makes its states in its constructor: calibrationFindsTheStepPastTheConstructor).
        {"cs336-basics/cs336-niu-small-100-step",
         "cs336_NiuHuangxiaozi_small_100_step_memory_snapshot.pickle"},
        {"cs336-basics/cs336-niu-small-150-step",
         "cs336_NiuHuangxiaozi_small_150_step_memory_snapshot.pickle"},
        {"cs336-basics/cs336-niu-small-200-step",
         "cs336_NiuHuangxiaozi_small_200_step_memory_snapshot.pickle"},
        {"cs336-basics/cs336-niu-small-200-step-bf16-autocast",
         "cs336_NiuHuangxiaozi_small_200_step_bf16_autocast_memory_snapshot.pickle"},
        {"cs336-basics/cs336-niu-small-100-forward",
         "cs336_NiuHuangxiaozi_small_100_forward_memory_snapshot.pickle"},
        {"cs336-basics/cs336-niu-small-150-forward",
         "cs336_NiuHuangxiaozi_small_150_forward_memory_snapshot.pickle"},
        {"cs336-basics/cs336-niu-small-200-forward",
         "cs336_NiuHuangxiaozi_small_200_forward_memory_snapshot.pickle"},
        {"cs336-basics/cs336-niu-small-200-forward-bf16-autocast",
         "cs336_NiuHuangxiaozi_small_200_forward_bf16_autocast_memory_snapshot.pickle"}};
    for (const auto& [scenario, trace] : runs) {
        // A scenario with a training section declares an optimizer implementation; a forward's does not.
        const bool training =
            loadScenarioFile((test::measuredDir() + scenario + ".headroom.json").toStdString()).mode ==
            Mode::Training;
        for (const char* impl : {"foreach", "for_loop", "fused"}) {
            if (!training && std::string(impl) != "foreach")
                continue;
            QTest::newRow(qPrintable(QStringLiteral("%1 %2").arg(scenario, training ? impl : "")))
                << QString::fromLatin1(scenario) << QString::fromLatin1(trace)
                << (training ? QString::fromLatin1(impl) : QString());
        }
    }
}

void TestAttribution::calibrationReproducesEveryRecordedRun() {
    QFETCH(QString, scenario);
    QFETCH(QString, trace);
    QFETCH(QString, implementation);
    static std::map<QString, Run> loaded;
    auto it = loaded.find(scenario);
    if (it == loaded.end())
        it = loaded.emplace(scenario, loadRun(qPrintable(scenario), qPrintable(trace))).first;
    const Run& run = it->second;
    json doc = run.scenario.document;
    if (!implementation.isEmpty())
        doc["training"]["optimizer_implementation"] = implementation.toStdString();
    const Scenario sc = scenarioFromJson(doc, run.scenario.baseDir);
    const CalibrationResult cal = calibrate({{&sc, &run.trace->trace, run.trace->indexes[0].get(), "run"}},
                                            AttributionRules::pytorchDefaults());
    const CalibrationRun& r = cal.runs.at(0);
    // What the trace measured, read by the summary (the calibration's `measured` is the same counter).
    QCOMPARE(r.measured, run.trace->summary.devices.at(0).peakAllocated);
    const QString what = QStringLiteral("before %1%, after %2%")
                             .arg(100 * relative(r.before, r.measured), 0, 'f', 1)
                             .arg(100 * relative(r.after, r.measured), 0, 'f', 1);
    qInfo().noquote() << what;
    QVERIFY2(relative(r.after, r.measured) <= 0.02, qPrintable(what));
    // And its reserved peak, read by the summary: the calibration learns what the run's allocator cached
    // beyond its tensors (the plan's 3% was from 1.8% over to 7.5% under on these runs: their caches
    // hold 1.2% to 11.4% beyond their tensors).
    Scenario calibrated = sc;
    calibrated.calibration = cal.factors;
    const double reserved = static_cast<double>(run.trace->summary.devices.at(0).peakReserved);
    const double planned = estimate(calibrated).reservedPeakBytes;
    QVERIFY2(std::abs(planned / reserved - 1) <= 0.02,
             qPrintable(QStringLiteral("reserved %1%").arg(100 * (planned / reserved - 1), 0, 'f', 1)));
    // Two of the runs hold an earlier step's gradients at their loss peak: MAGMA27's after its warm-up,
    // bcrafton's (which records a later step) beside its AdamW states, 16 bytes for each of its 190,460,160
    // parameters (fp32 weights, gradients, two moments). The others free them with zero_grad.
    const bool held = scenario == QLatin1String("cs336-small-32x256-no-optimizer") ||
                      scenario == QLatin1String("cs336-small-gpt2vocab-1x64-compiled");
    QCOMPARE(cal.factors.gradientsHeld, held);
    if (scenario == QLatin1String("cs336-small-gpt2vocab-1x64-compiled"))
        QCOMPARE(r.atLoss.modelState, 190460160LL * 16);
}

// The optimizer step's span in a recording of several iterations. NiuHuangxiaozi's records three of forward,
// backward and its NIUAdam step, and the step is annotated ("Optimizer.step#NIUAdam.step": NIUAdam subclasses
// torch.optim.Optimizer, whose step records it). Its peak is sought from the step's start to its end, not to
// the recording's end: to the end, the next iteration's forward was taken for the step, its activations for
// the step's scratch (16 bytes a parameter), and calibrated, the plan was 25.3% over the run it was fitted
// on. Without the annotations (an older recording, or an optimizer of the user's own class) the step is the
// optimizer's first allocation outside its constructor (NIUAdam makes its states with zeros_like when it is
// built, before any forward) to the first allocation after it that is not the optimizer's. Either way, at
// the step's peak none of the layers' activations is alive (the backward freed them; the logits stay, which
// the loop holds), and the loss peak is the first iteration's, its activations alive. Attribution, below,
// finds the parameters its step writes anew.
void TestAttribution::calibrationFindsTheStepPastTheConstructor() {
    const Run run = loadRun("cs336-basics/cs336-niu-small-100-step",
                            "cs336_NiuHuangxiaozi_small_100_step_memory_snapshot.pickle");
    Trace unannotated = run.trace->trace;
    QVERIFY(!unannotated.annotations.empty());
    unannotated.annotations.clear();
    const Trace* recorded = &run.trace->trace;
    for (const Trace* trace : {recorded, static_cast<const Trace*>(&unannotated)}) {
        const CalibrationResult cal = calibrate({{&run.scenario, trace, run.trace->indexes[0].get(), "run"}},
                                                AttributionRules::pytorchDefaults());
        const CalibrationRun& r = cal.runs.at(0);
        for (const TensorRow& row : r.atStep.rows)
            QVERIFY2(row.shape.find("b·s·f") == std::string::npos &&
                         row.shape.find("b·s·h") == std::string::npos &&
                         row.shape.find("b·a·s²") == std::string::npos,
                     row.shape.c_str());
        // The step's scratch is the parameters' shapes: the new m, v and parameters its loop makes (its two
        // largest, the embedding and the head, 10,000 x 512 x 4 bytes each, among them).
        bool largest = false;
        for (const TensorRow& row : r.atStep.rows)
            largest = largest || (row.shape == "p" && row.each == 10000LL * 512 * 4);
        QVERIFY(largest);
        // The loss peak: the FFN's 10 x 100 x 1,344 fp32 tensors, five a layer.
        std::size_t ffn = 0;
        for (const TensorRow& row : r.atLoss.rows)
            if (row.shape == "b·s·f" && row.each == 10LL * 100 * 1344 * 4)
                ffn += row.count;
        QCOMPARE(ffn, std::size_t(20));
        QVERIFY2(std::abs(relative(r.after, r.measured)) <= 0.02,
                 qPrintable(QString::number(100 * relative(r.after, r.measured))));
        QVERIFY(cal.factors.stepScratchBytesPerParameter < 8);
        // Two cuBLAS workspaces of PyTorch's default size before Hopper (":4096:2:16:8", 2 x 4 MiB + 8 x
        // 16 KiB): the forward thread's handle and the autograd engine thread's, which its backward makes
        // after the forward's loss, and both held to the end (at::cuda::getNewWorkspace under
        // torch::autograd::Engine::thread_main in the trace). Read at the forward's loss alone, the plan
        // held one and the run's 150- and 200-token steps came 0.9% and 0.7% under.
        QCOMPARE(cal.factors.workspaceBytes, 2.0 * (2 * 4194304 + 8 * 16384));
        // Its Adam writes every parameter anew each step (`p.data = p.data - ...`, in optimizer.py), so at
        // the run's peak, in the third iteration, no weight of the model's own is alive: the optimizer's
        // tensors of a parameter's size beyond m and v are the parameters. The model's 22,696,448
        // (2 x 10,000 x 512 + 4 x (4 x 512² + 3 x 512 x 1,344 + 2 x 512) + 512) fp32 parameters, and as
        // many of each state; the calibration then finds the run's weights where the scenario plans them.
        QVERIFY(r.mismatch.empty());
    }
    const Attribution peak =
        attribute(run.trace->trace, *run.trace->indexes[0], run.trace->indexes[0]->peakAfter(),
                  AttributionRules::pytorchDefaults(), &run.scenario);
    QCOMPARE(peak.of(MeasuredCategory::Weights), 22696448LL * 4);
    QCOMPARE(peak.of(MeasuredCategory::OptimizerStates), 2 * 22696448LL * 4);
}

// An fp32 run tells what its code keeps of the scores under 16-bit autocast when its trace names the operator
// that made each score tensor (recorded with C++ frames): one an operator on autocast's fp32 list wrote stays
// at 4 bytes, another takes 2 (RunMeasurement::quadraticAsAutocast).
void TestAttribution::calibrationReadsAutocastScoresByOperator() {
    const Run fp32 = loadRun("cs336-basics/cs336-niu-small-100-forward",
                             "cs336_NiuHuangxiaozi_small_100_forward_memory_snapshot.pickle");
    const auto rules = AttributionRules::pytorchDefaults();
    const CalibrationResult cal =
        calibrate({{&fp32.scenario, &fp32.trace->trace, fp32.trace->indexes[0].get(), "run"}}, rules);
    // NiuHuangxiaozi's softmax (cs336_basics/modules/softmax.py) is exp(x - max) / sum(exp(x - max)):
    // autograd keeps both exps and the division, which the next einsum saves; three fp32 copies a layer, 4
    // layers.
    std::map<std::string, int> ops(cal.runs.at(0).scoreOperators.begin(),
                                   cal.runs.at(0).scoreOperators.end());
    QCOMPARE(ops, (std::map<std::string, int>{{"div_Tensor", 4}, {"exp", 8}}));
    QCOMPARE(cal.factors.quadraticFor(4).value_or(0), 1.5); // three copies over the profile's two
    // Under autocast exp stays fp32 (autocast_mode.h AT_FORALL_FP32) and the einsum saves its bf16 cast of
    // the division: 4 + 4 + 2 bytes a score, over the profile's 16-bit scores and fp32 softmax, 2 + 4.
    const double q2 = cal.factors.quadraticFor(2).value_or(0);
    QVERIFY2(std::abs(q2 - 10.0 / 6.0) < 1e-6, qPrintable(QString::number(q2)));
    // What the same code held under autocast, read from its own trace (the 200-token forward).
    const Run autocast =
        loadRun("cs336-basics/cs336-niu-small-200-forward-bf16-autocast",
                "cs336_NiuHuangxiaozi_small_200_forward_bf16_autocast_memory_snapshot.pickle");
    const CalibrationResult own = calibrate(
        {{&autocast.scenario, &autocast.trace->trace, autocast.trace->indexes[0].get(), "run"}}, rules);
    QVERIFY2(std::abs(own.factors.quadraticFor(2).value_or(0) - q2) < 1e-6,
             qPrintable(QString::number(own.factors.quadraticFor(2).value_or(0))));
    // The staff code (Wedsonlin's medium model: exp, then the division the einsum saves) keeps under autocast
    // what the profile plans for it, from that code: x1.
    const Run staff = mediumTraining(128);
    const CalibrationResult s =
        calibrate({{&staff.scenario, &staff.trace->trace, staff.trace->indexes[0].get(), "run"}}, rules);
    QVERIFY2(std::abs(s.factors.quadraticFor(2).value_or(0) - 1) < 1e-6,
             qPrintable(QString::number(s.factors.quadraticFor(2).value_or(0))));
    // Every score tensor made by an operator of the fp32 list (its division named softmax here, as torch's
    // softmax would be): the next matmul saves one of them, which autocast makes two, the fp32 output and
    // its 16-bit cast, and the fp32 trace cannot show which: the factor is not read.
    // The 100-token forward with the frames that begin with `prefix` renamed `to`, calibrated.
    auto renamed = [&](const char* prefix, const char* to) {
        Trace t = fp32.trace->trace;
        for (std::string& str : t.strings)
            if (str.rfind(prefix, 0) == 0)
                str = to;
        return calibrate({{&fp32.scenario, &t, fp32.trace->indexes[0].get(), "run"}}, rules);
    };
    const CalibrationResult fused =
        renamed("at::_ops::div_Tensor::call",
                "at::_ops::softmax_int::call(at::Tensor const&, long, std::optional<c10::ScalarType>)");
    const auto& fusedOps = fused.runs.at(0).scoreOperators;
    QCOMPARE((std::map<std::string, int>(fusedOps.begin(), fusedOps.end())),
             (std::map<std::string, int>{{"exp", 8}, {"softmax_int", 4}}));
    QVERIFY(!fused.factors.quadraticFor(2).has_value() && !fused.scoresByOperator);
    // A trace without the operators' frames tells nothing of autocast: the factor is not read.
    const CalibrationResult none = renamed("at::_ops::", "anonymous");
    QVERIFY(none.runs.at(0).scoreOperators.empty());
    QCOMPARE(none.factors.quadraticFor(4).value_or(0), 1.5);
    QVERIFY(!none.factors.quadraticFor(2).has_value());
}

// The loss's vocabulary-sized tensors read at autocast's widths by operator: NiuHuangxiaozi's step scores the
// last position only (profile_memory.py: `predict = logits[:,-1,:]`, its own cross-entropy on that), so at
// its loss the fp32 run holds three tensors of 10 x 100 x 10,000 fp32 entries (40,000,000 bytes each): the
// head's einsum output and the zeros select's and slice's backwards write for its gradient, each the
// logits' dtype, bf16 under autocast. Autocast would give them 3 x 20,000,000 bytes. What the fp32 run
// tells the autocast plan must be what the autocast run reads from its own trace.
void TestAttribution::calibrationReadsTheLossByOperator() {
    const auto rules = AttributionRules::pytorchDefaults();
    const Run fp32 = loadRun("cs336-basics/cs336-niu-small-100-step",
                             "cs336_NiuHuangxiaozi_small_100_step_memory_snapshot.pickle");
    const CalibrationResult cal =
        calibrate({{&fp32.scenario, &fp32.trace->trace, fp32.trace->indexes[0].get(), "run"}}, rules);
    QCOMPARE(cal.runs.size(), size_t(1));
    std::int64_t vocabulary = 0;
    for (const TensorRow& row : cal.runs[0].atLoss.rows)
        if (row.shape == "b·s·V")
            vocabulary += row.bytes();
    QCOMPARE(vocabulary, std::int64_t(3) * 40'000'000);
    const double f4 = cal.factors.logitsFor(4), f2 = cal.factors.logitsFor(2);
    QCOMPARE(f4, cal.factors.logits);
    QVERIFY2(f2 > 0 && f2 < f4, qPrintable(QString::number(f2)));
    // The 200-token step under bf16 autocast, calibrated on its own trace: the factor it reads there.
    const Run autocast = loadRun("cs336-basics/cs336-niu-small-200-step-bf16-autocast",
                                 "cs336_NiuHuangxiaozi_small_200_step_bf16_autocast_memory_snapshot.pickle");
    const CalibrationResult own = calibrate(
        {{&autocast.scenario, &autocast.trace->trace, autocast.trace->indexes[0].get(), "run"}}, rules);
    QVERIFY2(std::abs(f2 / own.factors.logits - 1) < 0.005,
             qPrintable(QStringLiteral("%1 from fp32, %2 its own").arg(f2).arg(own.factors.logits)));
    // A tensor whose width depends on its inputs (a subtraction: promoted) leaves the width untold, and the
    // fp32 factor is carried as before: the select's backward renamed a subtraction.
    Trace renamed = fp32.trace->trace;
    for (std::string& str : renamed.strings)
        if (str.rfind("at::_ops::select_backward::call", 0) == 0)
            str = "at::_ops::sub_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar const&)";
    const CalibrationResult promoted =
        calibrate({{&fp32.scenario, &renamed, fp32.trace->indexes[0].get(), "run"}}, rules);
    QVERIFY(promoted.factors.logitsByDtype.empty());
    QCOMPARE(promoted.factors.logitsFor(2), promoted.factors.logits);
    // The staff code's loss (Wedsonlin's medium model): its subtractions run in fp32 under autocast beside a
    // 16-bit head, which its fp32 trace cannot show: nothing read that way.
    const Run staff = mediumTraining(128);
    const CalibrationResult s =
        calibrate({{&staff.scenario, &staff.trace->trace, staff.trace->indexes[0].get(), "run"}}, rules);
    QVERIFY(s.factors.logits > 0 && s.factors.logitsByDtype.empty());
}

// Calibrated predictions of examples/measured/cases.json: a run's scenario calibrated on other runs of the
// same code, against the run's own trace. Within 5% at twice or half the length, within 10% at four to eight
// times the length and under bf16 autocast (the issue's bound for those), each checked on its own. All are
// fit runs: calibration's rules were chosen looking at them.
void TestAttribution::calibratedPredictions_data() {
    QTest::addColumn<QString>("id");
    QTest::addColumn<double>("bound");
    for (const char* id :
         {"cs336-medium-256-training-calibrated-from-128", "cs336-medium-128-training-calibrated-from-256",
          "cs336-medium-256-inference-calibrated-from-128"})
        QTest::newRow(id) << QString::fromLatin1(id) << 0.05;
    for (const char* id : {"cs336-medium-512-training-bf16-autocast-calibrated-from-128",
                           "cs336-medium-512-training-bf16-autocast-calibrated-from-256",
                           "cs336-medium-512-training-bf16-autocast-calibrated-from-128-256",
                           "cs336-medium-1024-training-bf16-autocast-calibrated-from-128",
                           "cs336-medium-1024-training-bf16-autocast-calibrated-from-256",
                           "cs336-medium-1024-training-bf16-autocast-calibrated-from-128-256",
                           "cs336-medium-1024-inference-calibrated-from-128-256",
                           "cs336-medium-1024-inference-calibrated-from-128",
                           "cs336-medium-128-inference-calibrated-from-1024",
                           "cs336-medium-512-inference-bf16-autocast-calibrated-from-128",
                           "cs336-medium-512-inference-bf16-autocast-calibrated-from-128-256",
                           "cs336-medium-128-training-calibrated-from-1024-bf16-autocast",
                           "cs336-medium-128-training-calibrated-from-512-1024-bf16-autocast",
                           "cs336-medium-256-training-calibrated-from-1024-bf16-autocast",
                           "cs336-medium-256-training-calibrated-from-512-1024-bf16-autocast"})
        QTest::newRow(id) << QString::fromLatin1(id) << 0.10;
    // The 2.7B model's published peaks at the step, predicted from the medium model's traces: fit since the
    // step scratch's unit was chosen on them (calibratedValidatePredictions holds the rest).
    for (const ValidationCase& c :
         loadValidationCases((test::measuredDir() + QStringLiteral("cases.json")).toStdString()).cases)
        if (c.role == "fit" && c.plainPytorch && !c.calibrateOn.empty())
            QTest::newRow(c.id.c_str()) << QString::fromStdString(c.id) << 0.05;
}

void TestAttribution::calibratedPredictions() {
    QFETCH(QString, id);
    QFETCH(double, bound);
    const Validation& v = measuredValidation();
    const CaseResult* r = nullptr;
    for (const CaseResult& c : v.results)
        if (c.c->id == id.toStdString())
            r = &c;
    QVERIFY2(r, qPrintable(id + QStringLiteral(" is not in cases.json")));
    QCOMPARE(r->c->calibrateOn.empty(), false);
    QVERIFY(r->traced || r->c->plainPytorch);
    const QString what = QStringLiteral("%1: %2%").arg(id).arg(100 * r->error(), 0, 'f', 1);
    qInfo().noquote() << what;
    QVERIFY2(std::abs(r->error()) <= bound, qPrintable(what));
}

// The recorded runs nothing was chosen on (examples/measured/cases.json, role validate) planned with the
// plain PyTorch profile, against the targets the published runs are held to: a median of at most 5% and a
// worst of at most 12%, computed here, per counter: a trace records allocated, reserved and active alike
// (its own peaks, read by the trace's summary, not by the estimator). (The cs336_basics profile's validate
// runs, published figures of another student's runs, are held to them in
// tst_cs336::cs336BasicsRecordedRuns.)
void TestAttribution::reservedOfTheTracedRuns() {
    // The reserved peaks of the traced runs (examples/measured/cases.json), as the README gives them. What
    // the allocator's cache holds beyond the tensors, from the traces alone: 1.7% to 23.4% over the
    // validate runs (the most, NiuHuangxiaozi's steps, whose Adam replaces every parameter and state with a
    // new tensor each step: 15.2% at 100 tokens, 23.4% under autocast; 11.4% before they came in). The fit
    // runs the cs336_basics profile plans reserve within 2% of the plan (a replay of the code's own order
    // gives its reserved), and the calibrated ones within 2% of their own run: the calibration learns the
    // allocator's overhead beside the replay of the code its runs' stacks name
    // (Calibration::replayedOverhead, Calibration::code), or as a share where there is none
    // (Calibration::allocatorOverhead). A forward's cache grows with the length faster than its tensors (the
    // medium model's: 1.5% beyond them at 128 tokens, 3.9% at 256, 11.4% at 1,024, where each 256 MiB
    // score-sized tensor takes a segment of its own): the plain profile calibrated at 128 or 256 tokens
    // was 6.7% to 8.9% under at 1,024 with the share, and 9.7% over the reverse way, and is within 0.2%
    // replaying cs336_basics' forward. Named here at their errors, those calibrated across precisions, whose
    // share beside the replay was measured in another dtype (CS336's 256-token step from the autocast
    // steps, 1.5% and 0.8% over with the share, then 2.5% and 2.0% under, is 1.4% under both ways since the
    // plan releases the last layer's MLP tensors before its softmax's backward), and those with no replay of
    // their code.
    // (CS336's 1,024-token forward calibrated on its 512-token autocast forward, 1.5% over fitted against
    // the plain profile's tables, is 0.2% under against cs336_basics', Calibration::codeTables.)
    const std::map<std::string, double> beyond = {
        // Its step replayed (core/plan/cs336replay.h) where the 3% fraction was 6.5% under: the cache holds
        // 10.1% beyond the tensors. The run compiled its model (the trace's forward and backward allocations
        // come from Inductor's kernels, AOT autograd's wrappers) and stepped the hand-written AdamW eagerly;
        // the replay is the eager model's (it copies each weight's gradient as the eager einsum's backward
        // makes AccumulateGrad do), whose order leaves the cache a little differently.
        {"cs336-basics-small-gpt2vocab-1x64-compiled", -0.029},
        {"cs336-xl-256-forward-zero-grad-after-bf16-autocast-calibrated-from-fp32", -0.047},
        {"cs336-xl-256-forward-zero-grad-after-calibrated-from-bf16-autocast", 0.055},
        {"cs336-small-32x256-no-optimizer-calibrated", -0.036}, // allocated 4.2% under too
        // NiuHuangxiaozi's autocast step calibrated on its fp32 steps: its cache holds 23.4% beyond the
        // tensors, where the replay of the package's step at its shapes and the share its fp32 run kept
        // beside
        // that replay (5.5%) hold 13.3%: this code makes exp(x - max) twice in every softmax, and the second
        // fp32 copies' segments are not the package's. Until its vocabulary-sized tensors were read at their
        // autocast widths (9.7% over in allocated), the over-planned logits stood for the cache (+0.4%).
        {"cs336-basics-niu-small-200-step-bf16-autocast-calibrated-from-100", -0.097}};
    double least = 1, most = 0;
    std::size_t fits = 0;
    for (const CaseResult& r : measuredValidation().results) {
        if (!r.traced)
            continue;
        QVERIFY2(r.reserved.measured > 0, r.c->id.c_str());
        const double cache = r.reserved.measured / r.measured - 1; // the trace's own counters
        if (r.c->role == "validate") {
            least = std::min(least, cache);
            most = std::max(most, cache);
            continue;
        }
        if (r.c->stack != "cs336_basics" && !r.calibrated)
            continue; // the plain profile's own misses, allocated's too
        ++fits;
        if (r.c->id == "cs336-basics-small-gpt2vocab-1x64-compiled") // its cache, as the README says
            QVERIFY2(std::abs(cache - 0.101) <= 0.0005, qPrintable(QString::number(100 * cache)));
        const QString what = QStringLiteral("%1: reserved %2%")
                                 .arg(QString::fromStdString(r.c->id))
                                 .arg(100 * r.reserved.error(), 0, 'f', 1);
        qInfo().noquote() << what;
        if (const auto it = beyond.find(r.c->id); it != beyond.end())
            QVERIFY2(std::abs(r.reserved.error() - it->second) <= 0.005, qPrintable(what));
        else
            QVERIFY2(std::abs(r.reserved.error()) <= 0.02, qPrintable(what));
    }
    QVERIFY(fits >= 40);
    QVERIFY2(std::abs(least - 0.017) <= 0.0005 && std::abs(most - 0.234) <= 0.0005,
             qPrintable(QStringLiteral("%1% to %2%").arg(100 * least).arg(100 * most)));
}

void TestAttribution::measuredValidateAgainstTheTargets_data() {
    QTest::addColumn<QString>("counter");
    QTest::addColumn<double>("recordedMedian"); // when last looked at: a regression guard while they miss
    QTest::addColumn<double>("recordedWorst");
    QTest::newRow("allocated") << QStringLiteral("allocated") << 0.082 << 0.235;
    QTest::newRow("reserved") << QStringLiteral("reserved") << 0.090 << 0.228;
    QTest::newRow("active") << QStringLiteral("active") << 0.082 << 0.235;
}

void TestAttribution::measuredValidateAgainstTheTargets() {
    QFETCH(QString, counter);
    QFETCH(double, recordedMedian);
    QFETCH(double, recordedWorst);
    const Validation& v = measuredValidation();
    std::vector<double> errors;
    for (const CaseResult& r : v.results)
        if (r.c->role == "validate" && r.c->stack == "pytorch" && !r.calibrated) {
            QVERIFY(r.traced);
            QCOMPARE(r.c->metric, std::string("allocated"));
            const CounterReading k = counter == "reserved" ? r.reserved
                                     : counter == "active" ? r.active
                                                           : CounterReading{r.measured, r.estimated};
            // Every one of these traces records the counter; none is a first step.
            QVERIFY2(k.measured > 0 && k.estimated > 0, r.c->id.c_str());
            errors.push_back(std::abs(k.estimated / k.measured - 1));
        }
    QCOMPARE(errors.size(), size_t(10));
    std::sort(errors.begin(), errors.end());
    const double median = (errors[4] + errors[5]) / 2, worst = errors[9];
    const QString what = QStringLiteral("validate, %1: median %2%, worst %3%")
                             .arg(counter)
                             .arg(100 * median, 0, 'f', 1)
                             .arg(100 * worst, 0, 'f', 1);
    qInfo().noquote() << what;
    // Guarded against getting worse while the misses stand (a regression guard, not a tolerance).
    QVERIFY2(median <= recordedMedian + 0.005 && worst <= recordedWorst + 0.005, qPrintable(what));
    QEXPECT_FAIL("",
                 "The worst is Athrun0109's 2.7B forward at 512 tokens with autograd on while its loop holds "
                 "the previous forward's graph: 23.5% under (reserved 22.8%), two graphs of the package's "
                 "softmax, which keeps four score-sized tensors where generic code keeps two (its 128-token "
                 "forward 10.4% under). Next, CS336's 1,024-token forward, 11.7% under in allocated and "
                 "18.3% in reserved, whose cache holds 11.4% beyond its tensors (each 256 MiB score-sized "
                 "tensor in a segment of its own) where the plain profile plans 3%. cs336_basics' profile, "
                 "read from that code, plans all three within 0.3%, and replays their forwards through the "
                 "allocator's model; no forward of plain PyTorch is replayed (its op order is the code's, "
                 "which the profile does not know).",
                 Continue);
    QVERIFY2(worst <= 0.12, qPrintable(what));
    if (counter == "reserved")
        QEXPECT_FAIL("reserved",
                     "The median is 9.0%: the same runs as allocated, and what the allocator reserves "
                     "beyond its tensors is planned as 3% of them where these runs' caches hold 0.2% "
                     "(Athrun0109's autocast step) to 11.4% (CS336's 1,024-token forward).",
                     Continue);
    else
        QEXPECT_FAIL(
            "",
            "The median is 8.2%: CS336's 512- and 1,024-token training runs under bf16 autocast, "
            "uncalibrated, are 7.7% and 9.7% under, its 1,024-token forward 11.7% under and its 512-token "
            "forward under autocast 3.3% under; notHanmin's XL forwards (another hand-written model) 8.6% "
            "under in fp32 and 4.3% under autocast; Athrun0109's 2.7B steps 2.2% and 1.0% under, its "
            "forwards holding two graphs 10.4% and 23.5%. The plain-PyTorch profile plans what a generic "
            "module "
            "keeps, and these hand-written models keep more (CS336's softmax: four score-sized tensors at "
            "once in the forward where generic code holds its input and output, five fp32 temporaries in the "
            "last layer's backward; its SiLU's extra tensor, at 1,024 tokens 2.2 GiB in all in the step; the "
            "XL model's two score copies a layer and RoPE tables built in every forward). The forwards keep "
            "no KV cache and say so (inference.kv_cache false); until that could be said the profile planned "
            "a cache they never held, which put the 1,024-token forward 6.9% over. Calibrated on their own "
            "runs they come within 4%, and the cs336_basics profile, read from CS336's code, within 0.2% (a "
            "fit profile: its rows are fit), which compare and the window name when a trace's stacks run "
            "through cs336_basics (codeOriginFromTheStacks). Active is allocated in these single-stream "
            "runs.",
            Continue);
    QVERIFY2(median <= 0.05, qPrintable(what));
}

// Calibration out of sample: the plain-PyTorch profile calibrated on Wedsonlin's medium model at 128 and 256
// tokens in fp32 (its two training traces, or its two forward traces), or at 256 alone, predicting the
// published peaks of the 2.7B model (hidden 2,560, 32 layers) from three other students' repositories, at 128
// to 512 tokens, under bf16 autocast and in fp32, on one and two GPUs, forward only and before and after the
// step; and forwards with autograd on (inference.grad_mode "enabled"), told by the training runs' tables.
// The runs no rule was chosen on (examples/measured/cases.json, role validate, calibrate_on):
// within the issue's 10% at other lengths and under autocast each, and a median within 5%. And another
// student's own code (kkaitlyn111/cs336-a2-systems, whose snapshots this repository may not copy): the plain
// profile calibrated on its 128-token fp32 forward with autograd on alone, its factors kept in the scenarios,
// predicting the same forward at 256 and 512 tokens and under bf16 autocast at 128 to 512; calibrated on its
// 128-token first step, the steps at 256 and 512. When first computed: the fp32 forwards to the byte, the
// autocast ones +0.1%, -0.3% and -1.8%, the steps -0.1%; in reserved the forwards within 1.9%, the steps
// 7.5% and 10.1% under (the plan's 3% beside the cache a first step leaves). The calibration learns the
// allocator's overhead from its run since then (the steps' reserved rows are fit: that rule was written
// because of them); the forwards' reserved moved from +1.9%, +0.6%, +1.5%, +0.6% and -0.5% to +0.5%, -0.7%,
// +0.2%, -0.7% and -1.8%. The same twelve with the cs336_basics profile (its factors kept in scenarios of
// their own): calibration kept that profile's moments and carried reserved through its replay since they
// came, which moved them from +1.0%, +0.9%, +0.8%, +0.9% and -0.0% allocated (+1.5%, +0.1%, +0.9%, +0.5%,
// -0.1% reserved) to +0.0%, +0.0%, +0.4%, +0.2%, -1.0% (+0.1%, -0.5%, +0.1%, +0.1%, -1.0%), the steps
// -0.1% before and after. And twenty-one of the published 2.7B runs planned with the cs336_basics profile
// calibrated on the medium model's 128-token step or forward alone (computed once, after those rules):
// within 1.2%; notHanmin's two traced XL forwards from its 128-token step, 1.4% under. NiuHuangxiaozi's own
// model calibrated on its 100-token forward or steps alone (computed once): the forwards at 150 and 200
// tokens to the byte, the steps 0.9%, 0.7% (to the byte since a step's second cuBLAS workspace is read) and,
// under autocast, 1.3% under; its forward under autocast 14.8%
// under, until an fp32 run's score tensors were read at their autocast widths by the operator that made each
// (that row is fit since: the rule was written for it). The autocast step then went to 9.2% over: its scores
// as the run holds them, the plan's logits-sized tensors twice the run's; and to 10.1% when calibration came
// to read the backward thread's cuBLAS workspace (the fp32 steps at 150 and 200 tokens from 0.9% and 0.7%
// under to the byte), a named expected failure, until the loss's vocabulary-sized tensors too were read at
// their autocast widths by operator where autocast decides each one's (1.7% under since, and fit: that rule
// was written for it). kkaitlyn's autocast forwards with
// the 2-byte factor their fp32 file gives that way (x1.17, what the autocast files read themselves): from
// +0.4%, +0.2% and -1.0% to +0.7%, +1.2% and +1.7% (the profile), +0.1%, -0.3% and -1.8% to +0.4%, +0.7% and
// +0.9% (plain).
void TestAttribution::calibratedValidatePredictions() {
    const Validation& v = measuredValidation();
    std::vector<double> errors;
    std::size_t ownFactors = 0;
    for (const CaseResult& r : v.results)
        if (r.c->role == "validate" && r.calibrated) {
            QVERIFY(r.c->plainPytorch || r.c->stack == "pytorch" || r.c->stack == "cs336_basics");
            if (r.c->calibrateOn.empty()) {
                ++ownFactors;
                QVERIFY(r.c->id.find("-kkaitlyn") != std::string::npos);
            }
            const QString what = QStringLiteral("%1: %2%")
                                     .arg(QString::fromStdString(r.c->id))
                                     .arg(100 * r.error(), 0, 'f', 1);
            qInfo().noquote() << what;
            QVERIFY2(std::abs(r.error()) <= 0.10, qPrintable(what));
            errors.push_back(std::abs(r.error()));
        }
    QCOMPARE(ownFactors, size_t(24));
    QCOMPARE(errors.size(), size_t(91));
    std::sort(errors.begin(), errors.end());
    const double median = errors[errors.size() / 2];
    QVERIFY2(median <= 0.05, qPrintable(QString::number(100 * median, 'f', 1) + "%"));
}

// Sizes come from the file: three live allocations of 2^62 bytes add up past INT64_MAX. Sums saturate (the
// ASan/UBSan build fails on a signed overflow), so totals, differences and JSON stay meaningful.
void TestAttribution::hugeSizesSaturate() {
    const std::string big = std::to_string(std::int64_t(1) << 62);
    std::string events;
    for (int i = 0; i < 3; ++i)
        events += std::string(i ? ", " : "") + R"({"action": "alloc", "addr": )" +
                  std::to_string(4096 * (i + 1)) + R"(, "size": )" + big + R"(, "stream": 0, "time_us": )" +
                  std::to_string(i + 1) + "}";
    const Trace t = readTrace(R"({"segments": [], "device_traces": [[)" + events + "]]}");
    const TraceSummary s = summarize(t);
    const TraceIndex index(t.devices.at(0), s.devices.at(0));
    const auto rules = AttributionRules::pytorchDefaults();
    const Attribution a = attribute(t, index, index.peakAfter(), rules);
    QCOMPARE(a.total, std::numeric_limits<std::int64_t>::max());
    // The diff of the run against an empty one: saturated differences, and JSON that says so.
    const Trace empty = readTrace(
        R"({"segments": [], "device_traces": [[{"action": "alloc", "addr": 8, "size": 1, "stream": 0, "time_us": 1}]]})");
    const TraceSummary es = summarize(empty);
    const TraceIndex ei(empty.devices.at(0), es.devices.at(0));
    const TraceDiff d = diffAtPeaks(empty, ei, t, index, rules);
    QCOMPARE(d.difference(), std::numeric_limits<std::int64_t>::max() - 1);
    const TraceDiff r = diffAtPeaks(t, index, empty, ei, rules);
    QCOMPARE(r.difference(), 1 - std::numeric_limits<std::int64_t>::max());
    const json j = traceDiffToJson(r, "a", "b", 10);
    QVERIFY(j.at("unmatched").at(0).at("a_bytes").get<std::int64_t>() ==
            std::numeric_limits<std::int64_t>::max());
}

// A loop that calls zero_grad after its forward (Athrun0109's: output = model(x); loss = mean(output);
// optimizer.zero_grad(); loss.backward(); optimizer.step()) holds the previous step's gradients through the
// forward, made before the recording began: the trace has only their frees, in zero_grad. At the forward's
// end they are the model's parameters once more: 4 x 3,406,809,600 bytes (2 V d + L (4 d^2 + 3 d f + 2 d) + d
// at V 10,000, d 2,560, f 10,240, L 32). Read by the stack of their free, the optimizer's rule had called
// them step scratch (temporaries), and compare showed 12.69 GiB of gradients planned and none measured.
void TestAttribution::zeroGradFreesGradients() {
    const Run run = loadRun("cs336-basics/cs336-2.7b-128-step-zero-grad-after-athrun",
                            "cs336_Athrun0109_2.7b_128_step_memory_snapshot.pickle");
    const TraceIndex& index = *run.trace->indexes.at(0);
    const double parameters =
        2.0 * 10000 * 2560 + 32.0 * (4.0 * 2560 * 2560 + 3.0 * 2560 * 10240 + 2 * 2560) + 2560;
    QCOMPARE(parameters, 3406809600.0);
    const auto rules = AttributionRules::pytorchDefaults();
    const Attribution a = attribute(run.trace->trace, index, index.peakAfter(), rules, &run.scenario);
    QCOMPARE(static_cast<double>(a.bytes[static_cast<std::size_t>(MeasuredCategory::Gradients)]),
             4 * parameters);
    QCOMPARE(static_cast<double>(a.bytes[static_cast<std::size_t>(MeasuredCategory::OptimizerStates)]),
             8 * parameters);
    QCOMPARE(a.bytes[static_cast<std::size_t>(MeasuredCategory::Temporaries)], std::int64_t(0));
    // Without the rule, the same frees decide by the optimizer's file: what is left of a state's size is
    // step scratch.
    AttributionRules without = rules;
    std::erase_if(without.rules, [](const AttributionRule& r) { return r.match == "zero_grad"; });
    QCOMPARE(without.rules.size() + 1, rules.rules.size());
    const Attribution b = attribute(run.trace->trace, index, index.peakAfter(), without, &run.scenario);
    QCOMPARE(b.bytes[static_cast<std::size_t>(MeasuredCategory::Gradients)], std::int64_t(0));
    QCOMPARE(static_cast<double>(b.bytes[static_cast<std::size_t>(MeasuredCategory::Temporaries)]),
             4 * parameters);
}

// inference.previous_output_held: a forward with autograd on while the loop still holds the previous
// forward's output, and through it that forward's graph (Athrun0109's forward_only loop, which rebinds
// `output` only when the next forward returns). The graph, by hand from cs336_basics' code for the 2.7B model
// at 4 x 128 tokens in fp32, per token and layer: ln1's saved input, rms and normalised x (8 d + 4), the
// q/k/v einsums' shared input (4 d), RoPE's rotated Q and K (8 d), V (4 d), the softmax's max indices and sum
// (a x (8 + 4)); after the softmax the heads' output (4 d), ln2 (8 d + 4), w1/w3's input (4 d) and SwiGLU's
// five f-wide tensors (20 f); the scores exp saved and P the P @ V einsum saved (a x s x 8); the (s, s) bool
// mask once a layer; the final norm (8 d + 4) and the head's input (4 d) per token; the logits (4 V per
// token). The plan with it is the plan without plus exactly that, and the trace agrees: its peak less its end
// (one graph gone) is that graph within 0.1%.
void TestAttribution::previousOutputHeldIsAWholeGraph() {
    const double d = 2560, f = 10240, a = 32, s = 128, L = 32, V = 10000, tokens = 4 * s;
    const double perTokenLayer =
        (8 * d + 4) + 4 * d + 8 * d + 4 * d + a * 12 + 4 * d + (8 * d + 4) + 4 * d + 20 * f;
    const double graph = L * tokens * perTokenLayer + L * tokens * a * s * 8 + L * s * s +
                         tokens * (8 * d + 4 + 4 * d) + tokens * 4 * V;
    QCOMPARE(graph, 5613193216.0);
    const Run run = loadRun("cs336-basics/cs336-2.7b-128-forward-previous-graph-athrun",
                            "cs336_Athrun0109_2.7b_128_forward_memory_snapshot.pickle");
    QVERIFY(run.scenario.inference.previousOutputHeld);
    json doc = run.scenario.document;
    doc["inference"]["previous_output_held"] = false;
    const Scenario one = scenarioFromJson(doc, run.scenario.baseDir);
    const Estimate held = estimate(run.scenario), alone = estimate(one);
    QCOMPARE(held.allocatedPeakBytes - alone.allocatedPeakBytes, graph);
    const DeviceSummary& trace = run.trace->summary.devices.at(0);
    const double gone = static_cast<double>(trace.peakAllocated - trace.finalAllocated);
    QVERIFY2(std::abs(gone / graph - 1) <= 0.001, qPrintable(QString::number(gone, 'f', 0)));
    // The plan against the run, allocated and reserved (the replay holds the first pass's tensors).
    QVERIFY(std::abs(held.allocatedPeakBytes / static_cast<double>(trace.peakAllocated) - 1) <= 0.001);
    QVERIFY(std::abs(held.reservedPeakBytes / static_cast<double>(trace.peakReserved) - 1) <= 0.001);
    QVERIFY(held.reservedPeakBytes > alone.reservedPeakBytes + graph);
    // Attributed at the peak, the previous graph is activations: its tensors were made before the recording
    // began and dropped during it, when the loop rebound `output`, a stack no rule names; their sizes are the
    // model's activations at the scenario's shape (the tensor table's shapes). Both graphs: all but the few
    // tensors whose size is no shape of the model (RoPE's gathered tables, the loss's scalars).
    const Attribution at =
        attribute(run.trace->trace, *run.trace->indexes.at(0), run.trace->indexes.at(0)->peakAfter(),
                  AttributionRules::pytorchDefaults(), &run.scenario);
    const double activations =
        static_cast<double>(at.bytes[static_cast<std::size_t>(MeasuredCategory::Activations)]);
    QVERIFY2(activations <= 2 * graph && activations >= 0.999 * 2 * graph,
             qPrintable(QString::number(activations, 'f', 0)));
    QVERIFY(at.bytes[static_cast<std::size_t>(MeasuredCategory::Unattributed)] < 16 * 1048576);
    // Calibrated with a scenario that plans one graph, the fit says what the run held besides; with the
    // setting, nothing.
    const auto rules = AttributionRules::pytorchDefaults();
    const CalibrationResult without =
        calibrate({{&one, &run.trace->trace, run.trace->indexes[0].get(), "run"}}, rules);
    QVERIFY2(without.runs.at(0).mismatch.find("inference.previous_output_held") != std::string::npos,
             without.runs.at(0).mismatch.c_str());
    const CalibrationResult with =
        calibrate({{&run.scenario, &run.trace->trace, run.trace->indexes[0].get(), "run"}}, rules);
    QVERIFY2(with.runs.at(0).mismatch.empty(), with.runs.at(0).mismatch.c_str());
    // What would make it fit offers dropping that output first, worth the difference of the two plans.
    bool offered = false;
    for (const Saving& saving : rankSavings(run.scenario))
        if (saving.id == "drop_previous_output") {
            offered = true;
            QCOMPARE(saving.bytesSaved, held.peakBytes - alone.peakBytes);
            QVERIFY(saving.patch == json({{"inference", {{"previous_output_held", false}}}}));
        }
    QVERIFY(offered);
    // Without autograd the output holds no graph: the setting changes nothing, and the scenario says so.
    doc["inference"]["previous_output_held"] = true;
    doc["inference"]["grad_mode"] = "no_grad";
    const Scenario noGrad = scenarioFromJson(doc, run.scenario.baseDir);
    QVERIFY(!noGrad.inference.previousOutputHeld);
    QVERIFY(std::any_of(noGrad.warnings.begin(), noGrad.warnings.end(), [](const std::string& w) {
        return w.find("inference.previous_output_held") != std::string::npos;
    }));
    doc["inference"].erase("previous_output_held");
    QCOMPARE(estimate(scenarioFromJson(doc, run.scenario.baseDir)).allocatedPeakBytes,
             estimate(noGrad).allocatedPeakBytes);
}

QTEST_GUILESS_MAIN(TestAttribution)
#include "tst_attribution.moc"
