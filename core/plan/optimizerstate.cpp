// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/plan/optimizerstate.h"

#include "core/plan/scenario.h"

namespace headroom {

double optimizerStateBytes(Optimizer optimizer, bool paged, double steppedBytes) {
    switch (optimizer) {
    case Optimizer::Adam8bit:
        return 2; // paged or not, two uint8 states (the block scales are a fraction of a percent)
    case Optimizer::SgdMomentum:
        return steppedBytes;
    case Optimizer::AdamW:
        return paged ? 8 : 2 * steppedBytes;
    }
    return 2 * steppedBytes;
}

double optimizerStateBytes(const TrainingSettings& t) {
    const bool torchOptimOnWeights =
        t.precision == "bf16" &&
        (t.framework == Framework::Torchtune || t.framework == Framework::HuggingFace ||
         t.framework == Framework::Unsloth || t.framework == Framework::Cs336Basics);
    const double stepped = t.bytes.masterWeights > 0 ? t.bytes.masterWeights
                           : torchOptimOnWeights     ? t.bytes.weights
                                                     : 4;
    return optimizerStateBytes(t.optimizer, t.pagedOptimizer, stepped);
}

} // namespace headroom
