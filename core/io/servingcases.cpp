// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/servingcases.h"

#include "core/error.h"
#include "core/fileio.h"
#include "core/io/bytesformat.h"
#include "core/io/jsontext.h"
#include "core/io/scenariojson.h"
#include "core/serve/estimate.h"

#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

namespace headroom {

using nlohmann::json;

namespace {

constexpr double kGiB = 1073741824.0;
// The parts a log can give, in the order the table shows them.
constexpr const char* kParts[] = {"budget", "weights", "non_torch", "profiled", "available_kv"};

std::string text(const json& o, const std::string& at, const char* key, bool required = true) {
    const auto it = o.find(key);
    if (it == o.end()) {
        if (required)
            throw Error(at + "." + key, "is missing");
        return {};
    }
    if (!it->is_string() || it->get<std::string>().empty())
        throw Error(at + "." + key, "must be a non-empty string");
    return it->get<std::string>();
}

ServingCase caseFromJson(const json& o, const std::string& at, const std::filesystem::path& folder) {
    if (!o.is_object())
        throw Error(at, "must be an object");
    ServingCase c;
    c.id = text(o, at, "id");
    c.title = text(o, at, "title");
    c.role = text(o, at, "role");
    if (c.role != "fit" && c.role != "validate")
        throw Error(at + ".role", "must be \"fit\" or \"validate\", not \"" + c.role + "\"");
    c.source = text(o, at, "source");
    const std::filesystem::path scenario(text(o, at, "scenario"));
    c.scenarioPath = (scenario.is_absolute() ? scenario : folder / scenario).string();
    const auto logged = o.find("logged_gib");
    if (logged != o.end()) {
        if (!logged->is_object())
            throw Error(at + ".logged_gib", "must be an object of GiB figures");
        for (const auto& [key, value] : logged->items()) {
            double* part = key == "budget"         ? &c.budget
                           : key == "weights"      ? &c.weights
                           : key == "non_torch"    ? &c.nonTorch
                           : key == "profiled"     ? &c.profiled
                           : key == "available_kv" ? &c.availableKv
                                                   : nullptr;
            if (!part)
                throw Error(at + ".logged_gib." + key,
                            "not a part of the budget (budget, weights, non_torch, profiled, available_kv)");
            if (!value.is_number() || !std::isfinite(value.get<double>()) ||
                std::abs(value.get<double>()) > 1e6)
                throw Error(at + ".logged_gib." + key, "must be a number of GiB");
            *part = value.get<double>() * kGiB;
        }
    }
    if (const auto t = o.find("logged_tokens"); t != o.end()) {
        if (!t->is_number_integer() || t->get<long long>() < 0 || t->get<long long>() > (1LL << 40))
            throw Error(at + ".logged_tokens", "must be a whole number of tokens");
        c.tokens = t->get<long long>();
    }
    if (const auto miss = o.find("known_miss"); miss != o.end()) {
        if (!miss->is_object())
            throw Error(at + ".known_miss", "must be an object with \"part\" and \"why\"");
        const auto parts = miss->find("parts");
        if (parts == miss->end() || !parts->is_array() || parts->empty())
            throw Error(at + ".known_miss.parts", "must list the parts that miss");
        for (std::size_t k = 0; k < parts->size(); ++k) {
            const json& p = (*parts)[k];
            const std::string name = p.is_string() ? p.get<std::string>() : "";
            if (name != "budget" && name != "weights" && name != "non_torch" && name != "profiled" &&
                name != "available_kv" && name != "tokens")
                throw Error(at + ".known_miss.parts[" + std::to_string(k) + "]",
                            "must name a part (budget, weights, non_torch, profiled, available_kv, tokens)");
            c.knownMissParts.push_back(name);
        }
        c.knownMissWhy = text(*miss, at + ".known_miss", "why");
    }
    return c;
}

} // namespace

ServingCases servingCasesFromJson(const json& doc, const std::string& folder) {
    requireSchema(doc, kServingCasesSchema);
    if (!doc.contains("cases") || !doc["cases"].is_array())
        throw Error("cases", "must be a list");
    ServingCases out;
    std::set<std::string> ids;
    for (std::size_t i = 0; i < doc["cases"].size(); ++i) {
        const std::string at = "cases[" + std::to_string(i) + "]";
        out.cases.push_back(caseFromJson(doc["cases"][i], at, std::filesystem::path(folder)));
        if (!ids.insert(out.cases.back().id).second)
            throw Error(at + ".id", "\"" + out.cases.back().id + "\" is used twice");
    }
    return out;
}

ServingCases loadServingCases(const std::string& path) {
    try {
        json doc;
        try {
            doc = json::parse(readTextFile(path, 4u << 20));
        } catch (const json::exception& e) {
            throw Error("", jsonExceptionText(e));
        }
        ServingCases out = servingCasesFromJson(doc, std::filesystem::path(path).parent_path().string());
        out.file = path;
        return out;
    } catch (const Error& e) {
        throw Error(e.where().empty() ? path : path + ": " + e.where(), e.why());
    }
}

bool ServingCase::knownMiss(const std::string& part) const {
    for (const std::string& p : knownMissParts)
        if (p == part)
            return true;
    return false;
}

bool ServingCaseResult::holds() const {
    for (const ServingPart& p : parts)
        if (!p.within && !c->knownMiss(p.name))
            return false;
    return true;
}

std::vector<ServingCaseResult> runServingCases(const ServingCases& cases) {
    std::vector<ServingCaseResult> out;
    for (const ServingCase& c : cases.cases) {
        const Scenario sc = loadScenarioFile(c.scenarioPath);
        const Estimate est = estimate(sc);
        const ServingEstimate& sv = est.serving;
        ServingCaseResult r;
        r.c = &c;
        r.engineVersion = sv.engineVersion;
        // vLLM's "peak activation" holds its CUDA graph estimate where the release counts it.
        const double profiled = sv.profiledBytes + sv.cudaGraphBytes;
        // SGLang's "mem usage" after the load counts the allocator's segments, not the tensors in them.
        const double weights = est.perGpu[Category::Weights] + sv.loadReservedBytes;
        const double planned[] = {sv.budgetBytes, weights, sv.nonTorchBytes, profiled, sv.availableBytes};
        const double logged[] = {c.budget, c.weights, c.nonTorch, c.profiled, c.availableKv};
        for (std::size_t i = 0; i < std::size(kParts); ++i) {
            if (logged[i] < 0)
                continue;
            ServingPart p{kParts[i], logged[i], planned[i], true};
            // The pool's bytes are held to the pool's bound when the log gives no token count.
            p.within = i == 4 && c.tokens < 0 ? std::abs(planned[i] / logged[i] - 1) <= kServingPoolBound
                                              : std::abs(planned[i] - logged[i]) <= kServingPartBoundBytes;
            r.parts.push_back(p);
        }
        if (c.tokens >= 0) {
            ServingPart p{"tokens", static_cast<double>(c.tokens), static_cast<double>(sv.kvCacheTokens),
                          true};
            p.within = c.tokens > 0 && std::abs(p.planned / p.logged - 1) <= kServingPoolBound;
            r.parts.push_back(p);
        }
        out.push_back(std::move(r));
    }
    return out;
}

json servingCasesToJson(const std::vector<ServingCaseResult>& results) {
    json runs = json::array();
    for (const ServingCaseResult& r : results) {
        json parts = json::object();
        for (const ServingPart& p : r.parts) {
            parts[p.name] = {{"logged", std::llround(p.logged)},
                             {"planned", std::llround(p.planned)},
                             {"within", p.within}};
        }
        json run = {{"id", r.c->id},  {"role", r.c->role},  {"engine_version", r.engineVersion},
                    {"parts", parts}, {"holds", r.holds()}, {"source", r.c->source}};
        if (!r.c->knownMissParts.empty())
            run["known_miss"] = {{"parts", r.c->knownMissParts}, {"why", r.c->knownMissWhy}};
        runs.push_back(std::move(run));
    }
    return {{"schema", "headroom.serving-validation/1"},
            {"bounds", {{"part_bytes", kServingPartBoundBytes}, {"pool_relative", kServingPoolBound}}},
            {"runs", runs}};
}

std::string servingCasesMarkdown(const std::vector<ServingCaseResult>& results) {
    std::ostringstream out;
    auto gib = [](double b) {
        std::ostringstream s;
        s.setf(std::ios::fixed);
        s.precision(2);
        s << b / kGiB;
        return s.str();
    };
    for (const char* role : {"fit", "validate"}) {
        std::size_t n = 0, within = 0, named = 0, unexplained = 0;
        for (const ServingCaseResult& r : results)
            if (r.c->role == role) {
                ++n;
                bool all = true;
                for (const ServingPart& p : r.parts)
                    all = all && p.within;
                within += all ? 1 : 0;
                named += !all && r.holds() ? 1 : 0;
                unexplained += r.holds() ? 0 : 1;
            }
        if (n == 0)
            continue;
        out << "**" << role << "**"
            << (std::string(role) == "fit" ? " (used to choose a rule or a constant)"
                                           : " (never used to choose one)")
            << ": " << n << " run" << (n == 1 ? "" : "s") << ", " << within
            << " with every part within its bound";
        if (named > 0)
            out << ", " << named << " with named misses";
        if (unexplained > 0)
            out << ", " << unexplained << " with misses nobody has explained";
        out << "\n\n";
        out << "| run | release | budget | weights | non-torch | profiled step | KV memory | KV tokens |\n"
            << "|---|---|---|---|---|---|---|---|\n";
        for (const ServingCaseResult& r : results) {
            if (r.c->role != role)
                continue;
            out << "| " << r.c->title << " | " << r.engineVersion;
            for (const char* name :
                 {"budget", "weights", "non_torch", "profiled", "available_kv", "tokens"}) {
                const ServingPart* part = nullptr;
                for (const ServingPart& p : r.parts)
                    if (p.name == name)
                        part = &p;
                out << " | ";
                if (!part) {
                    out << "—";
                    continue;
                }
                const bool tokens = part->name == "tokens";
                const std::string logged =
                    tokens ? formatCount(static_cast<unsigned long long>(part->logged)) : gib(part->logged);
                const std::string planned =
                    tokens ? formatCount(static_cast<unsigned long long>(part->planned)) : gib(part->planned);
                out << logged << " / " << planned;
                if (!part->within)
                    out << (r.c->knownMiss(part->name) ? " (known miss)" : " (**miss**)");
            }
            out << " |\n";
        }
        out << "\n";
    }
    out << "Each cell: logged / planned, GiB per GPU (tokens for the pool). Bounds: 0.30 GiB for each part; "
           "the "
           "pool's tokens, or its memory where the log gives no count, within 3%.\n";
    return out.str();
}

} // namespace headroom
