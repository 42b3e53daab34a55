// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/attribution.h"
#include "core/compare/runshape.h"
#include "core/plan/finetuning.h"

#include "core/checkednumbers.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <queue>
#include <unordered_map>

namespace headroom {

namespace {

constexpr const char* kKeys[kMeasuredCategories] = {"weights",     "gradients",   "optimizer_states",
                                                    "activations", "temporaries", "kv_cache",
                                                    "workspaces",  "unattributed"};
constexpr const char* kLabels[kMeasuredCategories] = {"Weights",     "Gradients",   "Optimizer states",
                                                      "Activations", "Temporaries", "KV cache",
                                                      "Workspaces",  "Unattributed"};

// cuBLAS workspaces go through the caching allocator. Their default size is set in PyTorch's
// aten/src/ATen/cuda/CublasHandlePool.cpp (getChosenWorkspaceSize, CUBLAS_WORKSPACE_CONFIG): ":4096:2:16:8"
// before Hopper, 4096 KiB x 2 + 16 KiB x 8 = 8,519,680 bytes; ":4096:8" on Hopper, 32 MiB.
constexpr std::int64_t kCublasWorkspaces[] = {8519680, 33554432};

// A cuBLAS workspace by its size: the pool keeps each handle's workspace for the process's life
// (CublasHandlePool.cpp, cublas_handle_stream_to_workspace), so one the recording saw freed is another tensor
// of that size: CS336's 4 x 1,024-token step has 115 b·s·f activations of 32 MiB in bf16, the Hopper
// workspace's size, which without frames were taken for workspaces.
bool workspaceBySize(const Allocation& a, std::size_t entries) {
    return a.end >= entries && std::find(std::begin(kCublasWorkspaces), std::end(kCublasWorkspaces),
                                         a.size) != std::end(kCublasWorkspaces);
}

// How many tensors of each byte size the model's state has, per category, for size matching.
struct StatePools {
    std::map<std::int64_t, int> weights, states, gradients;

