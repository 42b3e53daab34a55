// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/attributionrulesjson.h"

#include "core/error.h"
#include "core/fileio.h"

namespace headroom {

nlohmann::json attributionRulesToJson(const AttributionRules& rules) {
    nlohmann::json list = nlohmann::json::array();
    for (const AttributionRule& r : rules.rules) {
        nlohmann::json j = {{"match", r.match}};
        if (r.target == AttributionRule::Target::Backward)
            j["phase"] = "backward";
        else if (r.target == AttributionRule::Target::Optimizer)
            j["phase"] = "optimizer";
        else
            j["category"] = measuredCategoryKey(r.category);
        list.push_back(j);
    }
    return {{"schema", "headroom.attribution-rules/1"}, {"rules", list}};
}

AttributionRules attributionRulesFromJson(const nlohmann::json& doc) {
    if (!doc.is_object())
        throw Error("", "must be an object with \"schema\" and \"rules\"");
    if (!doc.contains("schema") || doc["schema"] != "headroom.attribution-rules/1")
        throw Error("schema", "must be \"headroom.attribution-rules/1\"");
    if (!doc.contains("rules") || !doc["rules"].is_array())
        throw Error("rules", "must be a list");
    AttributionRules out;
    for (std::size_t i = 0; i < doc["rules"].size(); ++i) {
        const nlohmann::json& r = doc["rules"][i];
        const std::string at = "rules[" + std::to_string(i) + "]";
        if (!r.is_object())
            throw Error(at, "must be an object with \"match\" and \"category\" or \"phase\"");
        if (!r.contains("match") || !r["match"].is_string() || r["match"].get<std::string>().empty())
            throw Error(at + ".match", "must be a non-empty string (a substring of a frame's name or file)");
        AttributionRule rule;
        rule.match = r["match"].get<std::string>();
        const bool hasCategory = r.contains("category"), hasPhase = r.contains("phase");
        if (hasCategory == hasPhase)
            throw Error(at, "needs exactly one of \"category\" and \"phase\"");
        if (hasPhase) {
            const std::string phase = r["phase"].is_string() ? r["phase"].get<std::string>() : "";
            if (phase == "backward")
                rule.target = AttributionRule::Target::Backward;
            else if (phase == "optimizer")
                rule.target = AttributionRule::Target::Optimizer;
            else
                throw Error(at + ".phase", "must be \"backward\" or \"optimizer\"");
        } else {
            const std::string key = r["category"].is_string() ? r["category"].get<std::string>() : "";
            if (!measuredCategoryFromKey(key, &rule.category) ||
                rule.category == MeasuredCategory::Unattributed)
                throw Error(at + ".category",
                            "must be one of weights, gradients, optimizer_states, activations, "
                            "temporaries, kv_cache, workspaces");
        }
        out.rules.push_back(std::move(rule));
    }
    return out;
}

AttributionRules loadAttributionRulesFile(const std::string& path) {
    try {
        const std::string text = readTextFile(path, 4u << 20);
        nlohmann::json doc;
        try {
            doc = nlohmann::json::parse(text);
        } catch (const nlohmann::json::exception& e) {
            throw Error("", jsonExceptionText(e));
        }
        return attributionRulesFromJson(doc);
    } catch (const Error& e) {
        throw Error(e.where().empty() ? path : path + ": " + e.where(), e.why());
    }
}

} // namespace headroom
