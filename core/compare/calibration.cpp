// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/calibration.h"

#include "core/checkednumbers.h"
#include "core/compare/comparison.h"
#include "core/compare/scoresites.h"
#include "core/error.h"
#include "core/plan/cs336replay.h"
#include "core/serve/estimate.h"
#include "core/trace/frames.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <iomanip>
#include <locale>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string_view>
#include <unordered_map>

namespace headroom {

namespace {

// How far one common factor may leave a run's transient bytes before tokens and tokens squared are fitted
// apart: the "within 5%" the project holds estimates to. Set on the fit runs (docs/measured.md): any value
// from 2% to 8% makes the same choices there.
constexpr double kCommonTolerance = 0.05;

std::int64_t modelState(const Attribution& a) {
    return a.of(MeasuredCategory::Weights) + a.of(MeasuredCategory::Gradients) +
           a.of(MeasuredCategory::OptimizerStates);
}

// Whether a stack allocates in a constructor: its innermost Python frame is an `__init__`. An optimizer
// written by hand may make its states there (NiuHuangxiaozi's NIUAdam: zeros_like for each parameter when it
// is built, before any forward), which is not its step.
bool inConstructor(const Trace& trace, std::uint32_t stack) {
    if (stack >= trace.stacks.size())
        return false;
    for (const Frame& f : trace.stacks[stack])
        if (isPythonFrame(trace, f))
            return f.name < trace.strings.size() && trace.strings[f.name] == "__init__";
    return false;
}

// The optimizer step as the events it spans: from an "Optimizer.step" annotation's start, else from the first
// allocation whose stack the rules give to the optimizer (outside its constructor), to the first allocation
// after it whose stack is known and not the optimizer's (the next iteration's forward, or its inputs'
// copy to the GPU: a recording of several iterations has them after the step), or the trace's end. Both
// the trace's length when it records no step.
struct StepSpan {
    std::size_t start, end;
};
StepSpan stepSpan(const Trace& trace, const TraceIndex& index, const AttributionRules& rules) {
    const DeviceTrace& d = index.device();
    const std::size_t n = d.entries();
    std::int64_t annotated = INT64_MAX, annotatedEnd = INT64_MAX;
    for (const Annotation& a : trace.annotations)
        if ((a.device.empty() || a.device == d.key) && a.name.find("Optimizer.step") != std::string::npos &&
            a.start < annotated)
            annotated = a.start, annotatedEnd = a.end;
    OptimizerStacks optimizerStack(trace, rules);
    std::size_t start = n;
    for (std::size_t e = 0; e < n && start == n; ++e) {
        if (annotated != INT64_MAX && d.time[e] >= annotated)
            start = e;
        else if (annotated == INT64_MAX && d.action[e] == TraceAction::Alloc && d.stack[e] != 0 &&
                 optimizerStack(d.stack[e]) && !inConstructor(trace, d.stack[e]))
            start = e;
    }
    std::size_t end = n;
    for (std::size_t e = start; e < n && end == n; ++e) {
        if (annotated != INT64_MAX) {
            if (annotatedEnd > annotated && d.time[e] > annotatedEnd)
                end = e;
        } else if (d.action[e] == TraceAction::Alloc && d.stack[e] != 0 && !optimizerStack(d.stack[e])) {
            end = e;
        }
    }
    return {start, end};
}

std::size_t argmax(const BigVector<std::int64_t>& v, std::size_t from, std::size_t to) {
    std::size_t best = from;
    for (std::size_t e = from; e < to && e < v.size(); ++e)
        if (v[e] > v[best])
            best = e;
    return best;
}

// The loss peak: before the optimizer step, the event where what the pass holds beyond the model state is
// highest. Weights and optimizer states do not change before the step, but gradients do: a short run's
// allocated peak before the step is the end of its backward (all gradients, few activations), and
// measuring there, while a longer run's is at the loss, made two lengths look like a tokens-squared growth
// they do not have (+56% at four times the length). So the gradients allocated so far are taken off.
std::size_t transientPeak(const Trace& trace, const TraceIndex& index, std::size_t end,
                          const AttributionRules& rules, const Scenario* scenario) {
    const DeviceTrace& d = index.device();
    const auto& allocated = index.allocatedSeries();
    std::map<std::pair<std::uint32_t, std::int64_t>, bool> isGradient; // by (stack, size)
    std::unordered_map<std::uint64_t, std::int64_t> liveGradients;     // address -> bytes
    std::int64_t gradients = 0, best = INT64_MIN;
    std::size_t at = 0;
    const AllocationCategories classify(trace, index, rules, scenario);
    for (std::size_t e = 0; e < end && e < d.entries() && e < allocated.size(); ++e) {
        if (d.action[e] == TraceAction::Alloc) {
            auto [it, fresh] = isGradient.try_emplace({d.stack[e], d.size[e]}, false);
            if (fresh) {
                Allocation a;
                a.addr = d.addr[e], a.size = d.size[e], a.stack = d.stack[e], a.start = e, a.alloc = e;
                a.end = d.entries(), a.stream = d.stream[e];
                it->second = classify(a) == MeasuredCategory::Gradients;
            }
            if (it->second) {
                liveGradients[d.addr[e]] = d.size[e];
                gradients = saturatingAdd(gradients, d.size[e]);
            }
        } else if (d.action[e] == TraceAction::FreeCompleted || d.action[e] == TraceAction::Free) {
            if (const auto g = liveGradients.find(d.addr[e]); g != liveGradients.end()) {
                gradients -= g->second;
                liveGradients.erase(g);
            }
        }
        const std::int64_t transient = allocated[e] - gradients;
        if (transient > best)
            best = transient, at = e;
    }
    return at;
}

// The estimator's transient tensors of one scenario at its loss peak (training: the start of backward,
// with the logits' gradient) or its prefill (inference), uncalibrated: what grows with tokens and what
// grows with their square, and the KV cache.
struct EstimatedParts {
    double linear = 0, quadratic = 0, kvCache = 0;
    double logits = 0; // of `linear`, the vocabulary-sized tensors (Category::Logits) planned there
    double fixed = 0; // transient bytes that do not grow with tokens (autocast's weight copies)
    double gradientsAtLoss = 0, gradients = 0; // the parameters' gradients planned there, and at the step
};
// `inBackward`: the run's loss peak was where the last layer's backward begins (a long run's), so the parts
// are read there: the saved tensors, that layer's, and the logits the loop still holds.
EstimatedParts estimatedParts(Scenario sc, bool inBackward = false) {
    sc.calibration = Calibration{};
    EstimatedParts p;
    const Estimate est = estimate(sc);
    const int stage = est.mostLoadedStage;
    // In inference the prefill's end, at the moment with the most transient bytes: the run was measured at
    // its peak, and cs336_basics' forward has several moments there (the attention's, the MLP's, the
    // head's), the largest of which depends on the length (the medium model's MLP at 128 tokens, its
    // attention at 1,024).
    const auto transientAt = [](const TimelinePoint& t) {
        return t.bytes[Category::Activations] + t.bytes[Category::Logits] +
               t.bytes[Category::AttentionScores] - t.casts;
    };
    std::optional<TimelinePoint> prefill;
    for (const TimelinePoint& t : phaseTimeline(sc, stage, 2)) {
        if (t.phase == Phase::Optimizer)
            p.gradients = std::max(p.gradients, t.bytes[Category::Gradients]);
        const bool loss = sc.mode == Mode::Training ? (t.phase == Phase::Backward && t.progress == 0 &&
                                                       t.layerRunning == inBackward && !t.headRunning)
                                                    : (t.phase == Phase::Prefill && t.progress >= 1 &&
                                                       (!prefill || transientAt(t) > transientAt(*prefill)));
        if (!loss)
            continue;
        if (sc.mode == Mode::Inference)
            prefill = t;
        // Autocast's weight copies do not grow with tokens: they are taken out of what the factors scale.
        const auto& ranks = est.ranks;
        const double casts = sc.mode == Mode::Inference ? t.casts
                             : stage < static_cast<int>(ranks.size())
                                 ? ranks[static_cast<std::size_t>(stage)].autocastCopyBytes
                                 : 0;
        p.fixed = casts;
        p.linear = t.bytes[Category::Activations] + t.bytes[Category::Logits] - casts;
        p.logits = t.bytes[Category::Logits];
        p.quadratic = t.bytes[Category::AttentionScores];
        p.kvCache = t.bytes[Category::KvCache];
        p.gradientsAtLoss = t.bytes[Category::Gradients];
    }
    return p;
}

// A run under autocast around fp32 weights (an fp32 model whose matmuls run in 16 bits), and the same
// scenario without autocast: what its score tensors, counted at fp32 (RunMeasurement::quadraticAsFp32), are
// measured against for an fp32 plan.
bool autocastOverFp32(const Scenario& sc) {
    return sc.mode == Mode::Training ? sc.training.autocastBytes > 0 && sc.training.activationBytes >= 4
                                     : sc.inference.autocastBytes > 0 && sc.inference.weightBytes >= 4;
}
Scenario withoutAutocast(Scenario sc) {
    sc.training.autocast = sc.inference.autocast = "none";
    sc.training.autocastBytes = sc.inference.autocastBytes = 0;
    return sc;
}

// The same scenario under 16-bit autocast (bf16; the plan reads only the width).
Scenario withAutocast(Scenario sc) {
    if (sc.mode == Mode::Training) {
        sc.training.autocast = "bf16";
        sc.training.autocastBytes = 2;
    } else {
        sc.inference.autocast = "bf16";
        sc.inference.autocastBytes = 2;
    }
    return sc;
}

// The same symbol's width in another run (whose tensor-parallel split may differ).
double widthIn(const RunShape& shape, std::string_view symbol) {
    for (const auto& [name, width] : shape.linearWidths())
        if (symbol == name)
            return width;
    return 0;
}

// The line of the user's code that allocated a block (its top user frame), "" when the trace has no stack.
std::string siteOf(const Trace& trace, std::uint32_t stack) {
    const std::size_t user = topUserFrame(trace, stack);
    return user == std::string::npos ? std::string() : frameText(trace, trace.stacks[stack][user]);
}

// A score tensor's size at fp32 (RunMeasurement::quadraticAsFp32): one in the activations' 16-bit dtype at
// 4 bytes; fp32 ones and 1-byte masks (dropout's, bool in any dtype) as they are.
struct ScoreWidths {
    std::int64_t activation = 0, fp32 = 0; // one score tensor's size in the activations' dtype and in fp32
    explicit ScoreWidths(const Scenario& sc) {
        const RunShape shape(sc);
        fp32 = static_cast<std::int64_t>(shape.scores(4));
        activation = sc.activationDtypeBytes() < 4
                         ? static_cast<std::int64_t>(shape.scores(sc.activationDtypeBytes()))
                         : fp32;
    }
    std::int64_t asFp32(std::int64_t size) const { return size == activation ? fp32 : size; }
};

// Operators torch.autocast runs in fp32 whatever their inputs' dtype, as the dispatcher names them
// (at::_ops::NAME, the overload appended): aten/src/ATen/autocast_mode.h, AT_FORALL_FP32 and
// AT_FORALL_FP32_SET_OPT_DTYPE (the CUDA policy). softmax's own kernel (_softmax) and log_softmax's are
// listed too: a trace whose stack shows them outermost called them directly, and under autocast they take
// the fp32 input the listed wrapper would have cast.
bool autocastRunsInFp32(std::string_view op) {
    static const std::set<std::string_view> kFp32 = {"acos",
                                                     "asin",
                                                     "cosh",
                                                     "erfinv",
                                                     "exp",
                                                     "expm1",
                                                     "log",
                                                     "log10",
                                                     "log2",
                                                     "log1p",
                                                     "reciprocal",
                                                     "rsqrt",
                                                     "sinh",
                                                     "tan",
                                                     "pow_Tensor_Scalar",
                                                     "pow_Tensor_Tensor",
                                                     "pow_Scalar",
                                                     "softplus",
                                                     "layer_norm",
                                                     "native_layer_norm",
                                                     "group_norm",
                                                     "frobenius_norm_dim",
                                                     "nuclear_norm",
                                                     "nuclear_norm_dim",
                                                     "cosine_similarity",
                                                     "poisson_nll_loss",
                                                     "cosine_embedding_loss",
                                                     "nll_loss",
                                                     "nll_loss2d",
                                                     "hinge_embedding_loss",
                                                     "kl_div",
                                                     "l1_loss",
                                                     "smooth_l1_loss",
                                                     "huber_loss",
                                                     "mse_loss",
                                                     "margin_ranking_loss",
                                                     "multilabel_margin_loss",
                                                     "soft_margin_loss",
                                                     "triplet_margin_loss",
                                                     "multi_margin_loss",
                                                     "binary_cross_entropy_with_logits",
                                                     "dist",
                                                     "pdist",
                                                     "cdist",
                                                     "renorm",
                                                     "logsumexp",
                                                     "prod",
                                                     "prod_dim_int",
                                                     "prod_dim_Dimname",
                                                     "softmax_int",
                                                     "softmax_Dimname",
                                                     "log_softmax_int",
                                                     "log_softmax_Dimname",
                                                     "_softmax",
                                                     "_log_softmax",
                                                     "cumprod",
                                                     "cumprod_dimname",
                                                     "cumsum",
                                                     "cumsum_dimname",
                                                     "linalg_vector_norm",
                                                     "linalg_matrix_norm",
                                                     "linalg_matrix_norm_str_ord",
                                                     "sum",
                                                     "sum_dim_IntList",
                                                     "sum_dim_DimnameList"};
    return kFp32.count(op) > 0;
}

// The matmuls torch.autocast runs in its 16-bit dtype, as the dispatcher names them: aten/src/ATen/
// autocast_mode.h, AT_FORALL_LOWER_PRECISION_FP (the convolutions and recurrent cells left out: no
// vocabulary-sized output comes from them in these models).
bool autocastRunsIn16Bits(std::string_view op) {
    static const std::set<std::string_view> k16 = {
        "addmm",  "addmv",   "addr", "matmul",       "einsum",          "mm", "mv", "linear",
        "addbmm", "baddbmm", "bmm",  "chain_matmul", "linalg_multi_dot"};
    return k16.count(op) > 0;
}

// An fp32 training run's vocabulary-sized tensors at its loss peak (the table's b·s·V rows), each at the
// width 16-bit autocast would give it by the operator that made it (RunMeasurement::logitsAsAutocast);
// -1 when some operator's width depends on its inputs, or is not named. NiuHuangxiaozi's loss reads the
// last position (`logits[:, -1, :]`): its head's output (einsum) and the zeros select's and slice's
// backwards write at the head's size, all 16-bit under autocast, where the staff code's subtractions,
// promoted, run in fp32 under autocast beside a 16-bit head, which no fp32 trace shows.
std::int64_t logitsAsAutocast(const Scenario& sc, const Trace& trace, const Attribution& at,
                              const TensorTable& table) {
    if (sc.activationDtypeBytes() != 4)
        return -1;
    const RunShape shape(sc);
    const auto size = static_cast<std::int64_t>(shape.linear(shape.vocab, 4));
    const bool own = std::any_of(table.rows.begin(), table.rows.end(), [&](const TensorRow& row) {
        return row.each == size && row.shape == "b·s·V";
    });
    if (!own || size <= 0)
        return -1;
    const auto half = static_cast<std::int64_t>(shape.linear(shape.vocab, 2));
    std::int64_t head = 0, fp32 = 0, views = 0, bytes = 0; // each counted live, so its bytes sum saturating
    for (const AttributedAllocation& a : at.allocations) {
        if (a.allocation.size != size || a.category == MeasuredCategory::Weights ||
            a.category == MeasuredCategory::Gradients || a.category == MeasuredCategory::OptimizerStates ||
            a.category == MeasuredCategory::Workspaces || a.category == MeasuredCategory::KvCache)
            continue;
        const std::string_view op = atenOperator(trace, a.allocation.stack);
        const bool inFp32 = autocastRunsInFp32(op);
        if (autocastRunsIn16Bits(op))
            ++head;
        else if (inFp32)
            ++fp32;
        else if (op == "select_backward" || op == "slice_backward")
            ++views;
        else
            return -1;
        bytes = saturatingAdd(bytes, inFp32 ? size : half);
    }
    // A view's backward is of the head's output only where the forward made no other such tensor.
    if (views > 0 && (head == 0 || fp32 > 0))
        return -1;
    return bytes;
}

// The sizes a score tensor of this rank may have (batch x heads x tokens^2 in the activations' dtype and in
// fp32; 1 byte too with dropout's masks), and those of its tokens-linear tensors: a score size among the
// second tells nothing by size.
std::set<std::int64_t> scoreSizes(const Scenario& sc, bool masks) {
    const RunShape shape(sc);
    std::set<std::int64_t> out;
    for (const int d : {1, static_cast<int>(sc.activationDtypeBytes()), 4})
        if (d > 1 || masks)
            out.insert(static_cast<std::int64_t>(shape.scores(d)));
    return out;
}
std::set<std::int64_t> linearSizes(const Scenario& sc) {
    const RunShape shape(sc);
    std::set<std::int64_t> out;
    for (const int d : {1, static_cast<int>(sc.activationDtypeBytes()), 4})
        for (const auto& [symbol, w] : shape.linearWidths())
            out.insert(static_cast<std::int64_t>(shape.linear(w, d)));
    return out;
}

// A tensor whose shape its calls told (tell below).
struct ToldTensor {
    std::int64_t size = 0;
    std::string shape; // "b·a·s²" or a tokens-linear symbol
    int dtypeBytes = 0;
};

// The shapes a tensor of `size` may have: b·a·s² at these widths, and the tokens-linear ones.
RunMeasurement::AmbiguousTensor shapesOf(const RunShape& shape, std::int64_t size,
                                         std::span<const int> dtypes) {
    RunMeasurement::AmbiguousTensor t;
    const double bytes = static_cast<double>(size);
    for (const int d : dtypes) {
        if (bytes == shape.scores(d) &&
            std::find(t.scoresBytes.begin(), t.scoresBytes.end(), d) == t.scoresBytes.end())
            t.scoresBytes.push_back(d);
        for (const auto& [symbol, w] : shape.linearWidths())
            if (bytes == shape.linear(w, d))
                t.linear.push_back({symbol, d});
    }
    return t;
}

// What a tensor of a score's size and a tokens-linear one's is, as its calls tell (ScoreSites). Outside
// attention it is the tokens-linear one. Inside, it is a score unless attention has that width too (hidden,
// or the QKV projection's): the calls then say only that it is attention's, and attention holds both;
// except that without dropout it holds no 1-byte score (a mask per head and query: the causal masks the
// frameworks build are s x s or broadcast over heads), so a width attention has that collides only with
// that is the tokens-linear one (CS336 at 256 tokens: 4 MiB is its q, k, v in fp32 and a 1-byte b·a·s²).
std::optional<ToldTensor> tell(ScoreSites::Reading reading, const RunMeasurement::AmbiguousTensor& t,
                               bool dropout) {
    if (t.linear.empty() || t.scoresBytes.empty())
        return std::nullopt;
    // (a 1-byte tokens-linear shape last: a mask's, where a width in the activations' dtype or fp32 fits)
    const auto wide =
        std::find_if(t.linear.begin(), t.linear.end(), [](const auto& l) { return l.dtypeBytes > 1; });
    const bool onlyMasks =
        std::all_of(t.scoresBytes.begin(), t.scoresBytes.end(), [](int d) { return d == 1; });
    if (reading == ScoreSites::Reading::Untold) {
        // Where the calls tell nothing (a norm's output: its call keeps per-token vectors), a size whose
        // only score reading is a 1-byte one is taken for its wider tokens-linear shape without dropout:
        // were it a mask made per head after all, a quarter of an fp32 score copy would be counted with the
        // tokens, where leaving it untold leaves the run's scores untold (notHanmin's XL forward at 256
        // tokens: its norms' fp32 outputs, 6.25 MiB, are the 1-byte b·a·s²'s size).
        if (onlyMasks && !dropout && wide != t.linear.end())
            return ToldTensor{0, wide->symbol, wide->dtypeBytes};
        return std::nullopt;
    }
    const RunMeasurement::AmbiguousTensor::Linear& linear = wide != t.linear.end() ? *wide : t.linear.front();
    if (reading == ScoreSites::Reading::TokensLinear)
        return ToldTensor{0, linear.symbol, linear.dtypeBytes};
    const auto attentionWidth = std::find_if(t.linear.begin(), t.linear.end(), [](const auto& l) {
        return std::string_view(l.symbol) == "b·s·h" || std::string_view(l.symbol) == "b·s·(a+2g)·d";
    });
    if (attentionWidth == t.linear.end())
        return ToldTensor{0, "b·a·s²", t.scoresBytes.front()};
    if (onlyMasks && !dropout)
        return ToldTensor{0, attentionWidth->symbol, attentionWidth->dtypeBytes};
    return std::nullopt;
}

// Which of the transient bytes at the loss peak are the attention scores' copies, from the tensors' sizes:
// batch x heads (on this rank) x query tokens x key tokens x 1, 2 or 4 bytes (a mask, the activations'
// dtype, fp32), as the caching allocator rounds them (512 bytes). A size that is also one of a
// tokens-linear tensor (batch x tokens x hidden, FFN, QKV or vocabulary width) is counted apart, and kept
// with the line that allocated it, unless the run's calls tell which it is (ScoreSites): then it is counted
// as what they tell, and listed in `told` for the tensor table.
void splitBySize(const Scenario& sc, const Trace& trace, const Attribution& at, const ScoreSites* sites,
                 RunMeasurement& m, std::vector<ToldTensor>& told) {
    const ModelSpec& md = sc.model;
    if (!md.known || md.heads <= 0)
        return;
    const RunShape shape(sc);
    const int dtypes[] = {1, static_cast<int>(sc.activationDtypeBytes()), 4};
    const ScoreWidths scoreWidths(sc);
    // Each score tensor at the width 16-bit autocast gives it (RunMeasurement::quadraticAsAutocast): in an
    // fp32 run, by the operator that made it; dropout's 1-byte masks, and an autocast run's, as they are.
    const bool fp32Run = sc.activationDtypeBytes() >= 4;
    const auto half = static_cast<std::int64_t>(shape.scores(2));
    auto addAsAutocast = [&](const Allocation& a) {
        const std::string_view op = atenOperator(trace, a.stack);
        if (!op.empty()) {
            auto it = std::find_if(m.scoreOperators.begin(), m.scoreOperators.end(),
                                   [&](const auto& o) { return o.first == op; });
            if (it == m.scoreOperators.end())
                m.scoreOperators.emplace_back(std::string(op), 1);
            else
                ++it->second;
        }
        if (m.quadraticAsAutocast < 0)
            return;
        if (!fp32Run || a.size != scoreWidths.fp32) {
            m.quadraticAsAutocast = saturatingAdd(m.quadraticAsAutocast, a.size);
        } else if (op.empty()) {
            m.quadraticAsAutocast = -1; // a trace recorded without C++ frames
        } else if (autocastRunsInFp32(op)) {
            m.quadraticAsAutocast = saturatingAdd(m.quadraticAsAutocast, a.size);
        } else {
            m.quadraticAsAutocast = saturatingAdd(m.quadraticAsAutocast, half);
            m.quadraticOutsideFp32List = saturatingAdd(m.quadraticOutsideFp32List, a.size);
        }
    };
    for (const AttributedAllocation& a : at.allocations) {
        switch (a.category) {
        case MeasuredCategory::Weights:
        case MeasuredCategory::Gradients:
        case MeasuredCategory::OptimizerStates:
        case MeasuredCategory::Workspaces:
        case MeasuredCategory::KvCache:
            continue;
        default:
            break;
        }
        RunMeasurement::AmbiguousTensor t = shapesOf(shape, a.allocation.size, dtypes);
        const std::optional<ToldTensor> byCalls = sites && !t.scoresBytes.empty() && !t.linear.empty()
                                                      ? tell(sites->reading(a.allocation.stack), t,
                                                             sc.mode == Mode::Training && sc.training.dropout)
                                                      : std::nullopt;
        if (byCalls) {
            told.push_back({a.allocation.size, byCalls->shape, byCalls->dtypeBytes});
            if (byCalls->shape != "b·a·s²")
                continue;
            m.quadratic = saturatingAdd(m.quadratic, a.allocation.size);
            m.quadraticAsFp32 = saturatingAdd(m.quadraticAsFp32, scoreWidths.asFp32(a.allocation.size));
            addAsAutocast(a.allocation);
        } else if (!t.scoresBytes.empty() && !t.linear.empty()) {
            m.ambiguous = saturatingAdd(m.ambiguous, a.allocation.size);
            t.site = siteOf(trace, a.allocation.stack);
            t.size = a.allocation.size;
            m.ambiguousTensors.push_back(std::move(t));
        } else if (!t.scoresBytes.empty()) {
            m.quadratic = saturatingAdd(m.quadratic, a.allocation.size);
            m.quadraticAsFp32 = saturatingAdd(m.quadraticAsFp32, scoreWidths.asFp32(a.allocation.size));
            addAsAutocast(a.allocation);
        }
    }
}

// Eager attention's backward in a training run, measured from the loss (the last allocation of the logits'
// size, batch x tokens x vocabulary, up to the loss peak; all layers' saved scores alive, no layer's backward
// begun): how far the score-sized tensors alive (batch x heads x tokens^2 x 1, 2 or 4 bytes) grew beyond
// the loss's before the step at most, and how far at the loss peak. What grows is the softmax backward's
// temporaries, allocated after the loss and freed before the step; what shrinks the saved scores the
// backward frees. At short lengths that moment is not the run's peak; it grows with the square of the
// length and is the peak at four times it (the CS336 medium model under autocast from 1,024 tokens, where the
// loss peak is that moment: the growth at the peak then says how much of what was measured there is not
// the loss's). A size that is also a tokens-linear tensor's, or a parameter's when gradients are accumulated
// into held ones (each layer's new gradient is then a temporary), tells nothing: not measured.
struct BackwardGrowth {
    std::int64_t most = 0, atPeak = 0;
    std::int64_t atPeakAsFp32 = 0; // atPeak with each tensor at its fp32 size (ScoreWidths)
};
std::optional<BackwardGrowth> backwardScoresGrowth(const Scenario& sc, const TraceIndex& index,
                                                   std::size_t lossPeak, std::size_t step,
                                                   bool gradientsHeld) {
    const ModelSpec& md = sc.model;
    if (sc.mode != Mode::Training || !md.known || md.heads <= 0 || lossPeak >= step)
        return std::nullopt;
    const RunShape shape(sc);
    // 1-byte scores are dropout's masks: without dropout the size is some other tensor's.
    const std::set<std::int64_t> scores = scoreSizes(sc, sc.training.dropout);
    std::set<std::int64_t> others = linearSizes(sc), logits;
    for (const int d : {static_cast<int>(sc.activationDtypeBytes()), 4})
        logits.insert(static_cast<std::int64_t>(shape.linear(shape.vocab, d)));
    if (gradientsHeld)
        for (const std::uint64_t n : md.parameterTensors())
            others.insert(static_cast<std::int64_t>(RunShape::rounded(
                static_cast<double>(n) * sc.training.bytes.gradients / sc.cluster.tensorParallel)));
    for (const std::int64_t s : scores)
        if (others.count(s))
            return std::nullopt;
    const DeviceTrace& d = index.device();
    const std::size_t end = std::min(step, d.entries());
    std::size_t from = lossPeak;
    for (std::size_t e = std::min(lossPeak, end - 1) + 1; e-- > 0;)
        if (d.action[e] == TraceAction::Alloc && logits.count(d.size[e])) {
            from = e;
            break;
        }
    std::unordered_map<std::uint64_t, std::pair<std::size_t, std::int64_t>> live; // address -> (alloc, bytes)
    std::vector<std::pair<std::size_t, std::int64_t>> changes; // (event, bytes) after the loss
    for (std::size_t e = 0; e < end; ++e) {
        const TraceAction action = d.action[e];
        if (action == TraceAction::Alloc && scores.count(d.size[e])) {
            live[d.addr[e]] = {e, d.size[e]};
        } else if (action == TraceAction::FreeCompleted || action == TraceAction::Free) {
            const auto it = live.find(d.addr[e]);
            if (it == live.end())
                continue;
            const auto [alloc, bytes] = it->second;
            live.erase(it);
            if (e <= from)
                continue;
            if (alloc > from) // a temporary of the backward: alive from its allocation to here
                changes.push_back({alloc, bytes});
            changes.push_back({e, -bytes}); // (a saved tensor the backward freed: only the drop)
        }
    }
    std::stable_sort(changes.begin(), changes.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    BackwardGrowth g;
    std::int64_t now = 0;
    std::int64_t nowAsFp32 = 0;
    const ScoreWidths widths(sc);
    for (const auto& [event, bytes] : changes) {
        now = saturatingAdd(now, bytes);
        // (every change is a score size, positive, or its negation)
        nowAsFp32 = saturatingAdd(nowAsFp32, bytes < 0 ? -widths.asFp32(-bytes) : widths.asFp32(bytes));
        g.most = std::max(g.most, now);
        if (event <= lossPeak)
            g.atPeak = now, g.atPeakAsFp32 = nowAsFp32;
    }
    return g;
}

// A forward-only run's two kinds of moment (RunMeasurement::momentsMeasured): the event with the most
// allocated while score-sized tensors (batch x heads x tokens^2 in the activations' dtype or fp32) are alive,
// with their bytes there, and the event with the most allocated while none is. Inside a layer's attention
// the code holds that layer's score copies (CS336's hand-written softmax: the scores, x - max, exp and the
// quotient, four fp32 copies alive at once) beside a few tokens-linear tensors; elsewhere the FFN's or the
// head's tensors. Nothing when a score's size is a tokens-linear tensor's too (the moments could not be
// told apart) or the run never held a score-sized tensor (fused attention).
struct Moments {
    std::size_t attention = 0, rest = 0;
    std::int64_t scores = 0, scoresAsFp32 = 0; // (ScoreWidths)
};
std::optional<Moments> attentionMoments(const Scenario& sc, const TraceIndex& index,
                                        const ScoreSites* sites) {
    const ModelSpec& md = sc.model;
    if (sc.keptAs() != Mode::Inference || !md.known || md.heads <= 0 ||
        sc.inference.attention != Attention::Eager)
        return std::nullopt;
    const std::set<std::int64_t> scores = scoreSizes(sc, false), linear = linearSizes(sc);
    const RunShape shape(sc);
    const int dtypes[] = {1, static_cast<int>(sc.activationDtypeBytes()), 4};
    const DeviceTrace& d = index.device();
    // A score's size that a tokens-linear tensor has too: each such tensor is what its calls tell
    // (ScoreSites); none is measured when one is untold.
    std::optional<bool> untold;
    auto isScore = [&](std::size_t e) {
        if (!scores.count(d.size[e]))
            return false;
        if (!linear.count(d.size[e]))
            return true;
        const auto t = sites ? tell(sites->reading(d.stack[e]), shapesOf(shape, d.size[e], dtypes), false)
                             : std::nullopt;
        if (!t)
            untold = true;
        return t && t->shape == "b·a·s²";
    };
    const auto& allocated = index.allocatedSeries();
    std::unordered_map<std::uint64_t, std::int64_t> live; // address -> bytes, the scores'
    std::int64_t now = 0, nowAsFp32 = 0, inAttention = INT64_MIN, elsewhere = INT64_MIN;
    const ScoreWidths widths(sc);
    Moments m;
    for (std::size_t e = 0; e < d.entries() && e < allocated.size() && !untold; ++e) {
        const TraceAction action = d.action[e];
        if (action == TraceAction::Alloc && isScore(e)) {
            live[d.addr[e]] = d.size[e];
            now = saturatingAdd(now, d.size[e]);
            nowAsFp32 = saturatingAdd(nowAsFp32, widths.asFp32(d.size[e]));
        } else if (action == TraceAction::FreeCompleted || action == TraceAction::Free) {
            if (const auto it = live.find(d.addr[e]); it != live.end()) {
                now -= it->second;
                nowAsFp32 -= widths.asFp32(it->second);
                live.erase(it);
            }
        }
        if (now > 0 && allocated[e] > inAttention)
            inAttention = allocated[e], m.attention = e, m.scores = now, m.scoresAsFp32 = nowAsFp32;
        else if (now <= 0 && allocated[e] > elsewhere)
            elsewhere = allocated[e], m.rest = e;
    }
    if (untold || inAttention == INT64_MIN || elsewhere == INT64_MIN)
        return std::nullopt;
    return m;
}

// One tensor of a table's row that named two shapes of its size takes the one it was found to have.
void relabel(TensorTable& table, const ToldTensor& t) {
    auto& rows = table.rows;
    const auto both = std::find_if(rows.begin(), rows.end(), [&](const TensorRow& r) {
        return r.each == t.size && r.dtypeBytes == 0 && r.count > 0;
    });
    if (both == rows.end())
        return;
    if (--both->count == 0)
        rows.erase(both);
    const auto row = std::find_if(rows.begin(), rows.end(), [&](const TensorRow& r) {
        return r.each == t.size && r.shape == t.shape && r.dtypeBytes == t.dtypeBytes;
    });
    if (row != rows.end())
        ++row->count;
    else
        rows.push_back({t.shape, t.dtypeBytes, t.size, 1});
    std::stable_sort(rows.begin(), rows.end(),
                     [](const TensorRow& x, const TensorRow& y) { return x.bytes() > y.bytes(); });
}

// Every size the lines in `sites` allocated over a run's trace.
std::map<std::string, std::set<std::int64_t>> sizesAt(const Trace& trace, const TraceIndex& index,
                                                      const std::set<std::string>& sites) {
    std::map<std::string, std::set<std::int64_t>> out;
    if (sites.empty())
        return out;
    const DeviceTrace& d = index.device();
    std::unordered_map<std::uint32_t, const std::string*> siteOfStack; // nullptr: not one of `sites`
    for (std::size_t e = 0; e < d.entries(); ++e) {
        if (d.action[e] != TraceAction::Alloc)
            continue;
        auto [it, fresh] = siteOfStack.try_emplace(d.stack[e], nullptr);
        if (fresh)
            if (const auto s = sites.find(siteOf(trace, d.stack[e])); s != sites.end())
                it->second = &*s;
        if (it->second)
            out[*it->second].insert(d.size[e]);
    }
    return out;
}

// Two runs of one code at different lengths tell a tokens-squared tensor from a tokens-linear one of the
// same size: the line that allocated it allocates, in the other run, the size one reading gives there and
// not the other's (the CS336 forward's softmax at 256 tokens: 16 MiB, b·a·s² in fp32 and b·s·f in fp32;
// the same line at 128 tokens allocates 4 MiB, b·a·s², where b·s·f would be 8). What is told apart leaves
// `ambiguous`, for `quadratic` or for the tokens-linear rest, and its row of the loss peak's table takes the
// shape it was found to have. Nothing is guessed: a line the other runs never reached, a run where both
// readings give one size again, or a line that allocated both sizes leaves the tensor ambiguous.
void resolveAcrossRuns(const std::vector<CalibrationInput>& runs, std::vector<RunMeasurement>& measured) {
    std::set<std::string> sites;
    for (const RunMeasurement& m : measured)
        for (const auto& t : m.ambiguousTensors)
            if (!t.site.empty())
                sites.insert(t.site);
    if (sites.empty())
        return;
    std::vector<std::map<std::string, std::set<std::int64_t>>> sizes;
    for (const CalibrationInput& in : runs)
        sizes.push_back(sizesAt(*in.trace, *in.index, sites));
    for (std::size_t i = 0; i < runs.size(); ++i) {
        RunMeasurement& m = measured[i];
        std::vector<RunMeasurement::AmbiguousTensor> still;
        for (auto& t : m.ambiguousTensors) {
            int verdict = 0; // 1 scores, -1 tokens-linear, 0 not told
            const RunMeasurement::AmbiguousTensor::Linear* as = nullptr;
            for (std::size_t j = 0; j < runs.size() && !t.site.empty(); ++j) {
                const auto at = sizes[j].find(t.site);
                if (j == i || at == sizes[j].end())
                    continue;
                const RunShape other(*runs[j].scenario);
                // The other run may compute in another dtype (an fp32 run beside an autocast one): the
                // line's tensor there is either shape at the widths either dtype gives it.
                std::set<int> widths(t.scoresBytes.begin(), t.scoresBytes.end());
                widths.insert(static_cast<int>(runs[j].scenario->activationDtypeBytes()));
                widths.insert(4);
                std::set<std::int64_t> scores, linear;
                for (const int d : widths)
                    scores.insert(static_cast<std::int64_t>(other.scores(d)));
                for (const auto& l : t.linear)
                    for (const int d : widths)
                        linear.insert(static_cast<std::int64_t>(other.linear(widthIn(other, l.symbol), d)));
                bool sawScores = false, sawLinear = false, overlap = false;
                for (const std::int64_t s : scores) {
                    overlap = overlap || linear.count(s) > 0;
                    sawScores = sawScores || at->second.count(s) > 0;
                }
                for (const auto& l : t.linear)
                    for (const int d : widths)
                        if (at->second.count(
                                static_cast<std::int64_t>(other.linear(widthIn(other, l.symbol), d)))) {
                            sawLinear = true;
                            as = &l;
                        }
                if (overlap || sawScores == sawLinear)
                    continue;
                const int v = sawScores ? 1 : -1;
                verdict = verdict == 0 || verdict == v ? v : 2;
            }
            if (verdict != 1 && verdict != -1) {
                still.push_back(std::move(t));
                continue;
            }
            m.ambiguous -= t.size;
            if (verdict == 1) {
                m.quadraticAsAutocast = -1; // told by its size in another run, not by its own stack
                m.quadratic = saturatingAdd(m.quadratic, t.size);
                m.quadraticAsFp32 =
                    saturatingAdd(m.quadraticAsFp32, ScoreWidths(*runs[i].scenario).asFp32(t.size));
            }
            // The loss peak's table: one tensor of the row that named both shapes takes the one it has.
            relabel(m.atLoss, verdict == 1 ? ToldTensor{t.size, "b·a·s²", t.scoresBytes.front()}
                                           : ToldTensor{t.size, as->symbol, as->dtypeBytes});
        }
        m.ambiguousTensors = std::move(still);
    }
}

} // namespace

RunMeasurement measureRun(const CalibrationInput& run, const AttributionRules& rules) {
    RunMeasurement m;
    const TraceIndex& index = *run.index;
    const std::size_t n = index.events();
    if (n == 0)
        return m;
    const StepSpan span = stepSpan(*run.trace, index, rules); // one scan of the events
    const std::size_t step = run.scenario->mode == Mode::Training ? span.start : n;
    m.stepInForward = run.scenario->mode == Mode::Inference && span.start < n;
    const auto& allocated = index.allocatedSeries();
    m.lossPeak = transientPeak(*run.trace, index, std::max<std::size_t>(step, 1), rules, run.scenario);
    const Attribution at = attribute(*run.trace, index, m.lossPeak, rules, run.scenario);
    m.workspaces = at.of(MeasuredCategory::Workspaces);
    m.kvCache = at.of(MeasuredCategory::KvCache);
    m.gradients = at.of(MeasuredCategory::Gradients);
    m.transient = at.total - modelState(at) - m.workspaces - m.kvCache;
    m.total = at.total;
    // A score's size that is a tokens-linear tensor's too: the run's calls may tell them apart.
    std::optional<ScoreSites> sites;
    for (const std::int64_t s : scoreSizes(*run.scenario, true))
        if (!sites && linearSizes(*run.scenario).count(s))
            sites.emplace(*run.scenario, *run.trace, index);
    std::vector<ToldTensor> told;
    splitBySize(*run.scenario, *run.trace, at, sites ? &*sites : nullptr, m, told);
    m.atLoss = tensorTable(*run.scenario, at, step);
    for (const ToldTensor& t : told)
        relabel(m.atLoss, t);
    if (run.scenario->keptAs() == Mode::Training)
        m.logitsAsAutocast = logitsAsAutocast(*run.scenario, *run.trace, at, m.atLoss);
    // Gradients held at the loss peak (half the parameters' or more: zero_grad frees all or none).
    double gradientBytes = 0;
    for (const std::uint64_t t : run.scenario->model.parameterTensors())
        gradientBytes += static_cast<double>(t) * run.scenario->training.bytes.gradients;
    const bool held =
        static_cast<double>(m.gradients) >= gradientBytes / run.scenario->cluster.tensorParallel / 2;
    if (const auto growth = backwardScoresGrowth(*run.scenario, index, m.lossPeak, step, held)) {
        m.backwardMeasured = true;
        m.backwardScores = growth->most;
        // A loss peak in the last layer's backward (a long run's): its scores beyond the loss's are that
        // backward's, which the factor above plans, not copies the forward keeps.
        const std::int64_t beyond = std::clamp<std::int64_t>(growth->atPeak, 0, m.quadratic);
        m.quadratic -= beyond;
        if (beyond > 0) {
            m.quadraticAsFp32 = std::max<std::int64_t>(0, m.quadraticAsFp32 - growth->atPeakAsFp32);
            m.quadraticAsAutocast = -1; // which of the tensors are the backward's, no operator says
        }
        m.transient -= beyond;
        m.peakInBackward = beyond > 0;
    }
    if (const auto moments = attentionMoments(*run.scenario, index, sites ? &*sites : nullptr)) {
        auto transientAt = [&](std::size_t event) {
            const Attribution a = attribute(*run.trace, index, event, rules, run.scenario);
            return a.total - modelState(a) - a.of(MeasuredCategory::Workspaces) -
                   a.of(MeasuredCategory::KvCache);
        };
        m.momentsMeasured = true;
        m.attentionTransient = transientAt(moments->attention);
        m.attentionScores = moments->scores;
        m.attentionScoresAsFp32 = moments->scoresAsFp32;
        m.restTransient = transientAt(moments->rest);
    }
    const Attribution last = attribute(*run.trace, index, n - 1, rules, run.scenario);
    m.workspacesHeld = std::max(m.workspaces, last.of(MeasuredCategory::Workspaces));
    if (run.scenario->mode == Mode::Training && step >= n && m.gradients == 0)
        m.noBackward = last.of(MeasuredCategory::Gradients) == 0;
    // The allocator's segments beside the allocations, from the first allocation on.
    const CounterPeaks peaks = peaksFromFirstAllocation(index);
    m.allocatedPeak = peaks.allocated;
    m.reservedPeak = peaks.reserved;
    if (step < n) {
        m.hasStep = true;
        const std::size_t stepEnd = std::max(step + 1, span.end);
        const Attribution s =
            attribute(*run.trace, index, argmax(allocated, step, stepEnd), rules, run.scenario);
        m.stepScratch =
            std::max<std::int64_t>(0, s.total - modelState(s) - s.of(MeasuredCategory::Workspaces));
        m.workspacesHeld = std::max(m.workspacesHeld, s.of(MeasuredCategory::Workspaces));
        m.atStep = tensorTable(*run.scenario, s, step);
    }
    return m;
}

namespace {

// A calibration a scenario file cannot hold (Calibration::kMostScale and the rest) is refused, naming the
// factor, rather than written into a file its reader refuses: the runs then held thousands of times what the
// scenario plans (a forward of one 64-token sequence fitted to a run of four 1,024-token ones: x4,240), which
// no code keeps beyond its profile's plan, so the scenario is not the run's.
void refuseBeyondAScenario(const CalibrationResult& r, const std::vector<CalibrationInput>& runs) {
    const Calibration& c = r.factors;
    struct Field {
        const char* name;
        const char* what;
        const char* unit;
        double value, least, most;
    };
    // The file's factors as the reader takes them (kCalibrationFactors); one not measured is its absent
    // value, NaN included.
    std::vector<Field> fields;
    for (const CalibrationFactor& k : kCalibrationFactors)
        if (!(std::isnan(k.absent) && std::isnan(c.*k.member)))
            fields.push_back({k.key, k.what, k.unit, c.*k.member, k.least, k.most});
    for (const auto& [dtype, factor] : c.quadraticByDtype)
        fields.push_back({"quadratic_by_activation_bytes", "what grows with the tokens squared", "x", factor,
                          0, Calibration::kMostScale});
    for (const auto& [dtype, factor] : c.logitsByDtype)
        fields.push_back({"logits_by_activation_bytes", "the loss's vocabulary-sized tensors", "x", factor, 0,
                          Calibration::kMostScale});
    for (const Field& f : fields) {
        if (f.value >= f.least && f.value <= f.most)
            continue;
        const bool times = std::string_view(f.unit) == "x";
        std::ostringstream s;
        s.imbue(std::locale::classic());
        s << "fitted to ";
        for (std::size_t i = 0; i < runs.size(); ++i)
            s << (i ? ", " : "") << runs[i].name;
        s << ", " << f.what << " would be " << (times ? "x" : "") << std::fixed << std::setprecision(1)
          << f.value << (times ? " the plan's" : std::string(" ") + f.unit) << ", beyond the "
          << (times ? "x" : "") << std::setprecision(0) << f.most << (times ? "" : std::string(" ") + f.unit)
          << " a scenario can hold: the scenario does not describe ";
        s << (runs.size() == 1 ? "this run" : "these runs");
        // With what else runMismatch saw (its reasons other than the factors this sentence gives, without
        // its advice, which this sentence ends with).
        std::vector<std::string> seen;
        for (const CalibrationRun& run : r.runs) {
            const std::size_t from = run.mismatch.find(": "), to = run.mismatch.find("; check its model");
            if (from == std::string::npos || to == std::string::npos || to <= from)
                continue;
            std::istringstream reasons(run.mismatch.substr(from + 2, to - from - 2));
            for (std::string reason; std::getline(reasons, reason, ';');) {
                reason.erase(0, reason.find_first_not_of(' '));
                if (reason.rfind("what grows with", 0) != 0 &&
                    std::find(seen.begin(), seen.end(), reason) == seen.end())
                    seen.push_back(reason);
            }
        }
        for (std::size_t i = 0; i < seen.size(); ++i)
            s << (i ? "; " : ": ") << seen[i];
        s << "; nothing was calibrated. Plan the run's own model, batch, length and precision, and calibrate "
             "that";
        throw Error(std::string("calibration.factors.") + f.name, s.str());
    }
}

// Each run as compare sees it before the calibration, planned as its scenario says: its categories at the
// peak, and the code its stacks name (core/compare/codeorigin.h).
struct Before {
    std::vector<Comparison> comparisons;
    std::vector<Estimate> plans;
};

// The fit of `runs` (their scenarios, or the same planned with the profile of the code they ran:
// `codeTables`), reported against `asPlanned` (the scenarios as given, `before` their plans).
// `cs336Code`: every run's stacks name cs336_basics (Before::comparisons).
CalibrationResult calibrateRuns(const std::vector<CalibrationInput>& runs,
                                const std::vector<CalibrationInput>& asPlanned, const Before& plannedBefore,
                                bool cs336Code, bool codeTables, const AttributionRules& rules);

// A run's advice as calibration reports it: which profile plans its code, and where its allocator differed
// from the scenario's (a snapshot's allocator_settings), what the fit made of it: the factors measured the
// cache the run's allocator made, and the calibrated plan replays the scenario's.
std::string calibrationAdvice(const Comparison& c, const Scenario& scenario, const Trace& trace) {
    std::string s = c.codeAdvice();
    const std::string differs = allocatorSettingsAdvice(scenario, trace.allocatorSettings);
    if (differs.empty())
        return s;
    const std::string note = differs +
                             ": the fit measured the cache the run's allocator made; set "
                             "cluster.expandable_segments as the run had it, for the calibrated plan to "
                             "make the same at other lengths";
    return s.empty() ? note : s + "; " + note;
}
} // namespace

CalibrationResult calibrate(const std::vector<CalibrationInput>& runs, const AttributionRules& rules,
                            const std::function<void(Comparison&, const Scenario&)>& beside,
                            FitAgainst against) {
    // The fit tells the model state from what grows with the tokens by the allocations alive at the peaks:
    // a file of totals has none, and its whole allocated bytes would be fitted as tokens (a memory timeline
    // of another model calibrated the default scenario to x0.117 and stayed 1,007% off).
    for (const CalibrationInput& run : runs)
        if (run.index && run.index->device().hasTotals)
            throw Error(run.name,
                        "records memory totals, not allocations (a profiler trace, a memory timeline or "
                        "an nvidia-smi log): calibration reads the allocations alive at the run's "
                        "peaks, which a PyTorch memory snapshot records "
                        "(torch.cuda.memory._record_memory_history, then _dump_snapshot)");
    // A snapshot taken without _record_memory_history holds the memory at the moment it was taken, not the
    // run's peak: fitted to it, the factors scale the plan to whatever was alive then (a 0.5 GiB snapshot
    // of the medium model's run calibrated it to +1,176%).
    for (const CalibrationInput& run : runs)
        if (run.index && run.index->device().stateOnly())
            throw Error(run.name,
                        "records no allocation events, only the memory at the moment the snapshot was taken, "
                        "which need not be the run's peak: calibration reads the allocations alive at the "
                        "run's peaks; record them with torch.cuda.memory._record_memory_history() before the "
                        "step, then _dump_snapshot");
    Before before;
    for (const CalibrationInput& in : runs) {
        Scenario uncalibrated = *in.scenario;
        uncalibrated.calibration = Calibration{};
        before.plans.push_back(estimate(uncalibrated));
        before.comparisons.push_back(
            compareAtPeak(uncalibrated, before.plans.back(), *in.trace, *in.index, rules));
        if (beside)
            beside(before.comparisons.back(), uncalibrated);
    }
    // Every run's stacks naming cs336_basics, whose tables the plan has, and every scenario planning it with
    // another profile the code can run: the factors are fitted against that code's tables, as its profile
    // plans the runs (Calibration::codeTables), and the calibrated plan is made with them.
    const bool cs336Code =
        !runs.empty() &&
        std::all_of(before.comparisons.begin(), before.comparisons.end(), [](const Comparison& b) {
            return b.code.found && b.code.framework == Framework::Cs336Basics;
        });
    if (against == FitAgainst::CodeWhereKnown && cs336Code &&
        std::all_of(runs.begin(), runs.end(), [](const CalibrationInput& in) {
            return plannedFramework(*in.scenario) != Framework::Cs336Basics && cs336CanRun(*in.scenario);
        })) {
        std::vector<Scenario> asCode;
        asCode.reserve(runs.size());
        for (const CalibrationInput& in : runs)
            asCode.push_back(withPlannedFramework(*in.scenario, Framework::Cs336Basics));
        std::vector<CalibrationInput> fit = runs;
        for (std::size_t i = 0; i < runs.size(); ++i)
            fit[i].scenario = &asCode[i];
        CalibrationResult r = calibrateRuns(fit, runs, before, cs336Code, true, rules);
        // And against the scenarios' own profile, for what-ifs the code cannot run: a fit that profile
        // cannot hold leaves them with the code's factors (and the warning that says so).
        try {
            r.ownProfile = calibrateRuns(runs, runs, before, cs336Code, false, rules).factors;
        } catch (const Error&) {
            r.ownProfile.reset();
        }
        return r;
    }
    return calibrateRuns(runs, runs, before, cs336Code, false, rules);
}

namespace {

CalibrationResult calibrateRuns(const std::vector<CalibrationInput>& runs,
                                const std::vector<CalibrationInput>& asPlanned, const Before& plannedBefore,
                                bool cs336Code, bool codeTables, const AttributionRules& rules) {
    CalibrationResult r;
    Calibration& c = r.factors;
    c.present = true;
    std::vector<RunMeasurement> measured;
    std::vector<EstimatedParts> parts;
    std::vector<double> grows; // per run: the measured transient bytes the factors scale
    for (const CalibrationInput& in : runs) {
        measured.push_back(measureRun(in, rules));
        parts.push_back(estimatedParts(*in.scenario, measured.back().peakInBackward));
        grows.push_back(static_cast<double>(measured.back().transient) - parts.back().fixed);
    }
    resolveAcrossRuns(runs, measured);
    // The loss's vocabulary-sized tensors, measured apart from the layers' (Calibration::logits): in training
    // steps whose loss peaks hold them (the tensor table's b·s·V rows, a size no other tensor has) where the
    // plan plans some, what the runs held over what it planned; the tokens' factor is then fitted to the
    // rest. (CS336's code holds four fp32 copies at its loss where the plain profile plans 2.2: with one
    // factor for both, a vocabulary five times larger on a quarter of the layers was 10% under.)
    {
        double held = 0, planned = 0;
        std::vector<double> logitsOf(runs.size(), 0);
        bool all = !runs.empty();
        for (std::size_t i = 0; i < runs.size() && all; ++i) {
            for (const TensorRow& row : measured[i].atLoss.rows)
                logitsOf[i] += row.shape == "b·s·V" ? static_cast<double>(row.bytes()) : 0;
            all = runs[i].scenario->keptAs() == Mode::Training && !measured[i].noBackward &&
                  parts[i].logits > 0 && logitsOf[i] > 0 && grows[i] > logitsOf[i] &&
                  parts[i].linear > parts[i].logits;
            held += logitsOf[i];
            planned += parts[i].logits;
        }
        if (all && planned > 0) {
            c.logits = held / planned;
            // Of the loss the runs' scenarios plan (when they share one): another loss keeps other copies.
            if (std::all_of(runs.begin(), runs.end(), [&](const CalibrationInput& in) {
                    return in.scenario->training.plannedLoss() ==
                           runs.front().scenario->training.plannedLoss();
                }))
                c.logitsMeasuredWith = runs.front().scenario->training.plannedLoss();
            // fp32 runs tell a 16-bit autocast plan where every such tensor's width is autocast's choice
            // (RunMeasurement::logitsAsAutocast): what they would hold, over what the plan under autocast
            // holds there. NiuHuangxiaozi's steps, whose loss reads the last position: x0.722 in fp32, x0.363
            // under autocast, where the fp32 factor carried to the profile's autocast loss (three fp32
            // copies of its four) planned twice the vocabulary-sized bytes the autocast step held.
            double asAutocast = 0, plannedAutocast = 0;
            bool told = true;
            for (std::size_t i = 0; i < runs.size() && told; ++i) {
                const Scenario& sc = *runs[i].scenario;
                told = measured[i].logitsAsAutocast >= 0 && autocastOverFp32(withAutocast(sc));
                asAutocast += static_cast<double>(measured[i].logitsAsAutocast);
                plannedAutocast += estimatedParts(withAutocast(sc), measured[i].peakInBackward).logits;
            }
            if (told && plannedAutocast > 0 && asAutocast > 0)
                c.logitsByDtype = {{4.0, c.logits}, {2.0, asAutocast / plannedAutocast}};
            for (std::size_t i = 0; i < runs.size(); ++i) {
                grows[i] -= logitsOf[i];
                parts[i].linear -= parts[i].logits;
            }
        }
    }
    // The runs' mode (a forward with autograd on keeps what training does), when they share one: a plan of
    // the other does not apply what they measured.
    if (!runs.empty() && std::all_of(runs.begin(), runs.end(), [&](const CalibrationInput& in) {
            return in.scenario->keptAs() == runs.front().scenario->keptAs();
        }))
        c.measuredOn = runs.front().scenario->keptAs();
    // The activation dtype of the runs `use` picks (0 when they differ): what the scores' factor is keyed by.
    auto runsDtype = [&](auto use) {
        double dtype = -1;
        for (std::size_t i = 0; i < runs.size(); ++i)
            if (use(i)) {
                const double d = runs[i].scenario->activationDtypeBytes();
                dtype = dtype < 0 || dtype == d ? d : 0;
            }
        return std::max(0.0, dtype);
    };
    // The fewest factors that explain every run: one common multiplier for everything that grows with
    // tokens (least squares on relative error), unless it leaves some run's transient bytes more than
    // kCommonTolerance off; only then are tokens and tokens squared told apart (weighted least squares,
    // sum_i ((a L_i + b Q_i - A_i) / A_i)^2), which needs runs of different lengths. Two lengths always fit
    // two factors exactly, noise included: on the CS336 training runs at 128 and 256 tokens, whose single-run
    // factors differ by 3.7% (1.33, 1.38), a split the data did not call for put 2.0 on tokens squared and
    // missed 1,024 tokens by a third; their forward-only runs differ by 17% (1.69, 2.0), a growth the
    // estimator's split of the two does not have, and there the split is needed.
    //
    // Better than either, when a run's tensors tell the scores apart by size (splitBySize): the scores'
    // factor is what those tensors hold over what the estimate plans for them, and the tokens' factor what
    // the rest holds over the rest, each measured, nothing fitted; one run is enough, and a run whose sizes
    // are ambiguous takes the scores the factor predicts for it (within what its sizes allow). The factors
    // then extrapolate each with its own power of the length: calibrated on 128 tokens alone, the 256-token
    // run within 0.2%.
    // Scores not seen at the peak say nothing of their copies: a forward-only run's peak at a short length
    // is elsewhere (its FFN or logits), when the scores of one layer are already freed.
    auto splitsBySize = [&](std::size_t i) {
        return grows[i] > 0 && measured[i].ambiguous == 0 && measured[i].quadratic > 0 &&
               parts[i].quadratic > 0;
    };
    // The scores' factor per activation dtype: runs of another dtype keep other copies (an fp32 run and an
    // autocast one calibrated together measured x2 and about x1; one factor for both was 12% under on each).
    auto dtypeOf = [&](std::size_t i) { return runs[i].scenario->activationDtypeBytes(); };
    // The scores' factor of each dtype measured, (measured, planned) by dtype: `quadratic` the first's, and
    // the list when there are several.
    auto setScoresByDtype = [&c](const std::map<double, std::pair<double, double>>& byDtype) {
        c.quadraticActivationBytes = byDtype.begin()->first;
        c.quadratic = byDtype.begin()->second.first / byDtype.begin()->second.second;
        if (byDtype.size() > 1)
            for (const auto& [dtype, sums] : byDtype)
                c.quadraticByDtype.emplace_back(dtype, sums.first / sums.second);
    };
    // Forward-only runs of plain code whose two kinds of moment were measured (RunMeasurement::
    // momentsMeasured): each factor is read where its tensors are, nothing fitted. The scores' factor is the
    // copies alive inside the attention over the plan's one; `linear` what the rest of the forward held at
    // its most over the plan's working set of a layer; `prefillAttentionLinear` what the attention held
    // beside its scores over the same. The plan then peaks at the larger of the two moments, as the runs do:
    // calibrated on CS336's 128-token forward alone (its peak in the FFN, the scores four fp32 copies inside
    // the attention), the 1,024-token forward (its peak in the softmax) within 1%, where one common factor
    // for both was 24% under. A cs336_basics scenario's profile has its own moments.
    bool byMoments = false;
    {
        const bool plainInference = std::all_of(runs.begin(), runs.end(), [](const CalibrationInput& in) {
            return in.scenario->keptAs() == Mode::Inference &&
                   in.scenario->inference.framework != Framework::Cs336Basics;
        });
        std::map<double, std::pair<double, double>> byDtype; // dtype -> (measured, planned)
        double inAttention = 0, elsewhere = 0, planned = 0;
        for (std::size_t i = 0; i < runs.size() && plainInference; ++i) {
            const RunMeasurement& m = measured[i];
            if (!m.momentsMeasured || parts[i].linear <= 0 || parts[i].quadratic <= 0)
                continue;
            auto& [ms, ps] = byDtype[dtypeOf(i)];
            ms += static_cast<double>(m.attentionScores);
            ps += parts[i].quadratic;
            inAttention +=
                std::max(0.0, static_cast<double>(m.attentionTransient - m.attentionScores) - parts[i].fixed);
            elsewhere += std::max(0.0, static_cast<double>(m.restTransient) - parts[i].fixed);
            planned += parts[i].linear;
        }
        // Autocast forwards of an fp32 model tell its fp32 plan, as autocast steps do (below): the same
        // copies, each at 4 bytes, over the scores the plan without autocast holds.
        double asFp32 = 0, plannedFp32 = 0;
        for (std::size_t i = 0; i < runs.size() && plainInference && !byDtype.count(4); ++i)
            if (measured[i].momentsMeasured && parts[i].quadratic > 0 &&
                autocastOverFp32(*runs[i].scenario)) {
                asFp32 += static_cast<double>(measured[i].attentionScoresAsFp32);
                plannedFp32 += estimatedParts(withoutAutocast(*runs[i].scenario)).quadratic;
            }
        if (asFp32 > 0 && plannedFp32 > 0)
            byDtype[4] = {asFp32, plannedFp32};
        if (planned > 0) {
            byMoments = true;
            c.linear = elsewhere / planned;
            c.prefillAttentionLinear = inAttention / planned;
            setScoresByDtype(byDtype);
        }
    }
    double scoresMeasured = 0, scoresPlanned = 0;
    std::map<double, std::pair<double, double>> scoresByDtype; // dtype -> (measured, planned)
    for (std::size_t i = 0; i < runs.size() && !byMoments; ++i)
        if (splitsBySize(i)) {
            scoresMeasured += static_cast<double>(measured[i].quadratic);
            scoresPlanned += parts[i].quadratic;
            auto& [m, p] = scoresByDtype[dtypeOf(i)];
            m += static_cast<double>(measured[i].quadratic);
            p += parts[i].quadratic;
        }
    bool bySize = false;
    if (scoresPlanned > 0) {
        const double all = scoresMeasured / scoresPlanned;
        auto measuredIn = [&](std::size_t i) { return scoresByDtype.count(dtypeOf(i)) > 0; };
        auto qOf = [&](std::size_t i) {
            const auto it = scoresByDtype.find(dtypeOf(i));
            return it != scoresByDtype.end() && it->second.second > 0 ? it->second.first / it->second.second
                                                                      : 1.0;
        };
        // The tokens' factor from the runs whose dtype had its scores measured; a run of another dtype,
        // whose score-sized tensors no run told apart, then takes for its dtype's scores what the tokens'
        // factor leaves of its bytes, within what its sizes allow (below).
        double rest = 0, planned = 0;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            if (grows[i] <= 0 || parts[i].linear <= 0 || !measuredIn(i))
                continue;
            const double low = static_cast<double>(measured[i].quadratic);
            const double scores = std::clamp(qOf(i) * parts[i].quadratic, low,
                                             low + static_cast<double>(measured[i].ambiguous));
            rest += std::max(0.0, grows[i] - scores);
            planned += parts[i].linear;
        }
        if (planned > 0) {
            c.quadratic = all;
            c.linear = rest / planned;
            c.quadraticActivationBytes = runsDtype(splitsBySize);
            std::map<double, std::pair<double, double>> leftByDtype; // dtype -> (scores left, planned)
            for (std::size_t i = 0; i < runs.size(); ++i)
                if (!measuredIn(i) && grows[i] > 0 && parts[i].quadratic > 0) {
                    const double low = static_cast<double>(measured[i].quadratic);
                    const double left = std::clamp(grows[i] - c.linear * parts[i].linear, low,
                                                   low + static_cast<double>(measured[i].ambiguous));
                    auto& [l, p] = leftByDtype[dtypeOf(i)];
                    l += left;
                    p += parts[i].quadratic;
                }
            for (const auto& [dtype, sums] : leftByDtype)
                scoresByDtype[dtype] = sums;
            // Autocast runs of an fp32 model tell its fp32 plan too, where no fp32 run did: the same score
            // tensors, each at 4 bytes, over what the plan without autocast holds (CS336's 1,024-token
            // autocast step: exp's fp32 output and P's bf16 copy, so two fp32 tensors a layer, x2 as its
            // fp32 runs measure; its scores' factor unscaled in fp32 was 20% under at 1,024 tokens).
            if (!scoresByDtype.count(4)) {
                double asFp32 = 0, plannedFp32 = 0;
                for (std::size_t i = 0; i < runs.size(); ++i)
                    if (splitsBySize(i) && dtypeOf(i) < 4 && autocastOverFp32(*runs[i].scenario)) {
                        asFp32 += static_cast<double>(measured[i].quadraticAsFp32);
                        plannedFp32 +=
                            estimatedParts(withoutAutocast(*runs[i].scenario), measured[i].peakInBackward)
                                .quadratic;
                    }
                if (plannedFp32 > 0 && asFp32 > 0)
                    scoresByDtype[4] = {asFp32, plannedFp32};
            }
            // And fp32 runs tell a 16-bit autocast plan, where no autocast run did, when their traces name
            // the operator that made each score tensor: each at the width autocast gives what that operator
            // writes (RunMeasurement::quadraticAsAutocast), over what the plan under autocast holds.
            // NiuHuangxiaozi's fp32 forward keeps three fp32 copies a layer (its softmax's two exp outputs
            // and its division, which the next einsum saves); under autocast it kept the two exps at 4 bytes
            // and the einsum's 16-bit cast of the division, x1.67 the plan's 16-bit scores and fp32 softmax,
            // where no factor (the fp32 one does not carry) was 14.8% under.
            //
            // Read only where the tensors alive at the loss peak are those autograd saved (a run kept as
            // training), each of which autocast keeps once at the width of the op that saved it; and only
            // when some fp32 score tensor (not a 1-byte mask) was made outside the fp32 list: in fp32 one
            // tensor made by softmax is saved both by softmax's backward and by the next matmul, and under
            // autocast it is two (the fp32 output and the matmul's 16-bit cast), which the fp32 trace cannot
            // show. In a forward without autograd which copies are alive depends on the moment, and autocast
            // moves the largest one: an fp32 division after exp stays fp32 there (CS336's medium forward:
            // 1.8% under read this way), so that forward keeps Calibration::forwardScoresFromFp32. An
            // explicit cast (x.float()) is no operator in an fp32 run, so a copy it makes under autocast is
            // not seen: the same reading of the loss's vocabulary-sized tensors would keep one of the staff
            // code's four in fp32 where its autocast steps keep three (their subtractions in fp32), and is
            // not made.
            std::optional<double> derivedAutocast;
            if (!scoresByDtype.count(2) && runsDtype(splitsBySize) == 4) {
                double asAutocast = 0, plannedAutocast = 0;
                bool told = true;
                for (std::size_t i = 0; i < runs.size() && told; ++i)
                    if (splitsBySize(i) && dtypeOf(i) >= 4 &&
                        autocastOverFp32(withAutocast(*runs[i].scenario))) {
                        told = runs[i].scenario->keptAs() == Mode::Training &&
                               measured[i].quadraticAsAutocast >= 0 &&
                               measured[i].quadraticOutsideFp32List > 0;
                        asAutocast += static_cast<double>(measured[i].quadraticAsAutocast);
                        plannedAutocast +=
                            estimatedParts(withAutocast(*runs[i].scenario), measured[i].peakInBackward)
                                .quadratic;
                    }
                if (told && plannedAutocast > 0 && asAutocast > 0)
                    derivedAutocast = asAutocast / plannedAutocast;
            }
            if (scoresByDtype.size() > 1)
                setScoresByDtype(scoresByDtype);
            // The measured dtype's factor stays the calibration's own (`quadratic`); the derived one is
            // listed beside it.
            if (derivedAutocast) {
                if (c.quadraticByDtype.empty())
                    c.quadraticByDtype.emplace_back(c.quadraticActivationBytes, c.quadratic);
                c.quadraticByDtype.emplace_back(2, *derivedAutocast);
                r.scoresByOperator = true;
            }
            bySize = true;
        }
    }
    double sLL = 0, sLQ = 0, sQQ = 0, sLA = 0, sQA = 0, sRR = 0, sR = 0;
    int usable = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const double A = grows[i];
        const double L = parts[i].linear, Q = parts[i].quadratic;
        if (A <= 0 || L + Q <= 0)
            continue;
        const double w = 1 / (A * A);
        sLL += w * L * L, sLQ += w * L * Q, sQQ += w * Q * Q, sLA += w * L * A, sQA += w * Q * A;
        sRR += (L + Q) * (L + Q) * w, sR += (L + Q) / A;
        ++usable;
    }
    if (usable > 0 && !bySize && !byMoments) {
        const double common = sR / sRR;
        bool commonHolds = true;
        for (std::size_t i = 0; i < runs.size(); ++i) {
            const double A = grows[i];
            if (A <= 0 || parts[i].linear + parts[i].quadratic <= 0)
                continue;
            const double off = std::abs(common * (parts[i].linear + parts[i].quadratic) - A);
            commonHolds = commonHolds && off <= kCommonTolerance * A;
        }
        const double det = sLL * sQQ - sLQ * sLQ;
        const double a = det != 0 ? (sLA * sQQ - sQA * sLQ) / det : -1;
        const double b = det != 0 ? (sQA * sLL - sLA * sLQ) / det : -1;
        const bool separable = usable >= 2 && std::abs(det) > 1e-12 * sLL * sQQ && a >= 0 && b >= 0;
        c.linear = !commonHolds && separable ? a : common;
        c.quadratic = !commonHolds && separable ? b : common;
        std::set<double> lengths;
        bool scores = false;
        for (std::size_t i = 0; i < runs.size(); ++i)
            if (grows[i] > 0 && parts[i].linear + parts[i].quadratic > 0) {
                const RunShape shape(*runs[i].scenario);
                lengths.insert(shape.queries * shape.keys);
                scores = scores || parts[i].quadratic > 0;
            }
        r.scoresUntold = scores && lengths.size() == 1;
        // Whatever the scores were seen to hold was measured in the runs' activation dtype.
        c.quadraticActivationBytes = runsDtype([&](std::size_t i) { return parts[i].quadratic > 0; });
    }
    double step = 0, kvRatio = 0, stepTensors = 0, heldLogits = 0;
    int steps = 0, kvRuns = 0, loops = 0, logitRuns = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        c.workspaceBytes = std::max(c.workspaceBytes, static_cast<double>(measured[i].workspacesHeld));
        if (measured[i].hasStep && runs[i].scenario->parameters() > 0) {
            // What the step was seen to hold, per parameter on this rank: it replaces the modelled
            // temporaries, so a scenario that names another AdamW implementation than the run used is
            // still reproduced (fitting only an excess over the model could not take a foreach
            // estimate's copies back down: +21% after calibration).
            Scenario plain = runs[i].scenario->settingsCopy();
            plain.calibration = Calibration{};
            const Estimate e = estimate(plain);
            const double parameters =
                plain.training.bytes.weights > 0
                    ? e.ranks.at(static_cast<std::size_t>(e.mostLoadedStage)).peak[Category::Weights] /
                          plain.training.bytes.weights
                    : 0;
            // The logits kept through the step (tensors of batch x tokens x vocabulary at its peak) are
            // not scratch: they grow with the tokens. Measured, they replace what the plan holds there.
            double held = 0;
            for (const TensorRow& row : measured[i].atStep.rows)
                held += row.shape == "b·s·V" ? static_cast<double>(row.bytes()) : 0;
            const double logits = static_cast<double>(plain.training.microBatchSize) *
                                  plain.activationDtypeBytes() * plain.training.sequenceLength *
                                  plain.model.vocab / plain.cluster.tensorParallel;
            if (logits > 0) {
                heldLogits += held / logits;
                ++logitRuns;
            }
            if (parameters > 0) {
                const double scratch = std::max(0.0, static_cast<double>(measured[i].stepScratch) - held);
                step += scratch / parameters;
                ++steps;
                // Less than half a state's worth: the step went one parameter at a time (torch's for_loop
                // AdamW, a hand-written one; foreach holds a whole state's list of temporaries), and what
                // it held is so many tensors of the largest parameter, whatever the parameter count.
                const double stateBytes = plain.training.bytes.optimizerStates / 2;
                const double largest = stateBytes * largestSteppedTensor(plain);
                if (largest > 0 && scratch < stateBytes * parameters / 2) {
                    stepTensors += scratch / largest;
                    ++loops;
                }
            }
        }
        if (parts[i].kvCache > 0) {
            kvRatio += static_cast<double>(measured[i].kvCache) / parts[i].kvCache;
            ++kvRuns;
        } else if (runs[i].scenario->mode == Mode::Inference && !runs[i].scenario->inference.kvCache &&
                   measured[i].kvCache == 0) {
            // A forward its scenario says keeps no cache (inference.kv_cache false), and that kept none:
            // this code keeps none, which the calibration carries to the scenarios it is applied to.
            ++kvRuns;
        }
    }
    c.optimizerStepBytesPerParameter = 0;
    c.stepScratchBytesPerParameter = steps ? step / steps : -1;
    // Which implementation the runs' scenarios said stepped them (the measured scratch is that code's,
    // whatever it was called): a plan that declares another plans that one's.
    if (steps) {
        std::optional<OptimizerImpl> declared;
        bool same = true;
        for (const CalibrationInput& in : runs)
            if (in.scenario->mode == Mode::Training) {
                if (!in.scenario->training.optimizerImplGiven ||
                    (declared && *declared != in.scenario->training.optimizerImpl))
                    same = false;
                declared = in.scenario->training.optimizerImpl;
            }
        if (same)
            c.stepMeasuredWith = declared;
    }
    c.stepScratchLargestTensors = steps && loops == steps ? stepTensors / steps : -1;
    c.heldLogitCopies = logitRuns ? heldLogits / logitRuns : -1;
    // Gradients alive at the loss peak where the plan frees them between steps (MAGMA27's CS336 run records
    // its second step, after a warm-up that left every .grad): zero_grad(set_to_none=True) frees them all,
    // so a run holds either none or every one, and half of what the plan gives the step tells the two
    // apart whatever their dtype. Only when every run that could show it does; a scenario that says where
    // its loop frees them (training.zero_grad) shows nothing more.
    int couldShow = 0, held = 0;
    for (std::size_t i = 0; i < runs.size(); ++i)
        if (runs[i].scenario->mode == Mode::Training && parts[i].gradients > 0 &&
            runs[i].scenario->training.zeroGrad == ZeroGrad::BeforeForward &&
            parts[i].gradientsAtLoss < parts[i].gradients / 2) {
            ++couldShow;
            held += static_cast<double>(measured[i].gradients) >= parts[i].gradients / 2 ? 1 : 0;
        }
    c.gradientsHeld = couldShow > 0 && held == couldShow;
    // Eager attention's backward: what the runs' last layer held beyond its saved scores as its backward
    // began, over what the plan holds there (the softmax backward's two copies). A ratio, as the scores'
    // factor is, so that it grows with the square of the length as those temporaries do.
    double backwardGrowth = 0, backwardPlanned = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const Scenario& sc = *runs[i].scenario;
        if (!measured[i].backwardMeasured || sc.mode != Mode::Training)
            continue;
        const double planned = plannedBackwardScoreScratch(sc);
        if (planned <= 0)
            continue;
        backwardGrowth += static_cast<double>(measured[i].backwardScores);
        backwardPlanned += planned;
    }
    c.backwardScratchScores = backwardPlanned > 0 ? backwardGrowth / backwardPlanned : -1;
    // Not measured (every run's score sizes are other tensors' too, or no run recorded a backward: a forward
    // with autograd on), but the scores' copies told by size: the backward's temporaries are taken as many
    // times the plan's as the forward's saved copies are, counted at fp32 as the softmax's backward runs.
    // A hand-written softmax keeps one score-sized tensor per op of its chain (x - max, exp, the division)
    // and its backward writes a gradient through each of the same ops. A rule chosen on the fit runs that
    // measure both: CS336's 128-token fp32 step, 2.0 where its forward keeps 2.0, and its 1,024-token
    // autocast step, 2.25 where its forward keeps 2.0 at fp32 widths. Calibrated on the 256-token run alone
    // (whose 16 MiB scores are FFN-sized), the plan at 4,096 tokens beside the cs336_basics profile went from
    // 2.4% under (fp32) and 5.0% under (autocast) with the plan's own two copies to within 1%.
    if (c.backwardScratchScores < 0 && bySize && c.measuredOn == Mode::Training)
        if (const auto q = c.quadraticFor(4); q && *q > 0) {
            c.backwardScratchScores = *q;
            r.backwardFromForward = true;
        }
    c.kvCache = kvRuns ? kvRatio / kvRuns : 1;
    // The allocator's overhead the runs showed, as a share of what they allocated (the mean of theirs, as
    // the tokens' factor is a least-squares fit on relative error): measured, it replaces the 3% the plan
    // assumes. The runs' allocated peaks are the recorded ones, so a plan off in allocated is not made up
    // for in reserved.
    double overhead = 0;
    int overheadRuns = 0;
    for (const RunMeasurement& m : measured)
        if (m.reservedPeak > 0 && m.allocatedPeak > 0) {
            overhead +=
                std::max(0.0, static_cast<double>(m.reservedPeak) / static_cast<double>(m.allocatedPeak) - 1);
            ++overheadRuns;
        }
    // At most ten times the tensors, what a scenario may say (a recording that began beside a large cache an
    // earlier run left, with little allocated, could measure more).
    c.allocatorOverhead = overheadRuns ? std::min(Calibration::kMostOverhead, overhead / overheadRuns) : -1;
    const std::vector<Comparison>& before = plannedBefore.comparisons;
    const std::vector<Estimate>& plansBefore = plannedBefore.plans;
    // Every run's stacks naming cs336_basics, whose code the plan can replay, and a scenario planning it
    // with another profile: the calibrated plan replays that code for the allocator's cache
    // (Calibration::code), and the share below is measured against that replay.
    if (cs336Code && std::any_of(asPlanned.begin(), asPlanned.end(), [](const CalibrationInput& in) {
            return plannedFramework(*in.scenario) != Framework::Cs336Basics;
        }))
        c.code = Framework::Cs336Basics;
    c.codeTables = c.code && codeTables;
    // And whether they stepped its own AdamW, as the step's frames say in every run that has one.
    if (c.code) {
        int stepped = 0, own = 0;
        for (const CalibrationInput& in : runs)
            if (in.trace && in.index && in.scenario->mode == Mode::Training)
                if (const auto ownStep = stepsOwnOptimizer(*in.trace, *in.index, *c.code, rules)) {
                    ++stepped;
                    own += *ownStep ? 1 : 0;
                }
        c.codeOptimizer = stepped > 0 && own == stepped;
    }
    // Where the plan replays the code through the allocator (cs336_basics), what the runs kept beyond their
    // tensors less what the replay of their own scenarios keeps beyond its, as a share of their allocated
    // peaks, averaged: the replay carries the rest to other shapes (a cache share does not: a long
    // forward's score tensors each take a segment of their own). Calibration::replayedOverhead.
    double beyondReplay = 0;
    int replayedRuns = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const RunMeasurement& m = measured[i];
        // The code the calibrated plan replays, as its estimate replays it (the AdamW the run stepped).
        Scenario plain = runs[i].scenario->settingsCopy();
        if (const auto asRecorded = cs336CodeAsRecorded(plain, c))
            plain = *asRecorded;
        plain.calibration = Calibration{};
        const Estimate e = estimate(plain);
        const auto stage = static_cast<std::size_t>(e.mostLoadedStage);
        if (m.reservedPeak <= 0 || m.allocatedPeak <= 0 || stage >= e.ranks.size() ||
            e.ranks[stage].replayedReservedBytes <= 0)
            continue;
        const double measuredBeyond = std::max(0.0, static_cast<double>(m.reservedPeak - m.allocatedPeak));
        const double replayedBeyond =
            std::max(0.0, e.ranks[stage].replayedReservedBytes - e.ranks[stage].replayedAllocatedBytes);
        beyondReplay += (measuredBeyond - replayedBeyond) / static_cast<double>(m.allocatedPeak);
        ++replayedRuns;
    }
    // (Within what the scenario reads.)
    if (replayedRuns > 0)
        c.replayedOverhead = std::clamp(beyondReplay / replayedRuns, -1.0, Calibration::kMostOverhead);
    // Before and after, as `compare` reports them.
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const CalibrationInput& in = asPlanned[i];
        Scenario after = *in.scenario;
        after.calibration = c;
        const Estimate& planBefore = plansBefore[i];
        const Estimate planAfter = estimate(after);
        const Comparison& b = before[i];
        // After: the same measured peak, so only the estimate is counted again (as compare counts it).
        std::int64_t afterTotal = 0;
        for (const std::int64_t v : estimateInMeasuredCategories(planAfter))
            afterTotal = saturatingAdd(afterTotal, v);
        r.runs.push_back(
            {in.name, b.firstStep ? b.laterStepPeak : b.measured.total, b.estimatedTotal, afterTotal,
             b.firstStep, measured[i].hasStep, measured[i].noBackward, measured[i].atLoss, measured[i].atStep,
             measured[i].reservedPeak, clampToInt64(planBefore.reservedPeakBytes),
             clampToInt64(planAfter.reservedPeakBytes), calibrationAdvice(b, *in.scenario, *in.trace),
             runMismatch(*in.scenario, b, b.firstStep ? b.laterStepPeak : b.measured.total, afterTotal,
                         measured[i].stepInForward, c),
             measured[i].scoreOperators});
    }
    refuseBeyondAScenario(r, asPlanned);
    return r;
}

} // namespace

