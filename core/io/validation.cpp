// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/validation.h"

#include "core/compare/calibration.h"
#include "core/compare/comparison.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/io/bytesformat.h"
#include "core/io/jsontext.h"
#include "core/io/scenariojson.h"
#include "core/serve/estimate.h"
#include "core/trace/traceloadjob.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <sstream>

namespace headroom {

namespace {

constexpr double kGiB = 1073741824.0;

std::string folderOf(const std::string& path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string resolved(const std::string& folder, const std::string& path) {
    return !path.empty() && path.front() == '/' ? path : folder + "/" + path;
}

std::string stringField(const nlohmann::json& c, const std::string& at, const char* key, bool required,
                        std::initializer_list<const char*> allowed = {}) {
    if (!c.contains(key)) {
        if (required)
            throw Error(at + "." + key, "is missing");
        return {};
    }
    if (!c[key].is_string() || c[key].get<std::string>().empty())
        throw Error(at + "." + key, "must be a non-empty string");
    std::string v = c[key].get<std::string>();
    if (allowed.size() &&
        std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return v == a; })) {
        std::string list;
        for (const char* a : allowed)
            list += std::string(list.empty() ? "" : ", ") + a;
        throw Error(at + "." + key, "must be one of " + list + ", not \"" + v + "\"");
    }
    return v;
}

ValidationCase caseFromJson(const nlohmann::json& c, const std::string& at, const std::string& folder) {
    if (!c.is_object())
        throw Error(at, "must be an object");
    ValidationCase v;
    v.id = stringField(c, at, "id", true);
    v.title = stringField(c, at, "title", false);
    if (v.title.empty())
        v.title = v.id;
    v.stack = stringField(c, at, "framework", true);
    v.role = stringField(c, at, "role", true, {"fit", "validate"});
    v.metric = stringField(c, at, "metric", true, {"allocated", "reserved", "active", "device"});
    v.lastStage = stringField(c, at, "stage", false, {"last", "max"}) == "last";
    if (v.metric == "device" && v.lastStage)
        throw Error(at + ".stage",
                    "a device's use is planned for the busiest rank: \"max\" (or leave it out)");
    v.beforeStep = stringField(c, at, "moment", false, {"step", "before_step"}) == "before_step";
    if (v.beforeStep && v.metric != "allocated")
        throw Error(at + ".moment",
                    "the peak before the step is planned for allocated memory: \"allocated\"");
    v.source = stringField(c, at, "source", true);
    v.scenarioPath = resolved(folder, stringField(c, at, "scenario", true));
    v.knownMiss = stringField(c, at, "open", false);
    const int given = c.contains("measured_bytes") + c.contains("measured_gib") + c.contains("trace");
    if (given != 1)
        throw Error(at, "needs exactly one of \"measured_bytes\", \"measured_gib\" and \"trace\"");
    if (c.contains("trace")) {
        v.tracePath = resolved(folder, stringField(c, at, "trace", true));
        if (v.metric != "allocated")
            throw Error(at + ".metric", "a traced run is measured at its allocated peak: \"allocated\"");
        if (v.beforeStep)
            throw Error(at + ".moment", "a traced run is measured at its allocated peak, step included");
    } else {
        const char* key = c.contains("measured_bytes") ? "measured_bytes" : "measured_gib";
        if (!c[key].is_number() || !(c[key].get<double>() > 0) || c[key].get<double>() > 1e18)
            throw Error(at + "." + key, "must be a positive number");
        v.measuredBytes = c[key].get<double>() * (c.contains("measured_gib") ? kGiB : 1.0);
    }
    if (c.contains("between_steps_bytes")) {
        const nlohmann::json& b = c["between_steps_bytes"];
        if (!b.is_number() || !(b.get<double>() > 0) || b.get<double>() > 1e18)
            throw Error(at + ".between_steps_bytes", "must be a positive number");
        v.betweenStepsBytes = b.get<double>();
    }
    if (c.contains("plain_pytorch")) {
        if (!c["plain_pytorch"].is_boolean())
            throw Error(at + ".plain_pytorch", "must be true or false");
        v.plainPytorch = c["plain_pytorch"].get<bool>();
        if (v.plainPytorch && v.stack != "pytorch")
            throw Error(at + ".framework", "a case planned as plain PyTorch is \"pytorch\"");
    }
    if (c.contains("calibrate_on")) {
        const nlohmann::json& on = c["calibrate_on"];
        if (!on.is_array() || on.empty())
            throw Error(at + ".calibrate_on", "must be a non-empty list of case ids");
        for (std::size_t i = 0; i < on.size(); ++i) {
            if (!on[i].is_string())
                throw Error(at + ".calibrate_on[" + std::to_string(i) + "]", "must be a case id");
            v.calibrateOn.push_back(on[i].get<std::string>());
        }
    }
    return v;
}

// The estimate's figure for the counter the run reported, on the rank it reported (Megatron logs the last
// pipeline stage, which writes tensorboard; the others the busiest rank). "active" counts what allocated
// counts while no block waits on another stream (record_stream), which the planned step never does.
// "device" is the whole GPU's use (reserved, the CUDA context and NCCL): what a claim that a run fits on a
// card of a given size measures.
double estimatedFor(const ValidationCase& c, const Estimate& est) {
    if (c.metric == "device")
        return est.peakBytes;
    const bool reserved = c.metric == "reserved";
    if (c.beforeStep) {
        double most = 0;
        for (const StageEstimate& r : est.ranks)
            most = std::max(most, r.allocatedBeforeStepBytes);
        return c.lastStage && !est.ranks.empty() ? est.ranks.back().allocatedBeforeStepBytes : most;
    }
    if (c.lastStage && !est.ranks.empty())
        return reserved ? est.ranks.back().reservedBytes : est.ranks.back().allocatedBytes;
    return reserved ? est.reservedPeakBytes : est.allocatedPeakBytes;
}

// The same workload planned without a framework profile: what Headroom estimated before the profiles.
Scenario asPlainPytorch(const Scenario& sc) {
    nlohmann::json doc = sc.document;
    if (sc.mode == Mode::Inference) {
        doc["inference"]["framework"] = "pytorch";
        return scenarioFromJson(doc, sc.baseDir);
    }
    doc["training"]["framework"] = "pytorch";
    if (doc["training"].value("activation_checkpointing", "") == "selective_op")
        doc["training"]["activation_checkpointing"] = "selective";
    return scenarioFromJson(doc, sc.baseDir);
}

std::string percent(double e) {
    char b[32];
    std::snprintf(b, sizeof b, "%+.1f%%", 100 * e);
    std::string s = b;
    if (s.front() == '-')
        s.replace(0, 1, "\u2212"); // the minus sign the README's tables use
    return s;
}

std::string gib(double bytes) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", bytes / kGiB);
    return b;
}

