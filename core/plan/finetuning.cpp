// SPDX-License-Identifier: GPL-3.0-or-later
// Fine-tuning's model states: the frozen base as stored (16-bit or quantised by bitsandbytes / torchao), the
// adapters PEFT and torchtune add beside the targeted linear layers, and the modules trained in full.
// docs/frameworks.md, "Fine-tuning", cites each library file.
#include "core/plan/finetuning.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace headroom {

namespace {

using u64 = std::uint64_t;

u64 ceilDiv(u64 a, u64 b) {
    return b == 0 ? 0 : a / b + (a % b != 0 ? 1 : 0);
}

// The whole model as one GPU of stage [first, first + count) holds it: tensor parallelism splits every
// matrix, expert parallelism the routed experts.
double share(const Scenario& sc, const LinearShape& l) {
    const double t = std::max(1, sc.cluster.tensorParallel);
    const double ep = l.copies > 1 ? std::max(1, sc.cluster.expertParallel) : 1;
    return l.copies / (t * ep);
}

// What one decoder layer puts on one GPU: its linear layers as stored, the rest at the weights' bytes, the
// adapters on the targeted ones.
FineTuneStage layerKind(const Scenario& sc, int layer, double secondLevel);

} // namespace

std::vector<LinearShape> layerLinears(const ModelSpec& m, int layer) {
    if (!m.known)
        return {};
    const LayerParams lp = m.layerParams(layer);
    return layerLinears(m, lp.mlpWidth, lp.experts, m.isLinearLayer(layer), m.hasMixer(layer));
}

std::vector<LinearShape> layerLinears(const ModelSpec& m, int mlpWidth, int experts, bool linearAttention,
                                      bool mixer) {
    std::vector<LinearShape> out;
    if (!m.known)
        return out;
    const u64 h = static_cast<u64>(m.hidden), a = static_cast<u64>(m.heads);
    if (!mixer) {
        // An MLP block: its linear layers are the MLP's alone.
    } else if (linearAttention) {
        // transformers' Qwen3NextGatedDeltaNet: its linear layers are named apart from attention's, so
        // PEFT's q_proj/v_proj targets leave them alone.
        for (const ModelSpec::Matrix& x : m.linearAttentionMatrices())
            out.push_back({x.name, x.out, x.in});
    } else if (m.mla) {
        // DeepSeek's attention (transformers' DeepseekV3Attention): the query either direct or through its
        // low-rank pair, the compressed key-value projection with the shared rope part, its expansion.
        const u64 qHead = static_cast<u64>(m.qkNopeHeadDim + m.qkRopeHeadDim);
        if (m.qLoraRank > 0) {
            out.push_back({"q_a_proj", static_cast<u64>(m.qLoraRank), h});
            out.push_back({"q_b_proj", a * qHead, static_cast<u64>(m.qLoraRank)});
        } else {
            out.push_back({"q_proj", a * qHead, h});
        }
        out.push_back({"kv_a_proj_with_mqa", static_cast<u64>(m.kvLoraRank + m.qkRopeHeadDim), h});
        out.push_back({"kv_b_proj", a * static_cast<u64>(m.qkNopeHeadDim + m.vHeadDim),
                       static_cast<u64>(m.kvLoraRank)});
        out.push_back({"o_proj", h, a * static_cast<u64>(m.vHeadDim)});
    } else {
        const u64 q = a * static_cast<u64>(m.headDim);
        const u64 kv = static_cast<u64>(m.kvHeads) * static_cast<u64>(m.headDim);
        out.push_back({"q_proj", q * (m.attentionOutputGate ? 2 : 1), h}); // Qwen3-Next's gate rides on q
        out.push_back({"k_proj", kv, h});
        out.push_back({"v_proj", kv, h});
        out.push_back({"o_proj", h, q});
    }
    auto mlp = [&](u64 width, double copies) {
        if (width == 0)
            return;
        if (m.gatedMlp)
            out.push_back({"gate_proj", width, h, copies});
        out.push_back({"up_proj", width, h, copies});
        out.push_back({"down_proj", h, width, copies});
    };
    mlp(static_cast<u64>(mlpWidth), 1); // the dense MLP, or an MoE layer's shared experts
    if (experts > 0)
        mlp(static_cast<u64>(m.moeFfn), experts);
    return out;
}

