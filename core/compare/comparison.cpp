// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/comparison.h"

#include "core/checkednumbers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <sstream>
#include <vector>

namespace headroom {

std::array<std::int64_t, kMeasuredCategories> estimateInMeasuredCategories(const Estimate& est) {
    return breakdownInMeasuredCategories(est.perGpu);
}

std::array<std::int64_t, kMeasuredCategories> breakdownInMeasuredCategories(const Breakdown& b) {
    std::array<std::int64_t, kMeasuredCategories> out{};
    auto put = [&](MeasuredCategory m, double bytes) {
        auto& v = out[static_cast<std::size_t>(m)];
        v = saturatingAdd(v, clampToInt64(std::round(bytes)));
    };
    put(MeasuredCategory::Weights, b[Category::Weights]);
    put(MeasuredCategory::Gradients, b[Category::Gradients]);
    put(MeasuredCategory::OptimizerStates, b[Category::MasterWeights] + b[Category::OptimizerStates]);
    put(MeasuredCategory::Activations,
        b[Category::Activations] + b[Category::AttentionScores] + b[Category::Logits]);
    put(MeasuredCategory::Temporaries, b[Category::GatherBuffers] + b[Category::Temporaries]);
    put(MeasuredCategory::KvCache, b[Category::KvCache]);
    put(MeasuredCategory::Workspaces, b[Category::Workspaces]);
    return out;
}

std::string gibText(double bytes) {
    char text[48];
    std::snprintf(text, sizeof text, "%.2f GiB", bytes / 1073741824.0);
    return text;
}

std::string namedDifferences(const Comparison& c, std::size_t most) {
    std::vector<std::pair<std::int64_t, std::size_t>> diffs;
    for (std::size_t i = 0; i < kMeasuredCategories; ++i) {
        const std::int64_t d = saturatingSub(c.measured.bytes[i], c.estimated[i]);
        if (static_cast<double>(saturatingAbs(d)) * 100 >=
            static_cast<double>(std::max<std::int64_t>(c.measured.total, 1)))
            diffs.push_back({d, i});
    }
    std::sort(diffs.begin(), diffs.end(),
              [](const auto& a, const auto& b) { return saturatingAbs(a.first) > saturatingAbs(b.first); });
    std::string out;
    for (std::size_t k = 0; k < diffs.size() && k < most; ++k) {
        out += (out.empty() ? "" : ", ") +
               std::string(measuredCategoryKey(static_cast<MeasuredCategory>(diffs[k].second))) + " " +
               gibText(static_cast<double>(saturatingAbs(diffs[k].first))) +
               (diffs[k].first > 0 ? " more measured than estimated" : " less measured than estimated");
    }
    return out;
}

CounterPeaks peaksFromFirstAllocation(const TraceIndex& index) {
    CounterPeaks p;
    if (!index.hasSegments() && !index.device().hasReservedTotals)
        return p;
    const std::size_t n = index.events();
    const auto& actions = index.device().action;
    std::size_t first = 0;
    while (first < n && actions[first] != TraceAction::Alloc)
        ++first;
    const auto& allocated = index.allocatedSeries();
    const auto& reserved = index.reservedSeries();
    for (std::size_t k = first < n ? first : 0; k < n; ++k) {
        p.allocated = std::max(p.allocated, allocated[k]);
        p.reserved = std::max(p.reserved, reserved[k]);
    }
    return p;
}

std::string allocatorSettingsAdvice(const Scenario& scenario, const RecordedAllocatorSettings& recorded) {
    if (!recorded.recorded || recorded.expandableSegments == scenario.cluster.expandableSegments)
        return {};
    return recorded.expandableSegments
               ? "the run's allocator had expandable segments (its snapshot's allocator_settings) where the "
                 "scenario plans without them (cluster.expandable_segments)"
               : "the run's allocator had no expandable segments (its snapshot's allocator_settings) where "
                 "the scenario plans with them (cluster.expandable_segments)";
}

std::string Comparison::advice() const {
    std::string s = codeAdvice();
    if (allocatorNote.empty())
        return s;
    return s.empty() ? allocatorNote : s + "; " + allocatorNote;
}

std::string Comparison::codeAdvice() const {
    std::string s = codeOriginAdvice(code, planned);
    if (s.empty() || codePlanAllocated < 0)
        return s;
    auto off = [](double plan, double run) {
        std::ostringstream o;
        o << std::showpos << std::fixed << std::setprecision(1) << 100 * (plan / run - 1) << "%";
        return o.str();
    };
    s += "; planned with it, " + gibText(codePlanAllocated);
    if (measured.total > 0)
        s += " allocated (" + off(codePlanAllocated, static_cast<double>(measured.total)) + ")";
    if (codePlanReserved >= 0) {
        s += " and " + gibText(codePlanReserved) + " reserved";
        if (reservedMeasured > 0)
            s += " (" + off(codePlanReserved, static_cast<double>(reservedMeasured)) + ")";
    }
    return s;
}

Comparison compareAtPeak(const Scenario& scenario, const Estimate& estimate, const Trace& trace,
                         const TraceIndex& index, const AttributionRules& rules) {
    Comparison c;
    c.device = index.device().key;
    const std::size_t peak = index.peakAfter() == kBeforeFirstEvent ? 0 : index.peakAfter();
    c.measured = attribute(trace, index, peak, rules, &scenario);
    c.code = codeOrigin(trace, c.measured);
    c.planned = plannedFramework(scenario);
    c.estimated = estimateInMeasuredCategories(estimate);
    for (std::int64_t v : c.estimated)
        c.estimatedTotal = saturatingAdd(c.estimatedTotal, v);
    // Optimizer states the trace saw being created: the step that made them is the recording's first. They
    // are alive at the peak when the step is the peak; else at the recording's end.
    std::size_t firstCreated = kBeforeFirstEvent;
    std::int64_t created = 0;
    auto createdIn = [&](const Attribution& at) {
        for (const AttributedAllocation& a : at.allocations)
            if (a.category == MeasuredCategory::OptimizerStates && a.allocation.alloc != kBeforeFirstEvent) {
                firstCreated = firstCreated == kBeforeFirstEvent ? a.allocation.alloc
                                                                 : std::min(firstCreated, a.allocation.alloc);
                created = saturatingAdd(created, a.allocation.size);
            }
    };
    createdIn(c.measured);
    if (firstCreated == kBeforeFirstEvent && index.events() > 0 && index.events() - 1 != peak)
        createdIn(attribute(trace, index, index.events() - 1, rules, &scenario));
    const auto& allocated = index.allocatedSeries();
    if (firstCreated != kBeforeFirstEvent && firstCreated > 0 && firstCreated <= allocated.size()) {
        std::int64_t before = 0;
        for (std::size_t e = 0; e < firstCreated; ++e)
            before = std::max(before, allocated[e]);
        const std::int64_t later = saturatingAdd(before, created);
        // Only when no states existed before that step (an optimizer that writes new state tensors every
        // step, as a hand-written AdamW's `m = beta1 * m + ...` does, re-creates them in every step), and
        // when their absence moved the peak: a later step's loss would be the higher point.
        const bool none = attribute(trace, index, firstCreated - 1, rules, &scenario)
                              .of(MeasuredCategory::OptimizerStates) < created / 10;
        // A scenario that says it plans the first step (training.first_step) already describes this one.
        if (none && later > c.measured.total + c.measured.total / 100 &&
            !(scenario.mode == Mode::Training && scenario.training.firstStep)) {
            c.firstStep = true;
            c.createdStates = created;
            c.laterStepPeak = later;
        }
    }
    // A first step's reserved holds the cache its step made beside the forward's: no plan of a later step
    // describes it.
    if (!c.firstStep) {
        c.reservedMeasured = peaksFromFirstAllocation(index).reserved;
        c.reservedEstimated = estimate.reservedPeakBytes;
        // What the run's allocator reserved is compared with a plan of the same allocator: a snapshot says
        // whether it had expandable segments, which decide what a step leaves cached (the plan's replays of
        // a step run with the setting; its fraction follows it).
        if (const std::string differs = allocatorSettingsAdvice(scenario, trace.allocatorSettings);
            !differs.empty()) {
            Scenario asRun = scenario.settingsCopy();
            setExpandableSegments(asRun, trace.allocatorSettings.expandableSegments);
            c.reservedEstimated = headroom::estimate(asRun).reservedPeakBytes;
            c.allocatorNote = differs + ": its reserved is planned as the run ran";
        }
    }
    c.eventsRecorded = !index.device().stateOnly();
    if (!index.device().hasAllocatedTotals) {
        c.allocatedRecorded = false;
        c.usedMeasured = c.reservedMeasured;
        c.usedEstimated = estimate.gpuPeakBytes();
        c.reservedMeasured = 0;
        c.reservedEstimated = 0;
        c.allocatorNote.clear();
    }
    return c;
}

} // namespace headroom
