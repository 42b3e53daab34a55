// SPDX-License-Identifier: GPL-3.0-or-later
// The cs336_basics profile (training.framework "cs336_basics") against the course's recorded runs
// (examples/measured/cs336-basics): its op-by-op accounting by hand, and the runs' peaks and the profile's
// peaks beside the replays of their allocations (tst_cs336replay). Apart from tst_frameworks, and the replays
// apart from these, because the replays of the real traces take minutes under the sanitizers.
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

class TestCs336 : public QObject {
    Q_OBJECT
private slots:
    void cs336BasicsStepByHand();
    void cs336BasicsForwardByHand();
    void cs336BasicsRecordedRuns();
    void cs336ForwardReplayAgreesWithTheProfile();
    void cs336StepReplayAgreesWithTheProfile();
    void cs336ForwardNearTheDevice();
    void cs336ForwardRepeatsItsBlocks();
};

namespace {

Scenario cs336Scenario(const char* file) {
    return loadScenarioFile(
        (measuredDir() + QStringLiteral("cs336-basics/") + QLatin1String(file)).toStdString());
}

// A cs336_basics scenario's model made another of the course's sizes (every head its own keys and values).
void setCs336Model(json& doc, int hidden, int ffn, int layers, int heads) {
    doc["model"]["hidden_size"] = hidden;
    doc["model"]["intermediate_size"] = ffn;
    doc["model"]["num_hidden_layers"] = layers;
    doc["model"]["num_attention_heads"] = heads;
    doc["model"]["num_key_value_heads"] = heads;
}

} // namespace

void TestCs336::cs336BasicsStepByHand() {
    // cs336_basics' medium model (V 10,000, d 1,024, d_ff 4,096, 24 layers, 16 heads) in fp32, 4 x 256
    // tokens, read from its code (docs/frameworks.md, "CS336 basics"). At the loss, each layer keeps ten
    // b·s·d fp32 tensors (the input and ln1's normalised x, their product with the weight, the rotated Q and
    // K, V, the heads' output made contiguous, the residual after attention, ln2's x and product), SwiGLU's
    // five b·s·d_ff (w1, sigmoid, x * sigmoid, w3, the product), exp's output and P (b·heads·s²), two fp32
    // rsqrt rows, max's int64 indices, the row sums and the (s, s) bool mask. The head keeps the final
    // norm's three; the loss holds the logits, exp's output, log-softmax's and its negation, each b·s·V fp32.
    const double b = 4, s = 256, d = 1024, f = 4096, heads = 16, V = 10000;
    const double layer = 10 * b * s * d * 4 + 5 * b * s * f * 4 + 2 * b * heads * s * s * 4 + 2 * b * s * 4 +
                         b * heads * s * 8 + b * heads * s * 4 + s * s;
    QCOMPARE(layer, 159653888.0);
    const double parameters = 2 * V * d + 24 * (4 * d * d + 3 * d * f + 2 * d) + d;
    QCOMPARE(parameters, 423183360.0);
    const double workspaces = 2 * 8519680.0; // cuBLAS's, forward and backward threads, on an A100
    const double byHand = parameters * 4 + parameters * 8 + workspaces + 24 * layer + 3 * b * s * d * 4 +
                          b * s * 4 + 4 * b * s * V * 4;
    const Estimate est = estimate(cs336Scenario("cs336-medium-256-training.headroom.json"));
    QCOMPARE(est.allocatedPeakBytes, byHand);
    // The recorded step (docs/measured.md) peaked at 9,103,544,320 bytes: 184,320 more, a few scalars.
    QVERIFY(std::abs(byHand / 9103544320.0 - 1) < 0.0001);

    // The same model at 128 tokens peaks in the hand-written AdamW (cs336_basics/optimizer.py): the states,
    // every gradient, and five temporaries the size of the largest parameter (the embedding's or the head's
    // 10,000 x 1,024) while it is stepped, beside the logits the loop still holds (`output`).
    const double step = parameters * (4 + 4 + 8) + workspaces + 5 * V * d * 4 + b * 128 * V * 4;
    const Estimate small = estimate(cs336Scenario("cs336-medium-128-training.headroom.json"));
    QCOMPARE(small.allocatedPeakBytes, step);
    QCOMPARE(small.peakPhase, Phase::Optimizer);
    QVERIFY(std::abs(step / 7013335044.0 - 1) < 0.0001);
}

