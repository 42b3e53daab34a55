// SPDX-License-Identifier: GPL-3.0-or-later
// The course's recorded runs (examples/measured/cs336-basics) replayed allocation by allocation through the
// caching allocator's model (core/allocator): the replay's reserved and allocated peaks against the runs'.
// The profile's own accounting of the same runs is tst_cs336.
#include "core/allocator/replay.h"
#include "core/compare/trackrecord.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/io/jsontext.h"
#include "core/io/scenariojson.h"
#include "core/io/validation.h"
#include "core/plan/cs336replay.h"
#include "core/plan/settingnames.h"
#include "core/plan/workspaces.h"
#include "core/serve/estimate.h"
#include "core/trace/formats/tracereader.h"
#include "tests/testutil.h"

#include <QFile>
#include <QTest>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

using namespace headroom;
using namespace headroom::test;
using nlohmann::json;

class TestCs336Replay : public QObject {
    Q_OBJECT
private slots:
    void cs336ForwardReplayedThroughTheAllocator();
    void cs336StepReplayedThroughTheAllocator();
    void cs336ForwardWithGraphReplayed();
    void expandableSegmentsAsTheRecordingsReplayed();
    void reservedNotMonotoneInTheLength();
};

void TestCs336Replay::cs336ForwardReplayedThroughTheAllocator() {
    // cs336_basics' forward without autograd, tensor by tensor through the caching allocator's model
    // (core/plan/cs336replay.h), against Wedsonlin's four traced forwards (nsys_profile.py memory_profile:
    // five warm-up forwards of batch 4, then the recorded one, under torch.inference_mode). What the run
    // allocated at its peak is the replay's to the byte once the script's other tensor is added: its five
    // warm-up batches of token ids, 5 x 4 x s int64 (the replay holds the recorded batch's own).
    // Reserved, the plan's figure now, is the run's to the byte at 128 and 256 tokens in fp32 and 512 under
    // autocast, where a 3% fraction was 1.4% over to 0.9% under. At 1,024 tokens, where the cache holds
    // 11.4% beyond the tensors (each 256 MiB score-sized tensor in a segment of its own, one more than the
    // softmax has alive at once), 4 MiB under: the run made one 20 MiB segment where the replay made a 16 MiB
    // one (72 and 27 of them against 73 and 26), a placement the replay does not reproduce (the fraction was
    // 7.5% under).
    const Validation v =
        runValidation({loadValidationCases((measuredDir() + QStringLiteral("cases.json")).toStdString())},
                      AttributionRules::pytorchDefaults());
    const std::map<std::string, double> reservedOff = {{"cs336-basics-medium-1024-inference", -4194304}};
    std::size_t traced = 0;
    for (const CaseResult& r : v.results) {
        if (r.c->stack != "cs336_basics" || !r.traced || !r.c->calibrateOn.empty() || r.c->plainPytorch ||
            r.c->id.find("-niu-") !=
                std::string::npos) // a student's own model (cs336ForwardWithGraphReplayed)
            continue;
        const Scenario sc = loadScenarioFile(r.c->scenarioPath);
        const auto run =
            cs336ForwardRunOf(sc, workspaceBytes(sc),
                              static_cast<double>(sc.cluster.capacityBytes) - sc.overheads.cudaContextBytes);
        if (!run || run->graph) // with autograd on: cs336ForwardWithGraphReplayed
            continue;
        ++traced;
        const Cs336Replay replay = cs336ForwardReplay(*run);
        QVERIFY(replay.replayed);
        QCOMPARE(run->batch, 4.0);
        const double warmUpIds = 5 * 4 * run->shape.sequence * 8;
        QCOMPARE(replay.allocated + warmUpIds, r.measured);
        const auto off = reservedOff.find(r.c->id);
        QCOMPARE(r.reserved.estimated, replay.reserved);
        QCOMPARE(r.reserved.estimated - r.reserved.measured, off == reservedOff.end() ? 0.0 : off->second);
    }
    QCOMPARE(traced, size_t(4));
}

