// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/planoverlay.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace headroom {

std::int64_t PlanOverlayPoint::total() const {
    std::int64_t t = 0;
    for (std::int64_t b : bytes)
        t = saturatingAdd(t, b);
    return t;
}

bool PlanOverlay::at(double event, std::array<std::int64_t, kMeasuredCategories>* bytes) const {
    if (points.empty() || !(event >= points.front().event) || event > points.back().event)
        return false;
    // The last point at or before `event`, and the next one.
    auto it = std::upper_bound(points.begin(), points.end(), event,
                               [](double e, const PlanOverlayPoint& p) { return e < p.event; });
    const PlanOverlayPoint& a = *(it - 1);
    if (it == points.end()) {
        *bytes = a.bytes;
        return true;
    }
    const PlanOverlayPoint& b = *it;
    const double f = b.event > a.event ? (event - a.event) / (b.event - a.event) : 1.0;
    for (std::size_t k = 0; k < kMeasuredCategories; ++k)
        (*bytes)[k] = clampToInt64(
            std::round(static_cast<double>(a.bytes[k]) + f * static_cast<double>(b.bytes[k] - a.bytes[k])));
    return true;
}

namespace {

bool isOptimizerStep(const std::string& name) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return lower.find("optimizer.step") != std::string::npos;
}

} // namespace

PlanOverlay planOverlay(const Scenario& sc, const Trace& trace, const TraceIndex& index, int pointsPerPhase) {
    PlanOverlay out;
    const std::size_t n = index.events();
    // A log of the memory in use (nvidia-smi) records no allocated bytes to place a step by, nor to lay
    // the plan's allocated bytes beside: no overlay (compare sets the plan's peak on the GPU against it).
    if (n == 0 || !index.device().hasAllocatedTotals)
        return out;
    const auto& time = index.device().time;
    const std::size_t peak = index.peakAfter() == kBeforeFirstEvent ? 0 : index.peakAfter();
    // The anchors, as events: where the step's forward starts, where the loss is (forward | backward),
    // where the backward ends and the optimizer step ends.
    double forward = 0, loss = static_cast<double>(peak), backwardEnd = static_cast<double>(n - 1),
           stepEnd = backwardEnd;
    bool stepMarked = false;
    if (std::is_sorted(time.begin(), time.end())) {
        const std::int64_t peakTime = time[peak];
        const Annotation* after = nullptr;  // the first optimizer step starting after the peak
        const Annotation* before = nullptr; // the last one ending before it
        for (const Annotation& a : trace.annotations) {
            if ((!a.device.empty() && a.device != index.device().key) || !isOptimizerStep(a.name))
                continue;
            if (a.start >= peakTime && (!after || a.start < after->start))
                after = &a;
            if (a.end != INT64_MAX && a.end <= peakTime && (!before || a.end > before->end))
                before = &a;
        }
        auto eventOf = [&](std::int64_t t) { // the first event at or after t
            return static_cast<double>(std::min<std::size_t>(
                static_cast<std::size_t>(std::lower_bound(time.begin(), time.end(), t) - time.begin()),
                n - 1));
        };
        if (after) {
            stepMarked = true;
            backwardEnd = eventOf(after->start);
            stepEnd = after->end == INT64_MAX ? static_cast<double>(n - 1) : eventOf(after->end);
            if (before)
                forward = eventOf(before->end);
        }
    }
    out.alignment = stepMarked ? "optimizer step" : "allocated peak";
    auto timeAt = [&](double e) {
        const auto lo = static_cast<std::size_t>(std::floor(e)), hi = std::min(n - 1, lo + 1);
        const double f = e - std::floor(e);
        return static_cast<double>(time[lo]) + f * static_cast<double>(time[hi] - time[lo]);
    };
    const Estimate est = estimate(sc);
    for (const TimelinePoint& p : phaseTimeline(sc, est.mostLoadedStage, pointsPerPhase)) {
        double from = 0, to = 0;
        switch (p.phase) {
        case Phase::Forward:
        case Phase::Prefill:
            from = forward, to = loss;
            break;
        case Phase::Backward:
        case Phase::Decode:
            from = loss, to = backwardEnd;
            break;
        case Phase::Optimizer:
            if (!stepMarked)
                continue; // nothing in the run says where the step is
            from = backwardEnd, to = stepEnd;
            break;
        }
        PlanOverlayPoint q;
        q.phase = p.phase;
        q.progress = p.progress;
        q.event = from + std::clamp(p.progress, 0.0, 1.0) * (to - from);
        q.time = timeAt(q.event);
        q.bytes = breakdownInMeasuredCategories(p.bytes);
        out.points.push_back(q);
    }
    // Points in order of where they fall (the two at the loss share an event; keep the plan's order).
    std::stable_sort(out.points.begin(), out.points.end(),
                     [](const PlanOverlayPoint& a, const PlanOverlayPoint& b) { return a.event < b.event; });
    return out;
}

} // namespace headroom