void TestCs336::cs336BasicsForwardByHand() {
    // The 512-token forward under bf16 autocast and torch.inference_mode (nothing saved): at the softmax of a
    // layer past the first, the embedding's output (kept by forward's embedded_tokens), the layer's input,
    // ln1's output and the rotated Q and K (all fp32: RoPE multiplies by the fp32 cos/sin buffer), V (bf16
    // from its einsum), the scores, where's output and x - max (bf16), exp's output and P (fp32: exp is on
    // autocast's fp32 list), max's indices, the sums and the mask. The einsums cast views of the weights,
    // which autocast never caches: no weight copies stay.
    const double b = 4, s = 512, d = 1024, heads = 16;
    const double attention = 5 * b * s * d * 4 + b * s * d * 2 + 2 * b * heads * s * s * 2 +
                             2 * b * heads * s * s * 4 + b * heads * s * (8 + 4) + s * s;
    const double byHand = 423183360.0 * 4 + 8519680 + attention;
    const Estimate est = estimate(cs336Scenario("cs336-medium-512-inference-bf16-autocast.headroom.json"));
    QCOMPARE(est.allocatedPeakBytes, byHand);
    QCOMPARE(est.perGpu[Category::KvCache], 0.0);          // one forward over the sequence caches nothing
    QVERIFY(std::abs(byHand / 1949343744.0 - 1) < 0.0001); // the recorded forward's peak
}

