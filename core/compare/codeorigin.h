// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/attribution.h"
#include "core/plan/scenario.h"
#include "core/trace/trace.h"
#include "core/trace/traceindex.h"

#include <cstdint>
#include <optional>
#include <string>

namespace headroom {

// Which framework's code made a recorded run's memory, as the stack frames of what is alive at its peak name
// it. A plan of the run with another profile is off by what that code keeps and the profile does not:
// CS336's hand-written attention planned as plain PyTorch is 11.7% under at 1,024 tokens, where the
// cs336_basics profile, read from that code, is within 0.1%. A stack that names several frameworks is the
// outermost one's that plans its own code (DeepSpeed's engine or Unsloth around transformers' modules).
struct CodeOrigin {
    bool found = false;
    Framework framework = Framework::PyTorch; // when found
    std::string file;                         // its file that allocated the most, as the frame gives it
    std::int64_t bytes = 0;                   // live at the peak with a stack naming it
    std::int64_t stacked = 0;                 // live at the peak with any stack
};

// Found when the allocations naming one framework hold at least a quarter of the peak's bytes that have a
// stack (a run's own script, torch's modules and the CUDA runtime make the rest).
CodeOrigin codeOrigin(const Trace& trace, const Attribution& atPeak);

// Whether the run stepped `code`'s own optimizer: at least half the bytes its optimizer's stacks allocated
// (optimizerStack) were made by that framework's source, as their innermost Python frame says
// (cs336_basics/optimizer.py's AdamW; a loop of the framework's may as well call torch.optim's). None when
// the run allocated nothing in an optimizer.
std::optional<bool> stepsOwnOptimizer(const Trace& trace, const TraceIndex& index, Framework code,
                                      const AttributionRules& rules);

// One sentence for a plan with `planned`'s profile: which profile plans this code op by op, with the
// evidence; "" when none was found or the plan already has it.
std::string codeOriginAdvice(const CodeOrigin& origin, Framework planned);

} // namespace headroom