void TestCs336Replay::cs336StepReplayedThroughTheAllocator() {
    // cs336_basics' training step through the caching allocator's model (core/plan/cs336replay.h
    // cs336StepReplay): the forward saving what autograd keeps, the loss, the backward layer by layer (each
    // einsum weight's gradient copied by AccumulateGrad into the parameter's layout, as the traces show),
    // AdamW one parameter at a time. Against Wedsonlin's traced steps at 128 and 256 tokens (after warm-up
    // steps, so their states were made in a first step whose segments stay cached): the allocated peak within
    // 0.01% (what is left is row-sized: the loss's scalars and statistics, the warm-up batches' ids) and
    // reserved, the plan's figure, +0.4% and -1.6% (a 3% fraction: 2.2% under and 1.2% over; without the
    // copies -0.1% and -1.2%: where segments fall is that sensitive to the order of transient tensors); and
    // at 512 and 1,024 tokens under bf16 autocast (each einsum's cast of an fp32 input saved in its place,
    // the weights' casts cached and freed as each einsum's backward runs, gradients through each cast's
    // backward): the allocated peak within 0.002% (the profile's moments: 0.2% over at 1,024, the last
    // layer's casts kept to the backward's end) and reserved -0.02% and +0.17% (the fraction: +1.1%, -0.7%).
    // bcrafton's step, whose model was compiled (the scenario plans the eager one, AdamW being its peak):
    // allocated within 512 bytes, reserved 2.9% under where the fraction was 6.5%.
    // And kkaitlyn111's first steps of the 2.7B model (examples/measured, reserved peaks read from its
    // snapshots): the states made after the backward, beside the activations' cached segments, which at 128
    // tokens are 20 MiB at most where every matrix's state is 25 MiB or more: within 2% where the fraction
    // was 7-10% under (those three are fit: the replay was written because of them). notHanmin's XL forwards
    // (another student's own model, validate: a later step whose loop calls zero_grad after the forward,
    // with torch's one-tensor-at-a-time AdamW declared) are replayed since zero_grad's place and torch's
    // AdamW were written: reserved 1.5% and 4.8% under (the fraction: 2.0% and 5.8%); their allocated peaks
    // are the profile's question (this code keeps 1.3% more), not the replay's. NiuHuangxiaozi's steps
    // (a third student's model, validate, its own Adam planned as the package's): reserved 2.9%, 2.2% and
    // 6.2% under at 100, 150 and 200 tokens, 6.1% under autocast, read after the rest was set; its
    // allocated peaks (2.1% over to 1.8% under, 8.2% over under autocast) are the profile's question too.
    // Athrun0109's steps of the package at 2.7B, 4 x 128 (validate, zero_grad after the forward), read after
    // the rest was set: reserved 0.10% over in fp32 and 0.08% under autocast; allocated 0.06% and 0.07%
    // over, the loss's copies: the replay runs the package's cross-entropy at the forward's end, where the
    // old gradients make it the peak, and this script's loss is a mean of the logits.
    const Validation v =
        runValidation({loadValidationCases((measuredDir() + QStringLiteral("cases.json")).toStdString())},
                      AttributionRules::pytorchDefaults());
    const std::map<std::string, std::pair<double, double>> bounds = {
        // id: reserved error, its bound
        {"cs336-basics-medium-128-training", {0.0038, 0.0005}},
        {"cs336-basics-medium-256-training", {-0.0161, 0.0005}},
        {"cs336-basics-medium-512-training-bf16-autocast", {-0.0002, 0.0005}},
        {"cs336-basics-medium-1024-training-bf16-autocast", {0.0017, 0.0005}},
        {"cs336-basics-small-gpt2vocab-1x64-compiled", {-0.0287, 0.0005}},
        {"cs336-basics-2.7b-128-first-step-kkaitlyn-reserved", {0.0043, 0.0005}},
        {"cs336-basics-2.7b-256-first-step-kkaitlyn-reserved", {-0.0108, 0.0005}},
        {"cs336-basics-2.7b-512-first-step-kkaitlyn-reserved", {-0.0193, 0.0005}},
        {"cs336-basics-xl-256-forward-zero-grad-after", {-0.0149, 0.0005}},
        {"cs336-basics-xl-256-forward-zero-grad-after-bf16-autocast", {-0.0483, 0.0005}},
        {"cs336-basics-niu-small-100-step", {-0.0293, 0.0005}},
        {"cs336-basics-niu-small-150-step", {-0.0217, 0.0005}},
        {"cs336-basics-niu-small-200-step", {-0.0618, 0.0005}},
        {"cs336-basics-niu-small-200-step-bf16-autocast", {-0.0609, 0.0005}},
        {"cs336-basics-2.7b-128-step-zero-grad-after-athrun", {0.0010, 0.0005}},
        {"cs336-basics-2.7b-128-step-zero-grad-after-athrun-bf16-autocast", {-0.0008, 0.0005}}};
    std::size_t replayed = 0;
    for (const CaseResult& r : v.results) {
        if (r.c->stack != "cs336_basics" || r.calibrated || r.c->plainPytorch)
            continue;
        const Scenario sc = loadScenarioFile(r.c->scenarioPath);
        const auto run =
            cs336StepRunOf(sc, workspaceBytes(sc),
                           static_cast<double>(sc.cluster.capacityBytes) - sc.overheads.cudaContextBytes);
        if (!run || (!r.traced && r.c->metric != "reserved"))
            continue;
        ++replayed;
        const Cs336Replay replay = cs336StepReplay(*run);
        QVERIFY(replay.replayed && !replay.outOfMemory);
        const CounterReading reserved = r.traced ? r.reserved : CounterReading{r.measured, r.estimated};
        QCOMPARE(reserved.estimated, replay.reserved); // the plan's reserved is the replay's
        const double error = reserved.estimated / reserved.measured - 1;
        const QString what =
            QStringLiteral("%1: allocated %2 (the run: %3), reserved %4%")
                .arg(QString::fromStdString(r.c->id))
                .arg(replay.allocated, 0, 'f', 0)
                .arg(r.traced ? QString::number(r.measured, 'f', 0) : QStringLiteral("not read"))
                .arg(100 * error, 0, 'f', 2);
        qInfo().noquote() << what;
        const bool meanLoss = r.c->id.find("-athrun") != std::string::npos;
        if (meanLoss) // the package's cross-entropy replayed where the run took a mean: a few copies over
            QVERIFY2(replay.allocated > r.measured && replay.allocated / r.measured - 1 <= 0.001,
                     qPrintable(what));
        else if (r.traced && r.c->id.find("-xl-256-") == std::string::npos &&
                 r.c->id.find("-niu-") == std::string::npos) // the package's own code
            QVERIFY2(std::abs(replay.allocated / r.measured - 1) <= 0.0001, qPrintable(what));
        const auto b = bounds.find(r.c->id);
        QVERIFY2(b != bounds.end(), qPrintable(what));
        QVERIFY2(std::abs(error - b->second.first) <= b->second.second, qPrintable(what));
    }
    QCOMPARE(replayed, bounds.size());
}