std::string magnitude(double e) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f%%", 100 * e);
    return b;
}

std::string summaryLine(const ErrorSummary& s) {
    std::ostringstream o;
    o << s.runs << (s.runs == 1 ? " run" : " runs") << ", median " << magnitude(s.median) << " off, worst "
      << magnitude(s.worst) << ", " << s.within5 << " within 5%";
    if (s.knownMisses)
        o << " (" << s.knownMisses << " known " << (s.knownMisses == 1 ? "miss" : "misses") << ")";
    return o.str();
}

} // namespace

ValidationCases loadValidationCases(const std::string& path) {
    try {
        nlohmann::json doc;
        try {
            doc = nlohmann::json::parse(readTextFile(path, 16u << 20));
        } catch (const nlohmann::json::exception& e) {
            throw Error("", jsonExceptionText(e));
        }
        requireSchema(doc, kCasesSchema);
        if (!doc.contains("cases") || !doc["cases"].is_array())
            throw Error("cases", "must be a list");
        ValidationCases out;
        out.file = path;
        const std::string folder = folderOf(path);
        std::set<std::string> ids;
        for (std::size_t i = 0; i < doc["cases"].size(); ++i) {
            const std::string at = "cases[" + std::to_string(i) + "]";
            out.cases.push_back(caseFromJson(doc["cases"][i], at, folder));
            if (!ids.insert(out.cases.back().id).second)
                throw Error(at + ".id", "\"" + out.cases.back().id + "\" is used twice");
        }
        for (std::size_t i = 0; i < out.cases.size(); ++i)
            for (std::size_t k = 0; k < out.cases[i].calibrateOn.size(); ++k) {
                const std::string& id = out.cases[i].calibrateOn[k];
                const auto it = std::find_if(out.cases.begin(), out.cases.end(),
                                             [&](const ValidationCase& c) { return c.id == id; });
                const std::string at =
                    "cases[" + std::to_string(i) + "].calibrate_on[" + std::to_string(k) + "]";
                if (it == out.cases.end())
                    throw Error(at, "no case has the id \"" + id + "\"");
                if (it->tracePath.empty())
                    throw Error(at, "\"" + id + "\" has no trace to calibrate from");
            }
        return out;
    } catch (const Error& e) {
        throw Error(e.where().empty() ? path : path + ": " + e.where(), e.why());
    }
}

