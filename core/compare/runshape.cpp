// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/runshape.h"

#include <algorithm>
#include <cmath>

namespace headroom {

RunShape::RunShape(const Scenario& sc) {
    const bool training = sc.mode == Mode::Training;
    const double tp = std::max(1, sc.cluster.tensorParallel);
    const ModelSpec& m = sc.model;
    b = training ? sc.training.microBatchSize : sc.inference.batchSize;
    keys = training
               ? static_cast<double>(sc.training.sequenceLength) / std::max(1, sc.cluster.contextParallel)
               : sc.inference.contextLength;
    queries =
        training || sc.inference.prefillChunk <= 0 ? keys : std::min<double>(sc.inference.prefillChunk, keys);
    hidden = m.hidden;
    ffn = m.ffn / tp;
    vocab = m.vocab / tp;
    heads = m.heads / tp;
    kvHeads = std::max(1.0, m.kvHeads / tp);
    headDim = m.headDim;
}

void addShape(ShapesBySize& into, const char* symbol, double elements, const std::vector<int>& widths) {
    for (const int width : widths) {
        const double bytes = elements * width;
        if (!(bytes >= 1) || bytes > 4e18)
            continue;
        for (const double size : {bytes, std::ceil(bytes / 512) * 512}) {
            auto [it, fresh] = into.try_emplace(static_cast<std::int64_t>(size), SizedShape{symbol, width});
            const std::string named = std::string(symbol) + " (" + std::to_string(width) + " B)";
            if (!fresh && !(it->second.symbol == symbol && it->second.dtypeBytes == width) &&
                it->second.symbol.find(named) == std::string::npos) {
                // Two shapes of one size (fp32 FFN outputs and fp32 scores at s = 4h / a): both named.
                if (it->second.dtypeBytes != 0)
                    it->second.symbol += " (" + std::to_string(it->second.dtypeBytes) + " B)";
                it->second.symbol += " = " + named;
                it->second.dtypeBytes = 0;
            }
        }
    }
}

ShapesBySize activationShapes(const Scenario& sc) {
    ShapesBySize shapes;
    if (!sc.model.known || sc.model.hidden <= 0)
        return shapes;
    // What grows with the tokens (b·s of them, a chunk of the prompt in a prefill) times a width, and the
    // attention scores, b·a·s² (queries x keys).
    const RunShape shape(sc);
    const double b = shape.b, queries = shape.queries, keys = shape.keys, tokens = shape.tokens();
    const double a = shape.heads, g = shape.kvHeads, d = shape.headDim;
    // The widths a tensor of each shape is written in: the activations' dtype and fp32 (norms, softmax and
    // the loss upcast), one byte for masks, eight for token ids. Nothing else: every extra width makes more
    // sizes ambiguous (at 128 tokens 2 MiB is b·s·h in fp32 and b·a·s² in bf16).
    const int act = static_cast<int>(sc.activationDtypeBytes());
    const std::vector<int> activations = act == 4 ? std::vector<int>{4} : std::vector<int>{act, 4};
    std::vector<int> scores = activations;
    scores.push_back(1);
    const std::pair<const char*, double> perToken[] = {
        {"b·s·h", shape.hidden},
        {"b·s·f", shape.ffn},
        {"b·s·2f", 2 * shape.ffn},
        {"b·s·V", shape.vocab},
        {"b·s·a·d", a * d},
        {"b·s·g·d", g * d},
        {"b·s·(a+2g)·d", (a + 2 * g) * d},
    };
    std::vector<double> seen; // a width that is another's under a second name (a·d = h) is one shape
    for (const auto& [symbol, width] : perToken) {
        if (width <= 0 || std::find(seen.begin(), seen.end(), width) != seen.end())
            continue;
        seen.push_back(width);
        addShape(shapes, symbol, tokens * width, activations);
    }
    addShape(shapes, "b·s", tokens, {1, 4, 8});                 // masks, the per-token loss, token ids
    addShape(shapes, "b·a·s", b * a * queries, {4});            // the attention's log-sum-exp
    addShape(shapes, "b·a·s²", b * a * queries * keys, scores); // the scores, and a mask or dropout's of them
    addShape(shapes, "b·s²", b * queries * keys, {1});          // a causal mask
    return shapes;
}

} // namespace headroom
