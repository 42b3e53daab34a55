// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/plan/settingnames.h"

#include <cctype>
#include <exception>
#include <tuple>

namespace headroom {

namespace {
template <typename T, std::size_t N> std::span<const T> all(const T (&table)[N]) {
    return {table, N};
}
} // namespace

std::span<const Named<Optimizer>> optimizerNames() {
    static constexpr Named<Optimizer> t[] = {{"adamw", Optimizer::AdamW, "AdamW"},
                                             {"adam", Optimizer::AdamW, nullptr},
                                             {"sgd", Optimizer::SgdMomentum, "SGD with momentum"},
                                             {"adam8bit", Optimizer::Adam8bit, "8-bit Adam"}};
    return all(t);
}

std::span<const Named<Checkpointing>> checkpointingNames() {
    static constexpr Named<Checkpointing> t[] = {
        {"none", Checkpointing::None, "none"},
        {"selective", Checkpointing::Selective, "selective (attention core)"},
        {"selective_op", Checkpointing::SelectiveOp, "per-op selective (torchtitan)"},
        {"full", Checkpointing::Full, "full (layer inputs only)"}};
    return all(t);
}

std::span<const Named<ZeroGrad>> zeroGradNames() {
    static constexpr Named<ZeroGrad> t[] = {
        {"before_forward", ZeroGrad::BeforeForward, "before the forward (freed)"},
        {"after_forward", ZeroGrad::AfterForward, "after the forward (held through it)"},
        {"keep", ZeroGrad::Keep, "set_to_none=False (never freed)"}};
    return all(t);
}

std::span<const Named<Framework>> frameworkNames() {
    static constexpr Named<Framework> t[] = {{"pytorch", Framework::PyTorch, "plain PyTorch"},
                                             {"huggingface", Framework::HuggingFace, "Hugging Face Trainer"},
                                             {"megatron", Framework::Megatron, "Megatron-Core"},
                                             {"torchtitan", Framework::Torchtitan, "torchtitan (FSDP2)"},
                                             {"deepspeed", Framework::DeepSpeed, "DeepSpeed"},
                                             {"torchtune", Framework::Torchtune, "torchtune"},
                                             {"unsloth", Framework::Unsloth, "Unsloth"},
                                             {"cs336_basics", Framework::Cs336Basics, "CS336 basics"}};
    return all(t);
}

std::span<const Named<FineTuneMethod>> fineTuneMethodNames() {
    static constexpr Named<FineTuneMethod> t[] = {{"full", FineTuneMethod::Full, "full fine-tuning"},
                                                  {"lora", FineTuneMethod::Lora, "LoRA"},
                                                  {"qlora", FineTuneMethod::Qlora, "QLoRA (quantised base)"},
                                                  {"dora", FineTuneMethod::Dora, "DoRA"}};
    return all(t);
}

std::span<const Named<BaseQuantization>> baseQuantizationNames() {
    static constexpr Named<BaseQuantization> t[] = {{"none", BaseQuantization::None, "16-bit"},
                                                    {"int8", BaseQuantization::Int8, "int8 (LLM.int8)"},
                                                    {"nf4", BaseQuantization::Nf4, "4-bit NF4"},
                                                    {"fp4", BaseQuantization::Fp4, "4-bit FP4"}};
    return all(t);
}

std::span<const NamedText> loraTargetNames() {
    static constexpr NamedText t[] = {{"q_proj", "q_proj"},
                                      {"k_proj", "k_proj"},
                                      {"v_proj", "v_proj"},
                                      {"o_proj", "o_proj"},
                                      {"gate_proj", "gate_proj"},
                                      {"up_proj", "up_proj"},
                                      {"down_proj", "down_proj"},
                                      {"lm_head", "lm_head"},
                                      {"output_proj", "o_proj"},
                                      {"w1", "gate_proj"},
                                      {"w3", "up_proj"},
                                      {"w2", "down_proj"},
                                      {"output", "lm_head"},
                                      {"q_a_proj", "q_a_proj"},
                                      {"q_b_proj", "q_b_proj"},
                                      {"kv_a_proj_with_mqa", "kv_a_proj_with_mqa"},
                                      {"kv_b_proj", "kv_b_proj"},
                                      {"in_proj_qkvz", "in_proj_qkvz"},
                                      {"in_proj_ba", "in_proj_ba"},
                                      {"in_proj_qkv", "in_proj_qkv"},
                                      {"in_proj_z", "in_proj_z"},
                                      {"in_proj_b", "in_proj_b"},
                                      {"in_proj_a", "in_proj_a"},
                                      {"out_proj", "out_proj"}};
    return all(t);
}

std::span<const Named<RecomputeMethod>> recomputeMethodNames() {
    static constexpr Named<RecomputeMethod> t[] = {
        {"every_layer", RecomputeMethod::EveryLayer, "every layer"},
        {"uniform", RecomputeMethod::Uniform, "uniform groups (Megatron)"},
        {"block", RecomputeMethod::Block, "first layers of each stage (Megatron)"}};
    return all(t);
}

std::span<const Named<OptimizerImpl>> optimizerImplNames() {
    static constexpr Named<OptimizerImpl> t[] = {
        {"foreach", OptimizerImpl::ForEach, "foreach (torch's default)"},
        {"fused", OptimizerImpl::Fused, "fused kernel"},
        {"for_loop", OptimizerImpl::ForLoop, "one tensor at a time"},
        {"cs336_basics", OptimizerImpl::Cs336Basics, "cs336_basics' own AdamW"}};
    return all(t);
}

std::span<const Named<Float8>> float8Names() {
    static constexpr Named<Float8> t[] = {{"none", Float8::None, "none"},
                                          {"tensorwise", Float8::Tensorwise, "tensorwise"},
                                          {"rowwise", Float8::Rowwise, "rowwise"}};
    return all(t);
}

std::span<const Named<LossKind>> lossNames() {
    static constexpr Named<LossKind> t[] = {
        {"full", LossKind::Full, "as the framework writes it"},
        {"chunked", LossKind::Chunked, "chunked (torchtune)"},
        {"fused", LossKind::Fused, "compiled / fused"},
        {"fused_linear", LossKind::FusedLinear, "fused linear (Liger, CCE)"}};
    return all(t);
}

std::span<const Named<Engine>> engineNames() {
    static constexpr Named<Engine> t[] = {{"none", Engine::None, "none (the batch below)"},
                                          {"vllm", Engine::Vllm, "vLLM"},
                                          {"sglang", Engine::Sglang, "SGLang"},
                                          {"huggingface", Engine::HuggingFace, "Hugging Face generate"}};
    return all(t);
}

std::span<const Named<Attention>> attentionNames() {
    static constexpr Named<Attention> t[] = {{"flash", Attention::Flash, "FlashAttention / SDPA"},
                                             {"sdpa", Attention::Flash, nullptr},
                                             {"eager", Attention::Eager, "eager (stores scores)"},
                                             {"xformers", Attention::Xformers, "xformers (Unsloth)"}};
    return all(t);
}

std::span<const Named<ForwardLogits>> forwardLogitsNames() {
    static constexpr Named<ForwardLogits> t[] = {
        {"last", ForwardLogits::Last, "the last position's (generate)"},
        {"all", ForwardLogits::All, "every position's (model(input_ids))"},
        {"all_fp32", ForwardLogits::AllFp32, "every position's, upcast to fp32"}};
    return all(t);
}

std::span<const Named<DataParallel>> dataParallelNames() {
    static constexpr Named<DataParallel> t[] = {
        {"ddp", DataParallel::Ddp, "DDP"},
        {"fsdp_no_shard", DataParallel::Ddp, "FSDP NO_SHARD"},
        {"zero1", DataParallel::Zero1, "ZeRO-1"},
        {"zero2", DataParallel::Zero2, "ZeRO-2"},
        {"fsdp_shard_grad_op", DataParallel::Zero2, "FSDP SHARD_GRAD_OP"},
        {"zero3", DataParallel::Zero3, "ZeRO-3"},
        {"fsdp_full_shard", DataParallel::Zero3, "FSDP FULL_SHARD"},
        {"fsdp", DataParallel::Zero3, nullptr},
        {"hybrid_shard", DataParallel::HybridShard, "Hybrid shard"}};
    return all(t);
}

std::span<const Named<OffloadStep>> offloadStepNames() {
    static constexpr Named<OffloadStep> t[] = {{"cpu", OffloadStep::Cpu, "update on the CPU"},
                                               {"gpu", OffloadStep::Gpu, "stream states to the GPU"}};
    return all(t);
}

std::span<const NamedText> precisionNames() {
    static constexpr NamedText t[] = {{"bf16_mixed", "bf16 mixed (2+2+4+8 B)"},
                                      {"bf16_mixed_fp32_grads", "bf16, fp32 grads (2+4+4+8)"},
                                      {"fp16_mixed", "fp16 mixed (2+2+4+8)"},
                                      {"bf16", "pure bf16 (2+2+0+4 or 8)"},
                                      {"fp32", "fp32 (4+4+0+8)"}};
    return all(t);
}

std::span<const NamedText> autocastNames() {
    static constexpr NamedText t[] = {{"none", "none"}, {"bf16", "bf16"}, {"fp16", "fp16"}};
    return all(t);
}

std::span<const NamedText> weightDtypeNames() {
    static constexpr NamedText t[] = {{"checkpoint", "as the checkpoint stores them"},
                                      {"bf16", "bf16"},
                                      {"fp16", "fp16"},
                                      {"fp8", "fp8"},
                                      {"int8", "int8"},
                                      {"int4", "int4"}};
    return all(t);
}

std::span<const NamedText> kvCacheDtypeNames() {
    static constexpr NamedText t[] = {{"bf16", "bf16"}, {"fp16", "fp16"}, {"fp8", "fp8"}, {"int8", "int8"}};
    return all(t);
}

std::span<const NamedText> samplerNames() {
    static constexpr NamedText t[] = {{"pytorch", "PyTorch"}, {"flashinfer", "FlashInfer"}};
    return all(t);
}

std::span<const NamedText> mambaSsmCacheDtypeNames() {
    static constexpr NamedText t[] = {
        {"auto", "auto"}, {"float32", "float32"}, {"bfloat16", "bfloat16"}, {"float16", "float16"}};
    return all(t);
}

std::span<const NamedText> chunkedLayerNames() {
    static constexpr NamedText t[] = {
        {"release", "as the release does"}, {"pooled", "pooled apart"}, {"full", "cached in full"}};
    return all(t);
}

std::span<const IntRange> integerRanges() {
    static constexpr IntRange t[] = {
        {"/training/micro_batch_size", 1, 1 << 20, 1, 4096, true},
        {"/training/fine_tuning/rank", 1, 65536, 1, 512, true},
        {"/training/sequence_length", 1, 1 << 24, 128, 1 << 20, true},
        {"/training/gradient_accumulation_steps", 1, 1 << 20, 1, 1024, true},
        {"/training/checkpoint_every", 1, 1 << 20, 1, 64, false},
        {"/training/recompute_num_layers", 1, 1 << 20, 1, 128, false},
        {"/inference/batch_size", 1, 1 << 20, 1, 4096, true},
        {"/inference/context_length", 1, 1 << 24, 128, 1 << 20, true},
        {"/inference/prefill_chunk", 0, 1 << 24, 0, 1 << 17, false},
        {"/inference/kv_block_size", 0, 1 << 20, 0, 256, false},
        {"/inference/block_size", 1, 1 << 16, 1, 256, false}, // the engines' own name: a block of one or more
        {"/inference/max_model_len", 0, 1 << 24, 0, 1 << 20, false},
        {"/inference/max_num_batched_tokens", 0, 1 << 24, 0, 1 << 17, false},
        {"/inference/max_num_seqs", 0, 1 << 20, 0, 4096, false},
        {"/cluster/num_gpus", 1, 1 << 24, 1, 16384, true},
        {"/cluster/gpus_per_node", 1, 1 << 16, 1, 16, false},
        {"/cluster/tensor_parallel", 1, 1 << 16, 1, 64, true},
        {"/cluster/pipeline_parallel", 1, 1 << 16, 1, 128, true},
        {"/cluster/virtual_pipeline_stages", 1, 1 << 10, 1, 16, true},
        {"/cluster/microbatch_group_size_per_vp_stage", 1, 1 << 16, 1, 64, true},
        {"/cluster/context_parallel", 1, 1 << 16, 1, 64, true},
        {"/cluster/expert_parallel", 1, 1 << 16, 1, 256, true},
        {"/overheads/cuda_context_mib", 0, 1 << 20, 0, 4096, false},
        {"/overheads/nccl_mib_per_communicator", 0, 1 << 20, 0, 4096, false},
    };
    return all(t);
}

std::optional<Release> parseRelease(const std::string& text) {
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])))
        return std::nullopt;
    int major = -1, minor = -1;
    try {
        std::size_t used = 0;
        major = std::stoi(text, &used);
        if (used < text.size() && text[used] == '.' && used + 1 < text.size() &&
            std::isdigit(static_cast<unsigned char>(text[used + 1])))
            minor = std::stoi(text.substr(used + 1));
    } catch (const std::exception&) {
        return std::nullopt;
    }
    if (major < 0 || minor < 0 || major > 1000 || minor > 100000)
        return std::nullopt;
    return Release{major, minor};
}

