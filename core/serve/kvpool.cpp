// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/serve/kvpool.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
                  int blockSize, int requestLength, int slidingWindow, int stepTokens,
                  const LinearStateLayers& linear, const VllmPoolRules& rules) {
    KvPool p;
    int block = std::max(1, blockSize);
    const double request = std::max(1, requestLength);
    if (linear.layers > 0 && linear.stateBytes > 0 && layerTokenBytes > 0 &&
        std::isfinite(linear.stateBytes)) {
        // A hybrid model with linear-attention layers (vllm/platforms/interface.py
        // _align_hybrid_block_size; vllm/model_executor/models/config.py at 0.10-0.11): the attention block
        // grows, in multiples of the kernel's alignment (16, or the block size asked for if larger), until
        // an attention page holds one request's state; the state's page is padded to the same size. Then
        // the groups as below, a request holding one page (or, in "align" mode, two) in each linear group.
        const int align = std::max(16, block);
        const double pages = std::ceil(linear.stateBytes / (align * layerTokenBytes));
        block = std::max(block, static_cast<int>(std::min(pages * align, 1e9)));
    }
    p.blockSize = block;
    const int kinds = (fullLayers > 0) + (slidingLayers > 0) + (linear.layers > 0);
    if (kinds > 1) {
        // The hybrid allocator (vllm/v1/core/kv_cache_utils.py, _get_kv_cache_groups_uniform_page_size):
        // each kind of layer is cut into groups of the smallest kind's size; one block is a page in every
        // layer of a group, and the groups share the blocks. A request's sliding layers need at most
        // window - 1 + one step's tokens, and one block more since the window need not start at a block
        // boundary (SlidingWindowSpec).
        int g = std::numeric_limits<int>::max();
        for (int n : {fullLayers, slidingLayers, linear.layers})
            if (n > 0)
                g = std::min(g, n);
        auto groups = [g](int n) { return (n + g - 1) / g; };
        const int fullGroups = groups(fullLayers), slidingGroups = groups(slidingLayers),
                  linearGroups = groups(linear.layers);
        p.blockBytes = block * layerTokenBytes * g;
        p.numBlocks = wholeUnits(availableBytes, p.blockBytes);
        p.tokens = p.numBlocks / (fullGroups + slidingGroups + linearGroups) * block;
        // Chunked local attention (ChunkedLocalAttentionSpec.max_memory_usage_bytes): one chunk plus the
        // step's tokens, cdiv(min(chunk + step, max_model_len), block).
        const double local =
            rules.chunkedLocal
                ? std::ceil(std::min<double>(slidingWindow + 1.0 * stepTokens, request) / block)
                : std::ceil(std::min<double>(slidingWindow - 1.0 + stepTokens, request) / block) + 1;
        const double perRequest =
            fullGroups * std::ceil(request / block) + slidingGroups * local +
            linearGroups * static_cast<double>(std::max(1, rules.linearPagesPerRequest));
        p.maxConcurrency = static_cast<double>(p.numBlocks) / perRequest;
    } else {
        const int layers = std::max(1, fullLayers + slidingLayers);
        p.blockBytes = block * layerTokenBytes * layers;
        p.numBlocks = wholeUnits(availableBytes, p.blockBytes);
        p.tokens = p.numBlocks * block;
        p.maxConcurrency = static_cast<double>(p.numBlocks) / std::ceil(request / block);
    }
    if (rules.tokensFromConcurrency)
        // kv_cache_utils.py _report_kv_cache_config at main: int(max_concurrency * max_model_len), so that
        // the two lines agree for hybrid models (vllm-project/vllm issue #40691, against 0.19's division).
        p.tokens = static_cast<long long>(std::min(1e15, std::floor(p.maxConcurrency * request)));
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
