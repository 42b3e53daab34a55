// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/plan/layout.h"

#include "core/error.h"

#include <string>

namespace headroom {

void checkLayout(const Scenario& sc) {
    const ClusterSettings& c = sc.cluster;
    const long long grid = 1LL * c.tensorParallel * c.pipelineParallel * c.contextParallel;
    if (c.numGpus % grid != 0)
        throw Error("cluster.num_gpus", std::to_string(c.numGpus) +
                                            " is not a multiple of tensor x pipeline x context parallel (" +
                                            std::to_string(grid) + ")");
    const int dp = c.dataParallelSize();
    if (sc.mode == Mode::Inference) {
        // Serving spreads experts over the tensor- and data-parallel ranks (vLLM's EP size is TP x DP),
        // so expert parallelism needs no data parallelism of its own.
        const int ranks = dp * c.tensorParallel;
        if (ranks % c.expertParallel != 0)
            throw Error("cluster.expert_parallel",
                        "must divide tensor x data parallel (" + std::to_string(ranks) + ") when serving");
    } else if (dp % c.expertParallel != 0) {
        throw Error("cluster.expert_parallel", "must divide the data-parallel size " + std::to_string(dp));
    }
    const ModelSpec& m = sc.model;
    if (m.known) {
        if (m.heads % c.tensorParallel != 0)
            throw Error("cluster.tensor_parallel",
                        "must divide the model's " + std::to_string(m.heads) + " attention heads");
        if (c.pipelineParallel * c.virtualStages > m.layers)
            throw Error("cluster.pipeline_parallel",
                        "more pipeline stages than the model's " + std::to_string(m.layers) + " layers");
        if (c.expertParallel > 1 && (!m.isMoe() || m.experts % c.expertParallel != 0))
            throw Error("cluster.expert_parallel",
                        m.isMoe() ? "must divide the model's " + std::to_string(m.experts) + " experts"
                                  : "needs a mixture-of-experts model");
    }
    if (sc.mode == Mode::Training && sc.training.sequenceLength % c.contextParallel != 0)
        throw Error("cluster.context_parallel", "must divide training.sequence_length");
}

} // namespace headroom
