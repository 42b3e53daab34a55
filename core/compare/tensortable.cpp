// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/tensortable.h"

#include "core/checkednumbers.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

namespace headroom {

namespace {

struct Shape {
    std::string symbol;
    int dtypeBytes = 0; // 0: two shapes of this size with different widths
};

} // namespace

std::int64_t TensorTable::matched() const {
    std::int64_t m = 0;
    for (const TensorRow& r : rows)
        m = saturatingAdd(m, r.bytes());
    return m;
}

TensorTable tensorTable(const Scenario& sc, const Attribution& at, std::size_t stepStart) {
    TensorTable t;
    t.total = at.total;
    // The shapes a pass of this model allocates, per rank: what grows with the tokens (b·s of them, a
    // chunk of the prompt in a prefill) times a width, and the attention scores, b·a·s² (queries x keys).
    std::map<std::int64_t, Shape> shapes;     // by size as allocated
    std::map<std::int64_t, Shape> parameters; // the step's: a parameter tensor's shape
    const ModelSpec& m = sc.model;
    if (m.known && m.hidden > 0) {
        const RunShape shape(sc);
        const double tp = std::max(1, sc.cluster.tensorParallel);
        const double b = shape.b, queries = shape.queries, keys = shape.keys, tokens = shape.tokens();
        const double a = shape.heads, g = shape.kvHeads, d = shape.headDim;
        // The widths a tensor of each shape is written in: the activations' dtype and fp32 (norms, softmax
        // and the loss upcast), one byte for masks, eight for token ids. Nothing else: every extra width
        // makes more sizes ambiguous (at 128 tokens 2 MiB is b·s·h in fp32 and b·a·s² in bf16).
        const int act = static_cast<int>(sc.activationDtypeBytes());
        const std::vector<int> activations = act == 4 ? std::vector<int>{4} : std::vector<int>{act, 4};
        std::vector<int> scores = activations;
        scores.push_back(1);
        auto addTo = [&](std::map<std::int64_t, Shape>& into, const char* symbol, double elements,
                         const std::vector<int>& widths) {
            for (const int width : widths) {
                const double bytes = elements * width;
                if (!(bytes >= 1) || bytes > 4e18)
                    continue;
                for (const double size : {bytes, std::ceil(bytes / 512) * 512}) {
                    auto [it, fresh] =
                        into.try_emplace(static_cast<std::int64_t>(size), Shape{symbol, width});
                    const std::string named = std::string(symbol) + " (" + std::to_string(width) + " B)";
                    if (!fresh && !(it->second.symbol == symbol && it->second.dtypeBytes == width) &&
                        it->second.symbol.find(named) == std::string::npos) {
                        // Two shapes of one size (fp32 FFN outputs and fp32 scores at s = 4h / a): both
                        // named.
                        if (it->second.dtypeBytes != 0)
                            it->second.symbol += " (" + std::to_string(it->second.dtypeBytes) + " B)";
                        it->second.symbol += " = " + named;
                        it->second.dtypeBytes = 0;
                    }
                }
            }
        };
        const std::pair<const char*, double> perToken[] = {
            {"b·s·h", shape.hidden},
            {"b·s·f", shape.ffn},
            {"b·s·2f", 2 * shape.ffn},
            {"b·s·V", shape.vocab},
            {"b·s·a·d", a * d},
            {"b·s·g·d", g * d},
            {"b·s·(a+2g)·d", (a + 2 * g) * d},
        };
        auto add = [&](const char* symbol, double elements, const std::vector<int>& widths) {
            addTo(shapes, symbol, elements, widths);
        };
        std::vector<double> seen; // a width that is another's under a second name (a·d = h) is one shape
        for (const auto& [symbol, width] : perToken) {
            if (width <= 0 || std::find(seen.begin(), seen.end(), width) != seen.end())
                continue;
            seen.push_back(width);
            add(symbol, tokens * width, activations);
        }
        add("b·s", tokens, {1, 4, 8});                 // masks, the per-token loss, token ids
        add("b·a·s", b * a * queries, {4});            // the attention's log-sum-exp
        add("b·a·s²", b * a * queries * keys, scores); // the scores, and a mask or dropout's of them
        add("b·s²", b * queries * keys, {1});          // a causal mask
        // What the optimizer step allocates beside the states is shaped like the parameters (foreach's
        // per-tensor results): a parameter's shape, in fp32 or the weights' dtype.
        const int weights = sc.mode == Mode::Training ? static_cast<int>(sc.training.bytes.weights) : 2;
        for (const std::uint64_t p : m.parameterTensors())
            addTo(parameters, "p", static_cast<double>(p) / tp,
                  weights == 4 ? std::vector<int>{4} : std::vector<int>{weights, 4});
    }
    std::map<std::pair<std::int64_t, std::string>, TensorRow> rows; // by size and shape
    for (const AttributedAllocation& x : at.allocations) {
        const std::int64_t size = x.allocation.size;
        switch (x.category) {
        case MeasuredCategory::Weights:
        case MeasuredCategory::Gradients:
        case MeasuredCategory::OptimizerStates:
            t.modelState = saturatingAdd(t.modelState, size);
            continue;
        case MeasuredCategory::Workspaces:
            t.workspaces = saturatingAdd(t.workspaces, size);
            continue;
        case MeasuredCategory::KvCache:
            t.kvCache = saturatingAdd(t.kvCache, size);
            continue;
        default:
            break;
        }
        // Made by the optimizer step: a parameter's shape first (its scratch), else whatever it matches.
        const Shape* found = nullptr;
        if (x.allocation.start != kBeforeFirstEvent && x.allocation.start >= stepStart)
            if (const auto p = parameters.find(size); p != parameters.end())
                found = &p->second;
        if (!found)
            if (const auto a = shapes.find(size); a != shapes.end())
                found = &a->second;
        if (!found) {
            t.residual = saturatingAdd(t.residual, size);
            ++t.residualAllocations;
            t.largestResiduals.push_back(size);
            continue;
        }
        TensorRow& row = rows[{size, found->symbol}];
        row.shape = found->symbol;
        row.dtypeBytes = found->dtypeBytes;
        row.each = size;
        ++row.count;
    }
    for (auto& [key, row] : rows)
        t.rows.push_back(std::move(row));
    constexpr std::size_t kLargest = 5;
    std::sort(t.largestResiduals.begin(), t.largestResiduals.end(), std::greater<>());
    if (t.largestResiduals.size() > kLargest)
        t.largestResiduals.resize(kLargest);
    std::stable_sort(t.rows.begin(), t.rows.end(),
                     [](const TensorRow& x, const TensorRow& y) { return x.bytes() > y.bytes(); });
    return t;
}

} // namespace headroom
