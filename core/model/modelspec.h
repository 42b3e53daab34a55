// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/model/quantization.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

// Parameters of one decoder layer, split the way the estimator shards them.
struct LayerParams {
    std::uint64_t attention = 0; // projections, their biases, q/k norms, sinks, MLA latents
    std::uint64_t norms = 0;     // per-layer norms: replicated under tensor parallelism
    std::uint64_t denseMlp = 0;  // dense MLP, or the shared experts of an MoE layer
    std::uint64_t router = 0;    // MoE gate
    std::uint64_t perExpert = 0; // one routed expert
    int experts = 0;             // routed experts in this layer (0: dense layer)
    int activeExperts = 0;       // routed experts per token
    int mlpWidth = 0;            // intermediate size of the dense path (0 when none)
    // The row-parallel layers' biases (the attention output's and the dense MLP's down projection's):
    // counted in attention and denseMlp, but every tensor-parallel rank holds them whole.
    std::uint64_t replicatedBiases = 0;

    std::uint64_t total() const { return attention + norms + denseMlp + router + perExpert * experts; }
    std::uint64_t active() const { return attention + norms + denseMlp + router + perExpert * activeExperts; }
    bool isMoe() const { return experts > 0; }
};

// Bytes of one decoder layer's weights as a checkpoint stores them, split like LayerParams.
struct LayerBytes {
    double attention = 0;
    double norms = 0;
    double denseMlp = 0;
    double router = 0;
    double perExpert = 0;
    int experts = 0;
};

// An architecture as the estimator needs it: shapes plus the structural flags that decide the exact
// parameter count. Filled from a Hugging Face config.json (hfconfig.h) or, for a model known only by its
// size, from `parameters` alone (then `known` is false and shape-dependent memory is not estimated).
struct ModelSpec {
    std::string modelType; // Hugging Face model_type ("" for a parameters-only model)
    bool known = false;    // architecture known (false: only `parametersOverride`)
    std::uint64_t parametersOverride = 0;

    int layers = 0;
    int hidden = 0;
    int heads = 0;
    int kvHeads = 0;
    int headDim = 0;
    int ffn = 0;
    int vocab = 0;
    int maxPositions = 0;
    // The rotary embedding's cos/sin table as vLLM's get_rope caches it (one per distinct RoPE of the model,
    // a buffer, on every GPU): rows (positions, summed over the tables) x ropeCacheDim values. 0 rows for a
    // model without RoPE.
    double ropeCacheRows = 0;
    int ropeCacheDim = 0;

    bool tiedEmbeddings = false;
    bool learnedPositions = false; // GPT-2 style position embedding table
    bool gatedMlp = true;          // SwiGLU/GeGLU (3 matrices) or plain (2 matrices)
    bool normHasBias = false;      // LayerNorm (weight + bias) versus RMSNorm (weight)
    int normsPerLayer = 2;
    bool qkvBias = false;
    bool outBias = false;
    bool mlpBias = false;
    bool qkNorm = false;         // per-head norm on q and k (Qwen3's RMSNorm; Megatron's --qk-layernorm)
    bool attentionSinks = false; // one learned logit per head (gpt-oss)
    bool routerBias = false;
    bool dropout = false; // the config trains with dropout (adds 1-byte masks to activations)

    // Sliding-window attention: the layers that attend to (and cache) only the last `slidingWindow`
    // tokens. From the config's layer_types, else the family's pattern (gpt-oss and Gemma 2 alternate,
    // starting with a sliding layer). Empty: every layer attends to the whole context.
    int slidingWindow = 0;
    std::vector<char> slidingLayers; // one per layer, 1 = sliding
    // The local layers are Llama 4's chunked attention instead (attention_chunk_size in slidingWindow): a
    // token attends to the earlier tokens of its own chunk of slidingWindow tokens, never further back,
    // so a layer needs at most one chunk of keys and values; the engines pool such layers apart
    // (core/serve) or, in some releases, not at all.
    bool chunkedAttention = false;
    bool isSlidingLayer(int layer) const {
        return slidingWindow > 0 && layer >= 0 && static_cast<std::size_t>(layer) < slidingLayers.size() &&
               slidingLayers[static_cast<std::size_t>(layer)] != 0;
    }