    static void add(std::map<std::int64_t, int>& pool, const std::vector<std::uint64_t>& tensors,
                    double bytesPerElement, int copies) {
        if (bytesPerElement <= 0 || copies <= 0)
            return;
        for (std::uint64_t n : tensors)
            pool[clampToInt64(std::ceil(static_cast<double>(n) * bytesPerElement))] += copies;
    }
    static bool take(std::map<std::int64_t, int>& pool, std::int64_t size) {
        auto it = pool.find(size);
        if (it == pool.end() || it->second == 0)
            return false;
        --it->second;
        return true;
    }
};

StatePools poolsFor(const Scenario* sc) {
    StatePools p;
    if (!sc || !sc->model.known)
        return p;
    const std::vector<std::uint64_t> tensors = sc->model.parameterTensors();
    if (sc->mode == Mode::Inference) {
        StatePools::add(p.weights, tensors, sc->inference.weightBytes, 1);
        return p;
    }
    const BytesPerParam& b = sc->training.bytes;
    const int states = sc->training.optimizer == Optimizer::SgdMomentum ? 1 : 2; // Adam: exp_avg, exp_avg_sq
    if (sc->training.fineTuning.adapters()) {
        // Fine-tuning: the frozen base as stored is weights; only the adapters (and modules_to_save) have
        // gradients and states, in their own dtype (8-bit Adam: a byte each).
        for (std::uint64_t bytes : frozenTensorBytes(*sc))
            p.weights[clampToInt64(static_cast<double>(bytes))] += 1;
        for (const TensorBytes& t : trainedTensors(*sc)) {
            const std::vector<std::uint64_t> one = {t.elements};
            StatePools::add(p.weights, one, t.bytesPerElement, 1);
            StatePools::add(p.gradients, one, t.bytesPerElement, 1);
            StatePools::add(p.states, one,
                            sc->training.optimizer == Optimizer::Adam8bit ? 1 : t.bytesPerElement, states);
        }
        return p;
    }
    StatePools::add(p.weights, tensors, b.weights, 1);
    StatePools::add(p.gradients, tensors, b.gradients, 1);
    StatePools::add(p.states, tensors, b.masterWeights, 1);
    StatePools::add(p.states, tensors, b.optimizerStates / states, states);
    return p;
}

bool contains(const std::string& text, const std::string& needle) {
    return !needle.empty() && text.find(needle) != std::string::npos;
}

// The innermost frame that a rule matches decides; nullptr when none does.
const AttributionRule* decidingRule(const Trace& trace, std::uint32_t stack, const AttributionRules& rules) {
    if (stack == 0 || stack >= trace.stacks.size())
        return nullptr;
    for (const Frame& f : trace.stacks[stack]) {
        const std::string& name = trace.strings[f.name];
        const std::string& file = trace.strings[f.filename];
        for (const AttributionRule& r : rules.rules)
            if (contains(name, r.match) || contains(file, r.match))
                return &r;
    }
    return nullptr;
}

// Annotated regions that name a phase of the step: torch.profiler's record_function names such as
// "Optimizer.step#AdamW.step" (what PyTorch's optimizers record, torch/optim/optimizer.py) and a user's own
// "backward" / "forward" regions in external_annotations. What is allocated inside one belongs to it.
struct PhaseSpan {
    std::int64_t start, end;
    const AttributionRule* rule;
};
const AttributionRule kOptimizerPhase{"", AttributionRule::Target::Optimizer,
                                      MeasuredCategory::OptimizerStates};
const AttributionRule kBackwardPhase{"", AttributionRule::Target::Backward, MeasuredCategory::Gradients};
const AttributionRule kForwardPhase{"", AttributionRule::Target::Category, MeasuredCategory::Activations};

std::vector<PhaseSpan> annotatedPhases(const Trace& trace, const std::string& device) {
    std::vector<PhaseSpan> out;
    for (const Annotation& a : trace.annotations) {
        if (!a.device.empty() && a.device != device)
            continue;
        std::string name = a.name;
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        const AttributionRule* rule = contains(name, "optimizer.step") ? &kOptimizerPhase
                                      : contains(name, "backward")     ? &kBackwardPhase
                                      : contains(name, "forward")      ? &kForwardPhase
                                                                       : nullptr;
        if (rule)
            out.push_back({a.start, a.end, rule});
    }
    return out;
}

// When the optimizer step's annotated regions begin (torch.optim annotates every step as
// "Optimizer.step#<name>.step"), sorted.
std::vector<std::int64_t> stepStarts(const std::vector<PhaseSpan>& phases) {
    std::vector<std::int64_t> out;
    for (const PhaseSpan& p : phases)
        if (p.rule == &kOptimizerPhase)
            out.push_back(p.start);
    std::sort(out.begin(), out.end());
    return out;
}

// Made and freed within the recording before the next optimizer step began: not model state whatever its
// size, since a step reads every gradient and a weight or an optimizer state outlives it. Without frames
// only sizes tell, and a run's activations often share a parameter's (b·s·h is h·h when the micro-batch's
// tokens equal the hidden size: CS336's medium model at 4 x 256). False where the recording does not show it
// (no step after it, or alive at either end).
bool goneBeforeTheNextStep(const Allocation& a, const DeviceTrace& d,
                           const std::vector<std::int64_t>& starts) {
    if (a.alloc == kBeforeFirstEvent || a.start == kBeforeFirstEvent || a.end >= d.entries())
        return false;
    const auto next = std::lower_bound(starts.begin(), starts.end(), d.time[a.alloc]);
    return next != starts.end() && d.time[a.end] < *next;
}

// The innermost (latest-starting) phase region holding a time. A run of a thousand steps has a thousand
// Optimizer.step regions and millions of allocations: the regions are sorted by start with the running
// maximum of their ends, so a lookup walks back from the last region starting at or before t only while
// an earlier one could still reach t (one or two regions when they do not nest).
class PhaseLookup {
public:
    explicit PhaseLookup(std::vector<PhaseSpan> phases) : m_phases(std::move(phases)) {
        std::stable_sort(m_phases.begin(), m_phases.end(),
                         [](const PhaseSpan& a, const PhaseSpan& b) { return a.start < b.start; });
        std::int64_t reach = INT64_MIN;
        for (const PhaseSpan& p : m_phases)
            m_reach.push_back(reach = std::max(reach, p.end));
    }
    const AttributionRule* at(std::int64_t t) const {
        auto it = std::upper_bound(m_phases.begin(), m_phases.end(), t,
                                   [](std::int64_t v, const PhaseSpan& p) { return v < p.start; });
        for (std::size_t i = static_cast<std::size_t>(it - m_phases.begin()); i-- > 0;) {
            if (m_reach[i] < t)
                break;
            if (m_phases[i].end >= t) // the latest start holding t; the last of equal starts, as before
                return m_phases[i].rule;
        }
        return nullptr;
    }

private:
    std::vector<PhaseSpan> m_phases;
    std::vector<std::int64_t> m_reach; // [i]: the latest end among regions 0..i
};

} // namespace

const char* measuredCategoryKey(MeasuredCategory c) {
    return kKeys[static_cast<std::size_t>(c)];
}

const char* measuredCategoryLabel(MeasuredCategory c) {
    return kLabels[static_cast<std::size_t>(c)];
}

bool measuredCategoryFromKey(const std::string& key, MeasuredCategory* out) {
    for (std::size_t i = 0; i < kMeasuredCategories; ++i)
        if (key == kKeys[i]) {
            *out = static_cast<MeasuredCategory>(i);
            return true;
        }
    return false;
}

AttributionRules AttributionRules::pytorchDefaults() {
    using T = AttributionRule::Target;
    using C = MeasuredCategory;
    AttributionRules r;
    r.rules = {
        // torch/csrc/autograd/functions/accumulate_grad.h: where .grad is created (or cloned into).
        {"AccumulateGrad", T::Category, C::Gradients},
        // The backward pass: generated backward functions (torch/csrc/autograd/generated/Functions.cpp), the
        // engine (torch/csrc/autograd/engine.cpp), and its Python entry points. A parameter-sized result is
        // a gradient that AccumulateGrad adopts without a copy; the rest are gradients of activations.
        {"torch::autograd::generated::", T::Backward, C::Gradients},
        {"torch::autograd::Engine::", T::Backward, C::Gradients},
        {"_engine_run_backward", T::Backward, C::Gradients},
        {"torch/autograd/", T::Backward, C::Gradients},
        // What `zero_grad` frees is a gradient (Optimizer.zero_grad and Module.zero_grad set each .grad to
        // None by default since torch 2.0: torch/optim/optimizer.py, torch/nn/modules/module.py). Nothing
        // is allocated there, so this decides only lifetimes that began before the recording, which carry
        // the stack of their free: a loop that calls zero_grad after its forward frees the previous step's
        // gradients there, which the optimizer's rule below (the same frame) read as step scratch.
        {"zero_grad", T::Backward, C::Gradients},
        // Optimizers: torch.optim and hand-written ones (an optimizer.py of the user's). States are the
        // parameter-sized tensors kept between steps; the rest is the step's scratch.
        {"torch/optim/", T::Optimizer, C::OptimizerStates},
        {"torch\\optim\\", T::Optimizer, C::OptimizerStates},
        {"optimizer.py", T::Optimizer, C::OptimizerStates},
        // cuBLAS workspaces (aten/src/ATen/cuda/CublasHandlePool.cpp).
        {"CUDABlas", T::Category, C::Workspaces},
        // KV caches: Hugging Face cache classes and the usual names.
        {"DynamicCache", T::Category, C::KvCache},
        {"StaticCache", T::Category, C::KvCache},
        {"past_key_value", T::Category, C::KvCache},
        {"kv_cache", T::Category, C::KvCache},
        // The loss over the logits, and every forward: activations (kept for backward or transient).
        {"cross_entropy", T::Category, C::Activations},
        {"log_softmax", T::Category, C::Activations},
        {"nll_loss", T::Category, C::Activations},
        {"forward", T::Category, C::Activations},
        // Building, moving or loading a model (Module.to/_apply, parameter init, load_state_dict) makes its
        // weights and buffers. A forward inside a module matches "forward" on an inner frame first.
        {"nn/modules/module.py", T::Category, C::Weights},
        {"nn\\modules\\module.py", T::Category, C::Weights},
        {"torch/nn/init.py", T::Category, C::Weights},
        {"load_state_dict", T::Category, C::Weights},
    };
    return r;
}

namespace {

// Without a scenario no size is known to be state: a backward's or an optimizer step's allocation is
// kept between steps when the recording sees it outlive the step that made it, alive at the recording's
// end or already alive at its start (made by an earlier step: a hand-written AdamW, CS336's, writes new
// state tensors every step, and the previous step's live through this one's forward and backward), or,
// where the optimizer's steps are annotated (`starts`), alive when the next one begins: the step reads
// every gradient, and a state written anew every step lives until the next step replaces it (a recording
// of three steps of NiuHuangxiaozi's own Adam holds the second step's states at the third's peak).
bool keptBetweenSteps(const Allocation& a, std::size_t entries, const DeviceTrace& d,
                      const std::vector<std::int64_t>& starts) {
    if (a.end >= entries || a.start == kBeforeFirstEvent)
        return true;
    if (a.alloc == kBeforeFirstEvent || a.alloc >= d.entries() || a.end >= d.entries())
        return false;
    const auto next = std::lower_bound(starts.begin(), starts.end(), d.time[a.alloc]);
    return next != starts.end() && d.time[a.end] >= *next;
}

// A lifetime that began before the recording and ended inside it carries only its free's stack; freed by
// code no rule names (a loop rebinding `out = model(x)`, which drops the previous forward's graph) and of
// one of the model's activation sizes at the scenario's shape (activationShapes, the tensor table's), it
// is read as an activation: what was allocated before the recording and dropped during it is the previous
// pass's.
bool droppedPreviousPass(const Allocation& a, std::size_t entries, const ShapesBySize& sizes) {
    return a.start == kBeforeFirstEvent && a.end < entries && sizes.count(a.size) > 0;
}

} // namespace

Attribution attribute(const Trace& trace, const TraceIndex& index, std::size_t event,
                      const AttributionRules& rules, const Scenario* scenario) {
    Attribution out = attribute(trace, index.device(), index.liveAfter(event), event, rules, scenario);
    // A file that records totals, not allocations (profiler traces, memory timelines): what it allocated
    // then is measured all the same, and nothing places it: unattributed, never a measured 0 (compare
    // planned a memory timeline's 2.87 GiB as "0.0% above the measured peak" of 0). nvidia-smi records no
    // allocated bytes (DeviceTrace::hasAllocatedTotals): its zeros stay.
    const DeviceTrace& d = index.device();
    if (d.hasTotals && d.hasAllocatedTotals && out.allocations.empty() && event != kBeforeFirstEvent &&
        event < d.allocatedTotal.size()) {
        out.total = std::max<std::int64_t>(0, d.allocatedTotal[event]);
        out.bytes[static_cast<std::size_t>(MeasuredCategory::Unattributed)] = out.total;
    }
    return out;
}

Attribution attribute(const Trace& trace, const DeviceTrace& device, std::vector<Allocation> live,
                      std::size_t event, const AttributionRules& rules, const Scenario* scenario) {
    Attribution out;
    out.event = event;
    // Oldest first, so that when a step holds an old and a new copy of a state, the old one is the state.
    std::stable_sort(live.begin(), live.end(), [](const Allocation& a, const Allocation& b) {
        return (a.start == kBeforeFirstEvent ? 0 : a.start + 1) <
               (b.start == kBeforeFirstEvent ? 0 : b.start + 1);
    });
    StatePools pools = poolsFor(scenario);
    const ShapesBySize activations = scenario ? activationShapes(*scenario) : ShapesBySize{};
    std::vector<AttributedAllocation> placed(live.size());
    std::vector<char> done(live.size(), 0);
    using E = AttributedAllocation::Evidence;
    auto place = [&](std::size_t i, MeasuredCategory c, E evidence) {
        placed[i] = {live[i], c, evidence};
        done[i] = 1;
    };
    // 1. Metadata, annotated phases and rules that name a category. Stacks are shared by many allocations (a
    // run has a few hundred distinct ones), so each is matched against the rules once.
    std::vector<PhaseSpan> spans = annotatedPhases(trace, device.key);
    const std::vector<std::int64_t> steps = stepStarts(spans);
    const PhaseLookup phases(std::move(spans));
    std::vector<const AttributionRule*> deciding(live.size(), nullptr);
    std::unordered_map<std::uint32_t, const AttributionRule*> ruleOfStack;
    for (std::size_t i = 0; i < live.size(); ++i) {
        const Allocation& a = live[i];
        if (a.alloc != kBeforeFirstEvent) {
            if (const std::uint32_t note = noteAt(device.userMetadata, a.alloc)) {
                MeasuredCategory c;
                if (measuredCategoryFromKey(trace.strings[note], &c)) {
                    place(i, c, E::Metadata);
                    continue;
                }
            }
            if (const AttributionRule* phase = phases.at(device.time[a.alloc])) {
                deciding[i] = phase;
                if (phase->target != AttributionRule::Target::Category)
                    continue;
                place(i, phase->category, E::Rule);
                continue;
            }
        }
        auto [cached, fresh] = ruleOfStack.try_emplace(a.stack, nullptr);
        if (fresh)
            cached->second = decidingRule(trace, a.stack, rules);
        deciding[i] = cached->second;
        if (deciding[i] && deciding[i]->target == AttributionRule::Target::Category) {
            const MeasuredCategory c = deciding[i]->category;
            // Model state named outright still uses up one tensor of its size.
            if (c == MeasuredCategory::Gradients)
                StatePools::take(pools.gradients, a.size);
            else if (c == MeasuredCategory::OptimizerStates)
                StatePools::take(pools.states, a.size);
            else if (c == MeasuredCategory::Weights)
                StatePools::take(pools.weights, a.size);
            place(i, c, E::Rule);
        }
    }
    // 2. Backward and optimizer allocations: state when the model has a tensor of that size left.
    std::vector<std::size_t> surplus; // optimizer allocations of a parameter's size beyond the states
    for (std::size_t i = 0; i < live.size(); ++i) {
        if (done[i] || !deciding[i])
            continue;
        const bool backward = deciding[i]->target == AttributionRule::Target::Backward;
        const bool sized = scenario && scenario->model.known;
        const bool state = sized ? StatePools::take(backward ? pools.gradients : pools.states, live[i].size)
                                 : keptBetweenSteps(live[i], device.entries(), device, steps);
        place(i,
              state ? (backward ? MeasuredCategory::Gradients : MeasuredCategory::OptimizerStates)
                    : MeasuredCategory::Temporaries,
              state ? E::StateSize : E::Rule);
        // Of a trained parameter's size (one the states have: a frozen base's matrix has none).
        if (sized && !state && !backward && pools.states.count(live[i].size) &&
            pools.weights.count(live[i].size))
            surplus.push_back(i);
    }
    // 3. No deciding frame: model state by size, cuBLAS workspaces by size, else unattributed.
    for (std::size_t i = 0; i < live.size(); ++i) {
        if (done[i])
            continue;
        const std::int64_t size = live[i].size;
        const bool mayBeState = !goneBeforeTheNextStep(live[i], device, steps);
        if (mayBeState && StatePools::take(pools.weights, size))
            place(i, MeasuredCategory::Weights, E::StateSize);
        else if (mayBeState && StatePools::take(pools.states, size))
            place(i, MeasuredCategory::OptimizerStates, E::StateSize);
        else if (mayBeState && StatePools::take(pools.gradients, size))
            place(i, MeasuredCategory::Gradients, E::StateSize);
        else if (workspaceBySize(live[i], device.entries()))
            place(i, MeasuredCategory::Workspaces, E::WorkspaceSize);
        else if (droppedPreviousPass(live[i], device.entries(), activations))
            place(i, MeasuredCategory::Activations, E::ShapeSize);
        else
            place(i, MeasuredCategory::Unattributed, E::None);
    }
    // 4. A step that writes its parameters anew (`p.data = p.data - lr * ...`: NiuHuangxiaozi's Adam, which
    // replaces every parameter, m and v with a new tensor each step) leaves no weight of the model's own:
    // the optimizer's allocations of a trained parameter's size beyond its states, which outlive the step
    // that made them, are the parameters, as many as the model has that nothing above took. (A step that
    // keeps two states' worth alive for a moment, the old and the new, still has its weights from the model:
    // they were taken above, so none of its surplus is read so.)
    for (const std::size_t i : surplus)
        if (!goneBeforeTheNextStep(live[i], device, steps) && StatePools::take(pools.weights, live[i].size))
            placed[i] = {live[i], MeasuredCategory::Weights, E::StateSize};
    for (const AttributedAllocation& p : placed) { // sizes from the file: saturate, never overflow
        auto& bytes = out.bytes[static_cast<std::size_t>(p.category)];
        bytes = saturatingAdd(bytes, p.allocation.size);
        out.total = saturatingAdd(out.total, p.allocation.size);
    }
    std::stable_sort(placed.begin(), placed.end(),
                     [](const AttributedAllocation& a, const AttributedAllocation& b) {
                         return a.allocation.size > b.allocation.size;
                     });
    out.allocations = std::move(placed);
    return out;
}

std::vector<MeasuredCategory> categorizeRun(const Trace& trace, const TraceIndex& index,
                                            const AttributionRules& rules, const Scenario* scenario,
                                            std::size_t peak) {
    const auto& all = index.allocations();
    const DeviceTrace& device = index.device();
    std::vector<MeasuredCategory> out(all.size(), MeasuredCategory::Unattributed);
    if (all.empty())
        return out;
    if (peak == kBeforeFirstEvent)
        peak = index.peakAfter() == kBeforeFirstEvent ? 0 : index.peakAfter();
    // The peak's split, keyed by when and where each allocation began (unique among lifetimes).
    std::map<std::pair<std::size_t, std::uint64_t>, MeasuredCategory> atPeak;
    for (const AttributedAllocation& p : attribute(trace, index, peak, rules, scenario).allocations)
        atPeak.emplace(std::make_pair(p.allocation.start, p.allocation.addr), p.category);
    StatePools pools = poolsFor(scenario);
    const ShapesBySize activations = scenario ? activationShapes(*scenario) : ShapesBySize{};
    const bool sized = scenario && scenario->model.known;
    std::vector<PhaseSpan> spans = annotatedPhases(trace, device.key);
    const std::vector<std::int64_t> steps = stepStarts(spans);
    const PhaseLookup phases(std::move(spans));
    std::unordered_map<std::uint32_t, const AttributionRule*> ruleOfStack;
    // Tensors of the model's sizes held by live allocations, returned to their pool when freed.
    struct Held {
        std::size_t end;
        std::int64_t size;
        std::map<std::int64_t, int>* pool;
        bool operator>(const Held& o) const { return end > o.end; }
    };
    std::priority_queue<Held, std::vector<Held>, std::greater<>> held;
    auto hold = [&](std::map<std::int64_t, int>& pool, const Allocation& a) {
        if (!StatePools::take(pool, a.size))
            return false;
        held.push({endPos(a), a.size, &pool});
        return true;
    };
    auto poolOf = [&](MeasuredCategory c) -> std::map<std::int64_t, int>* {
        return c == MeasuredCategory::Weights           ? &pools.weights
               : c == MeasuredCategory::Gradients       ? &pools.gradients
               : c == MeasuredCategory::OptimizerStates ? &pools.states
                                                        : nullptr;
    };
    using C = MeasuredCategory;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const Allocation& a = all[i];
        while (!held.empty() && held.top().end <= startPos(a)) {
            ++(*held.top().pool)[held.top().size];
            held.pop();
        }
        if (auto it = atPeak.find({a.start, a.addr}); it != atPeak.end() && startPos(a) < endPos(a)) {
            out[i] = it->second;
            if (auto* pool = poolOf(out[i]))
                hold(*pool, a);
            continue;
        }
        // 1. Metadata, annotated phases, then the rules (as attribute() decides).
        const AttributionRule* r = nullptr;
        if (a.alloc != kBeforeFirstEvent) {
            if (const std::uint32_t note = noteAt(device.userMetadata, a.alloc)) {
                MeasuredCategory c;
                if (measuredCategoryFromKey(trace.strings[note], &c)) {
                    out[i] = c;
                    if (auto* pool = poolOf(c))
                        hold(*pool, a);
                    continue;
                }
            }
            r = phases.at(device.time[a.alloc]);
        }
        if (!r) {
            auto [cached, fresh] = ruleOfStack.try_emplace(a.stack, nullptr);
            if (fresh)
                cached->second = decidingRule(trace, a.stack, rules);
            r = cached->second;
        }
        if (r && r->target == AttributionRule::Target::Category) {
            out[i] = r->category;
            if (auto* pool = poolOf(r->category))
                hold(*pool, a);
            continue;
        }
        // 2. Backward and optimizer allocations: model state while the model has a tensor of that size free.
        if (r) {
            const bool backward = r->target == AttributionRule::Target::Backward;
            const bool state = sized ? hold(backward ? pools.gradients : pools.states, a)
                                     : keptBetweenSteps(a, device.entries(), device, steps);
            out[i] = state ? (backward ? C::Gradients : C::OptimizerStates) : C::Temporaries;
            continue;
        }
        // 3. Sizes: model state (not what was gone before the next step), then cuBLAS workspaces.
        const bool mayBeState = !goneBeforeTheNextStep(a, device, steps);
        if (mayBeState && hold(pools.weights, a))
            out[i] = C::Weights;
        else if (mayBeState && hold(pools.states, a))
            out[i] = C::OptimizerStates;
        else if (mayBeState && hold(pools.gradients, a))
            out[i] = C::Gradients;
        else if (workspaceBySize(a, device.entries()))
            out[i] = C::Workspaces;
        else if (droppedPreviousPass(a, device.entries(), activations))
            out[i] = C::Activations;
    }
    return out;
}