namespace {

// |error| statistics of (error, known miss) pairs.
ErrorSummary summarizeValues(const std::vector<std::pair<double, bool>>& values) {
    ErrorSummary s;
    std::vector<double> errors;
    for (const auto& [error, knownMiss] : values) {
        errors.push_back(std::abs(error));
        s.within5 += errors.back() <= 0.05;
        s.knownMisses += knownMiss;
    }
    s.runs = errors.size();
    if (errors.empty())
        return s;
    std::sort(errors.begin(), errors.end());
    const std::size_t n = errors.size();
    s.median = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
    s.worst = errors.back();
    return s;
}

} // namespace

ErrorSummary summarizeErrors(const std::vector<const CaseResult*>& results) {
    std::vector<std::pair<double, bool>> values;
    for (const CaseResult* r : results)
        values.emplace_back(r->error(), !r->c->knownMiss.empty());
    return summarizeValues(values);
}

ErrorSummary summarizeCounter(const std::vector<const CaseResult*>& results, const std::string& counter) {
    std::vector<std::pair<double, bool>> values;
    for (const CaseResult* r : results) {
        const CounterReading& k = counter == "reserved" ? r->reserved : r->active;
        if (r->traced && k.measured > 0)
            values.emplace_back(k.error(), !r->c->knownMiss.empty());
    }
    return summarizeValues(values);
}

