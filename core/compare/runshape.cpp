// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/runshape.h"

#include <algorithm>

namespace headroom {

RunShape::RunShape(const Scenario& sc) {
    const bool training = sc.mode == Mode::Training;
    const double tp = std::max(1, sc.cluster.tensorParallel);
    const ModelSpec& m = sc.model;
    b = training ? sc.training.microBatchSize : sc.inference.batchSize;
    keys = training
               ? static_cast<double>(sc.training.sequenceLength) / std::max(1, sc.cluster.contextParallel)
               : sc.inference.contextLength;
    queries =
        training || sc.inference.prefillChunk <= 0 ? keys : std::min<double>(sc.inference.prefillChunk, keys);
    hidden = m.hidden;
    ffn = m.ffn / tp;
    vocab = m.vocab / tp;
    heads = m.heads / tp;
    kvHeads = std::max(1.0, m.kvHeads / tp);
    headDim = m.headDim;
}

} // namespace headroom
