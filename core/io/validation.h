// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/attribution.h"

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace headroom {

inline constexpr const char* kCasesSchema = "headroom.cases/1";
inline constexpr const char* kValidationSchema = "headroom.validation/1";

// One run the estimate is checked against (a cases file, docs/formats.md section 11): the scenario of its
// workload and what it measured, published (a CI golden value, a benchmark table) or recorded (a trace).
struct ValidationCase {
    std::string id, title, stack, source;
    // "fit": the run was used to choose a rule or a constant; "validate": it never was. The two sets are
    // reported apart, so that the errors on runs nobody tuned for are never averaged away.
    std::string role;
    std::string metric;     // "allocated", "reserved" or "active": the counter the run reported
    bool lastStage = false; // the run logged its last pipeline stage (Megatron); else the busiest rank
    // "moment": "before_step": the run reported its peak over the forward and backward alone, before the
    // optimizer step (torch.cuda.max_memory_allocated read before optimizer.step()).
    bool beforeStep = false;
    std::string scenarioPath, tracePath;  // resolved against the cases file's folder
    double measuredBytes = 0;             // 0 with a trace: measured at the trace's allocated peak
    std::vector<std::string> calibrateOn; // ids of traced cases whose runs calibrate this one's scenario
    // "plain_pytorch": the scenario planned without its framework profile, as plain PyTorch (the profile a
    // user without one for the code has; with calibrate_on, what calibration makes of it).
    bool plainPytorch = false;
    std::string knownMiss;                // why the estimate is known to miss this run ("open")
    // What stayed allocated between the run's steps, as it logged it (Megatron-LM's mem-allocated-bytes):
    // the model state and what the libraries keep, with nothing of a step's; 0 when not logged.
    double betweenStepsBytes = 0;
};

struct ValidationCases {
    std::string file;
    std::vector<ValidationCase> cases;
};

// Reads a cases file; errors name the file and the JSON path ("cases[3].metric"). Every id is unique, every
// calibrate_on id names a case of the same file that has a trace.
ValidationCases loadValidationCases(const std::string& path);

// One counter of a run: what it measured and what the estimate says.
struct CounterReading {
    double measured = 0, estimated = 0;
    double error() const { return measured > 0 ? estimated / measured - 1 : 0; }
};

struct CaseResult {
    const ValidationCase* c = nullptr;
    double measured = 0, estimated = 0;
    double error() const { return measured > 0 ? estimated / measured - 1 : 0; }
    // A traced run records every counter, not only the one its case names: its reserved and active peaks
    // beside the estimate's (measured 0: the trace has no such counter, or records a first step, whose
    // later steps' reserve it does not show).
    CounterReading reserved, active;
    // The same scenario planned as plain PyTorch (framework pytorch, Megatron-style selective for per-op
    // selective checkpointing): what a profile buys. 0 when the case is plain PyTorch already.
    double plainPytorch = 0;
    // Planned with a calibration: on the cases of `calibrate_on`, or the one its scenario carries (fitted
    // by `calibrate` to a recording the cases file does not hold).
    bool calibrated = false;
    // With a trace: the measured peak and the estimate in measured categories.
    bool traced = false;
    std::array<std::int64_t, kMeasuredCategories> measuredByCategory{}, estimatedByCategory{};
    std::vector<std::string> warnings; // the scenario reader's, prefixed with the case id
};

// |error| statistics of a set of cases.
struct ErrorSummary {
    std::size_t runs = 0, within5 = 0, knownMisses = 0;
    double median = 0, worst = 0;
};
ErrorSummary summarizeErrors(const std::vector<const CaseResult*>& results);
// The same over a traced run's other counter ("reserved" or "active"), the runs that recorded it.
ErrorSummary summarizeCounter(const std::vector<const CaseResult*>& results, const std::string& counter);

struct Validation {
    std::vector<ValidationCases> files;
    std::vector<CaseResult> results; // in file order
};

// Estimates every case (loading its scenario, and its trace when it has one, calibrating where it says).
Validation runValidation(std::vector<ValidationCases> files, const AttributionRules& rules);

nlohmann::json validationToJson(const Validation& v);
// The tables the README quotes: per role, each run with its error, then the error per stack and per
// counter; traced runs also by category at the peak. `runs` false: the summaries alone (a set of a hundred
// runs reads better as its errors per stack and counter, with the runs in a document of their own).
std::string validationMarkdown(const Validation& v, bool runs = true);

} // namespace headroom