Validation runValidation(std::vector<ValidationCases> files, const AttributionRules& rules) {
    Validation v;
    v.files = std::move(files);
    for (const ValidationCases& f : v.files) {
        // Each trace and each scenario is read once, whether it is measured or calibrates another case.
        std::map<std::string, std::shared_ptr<LoadedTrace>> traces;
        std::map<std::string, Scenario> scenarios;
        // A calibration depends only on the runs it is fitted to: rows calibrated on the same ones share it
        // (23 rows are planned from the medium model's 128-token runs).
        std::map<std::vector<std::string>, Calibration> calibrations;
        auto traceOf = [&](const ValidationCase& c) -> LoadedTrace& {
            auto& t = traces[c.tracePath];
            if (!t) {
                t = loadTrace(c.tracePath);
                if (t->indexes.empty())
                    throw Error(c.tracePath, "the trace has no devices");
            }
            return *t;
        };
        auto scenarioOf = [&](const ValidationCase& c) -> const Scenario& {
            auto it = scenarios.find(c.scenarioPath);
            if (it == scenarios.end())
                it = scenarios.emplace(c.scenarioPath, loadScenarioFile(c.scenarioPath)).first;
            if (!c.plainPytorch)
                return it->second;
            const std::string key = c.scenarioPath + "\n(plain PyTorch)";
            auto plain = scenarios.find(key);
            if (plain == scenarios.end())
                plain = scenarios.emplace(key, asPlainPytorch(it->second)).first;
            return plain->second;
        };
        for (const ValidationCase& c : f.cases) {
            CaseResult r;
            r.c = &c;
            Scenario sc = scenarioOf(c);
            for (const std::string& w : sc.warnings)
                r.warnings.push_back(c.id + ": " + w);
            if (!c.calibrateOn.empty()) {
                auto known = calibrations.find(c.calibrateOn);
                if (known == calibrations.end()) {
                    std::vector<CalibrationInput> runs;
                    for (const std::string& id : c.calibrateOn) {
                        const ValidationCase& on =
                            *std::find_if(f.cases.begin(), f.cases.end(),
                                          [&](const ValidationCase& x) { return x.id == id; });
                        LoadedTrace& t = traceOf(on);
                        runs.push_back({&scenarioOf(on), &t.trace, t.indexes[busiestDevice(t.summary)].get(),
                                        on.tracePath});
                    }
                    // A calibration refused (one no scenario holds: core/compare/calibration.cpp) names the
                    // case that asked for it.
                    try {
                        known = calibrations.emplace(c.calibrateOn, calibrate(runs, rules).factors).first;
                    } catch (const Error& e) {
                        throw Error(f.file + ": cases[" + std::to_string(&c - f.cases.data()) +
                                        "].calibrate_on",
                                    e.where() + ": " + e.why());
                    }
                }
                sc.calibration = known->second;
            }
            r.calibrated = sc.calibration.present;
            const Estimate est = estimate(sc);
            if (c.tracePath.empty()) {
                r.measured = c.measuredBytes;
                r.estimated = estimatedFor(c, est);
            } else {
                LoadedTrace& t = traceOf(c);
                const TraceIndex& index = *t.indexes[busiestDevice(t.summary)];
                // A traced case is measured at its allocated peak: a file that records none (an nvidia-smi
                // log) was measured at 0 bytes and "0.0% off", a snapshot without events at whatever was
                // alive when it was taken.
                const char* unfit = !index.device().hasAllocatedTotals
                                        ? "records no allocated bytes (an nvidia-smi log)"
                                    : index.device().stateOnly()
                                        ? "records no allocation events, only the memory when the snapshot "
                                          "was taken"
                                        : nullptr;
                if (unfit)
                    throw Error(f.file + ": cases[" + std::to_string(&c - f.cases.data()) + "].trace",
                                c.tracePath + " " + unfit +
                                    ": a traced case is measured at the run's allocated peak; give a "
                                    "published figure instead (measured_gib), or a snapshot recorded with "
                                    "torch.cuda.memory._record_memory_history()");
                const Comparison cmp = compareAtPeak(sc, est, t.trace, index, rules);
                r.traced = true;
                // A first step's trace is checked against the later step a plan describes.
                r.measured = static_cast<double>(cmp.firstStep ? cmp.laterStepPeak : cmp.measured.total);
                r.estimated = static_cast<double>(cmp.estimatedTotal);
                r.measuredByCategory = cmp.measured.bytes;
                r.estimatedByCategory = cmp.estimated;
                const DeviceSummary& d = t.summary.devices[busiestDevice(t.summary)];
                if (!cmp.firstStep) {
                    // The planned step keeps no block waiting on another stream: active is allocated.
                    if (d.peakReserved > 0)
                        r.reserved = {static_cast<double>(d.peakReserved), est.reservedPeakBytes};
                    if (d.peakActive > 0)
                        r.active = {static_cast<double>(d.peakActive), est.allocatedPeakBytes};
                }
            }
            // (Not for a calibrated plan: its factors were measured against its own profile's plan, and
            // on the plain one they would say nothing.)
            if (sc.training.framework != Framework::PyTorch && sc.mode == Mode::Training &&
                r.traced == false && !r.calibrated)
                r.plainPytorch = estimatedFor(c, estimate(asPlainPytorch(sc)));
            v.results.push_back(std::move(r));
        }
    }
    return v;
}

