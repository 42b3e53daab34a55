// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/plan/breakdown.h"

namespace headroom {

static constexpr const char* kKeys[kCategoryCount] = {
    "weights",      "gradients",         "master_weights",        "optimizer_states",
    "temporaries",  "workspaces",        "activations",           "attention_scores",
    "logits",       "gather_buffers",    "communication_buffers", "kv_cache",
    "cuda_context", "allocator_overhead"};
static constexpr const char* kLabels[kCategoryCount] = {
    "Weights",      "Gradients",         "Master weights",        "Optimizer states",
    "Temporaries",  "Workspaces",        "Activations",           "Attention scores",
    "Logits",       "Gather buffers",    "Communication buffers", "KV cache",
    "CUDA context", "Allocator overhead"};

const char* categoryKey(Category c) {
    return kKeys[static_cast<std::size_t>(c)];
}
const char* categoryLabel(Category c) {
    return kLabels[static_cast<std::size_t>(c)];
}

const char* categoryLabel(Category c, bool servingEngine) {
    if (servingEngine)
        switch (c) {
        case Category::CommunicationBuffers:
            return "Non-torch memory";
        case Category::Temporaries:
            return "CUDA graphs";
        case Category::KvCache:
            return "KV cache pool";
        default:
            break;
        }
    return categoryLabel(c);
}

} // namespace headroom
