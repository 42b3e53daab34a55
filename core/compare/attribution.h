// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/scenario.h"
#include "core/trace/traceindex.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace headroom {

// The categories a recorded peak is split into (docs/formats.md section 6).
enum class MeasuredCategory : std::uint8_t {
    Weights,
    Gradients,
    OptimizerStates,
    Activations,
    Temporaries,
    KvCache,
    Workspaces,
    Unattributed,
};
inline constexpr std::size_t kMeasuredCategories = 8;
const char* measuredCategoryKey(MeasuredCategory c);   // "optimizer_states"
const char* measuredCategoryLabel(MeasuredCategory c); // "Optimizer states"
bool measuredCategoryFromKey(const std::string& key, MeasuredCategory* out);

// A rule maps stack frames to what allocated the memory. `match` is a substring of a frame's function
// name or file name. Most rules name a category outright; two name a phase whose allocations are model
// state only when their size is one the model's state has (one per parameter tensor): Backward (else a
// temporary: the gradient of an activation) and Optimizer (else a step temporary).
struct AttributionRule {
    enum class Target : std::uint8_t { Category, Backward, Optimizer };
    std::string match;
    Target target = Target::Category;
    MeasuredCategory category = MeasuredCategory::Unattributed;
};

// Rules in order: the innermost frame that any rule matches decides, and on one frame the first rule wins.
struct AttributionRules {
    std::vector<AttributionRule> rules;
    // Defaults for PyTorch, each read from the code that allocates (see the .cpp).
    static AttributionRules pytorchDefaults();
};

// How one live allocation was placed, and by which evidence.
struct AttributedAllocation {
    Allocation allocation;
    MeasuredCategory category = MeasuredCategory::Unattributed;
    enum class Evidence : std::uint8_t {
        Metadata,
        Rule,
        StateSize,
        WorkspaceSize,
        ShapeSize, // an activation's size, allocated before the recording and dropped during it
        None
    } evidence = Evidence::None;
};

struct Attribution {
    std::size_t event = 0; // the state after this event
    std::int64_t total = 0;
    std::array<std::int64_t, kMeasuredCategories> bytes{};
    std::vector<AttributedAllocation> allocations; // largest first
    std::int64_t of(MeasuredCategory c) const { return bytes[static_cast<std::size_t>(c)]; }
};

// Splits the memory live after `event` into categories, from the most exact evidence down:
// 1. user_metadata that names a category (torch.cuda.memory._set_memory_metadata("optimizer_states")), and
//    annotated regions of a phase (external_annotations "Optimizer.step#AdamW.step", a "backward" or a
//    "forward") holding the allocation's event;
// 2. stack frames through the rules (without a scenario, a backward or optimizer allocation alive at the
//    recording's end, or already alive at its start, outlives the step that made it: a gradient or an
//    optimizer state);
// 3. with a scenario, allocations without a deciding frame whose size is that of a parameter tensor in the
//    scenario's dtype: weights first, then optimizer states and master weights, then gradients, never more
//    of a size than the model has tensors of it, and none the recording saw made and freed before the next
//    annotated optimizer step began (a step reads every gradient; weights and states outlive it); and cuBLAS
//    workspaces by their exact size.
// What none of these places stays unattributed.
Attribution attribute(const Trace& trace, const TraceIndex& index, std::size_t event,
                      const AttributionRules& rules, const Scenario* scenario = nullptr);
// The same for a live set found without an index (liveAfterEvent).
Attribution attribute(const Trace& trace, const DeviceTrace& device, std::vector<Allocation> live,
                      std::size_t event, const AttributionRules& rules, const Scenario* scenario = nullptr);

// Every allocation of the run placed once, for memory by category over time: one category per
// index.allocations() entry. Those live after `peak` (the allocated peak when kBeforeFirstEvent) take the
// category attribute() gives them there, so the split at the peak is compare's; the others go through the
// same evidence in the order the run allocated them, a parameter-sized allocation taking one of the model's
// tensors of its size until it is freed (never more of a size live at once than the model has).
std::vector<MeasuredCategory> categorizeRun(const Trace& trace, const TraceIndex& index,
                                            const AttributionRules& rules, const Scenario* scenario = nullptr,
                                            std::size_t peak = kBeforeFirstEvent);

// Whether the rules give a stack to the optimizer step, decided once per stack: a run's hundreds of thousands
// of entries share a few thousand stacks, and matching every frame against every rule for each entry was a
// third of a calibration's time.
class OptimizerStacks {
public:
    OptimizerStacks(const Trace& trace, const AttributionRules& rules);
    bool operator()(std::uint32_t stack);

private:
    const Trace& m_trace;
    const AttributionRules& m_rules;
    std::vector<signed char> m_known; // -1 not decided yet, else 0 or 1
};

// One allocation's category on its own, for colouring (no counting against the model's tensors, so a
// parameter-sized allocation without a deciding frame is a weight, unless the recording shows it gone before
// the next optimizer step): metadata, then the rules, then sizes. What every allocation of one device shares
// (its annotated phases, when its optimizer steps begin, the model's tensor sizes) is read once, so asking
// for a live set's thousands of allocations costs one lookup each (and the rules are matched once per stack).
// Not for use from two threads at once.
class AllocationCategories {
public:
    AllocationCategories(const Trace& trace, const TraceIndex& index, const AttributionRules& rules,
                         const Scenario* scenario = nullptr);
    ~AllocationCategories();
    MeasuredCategory operator()(const Allocation& allocation) const;

private:
    struct Context;
    std::unique_ptr<const Context> m_context;
};
// The same for one allocation.
MeasuredCategory categoryOf(const Trace& trace, const TraceIndex& index, const Allocation& allocation,
                            const AttributionRules& rules, const Scenario* scenario = nullptr);

} // namespace headroom
