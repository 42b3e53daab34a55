// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace headroom {

// A KV-cache pool as an engine carves it out of `availableBytes`; `layerTokenBytes` is one token's keys
// and values in one layer on one GPU.
struct KvPool {
    long long numBlocks = 0;
    long long tokens = 0; // what the engine logs: vLLM "GPU KV cache size", SGLang "#tokens"
    double blockBytes = 0;
    double poolBytes = 0;
    double maxConcurrency = 0; // requests of requestLength tokens
};
// vLLM 0.11's arithmetic, sliding-window layers through its hybrid allocator.
KvPool vllmKvPool(double availableBytes, double layerTokenBytes, int fullLayers, int slidingLayers,
                  int blockSize, int requestLength, int slidingWindow, int stepTokens);
// SGLang's: every layer caches every token, in pages of pageSize tokens.
KvPool sglangKvPool(double availableBytes, double layerTokenBytes, int layers, int pageSize,
                    int requestLength);

} // namespace headroom
