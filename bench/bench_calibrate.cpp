// SPDX-License-Identifier: GPL-3.0-or-later
// What the window's Trace > Calibrate runs off the GUI thread (core/compare/calibration.h calibrate), on the
// shipped CS336 medium 256-token training snapshot planned as plain PyTorch: against the tables of the
// code its stacks name (the default: two fits, the code's and the scenario's own profile's kept beside)
// and against the scenario's own profile (--own-profile: one), beside reading the same trace in the same
// run (the reference). Prints one JSON object per line (docs/formats.md section 1).
#include "bench/benchtiming.h"
#include "core/compare/attribution.h"
#include "core/compare/calibration.h"
#include "core/io/scenariojson.h"
#include "core/trace/traceloadjob.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace headroom;
using bench::Clock;
using bench::median;

int main() {
    const std::string trace = HEADROOM_SOURCE_DIR
        "/tests/data/traces/snapshots/cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle";
    const Scenario sc =
        loadScenarioFile(HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-256-training.headroom.json");
    std::vector<double> load, code, own;
    std::shared_ptr<LoadedTrace> loaded;
    for (int rep = 0; rep < 5; ++rep) {
        auto t0 = Clock::now();
        loaded = loadTrace(trace);
        load.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        const CalibrationInput in{&sc, &loaded->trace, loaded->indexes.at(0).get(), trace};
        t0 = Clock::now();
        const CalibrationResult a = calibrate({in}, AttributionRules::pytorchDefaults());
        code.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        t0 = Clock::now();
        const CalibrationResult b =
            calibrate({in}, AttributionRules::pytorchDefaults(), {}, FitAgainst::ScenarioProfile);
        own.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        if (a.runs.empty() || b.runs.empty())
            return 1;
    }
    std::printf(
        "{\"metric\": \"trace_open_cs336_medium_256_ms\", \"value\": %.3f, \"unit\": \"ms\", \"detail\": "
        "\"median of 5 reads of the 3.3 MB snapshot, summary and index (the reference)\"}\n",
        median(load));
    std::printf(
        "{\"metric\": \"calibrate_cs336_medium_256_code_tables_ms\", \"value\": %.3f, \"unit\": \"ms\", "
        "\"detail\": \"median of 5 fits of that run against cs336_basics' tables and the plain profile's, "
        "%.2f x reading it in this run\"}\n",
        median(code), median(code) / median(load));
    std::printf(
        "{\"metric\": \"calibrate_cs336_medium_256_own_profile_ms\", \"value\": %.3f, \"unit\": \"ms\", "
        "\"detail\": \"median of 5 fits against the scenario's own profile alone, %.2f x reading it in "
        "this run\"}\n",
        median(own), median(own) / median(load));
    return 0;
}