OptimizerStacks::OptimizerStacks(const Trace& trace, const AttributionRules& rules)
    : m_trace(trace), m_rules(rules), m_known(trace.stacks.size(), -1) {}

bool OptimizerStacks::operator()(std::uint32_t stack) {
    if (stack >= m_known.size())
        return false;
    if (m_known[stack] < 0) {
        const AttributionRule* r = decidingRule(m_trace, stack, m_rules);
        m_known[stack] = r && r->target == AttributionRule::Target::Optimizer ? 1 : 0;
    }
    return m_known[stack] == 1;
}

struct AllocationCategories::Context {
    const Trace& trace;
    const TraceIndex& index;
    const AttributionRules& rules;
    StatePools pools;
    bool sized;
    std::vector<std::int64_t> steps;
    PhaseLookup phases;
    // A run has a few hundred distinct stacks among its allocations: each matched against the rules once.
    mutable std::unordered_map<std::uint32_t, const AttributionRule*> ruleOfStack;
};

AllocationCategories::AllocationCategories(const Trace& trace, const TraceIndex& index,
                                           const AttributionRules& rules, const Scenario* scenario) {
    std::vector<PhaseSpan> spans = annotatedPhases(trace, index.device().key);
    std::vector<std::int64_t> steps = stepStarts(spans);
    m_context.reset(new Context{trace,
                                index,
                                rules,
                                poolsFor(scenario),
                                scenario && scenario->model.known,
                                std::move(steps),
                                PhaseLookup(std::move(spans)),
                                {}});
}