void TestCs336::cs336BasicsRecordedRuns() {
    // Every run of cs336_basics' code the project holds, planned with its profile. The ten traced runs are
    // fit (the profile was read from the code while being checked against them), within 0.5% of their
    // allocated peaks (the 1,024-token autocast run: 0.2% over, the last layer's weight copies counted until
    // the backward's end where its backward frees them first). Thirty-six published peaks of four
    // students' 2.7B runs are given to 0.01 GiB (Wedsonlin's to 0.001): damek/cs336-assignment2-systems'
    // memory_viz_report.md (five fit: the bf16 forwards chose autocast's cache under torch.no_grad, the
    // 512-token steps training.first_step; seven validate) and ShibukiZero/assignment2-systems'
    // 1_1_6_memory/summary.md (twelve validate, steps after steps with the states made, on a Hopper GPU), six
    // of Cgfyufsygsm/CS336-assignment2-systems' forwards with autograd on (validate: inference.grad_mode
    // "enabled", the training table's saved tensors, written before they were compared), and three first
    // steps on two ranks from Wedsonlin's sharded_optimizer results, at the step and before it (validate:
    // torch's AdamW over all the states in fp32 and under autocast, and over each rank's half). Every one is
    // held to 1%, the validate runs also to the targets (median at most 5%, worst at most 12%). Nine more
    // runs are of a student's own implementation of the same assignment (kkaitlyn111/cs336-a2-systems:
    // forwards with autograd on in fp32 and under autocast, first steps; allocated and reserved peaks read
    // from its snapshots): not the code the profile was read from, so held to the validate targets alone.
    // When first compared, allocated 0.1-2.5% off (its fp32 forwards keep more at 256 and 512 tokens than
    // the staff code does); reserved within 2% for the forwards, 6.9-9.5% under for the first steps, whose
    // AdamW makes its states after the backward left its activations' segments cached where the plan
    // reserved 3% beyond its tensors. The step's replay through the allocator (cs336replay.h) was written
    // because of those three, which are fit since: within 3%. Two more are another student's own model
    // traced (notHanmin's XL forwards in fp32 and under autocast, a later step's with the previous
    // gradients alive): validate, every counter the trace records held to the targets. When first compared,
    // allocated and active 1.3% under in both, reserved 2.0% and 5.8% under (the 3% fraction: the replay
    // did not cover a zero_grad after the forward), 1.5% and 4.8% since it does. A third student's model,
    // traced (NiuHuangxiaozi's, d 512): three steps of its own Adam at 100, 150 and 200 tokens and under
    // autocast at 200, and three forwards with autograd on at the same lengths and under autocast at 200;
    // validate, planned as they came, when first compared: the steps 2.1% over to 1.8% under in allocated
    // and active (8.2% over under autocast), the forwards 6.2% to 11.7% under in fp32 and 14.8% under
    // autocast (its softmax keeps a third score-sized tensor a layer: a named expected failure below);
    // calibrated on the 100-token forward or steps alone, the others within 1.3%, but for the autocast
    // forward, 14.8% under. That one is fit since: the calibration reads an fp32 run's score tensors at
    // their autocast widths by the operator that made each because of it (within 1% now), and the autocast
    // step calibrated on the 100-token steps went from 1.3% under to 9.2% over with it (its scores as the
    // run holds them; its logits-sized tensors planned at twice the run's), and to 10.1% when calibration
    // came to read a step's second cuBLAS workspace (the fp32 steps at 150 and 200 tokens to the byte since).
    // Athrun0109's four traced runs of the package at 2.7B (steps at 128 tokens in fp32 and under autocast
    // with zero_grad after the forward, forwards with autograd on at 128 and 512 tokens while the loop
    // holds the previous forward's graph) came after every rule: validate, compared once. The steps within
    // 0.1% on every counter; the forwards 22.6% and 40.5% under until a scenario could say that the previous
    // output is held (inference.previous_output_held, read from the script: no constant), within 0.3% since;
    // the 512-token forward calibrated on the 128-token one alone and the autocast step on the fp32 one
    // within 0.2% (reserved 0.23% and 0.17% under).
    // Calibrated plans count
    // here too: four of the traced runs' planned from the 128-token forward or step alone (fit: calibration
    // keeps the profile's moments and carries reserved through its replay because of them), and fourteen of
    // kkaitlyn111's from its 128-token forward or first step, their factors kept in the scenarios (the first
    // steps' reserved fit, as above); and twenty-one of the published 2.7B runs planned from the medium
    // model's 128-token step or forward alone (validate, held to the calibration targets: within 10% each,
    // 5% at the median; when first computed, within 1.2%, the calibrated profile at most 0.2% further from
    // the runs than the uncalibrated one). notHanmin's two traced XL forwards are planned so too, calibrated
    // on the medium model's 128-token step (validate, every counter: allocated and active 1.4% under,
    // reserved 1.9% and 5.2% under when first computed, each within 0.4% of the uncalibrated plan).
    const Validation v =
        runValidation({loadValidationCases((measuredDir() + QStringLiteral("cases.json")).toStdString())},
                      AttributionRules::pytorchDefaults());
    std::size_t traced = 0, published = 0, ownCode = 0, acrossSizes = 0, packageValidate = 0;
    std::vector<double> validate;
    for (const CaseResult& r : v.results) {
        if (r.c->stack != "cs336_basics")
            continue;
        const QString what =
            QStringLiteral("%1: %2%").arg(QString::fromStdString(r.c->id)).arg(100 * r.error(), 0, 'f', 2);
        const bool studentsOwnModel = r.c->id.find("-kkaitlyn") != std::string::npos ||
                                      r.c->id.find("-xl-256-") != std::string::npos ||
                                      r.c->id.find("-niu-") != std::string::npos;
        // Athrun0109's runs are of the package itself (its attention written with @ in place of einsum,
        // its loss a mean of the logits), traced, and came after every rule: validate, held to the bound of
        // the package's own runs on every counter, calibrated or not.
        const bool anotherRunOfThePackage = r.c->id.find("-athrun") != std::string::npos;
        if (anotherRunOfThePackage) {
            ++packageValidate;
            QCOMPARE(QString::fromStdString(r.c->role), QStringLiteral("validate"));
            QVERIFY(r.traced);
            for (const CounterReading* counter : {&r.reserved, &r.active})
                QVERIFY2(counter->measured > 0 && std::abs(counter->error()) <= 0.005, qPrintable(what));
            QVERIFY2(std::abs(r.error()) <= 0.005, qPrintable(what));
            validate.push_back(std::abs(r.error()));
        } else if (r.traced && !studentsOwnModel) {
            ++traced;
            QCOMPARE(QString::fromStdString(r.c->role), QStringLiteral("fit"));
            QVERIFY2(std::abs(r.error()) <= 0.005, qPrintable(what));
        } else if (studentsOwnModel) {
            ++ownCode;
            // NiuHuangxiaozi's forward under autocast as it comes: every counter past the target.
            const bool autocastMiss = r.c->id == "cs336-basics-niu-small-200-forward-bf16-autocast";
            const char* const autocastWhy =
                "NiuHuangxiaozi's forward under bf16 autocast, 14.8% under as it comes (reserved 16.4%): "
                "this student's softmax computes exp(x - max) twice, three score-sized tensors a layer "
                "kept (two fp32 exps and the next einsum's bf16 cast of the division) where the package's "
                "keeps two, which the profile plans. Calibrated on the fp32 100-token forward, whose trace "
                "names each copy's operator, the plan holds them (fit, below).";
            // Its calibrated plans, which the rules reading autocast's widths by operator were written for
            // (the scores', the loss's vocabulary-sized tensors').
            const bool ruleWrittenFor =
                r.c->id == "cs336-basics-niu-small-200-forward-bf16-autocast-calibrated-from-100" ||
                r.c->id == "cs336-basics-niu-small-200-step-bf16-autocast-calibrated-from-100";
            if (autocastMiss)
                QEXPECT_FAIL("", autocastWhy, Continue);
            QVERIFY2(std::abs(r.error()) <= 0.12, qPrintable(what));
            if (r.traced) {
                QCOMPARE(QString::fromStdString(r.c->role),
                         ruleWrittenFor ? QStringLiteral("fit") : QStringLiteral("validate"));
                for (const CounterReading* counter : {&r.reserved, &r.active}) {
                    QVERIFY2(counter->measured > 0, qPrintable(what));
                    if (autocastMiss)
                        QEXPECT_FAIL("", autocastWhy, Continue);
                    QVERIFY2(std::abs(counter->error()) <= 0.12, qPrintable(what));
                }
            }
            if (r.c->role == "validate")
                validate.push_back(std::abs(r.error()));
            else if (ruleWrittenFor) // the forward within 1%; the step, from fp32 steps at half its length,
                // within 2% (1.7% under: activations 0.02 GiB under at its last layer's softmax backward)
                QVERIFY2(std::abs(r.error()) <= (r.c->id.find("-step-") != std::string::npos ? 0.02 : 0.01),
                         qPrintable(what));
            else // the three first steps' reserved peaks, which the step's replay was written for
                QVERIFY2(r.c->metric == "reserved" && std::abs(r.error()) <= 0.03, qPrintable(what));
        } else if (!r.c->calibrateOn.empty()) {
            ++acrossSizes;
            QCOMPARE(QString::fromStdString(r.c->role), QStringLiteral("validate"));
            QVERIFY2(std::abs(r.error()) <= 0.10, qPrintable(what));
            validate.push_back(std::abs(r.error()));
        } else {
            ++published;
            if (r.c->id == "cs336-basics-2.7b-256-forward-no-grad-bf16-autocast")
                QEXPECT_FAIL(
                    "",
                    "1.04% under (0.20 GiB): damek's no_grad forwards under autocast hold 0.12-0.20 GiB "
                    "beyond the plan at every length, as the fp32 forwards hold 0.10-0.12 GiB, which "
                    "neither the profile nor the forward's replay (19.04 GiB here) finds in the code. "
                    "Until the profile stopped counting the casts its forward has not made yet at the "
                    "last layer's softmax and silu (the replay showed them), that over-count hid it "
                    "at 256 and 512 tokens (0.5% under and 0.5% over then).",
                    Continue);
            QVERIFY2(std::abs(r.error()) <= 0.01, qPrintable(what));
            if (r.c->role == "validate")
                validate.push_back(std::abs(r.error()));
        }
    }
    QCOMPARE(traced, size_t(15));
    QCOMPARE(published, size_t(36));
    QCOMPARE(ownCode, size_t(50));
    QCOMPARE(acrossSizes, size_t(21));
    QCOMPARE(packageValidate, size_t(6));
    QCOMPARE(validate.size(), size_t(101));
    std::sort(validate.begin(), validate.end());
    QVERIFY(validate[validate.size() / 2] <= 0.05);
    QEXPECT_FAIL("", "the worst, 14.8%: NiuHuangxiaozi's forward under autocast as it comes (above)",
                 Continue);
    QVERIFY2(validate.back() <= 0.12, qPrintable(QString::number(100 * validate.back())));
}

