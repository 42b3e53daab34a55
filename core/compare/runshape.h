// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/scenario.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace headroom {

// The sizes one pass of a run allocates on one rank, in the symbols of its tensor table: b the micro-batch
// (a batch in inference), s the query tokens (a training sequence split by context parallelism, a prefill's
// chunk of the prompt) against the key tokens, h hidden, and per tensor-parallel rank f FFN width, V
// vocabulary, a query heads and g KV heads (at least one) of d values each. Calibration and the tensor
// table read a run through this one shape.
struct RunShape {
    double b = 0, queries = 0, keys = 0;
    double hidden = 0, ffn = 0, vocab = 0, heads = 0, kvHeads = 0, headDim = 0;
    explicit RunShape(const Scenario& sc);
    double tokens() const { return b * queries; }
    // As the caching allocator hands them out: rounded up to 512 bytes.
    static double rounded(double bytes) { return std::ceil(bytes / 512) * 512; }
    double scores(double dtypeBytes) const { return rounded(b * heads * queries * keys * dtypeBytes); }
    double linear(double width, double dtypeBytes) const { return rounded(tokens() * width * dtypeBytes); }
    // The widths of the tokens-linear tensors a pass allocates, by symbol: hidden, FFN, vocabulary and the
    // QKV projection's.
    std::vector<std::pair<const char*, double>> linearWidths() const {
        return {{"b·s·h", hidden},
                {"b·s·f", ffn},
                {"b·s·V", vocab},
                {"b·s·(a+2g)·d", (heads + 2 * kvHeads) * headDim}};
    }
};

// A tensor shape of the model as one size allocates it: its symbol ("b·s·f") and the width it is written in;
// two shapes of one size are both named ("b·s·f (4 B) = b·a·s² (2 B)") with width 0.
struct SizedShape {
    std::string symbol;
    int dtypeBytes = 0;
};
using ShapesBySize = std::map<std::int64_t, SizedShape>;

// Adds `elements` at each width, by its exact size and as the allocator rounds it (512 bytes).
void addShape(ShapesBySize& into, const char* symbol, double elements, const std::vector<int>& widths);

// The shapes a pass of the scenario's model allocates, per rank, by size: what grows with the tokens times
// a width, the scores, their masks and row statistics, token ids. What the tensor table matches a run's
// allocations against, and what attribution reads a tensor of unknown origin as an activation by. Empty for
// a model of unknown structure.
ShapesBySize activationShapes(const Scenario& sc);

} // namespace headroom
