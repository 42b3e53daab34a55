// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/model/modelspec.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

namespace headroom {

using u64 = std::uint64_t;

bool ModelSpec::isMoeLayer(int layer) const {
    if (experts <= 0 || layer < firstDenseLayers)
        return false;
    if (std::find(denseLayers.begin(), denseLayers.end(), layer) != denseLayers.end())
        return false;
    // Qwen's decoder_sparse_step and DeepSeek's moe_layer_freq: every n-th layer is sparse.
    return moeLayerFreq <= 1 || (layer + 1) % moeLayerFreq == 0;
}

static u64 mlpParams(u64 h, u64 f, bool gated, bool bias) {
    const u64 weights = (gated ? 3 : 2) * h * f;
    const u64 biases = bias ? (gated ? 2 * f : f) + h : 0;
    return weights + biases;
}

double ModelSpec::mambaConvChannels(int tensorParallel) const {
    const int tp = std::max(1, tensorParallel);
    // vLLM adds tp - n_groups groups when the ranks do not divide them (only a single group can be split so).
    const int groups = mambaGroups % tp == 0 ? mambaGroups : tp;
    return std::floor((static_cast<double>(mambaInner) + 2.0 * groups * mambaStateSize) / tp);
}

std::vector<ModelSpec::Matrix> ModelSpec::linearAttentionMatrices() const {
    const u64 h = static_cast<u64>(hidden);
    if (linearKind == LinearKind::Mamba2) {
        // BambaMixer: in_proj yields the gate (inner), the convolution's input (inner + 2 x groups x state)
        // and one time step per head.
        const u64 inner = static_cast<u64>(mambaInner);
        const u64 conv = inner + 2 * static_cast<u64>(mambaGroups) * static_cast<u64>(mambaStateSize);
        return {{"in_proj", inner + conv + static_cast<u64>(mambaHeads), h}, {"out_proj", h, inner}};
    }
    const u64 keyDim = static_cast<u64>(linearKeyHeads) * static_cast<u64>(linearKeyHeadDim);
    const u64 valueDim = static_cast<u64>(linearValueHeads) * static_cast<u64>(linearValueHeadDim);
    // in_proj_qkvz: queries, keys, values and the output gate; in_proj_ba: beta and the decay's input, one
    // each per value head. Qwen3.5 keeps the four apart (modeling_qwen3_5.py Qwen3_5GatedDeltaNet:
    // in_proj_qkv, in_proj_z, in_proj_b, in_proj_a), the same parameters.
    const u64 vh = static_cast<u64>(linearValueHeads);
    if (splitDeltaNetProjections)
        return {{"in_proj_qkv", 2 * keyDim + valueDim, h},
                {"in_proj_z", valueDim, h},
                {"in_proj_b", vh, h},
                {"in_proj_a", vh, h},
                {"out_proj", h, valueDim}};
    return {
        {"in_proj_qkvz", 2 * keyDim + 2 * valueDim, h}, {"in_proj_ba", 2 * vh, h}, {"out_proj", h, valueDim}};
}

// A Gated DeltaNet layer's parameter tensors (models/qwen3_next/modeling_qwen3_next.py): the projections,
// the depthwise conv1d over queries, keys and values (no bias), dt_bias and A_log per value head, the gated
// RMSNorm of one value head.
static std::vector<u64> linearAttentionTensors(const ModelSpec& m) {
    std::vector<u64> t;
    if (m.linearKind == ModelSpec::LinearKind::Mamba2) {
        // BambaMixer's parameters: in_proj (and its bias), the depthwise conv1d (and its bias), dt_bias,
        // A_log and D per head, the gated RMSNorm of the inner width, out_proj (and its bias).
        const std::vector<ModelSpec::Matrix> mx = m.linearAttentionMatrices();
        const u64 heads = static_cast<u64>(m.mambaHeads), inner = static_cast<u64>(m.mambaInner);
        const u64 conv = static_cast<u64>(m.mambaConvChannels(1));
        t.push_back(mx[0].out * mx[0].in);
        if (m.mambaProjBias)
            t.push_back(mx[0].out);
        t.push_back(conv * static_cast<u64>(m.linearConvKernel));
        if (m.mambaConvBias)
            t.push_back(conv);
        t.insert(t.end(), {heads, heads, heads, inner, mx[1].out * mx[1].in});
        if (m.mambaProjBias)
            t.push_back(mx[1].out);
        return t;
    }
    for (const ModelSpec::Matrix& x : m.linearAttentionMatrices())
        t.push_back(x.out * x.in);
    const u64 nv = static_cast<u64>(m.linearValueHeads);
    const u64 convDim = 2 * static_cast<u64>(m.linearKeyHeads) * static_cast<u64>(m.linearKeyHeadDim) +
                        nv * static_cast<u64>(m.linearValueHeadDim);
    t.insert(t.end(), {convDim * static_cast<u64>(m.linearConvKernel), nv, nv,
                       static_cast<u64>(m.linearValueHeadDim)});
    return t;
}

bool ModelSpec::fusedQkv() const {
    static const std::set<std::string> fused = {"baichuan",  "bloom", "chatglm",     "dbrx",
                                                "falcon",    "gpt2",  "gpt_bigcode", "gpt_neox",
                                                "internlm2", "mpt",   "phi3"};
    return fused.count(modelType) == 1;
}

bool ModelSpec::fusedGateUp() const {
    return modelType == "phi3" || modelType == "chatglm";
}

bool ModelSpec::vllmTakesSsmDtype() const {
    return linearKind == LinearKind::Mamba2 || isQwen35();
}

double ModelSpec::linearConvStateElements(int tensorParallel) const {
    if (linearKind == LinearKind::Mamba2) // mamba2_state_shape: (conv_kernel - 1, conv_dim / tp)
        return mambaConvChannels(tensorParallel) * std::max(0, linearConvKernel - 1);
    // vllm/model_executor/layers/mamba/mamba_utils.py, gated_delta_net_state_shape: conv_dim / tp channels
    // by conv_kernel_size - 1 positions.
    const double convDim =
        2.0 * linearKeyHeads * linearKeyHeadDim + 1.0 * linearValueHeads * linearValueHeadDim;
    return std::floor(convDim / std::max(1, tensorParallel)) * std::max(0, linearConvKernel - 1);
}

double ModelSpec::linearRecurrentStateElements(int tensorParallel) const {
    if (linearKind == LinearKind::Mamba2) // (num_heads / tp, head_dim, state_size)
        return std::floor(static_cast<double>(mambaHeads) / std::max(1, tensorParallel)) * mambaHeadDim *
               mambaStateSize;
    // The same function's temporal state: num_v_heads / tp heads of head_v_dim x head_k_dim.
    return std::floor(static_cast<double>(linearValueHeads) / std::max(1, tensorParallel)) *
           linearValueHeadDim * linearKeyHeadDim;
}

LayerParams ModelSpec::layerParams(int layer) const {
    LayerParams p;
    if (!known)
        return p;
    const u64 h = static_cast<u64>(hidden);
    const u64 a = static_cast<u64>(heads);
    if (!hasMixer(layer)) {
        // An MLP block (Nemotron-H): no mixer.
    } else if (isLinearLayer(layer)) {
        for (u64 n : linearAttentionTensors(*this))
            p.attention += n;
    } else if (mla) {
        const u64 qHead = static_cast<u64>(qkNopeHeadDim + qkRopeHeadDim);
        const u64 q = qLoraRank > 0 ? h * static_cast<u64>(qLoraRank) + static_cast<u64>(qLoraRank) +
                                          static_cast<u64>(qLoraRank) * a * qHead
                                    : h * a * qHead;
        const u64 kvA = h * static_cast<u64>(kvLoraRank + qkRopeHeadDim) + static_cast<u64>(kvLoraRank);
        const u64 kvB = static_cast<u64>(kvLoraRank) * a * static_cast<u64>(qkNopeHeadDim + vHeadDim);
        const u64 o = a * static_cast<u64>(vHeadDim) * h;
        p.attention = q + kvA + kvB + o;
    } else {
        const u64 qDim = a * static_cast<u64>(headDim);
        const u64 kvDim = static_cast<u64>(kvHeads) * static_cast<u64>(headDim);
        p.attention = h * qDim * (attentionOutputGate ? 2 : 1) + 2 * h * kvDim + qDim * h;
        if (qkvBias)
            p.attention += qDim + 2 * kvDim;
        if (outBias) {
            p.attention += h;
            p.replicatedBiases += h;
        }
        if (qkNorm) // a LayerNorm (Megatron's --qk-layernorm on a GPT) has a bias too
            p.attention += (normHasBias ? 4 : 2) * static_cast<u64>(headDim);
        if (attentionSinks)
            p.attention += a;
    }
    p.norms = static_cast<u64>(normsPerLayer) * (normHasBias ? 2 * h : h);
    if (!hasMlp(layer)) {
        // A mixer block (Nemotron-H): no MLP.
    } else if (isMoeLayer(layer)) {
        const u64 f = static_cast<u64>(moeFfn);
        p.experts = experts;
        p.activeExperts = expertsPerToken;
        p.perExpert = mlpParams(h, f, gatedMlp, mlpBias);
        p.router = h * static_cast<u64>(experts) + (routerBias ? static_cast<u64>(experts) : 0) +
                   (sharedExpertGate ? h : 0);
        if (sharedExperts > 0) {
            p.denseMlp = mlpParams(h, static_cast<u64>(sharedExpertWidth()), gatedMlp, mlpBias);
            p.mlpWidth = sharedExpertWidth();
        }
    } else {
        p.denseMlp = mlpParams(h, static_cast<u64>(ffn), gatedMlp, mlpBias);
        p.mlpWidth = ffn;
        if (mlpBias)
            p.replicatedBiases += h;
    }
    return p;
}

LayerBytes ModelSpec::layerBytes(int layer, double elementBytes, const Quantization* quantised) const {
    LayerBytes b;
    const LayerParams p = layerParams(layer);
    b.experts = p.experts;
    if (!quantised || !quantised->active()) {
        b.attention = elementBytes * static_cast<double>(p.attention);
        b.norms = elementBytes * static_cast<double>(p.norms);
        b.denseMlp = elementBytes * static_cast<double>(p.denseMlp);
        b.router = elementBytes * static_cast<double>(p.router);
        b.perExpert = elementBytes * static_cast<double>(p.perExpert);
        return b;
    }
    const Quantization& q = *quantised;
    const std::string prefix = "model.layers." + std::to_string(layer) + ".";
    // A linear layer's weight as stored: quantised unless the config leaves its module out.
    auto linear = [&](const std::string& module, u64 out, u64 in) {
        return q.skips(prefix + module) ? elementBytes * static_cast<double>(out) * static_cast<double>(in)
                                        : q.matrixBytes(out, in);
    };
    const u64 h = static_cast<u64>(hidden);
    const u64 a = static_cast<u64>(heads);
    double matrices = 0;
    u64 matrixParams = 0;
    auto add = [&](const std::string& module, u64 out, u64 in) {
        matrices += linear(module, out, in);
        matrixParams += out * in;
    };
    // Module names as the checkpoint writes them, for modules_to_not_convert: Nemotron-H calls every block's
    // part its mixer (modeling_nemotron_h.py: NemotronHBlock.mixer), Llama 4 its MLP feed_forward
    // (modeling_llama4.py: Llama4TextMoe's experts and shared_expert, or Llama4TextMLP); the Qwen3-Next
    // family's shared expert is singular, DeepSeek's plural.
    const bool nemotronH = modelType == "nemotron_h";
    const bool llama4 = modelType == "llama4" || modelType == "llama4_text";
    const std::string attnModule = nemotronH ? "mixer" : "self_attn";
    const std::string ffnModule = nemotronH ? "mixer" : llama4 ? "feed_forward" : "mlp";
    const bool singularShared = llama4 || sharedExpertGate;
    if (!hasMixer(layer)) {
        // An MLP block: no mixer.
    } else if (isLinearLayer(layer)) {
        for (const Matrix& x : linearAttentionMatrices())
            add((nemotronH ? std::string("mixer") : std::string(linearModule())) + "." + x.name, x.out, x.in);
    } else if (mla) {
        const u64 qHead = static_cast<u64>(qkNopeHeadDim + qkRopeHeadDim);
        if (qLoraRank > 0) {
            add(attnModule + ".q_a_proj", static_cast<u64>(qLoraRank), h);
            add(attnModule + ".q_b_proj", a * qHead, static_cast<u64>(qLoraRank));
        } else {
            add(attnModule + ".q_proj", a * qHead, h);
        }
        add(attnModule + ".kv_a_proj_with_mqa", static_cast<u64>(kvLoraRank + qkRopeHeadDim), h);
        add(attnModule + ".kv_b_proj", a * static_cast<u64>(qkNopeHeadDim + vHeadDim),
            static_cast<u64>(kvLoraRank));
        add(attnModule + ".o_proj", h, a * static_cast<u64>(vHeadDim));
    } else {
        const u64 qDim = a * static_cast<u64>(headDim);
        const u64 kvDim = static_cast<u64>(kvHeads) * static_cast<u64>(headDim);
        add(attnModule + ".q_proj", qDim * (attentionOutputGate ? 2 : 1), h);
        add(attnModule + ".k_proj", kvDim, h);
        add(attnModule + ".v_proj", kvDim, h);
        add(attnModule + ".o_proj", h, qDim);
    }
    // Biases, q/k norms, sinks and the latent norms stay 16-bit.
    b.attention = matrices + elementBytes * static_cast<double>(p.attention - matrixParams);
    b.norms = elementBytes * static_cast<double>(p.norms);
    b.router = elementBytes * static_cast<double>(p.router); // routers are kept in 16 bits
    auto mlp = [&](const std::string& module, u64 width, u64 params) {
        matrices = 0;
        matrixParams = 0;
        if (gatedMlp)
            add(module + ".gate_proj", width, h);
        add(module + ".up_proj", width, h);
        add(module + ".down_proj", h, width);
        return matrices + elementBytes * static_cast<double>(params - matrixParams);
    };
    if (p.isMoe()) {
        b.perExpert =
            mlp(ffnModule + (llama4 ? ".experts" : ".experts.0"), static_cast<u64>(moeFfn), p.perExpert);
        if (sharedExperts > 0)
            b.denseMlp = mlp(ffnModule + (singularShared ? ".shared_expert" : ".shared_experts"),
                             static_cast<u64>(sharedExpertWidth()), p.denseMlp);
    } else if (p.denseMlp > 0) {
        b.denseMlp = mlp(ffnModule, static_cast<u64>(ffn), p.denseMlp);
    }
    return b;
}

u64 ModelSpec::embeddingParams() const {
    if (!known)
        return 0;
    u64 e = static_cast<u64>(vocab) * static_cast<u64>(hidden);
    if (learnedPositions)
        e += static_cast<u64>(maxPositions) * static_cast<u64>(hidden);
    return e;
}

u64 ModelSpec::lmHeadParams() const {
    return (!known || tiedEmbeddings) ? 0 : static_cast<u64>(vocab) * static_cast<u64>(hidden);
}

u64 ModelSpec::finalNormParams() const {
    return !known ? 0 : (normHasBias ? 2 : 1) * static_cast<u64>(hidden);
}

// A layer's parameters depend on its index only through its kind (layerKind): count each kind once.
// (The estimator asks for the totals on every estimate, many times per slider tick.)
template <typename F> static u64 sumOverLayers(const ModelSpec& m, F&& perLayer) {
    u64 count[ModelSpec::kLayerKinds] = {};
    int example[ModelSpec::kLayerKinds];
    std::fill(std::begin(example), std::end(example), -1);
    for (int l = 0; l < m.layers; ++l) {
        const int k = m.layerKind(l);
        ++count[k];
        example[k] = example[k] < 0 ? l : example[k];
    }
    u64 sum = 0;
    for (int k = 0; k < ModelSpec::kLayerKinds; ++k)
        if (example[k] >= 0)
            sum += count[k] * perLayer(m.layerParams(example[k]));
    return sum;
}

u64 ModelSpec::visionParams() const {
    u64 n = 0;
    for (u64 t : visionTensors)
        n += t;
    return n;
}

u64 ModelSpec::totalParameters() const {
    if (!known)
        return parametersOverride;
    return visionParams() + embeddingParams() + lmHeadParams() + finalNormParams() +
           sumOverLayers(*this, [](const LayerParams& p) { return p.total(); });
}

std::vector<u64> ModelSpec::parameterTensors() const {
    std::vector<u64> t;
    if (!known)
        return t;
    const u64 h = static_cast<u64>(hidden);
    auto add = [&](u64 n) {
        if (n > 0)
            t.push_back(n);
    };
    auto mlp = [&](u64 width) {
        for (int m = 0; m < (gatedMlp ? 3 : 2); ++m)
            add(h * width);
        if (mlpBias) {
            for (int m = 0; m < (gatedMlp ? 2 : 1); ++m)
                add(width);
            add(h);
        }
    };
    add(static_cast<u64>(vocab) * h);
    if (learnedPositions)
        add(static_cast<u64>(maxPositions) * h);
    for (int l = 0; l < layers; ++l) {
        const LayerParams p = layerParams(l);
        if (!hasMixer(l)) {
            // An MLP block: no mixer.
        } else if (isLinearLayer(l)) {
            for (u64 n : linearAttentionTensors(*this))
                add(n);
        } else if (mla) {
            add(p.attention);
        } else {
            const u64 qDim = static_cast<u64>(heads) * static_cast<u64>(headDim);
            const u64 kvDim = static_cast<u64>(kvHeads) * static_cast<u64>(headDim);
            add(h * qDim * (attentionOutputGate ? 2 : 1)), add(h * kvDim), add(h * kvDim), add(qDim * h);
            if (qkvBias)
                add(qDim), add(kvDim), add(kvDim);
            if (outBias)
                add(h);
            if (qkNorm)
                for (int n = 0; n < (normHasBias ? 4 : 2); ++n)
                    add(static_cast<u64>(headDim));
            if (attentionSinks)
                add(static_cast<u64>(heads));
        }
        for (int n = 0; n < normsPerLayer; ++n) {
            add(h);
            if (normHasBias)
                add(h);
        }
        if (p.isMoe()) {
            add(h * static_cast<u64>(experts));
            if (routerBias)
                add(static_cast<u64>(experts));
            if (fusedExperts) {
                add(static_cast<u64>(experts) * h * static_cast<u64>(moeFfn) * (gatedMlp ? 2 : 1));
                add(static_cast<u64>(experts) * static_cast<u64>(moeFfn) * h);
            } else {
                for (int e = 0; e < experts; ++e)
                    mlp(static_cast<u64>(moeFfn));
            }
            if (sharedExperts > 0)
                mlp(static_cast<u64>(sharedExpertWidth()));
            if (sharedExpertGate)
                add(h);
        } else if (hasMlp(l)) {
            mlp(static_cast<u64>(ffn));
        }
    }
    add(h);
    if (normHasBias)
        add(h);
    add(lmHeadParams());
    for (u64 v : visionTensors)
        add(v);
    return t;
}

u64 ModelSpec::activeParameters() const {
    if (!known)
        return parametersOverride;
    return visionParams() + embeddingParams() + lmHeadParams() + finalNormParams() +
           sumOverLayers(*this, [](const LayerParams& p) { return p.active(); });
}

} // namespace headroom