    // Linear-attention layers of a hybrid model (Qwen3-Next's Gated DeltaNet): instead of keys and values
    // they keep a fixed state per request, a short convolution's last kernel - 1 inputs and a recurrent
    // state of value x key head size per value head. From the config's layer_types, else
    // full_attention_interval. Empty: every layer is an attention layer.
    std::vector<char> linearLayers; // one per layer, 1 = linear attention
    // Which mixer the linear layers are: Qwen3-Next's Gated DeltaNet, or a Mamba-2 mixer (IBM Granite 4.0's
    // hybrid models, transformers' BambaMixer): in_proj to the gate, the convolution's channels and one
    // time step per head, a depthwise convolution over inner + 2 x groups x state channels, dt_bias, A_log
    // and D per head, a gated RMSNorm of the inner width and out_proj; its state per request is the
    // convolution's last kernel - 1 inputs and heads x head size x state size.
    enum class LinearKind { GatedDeltaNet, Mamba2 };
    LinearKind linearKind = LinearKind::GatedDeltaNet;
    int mambaHeads = 0;
    int mambaHeadDim = 0;
    int mambaStateSize = 0;
    int mambaGroups = 1;
    int mambaInner = 0; // mamba_expand x hidden
    bool mambaConvBias = true;
    bool mambaProjBias = false;
    // The recurrent state's dtype the config declares, in bytes: Nemotron-H's mamba_ssm_cache_dtype (NVIDIA's
    // checkpoints say "float32"), Qwen3.5's mamba_ssm_dtype; 0: not given. vLLM's NemotronH and Qwen3.5 hooks
    // take it for the recurrent state (core/serve).
    int mambaSsmCacheBytes = 0;
    // The convolution's channels of a Mamba-2 mixer on one of `tensorParallel` ranks: vLLM gives every rank
    // all the groups its heads need (a single group is replicated, mamba_utils.py
    // extra_groups_for_head_shards).
    double mambaConvChannels(int tensorParallel) const;
    int linearKeyHeads = 0;
    int linearValueHeads = 0;
    int linearKeyHeadDim = 0;
    int linearValueHeadDim = 0;
    int linearConvKernel = 0;
    bool isLinearLayer(int layer) const {
        return layer >= 0 && static_cast<std::size_t>(layer) < linearLayers.size() &&
               linearLayers[static_cast<std::size_t>(layer)] != 0;
    }
    // A Gated DeltaNet layer's projections (transformers' Qwen3NextGatedDeltaNet): module name under
    // linear_attn, out and in features. The rest of its parameters (conv1d, dt_bias, A_log, the gated norm)
    // are small and never quantised.
    struct Matrix {
        const char* name;
        std::uint64_t out, in;
    };
    std::vector<Matrix> linearAttentionMatrices() const;
    // The linear layer's module under the decoder layer: "linear_attn" (Qwen3-Next) or "mamba" (Granite).
    // Qwen3.5's Gated DeltaNet stores in_proj_qkv, in_proj_z, in_proj_b and in_proj_a where Qwen3-Next fuses
    // them into in_proj_qkvz and in_proj_ba: the same parameters, other tensors and module names.
    bool splitDeltaNetProjections = false;
    // Whether vLLM's --mamba-ssm-cache-dtype (and a dtype the checkpoint declares) decides the recurrent
    // state: every Mamba-2 mixer, and Qwen3.5's DeltaNet through its model hook
    // (vllm/model_executor/models/config.py); Qwen3-Next's keeps the model's dtype.
    bool vllmTakesSsmDtype() const;
    bool isQwen35() const { return modelType.rfind("qwen3_5", 0) == 0; }
    // Whether the family's attention computes q, k and v with one matmul (transformers' GPT-2 c_attn,
    // GPT-NeoX's query_key_value, Phi-3's qkv_proj, ...), and its gated MLP gate and up with one (Phi-3's
    // gate_up_proj, ChatGLM's dense_h_to_4h): under autocast each matmul saves its own cast of the input.
    bool fusedQkv() const;
    bool fusedGateUp() const;
    const char* linearModule() const { return linearKind == LinearKind::Mamba2 ? "mamba" : "linear_attn"; }
    // Elements of one linear layer's state per request on one of `tensorParallel` ranks: the convolution's
    // (its channels are the queries', keys' and values' widths) and the recurrent state's.
    double linearConvStateElements(int tensorParallel) const;
    double linearRecurrentStateElements(int tensorParallel) const;
    // Layers that are half a decoder layer (Nemotron-H's blocks: a norm, then one Mamba-2 mixer, attention,
    // MLP or MoE): per layer, 1 = the mixer (attention, or linear when isLinearLayer) alone, 2 = the MLP (or
    // MoE) alone; empty, or 3: both, as every other family has.
    std::vector<char> blockParts;
    bool hasMixer(int layer) const { return (blockPartsOf(layer) & 1) != 0; }
    bool hasMlp(int layer) const { return (blockPartsOf(layer) & 2) != 0; }
    int blockPartsOf(int layer) const {
        return layer >= 0 && static_cast<std::size_t>(layer) < blockParts.size()
                   ? blockParts[static_cast<std::size_t>(layer)]
                   : 3;
    }
    // Layers differ in at most these ways: MoE or dense, linear attention or not, and which parts they have.
    // Counting each kind once is how the totals stay cheap (the estimator asks many times per slider tick).
    static constexpr int kLayerKinds = 12;
    int layerKind(int layer) const {
        return (isMoeLayer(layer) ? 1 : 0) + (isLinearLayer(layer) ? 2 : 0) + 4 * (blockPartsOf(layer) % 3);
    }
    bool attentionOutputGate = false; // q_proj also yields a sigmoid gate per head and channel (Qwen3-Next)
    bool sharedExpertGate = false;    // a sigmoid gate, hidden -> 1, on the shared expert (Qwen3-Next)

