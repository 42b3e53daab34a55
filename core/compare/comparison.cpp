#include "core/compare/comparison.h"

#include <cmath>

namespace headroom {

std::array<std::int64_t, kMeasuredCategories> estimateInMeasuredCategories(const Breakdown& b) {
    std::array<std::int64_t, kMeasuredCategories> out{};
    auto put = [&](MeasuredCategory m, double bytes) {
        out[static_cast<std::size_t>(m)] += static_cast<std::int64_t>(std::llround(bytes));
    };
    put(MeasuredCategory::Weights, b[Category::Weights]);
    put(MeasuredCategory::Gradients, b[Category::Gradients]);
    put(MeasuredCategory::OptimizerStates, b[Category::MasterWeights] + b[Category::OptimizerStates]);
    put(MeasuredCategory::Activations,
        b[Category::Activations] + b[Category::AttentionScores] + b[Category::Logits]);
    put(MeasuredCategory::Temporaries, b[Category::GatherBuffers]);
    put(MeasuredCategory::KvCache, b[Category::KvCache]);
    return out;
}

Comparison compareAtPeak(const Scenario& scenario, const Estimate& estimate, const Trace& trace,
                         const TraceIndex& index, const AttributionRules& rules) {
    Comparison c;
    c.device = index.device().key;
    const std::size_t peak = index.peakAfter() == kBeforeFirstEvent ? 0 : index.peakAfter();
    c.measured = attribute(trace, index, peak, rules, &scenario);
    c.estimated = estimateInMeasuredCategories(estimate.perGpu);
    for (std::int64_t v : c.estimated)
        c.estimatedTotal += v;
    return c;
}

} // namespace headroom
