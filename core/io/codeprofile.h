// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/comparison.h"
#include "core/plan/scenario.h"

#include <optional>

namespace headroom {

// The same scenario planned with another framework's profile: its document read again with the mode's
// `framework` set to `framework`, so every rule the reader holds for that profile applies (cs336_basics
// runs whole on one GPU, of a model whose shape is given), without its calibration (whose factors were
// measured against the scenario's own profile). Nothing when the reader refuses it there.
std::optional<Scenario> scenarioWithFramework(const Scenario& sc, Framework framework);

// What the scenario planned with `framework`'s profile allocates (the measured categories, as compare counts
// them) and reserves at its peak; nothing when that profile cannot plan it (scenarioWithFramework).
struct CodeProfilePlan {
    double allocated = 0, reserved = 0;
};
std::optional<CodeProfilePlan> planWithFramework(const Scenario& sc, Framework framework);

// Where the stacks at a trace's peak name another profile's code than the one the scenario plans with
// (Comparison::code), the scenario planned with that profile: its peaks go beside the comparison
// (Comparison::codePlanAllocated, codePlanReserved), so the advice says what the code's own profile plans.
void planWithCodeProfile(Comparison& c, const Scenario& sc);

} // namespace headroom