void TestCs336::cs336ForwardReplayAgreesWithTheProfile() {
    // The forward's two derivations, the profile's moments (cs336basics.h: cs336Forward; the training table
    // with autograd on) and the replay's tensors in the code's order, compared over 860 shapes (the five
    // model sizes, 1 to 16 sequences of 32 to 8,192 tokens, fp32 and bf16 parameters, with and without
    // autocast, each grad mode): within 0.05% on all but eight bf16-parameter ones (0.05% to 0.09%). These
    // showed what either lacked, each with the profile's error before against the replay.
    struct Shape {
        int hidden, ffn, layers, heads, batch, tokens;
        const char* gradMode;
        bool autocast = true;
        const char* weights = "fp32";
    };
    const std::pair<Shape, const char*> shapes[] = {
        {{2560, 10240, 32, 32, 1, 1024, "no_grad"},
         "+1.07%: autocast's cache counted whole at the last layer's softmax, before its output "
         "projection's, "
         "MLP's and the head's casts are made"},
        {{2560, 10240, 32, 32, 1, 64, "inference_mode"}, "-0.38%: the head's own cast while its einsum runs"},
        {{768, 3072, 12, 12, 8, 256, "enabled"},
         "-0.24%: the final norm's output beside the head's saved cast"},
        {{768, 3072, 12, 12, 8, 1024, "enabled"}, "-0.18%: the P @ V einsum's output and its copy"},
        {{2560, 10240, 32, 32, 8, 64, "inference_mode"}, "-0.18%: w3's einsum with its own cast"},
        {{2560, 10240, 32, 32, 8, 256, "no_grad"}, "-0.10%: w3's cast made by the MLP's product"},
        {{768, 3072, 12, 12, 16, 8192, "no_grad", true, "bf16"},
         "+49%: the replay's exp in bf16 for a bf16 model under autocast, whose fp32 list takes it to fp32"}};
    json base = parseJsonText(
        readTextFile((measuredDir() +
                      QStringLiteral("cs336-basics/cs336-medium-512-inference-bf16-autocast.headroom.json"))
                         .toStdString()));
    base.erase("x_measured");
    base["cluster"]["gpu"] = "H200-141GB";
    for (const auto& [shape, before] : shapes) {
        json doc = base;
        setCs336Model(doc, shape.hidden, shape.ffn, shape.layers, shape.heads);
        doc["inference"]["batch_size"] = shape.batch;
        doc["inference"]["context_length"] = shape.tokens;
        doc["inference"]["grad_mode"] = shape.gradMode;
        doc["inference"]["weight_dtype"] = shape.weights;
        if (!shape.autocast)
            doc["inference"].erase("autocast");
        const Scenario sc = scenarioFromJson(doc);
        const auto run = cs336ForwardRunOf(sc, workspaceBytes(sc), 0);
        QVERIFY(run);
        const Cs336Replay replay = cs336ForwardReplay(*run);
        QVERIFY(replay.replayed);
        const double d = estimate(sc).allocatedPeakBytes / replay.allocated - 1;
        QVERIFY2(std::abs(d) <= 0.0005,
                 qPrintable(QStringLiteral("%1 x %2 tokens, hidden %3, %4: %5% (was %6)")
                                .arg(shape.batch)
                                .arg(shape.tokens)
                                .arg(shape.hidden)
                                .arg(QString::fromLatin1(shape.gradMode))
                                .arg(100 * d, 0, 'f', 3)
                                .arg(QString::fromLatin1(before))));
    }
}

