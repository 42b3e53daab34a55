// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/attribution.h"
#include "core/compare/tensortable.h"
#include "core/plan/scenario.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

struct Comparison; // core/compare/comparison.h

// One recorded run of the code a scenario describes.
struct CalibrationInput {
    const Scenario* scenario = nullptr;
    const Trace* trace = nullptr;
    const TraceIndex* index = nullptr;
    std::string name; // for the report
};

// What a run measured, split the way calibration fits it.
struct RunMeasurement {
    std::size_t lossPeak = 0;   // before the optimizer step, where allocated minus gradients is highest
    std::int64_t transient = 0; // at it: what is neither model state, KV cache nor workspace
    std::int64_t total = 0;     // at it: everything allocated
    // Of the transient bytes, those in tensors whose size is batch x heads x tokens^2 x (1, 2 or 4 bytes):
    // the attention scores' copies, told apart by their sizes; `ambiguous` when a size is also that of a
    // tokens-linear tensor (fp32 FFN outputs are b x s x 4h x 4 bytes, as fp32 scores are at s = 4h / heads).
    std::int64_t quadratic = 0, ambiguous = 0;
    // The same score tensors each counted at its fp32 size: what an fp32 run of this code would hold, since
    // autocast changes the width of each tensor an op writes, not which tensors are kept (a cast for a
    // matmul stands in for the original it saves). Equal to `quadratic` in an fp32 run.
    std::int64_t quadraticAsFp32 = 0;
    // An fp32 run's score tensors each at the width 16-bit autocast would give it, read from the operator
    // that made it (atenOperator): one that an operator on autocast's fp32 list wrote (exp, softmax,
    // log_softmax; aten/src/ATen/autocast_mode.h AT_FORALL_FP32 and AT_FORALL_FP32_SET_OPT_DTYPE) stays at
    // 4 bytes; any other at 2. Before the softmax-family operator the scores' copies (the matmul's output,
    // its scaling, its masking, x - max) are 16-bit under autocast, as the matmul's output is; after it the
    // copy that is kept is kept by the next matmul, which under autocast keeps its 16-bit cast of it
    // instead. -1 when some score tensor's operator is unknown (a trace recorded without C++ frames).
    std::int64_t quadraticAsAutocast = 0;
    // Of the fp32-sized score tensors (not dropout's 1-byte masks), the bytes whose operator is outside
    // autocast's fp32 list: none, and the copy the next matmul saves is one of the fp32 list's outputs, which
    // autocast makes two (calibrateRuns says why that is not read).
    std::int64_t quadraticOutsideFp32List = 0;
    // An fp32 training run's vocabulary-sized tensors at the loss peak (the tensor table's b·s·V rows), each
    // at the width 16-bit autocast would give it by the operator that made it: a matmul (autocast's
    // 16-bit list: the head's output) 2 bytes, an operator of its fp32 list 4, the zeros a view's backward
    // writes (select_backward, slice_backward: `logits[:, -1]`'s) the width of the tensor viewed, which is
    // the head's output where the forward made no other. -1 when one was made by any other operator (a
    // subtraction, a division: promoted, of a width its inputs decide, which the fp32 run does not show),
    // by none the trace names, or the run is not fp32.
    std::int64_t logitsAsAutocast = -1;
    // The score tensors by the operator that made them ("exp", 8), in the order first seen: what the
    // report shows. Empty when the trace names no operator.
    std::vector<std::pair<std::string, int>> scoreOperators;
    // The ambiguous tensors one by one, with the line of the user's code that allocated each (its top user
    // frame): calibrating on runs of other lengths tells them apart there, by the size that line allocated.
    struct AmbiguousTensor {
        std::string site; // "name (file:line)"; empty when the trace recorded no stack
        std::int64_t size = 0;
        std::vector<int> scoresBytes; // the dtype widths that make the size b·a·s²
        struct Linear {
            const char* symbol = ""; // its width in any run: RunShape::linearWidths
            int dtypeBytes = 0;
        };
        std::vector<Linear> linear; // the tokens-linear shapes (b·s·width) of the same size
    };
    std::vector<AmbiguousTensor> ambiguousTensors;
    std::int64_t kvCache = 0;
    std::int64_t workspaces = 0;
    // The most the run's workspaces came to by its step's peak or its last event: held from first use to
    // the end, so a training step's backward adds its own thread's (the autograd engine's thread has its
    // own cuBLAS handle, and each handle its own workspace) after a loss peak in the forward.
    std::int64_t workspacesHeld = 0;
    std::int64_t gradients = 0;   // at the loss peak: what attribution gives to parameters' gradients
    bool hasStep = false;         // the run records an optimizer step (looked for in a training scenario's)
    bool stepInForward = false;   // an inference scenario's run records one all the same
    // A training scenario's run with no step and no gradient at its loss peak or its end: a forward with
    // autograd on and no backward (CalibrationRun::noBackward).
    bool noBackward = false;
    std::int64_t stepScratch = 0; // at the step's peak: what is neither model state nor workspace
    // Eager attention's backward (training): the most the score-sized tensors alive grew beyond the loss
    // peak's before the step, the softmax backward's temporaries less the saved scores freed by then
    // (backwardScoresGrowth in calibration.cpp). Not measured when no size tells them apart.
    bool backwardMeasured = false;
    std::int64_t backwardScores = 0;
    bool peakInBackward = false; // the loss peak was already in the last layer's backward (a long run's)
    // A forward-only run (inference) of eager attention passes through two kinds of moment: inside a layer's
    // attention, its score-sized tensors alive (the softmax's copies of one layer's scores), and everywhere
    // else (the FFN, the head). Its peak is at the second at short lengths and at the first at long ones, so
    // each is measured: the most allocated with score-sized tensors alive, and those tensors' bytes there;
    // the most allocated with none. Not measured when a score's size is also a tokens-linear tensor's and
    // the run's calls do not tell which each such tensor is (ScoreSites; attentionMoments in
    // calibration.cpp).
    bool momentsMeasured = false;
    std::int64_t attentionTransient = 0, attentionScores = 0; // at the first kind of moment
    std::int64_t attentionScoresAsFp32 = 0; // those scores, each at its fp32 size (an autocast run's)
    std::int64_t restTransient = 0;                           // at the second
    // Every live allocation at the two moments, matched to the model's tensor shapes or left as residual.
    TensorTable atLoss, atStep;
    // The run's allocated and reserved bytes at their most from its first allocation on (a recording that
    // begins by releasing what an earlier run in the process left cached counts from there); reserved 0
    // when the trace records no segments.
    std::int64_t allocatedPeak = 0, reservedPeak = 0;
};
RunMeasurement measureRun(const CalibrationInput& run, const AttributionRules& rules);

