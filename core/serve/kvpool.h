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
    int blockSize = 0;         // tokens per block as the engine chose it (vLLM grows it for hybrid models)
};
// The linear-attention layers of a hybrid model (Qwen3-Next's Gated DeltaNet), which vLLM pools as
// MambaSpec layers: one page holds one request's whole state.
struct LinearStateLayers {
    int layers = 0;        // on this GPU
    double stateBytes = 0; // one layer's state for one request: convolution + recurrent state
};
// What differs between vLLM releases in turning blocks into what the log says (engineversions.h).
struct VllmPoolRules {
    // "GPU KV cache size" as max concurrency x max_model_len (newer releases) instead of the blocks divided
    // evenly among the KV cache groups times the block size (0.11 to at least 0.19).
    bool tokensFromConcurrency = false;
    // Pages a request holds in each linear-attention group: 1 without prefix caching (mamba_cache_mode
    // "none"), 2 in "align" mode, the default once prefix caching applies to hybrid models.
    int linearPagesPerRequest = 1;
    // The local layers are chunked attention (Llama 4), not sliding windows: a request holds one chunk plus
    // the step's tokens in them (ChunkedLocalAttentionSpec), with no block for a window that straddles one.
    bool chunkedLocal = false;
};
// vLLM's arithmetic, sliding-window (or chunked) and linear-attention layers through its hybrid allocator;
// `slidingWindow` is the chunk for chunked layers.
KvPool vllmKvPool(double availableBytes, double layerTokenBytes, int fullLayers, int slidingLayers,
                  int blockSize, int requestLength, int slidingWindow, int stepTokens,
                  const LinearStateLayers& linear = {}, const VllmPoolRules& rules = {});
// SGLang's: every layer caches every token, in pages of pageSize tokens.
KvPool sglangKvPool(double availableBytes, double layerTokenBytes, int layers, int pageSize,
                    int requestLength);

} // namespace headroom
