// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/codeprofile.h"

#include "core/io/scenariojson.h"
#include "core/plan/settingnames.h"
#include "core/serve/estimate.h"

#include <exception>

namespace headroom {

std::optional<Scenario> scenarioWithFramework(const Scenario& sc, Framework framework) {
    nlohmann::json doc = sc.document;
    const char* section = sc.mode == Mode::Training ? "training" : "inference";
    if (!doc.is_object() || !doc.contains(section) || !doc[section].is_object())
        return std::nullopt;
    doc[section]["framework"] = nameOf(frameworkNames(), framework);
    // cs336_basics' model returns every position's logits whatever a plain loop asked for
    // (inference.logits), as it keeps no cache whatever kv_cache said.
    if (framework == Framework::Cs336Basics && sc.mode == Mode::Inference)
        doc[section].erase("logits");
    doc.erase("calibration"); // its factors were measured against the scenario's own profile
    try {
        return scenarioFromJson(doc, sc.baseDir);
    } catch (const std::exception&) {
        return std::nullopt; // the profile does not plan this scenario (another parallelism, an unknown
                             // shape)
    }
}

std::optional<CodeProfilePlan> planWithFramework(const Scenario& sc, Framework framework) {
    const std::optional<Scenario> asCode = scenarioWithFramework(sc, framework);
    if (!asCode)
        return std::nullopt;
    const Estimate e = estimate(*asCode);
    std::int64_t total = 0;
    for (const std::int64_t v : estimateInMeasuredCategories(e))
        total = saturatingAdd(total, v);
    return CodeProfilePlan{static_cast<double>(total), e.reservedPeakBytes};
}

void planWithCodeProfile(Comparison& c, const Scenario& sc) {
    if (!c.code.found || c.code.framework == c.planned)
        return;
    if (const std::optional<CodeProfilePlan> p = planWithFramework(sc, c.code.framework)) {
        c.codePlanAllocated = p->allocated;
        c.codePlanReserved = p->reserved;
    }
}

} // namespace headroom