struct CalibrationRun {
    std::string trace;
    std::int64_t measured = 0, before = 0, after = 0; // allocated at the peak: measured, estimates
    // A first step's trace (Comparison::firstStep): `measured` is what a later step would reach, which is
    // what a plan describes.
    bool firstStep = false;
    bool hasStep = false;
    // Planned as a training step, the run recorded no backward (no gradient, no step): a forward with
    // autograd on, which an inference scenario with grad_mode "enabled" plans; its factors serve training
    // plans too (measured_on "training").
    bool noBackward = false;
    TensorTable atLoss, atStep; // what the run held at its loss peak and its step's peak, tensor by tensor
    // Reserved at its most (RunMeasurement::reservedPeak; 0: the trace records no segments) and the plan's
    // figure before and after.
    std::int64_t reservedMeasured = 0, reservedBefore = 0, reservedAfter = 0;
    // Which profile plans the run's code when the scenario's does not (Comparison::advice), or "".
    std::string advice;
    // Why the scenario may not describe this run, or "" (runMismatch): the factors then absorb a
    // model, batch or length the run did not have, and carry it to every what-if.
    std::string mismatch;
    std::vector<std::pair<std::string, int>> scoreOperators; // RunMeasurement::scoreOperators
};
struct CalibrationResult {
    Calibration factors;
    std::vector<CalibrationRun> runs;
    // The runs could not tell what grows with tokens squared from what grows with tokens: all of one length,
    // and the scores' tensors there have other tensors' sizes (fp32 scores at 256 tokens are the size of
    // CS336's fp32 FFN outputs) or were never alive at a moment measured. One factor then scales both, and
    // other lengths extrapolate with it (the 256-token CS336 run alone: 10% under at 1,024 tokens in
    // training, 21% under in a forward). A run at another length tells them apart.
    bool scoresUntold = false;
    // The scores' factor for 16-bit autocast was read from fp32 runs, by the operator that made each of
    // their score tensors (RunMeasurement::quadraticAsAutocast), no autocast run having been given.
    bool scoresByOperator = false;
    // Calibration::backwardScratchScores was not measured but taken from the forward's saved score copies
    // (no run's backward could be read: its score sizes are other tensors' too, or it recorded none).
    bool backwardFromForward = false;
    // With factors fitted against the code's tables (Calibration::codeTables): the same runs fitted against
    // the scenarios' own profile's tables (FitAgainst::ScenarioProfile), for the plans that code cannot run
    // (grouped-query attention, tensor parallelism, adapters), which are made with that profile and so with
    // the factors fitted against it (calibration.factors.own_profile). Empty otherwise, or where that fit
    // cannot be made.
    std::optional<Calibration> ownProfile;
};

