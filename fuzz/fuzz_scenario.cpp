// SPDX-License-Identifier: GPL-3.0-or-later
// A scenario file as the CLI and the window read it: JSON text, validation, the estimate, the solvers
// (largest micro-batch and sequence, ranked savings) and the JSON output; and the same text as a serving
// cases file (its scenario files do not exist: each must fail as a clean Error). Anything but a clean Error
// is a finding: a JSON type_error escaping (it aborted the window), an overflow, a hang in a solver.
#include "core/error.h"
#include "core/io/estimatejson.h"
#include "core/io/scenariojson.h"
#include "core/io/servingcases.h"
#include "core/serve/estimate.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    try {
        const nlohmann::json doc =
            headroom::parseJsonText(std::string(reinterpret_cast<const char*>(data), size));
        // No file is read: a relative hf_config resolves under a directory that does not exist.
        const headroom::Scenario sc = headroom::scenarioFromJson(doc, "/nonexistent-headroom-fuzz");
        const headroom::Estimate est = headroom::estimate(sc);
        (void)headroom::estimateToJson(sc, est).dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
        (void)headroom::maxSequenceLength(sc);
        (void)headroom::savingsToJson(headroom::rankSavings(sc)).dump();
    } catch (const headroom::Error&) {
    }
    try {
        const nlohmann::json doc =
            headroom::parseJsonText(std::string(reinterpret_cast<const char*>(data), size));
        const headroom::ServingCases cases =
            headroom::servingCasesFromJson(doc, "/nonexistent-headroom-fuzz");
        (void)headroom::servingCasesMarkdown(headroom::runServingCases(cases));
    } catch (const headroom::Error&) {
    }
    return 0;
}
