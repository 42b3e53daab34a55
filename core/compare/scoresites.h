// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/scenario.h"
#include "core/trace/trace.h"
#include "core/trace/traceindex.h"

#include <cstdint>
#include <vector>

namespace headroom {

// Which lines of a run's code compute the attention's scores, read from the code's calls where the tensors'
// sizes cannot tell. At some lengths a score tensor (batch x heads x tokens^2) has the size of a
// tokens-linear one (CS336's medium model at 256 tokens in fp32: 16 MiB is both b·a·s² and b·s·f), and one
// run alone then cannot say by sizes which factor its bytes belong to. The stacks can: the user's frames of
// every allocation form a call tree (file, function and line at each level), and the lines under one call
// are one computation. A call whose subtree allocates per-head-per-query vectors (b·a·s: a softmax's max
// and sum over the keys; nothing outside attention has that shape) is attention's; a call whose subtree
// allocates tokens-linear tensors of a size no score has and no such vector is not. A tensor takes the
// reading of its nearest enclosing call that shows either, and never one from a call that spans more than
// a sublayer (whose subtree allocates per-token vectors, b·s: a norm's statistics or the loss's), nor a
// tokens-linear reading in a run whose attention shows no b·a·s at all (a softmax done inside one kernel,
// torch's own: then a line's tokens-linear neighbours say nothing). A run that shows no per-token vector
// (norms fused into one kernel) reads nothing: there no call is seen to span a sublayer. Whatever no call
// tells stays untold.
class ScoreSites {
public:
    enum class Reading : std::uint8_t { Untold, Scores, TokensLinear };
    ScoreSites(const Scenario& sc, const Trace& trace, const TraceIndex& index);
    // The reading of an allocation by its stack (Trace::stacks).
    Reading reading(std::uint32_t stack) const {
        return stack < m_readings.size() ? m_readings[stack] : Reading::Untold;
    }

private:
    std::vector<Reading> m_readings; // by stack
};

} // namespace headroom
