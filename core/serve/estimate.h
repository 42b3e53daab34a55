// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/estimator.h"
#include "core/plan/solvers.h"

namespace headroom {

// The estimate of any scenario: core/plan's for training and for inference, with the serving engines of
// core/serve (engines.h) sizing the inference stages that name one. What every room above plan calls.
Estimate estimate(const Scenario& sc);
// The same without the largest micro-batch's search where a replay makes it costly (plan's
// estimatePeakWith): what the solvers judge changed plans by.
Estimate estimatePeak(const Scenario& sc);
// One pipeline stage's memory through one step (plan's phaseTimelineWith, with the engines).
std::vector<TimelinePoint> phaseTimeline(const Scenario& sc, int stage, int pointsPerPhase = 32);
// The longest sequence (or context) that fits (plan's solver, judged by this estimate).
long long maxSequenceLength(const Scenario& sc, long long limit = 1 << 22);

// Every applicable single change that lowers the peak, largest saving first (plan's ranking); with a
// serving engine, every change that lets more requests run at once, largest gain first: the engine fills
// its budget whatever the change, so a change is worth what it adds to the KV pool.
std::vector<Saving> rankSavings(const Scenario& sc);

// Serving capacity against request length: for each length, the tokens the KV cache holds and how many
// requests of that length run at once (a serving engine's pool; without one, the largest batch of that
// context that fits, and its tokens). Lengths on a log scale from 1,024 to at least twice the scenario's
// and the model's maximum position.
struct ServingPoint {
    long long requestLength = 0;
    long long kvTokens = 0;
    double maxConcurrency = 0;
};
std::vector<ServingPoint> servingCurve(const Scenario& sc, int count = 24);

} // namespace headroom
