// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/model/hfconfig.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace headroom {

namespace {

using nlohmann::json;

// Bounds keep every later product within 64-bit range and reject configs that are clearly not models.
constexpr long long kMaxDim = 1 << 24;
constexpr long long kMaxLayers = 100000;

class Reader {
public:
    Reader(const json& cfg, std::string path) : m_cfg(cfg), m_path(std::move(path)) {}

    std::string at(const std::string& key) const { return m_path.empty() ? key : m_path + "." + key; }

    bool has(const std::string& key) const {
        auto it = m_cfg.find(key);
        return it != m_cfg.end() && !it->is_null();
    }

    int integer(const std::string& key, long long lo, long long hi) const {
        auto it = m_cfg.find(key);
        if (it == m_cfg.end() || it->is_null())
            throw Error(at(key), "required for model_type '" + modelType() + "' but missing");
        return checked(key, *it, lo, hi);
    }
    int integer(const std::string& key, long long lo, long long hi, int fallback) const {
        return has(key) ? integer(key, lo, hi) : fallback;
    }
    // First key present among alternatives (HF attribute maps: n_embd is hidden_size for GPT-2).
    int integerOf(std::initializer_list<const char*> keys, long long lo, long long hi) const {
        for (const char* k : keys)
            if (has(k))
                return integer(k, lo, hi);
        throw Error(at(*keys.begin()), "required for model_type '" + modelType() + "' but missing");
    }
    // First key present among alternatives, else the fallback.
    int integerOr(std::initializer_list<const char*> keys, long long lo, long long hi, int fallback) const {
        for (const char* k : keys)
            if (has(k))
                return integer(k, lo, hi);
        return fallback;
    }
    bool boolean(const std::string& key, bool fallback) const {
        auto it = m_cfg.find(key);
        if (it == m_cfg.end() || it->is_null())
            return fallback;
        if (!it->is_boolean())
            throw Error(at(key), "must be true or false");
        return it->get<bool>();
    }
    double number(const std::string& key, double fallback) const {
        auto it = m_cfg.find(key);
        if (it == m_cfg.end() || it->is_null())
            return fallback;
        if (!it->is_number())
            throw Error(at(key), "must be a number");
        return it->get<double>();
    }
    std::vector<int> intList(const std::string& key) const {
        std::vector<int> out;
        auto it = m_cfg.find(key);
        if (it == m_cfg.end() || it->is_null())
            return out;
        if (!it->is_array())
            throw Error(at(key), "must be a list of layer indices");
        for (std::size_t i = 0; i < it->size(); ++i)
            out.push_back(checked(key + "[" + std::to_string(i) + "]", (*it)[i], 0, kMaxLayers));
        return out;
    }
    std::string modelType() const {
        auto it = m_cfg.find("model_type");
        return it != m_cfg.end() && it->is_string() ? it->get<std::string>() : std::string();
    }

private:
    int checked(const std::string& key, const json& v, long long lo, long long hi) const {
        // A float must be whole and inside [lo, hi] before it is converted: casting an out-of-range
        // double to an integer is undefined behaviour (the fuzzer found 3.2e102).
        if (v.is_number_float()) {
            const double d = v.get<double>();
            if (!(d >= static_cast<double>(lo) && d <= static_cast<double>(hi)))
                throw Error(at(key), "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                                         ", got " + v.dump());
            if (d != std::floor(d))
                throw Error(at(key), "must be an integer, got " + v.dump());
            return static_cast<int>(d);
        }
        if (!v.is_number_integer())
            throw Error(at(key), "must be an integer, got " + v.dump());
        const long long n = v.get<long long>();
        if (v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(hi))
            throw Error(at(key), "must be at most " + std::to_string(hi) + ", got " + v.dump());
        if (n < lo || n > hi)
            throw Error(at(key), "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                                     ", got " + v.dump());
        return static_cast<int>(n);
    }

    const json& m_cfg;
    std::string m_path;
};

// Shapes shared by the Llama-like families (llama, mistral, mixtral, qwen2, qwen3_moe, gemma2, phi3).
// intermediate_size is required unless `ffnDefault` is 0 or more (0: left for the caller to set).
void readLlamaLike(const Reader& r, ModelSpec& m, bool tiedDefault, int ffnDefault = -1) {
    m.hidden = r.integer("hidden_size", 1, kMaxDim);
    m.layers = r.integer("num_hidden_layers", 1, kMaxLayers);
    m.heads = r.integer("num_attention_heads", 1, kMaxDim);
    m.kvHeads = r.integer("num_key_value_heads", 1, kMaxDim, m.heads);
    if (m.heads % m.kvHeads != 0)
        throw Error(r.at("num_key_value_heads"),
                    "must divide num_attention_heads (" + std::to_string(m.heads) + ")");
    m.headDim = r.integer("head_dim", 1, kMaxDim, m.hidden / m.heads);
    m.ffn = ffnDefault < 0
                ? r.integer("intermediate_size", 1, kMaxDim)
                : (r.has("intermediate_size") ? r.integer("intermediate_size", 1, kMaxDim) : ffnDefault);
    m.vocab = r.integer("vocab_size", 1, kMaxDim);
    m.maxPositions = r.integer("max_position_embeddings", 1, 1LL << 30, 0);
    m.tiedEmbeddings = r.boolean("tie_word_embeddings", tiedDefault);
    m.gatedMlp = true;
    m.normHasBias = false;
    // Not a key of these families' configs (Qwen3's and Gemma 3's readers set it): Megatron's --qk-layernorm
    // on a Llama-shaped GPT.
    m.qkNorm = r.boolean("qk_layernorm", false);
    m.dropout = r.number("attention_dropout", 0) > 0 || r.number("hidden_dropout", 0) > 0 ||
                r.number("resid_pdrop", 0) > 0;
}

// A recurrent state's dtype a checkpoint declares (Nemotron-H's mamba_ssm_cache_dtype, Qwen3.5's
// mamba_ssm_dtype), in bytes; 0 when absent or "auto".
int readStateDtype(const Reader& r, const nlohmann::json& config, const char* key) {
    if (!r.has(key))
        return 0;
    const auto& d = config.at(key);
    const int bytes = d == "float32" ? 4 : d == "float16" || d == "bfloat16" ? 2 : d == "auto" ? 0 : -1;
    if (bytes < 0)
        throw Error(r.at(key), "must be \"auto\", \"float32\", \"float16\" or \"bfloat16\", got " + d.dump());
    return bytes;
}

// A layer_types list of two kinds, one flag per layer (1: `flagged`, 0: `other`), into `out`; false when the
// config has no list (the family's pattern then decides).
bool readTwoKindLayers(const Reader& r, const nlohmann::json& config, const char* flagged, const char* other,
                       std::vector<char>& out) {
    const auto types = config.find("layer_types");
    if (types == config.end() || types->is_null())
        return false;
    const std::string at = r.at("layer_types");
    if (!types->is_array() || types->size() != out.size())
        throw Error(at, "must list one layer type per layer (" + std::to_string(out.size()) + ")");
    for (std::size_t i = 0; i < out.size(); ++i) {
        const auto& kind = (*types)[i];
        if (!kind.is_string() || (kind != flagged && kind != other))
            throw Error(at + "[" + std::to_string(i) + "]",
                        std::string("must be \"") + flagged + "\" or \"" + other + "\", got " + kind.dump());
        out[i] = kind == flagged;
    }
    return true;
}

// Qwen3-Next (transformers' Qwen3NextConfig, models/qwen3_next/configuration_qwen3_next.py, and its
// modeling file): three Gated DeltaNet layers to one attention layer (layer i attends fully when (i + 1) is a
// multiple of full_attention_interval, unless layer_types lists the kinds), the attention layers with
// per-head q/k RMSNorm and an output gate that doubles q_proj, and MoE layers with one gated shared expert.
// Qwen3.5 and 3.6's language model is the same (models/qwen3_5 and qwen3_5_moe, whose text configs derive
// from Qwen3NextConfig; the DeltaNet's input projections are split into in_proj_qkv, in_proj_z, in_proj_b and
// in_proj_a, the same parameters): `family` says which defaults apply and whether there are experts.
enum class Qwen3NextFamily { Next, Qwen35Dense, Qwen35Moe };

void readQwen3Next(const Reader& r, const nlohmann::json& config, ModelSpec& m, Qwen3NextFamily family) {
    const bool qwen35Moe = family == Qwen3NextFamily::Qwen35Moe;
    // Qwen3_5MoeTextConfig drops intermediate_size: every layer is sparse there.
    readLlamaLike(r, m, false, qwen35Moe ? 0 : -1);
    m.headDim = r.integer("head_dim", 1, kMaxDim, 256);
    m.qkNorm = true;
    m.attentionOutputGate = true;
    m.qkvBias = m.outBias = r.boolean("attention_bias", false);
    if (family != Qwen3NextFamily::Qwen35Dense) {
        m.experts = r.integer("num_experts", 1, 1 << 16, qwen35Moe ? 256 : 512);
        m.expertsPerToken = r.integer("num_experts_per_tok", 1, m.experts, qwen35Moe ? 8 : 10);
        m.moeFfn = r.integer("moe_intermediate_size", 1, kMaxDim, 512);
        if (qwen35Moe) {
            // Qwen3_5MoeDecoderLayer always runs the sparse block (the config pops mlp_only_layers).
            if (m.ffn == 0)
                m.ffn = m.moeFfn;
            m.fusedExperts = true; // Qwen3_5MoeExperts: gate_up_proj and down_proj, one tensor each
        } else {
            m.moeLayerFreq = r.integer("decoder_sparse_step", 1, kMaxLayers, 1);
            m.denseLayers = r.intList("mlp_only_layers");
        }
        const int shared = r.integer("shared_expert_intermediate_size", 0, kMaxDim, 512);
        if (shared % m.moeFfn != 0)
            throw Error(r.at("shared_expert_intermediate_size"),
                        "must be a multiple of moe_intermediate_size (" + std::to_string(m.moeFfn) + ")");
        m.sharedExperts = shared / m.moeFfn;
        m.sharedExpertGate = shared > 0;
    }
    m.linearKeyHeads = r.integer("linear_num_key_heads", 1, kMaxDim, 16);
    m.linearValueHeads = r.integer("linear_num_value_heads", 1, kMaxDim, 32);
    m.linearKeyHeadDim = r.integer("linear_key_head_dim", 1, kMaxDim, 128);
    m.linearValueHeadDim = r.integer("linear_value_head_dim", 1, kMaxDim, 128);
    m.linearConvKernel = r.integer("linear_conv_kernel_dim", 1, 64, 4);
    std::vector<char> linear(static_cast<std::size_t>(m.layers), 0);
    if (!readTwoKindLayers(r, config, "linear_attention", "full_attention", linear)) {
        const auto interval =
            static_cast<std::size_t>(r.integer("full_attention_interval", 1, kMaxLayers, 4));
        for (std::size_t i = 0; i < linear.size(); ++i)
            linear[i] = (i + 1) % interval != 0;
    }
    m.linearLayers = std::move(linear);
    m.splitDeltaNetProjections = family != Qwen3NextFamily::Next;
    // Qwen3.5's checkpoints keep the DeltaNet's recurrent state in float32 (mamba_ssm_dtype), which vLLM's
    // Qwen3.5 hook takes when --mamba-ssm-cache-dtype is left at auto (model_executor/models/config.py).
    if (family != Qwen3NextFamily::Next)
        m.mambaSsmCacheBytes = readStateDtype(r, config, "mamba_ssm_dtype");
}

// A multimodal config's language model (text_config) and vision tower (vision_config), each an object when
// given; a part left out reads as an empty object (the family's defaults), unless the text is required.
struct MultimodalParts {
    MultimodalParts(const Reader& r, const nlohmann::json& config, bool textRequired)
        : textPath(r.at("text_config")), visionPath(r.at("vision_config")) {
        for (const char* key : {"text_config", "vision_config"})
            if (config.contains(key) && !config[key].is_object())
                throw Error(r.at(key), "must be an object");
        if (textRequired && !config.contains("text_config"))
            throw Error(textPath, "required for model_type '" + r.modelType() + "' but missing");
        static const nlohmann::json kEmpty = nlohmann::json::object();
        text = config.contains("text_config") ? &config["text_config"] : &kEmpty;
        vision = config.contains("vision_config") ? &config["vision_config"] : &kEmpty;
        hasVision = config.contains("vision_config");
    }
    // Readers of the two parts, naming their keys under text_config and vision_config.
    Reader textReader() const { return Reader(*text, textPath); }
    Reader visionReader() const { return Reader(*vision, visionPath); }
    const nlohmann::json* text = nullptr;
    const nlohmann::json* vision = nullptr;
    std::string textPath, visionPath;
    bool hasVision = false;
};

// IBM Granite 4.0's hybrid models (transformers' GraniteMoeHybridConfig and modular_granitemoehybrid.py):
// each layer mixes with a Mamba-2 mixer (BambaMixer) or with attention, as layer_types says (all Mamba
// without it), and then runs the MoE (GraniteMoeMoE: every expert's gate and up projections in one batched
// tensor and the down projections in another, a bias-free router) beside a shared MLP of
// shared_intermediate_size; with no experts the shared MLP alone. No positional embedding by default.
void readGraniteMoeHybrid(const Reader& r, const nlohmann::json& config, ModelSpec& m) {
    readLlamaLike(r, m, false);
    m.qkvBias = m.outBias = r.boolean("attention_bias", false);
    m.experts = r.integer("num_local_experts", 0, 1 << 16, 8);
    const int shared = r.integer("shared_intermediate_size", 0, kMaxDim, 1024);
    if (m.experts > 0) {
        m.moeFfn = m.ffn;
        m.expertsPerToken = r.integer("num_experts_per_tok", 1, m.experts, 2);
        m.fusedExperts = true;
        m.sharedExperts = shared > 0 ? 1 : 0;
        m.sharedFfn = shared;
    } else {
        m.ffn = shared; // the shared MLP is the layer's only MLP
    }
    m.linearKind = ModelSpec::LinearKind::Mamba2;
    const int expand = r.integer("mamba_expand", 1, 64, 2);
    m.mambaInner = expand * m.hidden;
    m.mambaHeads = r.integer("mamba_n_heads", 1, kMaxDim, 128);
    if (m.mambaInner % m.mambaHeads != 0)
        throw Error(r.at("mamba_n_heads"),
                    "must divide mamba_expand x hidden_size (" + std::to_string(m.mambaInner) + ")");
    const auto head = config.find("mamba_d_head");
    const bool autoHead = head == config.end() || head->is_null() || (head->is_string() && *head == "auto");
    m.mambaHeadDim = autoHead ? m.mambaInner / m.mambaHeads : r.integer("mamba_d_head", 1, kMaxDim);
    if (static_cast<long long>(m.mambaHeadDim) * m.mambaHeads != m.mambaInner) // no int overflow
        throw Error(r.at("mamba_d_head"), "times mamba_n_heads must be mamba_expand x hidden_size (" +
                                              std::to_string(m.mambaInner) + ")");
    m.mambaGroups = r.integer("mamba_n_groups", 1, kMaxDim, 1);
    m.mambaStateSize = r.integer("mamba_d_state", 1, kMaxDim, 256);
    m.linearConvKernel = r.integer("mamba_d_conv", 1, 64, 4);
    m.mambaConvBias = r.boolean("mamba_conv_bias", true);
    m.mambaProjBias = r.boolean("mamba_proj_bias", false);
    std::vector<char> mamba(static_cast<std::size_t>(m.layers), 1); // all Mamba without layer_types
    readTwoKindLayers(r, config, "mamba", "attention", mamba);
    m.linearLayers = std::move(mamba);
}

// NVIDIA's Nemotron-H (NemotronHForCausalLM: the checkpoints' configuration_nemotron_h.py and
// modeling_nemotron_h.py, as transformers' models/nemotron_h has them): a stack of blocks, each one norm and
// then one mixer or MLP, spelt by hybrid_override_pattern ("M" Mamba-2, "*" attention, "-" MLP, "E" MoE) or
// listed by layers_block_type ("mamba", "attention", "mlp", "moe"). Attention has no positional embedding;
// MLPs are up_proj and down_proj around a squared ReLU (no gate); the Mamba-2 mixer is NemotronHMamba2Mixer,
// mamba_num_heads x mamba_head_dim channels wide (not mamba_expand x hidden), with BambaMixer's tensors;
// the MoE blocks route to non-gated experts beside a shared one, with a DeepSeek-style router whose
// e_score_correction_bias is a buffer. Embeddings are untied.
void readNemotronH(const Reader& r, const nlohmann::json& config, ModelSpec& m) {
    readLlamaLike(r, m, false);
    m.gatedMlp = false;
    m.normsPerLayer = 1;
    m.qkvBias = m.outBias = r.boolean("attention_bias", false);
    m.mlpBias = r.boolean("mlp_bias", false);
    // One letter per block, from either spelling.
    std::string blocks;
    const std::string where =
        r.has("hybrid_override_pattern") ? "hybrid_override_pattern" : "layers_block_type";
    if (r.has("hybrid_override_pattern")) {
        const auto& p = config.at("hybrid_override_pattern");
        if (!p.is_string())
            throw Error(r.at(where), "must be a string of M, *, - and E, one per layer");
        blocks = p.get<std::string>();
    } else if (r.has("layers_block_type")) {
        const auto& list = config.at("layers_block_type");
        if (!list.is_array())
            throw Error(r.at(where), "must list one block type per layer");
        for (std::size_t i = 0; i < list.size(); ++i) {
            const auto& kind = list[i];
            const char letter = !kind.is_string()     ? '?'
                                : kind == "mamba"     ? 'M'
                                : kind == "attention" ? '*'
                                : kind == "mlp"       ? '-'
                                : kind == "moe"       ? 'E'
                                                      : '?';
            if (letter == '?')
                throw Error(r.at(where) + "[" + std::to_string(i) + "]",
                            "must be \"mamba\", \"attention\", \"mlp\" or \"moe\", got " + kind.dump());
            blocks += letter;
        }
    } else {
        throw Error(r.at("hybrid_override_pattern"),
                    "required for model_type 'nemotron_h' (or layers_block_type) but missing");
    }
    if (blocks.size() != static_cast<std::size_t>(m.layers))
        throw Error(r.at(where), "has " + std::to_string(blocks.size()) +
                                     " blocks where num_hidden_layers is " + std::to_string(m.layers));
    m.blockParts.assign(blocks.size(), 3);
    m.linearLayers.assign(blocks.size(), 0);
    bool moe = false;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        const char b = blocks[i];
        if (b != 'M' && b != '*' && b != '-' && b != 'E')
            throw Error(r.at(where) + "[" + std::to_string(i) + "]",
                        std::string("must be M, *, - or E, got '") + b + "'");
        m.blockParts[i] = b == 'M' || b == '*' ? 1 : 2;
        m.linearLayers[i] = b == 'M';
        moe = moe || b == 'E';
        if (b != 'E')
            m.denseLayers.push_back(static_cast<int>(i));
    }
    if (moe) {
        if (r.has("moe_latent_size"))
            throw Error(r.at("moe_latent_size"), "latent MoE projections are not modelled yet");
        m.experts = r.integer("n_routed_experts", 1, 1 << 16);
        m.expertsPerToken = r.integer("num_experts_per_tok", 1, m.experts);
        m.moeFfn = r.integer("moe_intermediate_size", 1, kMaxDim);
        const int shared = r.integer("n_shared_experts", 0, 64, 1);
        m.sharedExperts = shared > 0 ? 1 : 0;
        m.sharedFfn = shared > 0 ? r.integer("moe_shared_expert_intermediate_size", 1, kMaxDim) : 0;
    } else {
        m.denseLayers.clear();
    }
    m.linearKind = ModelSpec::LinearKind::Mamba2;
    m.mambaHeads = r.integer("mamba_num_heads", 1, kMaxDim);
    m.mambaHeadDim = r.integer("mamba_head_dim", 1, kMaxDim);
    if (static_cast<long long>(m.mambaHeads) * m.mambaHeadDim > kMaxDim) // no int overflow below
        throw Error(r.at("mamba_head_dim"),
                    "times mamba_num_heads must be at most " + std::to_string(kMaxDim));
    m.mambaInner = m.mambaHeads * m.mambaHeadDim;
    m.mambaGroups = r.integerOr({"n_groups", "mamba_n_groups"}, 1, kMaxDim, 8);
    if (m.mambaHeads % m.mambaGroups != 0)
        throw Error(r.at("n_groups"), "must divide mamba_num_heads (" + std::to_string(m.mambaHeads) + ")");
    m.mambaStateSize = r.integerOr({"ssm_state_size", "mamba_d_state"}, 1, kMaxDim, 128);
    m.linearConvKernel = r.integerOr({"conv_kernel", "mamba_d_conv"}, 1, 64, 4);
    m.mambaConvBias = r.boolean(r.has("use_conv_bias") ? "use_conv_bias" : "mamba_conv_bias", true);
    m.mambaProjBias = r.boolean(r.has("use_bias") ? "use_bias" : "mamba_proj_bias", false);
    m.mambaSsmCacheBytes = readStateDtype(r, config, "mamba_ssm_cache_dtype");
}

// Gemma 3's language model (transformers' Gemma3TextConfig, whose defaults fill what checkpoints leave out:
// google/gemma-3-4b-it's text_config names only its width, depth, FFN, RoPE scaling and window). Llama's
// layout with four norms per layer (input, post-attention, pre- and post-feedforward), per-head q/k
// RMSNorm, tied embeddings and a 256-wide head by default.
void readGemma3Text(const Reader& r, ModelSpec& m) {
    m.hidden = r.integer("hidden_size", 1, kMaxDim, 2304);
    m.layers = r.integer("num_hidden_layers", 1, kMaxLayers, 26);
    m.heads = r.integer("num_attention_heads", 1, kMaxDim, 8);
    m.kvHeads = r.integer("num_key_value_heads", 1, kMaxDim, 4);
    if (m.heads % m.kvHeads != 0)
        throw Error(r.at("num_key_value_heads"),
                    "must divide num_attention_heads (" + std::to_string(m.heads) + ")");
    m.headDim = r.integer("head_dim", 1, kMaxDim, 256);
    m.ffn = r.integer("intermediate_size", 1, kMaxDim, 9216);
    m.vocab = r.integer("vocab_size", 1, kMaxDim, 262208);
    m.maxPositions = r.integer("max_position_embeddings", 1, 1LL << 30, 131072);
    m.tiedEmbeddings = r.boolean("tie_word_embeddings", true);
    m.gatedMlp = true;
    m.normHasBias = false;
    m.normsPerLayer = 4;
    m.qkNorm = true;
    m.qkvBias = m.outBias = r.boolean("attention_bias", false);
    m.dropout = r.number("attention_dropout", 0) > 0;
}

// Llama 4's language model (transformers' Llama4TextConfig and modeling_llama4.py): Llama's attention without
// biases (the q/k L2 norm has no weights), MoE layers of routed experts (one per token), a shared expert of
// the experts' width and a bias-free router, every interleave_moe_layer_step-th layer sparse (Scout: all,
// Maverick: every other; moe_layers lists them when given) and the rest dense at intermediate_size_mlp.
// Three layers in four use chunked local attention (no_rope_layers: a layer with RoPE attends within chunks
// of attention_chunk_size tokens; every fourth has no RoPE and attends to everything; layer_types names
// them in newer configs).
void readLlama4Text(const Reader& r, const nlohmann::json& config, ModelSpec& m) {
    readLlamaLike(r, m, false);
    m.headDim = r.integer("head_dim", 1, kMaxDim, m.hidden / m.heads);
    m.qkvBias = m.outBias = r.boolean("attention_bias", false);
    m.moeFfn = m.ffn; // intermediate_size is the experts' (and the shared expert's) width
    m.ffn = r.integer("intermediate_size_mlp", 1, kMaxDim, 16384);
    m.experts = r.integer("num_local_experts", 1, 1 << 16, 16);
    m.expertsPerToken = r.integer("num_experts_per_tok", 1, m.experts, 1);
    m.sharedExperts = 1;
    m.fusedExperts = true; // gate_up_proj [experts, hidden, 2 x width] and down_proj [experts, width, hidden]
    if (r.has("moe_layers")) {
        const std::vector<int> moe = r.intList("moe_layers");
        for (int l = 0; l < m.layers; ++l)
            if (std::find(moe.begin(), moe.end(), l) == moe.end())
                m.denseLayers.push_back(l);
    } else {
        // transformers: moe_layers = range(step - 1, layers, step), which is isMoeLayer's grid.
        m.moeLayerFreq = r.integer("interleave_moe_layer_step", 1, kMaxLayers, 1);
    }
    const auto chunk = config.find("attention_chunk_size");
    if (chunk != config.end() && chunk->is_null())
        return; // no chunked attention: every layer attends to the whole context
    const int chunkSize = r.integer("attention_chunk_size", 1, 1LL << 30, 8192);
    std::vector<char> chunked(static_cast<std::size_t>(m.layers), 0);
    const auto noRope = config.find("no_rope_layers");
    if (!readTwoKindLayers(r, config, "chunked_attention", "full_attention", chunked)) {
        if (noRope != config.end() && noRope->is_array() && !noRope->empty()) {
            // 1: the layer uses RoPE, and so chunked attention; 0: NoPE, global.
            const std::vector<int> flags = r.intList("no_rope_layers");
            if (flags.size() != chunked.size())
                throw Error(r.at("no_rope_layers"),
                            "must give one 0 or 1 per layer (" + std::to_string(m.layers) + ")");
            for (std::size_t i = 0; i < chunked.size(); ++i)
                chunked[i] = flags[i] != 0;
        } else {
            // An empty or absent no_rope_layers: transformers' default, every fourth layer without RoPE.
            for (std::size_t i = 0; i < chunked.size(); ++i)
                chunked[i] = (i + 1) % 4 != 0;
        }
    }
    m.slidingWindow = chunkSize;
    m.slidingLayers = std::move(chunked);
    m.chunkedAttention = true;
}

// A vision tower's shape as its config gives it, each key defaulting to the family's config class.
struct TowerShape {
    std::uint64_t hidden, ffn, layers, channels, image, patch;
};
TowerShape towerShape(const Reader& r, const TowerShape& defaults) {
    const auto get = [&](const char* key, long long hi, std::uint64_t fallback) {
        return static_cast<std::uint64_t>(r.integer(key, 1, hi, static_cast<int>(fallback)));
    };
    TowerShape t{get("hidden_size", kMaxDim, defaults.hidden),
                 get("intermediate_size", kMaxDim, defaults.ffn),
                 get("num_hidden_layers", kMaxLayers, defaults.layers),
                 get("num_channels", 64, defaults.channels),
                 get("image_size", 1 << 16, defaults.image),
                 get("patch_size", 1 << 16, defaults.patch)};
    if (t.patch > t.image)
        throw Error(r.at("patch_size"), "is larger than image_size (" + std::to_string(t.image) + ")");
    return t;
}

// Llama 4's vision tower (transformers' Llama4VisionModel), one entry per parameter tensor: the unfolded
// patch projection (no bias), the class embedding and position table, the LayerNorms before and after, each
// encoder layer's q, k, v and output projections with biases, its two-matrix MLP with biases and two
// LayerNorms, and the pixel-shuffle adapter's two bias-free matrices (Llama4VisionMLP2).
std::vector<std::uint64_t> llama4VisionTensors(const Reader& r) {
    using u64 = std::uint64_t;
    const TowerShape s = towerShape(r, {768, 5632, 34, 3, 448, 14});
    const u64 h = s.hidden, ffn = s.ffn, layers = s.layers, channels = s.channels, patch = s.patch;
    const u64 projectorIn = static_cast<u64>(r.integer("projector_input_dim", 1, kMaxDim, 4096));
    const u64 projectorOut = static_cast<u64>(r.integer("projector_output_dim", 1, kMaxDim, 4096));
    const u64 side = s.image / patch;
    std::vector<u64> t = {channels * patch * patch * h, h, (side * side + 1) * h, h, h, h, h};
    for (u64 l = 0; l < layers; ++l)
        for (u64 n : {h * h, h, h * h, h, h * h, h, h * h, h, h * ffn, ffn, ffn * h, h, h, h, h, h})
            t.push_back(n);
    t.insert(t.end(), {ffn * projectorIn, projectorOut * projectorOut});
    return t;
}

// Pixtral's vision tower (transformers' PixtralVisionModel): the patch convolution without bias, an RMSNorm
// before the transformer, and per layer an attention and an FFN RMSNorm, q, k, v and output projections and
// a gated MLP, none with biases (its 2-D RoPE is a buffer).
std::vector<std::uint64_t> pixtralTensors(const Reader& r) {
    using u64 = std::uint64_t;
    const TowerShape s = towerShape(r, {1024, 4096, 24, 3, 1024, 16});
    const u64 h = s.hidden, ffn = s.ffn;
    std::vector<u64> t = {h * s.channels * s.patch * s.patch, h};
    for (u64 l = 0; l < s.layers; ++l)
        for (u64 n : {h, h * h, h * h, h * h, h * h, h, h * ffn, h * ffn, ffn * h})
            t.push_back(n);
    return t;
}

// What the Qwen vision towers share (Qwen2-VL, Qwen2.5-VL, Qwen3-VL): a Conv3d patch embedding over
// temporal_patch_size frames of patch_size squares into the tower's width; depth blocks of two norms, the
// fused qkv and the output projection with biases and an MLP with biases; a patch merger, a norm and two
// linears with biases from width x spatial_merge_size^2 to itself and to the language model's width. The
// keys naming the widths differ between them.
struct QwenTower {
    std::uint64_t width = 0, ffn = 0, depth = 0, channels = 0, patch = 0, frames = 0, merge = 0, out = 0;
    bool layerNorm = false; // LayerNorm (weight and bias) rather than RMSNorm
    bool gatedMlp = false;  // gate, up and down rather than two matrices
    bool convBias = false;
    std::uint64_t positions = 0; // a learned position table's rows
    std::size_t deepstack = 0;   // further mergers, their LayerNorm over the merged width
};

QwenTower readQwenTower(const Reader& r, const char* widthKey, std::uint64_t width, const char* outKey,
                        std::uint64_t patch, std::uint64_t depth) {
    using u64 = std::uint64_t;
    QwenTower s;
    s.width = static_cast<u64>(r.integer(widthKey, 1, kMaxDim, static_cast<long long>(width)));
    s.depth = static_cast<u64>(r.integer("depth", 1, kMaxLayers, static_cast<long long>(depth)));
    s.channels = static_cast<u64>(r.integerOr({"in_channels", "in_chans"}, 1, 64, 3));
    s.patch = static_cast<u64>(r.integer("patch_size", 1, 1 << 16, static_cast<long long>(patch)));
    s.frames = static_cast<u64>(r.integer("temporal_patch_size", 1, 64, 2));
    s.merge = static_cast<u64>(r.integer("spatial_merge_size", 1, 64, 2));
    s.out = static_cast<u64>(r.integer(outKey, 1, kMaxDim, 3584));
    return s;
}

std::vector<std::uint64_t> qwenTowerTensors(const QwenTower& s) {
    using u64 = std::uint64_t;
    const u64 h = s.width, f = s.ffn, merged = h * s.merge * s.merge;
    std::vector<u64> t = {s.channels * s.frames * s.patch * s.patch * h};
    if (s.convBias)
        t.push_back(h);
    if (s.positions > 0)
        t.push_back(s.positions * h);
    const std::vector<u64> norm = s.layerNorm ? std::vector<u64>{h, h} : std::vector<u64>{h};
    for (u64 b = 0; b < s.depth; ++b) {
        for (int i = 0; i < 2; ++i)
            t.insert(t.end(), norm.begin(), norm.end());
        t.insert(t.end(), {3 * h * h, 3 * h, h * h, h});
        if (s.gatedMlp)
            t.insert(t.end(), {h * f, f, h * f, f, f * h, h});
        else
            t.insert(t.end(), {h * f, f, f * h, h});
    }
    t.insert(t.end(), norm.begin(), norm.end());
    t.insert(t.end(), {merged * merged, merged, merged * s.out, s.out});
    for (std::size_t i = 0; i < s.deepstack; ++i)
        t.insert(t.end(), {merged, merged, merged * merged, merged, merged * s.out, s.out});
    return t;
}

// Qwen2.5-VL's tower (transformers' Qwen2_5_VisionTransformerPretrainedModel): a bias-free patch embedding,
// RMSNorms and a gated MLP of intermediate_size; its width is hidden_size, the merger's out_hidden_size.
std::vector<std::uint64_t> qwen25VisionTensors(const Reader& r) {
    QwenTower s = readQwenTower(r, "hidden_size", 1280, "out_hidden_size", 14, 32);
    s.ffn = static_cast<std::uint64_t>(r.integer("intermediate_size", 1, kMaxDim, 3420));
    s.gatedMlp = true;
    return qwenTowerTensors(s);
}

// Qwen2-VL's tower (transformers' Qwen2VisionTransformerPretrainedModel, modeling_qwen2_vl.py): a bias-free
// patch embedding, LayerNorms and a two-matrix MLP of int(embed_dim x mlp_ratio); its width is embed_dim, and
// hidden_size is the merger's output (the language model's width).
std::vector<std::uint64_t> qwen2VisionTensors(const Reader& r) {
    QwenTower s = readQwenTower(r, "embed_dim", 1280, "hidden_size", 14, 32);
    const double ratio = r.number("mlp_ratio", 4);
    if (!(ratio > 0 && ratio <= 64))
        throw Error(r.at("mlp_ratio"), "must be above 0 and at most 64");
    s.ffn = static_cast<std::uint64_t>(static_cast<double>(s.width) * ratio); // int(dim * mlp_ratio)
    s.layerNorm = true;
    return qwenTowerTensors(s);
}

// Qwen3-VL's tower (transformers' Qwen3VLVisionModel, modeling_qwen3_vl.py): a patch embedding with its bias
// and a learned position table of num_position_embeddings, LayerNorms and a two-matrix MLP of
// intermediate_size, and besides the merger one more per deepstack_visual_indexes entry, whose LayerNorm is
// over the merged width (use_postshuffle_norm).
std::vector<std::uint64_t> qwen3VisionTensors(const Reader& r, bool deepstack) {
    QwenTower s = readQwenTower(r, "hidden_size", 1152, "out_hidden_size", 16, 27);
    s.ffn = static_cast<std::uint64_t>(r.integer("intermediate_size", 1, kMaxDim, 4304));
    s.layerNorm = true;
    s.convBias = true;
    s.positions = static_cast<std::uint64_t>(r.integer("num_position_embeddings", 1, 1 << 24, 2304));
    // Each entry names a block whose output gets its own merger: at most one per block.
    const std::vector<int> taps = deepstack ? r.intList("deepstack_visual_indexes") : std::vector<int>{};
    for (std::size_t i = 0; i < taps.size(); ++i)
        if (static_cast<std::uint64_t>(taps[i]) >= s.depth)
            throw Error(r.at("deepstack_visual_indexes") + "[" + std::to_string(i) + "]",
                        "names block " + std::to_string(taps[i]) + " of a tower of " +
                            std::to_string(s.depth));
    if (taps.size() > s.depth)
        throw Error(r.at("deepstack_visual_indexes"), "has more entries than the tower has blocks");
    s.deepstack = taps.size();
    return qwenTowerTensors(s);
}

// Qwen3's language model (transformers' Qwen3Config, Qwen3MoeConfig, and the text_config of Qwen3-VL and
// Qwen3-VL-MoE): Llama's layout with per-head q/k RMSNorm; with experts, a bias-free router over
// num_experts of moe_intermediate_size, every decoder_sparse_step-th layer but those of mlp_only_layers.
void readQwen3Text(const Reader& r, ModelSpec& m, bool moe) {
    readLlamaLike(r, m, false);
    m.headDim = r.integer("head_dim", 1, kMaxDim, m.hidden / m.heads);
    m.qkNorm = true;
    m.qkvBias = m.outBias = r.boolean("attention_bias", false);
    if (!moe)
        return;
    m.experts = r.integer("num_experts", 1, 1 << 16);
    m.expertsPerToken = r.integer("num_experts_per_tok", 1, m.experts);
    m.moeFfn = r.integer("moe_intermediate_size", 1, kMaxDim);
    m.moeLayerFreq = r.integer("decoder_sparse_step", 1, kMaxLayers, 1);
    m.denseLayers = r.intList("mlp_only_layers");
}

// A SigLIP vision tower (transformers' SiglipVisionConfig and modeling_siglip.py), one entry per parameter
// tensor: the patch embedding (a convolution with its bias) and the position table, each encoder layer's
// two LayerNorms, q, k, v and output projections with biases and its two-matrix MLP with biases, the final
// LayerNorm, and the attention-pooling head when vision_use_head (SigLIP's default; Gemma 3 turns it off).
std::vector<std::uint64_t> siglipTensors(const Reader& r) {
    using u64 = std::uint64_t;
    const TowerShape s = towerShape(r, {768, 3072, 12, 3, 224, 16});
    const u64 h = s.hidden, ffn = s.ffn, layers = s.layers, channels = s.channels, image = s.image,
              patch = s.patch;
    const u64 side = image / patch;
    std::vector<u64> t = {h * channels * patch * patch, h, side * side * h};
    for (u64 l = 0; l < layers; ++l)
        for (u64 n : {h, h, h * h, h, h * h, h, h * h, h, h * h, h, h, h, h * ffn, ffn, ffn * h, h})
            t.push_back(n);
    t.insert(t.end(), {h, h});
    if (r.boolean("vision_use_head", true))
        t.insert(t.end(), {h, 3 * h * h, 3 * h, h * h, h, h, h, h * ffn, ffn, ffn * h, h});
    return t;
}

} // namespace

const std::vector<std::string>& supportedModelTypes() {
    static const std::vector<std::string> types = {
        "gpt2",        "llama",     "mistral",      "mixtral",          "qwen2",
        "qwen3",       "qwen3_moe", "gemma",        "gemma2",           "gemma3",
        "gemma3_text", "phi3",      "gpt_neox",     "deepseek_v3",      "gpt_oss",
        "qwen3_next",  "llama4",    "mistral3",     "granitemoehybrid", "qwen2_5_vl",
        "qwen2_vl",    "qwen3_vl",  "qwen3_vl_moe", "nemotron_h",       "qwen3_5",
        "qwen3_5_moe"}; // and llama4_text, qwen3_5_text, qwen3_5_moe_text
    return types;
}

namespace {
// layer_types ("sliding_attention" / "full_attention" per layer, transformers >= 4.53) with sliding_window;
// without layer_types, the families whose modeling code alternates: gpt-oss and Gemma 2 make layer i
// sliding when i is even (transformers' GptOssConfig / Gemma2Config: `bool((i + 1) % 2)`). Mistral's
// sliding_window applies to every layer, and Hugging Face's cache keeps the whole context there, so it is
// not capped.
void readSlidingWindows(const nlohmann::json& config, const std::string& path, ModelSpec& m) {
    auto w = config.find("sliding_window");
    const bool gemma3 = m.modelType == "gemma3_text";
    // Gemma3TextConfig's default window is 4,096 tokens (the checkpoints set 512 or 1,024).
    static const nlohmann::json kGemma3Window = 4096;
    const nlohmann::json* window = w == config.end() ? (gemma3 ? &kGemma3Window : nullptr) : &*w;
    if (!window || window->is_null())
        return;
    if (!window->is_number_integer() || window->get<long long>() < 1 ||
        window->get<long long>() > (1LL << 30))
        throw Error(path.empty() ? "sliding_window" : path + ".sliding_window",
                    "must be a positive whole number of tokens or null, got " + window->dump());
    const auto types = config.find("layer_types");
    std::vector<char> sliding(static_cast<std::size_t>(m.layers), 0);
    if (types != config.end() && !types->is_null()) {
        const std::string at = path.empty() ? "layer_types" : path + ".layer_types";
        if (!types->is_array() || types->size() != static_cast<std::size_t>(m.layers))
            throw Error(at, "must list one attention type per layer (" + std::to_string(m.layers) + ")");
        for (std::size_t i = 0; i < types->size(); ++i) {
            if (!(*types)[i].is_string())
                throw Error(at + "[" + std::to_string(i) + "]",
                            "must be a string such as \"sliding_attention\"");
            sliding[i] = (*types)[i].get<std::string>() == "sliding_attention";
        }
    } else if (m.modelType == "gpt_oss" || m.modelType == "gemma2") {
        for (std::size_t i = 0; i < sliding.size(); ++i)
            sliding[i] = i % 2 == 0;
    } else if (gemma3) {
        // Gemma3TextConfig: layer i is global when (i + 1) is a multiple of sliding_window_pattern (6: five
        // local layers to one global).
        const Reader r(config, path);
        const int pattern = r.integer("sliding_window_pattern", 1, kMaxLayers, 6);
        for (std::size_t i = 0; i < sliding.size(); ++i)
            sliding[i] = (i + 1) % static_cast<std::size_t>(pattern) != 0;
    } else {
        return;
    }
    m.slidingWindow = static_cast<int>(window->get<long long>());
    m.slidingLayers = std::move(sliding);
}
} // namespace

namespace {
// What vLLM's get_rope caches for the model (vllm/model_executor/layers/rotary_embedding/): a table of
// cos and sin, `rotary_dim` values a position, in the model's dtype (RotaryEmbedding's cos_sin_cache, a
// non-persistent buffer: part of what "Model loading took" counts). Its positions: max_position_embeddings
// for the plain, Llama 3 and multimodal RoPEs; times the factor for linear and dynamic-NTK scaling
// (LinearScalingRotaryEmbedding and DynamicNTKScalingRotaryEmbedding build the table over the scaled
// length); original_max_position_embeddings times the factor for YaRN. Gemma 3 keeps a second, unscaled
// table for its local layers (gemma3.py: rope_local_base_freq with rope_type "default"). Every table is
// whole on every GPU. Not read for families without RoPE (GPT-2's learned positions, Nemotron-H's and
// Granite 4's NoPE attention).
void readRopeCache(const nlohmann::json& config, ModelSpec& m) {
    const auto text = config.find("text_config");
    const nlohmann::json& c = text != config.end() && text->is_object() ? *text : config;
    const std::string& t = m.modelType;
    // A key that is not a string reads as absent: this only sizes a buffer, and the keys that matter to the
    // architecture were checked above.
    auto string = [](const nlohmann::json& j, const char* key, const char* fallback) {
        const auto it = j.find(key);
        return it != j.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
    };
    if (m.learnedPositions || m.maxPositions <= 0 || t == "gpt2" || t == "nemotron_h" ||
        string(c, "position_embedding_type", "rope") == "nope")
        return;
    auto number = [](const nlohmann::json& j, const char* key, double fallback) {
        const auto it = j.find(key);
        return it != j.end() && it->is_number() && it->get<double>() > 0 && it->get<double>() < 1e9
                   ? it->get<double>()
                   : fallback;
    };
    const double partial =
        number(c, "partial_rotary_factor", number(c, "rotary_pct", t == "gpt_neox" ? 0.25 : 1));
    const double head = m.mla ? m.qkRopeHeadDim : m.headDim;
    m.ropeCacheDim = static_cast<int>(std::max(0.0, std::floor(head * std::min(1.0, partial))));
    double rows = m.maxPositions;
    auto scaling = c.find("rope_scaling");
    if (scaling == c.end() || !scaling->is_object())
        scaling = c.find("rope_parameters");
    if (scaling != c.end() && scaling->is_object()) {
        const std::string type = string(*scaling, "rope_type", string(*scaling, "type", "default").c_str());
        const double factor = number(*scaling, "factor", 1);
        if (type == "linear" || type == "dynamic")
            rows *= factor;
        else if (type == "yarn" || type == "deepseek_yarn")
            rows = number(*scaling, "original_max_position_embeddings", rows) * factor;
    }
    if ((t == "gemma3" || t == "gemma3_text") && m.slidingWindow > 0)
        rows += m.maxPositions;
    m.ropeCacheRows = std::min(rows, 1e12);
}

ModelSpec readHfConfig(const nlohmann::json& config, const std::string& path);
} // namespace

ModelSpec modelFromHfConfig(const nlohmann::json& config, const std::string& path) {
    ModelSpec m = readHfConfig(config, path);
    readRopeCache(config, m);
    return m;
}

namespace {
ModelSpec readHfConfig(const nlohmann::json& config, const std::string& path) {
    if (!config.is_object())
        throw Error(path, "a Hugging Face config must be a JSON object");
    const Reader r(config, path);
    auto typeIt = config.find("model_type");
    if (typeIt == config.end())
        throw Error(r.at("model_type"), "missing; it names the architecture family (for a model known only "
                                        "by its size, give \"parameters\": N instead)");
    if (!typeIt->is_string())
        throw Error(r.at("model_type"),
                    "must be a string naming the architecture family, got " + typeIt->dump());
    ModelSpec m;
    m.modelType = typeIt->get<std::string>();
    m.known = true;
    const std::string& t = m.modelType;

    if (t == "gpt2") {
        m.hidden = r.integerOf({"n_embd", "hidden_size"}, 1, kMaxDim);
        m.layers = r.integerOf({"n_layer", "num_hidden_layers"}, 1, kMaxLayers);
        m.heads = r.integerOf({"n_head", "num_attention_heads"}, 1, kMaxDim);
        // Not a key of transformers' GPT2Config: Headroom reads it so that a Megatron GPT with
        // --group-query-attention (LayerNorm, learned positions, biases, GELU) can be written as gpt2.
        m.kvHeads = r.integer("num_key_value_heads", 1, kMaxDim, m.heads);
        if (m.heads % m.kvHeads != 0)
            throw Error(r.at("num_key_value_heads"), "must divide n_head (" + std::to_string(m.heads) + ")");
        m.headDim = m.hidden / m.heads;
        m.ffn = r.integer("n_inner", 1, kMaxDim, 4 * m.hidden);
        m.vocab = r.integer("vocab_size", 1, kMaxDim);
        m.maxPositions = r.integerOf({"n_positions", "max_position_embeddings"}, 1, 1LL << 24);
        m.learnedPositions = true;
        m.tiedEmbeddings = r.boolean("tie_word_embeddings", true);
        m.gatedMlp = false;
        m.normHasBias = true;
        m.qkvBias = m.outBias = m.mlpBias = true;
        m.dropout = r.number("resid_pdrop", 0.1) > 0 || r.number("attn_pdrop", 0.1) > 0;
        // Nor this: Megatron's --qk-layernorm, a LayerNorm over each head's query and key.
        m.qkNorm = r.boolean("qk_layernorm", false);
    } else if (t == "llama" || t == "mistral" || t == "phi3") {
        readLlamaLike(r, m, false);
        m.qkvBias = m.outBias = r.boolean("attention_bias", false);
        m.mlpBias = r.boolean("mlp_bias", false);
    } else if (t == "qwen2") {
        readLlamaLike(r, m, false);
        m.qkvBias = true; // Qwen2 always has q/k/v biases and no output bias
    } else if (t == "gemma") {
        // Gemma 1 (transformers' GemmaConfig): Llama's layout with tied embeddings, a 256-wide head_dim and,
        // at 2B, one KV head (multi-query attention).
        readLlamaLike(r, m, true);
        m.headDim = r.integer("head_dim", 1, kMaxDim, 256);
        m.qkvBias = m.outBias = r.boolean("attention_bias", false);
    } else if (t == "gemma2") {
        readLlamaLike(r, m, true);
        m.headDim = r.integer("head_dim", 1, kMaxDim, 256);
        m.normsPerLayer = 4; // input, post-attention, pre- and post-feedforward norms
        m.qkvBias = m.outBias = r.boolean("attention_bias", false);
    } else if (t == "gemma3_text") {
        readGemma3Text(r, m);
    } else if (t == "gemma3") {
        // Gemma3ForConditionalGeneration: the language model under text_config, a SigLIP tower under
        // vision_config, and Gemma3MultiModalProjector between them (modeling_gemma3.py: its
        // mm_input_projection_weight, vision width x text width, and mm_soft_emb_norm, an RMSNorm of the
        // vision width).
        const MultimodalParts parts(r, config, false);
        const Reader tr = parts.textReader(), vr = parts.visionReader();
        readGemma3Text(tr, m);
        m.visionTensors = siglipTensors(vr);
        const auto visionWidth = static_cast<std::uint64_t>(vr.integer("hidden_size", 1, kMaxDim, 768));
        m.visionTensors.push_back(visionWidth * static_cast<std::uint64_t>(m.hidden));
        m.visionTensors.push_back(visionWidth);
        m.modelType = "gemma3_text"; // the sliding layers and the rest read as the language model's
        readSlidingWindows(*parts.text, parts.textPath, m);
        m.modelType = "gemma3";
        m.quantization = readQuantization(config, path);
        return m;
    } else if (t == "llama4_text") {
        readLlama4Text(r, config, m);
        m.quantization = readQuantization(config, path);
        return m;
    } else if (t == "llama4") {
        // Llama4ForConditionalGeneration: the language model under text_config, the vision tower under
        // vision_config and Llama4MultiModalProjector's one bias-free matrix, vision_output_dim x text width.
        const MultimodalParts parts(r, config, true);
        const Reader tr = parts.textReader(), vr = parts.visionReader();
        readLlama4Text(tr, *parts.text, m);
        m.tiedEmbeddings = r.boolean("tie_word_embeddings", tr.boolean("tie_word_embeddings", false));
        if (parts.hasVision) {
            m.visionTensors = llama4VisionTensors(vr);
            m.visionTensors.push_back(
                static_cast<std::uint64_t>(vr.integer("vision_output_dim", 1, kMaxDim, 7680)) *
                static_cast<std::uint64_t>(m.hidden));
        }
        m.quantization = readQuantization(config, path);
        return m;
    } else if (t == "mistral3") {
        // Mistral3ForConditionalGeneration (Mistral Small 3.1 and 3.2): a Mistral language model under
        // text_config, a Pixtral tower under vision_config and Mistral3MultiModalProjector: an RMSNorm of the
        // vision width, the patch merger's vision width x spatial_merge_size^2 -> vision width, and two
        // linears to the text width (with biases when multimodal_projector_bias).
        const MultimodalParts parts(r, config, true);
        const Reader tr = parts.textReader(), vr = parts.visionReader();
        readLlamaLike(tr, m, false);
        m.qkvBias = m.outBias = tr.boolean("attention_bias", false);
        m.mlpBias = tr.boolean("mlp_bias", false);
        m.visionTensors = pixtralTensors(vr);
        const auto v = static_cast<std::uint64_t>(vr.integer("hidden_size", 1, kMaxDim, 1024));
        const auto h = static_cast<std::uint64_t>(m.hidden);
        const auto merge = static_cast<std::uint64_t>(r.integer("spatial_merge_size", 1, 64, 2));
        const bool bias = r.boolean("multimodal_projector_bias", false);
        m.visionTensors.insert(m.visionTensors.end(), {v, v * merge * merge * v, v * h, h * h});
        if (bias)
            m.visionTensors.insert(m.visionTensors.end(), {h, h});
        readSlidingWindows(*parts.text, parts.textPath, m);
        m.quantization = readQuantization(config, path);
        return m;
    } else if (t == "qwen2_5_vl" || t == "qwen2_vl") {
        // Qwen2_5_VLForConditionalGeneration and Qwen2VLForConditionalGeneration: Qwen2's language model
        // (q/k/v biases), its keys at the top of the config or, in newer ones, under text_config; the vision
        // tower under vision_config.
        const MultimodalParts parts(r, config, false);
        const bool nested = config.contains("text_config");
        const Reader tr = nested ? parts.textReader() : Reader(config, path);
        const Reader vr = parts.visionReader();
        readLlamaLike(tr, m, false);
        m.tiedEmbeddings = r.boolean("tie_word_embeddings", m.tiedEmbeddings);
        m.qkvBias = true;
        m.visionTensors = t == "qwen2_vl" ? qwen2VisionTensors(vr) : qwen25VisionTensors(vr);
        m.quantization = readQuantization(config, path);
        return m;
    } else if (t == "granitemoehybrid") {
        readGraniteMoeHybrid(r, config, m);
    } else if (t == "nemotron_h") {
        readNemotronH(r, config, m);
    } else if (t == "mixtral") {
        readLlamaLike(r, m, false);
        m.experts = r.integer("num_local_experts", 1, 1 << 16);
        m.expertsPerToken = r.integer("num_experts_per_tok", 1, m.experts);
        m.moeFfn = m.ffn;
    } else if (t == "qwen3" || t == "qwen3_moe") {
        readQwen3Text(r, m, t == "qwen3_moe");
    } else if (t == "qwen3_vl" || t == "qwen3_vl_moe") {
        // Qwen3VLForConditionalGeneration and Qwen3VLMoeForConditionalGeneration: Qwen3's language model
        // under text_config (the MoE one's experts as two batched tensors per layer,
        // Qwen3VLMoeTextExperts) and the vision tower under vision_config.
        const MultimodalParts parts(r, config, true);
        const Reader tr = parts.textReader(), vr = parts.visionReader();
        const bool moe = t == "qwen3_vl_moe";
        readQwen3Text(tr, m, moe);
        m.fusedExperts = moe;
        m.tiedEmbeddings = r.boolean("tie_word_embeddings", m.tiedEmbeddings);
        if (parts.hasVision)
            m.visionTensors = qwen3VisionTensors(vr, true);
        m.quantization = readQuantization(config, path);
        return m;
    } else if (t == "qwen3_next") {
        readQwen3Next(r, config, m, Qwen3NextFamily::Next);
    } else if (t == "qwen3_5" || t == "qwen3_5_moe" || t == "qwen3_5_text" || t == "qwen3_5_moe_text") {
        // Qwen3.5 and 3.6 (Qwen3_5ForConditionalGeneration, Qwen3_5MoeForConditionalGeneration): Qwen3-Next's
        // language model under text_config (or at the top in a text-only config), dense MLPs or experts, and
        // a vision tower that is Qwen3-VL's without its DeepStack mergers (modeling_qwen3_5.py
        // Qwen3_5VisionModel). The checkpoints' multi-token-prediction layer (mtp.*) is not part of the model
        // transformers builds, and vLLM loads it only for speculative decoding: not counted.
        const MultimodalParts parts(r, config, false);
        const bool nested = config.contains("text_config");
        const Reader tr = nested ? parts.textReader() : Reader(config, path);
        const bool moe = t.rfind("qwen3_5_moe", 0) == 0;
        readQwen3Next(tr, nested ? *parts.text : config, m,
                      moe ? Qwen3NextFamily::Qwen35Moe : Qwen3NextFamily::Qwen35Dense);
        m.tiedEmbeddings = r.boolean("tie_word_embeddings", m.tiedEmbeddings);
        if (parts.hasVision)
            m.visionTensors = qwen3VisionTensors(parts.visionReader(), false);
        m.quantization = readQuantization(config, path);
        return m;
    } else if (t == "gpt_neox") {
        m.hidden = r.integer("hidden_size", 1, kMaxDim);
        m.layers = r.integer("num_hidden_layers", 1, kMaxLayers);
        m.heads = r.integer("num_attention_heads", 1, kMaxDim);
        // As for gpt2: not a key of transformers' GPTNeoXConfig, read for Megatron GPTs with rotary
        // embeddings and --group-query-attention.
        m.kvHeads = r.integer("num_key_value_heads", 1, kMaxDim, m.heads);
        if (m.heads % m.kvHeads != 0)
            throw Error(r.at("num_key_value_heads"),
                        "must divide num_attention_heads (" + std::to_string(m.heads) + ")");
        m.headDim = m.hidden / m.heads;
        m.qkNorm = r.boolean("qk_layernorm", false); // as for gpt2: Megatron's --qk-layernorm
        m.ffn = r.integer("intermediate_size", 1, kMaxDim, 4 * m.hidden);
        m.vocab = r.integer("vocab_size", 1, kMaxDim);
        m.maxPositions = r.integer("max_position_embeddings", 1, 1LL << 30, 0);
        m.tiedEmbeddings = r.boolean("tie_word_embeddings", false);
        m.gatedMlp = false;
        m.normHasBias = true;
        m.qkvBias = m.outBias = r.boolean("attention_bias", true);
        m.mlpBias = true;
        m.dropout = r.number("attention_dropout", 0) > 0 || r.number("hidden_dropout", 0) > 0;
    } else if (t == "deepseek_v3") {
        readLlamaLike(r, m, false);
        m.mla = true;
        m.qLoraRank = r.integer("q_lora_rank", 0, kMaxDim, 0);
        m.kvLoraRank = r.integer("kv_lora_rank", 1, kMaxDim);
        m.qkNopeHeadDim = r.integer("qk_nope_head_dim", 0, kMaxDim);
        m.qkRopeHeadDim = r.integer("qk_rope_head_dim", 0, kMaxDim);
        m.vHeadDim = r.integer("v_head_dim", 1, kMaxDim);
        m.headDim = m.qkNopeHeadDim + m.qkRopeHeadDim;
        m.kvHeads = m.heads;
        m.experts = r.integer("n_routed_experts", 0, 1 << 16, 0);
        if (m.experts > 0) {
            m.expertsPerToken = r.integer("num_experts_per_tok", 1, m.experts);
            m.sharedExperts = r.integer("n_shared_experts", 0, 1 << 16, 0);
            m.moeFfn = r.integer("moe_intermediate_size", 1, kMaxDim);
            m.firstDenseLayers = r.integer("first_k_dense_replace", 0, kMaxLayers, 0);
            m.moeLayerFreq = r.integer("moe_layer_freq", 1, kMaxLayers, 1);
        }
    } else if (t == "gpt_oss") {
        readLlamaLike(r, m, false);
        m.headDim = r.integer("head_dim", 1, kMaxDim, 64);
        m.qkvBias = m.outBias = r.boolean("attention_bias", true);
        m.attentionSinks = true;
        m.experts = r.integer("num_local_experts", 1, 1 << 16);
        m.expertsPerToken = r.has("experts_per_token") ? r.integer("experts_per_token", 1, m.experts)
                                                       : r.integer("num_experts_per_tok", 1, m.experts);
        m.moeFfn = m.ffn;
        m.routerBias = true;
        m.mlpBias = true; // expert projections carry biases
    } else {
        std::string list;
        for (const auto& s : supportedModelTypes())
            list += (list.empty() ? "" : ", ") + s;
        throw Error(r.at("model_type"), "unknown model family '" + t + "' (supported: " + list +
                                            "); give \"parameters\": N to plan with the size alone");
    }
    readSlidingWindows(config, path, m);
    m.quantization = readQuantization(config, path);
    return m;
}

} // namespace

} // namespace headroom