void TestCs336::cs336StepReplayAgreesWithTheProfile() {
    // Two derivations of the same step: the profile's moments (cs336basics.h: what each layer saves,
    // the last layer's softmax backward, the loss, AdamW's five temporaries) and the replay's tensors in the
    // code's order. Their allocated peaks agree within 0.05% over the medium model at 128, 256 and 1,024
    // tokens and the 2.7B at 128 and 512 in fp32, first steps and later ones, with one and two micro-batches
    // accumulated (the replay adds each micro-batch's weight gradients into the .grad the first one made),
    // and the recorded autocast steps. Past 128 blocks' forwards and backwards (the medium model's later
    // step with three micro-batches: 24 x 3 x 2) nothing is replayed.
    // The profile's allocated peak over the replay's, less one, for a scenario the replay covers (NaN
    // otherwise); and that as a message when it is beyond 0.05%.
    auto difference = [](const json& doc) {
        const Scenario sc = scenarioFromJson(doc);
        const auto run = cs336StepRunOf(sc, workspaceBytes(sc), 0);
        const Cs336Replay replay = run ? cs336StepReplay(*run) : Cs336Replay{};
        return replay.replayed ? estimate(sc).allocatedPeakBytes / replay.allocated - 1
                               : std::numeric_limits<double>::quiet_NaN();
    };
    // The most the step's chart draws allocated (what the allocator hands out: no context, no cache).
    auto chartPeak = [](const Scenario& sc) {
        double highest = 0;
        for (const TimelinePoint& t : phaseTimeline(sc, 0, 2))
            highest = std::max(highest, t.bytes.total() - t.bytes[Category::AllocatorOverhead] -
                                            t.bytes[Category::CudaContext]);
        return highest;
    };
    auto disagreement = [&](const json& doc, const QString& what) {
        const double d = difference(doc);
        return std::abs(d) <= 0.0005
                   ? QString()
                   : QStringLiteral("%1: the profile %2% off the replay").arg(what).arg(100 * d);
    };
    auto scenario = [](const char* file) {
        return parseJsonText(readTextFile(
            (measuredDir() + QStringLiteral("cs336-basics/") + QString::fromLatin1(file)).toStdString()));
    };
    std::size_t compared = 0;
    for (const char* file :
         {"cs336-medium-128-training.headroom.json", "cs336-medium-256-training.headroom.json",
          "cs336-2.7b-128-first-step-kkaitlyn.headroom.json",
          "cs336-2.7b-512-first-step-kkaitlyn.headroom.json"})
        for (const int accumulation : {1, 2})
            for (const int length : {0, 1024}) {
                json doc = scenario(file);
                doc["training"]["gradient_accumulation_steps"] = accumulation;
                if (length > 0) {
                    if (doc["model"]["hidden_size"] != 1024)
                        continue; // the 2.7B model at 1,024 tokens needs more than the GPU
                    doc["training"]["sequence_length"] = length;
                }
                const QString error =
                    disagreement(doc, QStringLiteral("%1, %2 micro-batches, %3 tokens")
                                          .arg(QString::fromLatin1(file))
                                          .arg(accumulation)
                                          .arg(doc["training"]["sequence_length"].get<int>()));
                QVERIFY2(error.isEmpty(), qPrintable(error));
                ++compared;
            }
    QCOMPARE(compared, size_t(12));
    // The same with torch.optim.AdamW in each implementation (its states made before any update, the
    // denominator's temporaries: two at a time, all at once, none) and zero_grad before the forward, after
    // it or never, for a later step of the medium model and a first one of the 2.7B.
    compared = 0;
    for (const char* file :
         {"cs336-medium-128-training.headroom.json", "cs336-2.7b-512-first-step-kkaitlyn.headroom.json"})
        for (const char* adamw : {"cs336_basics", "for_loop", "foreach", "fused"})
            for (const char* zeroGrad : {"before_forward", "after_forward", "keep"})
                for (const int accumulation : {1, 2}) {
                    json doc = scenario(file);
                    doc["training"]["optimizer_implementation"] = adamw;
                    doc["training"]["zero_grad"] = zeroGrad;
                    doc["training"]["gradient_accumulation_steps"] = accumulation;
                    const QString error =
                        disagreement(doc, QStringLiteral("%1, %2, zero_grad %3, %4 micro-batches")
                                              .arg(QString::fromLatin1(file), QString::fromLatin1(adamw),
                                                   QString::fromLatin1(zeroGrad))
                                              .arg(accumulation));
                    QVERIFY2(error.isEmpty(), qPrintable(error));
                    ++compared;
                }
    QCOMPARE(compared, size_t(48));
    // And under bf16 autocast, every recorded step the replay covers: the medium model at 512 and 1,024
    // tokens, the 2.7B's first steps and later ones at 128 to 512 (the profile's moment in the last layer's
    // backward counted every weight's cast until the step's replay showed the head's and that layer's MLP
    // and output projection casts freed by then: 0.2% to 0.4% over before).
    compared = 0;
    for (const char* file : {"cs336-medium-512-training-bf16-autocast.headroom.json",
                             "cs336-medium-1024-training-bf16-autocast.headroom.json",
                             "cs336-2.7b-128-first-step-bf16-autocast.headroom.json",
                             "cs336-2.7b-512-first-step-bf16-autocast.headroom.json",
                             "cs336-2.7b-128-step-hopper-bf16-autocast.headroom.json",
                             "cs336-2.7b-256-step-hopper-bf16-autocast.headroom.json",
                             "cs336-2.7b-512-step-hopper-bf16-autocast.headroom.json"}) {
        const QString error = disagreement(scenario(file), QString::fromLatin1(file));
        QVERIFY2(error.isEmpty(), qPrintable(error));
        ++compared;
    }
    QCOMPARE(compared, size_t(7));
    // And with every block under torch.utils.checkpoint (fp32): its forward run under no_grad keeping the
    // block's input, run again in the block's backward. The first steps of the 2.7B model peak in their
    // step and agree. The medium model's later steps can peak in the first block's backward, every later
    // block's gradients written by then (the replay showed the profile that moment: it was 1.6% under at
    // 256 tokens with fused AdamW, 0.4% since), and inside its MLP backward: its f-wide gradients and a
    // weight's gradient beside them (five of these were 0.2% to 0.9% under, a named expected failure,
    // until the profile named the MLP's moments).
    compared = 0;
    for (const char* file :
         {"cs336-medium-128-training.headroom.json", "cs336-medium-256-training.headroom.json",
          "cs336-2.7b-128-first-step-kkaitlyn.headroom.json",
          "cs336-2.7b-512-first-step-kkaitlyn.headroom.json"})
        for (const char* adamw : {"cs336_basics", "fused"})
            for (const int accumulation : {1, 2}) {
                json doc = scenario(file);
                doc["training"]["activation_checkpointing"] = "full";
                doc["training"]["optimizer_implementation"] = adamw;
                doc["training"]["gradient_accumulation_steps"] = accumulation;
                const double d = difference(doc);
                // The step's chart reaches the plan's allocated peak: the first block's backward is one of
                // its points.
                const Scenario sc = scenarioFromJson(doc);
                QCOMPARE(chartPeak(sc), estimate(sc).allocatedPeakBytes);
                const QString what = QStringLiteral("%1 checkpointed, %2, %3 micro-batches: %4%")
                                         .arg(QString::fromLatin1(file), QString::fromLatin1(adamw))
                                         .arg(accumulation)
                                         .arg(100 * d, 0, 'f', 3);
                QVERIFY2(!std::isnan(d), qPrintable(what));
                QVERIFY2(std::abs(d) <= 0.0005, qPrintable(what));
                ++compared;
            }
    QCOMPARE(compared, size_t(16));
    // And the shapes that showed each moment the profile lacked, when both derivations were compared over
    // 2,616 shapes (the five model sizes of the assignment, 1 to 8 sequences of 64 to 8,192 tokens, fp32
    // and autocast, first and later steps, each AdamW and place of zero_grad, one and two micro-batches,
    // checkpointed or not); they agree within 0.05% on all since. Each is given with the profile's error
    // before (against the replay) and what it was.
    struct Shape {
        int hidden, ffn, layers, heads, batch, tokens;
        bool autocast = false, checkpointed = false;
        const char* adamw = "fused";
        const char* zeroGrad = "before_forward";
        int accumulation = 1;
        bool firstStep = false;
    };
    const std::pair<Shape, const char*> shapes[] = {
        {{1600, 6400, 48, 25, 1, 512},
         "-0.27%: the first block's softmax backward, every later gradient written"},
        {{1024, 4096, 24, 16, 4, 128, true}, "+0.14%: the head's cast gone at its gradient's copy"},
        {{768, 3072, 12, 12, 1, 256, true}, "+0.72%: the same"},
        {{2560, 10240, 32, 32, 8, 128}, "-0.22%: the first block's MLP backward at w3's gradient copy"},
        {{1600, 6400, 48, 25, 4, 256}, "-0.06%: the last block's, the same"},
        {{2560, 10240, 32, 32, 4, 1024, false, false, "foreach", "after_forward"},
         "+0.22%: the last block's MLP not made yet at its softmax, the last step's gradients alive"},
        {{768, 3072, 12, 12, 1, 64, false, false, "for_loop", "keep"},
         "-1.12%: the head's gradient written into a .grad that exists"},
        {{768, 3072, 12, 12, 1, 64, true, false, "for_loop", "keep"}, "-0.89%: the same under autocast"},
        {{768, 3072, 12, 12, 8, 256, false, true}, "-3.25%: checkpointed, the MLP's product backward"},
        {{768, 3072, 12, 12, 8, 2048, false, true, "fused", "before_forward", 1, true},
         "-0.46%: checkpointed, the recomputed output held"},
        {{1024, 4096, 24, 16, 4, 128, false, true, "fused", "before_forward", 2},
         "-0.12%: checkpointed, accumulating: w2's gradient written"},
        {{768, 3072, 12, 12, 1, 2048, false, true, "fused", "before_forward", 2, true},
         "-0.19%: checkpointed, accumulating: the recomputed mask"},
        // Found later, over 16 and 32 sequences and 2,048 and 4,096 tokens (3,132 shapes, all within 0.02%
        // since): where the forward is the step's peak, what the loop and autocast hold there.
        {{1600, 6400, 48, 25, 16, 1024, false, true, "fused", "after_forward"},
         "-1.46%: checkpointed, the last step's gradients alive: the last step's logits, still bound to "
         "`logits` until the forward returns"},
        {{2560, 10240, 32, 32, 1, 2048, true, false, "fused", "after_forward"},
         "+0.18%: autocast's casts of the last block's output projection and MLP, and the head's, not made "
         "yet at its softmax"}};
    for (const auto& [shape, before] : shapes) {
        json doc = scenario("cs336-medium-128-training.headroom.json");
        doc.erase("x_measured");
        doc["cluster"]["gpu"] = "H200-141GB";
        setCs336Model(doc, shape.hidden, shape.ffn, shape.layers, shape.heads);
        doc["training"]["micro_batch_size"] = shape.batch;
        doc["training"]["sequence_length"] = shape.tokens;
        if (shape.autocast)
            doc["training"]["autocast"] = "bf16";
        if (shape.checkpointed)
            doc["training"]["activation_checkpointing"] = "full";
        doc["training"]["optimizer_implementation"] = shape.adamw;
        doc["training"]["zero_grad"] = shape.zeroGrad;
        doc["training"]["gradient_accumulation_steps"] = shape.accumulation;
        doc["training"]["first_step"] = shape.firstStep;
        const QString error = disagreement(doc, QStringLiteral("%1 x %2 tokens, hidden %3 (was %4)")
                                                    .arg(shape.batch)
                                                    .arg(shape.tokens)
                                                    .arg(shape.hidden)
                                                    .arg(QString::fromLatin1(before)));
        QVERIFY2(error.isEmpty(), qPrintable(error));
        // The step's chart reaches the plan's allocated peak: each moment is one of its points.
        const Scenario sc = scenarioFromJson(doc);
        QCOMPARE(chartPeak(sc), estimate(sc).allocatedPeakBytes);
    }
    {
        // The first of those two by hand: the XL model checkpointed, 16 x 1,024 tokens, vocabulary 10,000,
        // peaks in its forward (its last block's softmax, the last step's gradients beside its inputs),
        // with the last step's fp32 logits: 16 x 1,024 x 10,000 x 4 bytes.
        json xl = scenario("cs336-medium-128-training.headroom.json");
        xl.erase("x_measured");
        xl["cluster"]["gpu"] = "H200-141GB";
        setCs336Model(xl, 1600, 6400, 48, 25);
        xl["training"]["micro_batch_size"] = 16;
        xl["training"]["sequence_length"] = 1024;
        xl["training"]["activation_checkpointing"] = "full";
        xl["training"]["zero_grad"] = "after_forward";
        const Estimate est = estimate(scenarioFromJson(xl));
        QCOMPARE(est.peakPhase, Phase::Forward);
        QCOMPARE(est.perGpu[Category::Logits], 16.0 * 1024 * 10000 * 4);
        // At the forward's last block, before the loss; a first step has no last step's logits there.
        const auto lastBlock = [](const Scenario& sc) {
            for (const TimelinePoint& t : phaseTimeline(sc, 0, 2))
                if (t.phase == Phase::Forward && t.progress >= 1 && t.layerRunning)
                    return t.bytes[Category::Logits];
            return -1.0;
        };
        QCOMPARE(lastBlock(scenarioFromJson(xl)), 16.0 * 1024 * 10000 * 4);
        xl["training"]["first_step"] = true;
        QCOMPARE(lastBlock(scenarioFromJson(xl)), 0.0);
    }
    json doc = parseJsonText(
        readTextFile((measuredDir() + QStringLiteral("cs336-basics/cs336-medium-128-training.headroom.json"))
                         .toStdString()));
    doc["training"]["gradient_accumulation_steps"] = 3;
    const Scenario past = scenarioFromJson(doc);
    QVERIFY(!cs336StepReplay(*cs336StepRunOf(past, workspaceBytes(past), 0)).replayed);
    doc["training"]["first_step"] = true; // 24 x 3 x 1
    const Scenario first = scenarioFromJson(doc);
    QVERIFY(cs336StepReplay(*cs336StepRunOf(first, workspaceBytes(first), 0)).replayed);
}