nlohmann::json validationToJson(const Validation& v) {
    nlohmann::json runs = nlohmann::json::array();
    for (const CaseResult& r : v.results) {
        nlohmann::json j = {
            {"id", r.c->id},
            {"role", r.c->role},
            {"framework", r.c->stack},
            {"metric", r.c->metric},
            {"measured_bytes", std::llround(r.measured)},
            {"estimate_bytes", std::llround(r.estimated)},
            {"relative_error", r.error()},
            {"known_miss", r.c->knownMiss.empty() ? nlohmann::json() : nlohmann::json(r.c->knownMiss)}};
        if (!r.c->calibrateOn.empty())
            j["calibrated_on"] = r.c->calibrateOn;
        j["calibrated"] = r.calibrated;
        if (r.plainPytorch > 0)
            j["plain_pytorch_bytes"] = std::llround(r.plainPytorch);
        if (r.traced) {
            nlohmann::json m, e;
            for (std::size_t i = 0; i < kMeasuredCategories; ++i) {
                m[measuredCategoryKey(static_cast<MeasuredCategory>(i))] = r.measuredByCategory[i];
                e[measuredCategoryKey(static_cast<MeasuredCategory>(i))] = r.estimatedByCategory[i];
            }
            j["measured_by_category"] = m;
            j["estimate_by_category"] = e;
            for (const auto& [key, k] : {std::pair{"reserved", &r.reserved}, std::pair{"active", &r.active}})
                if (k->measured > 0)
                    j[key] = {{"measured_bytes", std::llround(k->measured)},
                              {"estimate_bytes", std::llround(k->estimated)},
                              {"relative_error", k->error()}};
        }
        runs.push_back(j);
    }
    auto summaryJson = [](const ErrorSummary& s) {
        return nlohmann::json{{"runs", s.runs},
                              {"median_abs_error", s.median},
                              {"worst_abs_error", s.worst},
                              {"within_5_percent", s.within5},
                              {"known_misses", s.knownMisses}};
    };
    nlohmann::json summary;
    for (const char* role : {"fit", "validate"}) {
        std::vector<const CaseResult*> all;
        std::map<std::string, std::vector<const CaseResult*>> byStack, byMetric;
        for (const CaseResult& r : v.results)
            if (r.c->role == role) {
                all.push_back(&r);
                byStack[r.c->stack].push_back(&r);
                byMetric[r.c->metric].push_back(&r);
            }
        nlohmann::json s = summaryJson(summarizeErrors(all));
        for (const auto& [k, rs] : byStack)
            s["by_framework"][k] = summaryJson(summarizeErrors(rs));
        for (const auto& [k, rs] : byMetric)
            s["by_metric"][k] = summaryJson(summarizeErrors(rs));
        // Predictions from a calibration on other runs test calibration, not the profiles: apart too.
        std::vector<const CaseResult*> calibrated;
        for (const CaseResult* r : all)
            if (r->calibrated)
                calibrated.push_back(r);
        if (!calibrated.empty())
            s["calibrated"] = summaryJson(summarizeErrors(calibrated));
        // A traced run records every counter: each one's errors over the traced runs.
        std::vector<const CaseResult*> traced;
        for (const CaseResult* r : all)
            if (r->traced)
                traced.push_back(r);
        if (!traced.empty()) {
            s["traced_counters"]["allocated"] = summaryJson(summarizeErrors(traced));
            for (const char* counter : {"reserved", "active"})
                if (const ErrorSummary k = summarizeCounter(traced, counter); k.runs > 0)
                    s["traced_counters"][counter] = summaryJson(k);
        }
        summary[role] = s;
    }
    nlohmann::json files = nlohmann::json::array();
    for (const ValidationCases& f : v.files)
        files.push_back(f.file);
    return {{"schema", kValidationSchema}, {"cases_files", files}, {"runs", runs}, {"summary", summary}};
}

namespace {

// One role's runs, a row each.
std::string runTable(const std::vector<const CaseResult*>& rs) {
    std::ostringstream o;
    const bool plain =
        std::any_of(rs.begin(), rs.end(), [](const CaseResult* r) { return r->plainPytorch > 0; });
    const bool calibrated =
        std::any_of(rs.begin(), rs.end(), [](const CaseResult* r) { return r->calibrated; });
    o << "| run | framework | counter | measured GiB | estimate GiB | error |"
      << (calibrated ? " calibrated on |" : "") << (plain ? " plain PyTorch |" : "") << "\n";
    o << "|---|---|---|---|---|---|" << (calibrated ? "---|" : "") << (plain ? "---|" : "") << "\n";
    for (const CaseResult* r : rs) {
        o << "| " << r->c->title << " | " << r->c->stack << " | " << r->c->metric << " | " << gib(r->measured)
          << " | " << gib(r->estimated) << " | " << percent(r->error())
          << (r->c->knownMiss.empty() ? "" : " (known miss)") << " |";
        if (calibrated) {
            std::string on;
            for (const std::string& id : r->c->calibrateOn)
                on += (on.empty() ? "`" : ", `") + id + "`";
            o << " " << (!on.empty() ? on : r->calibrated ? "its scenario's" : "\u2014") << " |";
        }
        if (plain)
            o << " "
              << (r->plainPytorch > 0
                      ? gib(r->plainPytorch) + " (" + percent(r->plainPytorch / r->measured - 1) + ")"
                      : "\u2014")
              << " |";
        o << "\n";
    }
    return o.str();
}

} // namespace

