// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/scenario.h"

#include <span>
#include <string>

namespace headroom {

// How a training profile's plans have held against the published and recorded runs the project checks
// (examples/published/cases.json, examples/published/fine-tuning/cases.json, examples/measured/cases.json;
// calibrated predictions left out, since they test calibration, not the profile): the runs never used to
// choose a rule or a constant ("validate") apart from those that were ("fit"). Errors are |planned /
// measured - 1| on the counter each run reported. A table rather than a computation at start-up (the cases
// and their scenarios are not installed): tst_frameworks recomputes it from those files and fails as soon as
// a figure moves, so what a user reads beside a plan is what the tests measure.
struct TrackRecord {
    Framework framework = Framework::PyTorch;
    int validateRuns = 0;
    double validateMedian = 0, validateWorst = 0;
    int fitRuns = 0;
    double fitMedian = 0;
    const char* counters = ""; // the counters the runs reported, as the cases files name them
};

// The same for a serving engine, against the start-up logs of examples/serving/cases.json: the KV pool (its
// tokens, or its bytes where the log gives no count) and how many runs had every part of the budget within
// its bound (0.3 GiB; the pool 3%).
struct ServingTrackRecord {
    Engine engine = Engine::Vllm;
    int validateRuns = 0, validateWithin = 0;
    double validatePoolMedian = 0, validatePoolWorst = 0;
    int fitRuns = 0, fitWithin = 0;
    double fitPoolMedian = 0;
};

// How calibrated plans have held: every case planned with a calibration on recorded runs of the same code
// (calibrate_on, all profiles), those no rule was chosen on apart from those that were, recomputed by
// tst_frameworks like the rows above.
struct CalibrationTrackRecord {
    int validateRuns = 0;
    double validateMedian = 0, validateWorst = 0;
    int fitRuns = 0;
    double fitMedian = 0;
};
const CalibrationTrackRecord& calibrationTrackRecord();
// The line under a calibrated plan: "Calibrated plans: 24 runs no rule was chosen on, median 0.8% off
// (worst 1.4%); 45 that were, median 0.2%".
std::string calibrationTrackRecordText();

std::span<const TrackRecord> trackRecords();
// The row of a framework; nothing where no run checks its profile.
const TrackRecord* trackRecordOf(Framework framework);
// How the profile has held, or that no run has checked it: "5 runs it was not built on, median 0.8% off
// (worst 11.4%); 13 it was, median 2.9% (reserved)".
std::string trackRecordSummary(Framework framework);
// The line the window and the CLI show under a training plan: "Track record: " and the summary.
std::string trackRecordText(Framework framework);

std::span<const ServingTrackRecord> servingTrackRecords();
const ServingTrackRecord* servingTrackRecordOf(Engine engine);
// The line under a serving plan: "Track record: 9 vLLM start-up logs it was not built on, KV pool median 1.3%
// off (worst 9.4%); 5 it was, median 0.3%", or that no log checks the engine.
std::string servingTrackRecordText(Engine engine);

} // namespace headroom