void TestCs336Replay::cs336ForwardWithGraphReplayed() {
    // A forward with autograd on and no backward (inference.grad_mode "enabled": `_ = model(x)` in a
    // benchmark), fp32 parameters, replayed as the training step's forward (cs336replay.h, `graph`): every
    // tensor autograd saves stays with the logits the caller holds. Its allocated peak and the profile's
    // moments (the training table's forward) agree within 0.06% for the 2.7B model at 128 to 512 tokens, in
    // fp32 and under bf16 autocast; the plan's reserved is the replay's. Against kkaitlyn111's six such runs
    // (validate rows; the rule, a replay of the code's own forward, was the training step's), reserved
    // within 3.2%, each as close as its allocated peak is (its own code keeps more at 512 tokens than the
    // package the profile reads): where the 3% fraction was 0.2-2.0% off, partly the fraction's excess over
    // these runs' caches (1.5-2.4%) standing in for the tensors. Athrun0109's two traced forwards, whose
    // loop still holds the previous forward's output (inference.previous_output_held: the replay runs the
    // forward twice, the first pass's tensors kept), reserve 0.02% and 0.27% under at 128 and 512 tokens.
    const std::map<std::string, double> reservedError = {
        {"cs336-basics-2.7b-128-forward-with-graph-kkaitlyn-reserved", -0.0049},
        {"cs336-basics-2.7b-256-forward-with-graph-kkaitlyn-reserved", -0.0110},
        {"cs336-basics-2.7b-512-forward-with-graph-kkaitlyn-reserved", -0.0312},
        {"cs336-basics-2.7b-128-forward-with-graph-kkaitlyn-bf16-autocast-reserved", -0.0005},
        {"cs336-basics-2.7b-256-forward-with-graph-kkaitlyn-bf16-autocast-reserved", -0.0008},
        {"cs336-basics-2.7b-512-forward-with-graph-kkaitlyn-bf16-autocast-reserved", -0.0115},
        {"cs336-basics-2.7b-128-forward-previous-graph-athrun", -0.0002},
        {"cs336-basics-2.7b-512-forward-previous-graph-athrun", -0.0027}};
    const Validation v =
        runValidation({loadValidationCases((measuredDir() + QStringLiteral("cases.json")).toStdString())},
                      AttributionRules::pytorchDefaults());
    std::size_t replayed = 0, reserved = 0;
    for (const CaseResult& r : v.results) {
        if (r.c->stack != "cs336_basics" || r.calibrated)
            continue;
        const Scenario sc = loadScenarioFile(r.c->scenarioPath);
        if (sc.mode != Mode::Inference || !sc.inference.gradEnabled)
            continue;
        const auto run =
            cs336ForwardRunOf(sc, workspaceBytes(sc),
                              static_cast<double>(sc.cluster.capacityBytes) - sc.overheads.cudaContextBytes);
        QVERIFY(run && run->graph);
        const Cs336Replay replay = cs336ForwardReplay(*run);
        const Estimate est = estimate(sc);
        const QString what = QStringLiteral("%1: replay %2, profile %3, plan's reserved %4")
                                 .arg(QString::fromStdString(r.c->id))
                                 .arg(replay.allocated, 0, 'f', 0)
                                 .arg(est.allocatedPeakBytes, 0, 'f', 0)
                                 .arg(est.reservedPeakBytes, 0, 'f', 0);
        QVERIFY2(replay.replayed && std::abs(replay.allocated / est.allocatedPeakBytes - 1) <= 0.0006,
                 qPrintable(what));
        QCOMPARE(est.reservedPeakBytes, replay.reserved);
        ++replayed;
        if (r.c->metric == "reserved" || r.c->id.find("-athrun") != std::string::npos) {
            ++reserved;
            const double error = r.traced ? r.reserved.error() : r.error();
            const auto it = reservedError.find(r.c->id);
            QVERIFY2(it != reservedError.end(), qPrintable(what));
            QVERIFY2(std::abs(error - it->second) <= 0.0005,
                     qPrintable(what + QStringLiteral(": %1%").arg(100 * error)));
        }
    }
    // Cgfyufsygsm's six, kkaitlyn111's six allocated and six reserved, NiuHuangxiaozi's four (its own model:
    // the replay is the package's code, which the profile's moments follow), Athrun0109's two.
    QCOMPARE(replayed, size_t(24));
    // With the previous forward's graph held, the two derivations agree as they do for one graph: the
    // profile adds that graph as the forward ended to every moment, the replay runs the forward twice with
    // the first pass's tensors kept. Small, medium and 2.7B models, 64 to 1,024 tokens, fp32 and autocast.
    json base = parseJsonText(readTextFile(
        (measuredDir() +
         QStringLiteral("cs336-basics/cs336-2.7b-128-forward-previous-graph-athrun.headroom.json"))
            .toStdString()));
    base["cluster"]["gpu"] = "H200-141GB";
    struct Size {
        int hidden, ffn, layers, heads;
    };
    std::size_t shapes = 0;
    for (const Size& size : {Size{768, 3072, 12, 12}, Size{1024, 4096, 24, 16}, Size{2560, 10240, 32, 32}})
        for (const int tokens : {64, 256, 1024})
            for (const bool autocast : {false, true}) {
                if (size.hidden == 2560 && tokens == 1024)
                    continue; // two graphs past the GPU
                json doc = base;
                doc["model"]["hidden_size"] = size.hidden;
                doc["model"]["intermediate_size"] = size.ffn;
                doc["model"]["num_hidden_layers"] = size.layers;
                doc["model"]["num_attention_heads"] = size.heads;
                doc["model"]["num_key_value_heads"] = size.heads;
                doc["inference"]["context_length"] = tokens;
                if (autocast)
                    doc["inference"]["autocast"] = "bf16";
                const Scenario sc = scenarioFromJson(doc);
                const auto run = cs336ForwardRunOf(sc, workspaceBytes(sc), 0);
                QVERIFY(run && run->graph && run->previousGraph);
                const Cs336Replay replay = cs336ForwardReplay(*run);
                const double d = estimate(sc).allocatedPeakBytes / replay.allocated - 1;
                QVERIFY2(replay.replayed && std::abs(d) <= 0.0006,
                         qPrintable(QStringLiteral("hidden %1, %2 tokens%3: %4%")
                                        .arg(size.hidden)
                                        .arg(tokens)
                                        .arg(autocast ? QStringLiteral(", autocast") : QString())
                                        .arg(100 * d, 0, 'f', 3)));
                ++shapes;
            }
    QCOMPARE(shapes, size_t(16));
    QCOMPARE(reserved, reservedError.size());
}

