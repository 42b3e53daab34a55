// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/attribution.h"
#include "core/compare/runshape.h"
#include "core/plan/scenario.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace headroom {

// One row of a run's tensor table: the live allocations at a moment whose size is one tensor shape of the
// model (in its symbols: b micro-batch, s tokens, h hidden, f FFN width, V vocabulary, a query heads and g
// KV heads on this rank, d head size; p one of its parameter tensors, as the optimizer step's scratch is)
// times a dtype width, as the caching allocator rounds it (512 bytes).
struct TensorRow {
    std::string shape;     // "b·s·f"; two shapes of the same size are "b·s·f = b·a·s²"
    int dtypeBytes = 0;    // 1, 2, 4 or 8
    std::int64_t each = 0; // bytes of one, rounded as allocated
    std::size_t count = 0;
    std::int64_t bytes() const { return each * static_cast<std::int64_t>(count); }
};

// Every live allocation at a moment, placed: the model state and workspaces as attribution found them
// (parameters by their tensors' sizes, cuBLAS workspaces by theirs), the rest matched to a row by its size,
// and what matches no shape the residual, reported and never spread over the rows. What calibration learns
// from a run, written out so that the bytes it scales can be read tensor by tensor (docs/formats.md
// section 7).
struct TensorTable {
    std::int64_t total = 0;      // allocated at the moment
    std::int64_t modelState = 0; // weights, gradients, optimizer states
    std::int64_t workspaces = 0;
    std::int64_t kvCache = 0;
    std::vector<TensorRow> rows; // the rest, by shape: largest total first
    std::int64_t residual = 0;   // the rest that no shape explains
    std::size_t residualAllocations = 0;
    std::vector<std::int64_t> largestResiduals; // the sizes of the largest few, largest first
    std::int64_t matched() const;
};

// `stepStart`: the optimizer step's first event (what it allocates is matched to the parameters' shapes
// first); the trace's length when it records none.
TensorTable tensorTable(const Scenario& sc, const Attribution& at, std::size_t stepStart);

} // namespace headroom