double fourBitBytes(u64 out, u64 in, bool doubleQuantization, double secondLevelScaleBytes) {
    const u64 n = out * in;
    const u64 blocks = ceilDiv(n, 64);
    const double packed = static_cast<double>((n + 1) / 2);
    const double code = 16 * 4; // get_4bit_type: the 16 values, one tensor per quantised matrix
    if (!doubleQuantization)
        return packed + 4.0 * static_cast<double>(blocks) + code;
    // quantize_blockwise(absmax - offset, blocksize=256): uint8 absmax, an fp32 absmax per 256 of them, the
    // fp32 offset; its dynamic code is one table shared by every matrix.
    return packed + static_cast<double>(blocks) +
           secondLevelScaleBytes * static_cast<double>(ceilDiv(blocks, 256)) + 4 + code;
}

double int8Bytes(u64 out, u64 in) {
    return static_cast<double>(out) * static_cast<double>(in) + 4.0 * static_cast<double>(out);
}

FineTuneStage fineTuneStage(const Scenario& sc, int firstLayer, int layers, bool firstStage, bool lastStage) {
    FineTuneStage f;
    const ModelSpec& m = sc.model;
    const FineTuning& ft = sc.training.fineTuning;
    const double wb = sc.training.bytes.weights;
    const double t = std::max(1, sc.cluster.tensorParallel);
    if (!m.known) {
        f.frozenParameters = static_cast<double>(m.parametersOverride) / (t * sc.cluster.pipelineParallel);
        f.frozenBytes = wb * f.frozenParameters;
        return f;
    }
    // torchtune's NF4 is torchao's NF4Tensor (torchao/dtypes/nf4tensor.py): scaler blocks of 256 with
    // their factor in the weights' dtype; bitsandbytes keeps it in fp32.
    const double secondLevel = sc.training.framework == Framework::Torchtune ? wb : 4;
    const double r = ft.rank;
    // Layers come in a few kinds (ModelSpec::layerKind), alike in what
    // fine-tuning adds: each kind is worked out once and counted per layer (as stageParams does).
    FineTuneStage kinds[ModelSpec::kLayerKinds];
    bool have[ModelSpec::kLayerKinds] = {};
    for (int l = firstLayer; l < firstLayer + layers; ++l) {
        const int k = m.layerKind(l);
        if (!have[k]) {
            kinds[k] = layerKind(sc, l, secondLevel);
            have[k] = true;
        }
        const FineTuneStage& one = kinds[k];
        f.frozenBytes += one.frozenBytes;
        f.frozenParameters += one.frozenParameters;
        f.adapterParameters += one.adapterParameters;
        f.largestQuantised = std::max(f.largestQuantised, one.largestQuantised);
        f.largestDora = std::max(f.largestDora, one.largestDora);
    }
    const double vocabShard = static_cast<double>(m.vocab) * m.hidden / t;
    auto saved = [&](const char* module) {
        return std::find(ft.modulesToSave.begin(), ft.modulesToSave.end(), module) != ft.modulesToSave.end();
    };
    // Embeddings and the head stay 16-bit (bitsandbytes skips lm_head: get_keys_to_not_convert; torchtune
    // quantises only its LoRA-wrapped and FrozenNF4Linear layers).
    if (firstStage) {
        const double e = static_cast<double>(m.embeddingParams()) / t;
        f.frozenBytes += wb * e;
        f.frozenParameters += e;
        if (saved("embed_tokens"))
            f.savedParameters += vocabShard;
    }
    if (lastStage) {
        const double head = !m.tiedEmbeddings || sc.cluster.pipelineParallel > 1 ? vocabShard : 0;
        const double norm = static_cast<double>(m.finalNormParams());
        f.frozenBytes += wb * (head + norm);
        f.frozenParameters += head + norm;
        if (ft.adapters() && ft.targeted("lm_head"))
            f.adapterParameters += r * (static_cast<double>(m.hidden) + static_cast<double>(m.vocab) / t);
        if (saved("lm_head"))
            f.savedParameters += vocabShard;
    }
    return f;
}

