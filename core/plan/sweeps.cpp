// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/plan/sweeps.h"

#include <algorithm>
#include <cmath>

namespace headroom {

namespace {

std::vector<long long> logValues(long long lo, long long hi, long long step, int count) {
    std::vector<long long> out;
    for (int i = 0; i < count; ++i) {
        const double v =
            std::exp(std::log(double(lo)) + (std::log(double(hi)) - std::log(double(lo))) * i / (count - 1));
        const long long r = std::max(step, static_cast<long long>(std::llround(v / double(step))) * step);
        if (out.empty() || r > out.back())
            out.push_back(r);
    }
    return out;
}

} // namespace

SweepResult computeSweep(const Scenario& sc, const Estimate& est, SweepVariable variable, EstimateFn estimate,
                         const Cancellation& cancel) {
    SweepResult r;
    r.variable = variable;
    Scenario probe = sc;
    const bool training = sc.mode == Mode::Training;
    switch (variable) {
    case SweepVariable::MicroBatch: {
        const long long limit = est.maxMicroBatchSize; // already exact: no need to estimate again
        r.limit = limit;
        const long long hi = std::max<long long>(16, std::min<long long>(1 << 16, limit * 2));
        for (long long b : logValues(1, hi, 1, 48)) {
            (training ? probe.training.microBatchSize : probe.inference.batchSize) = static_cast<int>(b);
            cancel.check();
            r.points.push_back({double(b), estimate(probe).gpuPeakBytes()});
        }
        break;
    }
    case SweepVariable::SequenceLength: {
        const long long step = sc.cluster.contextParallel;
        r.limit = maxSequenceLength(sc, estimate);
        const long long hi = std::max<long long>(4096, std::min<long long>(1 << 22, r.limit * 2));
        for (long long s : logValues(128, hi, step, 48)) {
            (training ? probe.training.sequenceLength : probe.inference.contextLength) = static_cast<int>(s);
            cancel.check();
            r.points.push_back({double(s), estimate(probe).gpuPeakBytes()});
        }
        break;
    }
    case SweepVariable::GpuCount: {
        // Data parallelism grows; tensor, pipeline and context parallelism stay as they are.
        const int grid = sc.cluster.tensorParallel * sc.cluster.pipelineParallel * sc.cluster.contextParallel;
        const int ep = sc.cluster.expertParallel;
        for (long long dp = ep; dp * grid <= 65536; dp *= 2) {
            probe.cluster.numGpus = static_cast<int>(dp * grid);
            cancel.check();
            const Estimate e = estimate(probe);
            r.points.push_back({double(dp * grid), e.gpuPeakBytes()});
            if (e.fits && r.limit == 0)
                r.limit = dp * grid;
        }
        break;
    }
    }
    return r;
}

std::array<Estimate, 4> strategyEstimates(const Scenario& sc, EstimateFn estimate) {
    static constexpr DataParallel kStrategies[4] = {DataParallel::Ddp, DataParallel::Zero1,
                                                    DataParallel::Zero2, DataParallel::Zero3};
    std::array<Estimate, 4> out;
    Scenario probe = sc;
    for (std::size_t s = 0; s < 4; ++s) {
        probe.cluster.dataParallel = kStrategies[s];
        out[s] = estimate(probe);
    }
    return out;
}

} // namespace headroom