// "" when nothing says the run is not the scenario's; else one sentence: the weights alive at the run's peak
// are not the scenario's model (attribution finds them by the sizes of its parameter tensors: another model
// leaves them unfound or found in part; looked for on one GPU without FSDP, ZeRO-3, Megatron or DeepSpeed,
// which keep parameters in flat buffers of other sizes), the calibrated plan misses the run it was fitted on
// by more than 5% (every recorded run calibrated on its own scenario is reproduced within 2%:
// tst_attribution), a forward's scenario (inference) fitted to a run that stepped an optimizer, or a factor
// for what grows with the tokens (or their square) is beyond 4 or below 1/4: the shipped traces, each on
// its own scenario, need x0.9 to x3.5 (bcrafton's compiled step the most), where a batch or length the run
// did not have needs more (the 128-token forward's scenario on its 1,024-token run: x31; the 256-token
// training scenario on the 1,024-token run: x6.5).
std::string runMismatch(const Scenario& scenario, const Comparison& before, std::int64_t measured,
                        std::int64_t after, bool stepInForward, const Calibration& factors);

// Fits the implementation factors so that the estimate reproduces each run (docs/formats.md section 7):
// from every run, the bytes the code holds at its loss/forward peak beyond the model state (against the
// estimator's tensors that grow with tokens and with tokens squared: a least-squares fit of the two
// multipliers when the runs differ in length, one common multiplier otherwise), what the optimizer step
// holds besides the states (per parameter), the workspaces, and the KV cache the code really keeps.
// `beside`, when given, completes each run's comparison before its advice is written (the caller that can
// read scenarios plans it with the profile of the trace's code: core/io/codeprofile.h).
//
// `against`: where every run's stacks name code whose tables the plan has (cs336_basics) and the scenarios
// plan it with another profile that code can run, the factors are fitted against that code's tables and
// the calibrated plan is made with them (Calibration::codeTables), unless `ScenarioProfile` asks for the
// scenario's own profile's tables (`headroom-cli calibrate --own-profile`).
enum class FitAgainst { CodeWhereKnown, ScenarioProfile };
CalibrationResult calibrate(const std::vector<CalibrationInput>& runs, const AttributionRules& rules,
                            const std::function<void(Comparison&, const Scenario&)>& beside = {},
                            FitAgainst against = FitAgainst::CodeWhereKnown);

} // namespace headroom
