// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/tensortable.h"

#include "core/checkednumbers.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

namespace headroom {

std::int64_t TensorTable::matched() const {
    std::int64_t m = 0;
    for (const TensorRow& r : rows)
        m = saturatingAdd(m, r.bytes());
    return m;
}

TensorTable tensorTable(const Scenario& sc, const Attribution& at, std::size_t stepStart) {
    TensorTable t;
    t.total = at.total;
    // The shapes a pass of this model allocates (activationShapes), and the optimizer step's: what it
    // allocates beside the states is shaped like the parameters (foreach's per-tensor results), a
    // parameter's shape in fp32 or the weights' dtype.
    const ShapesBySize shapes = activationShapes(sc);
    ShapesBySize parameters;
    const ModelSpec& m = sc.model;
    if (m.known && m.hidden > 0) {
        const double tp = std::max(1, sc.cluster.tensorParallel);
        const int weights = sc.mode == Mode::Training ? static_cast<int>(sc.training.bytes.weights) : 2;
        for (const std::uint64_t p : m.parameterTensors())
            addShape(parameters, "p", static_cast<double>(p) / tp,
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
        const SizedShape* found = nullptr;
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