void TestCs336::cs336ForwardNearTheDevice() {
    // Near the GPU's limit PyTorch's allocator frees its cached segments and retries a request before it
    // fails (CUDACachingAllocator.cpp, release_cached_blocks), so the replay runs against what the driver
    // can give PyTorch: the medium model's 1,024-token forward at its largest batch fits on an A100-80GB
    // only because a score-sized segment the softmax no longer uses is given back, and one sequence more
    // runs out of memory, the plan then showing what the forward reserves where nothing limits it.
    json doc = parseJsonText(readTextFile(
        (measuredDir() + QStringLiteral("cs336-basics/cs336-medium-1024-inference.headroom.json"))
            .toStdString()));
    const Estimate four = estimate(scenarioFromJson(doc));
    const int largest = static_cast<int>(four.maxMicroBatchSize);
    QVERIFY2(largest > 100 && largest < 400, qPrintable(QString::number(largest)));
    doc["inference"]["batch_size"] = largest;
    const Scenario at = scenarioFromJson(doc);
    const double device = static_cast<double>(at.cluster.capacityBytes) - at.overheads.cudaContextBytes;
    const Estimate fits = estimate(at);
    QVERIFY(fits.fits);
    QVERIFY(fits.reservedPeakBytes <= device);
    Cs336ForwardRun run = *cs336ForwardRunOf(at, workspaceBytes(at), device);
    QVERIFY(!cs336ForwardReplay(run).outOfMemory);
    run.device = 0;
    QVERIFY2(cs336ForwardReplay(run).reserved > device,
             qPrintable(QString::number(cs336ForwardReplay(run).reserved / kGiB)));
    doc["inference"]["batch_size"] = largest + 1;
    const Scenario beyond = scenarioFromJson(doc);
    const Estimate over = estimate(beyond);
    QVERIFY(!over.fits);
    run = *cs336ForwardRunOf(beyond, workspaceBytes(beyond), 0);
    QCOMPARE(over.reservedPeakBytes, cs336ForwardReplay(run).reserved);
}

