// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/calibration.h"

#include "core/compare/comparison.h"
#include "core/serve/estimate.h"

#include <algorithm>
#include <cmath>

namespace headroom {

namespace {

std::int64_t modelState(const Attribution& a) {
    return a.of(MeasuredCategory::Weights) + a.of(MeasuredCategory::Gradients) +
           a.of(MeasuredCategory::OptimizerStates);
}

// The first event of the optimizer step: an "Optimizer.step" annotation's start, else the first allocation
// whose stack the rules give to the optimizer; the trace's length when it records no step.
std::size_t stepStart(const Trace& trace, const TraceIndex& index, const AttributionRules& rules) {
    const DeviceTrace& d = index.device();
    std::int64_t annotated = INT64_MAX;
    for (const Annotation& a : trace.annotations)
        if ((a.device.empty() || a.device == d.key) && a.name.find("Optimizer.step") != std::string::npos)
            annotated = std::min(annotated, a.start);
    for (std::size_t e = 0; e < d.entries(); ++e) {
        if (annotated != INT64_MAX && d.time[e] >= annotated)
            return e;
        if (annotated == INT64_MAX && d.action[e] == TraceAction::Alloc && d.stack[e] != 0 &&
            optimizerStack(trace, d.stack[e], rules))
            return e;
    }
    return d.entries();
}

std::size_t argmax(const BigVector<std::int64_t>& v, std::size_t from, std::size_t to) {
    std::size_t best = from;
    for (std::size_t e = from; e < to && e < v.size(); ++e)
        if (v[e] > v[best])
            best = e;
    return best;
}

// The estimator's transient tensors of one scenario at its loss peak (training: the start of backward,
// with the logits' gradient) or its prefill (inference), uncalibrated: what grows with tokens and what
// grows with their square, and the KV cache.
struct EstimatedParts {
    double linear = 0, quadratic = 0, kvCache = 0;
};
EstimatedParts estimatedParts(Scenario sc) {
    sc.calibration = Calibration{};
    EstimatedParts p;
    const Estimate est = estimate(sc);
    const int stage = est.mostLoadedStage;
    for (const TimelinePoint& t : phaseTimeline(sc, stage, 2)) {
        const bool loss = sc.mode == Mode::Training
                              ? (t.phase == Phase::Backward && t.progress == 0 && !t.layerRunning)
                              : (t.phase == Phase::Prefill && t.progress >= 1);
        if (!loss)
            continue;
        p.linear = t.bytes[Category::Activations] + t.bytes[Category::Logits];
        p.quadratic = t.bytes[Category::AttentionScores];
        p.kvCache = t.bytes[Category::KvCache];
    }
    return p;
}

} // namespace

RunMeasurement measureRun(const CalibrationInput& run, const AttributionRules& rules) {
    RunMeasurement m;
    const TraceIndex& index = *run.index;
    const std::size_t n = index.events();
    if (n == 0)
        return m;
    const std::size_t step = run.scenario->mode == Mode::Training ? stepStart(*run.trace, index, rules) : n;
    const auto& allocated = index.allocatedSeries();
    m.lossPeak = step > 0 ? argmax(allocated, 0, step) : argmax(allocated, 0, n);
    const Attribution at = attribute(*run.trace, index, m.lossPeak, rules, run.scenario);
    m.workspaces = at.of(MeasuredCategory::Workspaces);
    m.kvCache = at.of(MeasuredCategory::KvCache);
    m.transient = at.total - modelState(at) - m.workspaces - m.kvCache;
    if (step < n) {
        m.hasStep = true;
        const Attribution s = attribute(*run.trace, index, argmax(allocated, step, n), rules, run.scenario);
        m.stepScratch =
            std::max<std::int64_t>(0, s.total - modelState(s) - s.of(MeasuredCategory::Workspaces));
    }
    return m;
}

CalibrationResult calibrate(const std::vector<CalibrationInput>& runs, const AttributionRules& rules) {
    CalibrationResult r;
    Calibration& c = r.factors;
    c.present = true;
    std::vector<RunMeasurement> measured;
    std::vector<EstimatedParts> parts;
    for (const CalibrationInput& in : runs) {
        measured.push_back(measureRun(in, rules));
        parts.push_back(estimatedParts(*in.scenario));
    }
    // Tokens and tokens squared: weighted least squares on relative error, sum_i ((a L_i + b Q_i - A_i) /
    // A_i)^2.
    double sLL = 0, sLQ = 0, sQQ = 0, sLA = 0, sQA = 0;
    double common = 0;
    int usable = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const double A = static_cast<double>(measured[i].transient);
        const double L = parts[i].linear, Q = parts[i].quadratic;
        if (A <= 0 || L + Q <= 0)
            continue;
        const double w = 1 / (A * A);
        sLL += w * L * L, sLQ += w * L * Q, sQQ += w * Q * Q, sLA += w * L * A, sQA += w * Q * A;
        common += A / (L + Q);
        ++usable;
    }
    if (usable > 0) {
        common /= usable;
        const double det = sLL * sQQ - sLQ * sLQ;
        const double a = det != 0 ? (sLA * sQQ - sQA * sLQ) / det : -1;
        const double b = det != 0 ? (sQA * sLL - sLA * sLQ) / det : -1;
        // Two lengths tell the two apart; one (or a degenerate fit) gets one multiplier for both.
        const bool separable = usable >= 2 && std::abs(det) > 1e-12 * sLL * sQQ && a >= 0 && b >= 0;
        c.linear = separable ? a : common;
        c.quadratic = separable ? b : common;
    }
    double step = 0, kvRatio = 0;
    int steps = 0, kvRuns = 0;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        c.workspaceBytes = std::max(c.workspaceBytes, static_cast<double>(measured[i].workspaces));
        if (measured[i].hasStep && runs[i].scenario->parameters() > 0) {
            // What the modelled optimizer (foreach, one tensor at a time) already holds is not fitted again.
            Scenario plain = runs[i].scenario->settingsCopy();
            plain.calibration = Calibration{};
            const double modelled = estimate(plain).optimizerTemporaryBytes();
            step += std::max(0.0, static_cast<double>(measured[i].stepScratch) - modelled) /
                    static_cast<double>(runs[i].scenario->parameters());
            ++steps;
        }
        if (parts[i].kvCache > 0) {
            kvRatio += static_cast<double>(measured[i].kvCache) / parts[i].kvCache;
            ++kvRuns;
        }
    }
    c.optimizerStepBytesPerParameter = steps ? step / steps : 0;
    c.kvCache = kvRuns ? kvRatio / kvRuns : 1;
    // Before and after, as `compare` reports them.
    for (std::size_t i = 0; i < runs.size(); ++i) {
        const CalibrationInput& in = runs[i];
        Scenario before = *in.scenario;
        before.calibration = Calibration{};
        Scenario after = *in.scenario;
        after.calibration = c;
        const Comparison b = compareAtPeak(before, estimate(before), *in.trace, *in.index, rules);
        const Comparison a = compareAtPeak(after, estimate(after), *in.trace, *in.index, rules);
        r.runs.push_back({in.name, b.measured.total, b.estimatedTotal, a.estimatedTotal});
    }
    return r;
}

} // namespace headroom
