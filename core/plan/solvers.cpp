// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/plan/solvers.h"

#include "core/error.h"
#include "core/plan/activations.h"
#include "core/plan/estimator.h"
#include "core/plan/gpucatalogue.h"
#include "core/plan/layout.h"
#include "core/plan/optimizerstate.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace headroom {

using nlohmann::json;

long long maxSequenceLength(const Scenario& sc, EstimateFn estimate, long long limit) {
    Scenario probe = sc.settingsCopy();
    const long long step = sc.cluster.contextParallel;
    auto fits = [&](long long s) {
        if (sc.mode == Mode::Training) {
            probe.training.sequenceLength = static_cast<int>(s);
        } else {
            probe.inference.contextLength = static_cast<int>(s);
            if (probe.inference.maxModelLen > 0) // an engine's request length is max_model_len
                probe.inference.maxModelLen = static_cast<int>(s);
        }
        return estimate(probe).fits;
    };
    // Allocated memory grows monotonically with the sequence, so bisect over multiples of the step, between
    // bounds found by doubling or halving from the scenario's own length (fewer estimates than from the
    // whole range: a replayed estimate costs milliseconds). Reserved memory, where the step is replayed
    // through the allocator, can dip at a longer length (tst_cs336replay::reservedNotMonotoneInTheLength):
    // then the answer is a length that fits whose next does not, not necessarily the longest.
    const long long top = limit / step;
    if (!fits(step))
        return 0;
    const long long own = std::clamp<long long>(
        (sc.mode == Mode::Training ? sc.training.sequenceLength : sc.inference.contextLength) / step, 1, top);
    long long lo = 1, hi = top;
    if (fits(own * step)) {
        lo = own;
        while (lo < top) {
            const long long next = std::min(top, lo * 2);
            if (!fits(next * step)) {
                hi = next;
                break;
            }
            lo = next;
        }
        if (lo == top)
            return top * step;
    } else {
        hi = own;
        while (hi / 2 > 1 && !fits(hi / 2 * step))
            hi /= 2;
        lo = std::max(1LL, hi / 2);
    }
    while (hi - lo > 1) {
        const long long mid = lo + (hi - lo) / 2;
        (fits(mid * step) ? lo : hi) = mid;
    }
    return lo * step;
}

void setNumGpus(ClusterSettings& c, int n) {
    c.numGpus = n;
    if (!c.gpusPerNodeGiven) // as the reader defaults it
        c.gpusPerNode = std::min(8, n);
}

// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the caching allocator maps pages at the end of a segment
// that grows in place where it would make a new segment of the size asked for, so less stays cached beside
// what is allocated (c10/cuda/CUDACachingAllocator.cpp, ExpandableSegment). An environment variable, no code
// changed; worth what the plan's replay of the step (or the measured fraction that stands for one) no longer
// reserves.
void addExpandableSegments(const Scenario& sc, std::vector<Change>& out) {
    if (sc.cluster.expandableSegments)
        return;
    out.push_back({"expandable_segments",
                   "Expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)",
                   {{"cluster", {{"expandable_segments", true}}}},
                   [](Scenario& s) { setExpandableSegments(s, true); }});
}

// Drops the changes whose id is not among `ids`.
void keepOnly(std::vector<Change>& changes, std::initializer_list<const char*> ids) {
    std::erase_if(changes, [&](const Change& c) {
        return std::none_of(ids.begin(), ids.end(), [&](const char* id) { return c.id == id; });
    });
}

