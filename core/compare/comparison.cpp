#include "core/compare/comparison.h"

#include <algorithm>
#include <cmath>

namespace headroom {

std::array<std::int64_t, kMeasuredCategories> estimateInMeasuredCategories(const Scenario& sc,
                                                                           const Estimate& est) {
    const Breakdown& b = est.perGpu;
    std::array<std::int64_t, kMeasuredCategories> out{};
    auto put = [&](MeasuredCategory m, double bytes) {
        out[static_cast<std::size_t>(m)] += static_cast<std::int64_t>(std::llround(bytes));
    };
    const Calibration& c = sc.calibration;
    const double workspace = std::min(c.workspaceBytes, b[Category::Activations]);
    double step = 0;
    if (est.peakPhase == Phase::Optimizer && sc.mode == Mode::Training && sc.training.bytes.weights > 0)
        step = std::min(b[Category::OptimizerStates],
                        c.optimizerStepBytesPerParameter * b[Category::Weights] / sc.training.bytes.weights);
    put(MeasuredCategory::Weights, b[Category::Weights]);
    put(MeasuredCategory::Gradients, b[Category::Gradients]);
    put(MeasuredCategory::OptimizerStates, b[Category::MasterWeights] + b[Category::OptimizerStates] - step);
    put(MeasuredCategory::Activations,
        b[Category::Activations] - workspace + b[Category::AttentionScores] + b[Category::Logits]);
    put(MeasuredCategory::Temporaries, b[Category::GatherBuffers] + step);
    put(MeasuredCategory::KvCache, b[Category::KvCache]);
    put(MeasuredCategory::Workspaces, workspace);
    return out;
}

Comparison compareAtPeak(const Scenario& scenario, const Estimate& estimate, const Trace& trace,
                         const TraceIndex& index, const AttributionRules& rules) {
    Comparison c;
    c.device = index.device().key;
    const std::size_t peak = index.peakAfter() == kBeforeFirstEvent ? 0 : index.peakAfter();
    c.measured = attribute(trace, index, peak, rules, &scenario);
    c.estimated = estimateInMeasuredCategories(scenario, estimate);
    for (std::int64_t v : c.estimated)
        c.estimatedTotal += v;
    return c;
}

} // namespace headroom