    // Mixture of experts. Layers [0, firstDenseLayers) and those not on the moeLayerFreq grid are dense.
    int experts = 0;
    int expertsPerToken = 0;
    int sharedExperts = 0;
    // The shared experts' combined width when it is not sharedExperts x moeFfn (Granite's
    // shared_intermediate_size); 0: sharedExperts x moeFfn.
    int sharedFfn = 0;
    int sharedExpertWidth() const { return sharedFfn > 0 ? sharedFfn : sharedExperts * moeFfn; }
    int moeFfn = 0;
    int firstDenseLayers = 0;
    int moeLayerFreq = 1;
    // The routed experts are stored as two batched tensors per layer, every expert's gate and up projections
    // in one and their down projections in another (Llama 4's Llama4TextExperts), not one module each.
    bool fusedExperts = false;
    std::vector<int> denseLayers; // explicit dense layers (Qwen3 mlp_only_layers)

    // Multi-head latent attention (DeepSeek V2/V3).
    bool mla = false;
    int qLoraRank = 0;
    int kvLoraRank = 0;
    int qkNopeHeadDim = 0;
    int qkRopeHeadDim = 0;
    int vHeadDim = 0;

    // A multimodal checkpoint's vision tower and projector (Gemma 3's SigLIP), one entry per parameter
    // tensor; empty for a text model. Kept 16-bit; on the first pipeline stage, split by tensor parallelism
    // as vLLM's vision towers are.
    std::vector<std::uint64_t> visionTensors;
    std::uint64_t visionParams() const;

    // How the checkpoint stores its linear layers (quantization_config); Method::None: 16-bit.
    Quantization quantization;

    bool isMoeLayer(int layer) const;
    // Weight bytes of one layer with the 16-bit parts at `elementBytes` per value and, given a
    // quantisation (usually &quantization), the linear layers it quantises stored its way.
    LayerBytes layerBytes(int layer, double elementBytes, const Quantization* quantised) const;
    LayerParams layerParams(int layer) const;
    std::uint64_t embeddingParams() const; // token (+ position) embeddings
    std::uint64_t lmHeadParams() const;    // 0 when tied
    std::uint64_t finalNormParams() const;
    std::uint64_t totalParameters() const;
    // The element counts of the model's parameter tensors, one entry per tensor as PyTorch allocates them
    // (q, k, v, o, each MLP matrix, each bias and norm weight, embeddings, head): what a memory trace shows
    // as separate allocations. Multi-head latent attention is given per layer as one entry. Sums to
    // totalParameters(). Empty for a model known only by its size.
    std::vector<std::uint64_t> parameterTensors() const;
    std::uint64_t activeParameters() const; // per token: every expert not routed to is left out
    bool isMoe() const { return experts > 0; }
};

} // namespace headroom