void TestCs336::cs336ForwardRepeatsItsBlocks() {
    // The replay stops repeating blocks once the allocator's state after one is the state two before (the
    // blocks make and free the same tensors; input and output take turns between two places): what is left
    // repeats, peaks included. Checked against replaying every block for the traced forwards' model and the
    // 2.7B one, at lengths from 64 to 2,048, batches 1 to 16, fp32 and bf16 parameters, with autocast under
    // inference_mode, with and without a device limit.
    int shortcuts = 0;
    for (const char* file : {"cs336-basics/cs336-medium-1024-inference.headroom.json",
                             "cs336-basics/cs336-2.7b-128-forward-no-grad.headroom.json"})
        for (int sequence : {64, 256, 2048})
            for (int batch : {1, 3, 16})
                for (const char* weights : {"fp32", "bf16"})
                    for (const char* autocast : {"none", "bf16"}) {
                        json doc = parseJsonText(
                            readTextFile((measuredDir() + QString::fromUtf8(file)).toStdString()));
                        doc["inference"]["context_length"] = sequence;
                        doc["inference"]["batch_size"] = batch;
                        doc["inference"]["weight_dtype"] = weights;
                        doc["inference"]["autocast"] = autocast;
                        doc["inference"]["grad_mode"] = "inference_mode";
                        const Scenario sc = scenarioFromJson(doc);
                        for (double device : {0.0, 20 * kGiB}) {
                            Cs336ForwardRun run = *cs336ForwardRunOf(sc, workspaceBytes(sc), device);
                            const Cs336Replay quick = cs336ForwardReplay(run);
                            run.everyBlock = true;
                            const Cs336Replay whole = cs336ForwardReplay(run);
                            const QString what =
                                QStringLiteral("%1 %2 x %3 %4 %5 %6 GiB")
                                    .arg(QString::fromUtf8(file))
                                    .arg(batch)
                                    .arg(sequence)
                                    .arg(QString::fromUtf8(weights), QString::fromUtf8(autocast))
                                    .arg(device / kGiB);
                            QVERIFY2(quick.allocated == whole.allocated && quick.reserved == whole.reserved &&
                                         quick.outOfMemory == whole.outOfMemory,
                                     qPrintable(what));
                            shortcuts += quick.outOfMemory ? 0 : 1;
                        }
                    }
    QVERIFY(shortcuts > 100);
}

QTEST_GUILESS_MAIN(TestCs336)
#include "tst_cs336.moc"
