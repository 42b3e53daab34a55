// SPDX-License-Identifier: GPL-3.0-or-later
// Attribution, comparison and calibration of a recorded peak against a scenario, and memory by category over
// the whole run (docs/formats.md section 14): the arithmetic that adds
// up sizes from a file (per category, per state-size pool) and compares them with an estimate. Sizes near
// the limits of int64 must saturate, never overflow; anything but a clean Error is a finding.
#include "core/checkednumbers.h"
#include "core/compare/attribution.h"
#include "core/compare/calibration.h"
#include "core/compare/comparison.h"
#include "core/compare/runtimeline.h"
#include "core/error.h"
#include "core/io/comparejson.h"
#include "core/io/jsontext.h"
#include "core/io/scenariojson.h"
#include "core/io/timelinejson.h"
#include "core/serve/estimate.h"
#include "core/trace/formats/tracereader.h"
#include "core/trace/traceindex.h"
#include "core/trace/tracesummary.h"

#include <array>
#include <string>

namespace {

// The CS336 medium model of the recorded runs (docs/measured.md) with `work`: its tensor table gives the size
// pools that decide weights, gradients and states.
headroom::Scenario medium(const char* work) {
    nlohmann::json doc = nlohmann::json::parse(R"({
      "schema": "headroom.scenario/1", "name": "fuzz",
      "model": {"model_type": "llama", "vocab_size": 10000, "hidden_size": 1024, "intermediate_size": 4096,
                "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
                "tie_word_embeddings": false},
      "cluster": {"gpu": "A100-SXM-80GB", "num_gpus": 1}})");
    doc.update(nlohmann::json::parse(work));
    return headroom::scenarioFromJson(doc);
}
// Training in fp32 with AdamW and its forward (an inference scenario of plain code, whose calibration
// measures the moments inside a layer's attention and elsewhere), at 128 tokens and at 256, where an fp32
// score has an fp32 FFN output's size (16 MiB) and calibration reads the trace's call tree for which is
// which (ScoreSites), from the stacks in the file; and a forward with autograd on (grad_mode "enabled"),
// measured as training is. The first is what attribution is checked against.
std::string work(bool training, int tokens, const char* forward = "") {
    const std::string n = std::to_string(tokens);
    return training ? R"({"training": {"micro_batch_size": 4, "sequence_length": )" + n +
                          R"(, "precision": "fp32", "attention": "eager"}})"
                    : R"({"inference": {"batch_size": 4, "context_length": )" + n +
                          R"(, "weight_dtype": "fp32", "attention": "eager")" + forward + "}}";
}
const std::array<headroom::Scenario, 5>& scenarios() {
    static const std::array<headroom::Scenario, 5> all = {
        medium(work(true, 128).c_str()), medium(work(false, 128).c_str()), medium(work(true, 256).c_str()),
        medium(work(false, 256).c_str()), medium(work(false, 256, R"(, "grad_mode": "enabled")").c_str())};
    return all;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    try {
        headroom::TraceReadOptions options;
        options.maxDecompressed = 64u << 20;
        const headroom::Trace trace =
            headroom::readTrace(std::string_view(reinterpret_cast<const char*>(data), size), options);
        const headroom::TraceSummary summary = headroom::summarize(trace);
        const auto rules = headroom::AttributionRules::pytorchDefaults();
        const headroom::Scenario& sc = scenarios()[0];
        const headroom::Estimate est = headroom::estimate(sc);
        for (std::size_t i = 0; i < trace.devices.size(); ++i) {
            const headroom::TraceIndex index(trace.devices[i], summary.devices[i]);
            for (std::size_t at : {index.peakAfter(), index.events() / 2, headroom::kBeforeFirstEvent}) {
                const headroom::Attribution a = headroom::attribute(trace, index, at, rules, &sc);
                (void)a.total;
            }
            // The whole run by category (every allocation placed, the stacked series, the CLI's buckets):
            // the classes must sum to the allocated series wherever they are read.
            for (const headroom::Scenario* with : {&sc, static_cast<const headroom::Scenario*>(nullptr)}) {
                const headroom::RunTimeline run = headroom::runTimeline(trace, index, rules, with, 7);
                (void)headroom::jsonText(headroom::runTimelineToJson(run, "fuzz"));
            }
            // Every allocation in its place, over the whole run and a narrow stretch (the two ways of finding
            // the allocations a view shows).
            {
                headroom::Timeline timeline(index, 3);
                timeline.setAllocationStack(std::make_shared<const headroom::AllocationStack>(index));
                const auto [x0, x1] = timeline.domain(headroom::TimelineAxis::Event);
                for (double w : {1.0, 0.05})
                    (void)timeline.frame(headroom::TimelineAxis::Event, x0, x0 + (x1 - x0 + 1) * w, 37,
                                         headroom::TimelineDetail::Allocations, 9);
            }
            const auto series = headroom::categorySeries(trace, index, rules, &sc);
            if (series->valid())
                for (std::size_t at : {index.peakAfter(), index.events() / 3, headroom::kBeforeFirstEvent}) {
                    long long sum = 0;
                    for (std::int64_t v : series->after(at))
                        sum = headroom::saturatingAdd(sum, v);
                    const long long allocated = index.stateAfter(at).allocated;
                    // Equal unless saturated on the way (sizes near the limits of int64 in the file).
                    if (sum != allocated && sum != INT64_MAX && sum != INT64_MIN && allocated != INT64_MAX &&
                        allocated != INT64_MIN)
                        __builtin_trap();
                }
            const headroom::Comparison c = headroom::compareAtPeak(sc, est, trace, index, rules);
            (void)headroom::jsonText(headroom::comparisonToJson(c, "fuzz"));
            (void)headroom::namedDifferences(c, 3);
        }
        if (!trace.devices.empty()) {
            const headroom::TraceIndex index(trace.devices[0], summary.devices[0]);
            for (const headroom::Scenario& with : scenarios())
                try {
                    (void)headroom::jsonText(headroom::calibrationToJson(
                        headroom::calibrate({{&with, &trace, &index, "fuzz"}}, rules)));
                } catch (const headroom::Error&) {
                }
        }
    } catch (const headroom::Error&) {
    }
    return 0;
}
