// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/io/bytesformat.h"
#include "core/serve/estimate.h"

#include <functional>
#include <string>

namespace headroom {

// An estimate in words: one description read by the window's verdict, the CLI and the report, so the three
// never say different things. `strong` marks what a reader's eye should land on (the window makes it bold;
// plain text leaves it as it is).
struct EstimateWords {
    std::string verdict; // "Fits: 24.66 GiB headroom (69.0% of 79.65 GiB used)", or what does not fit
    std::string setup; // "meta-llama/Meta-Llama-3-8B — 8 × H100-SXM-80GB, data 8 (zero2) × tensor 1 × ..."
    std::string
        limits; // "largest micro-batch that fits: 1 — PyTorch would report ... allocated, ... reserved"
    // Training: how the framework profile has held against the runs the project checks; a serving engine
    // (vLLM, SGLang): how its plans have held against the start-up logs (core/compare/trackrecord.h); empty
    // otherwise.
    std::string record;
};
EstimateWords describeEstimate(const Scenario& sc, const Estimate& est, ByteUnit unit,
                               const std::function<std::string(const std::string&)>& strong = {});

} // namespace headroom