void TestCs336Replay::expandableSegmentsAsTheRecordingsReplayed() {
    // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, which none of these runs set: the plan replays its
    // own tensors through the allocator's model with the setting (cluster.expandable_segments), and the
    // recorded runs' own allocations are replayed through the same model with it (allocator-whatif,
    // core/allocator/replay.h: from the blocks live when the trace starts, the higher of its two address
    // rules). Two programs, one written from the package's source and one recorded, under a setting neither
    // was fitted on: every traced run of the profile's within 1.6% (the package's own runs; notHanmin's XL
    // forwards, another student's model that allocates 2.8% more than the package would, 2.4% and 2.7%
    // under; NiuHuangxiaozi's, a third, 4.7% under to 1.4% over for its steps, and its forwards 5.0% to
    // 14.8% under, as their allocated peaks are: its softmax keeps a third score-sized tensor a layer;
    // Athrun0109's runs of the package at 2.7B, read after the rest, within 0.5%).
    // Each error is pinned, so that none moves unnoticed. The setting is offered as a saving where
    // the plan finds one (rankSavings, `expandable_segments`), worth what the plan stops reserving.
    const std::map<std::string, double> error = {
        {"cs336-basics-medium-128-inference", 0.0000},
        {"cs336-basics-medium-256-inference", 0.0000},
        {"cs336-basics-medium-512-inference-bf16-autocast", -0.0105},
        {"cs336-basics-medium-1024-inference", -0.0072},
        {"cs336-basics-medium-128-training", 0.0000},
        {"cs336-basics-medium-256-training", 0.0046},
        {"cs336-basics-medium-512-training-bf16-autocast", -0.0017},
        {"cs336-basics-medium-1024-training-bf16-autocast", 0.0033},
        {"cs336-basics-small-32x256-no-optimizer", 0.0122},
        {"cs336-basics-small-gpt2vocab-1x64-compiled", 0.0159},
        {"cs336-basics-xl-256-forward-zero-grad-after", -0.0244},
        {"cs336-basics-xl-256-forward-zero-grad-after-bf16-autocast", -0.0266},
        {"cs336-basics-niu-small-100-step", 0.0028},
        {"cs336-basics-niu-small-150-step", -0.0182},
        {"cs336-basics-niu-small-200-step", -0.0472},
        {"cs336-basics-niu-small-200-step-bf16-autocast", 0.0135},
        {"cs336-basics-niu-small-100-forward", -0.0498},
        {"cs336-basics-niu-small-150-forward", -0.0971},
        {"cs336-basics-niu-small-200-forward", -0.1186},
        {"cs336-basics-niu-small-200-forward-bf16-autocast", -0.1483},
        {"cs336-basics-2.7b-128-step-zero-grad-after-athrun", -0.0000},
        {"cs336-basics-2.7b-128-step-zero-grad-after-athrun-bf16-autocast", -0.0016},
        {"cs336-basics-2.7b-128-forward-previous-graph-athrun", -0.0044},
        {"cs336-basics-2.7b-512-forward-previous-graph-athrun", 0.0046}};
    AllocatorSettings expandable;
    expandable.expandableSegments = true;
    std::size_t checked = 0, offered = 0;
    for (const ValidationCase& c :
         loadValidationCases((measuredDir() + QStringLiteral("cases.json")).toStdString()).cases) {
        if (c.stack != "cs336_basics" || c.tracePath.empty() || !c.calibrateOn.empty() || c.plainPytorch)
            continue;
        const Scenario as = loadScenarioFile(c.scenarioPath);
        QVERIFY(!as.cluster.expandableSegments);
        nlohmann::json doc = as.document;
        doc["cluster"]["expandable_segments"] = true;
        const Scenario es = scenarioFromJson(doc, as.baseDir);
        const Estimate before = estimate(as), after = estimate(es);
        const DeviceWhatIf w = whatIfDevice(readTraceFile(c.tracePath), 0, expandable);
        const double e = after.reservedPeakBytes / static_cast<double>(w.bandHigh) - 1;
        const QString what = QStringLiteral("%1: the run replayed %2, the plan %3 (%4%); without: %5, %6")
                                 .arg(QString::fromStdString(c.id))
                                 .arg(w.bandHigh)
                                 .arg(after.reservedPeakBytes, 0, 'f', 0)
                                 .arg(100 * e, 0, 'f', 2)
                                 .arg(w.recorded.peakReserved)
                                 .arg(before.reservedPeakBytes, 0, 'f', 0);
        qInfo().noquote() << what;
        const auto it = error.find(c.id);
        QVERIFY2(it != error.end(), qPrintable(what));
        QVERIFY2(std::abs(e - it->second) <= 0.0005, qPrintable(what));
        ++checked;
        // The saving the plan offers is the difference of its two estimates.
        const double saved = before.peakBytes - after.peakBytes;
        bool found = false;
        for (const Saving& s : rankSavings(as))
            if (s.id == "expandable_segments") {
                found = true;
                QCOMPARE(s.bytesSaved, saved);
                QVERIFY(s.patch == nlohmann::json({{"cluster", {{"expandable_segments", true}}}}));
            }
        QCOMPARE(found, saved > 0);
        offered += found;
    }
    QCOMPARE(checked, error.size());
    QVERIFY(offered > 0);
}

