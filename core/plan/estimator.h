#pragma once
#include "core/plan/breakdown.h"
#include "core/plan/scenario.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

enum class Phase { Forward, Backward, Optimizer, Prefill, Decode };
const char* phaseName(Phase p);

// Activation bytes one transformer layer keeps for one micro-batch on one GPU (Korthikanti et al. 2022,
// generalised to GQA/MLA, gated MLPs and MoE routing).
struct LayerActivations {
    double stored = 0;    // kept for the backward pass (excluding attention scores)
    double scores = 0;    // eager attention's score/softmax/dropout tensors kept for backward
    double transient = 0; // recomputed during this layer's backward (checkpointing), freed after it
    double transientScores = 0;
};
LayerActivations layerActivations(const Scenario& sc, int layer, int microBatch);

struct StageEstimate {
    int stage = 0;
    int firstLayer = 0;
    int layers = 0;
    Breakdown peak; // this stage's GPUs at their own peak
    Phase peakPhase = Phase::Forward;
    double inFlightMicroBatches = 0;
};

struct OffloadInfo {
    double cpuBytesPerGpu = 0;    // host memory holding what was moved off each GPU
    double hostToDeviceBytes = 0; // per optimizer step, per GPU
    double deviceToHostBytes = 0;
    double secondsPerStep = 0; // over the GPU's PCIe link, both directions overlapping
};

struct Estimate {
    Mode mode = Mode::Training;
    std::uint64_t parameters = 0;
    std::uint64_t activeParameters = 0;
    Breakdown perGpu; // most-loaded GPU at its peak
    double peakBytes = 0;
    double capacityBytes = 0;
    bool fits = false;
    Phase peakPhase = Phase::Forward;
    int mostLoadedStage = 0;
    long long maxMicroBatchSize = 0; // training: micro-batch; inference: batch size. 0: not even 1 fits
    std::vector<StageEstimate> ranks;
    OffloadInfo offload;
    int dataParallelSize = 1;
    std::vector<std::string> warnings;

    double headroomBytes() const { return capacityBytes - peakBytes; }
};

// The per-GPU memory estimate: every pipeline stage's peak over the phases of one step.
Estimate estimate(const Scenario& sc);

struct TimelinePoint {
    Phase phase = Phase::Forward;
    double progress = 0; // 0..1 within the phase
    Breakdown bytes;
};
// Memory of one pipeline stage's GPU through one step (training: forward, backward, optimizer;
// inference: prefill, decode), `pointsPerPhase` samples each. The estimate's peak is the maximum of
// exactly these curves (their end points).
std::vector<TimelinePoint> phaseTimeline(const Scenario& sc, int stage, int pointsPerPhase = 32);

} // namespace headroom
