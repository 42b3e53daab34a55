// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/scenario.h"

namespace headroom {

// Checks that the parallel layout fits the cluster and the model (num_gpus a multiple of TP x PP x CP, TP
// dividing the heads, no more pipeline stages than layers, EP dividing DP and the experts, CP dividing the
// sequence). Throws Error naming the scenario field ("cluster.tensor_parallel"). The scenario reader calls
// it, and so does every what-if, which edits a parsed scenario instead of re-reading a document.
void checkLayout(const Scenario& sc);

} // namespace headroom
