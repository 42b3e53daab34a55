// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace headroom {

// How a checkpoint stores its linear layers, from the `quantization_config` of its config.json. The
// layouts are those the checkpoints ship (see docs/quantization.md for the files they were read from):
//  - mxfp4 (gpt-oss): 4-bit values packed two per byte plus one uint8 scale per 32 values along the input;
//  - fp8 (DeepSeek-V3, Qwen3-FP8): one byte per value plus one fp32 scale per block (weight_block_size),
//    or per output channel when no block is given (compressed-tensors "channel" strategy, a 16-bit scale);
//  - fbgemm_fp8 (Meta's FP8 checkpoints: Llama 3.1 405B, Llama 4 Maverick): one byte per value and one fp32
//    scale per output row (transformers' FbgemmFp8Linear weight_scale [out, 1] in float32, vLLM's
//    FBGEMMFp8Config);
//  - gptq / awq: `bits`-bit values packed in int32, per group of `group_size` inputs an fp16 scale and a
//    packed zero point; GPTQ adds an int32 g_idx per input.
// Embeddings, the LM head, norms, biases and routers stay in the checkpoint's 16-bit dtype, as do the
// modules the config lists in modules_to_not_convert / ignored_layers / ignore (a multimodal checkpoint's
// language_model prefix read as the text model's names).
struct Quantization {
    enum class Method { None, Mxfp4, Fp8, Int };
    Method method = Method::None;
    std::string name; // quant_method as written ("mxfp4", "fp8", "gptq", "awq", "compressed-tensors")
    int bits = 16;
    int groupSize = 0; // Int: inputs per scale group (0: one group per row)
    int blockRows = 0; // Fp8: weight_block_size; 0 = one scale per output channel
    int blockCols = 0;
    bool gIdx = false;             // GPTQ's act-order index (one int32 per input)
    double scaleBytes = 1;         // Mxfp4: bytes per 32-value scale (1 in the checkpoint)
    double channelScaleBytes = 2;  // Fp8 per output channel: bytes per scale (fbgemm_fp8 stores fp32)
    std::vector<std::string> skip; // module patterns left unquantised, as read
    // The same patterns, those that name one layer ("model.layers.12.mlp.gate") by that layer and the rest
    // apart: skips() reads these, so indexSkips() follows any change to `skip` (readQuantization calls it).
    std::map<int, std::vector<std::string>> layerSkip;
    std::vector<std::string> generalSkip;
    void indexSkips();
    // Whether some pattern names this layer alone: its bytes may differ from others of its kind.
    bool namesLayer(int layer) const { return layerSkip.count(layer) > 0; }

    bool active() const { return method != Method::None; }
    // Bytes of one out x in weight matrix stored this way (its bias is counted by the caller).
    double matrixBytes(std::uint64_t out, std::uint64_t in) const;
    // Whether the module with this dotted Hugging Face name is left unquantised.
    bool skips(const std::string& module) const;
    std::string label() const; // "mxfp4", "fp8 block 128x128", "gptq int4 g128"
};

// Reads config["quantization_config"] (absent: Method::None). `path` names the config for errors; an
// unknown quant_method is an error naming it rather than a silent bf16 estimate.
Quantization readQuantization(const nlohmann::json& config, const std::string& path);

} // namespace headroom