AllocationCategories::~AllocationCategories() = default;

MeasuredCategory AllocationCategories::operator()(const Allocation& a) const {
    const Context& x = *m_context;
    if (a.alloc != kBeforeFirstEvent)
        if (const std::uint32_t note = noteAt(x.index.device().userMetadata, a.alloc)) {
            MeasuredCategory c;
            if (measuredCategoryFromKey(x.trace.strings[note], &c))
                return c;
        }
    const AttributionRule* r =
        a.alloc != kBeforeFirstEvent ? x.phases.at(x.index.device().time[a.alloc]) : nullptr;
    if (!r) {
        auto [cached, fresh] = x.ruleOfStack.try_emplace(a.stack, nullptr);
        if (fresh)
            cached->second = decidingRule(x.trace, a.stack, x.rules);
        r = cached->second;
    }
    if (r) {
        if (r->target == AttributionRule::Target::Category)
            return r->category;
        const bool backward = r->target == AttributionRule::Target::Backward;
        const bool state = x.sized ? (backward ? x.pools.gradients : x.pools.states).count(a.size) > 0
                                   : keptBetweenSteps(a, x.index.events(), x.index.device(), x.steps);
        return state ? (backward ? MeasuredCategory::Gradients : MeasuredCategory::OptimizerStates)
                     : MeasuredCategory::Temporaries;
    }
    if (goneBeforeTheNextStep(a, x.index.device(), x.steps))
        return MeasuredCategory::Unattributed; // freed in the recording: no workspace either
    if (x.pools.weights.count(a.size))
        return MeasuredCategory::Weights;
    if (x.pools.states.count(a.size))
        return MeasuredCategory::OptimizerStates;
    if (x.pools.gradients.count(a.size))
        return MeasuredCategory::Gradients;
    if (workspaceBySize(a, x.index.events()))
        return MeasuredCategory::Workspaces;
    return MeasuredCategory::Unattributed;
}

MeasuredCategory categoryOf(const Trace& trace, const TraceIndex& index, const Allocation& a,
                            const AttributionRules& rules, const Scenario* scenario) {
    return AllocationCategories(trace, index, rules, scenario)(a);
}

} // namespace headroom