std::string validationMarkdown(const Validation& v, bool runs) {
    std::ostringstream o;
    for (const char* role : {"fit", "validate"}) {
        std::vector<const CaseResult*> rs;
        for (const CaseResult& r : v.results)
            if (r.c->role == role)
                rs.push_back(&r);
        if (rs.empty())
            continue;
        o << (std::string(role) == "fit" ? "**fit** (used to choose a rule or a constant): "
                                         : "**validate** (never used to choose one): ")
          << summaryLine(summarizeErrors(rs)) << "\n";
        if (runs)
            o << "\n" << runTable(rs);
        // Per framework and per counter, when there is more than one of either.
        for (const bool byStack : {true, false}) {
            std::map<std::string, std::vector<const CaseResult*>> groups;
            for (const CaseResult* r : rs)
                groups[byStack ? r->c->stack : r->c->metric].push_back(r);
            if (groups.size() < 2)
                continue;
            o << "\n" << (byStack ? "By framework: " : "By counter: ");
            bool first = true;
            for (const auto& [k, g] : groups) {
                o << (first ? "" : "; ") << k << " " << summaryLine(summarizeErrors(g));
                first = false;
            }
            o << ".\n";
        }
        std::vector<const CaseResult*> traced;
        for (const CaseResult* r : rs)
            if (r->traced)
                traced.push_back(r);
        auto everyCounter = [&](const std::vector<const CaseResult*>& group) {
            o << "allocated " << summaryLine(summarizeErrors(group));
            for (const char* counter : {"reserved", "active"})
                if (const ErrorSummary k = summarizeCounter(group, counter); k.runs > 0)
                    o << "; " << counter << " " << summaryLine(k);
        };
        if (!traced.empty()) {
            o << "\nEvery counter the traced runs record: ";
            everyCounter(traced);
            o << ".\n";
            // The same per framework: a profile planning the code it was read from and the plain one
            // planning code it does not know are different questions.
            std::map<std::string, std::vector<const CaseResult*>> byStack;
            for (const CaseResult* r : traced)
                byStack[r->c->stack].push_back(r);
            if (byStack.size() > 1) {
                o << "\nEvery counter, by framework: ";
                bool first = true;
                for (const auto& [stack, group] : byStack) {
                    o << (first ? "" : "; ") << stack << ": ";
                    everyCounter(group);
                    first = false;
                }
                o << ".\n";
            }
        }
        std::vector<const CaseResult*> calibrated, planned;
        for (const CaseResult* r : rs)
            (r->calibrated ? calibrated : planned).push_back(r);
        if (!calibrated.empty() && !planned.empty())
            o << "\nCalibrated on recorded runs (`calibrate_on`, or the scenario's own): "
              << summaryLine(summarizeErrors(calibrated))
              << "; planned as they come: " << summaryLine(summarizeErrors(planned)) << ".\n";
        o << "\n";
    }
    if (!runs)
        return o.str();
    // Traced runs: where the bytes were at the peak, as attribution placed them.
    std::vector<const CaseResult*> traced;
    for (const CaseResult& r : v.results)
        if (r.traced && r.c->calibrateOn.empty()) // a calibrated case measures a trace listed already
            traced.push_back(&r);
    if (!traced.empty()) {
        o << "At each traced run's allocated peak, by category (bytes):\n\n"
          << "| run | measured | model state | activations + KV cache | temporaries + workspaces | "
             "unattributed |\n"
          << "|---|---|---|---|---|---|\n";
        auto count = [](std::int64_t b) {
            return formatCount(static_cast<std::uint64_t>(std::max<std::int64_t>(b, 0)));
        };
        for (const CaseResult* r : traced) {
            const auto& m = r->measuredByCategory;
            auto at = [&](MeasuredCategory c) { return m[static_cast<std::size_t>(c)]; };
            o << "| `" << r->c->id << "` | " << count(static_cast<std::int64_t>(r->measured)) << " | "
              << count(at(MeasuredCategory::Weights) + at(MeasuredCategory::Gradients) +
                       at(MeasuredCategory::OptimizerStates))
              << " | " << count(at(MeasuredCategory::Activations) + at(MeasuredCategory::KvCache)) << " | "
              << count(at(MeasuredCategory::Temporaries) + at(MeasuredCategory::Workspaces)) << " | "
              << count(at(MeasuredCategory::Unattributed)) << " |\n";
        }
        o << "\n";
    }
    std::string s = o.str();
    while (s.size() >= 2 && s[s.size() - 1] == '\n' && s[s.size() - 2] == '\n')
        s.pop_back();
    return s;
}

} // namespace headroom