// A bitsandbytes release, major.minor[.patch]; nullopt for anything else.
static std::optional<std::tuple<int, int, int>> bitsandbytesRelease(const std::string& release) {
    int part[3] = {0, 0, 0};
    std::size_t at = 0, parts = 0;
    while (parts < 3 && at < release.size() && std::isdigit(static_cast<unsigned char>(release[at]))) {
        int n = 0;
        while (at < release.size() && std::isdigit(static_cast<unsigned char>(release[at])) && n < 100000)
            n = n * 10 + (release[at++] - '0');
        part[parts++] = n;
        if (at < release.size() && release[at] == '.' && parts < 3)
            ++at;
        else
            break;
    }
    if (parts < 2 || at != release.size())
        return std::nullopt;
    return std::make_tuple(part[0], part[1], part[2]);
}

std::optional<bool> fourBitKeepsInputIn(const std::string& release) {
    const auto r = bitsandbytesRelease(release);
    if (!r)
        return std::nullopt;
    return *r < std::make_tuple(0, 43, 2);
}

std::optional<bool> int8KeepsTransposedInputIn(const std::string& release) {
    const auto r = bitsandbytesRelease(release);
    if (!r)
        return std::nullopt;
    return *r < std::make_tuple(0, 45, 0);
}

IntRange integerRange(std::string_view pointer) {
    for (const IntRange& r : integerRanges())
        if (pointer == r.pointer)
            return r;
    return {"", 0, 0, 0, 0, false};
}

} // namespace headroom