std::string runMismatch(const Scenario& scenario, const Comparison& before, std::int64_t measured,
                        std::int64_t after, bool stepInForward, const Calibration& factors) {
    std::vector<std::string> why;
    const auto weights = static_cast<std::size_t>(MeasuredCategory::Weights);
    const double planned = static_cast<double>(before.estimated[weights]);
    const double found = static_cast<double>(before.measured.bytes[weights]);
    const Framework framework = plannedFramework(scenario);
    const bool wholeTensors = scenario.cluster.numGpus == 1 &&
                              scenario.cluster.dataParallel == DataParallel::Ddp &&
                              framework != Framework::Megatron && framework != Framework::DeepSpeed;
    if (wholeTensors && planned > 0 && std::abs(found - planned) > 0.1 * planned)
        why.push_back("its peak holds " + gibText(found) +
                      " of this model's weights where the scenario plans " + gibText(planned));
    // The same of the optimizer's states, which a later step's peak holds whole (attribution finds them by
    // the parameters' sizes in the scenario's state dtype): AdamW's fp32 states planned as 8-bit Adam's are
    // 0.56 GiB found of 0.79 planned, the rest taken for temporaries, and the calibrated plan 3% over its own
    // run with activations standing in for them. Not in a first step, whose states its step makes.
    const auto states = static_cast<std::size_t>(MeasuredCategory::OptimizerStates);
    const double plannedStates = static_cast<double>(before.estimated[states]);
    const double foundStates = static_cast<double>(before.measured.bytes[states]);
    if (wholeTensors && !before.firstStep && !scenario.training.firstStep && plannedStates > 0 &&
        std::abs(foundStates - plannedStates) > 0.1 * plannedStates)
        why.push_back("its peak holds " + gibText(foundStates) + " of this optimizer's states where the " +
                      "scenario plans " + gibText(plannedStates) +
                      " (another optimizer, or states of another dtype)");
    if (stepInForward)
        why.push_back("the run stepped an optimizer where the scenario plans a forward");
    // A forward with autograd on whose peak holds activations made before the recording began and dropped
    // during it (attribution's ShapeSize evidence): the previous forward's graph, which a loop's output
    // keeps until the next forward returns. Planned with one graph, the factors double to hold it (and
    // still extrapolate, both graphs growing alike), but the plan's categories and what-ifs say one.
    if (scenario.mode == Mode::Inference && scenario.inference.gradEnabled &&
        !scenario.inference.previousOutputHeld) {
        double previous = 0;
        for (const AttributedAllocation& a : before.measured.allocations)
            if (a.evidence == AttributedAllocation::Evidence::ShapeSize)
                previous += static_cast<double>(a.allocation.size);
        if (previous > 0.1 * static_cast<double>(measured))
            why.push_back("its peak holds " + gibText(previous) +
                          " of activations made before the recording began and dropped while it ran: the "
                          "previous forward's graph, kept by the output the loop had not rebound yet "
                          "(inference.previous_output_held: true plans it)");
    }
    const double off = measured > 0 ? static_cast<double>(after) / static_cast<double>(measured) - 1 : 0;
    if (std::abs(off) > 0.05) {
        std::ostringstream s;
        s << "calibrated, the plan is " << std::showpos << std::fixed << std::setprecision(1) << 100 * off
          << "% off the run it was fitted on";
        why.push_back(s.str());
    }
    for (const auto& [factor, what] :
         {std::pair{factors.linear, "the tokens"}, std::pair{factors.quadratic, "the tokens squared"}})
        if (factor > 4 || (factor > 0 && factor < 0.25)) {
            std::ostringstream s;
            s << "what grows with " << what << " is fitted at x" << std::fixed
              << std::setprecision(factor < 1 ? 3 : 1) << factor
              << (factor > 4 ? " the plan's, more than any code keeps beyond its profile's plan"
                             : " the plan's, less than any code keeps of its profile's plan");
            why.push_back(s.str());
        }
    if (why.empty())
        return {};
    std::string out = "the scenario may not describe this run: ";
    for (std::size_t i = 0; i < why.size(); ++i)
        out += (i ? "; " : "") + why[i];
    return out + "; check its model, batch, length and precision, since the factors scale the plan to "
                 "whatever the run held and carry that to every what-if";
}

} // namespace headroom