std::vector<Change> trainingChanges(const Scenario& sc) {
    std::vector<Change> out;
    const auto& t = sc.training;
    const auto& c = sc.cluster;
    if (t.attention == Attention::Eager)
        out.push_back({"flash_attention",
                       "FlashAttention instead of eager attention",
                       {{"training", {{"attention", "flash"}}}},
                       [](Scenario& s) { s.training.attention = Attention::Flash; }});
    // Unsloth takes flash-attn when it is installed on an Ampere or newer GPU, and its K and V are no
    // longer expanded to every query head.
    if (t.attention == Attention::Xformers && computeCapability(c.gpu) >= 8.0)
        out.push_back({"flash_attn_installed",
                       "Install flash-attn (Unsloth's xformers path expands K and V)",
                       {{"training", {{"attention", "flash"}}}},
                       [](Scenario& s) { s.training.attention = Attention::Flash; }});
    if (t.checkpointing == Checkpointing::None && t.framework == Framework::Torchtitan)
        out.push_back({"selective_checkpointing",
                       "Per-op selective activation checkpointing",
                       {{"training", {{"activation_checkpointing", "selective_op"}}}},
                       [](Scenario& s) { s.training.checkpointing = Checkpointing::SelectiveOp; }});
    else if (t.checkpointing == Checkpointing::None)
        out.push_back({"selective_checkpointing",
                       "Selective activation checkpointing",
                       {{"training", {{"activation_checkpointing", "selective"}}}},
                       [](Scenario& s) { s.training.checkpointing = Checkpointing::Selective; }});
    if (t.checkpointing != Checkpointing::Full)
        out.push_back({"full_checkpointing",
                       "Full activation checkpointing",
                       {{"training", {{"activation_checkpointing", "full"}}}},
                       [](Scenario& s) { s.training.checkpointing = Checkpointing::Full; }});
    if (c.dataParallelSize() > 1) {
        static const char* next[] = {"zero1", "zero2", "zero3"};
        static const DataParallel nextStage[] = {DataParallel::Zero1, DataParallel::Zero2,
                                                 DataParallel::Zero3};
        const int stage = c.dataParallel == DataParallel::Ddp     ? 0
                          : c.dataParallel == DataParallel::Zero1 ? 1
                          : c.dataParallel == DataParallel::Zero2 ? 2
                                                                  : 3;
        if (stage < 3)
            out.push_back({"next_zero_stage",
                           std::string("Shard more: ") + next[stage] + " instead of " + c.dataParallelName,
                           {{"cluster", {{"data_parallel", next[stage]}}}},
                           [stage](Scenario& s) {
                               s.cluster.dataParallel = nextStage[stage];
                               s.cluster.dataParallelName = next[stage];
                           }});
    }
    if (!c.offloadOptimizer)
        out.push_back({"offload_optimizer",
                       "Offload optimizer states to CPU memory",
                       {{"cluster", {{"offload_optimizer", true}}}},
                       [](Scenario& s) { s.cluster.offloadOptimizer = true; }});
    if (!c.offloadParameters &&
        (c.dataParallel == DataParallel::Zero3 || c.dataParallel == DataParallel::HybridShard))
        out.push_back({"offload_parameters",
                       "Offload parameters to CPU memory",
                       {{"cluster", {{"offload_parameters", true}}}},
                       [](Scenario& s) { s.cluster.offloadParameters = true; }});
    out.push_back({"double_gpus",
                   "Twice the GPUs (" + std::to_string(2 * c.numGpus) + ", more data parallelism)",
                   {{"cluster", {{"num_gpus", 2 * c.numGpus}}}},
                   [](Scenario& s) { setNumGpus(s.cluster, 2 * s.cluster.numGpus); }});
    if (c.tensorParallel > 1 && !c.sequenceParallel)
        out.push_back({"sequence_parallel",
                       "Sequence parallelism with the tensor parallelism",
                       {{"cluster", {{"sequence_parallel", true}}}},
                       [](Scenario& s) { s.cluster.sequenceParallel = true; }});
    if (sc.model.known && sc.model.heads % (2 * c.tensorParallel) == 0 && c.dataParallelSize() % 2 == 0)
        out.push_back({"double_tensor_parallel",
                       "Tensor parallel " + std::to_string(2 * c.tensorParallel) + " on the same GPUs",
                       {{"cluster", {{"tensor_parallel", 2 * c.tensorParallel}}}},
                       [](Scenario& s) { s.cluster.tensorParallel *= 2; }});
    if (t.microBatchSize > 1 && !t.optimizerInBackward) // a step in the backward cannot accumulate
        out.push_back(
            {"halve_micro_batch",
             "Micro-batch " + std::to_string(t.microBatchSize / 2) + " with twice the accumulation steps",
             {{"training",
               {{"micro_batch_size", t.microBatchSize / 2},
                {"gradient_accumulation_steps", 2 * t.gradientAccumulationSteps}}}},
             [](Scenario& s) {
                 s.training.microBatchSize /= 2;
                 s.training.gradientAccumulationSteps *= 2;
             }});
    // The loss's fp32 logits and their gradients: often the largest single tensors of a step.
    if (sc.model.known && t.framework == Framework::Torchtitan && !t.compile) {
        // The loss follows compile's default unless the file names one.
        const bool lossGiven = sc.document.contains("training") && sc.document["training"].is_object() &&
                               sc.document["training"].contains("loss");
        out.push_back({"compile",
                       "torch.compile (torchtitan compiles the loss too)",
                       {{"training", {{"compile", true}}}},
                       [lossGiven](Scenario& s) {
                           s.training.compile = true;
                           if (!lossGiven)
                               s.training.loss = defaultLoss(s.training.framework, true);
                       }});
    }
    if (sc.model.known && t.framework == Framework::Torchtune && t.loss == LossKind::Full)
        out.push_back({"chunked_loss",
                       "Chunked cross-entropy (CEWithChunkedOutputLoss)",
                       {{"training", {{"loss", "chunked"}}}},
                       [](Scenario& s) { s.training.loss = LossKind::Chunked; }});
    if (sc.model.known && t.loss != LossKind::Fused && t.loss != LossKind::FusedLinear)
        out.push_back({"fused_loss",
                       "A compiled cross-entropy that writes no fp32 logits (torch.compile on the loss)",
                       {{"training", {{"loss", "fused"}}}},
                       [](Scenario& s) { s.training.loss = LossKind::Fused; }});
    if (sc.model.known && t.loss != LossKind::FusedLinear)
        out.push_back({"fused_linear_loss",
                       "The output layer fused with the loss, no logits (Liger, Cut Cross-Entropy)",
                       {{"training", {{"loss", "fused_linear"}}}},
                       [](Scenario& s) { s.training.loss = LossKind::FusedLinear; }});
    if (sc.model.known && !t.activationOffloading)
        out.push_back({"activation_offloading",
                       "Offload saved activations to CPU memory",
                       {{"training", {{"activation_offloading", true}}}},
                       [](Scenario& s) { s.training.activationOffloading = true; }});
    if (sc.model.known && !t.optimizerInBackward && t.gradientAccumulationSteps == 1 &&
        sc.cluster.pipelineParallel == 1)
        out.push_back(
            {"optimizer_in_backward",
             "Step the optimizer in the backward, a parameter at a time (torchtune's optimizer_in_bwd)",
             {{"training", {{"optimizer_in_backward", true}}}},
             [](Scenario& s) { s.training.optimizerInBackward = true; }});
    // The previous step's gradients held through the forward (zero_grad after it, or set_to_none=False):
    // zero_grad() before the forward frees them (training.zero_grad).
    if (t.zeroGrad != ZeroGrad::BeforeForward && !t.firstStep)
        out.push_back({"zero_grad_before_forward",
                       "zero_grad() before the forward (the previous step's gradients freed)",
                       {{"training", {{"zero_grad", "before_forward"}}}},
                       [](Scenario& s) { s.training.zeroGrad = ZeroGrad::BeforeForward; }});
    // Fine-tuning (training.fine_tuning): what people trade when a LoRA run does not fit.
    const FineTuning& ft = t.fineTuning;
    if (sc.model.known && !ft.adapters() && !t.optimizerInBackward)
        out.push_back({"lora",
                       "LoRA rank 16 on q_proj, v_proj instead of full fine-tuning",
                       {{"training",
                         {{"fine_tuning",
                           {{"method", "lora"}, {"rank", 16}, {"target_modules", {"q_proj", "v_proj"}}}}}}},
                       [](Scenario& s) {
                           FineTuning& f = s.training.fineTuning;
                           f.method = FineTuneMethod::Lora;
                           f.rank = 16;
                           f.targets = {"q_proj", "v_proj"};
                           f.alpha = 32;
                           // The reader's defaults for the framework: torchtune's adapters are bf16.
                           f.adapterBytes = s.training.framework == Framework::Torchtune ? 2 : 4;
                       }});
    if (sc.model.known && ft.adapters() && ft.baseQuantization == BaseQuantization::None)
        out.push_back({"qlora",
                       "QLoRA: the frozen base in 4-bit NF4",
                       {{"training", {{"fine_tuning", {{"method", "qlora"}, {"base_quantization", "nf4"}}}}}},
                       [](Scenario& s) {
                           s.training.fineTuning.method = FineTuneMethod::Qlora;
                           s.training.fineTuning.baseQuantization = BaseQuantization::Nf4;
                       }});
    // bitsandbytes' 4-bit base with its scales quantised too (bnb_4bit_use_double_quant=True): a uint8
    // scale per 64 weights and an fp32 one per 256 of those where an fp32 scale was, about 3/64 of a byte
    // less per weight (the QLoRA paper's 0.37 bits).
    if (ft.adapters() && !ft.doubleQuantization &&
        (ft.baseQuantization == BaseQuantization::Nf4 || ft.baseQuantization == BaseQuantization::Fp4))
        out.push_back({"double_quantization",
                       "Double quantisation of the 4-bit base's scales (bnb_4bit_use_double_quant=True)",
                       {{"training", {{"fine_tuning", {{"double_quantization", true}}}}}},
                       [](Scenario& s) { s.training.fineTuning.doubleQuantization = true; }});
    if (ft.adapters() && ft.rank > 8)
        out.push_back({"lora_rank_8",
                       "Rank 8 instead of " + std::to_string(ft.rank),
                       {{"training", {{"fine_tuning", {{"rank", 8}}}}}},
                       [](Scenario& s) { s.training.fineTuning.rank = 8; }});
    if (ft.adapters()) {
        std::vector<std::string> attention;
        for (const std::string& m : ft.targets)
            if (m == "q_proj" || m == "k_proj" || m == "v_proj" || m == "o_proj")
                attention.push_back(m);
        if (!attention.empty() && attention.size() < ft.targets.size())
            out.push_back({"lora_attention_only",
                           "Adapters on the attention projections only",
                           {{"training", {{"fine_tuning", {{"target_modules", attention}}}}}},
                           [attention](Scenario& s) { s.training.fineTuning.targets = attention; }});
    }
    if (ft.adapters() && ft.adapterBytes > 2)
        // Unsloth's kernels compute the adapters in the activations' dtype whatever theirs: only their
        // gradients and states shrink; PEFT's layers also drop an fp32 copy of each adapted input.
        out.push_back({"bf16_adapters",
                       t.framework == Framework::Unsloth && unslothFallback(sc).empty()
                           ? "bf16 adapters (their gradients and optimizer states in bf16)"
                           : "bf16 adapters (no fp32 copy of each adapted input)",
                       {{"training", {{"fine_tuning", {{"adapter_dtype", "bf16"}}}}}},
                       [](Scenario& s) { s.training.fineTuning.adapterBytes = 2; }});
    if (t.optimizer == Optimizer::AdamW && !t.bytesOverridden)
        out.push_back({"adam8bit",
                       "8-bit Adam (bitsandbytes) instead of AdamW",
                       {{"training", {{"optimizer", "adam8bit"}}}},
                       [](Scenario& s) {
                           s.training.optimizer = Optimizer::Adam8bit;
                           s.training.bytes.optimizerStates = optimizerStateBytes(s.training); // as read
                       }});
    // bitsandbytes' paged optimizers (docs/frameworks.md, *Paged optimizers*): the states the GPU has no room
    // for wait in host memory. Where a bitsandbytes optimizer can replace the framework's: torch.optim's
    // place in a training loop, torchtune's configs, Trainer's optim; not Megatron's, DeepSpeed's or
    // torchtitan's own optimizers. Worth what it moves off the GPU (rankPlanSavings), so offered only when
    // the GPU is short.
    if ((t.optimizer == Optimizer::AdamW || t.optimizer == Optimizer::Adam8bit) && !t.pagedOptimizer &&
        !c.offloadOptimizer && t.framework != Framework::Megatron && t.framework != Framework::DeepSpeed &&
        t.framework != Framework::Torchtitan)
        out.push_back({"paged_optimizer",
                       t.optimizer == Optimizer::Adam8bit
                           ? "Paged 8-bit Adam (bitsandbytes): states spill to host memory"
                           : "Paged AdamW (bitsandbytes, fp32 states): spill to host memory",
                       {{"training", {{"paged_optimizer", true}}}},
                       [](Scenario& s) {
                           s.training.pagedOptimizer = true;
                           if (!s.training.bytesOverridden)
                               s.training.bytes.optimizerStates = optimizerStateBytes(s.training); // as read
                       },
                       true});
    addExpandableSegments(sc, out);
    if (t.framework == Framework::Cs336Basics)
        // cs336_basics runs its own modules on one GPU: what its code can change without another
        // framework (torch.utils.checkpoint, smaller micro-batches, bitsandbytes' optimizers for its own,
        // the allocator's setting).
        keepOnly(out, {"full_checkpointing", "double_gpus", "halve_micro_batch", "adam8bit",
                       "paged_optimizer", "zero_grad_before_forward", "expandable_segments"});
    return out;
}

