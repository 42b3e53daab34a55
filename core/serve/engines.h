// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/stagemodel.h"

namespace headroom {

// Sizes an inference stage the way its engine does (plan's EngineSizer): vLLM's and SGLang's budget, profiled
// step, non-torch memory and KV pool; transformers' generate's DynamicCache. Nothing for engine "none".
void sizeEngine(const Scenario& sc, const InferenceShape& shape, StageModel& st);

// The engines' own defaults where the scenario leaves a setting out (docs/serving.md names each source).
int engineStepTokens(const Scenario& sc); // max_num_batched_tokens / chunked_prefill_size
int engineMaxSeqs(const Scenario& sc);    // max_num_seqs
double sglangStaticFraction(const Scenario& sc);

} // namespace headroom
