// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/serve/kvpool.h"

#include <algorithm>
#include <cmath>

namespace headroom {

namespace {
// How many whole units of unitBytes fit in availableBytes. A scenario from a file can make either
// zero, negative, infinite or so large that the count overflows; none of those may reach a cast.
long long wholeUnits(double availableBytes, double unitBytes) {
    if (!(availableBytes > 0) || !(unitBytes > 0) || !std::isfinite(unitBytes))
        return 0;
    const double n = std::floor(availableBytes / unitBytes);
    constexpr double kMax = 1e15; // a trillion tokens is already far beyond any GPU's memory
    return n > kMax ? static_cast<long long>(kMax) : static_cast<long long>(n);
}
} // namespace

KvPool vllmKvPool(double availableBytes, double layerTokenBytes, int fullLayers, int slidingLayers,
                  int blockSize, int requestLength, int slidingWindow, int stepTokens) {
    KvPool p;
    const int block = std::max(1, blockSize);
    const double request = std::max(1, requestLength);
    if (fullLayers > 0 && slidingLayers > 0) {
        // The hybrid allocator (vllm/v1/core/kv_cache_utils.py, v0.11): each kind of layer is cut into
        // groups of the smaller kind's size; one block is a page in every layer of a group, and the groups
        // share the blocks. A request's sliding layers need at most window - 1 + one step's tokens, and
        // one block more since the window need not start at a block boundary (SlidingWindowSpec).
        const int g = std::min(fullLayers, slidingLayers);
        const int fullGroups = (fullLayers + g - 1) / g, slidingGroups = (slidingLayers + g - 1) / g;
        p.blockBytes = block * layerTokenBytes * g;
        p.numBlocks = wholeUnits(availableBytes, p.blockBytes);
        p.tokens = p.numBlocks / (fullGroups + slidingGroups) * block;
        const double window = std::min<double>(slidingWindow - 1.0 + stepTokens, request);
        const double perRequest =
            fullGroups * std::ceil(request / block) + slidingGroups * (std::ceil(window / block) + 1);
        p.maxConcurrency = static_cast<double>(p.numBlocks) / perRequest;
    } else {
        const int layers = std::max(1, fullLayers + slidingLayers);
        p.blockBytes = block * layerTokenBytes * layers;
        p.numBlocks = wholeUnits(availableBytes, p.blockBytes);
        p.tokens = p.numBlocks * block;
        p.maxConcurrency = static_cast<double>(p.numBlocks) / std::ceil(request / block);
    }
    p.poolBytes = static_cast<double>(p.numBlocks) * p.blockBytes;
    return p;
}

KvPool sglangKvPool(double availableBytes, double layerTokenBytes, int layers, int pageSize,
                    int requestLength) {
    // profile_max_num_token (python/sglang/srt/model_executor/model_runner.py): the bytes left over one
    // token's cell in every layer, then whole pages.
    KvPool p;
    const int page = std::max(1, pageSize);
    const double cell = layerTokenBytes * std::max(1, layers);
    const long long tokens = wholeUnits(availableBytes, cell);
    p.numBlocks = tokens / page;
    p.tokens = p.numBlocks * page;
    p.blockBytes = cell * page;
    p.poolBytes = static_cast<double>(p.tokens) * cell;
    p.maxConcurrency = static_cast<double>(p.tokens) / std::max(1, requestLength);
    return p;
}

} // namespace headroom