std::vector<Change> inferenceChanges(const Scenario& sc) {
    std::vector<Change> out;
    const auto& in = sc.inference;
    const auto& c = sc.cluster;
    // transformers' DynamicCache keeps keys and values in the model's dtype (its quantised caches are
    // optimum-quanto's and HQQ's int2/int4, not FP8).
    if (in.kvCacheBytes > 1 && in.engine != Engine::HuggingFace)
        out.push_back(
            {"fp8_kv_cache", "FP8 KV cache", {{"inference", {{"kv_cache_dtype", "fp8"}}}}, [](Scenario& s) {
                 s.inference.kvCacheDtype = "fp8";
                 s.inference.kvCacheBytes = 1;
                 s.inference.kvCacheDtypeGiven = true;
             }});
    // transformers computes FP8 weights only on GPUs that have FP8 (it dequantizes them elsewhere).
    if (in.weightBytes > 1 && !in.quantised && !(in.engine == Engine::HuggingFace && !hasNativeFp8(c.gpu)))
        out.push_back(
            {"fp8_weights", "FP8 weights", {{"inference", {{"weight_dtype", "fp8"}}}}, [](Scenario& s) {
                 s.inference.weightDtype = "fp8";
                 s.inference.weightBytes = 1;
                 s.inference.quantised = false;
                 // Keys and values stay in the compute dtype unless kv_cache_dtype says otherwise: bf16
                 // for 8-bit weights (defaultKvCacheDtype, the reader's rule).
                 if (!s.inference.kvCacheDtypeGiven) {
                     s.inference.kvCacheDtype = "bf16";
                     s.inference.kvCacheBytes = 2;
                 }
             }});
    if (in.attention == Attention::Eager)
        out.push_back({"flash_attention",
                       "FlashAttention instead of eager attention",
                       {{"inference", {{"attention", "flash"}}}},
                       [](Scenario& s) { s.inference.attention = Attention::Flash; }});
    if (sc.model.known && sc.model.heads % (2 * c.tensorParallel) == 0)
        out.push_back(
            {"double_tensor_parallel",
             "Tensor parallel " + std::to_string(2 * c.tensorParallel),
             {{"cluster", {{"tensor_parallel", 2 * c.tensorParallel}, {"num_gpus", 2 * c.numGpus}}}},
             [](Scenario& s) {
                 s.cluster.tensorParallel *= 2;
                 setNumGpus(s.cluster, 2 * s.cluster.numGpus);
             }});
    if (in.batchSize > 1)
        out.push_back({"halve_batch",
                       "Batch " + std::to_string(in.batchSize / 2),
                       {{"inference", {{"batch_size", in.batchSize / 2}}}},
                       [](Scenario& s) { s.inference.batchSize /= 2; }});
    // A loop that holds the previous forward's output holds its graph through the next forward: dropping it
    // first (`del out`, or a loop whose output goes out of scope) keeps one graph.
    if (in.gradEnabled && in.previousOutputHeld)
        out.push_back({"drop_previous_output",
                       "Drop the previous output before the next forward (del out: one graph alive)",
                       {{"inference", {{"previous_output_held", false}}}},
                       [](Scenario& s) { s.inference.previousOutputHeld = false; }});
    // A forward with autograd on keeps its whole graph: torch.no_grad keeps none of it (nor does the
    // output it returns, which the setting then no longer describes).
    json noGraph = {{"inference", {{"grad_mode", "no_grad"}}}};
    if (in.previousOutputHeld)
        noGraph["inference"]["previous_output_held"] = false;
    if (in.gradEnabled)
        out.push_back({"no_grad", "torch.no_grad around the forward (autograd keeps no graph)", noGraph,
                       [](Scenario& s) {
                           s.inference.gradEnabled = false;
                           s.inference.previousOutputHeld = false;
                       }});
    // Autocast's cached weight copies (docs/formats.md section 2): torch.inference_mode keeps none.
    if (in.engine == Engine::None && in.autocastBytes > 0 && in.weightBytes > in.autocastBytes && !in.quantised &&
        !in.inferenceMode)
        out.push_back(
            {"inference_mode",
             in.gradEnabled
                 ? "torch.inference_mode around the forward (no graph, and autocast keeps no weight copies)"
                 : "torch.inference_mode instead of torch.no_grad (autocast keeps no weight copies)",
             in.previousOutputHeld
                 ? json{{"inference", {{"grad_mode", "inference_mode"}, {"previous_output_held", false}}}}
                 : json{{"inference", {{"grad_mode", "inference_mode"}}}},
             [](Scenario& s) {
                 s.inference.inferenceMode = true;
                 s.inference.gradEnabled = false;
                 s.inference.previousOutputHeld = false;
             }});
    // Every position's logits (inference.logits): a generation loop samples the last one's, which
    // generate asks for alone (logits_to_keep=1); a scoring pass needs them all, but not their fp32 copy.
    if (in.engine == Engine::None && in.framework == Framework::PyTorch && !in.gradEnabled) {
        if (in.logits != ForwardLogits::Last && in.kvCache)
            out.push_back({"last_logits",
                           "Only the last position's logits (logits_to_keep=1, as generate asks)",
                           {{"inference", {{"logits", "last"}}}},
                           [](Scenario& s) { s.inference.logits = ForwardLogits::Last; }});
        else if (in.logits == ForwardLogits::AllFp32)
            out.push_back({"logits_without_upcast",
                           "Logits in the compute dtype (no fp32 copy of every position's)",
                           {{"inference", {{"logits", "all"}}}},
                           [](Scenario& s) { s.inference.logits = ForwardLogits::All; }});
    }
    // vLLM and SGLang size their pools from what is free at start-up, whatever the allocator's setting.
    if (in.engine == Engine::None || in.engine == Engine::HuggingFace)
        addExpandableSegments(sc, out);
    if (in.framework == Framework::Cs336Basics) // its forward caches nothing; weights as they are
        keepOnly(out,
                 {"halve_batch", "drop_previous_output", "no_grad", "inference_mode", "expandable_segments"});
    return out;
}

std::vector<Saving> rankPlanSavings(const Scenario& sc, EstimateFn estimate) {
    const Estimate current = estimate(sc);
    const double before = current.peakBytes;
    std::vector<Saving> out;
    const Scenario base = sc.settingsCopy();
    for (auto& ch : sc.mode == Mode::Training ? trainingChanges(sc) : inferenceChanges(sc)) {
        Scenario changed = base;
        ch.edit(changed);
        try {
            checkLayout(changed);
        } catch (const Error&) {
            continue; // the change is not valid for this layout (e.g. heads not divisible)
        }
        const Estimate after = estimate(changed);
        // A change that pages the optimizer's states is worth what leaves the GPU; on a scenario already
        // paged, a change is worth what it takes off the whole peak, as every other.
        const double afterBytes = sc.training.pagedOptimizer ? after.peakBytes : after.gpuPeakBytes();
        if (afterBytes >= before || (ch.offeredWhenSpilling && after.pagedToHostBytes <= 0))
            continue;
        out.push_back({ch.id, ch.description, ch.patch, before - afterBytes, afterBytes, after.fits});
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const Saving& a, const Saving& b) { return a.bytesSaved > b.bytesSaved; });
    return out;
}

} // namespace headroom
