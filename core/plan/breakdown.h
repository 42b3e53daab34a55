// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <array>
#include <cstddef>

namespace headroom {

// The memory categories of the estimate (docs/formats.md), in the order the charts stack them. Temporaries
// are scratch that lives inside one op or step (AdamW's foreach copies, a calibrated step's scratch);
// OptimizerStates holds only the optimizer's persistent states.
enum class Category {
    Weights,
    Gradients,
    MasterWeights,
    OptimizerStates,
    Temporaries,
    Workspaces, // the GEMM libraries' workspaces, held from the first matrix multiply
                // (core/plan/workspaces.h)
    Activations,
    AttentionScores,
    Logits,
    GatherBuffers,
    CommunicationBuffers,
    KvCache,
    CudaContext,
    AllocatorOverhead,
};
inline constexpr std::size_t kCategoryCount = 14;

const char* categoryKey(Category c);   // JSON key: "optimizer_states"
const char* categoryLabel(Category c); // for people: "Optimizer states"
// The same, under a serving engine, as the engines' logs name the parts of their budget: non-torch memory
// (the communication buffers' category), CUDA graphs (temporaries), the KV cache pool.
const char* categoryLabel(Category c, bool servingEngine);
inline Category categoryAt(std::size_t i) {
    return static_cast<Category>(i);
}

// Bytes per category. Doubles while computing (fractional bytes-per-parameter are allowed); rounded to
// integers only when written out.
struct Breakdown {
    std::array<double, kCategoryCount> bytes{};

    double& operator[](Category c) { return bytes[static_cast<std::size_t>(c)]; }
    double operator[](Category c) const { return bytes[static_cast<std::size_t>(c)]; }
    double total() const {
        double t = 0;
        for (double b : bytes)
            t += b;
        return t;
    }
};

} // namespace headroom