void TestCs336Replay::reservedNotMonotoneInTheLength() {
    // What a fraction cannot say: the 2.7B model's first AdamW step (the package's own AdamW, after a
    // backward that left the activations' blocks cached), 4 x 384 against 4 x 512 tokens. AdamW makes the
    // moments after the backward; those of the MLP's matrices and the embeddings are 97.7 to 100 MiB, larger
    // than every cached block of 384 tokens' activations (the largest, the score tensors, 72 MiB; a block
    // over 10 MiB has a segment of its own, rounded to 2 MiB: c10/cuda/CUDACachingAllocator.cpp) and smaller
    // than 512 tokens' 128 MiB score blocks. So the longer step reserves less. The figures the README quotes
    // are printed and pinned to 0.05 GiB (the replay's output, so that it does not move unnoticed).
    const double scores384 = 4.0 * 32 * 384 * 384 * 4, scores512 = 4.0 * 32 * 512 * 512 * 4;
    const double mlpMoment = 2560.0 * 10240 * 4, embeddingMoment = 10000.0 * 2560 * 4;
    QVERIFY(scores384 < std::min(mlpMoment, embeddingMoment) &&
            std::max(mlpMoment, embeddingMoment) < scores512);
    const Scenario at128 = loadScenarioFile(
        (measuredDir() + QStringLiteral("cs336-basics/cs336-2.7b-128-first-step.headroom.json"))
            .toStdString());
    auto at = [&](int tokens, bool expandable) {
        nlohmann::json doc = at128.document;
        doc["training"]["sequence_length"] = tokens;
        doc["cluster"]["expandable_segments"] = expandable;
        return estimate(scenarioFromJson(doc, at128.baseDir));
    };
    const Estimate a = at(384, false), b = at(512, false), aEs = at(384, true);
    const double beyondA = a.perGpu[Category::AllocatorOverhead],
                 beyondB = b.perGpu[Category::AllocatorOverhead];
    const QString what = QStringLiteral("beyond the tensors: %1 GiB at 384 tokens, %2 GiB at 512; expandable "
                                        "segments save %3 GiB at 384")
                             .arg(beyondA / kGiB, 0, 'f', 2)
                             .arg(beyondB / kGiB, 0, 'f', 2)
                             .arg((a.peakBytes - aEs.peakBytes) / kGiB, 0, 'f', 2);
    qInfo().noquote() << what;
    QVERIFY2(b.allocatedPeakBytes > a.allocatedPeakBytes, qPrintable(what));
    QVERIFY2(b.reservedPeakBytes < a.reservedPeakBytes, qPrintable(what));
    QVERIFY2(std::abs(beyondA / kGiB - 10.70) < 0.05 && std::abs(beyondB / kGiB - 5.99) < 0.05,
             qPrintable(what));
    QVERIFY2(std::abs((a.peakBytes - aEs.peakBytes) / kGiB - 9.99) < 0.05, qPrintable(what));
    // The step between: at 448 tokens the score blocks are 98.0 MiB (a 98 MiB segment), at 452 99.8 MiB (a
    // 100 MiB one, as large as the MLP's moments): 8 GiB less reserved for four tokens more.
    const double at448 = at(448, false).perGpu[Category::AllocatorOverhead];
    const double at452 = at(452, false).perGpu[Category::AllocatorOverhead];
    qInfo().noquote() << QStringLiteral("beyond the tensors at 448 tokens %1 GiB, at 452 %2 GiB")
                             .arg(at448 / kGiB, 0, 'f', 2)
                             .arg(at452 / kGiB, 0, 'f', 2);
    QVERIFY(at448 - at452 > 8 * kGiB);
}

QTEST_GUILESS_MAIN(TestCs336Replay)
#include "tst_cs336replay.moc"
