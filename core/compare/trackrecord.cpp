// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/trackrecord.h"

#include "core/plan/settingnames.h"

#include <array>
#include <cstdio>

namespace headroom {

namespace {

// tst_frameworks::trackRecordFollowsTheCases recomputes every figure from the cases files and names the row
// to write when one moves. Fractions, |planned / measured - 1|.
constexpr std::array<TrackRecord, 7> kRecords = {{
    {Framework::Megatron, 105, 0.01358, 0.04213, 9, 0.00854, "allocated"},
    {Framework::Torchtitan, 6, 0.00727, 0.11302, 13, 0.02581, "reserved"},
    {Framework::Torchtune, 7, 0.03573, 0.08599, 8, 0.02244, "active"},
    {Framework::HuggingFace, 12, 0.03134, 0.06318, 13, 0.01936, "allocated, reserved"},
    {Framework::Unsloth, 9, 0.09920, 0.11114, 0, 0, "device"},
    {Framework::PyTorch, 10, 0.08133, 0.23474, 6, 0.07061, "allocated"},
    {Framework::Cs336Basics, 60, 0.00556, 0.14796, 18, 0.00003, "allocated, reserved"},
}};

// tst_frameworks::trackRecordFollowsTheCases recomputes it too.
constexpr CalibrationTrackRecord kCalibrationRecord = {91, 0.00454, 0.01681, 61, 0.00068};

// tst_serving::servingTrackRecordFollowsTheLogs recomputes these from examples/serving/cases.json.
constexpr std::array<ServingTrackRecord, 2> kServingRecords = {{
    {Engine::Vllm, 21, 14, 0.00465, 0.09557, 11, 8, 0.00393},
    {Engine::Sglang, 5, 4, 0.00315, 0.06040, 0, 0, 0},
}};

std::string percent(double fraction) {
    char s[32];
    std::snprintf(s, sizeof s, "%.1f%%", 100 * fraction);
    return s;
}

std::string runs(int n) {
    return std::to_string(n) + (n == 1 ? " run" : " runs");
}

// The row of a table whose `member` is `key`, or nothing.
template <typename Row, std::size_t N, typename Key>
const Row* rowOf(const std::array<Row, N>& table, Key Row::*member, Key key) {
    for (const Row& r : table)
        if (r.*member == key)
            return &r;
    return nullptr;
}

} // namespace

const CalibrationTrackRecord& calibrationTrackRecord() {
    return kCalibrationRecord;
}

std::string calibrationTrackRecordText() {
    const CalibrationTrackRecord& r = kCalibrationRecord;
    return "Calibrated plans (on recorded runs of the same code): " + runs(r.validateRuns) +
           " no rule was chosen on, median " + percent(r.validateMedian) + " off (worst " +
           percent(r.validateWorst) + "); " + std::to_string(r.fitRuns) + " that were, median " +
           percent(r.fitMedian);
}

std::span<const TrackRecord> trackRecords() {
    return kRecords;
}

const TrackRecord* trackRecordOf(Framework framework) {
    return rowOf(kRecords, &TrackRecord::framework, framework);
}

std::string trackRecordSummary(Framework framework) {
    const TrackRecord* r = trackRecordOf(framework);
    if (!r)
        return "no published or recorded run checks the " + labelOf(frameworkNames(), framework) +
               " profile yet";
    std::string text = r->validateRuns > 0
                           ? runs(r->validateRuns) + " it was not built on, median " +
                                 percent(r->validateMedian) + " off (worst " + percent(r->validateWorst) + ")"
                           : std::string("no run kept apart from building it");
    text += "; " + (r->fitRuns > 0 ? std::to_string(r->fitRuns) + " it was, median " + percent(r->fitMedian)
                                   : std::string("none it was"));
    return text + " (" + r->counters + ")";
}

std::string trackRecordText(Framework framework) {
    return "Track record: " + trackRecordSummary(framework);
}

std::span<const ServingTrackRecord> servingTrackRecords() {
    return kServingRecords;
}

const ServingTrackRecord* servingTrackRecordOf(Engine engine) {
    return rowOf(kServingRecords, &ServingTrackRecord::engine, engine);
}

std::string servingTrackRecordText(Engine engine) {
    const std::string name = labelOf(engineNames(), engine);
    const ServingTrackRecord* r = servingTrackRecordOf(engine);
    if (!r)
        return "Track record: no start-up log checks " + name + "'s plans yet";
    std::string text = "Track record: ";
    text += r->validateRuns > 0
                ? std::to_string(r->validateRuns) + " " + name +
                      " start-up logs it was not built on, KV pool median " + percent(r->validatePoolMedian) +
                      " off (worst " + percent(r->validatePoolWorst) + ")"
                : "no " + name + " start-up log kept apart from building it";
    return text + "; " +
           (r->fitRuns > 0 ? std::to_string(r->fitRuns) + " it was, median " + percent(r->fitPoolMedian)
                           : std::string("none it was"));
}

} // namespace headroom