namespace {

FineTuneStage layerKind(const Scenario& sc, int layer, double secondLevel) {
    FineTuneStage f;
    const ModelSpec& m = sc.model;
    const FineTuning& ft = sc.training.fineTuning;
    const double wb = sc.training.bytes.weights;
    const double t = std::max(1, sc.cluster.tensorParallel);
    const double r = ft.rank;
    const LayerParams lp = m.layerParams(layer);
    double linearParameters = 0;
    for (const LinearShape& lin : layerLinears(m, layer)) {
        const double n = static_cast<double>(lin.out) * static_cast<double>(lin.in);
        const double s = share(sc, lin);
        linearParameters += n * lin.copies;
        double bytes = wb * n;
        switch (ft.baseQuantization) {
        case BaseQuantization::None:
            break;
        case BaseQuantization::Int8:
            bytes = int8Bytes(lin.out, lin.in);
            break;
        case BaseQuantization::Nf4:
        case BaseQuantization::Fp4:
            bytes = fourBitBytes(lin.out, lin.in, ft.doubleQuantization, secondLevel);
            break;
        }
        f.frozenBytes += bytes * s;
        f.frozenParameters += n * s;
        if (ft.baseQuantization != BaseQuantization::None)
            f.largestQuantised = std::max(f.largestQuantised, n / t);
        if (ft.adapters() && ft.targeted(lin.name)) {
            // lora_A: r x in, lora_B: out x r; DoRA adds a magnitude per output.
            f.adapterParameters += (r * static_cast<double>(lin.in + lin.out) +
                                    (ft.method == FineTuneMethod::Dora ? static_cast<double>(lin.out) : 0)) *
                                   s;
            if (ft.method == FineTuneMethod::Dora)
                f.largestDora = std::max(f.largestDora, n / t);
        }
    }
    // Norms, biases, routers: 16-bit, every quantiser skips them (they are not nn.Linear weights, or are too
    // small to matter).
    const double rest = static_cast<double>(lp.total()) - linearParameters;
    f.frozenBytes += wb * rest / t;
    f.frozenParameters += rest / t;
    return f;
}

} // namespace

std::vector<TensorBytes> trainedTensors(const Scenario& sc) {
    std::vector<TensorBytes> out;
    const ModelSpec& m = sc.model;
    const FineTuning& ft = sc.training.fineTuning;
    if (!m.known || !ft.adapters())
        return out;
    const u64 r = static_cast<u64>(ft.rank);
    auto adapt = [&](u64 in, u64 o, double copies) {
        for (double c = 0; c < copies; ++c) {
            out.push_back({r * in, ft.adapterBytes});
            out.push_back({o * r, ft.adapterBytes});
            if (ft.method == FineTuneMethod::Dora)
                out.push_back({o, ft.adapterBytes});
        }
    };
    for (int l = 0; l < m.layers; ++l)
        for (const LinearShape& lin : layerLinears(m, l))
            if (ft.targeted(lin.name))
                adapt(lin.in, lin.out, lin.copies);
    const u64 h = static_cast<u64>(m.hidden), v = static_cast<u64>(m.vocab);
    if (ft.targeted("lm_head"))
        adapt(h, v, 1);
    for (const std::string& saved : ft.modulesToSave)
        if (saved == "lm_head" || saved == "embed_tokens")
            out.push_back({v * h, sc.training.bytes.weights});
    return out;
}

std::vector<std::uint64_t> frozenTensorBytes(const Scenario& sc) {
    const ModelSpec& m = sc.model;
    const FineTuning& ft = sc.training.fineTuning;
    const double wb = sc.training.bytes.weights;
    std::vector<std::uint64_t> out;
    const std::vector<u64> tensors = m.parameterTensors();
    if (ft.baseQuantization == BaseQuantization::None) {
        for (u64 n : tensors)
            out.push_back(static_cast<u64>(std::ceil(static_cast<double>(n) * wb)));
        return out;
    }
    // The linear layers' matrices by their element counts: each tensor of such a count is one of them,
    // stored quantised, until the model has no more of it.
    std::map<u64, double> linear;
    for (int l = 0; l < m.layers; ++l)
        for (const LinearShape& lin : layerLinears(m, l))
            linear[lin.out * lin.in] += lin.copies;
    for (u64 n : tensors) {
        auto it = linear.find(n);
        if (it == linear.end() || it->second < 1) {
            out.push_back(static_cast<u64>(std::ceil(static_cast<double>(n) * wb)));
            continue;
        }
        it->second -= 1;
        const u64 blocks = ceilDiv(n, 64);
        if (ft.baseQuantization == BaseQuantization::Int8) {
            out.push_back(n); // CB; SCB (a row's fp32 scale) is too small to tell apart
            continue;
        }
        out.push_back((n + 1) / 2);                                 // the packed values
        out.push_back(ft.doubleQuantization ? blocks : 4 * blocks); // the absmax, uint8 or fp32
    }
    return out;
}

std::uint64_t trainableParameters(const Scenario& sc) {
    if (!sc.training.fineTuning.adapters() || sc.mode != Mode::Training)
        return sc.parameters();
    Scenario one = sc.settingsCopy();
    one.cluster.tensorParallel = 1;
    one.cluster.pipelineParallel = 1;
    one.cluster.expertParallel = 1;
    const FineTuneStage f = fineTuneStage(one, 0, one.model.layers, true, true);
    return static_cast<std::uint64_t>(std::llround(f.adapterParameters + f.savedParameters));
}

} // namespace headroom
