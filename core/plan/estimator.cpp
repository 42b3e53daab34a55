// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/plan/estimator.h"

#include "core/plan/activations.h"
#include "core/plan/cs336basics.h"
#include "core/plan/cs336replay.h"
#include "core/plan/finetuning.h"
#include "core/plan/fsdp1pools.h"
#include "core/plan/optimizerstate.h"
#include "core/plan/stagemodel.h"
#include "core/plan/unslothreplay.h"
#include "core/plan/workspaces.h"

#include "core/plan/gpucatalogue.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

namespace headroom {

const char* phaseName(Phase p) {
    switch (p) {
    case Phase::Forward:
        return "forward";
    case Phase::Backward:
        return "backward";
    case Phase::Optimizer:
        return "optimizer";
    case Phase::Prefill:
        return "prefill";
    case Phase::Decode:
        return "decode";
    }
    return "";
}

namespace {

constexpr long long kMaxBatchSearched = 1 << 20;

bool shardsWeights(const ClusterSettings& c) {
    return c.dataParallel == DataParallel::Zero3 || c.dataParallel == DataParallel::HybridShard;
}
bool shardsGradients(const ClusterSettings& c) {
    return shardsWeights(c) || c.dataParallel == DataParallel::Zero2;
}
bool shardsOptimizer(const ClusterSettings& c) {
    return shardsGradients(c) || c.dataParallel == DataParallel::Zero1;
}

// How many GPUs share one copy of the sharded states: the whole data-parallel group, or for hybrid
// sharding only the data-parallel ranks inside one node.
double shardGroup(const ClusterSettings& c) {
    // Context-parallel ranks hold the same weights and average their gradients like data-parallel ones, so
    // ZeRO/FSDP shards over both (Megatron's data-parallel group "with context parallel", torchtitan's
    // dp_shard_cp mesh).
    const int dp = c.dataParallelSize() * c.contextParallel;
    if (c.dataParallel == DataParallel::HybridShard) {
        const int inNode = std::max(1, c.gpusPerNode / (c.tensorParallel * c.contextParallel));
        return std::min(dp, inNode);
    }
    return dp;
}

// Parameters held by one GPU of a stage after tensor, pipeline and expert parallelism (before ZeRO).
struct StageParams {
    double dense = 0;        // replicated across data parallel ranks
    double experts = 0;      // replicated across the expert-data-parallel group only
    double largestUnit = 0;  // the biggest block FSDP/ZeRO-3 gathers at once (a layer, or the embedding)
    double largestLayer = 0; // the biggest transformer layer
    double bytes = 0;        // inference: the weights' bytes as stored (quantised layers included)
};

// How many ranks split the routed experts. Training: tensor x expert parallel (Megatron's layout).
// Serving engines put expert parallelism across the tensor-parallel (and data-parallel) ranks and do
// not also slice the experts (vLLM's --enable-expert-parallel: EP size = TP x DP).
double expertShards(const Scenario& sc) {
    const ClusterSettings& c = sc.cluster;
    if (sc.mode == Mode::Inference && c.expertParallel > 1)
        return c.expertParallel;
    return static_cast<double>(c.tensorParallel) * c.expertParallel;
}

bool isHopper(const std::string& gpu) {
    for (const char* name : {"H100", "H200", "H800", "H20", "GH200"})
        if (gpu.find(name) != std::string::npos)
            return true;
    return false;
}

// One GPU's share of the embeddings: tensor parallelism splits the token embedding by vocabulary
// (VocabParallelEmbedding) and replicates a learned position table.
double embeddingShard(const ModelSpec& m, double t) {
    const double positions =
        m.learnedPositions ? static_cast<double>(m.maxPositions) * static_cast<double>(m.hidden) : 0;
    return (static_cast<double>(m.embeddingParams()) - positions) / t + positions;
}

StageParams stageParams(const Scenario& sc, int stage, int first, int count) {
    StageParams sp;
    const bool inference = sc.mode == Mode::Inference;
    const double eb = sc.inference.weightBytes;
    const ModelSpec& m = sc.model;
    const ClusterSettings& c = sc.cluster;
    const double t = c.tensorParallel, p = c.pipelineParallel;
    if (!m.known) {
        sp.dense = static_cast<double>(m.parametersOverride) / (t * p);
        sp.bytes = eb * sp.dense;
        return sp;
    }
    const double expertDiv = expertShards(sc);
    Quantization loaded = m.quantization;
    if (inference && sc.inference.engine == Engine::Vllm && loaded.method == Quantization::Method::Mxfp4 &&
        isHopper(c.gpu))
        // Measured, not read: vLLM 0.11 on H100 loads gpt-oss-20b in 13.47 GiB and gpt-oss-120b in 64.38
        // GiB (llm-d-benchmark, config_explorer/empirical-vllm-memory-results.md), 5% and 6% above the
        // checkpoint. Its Hopper path re-lays the MXFP4 experts out for triton_kernels (_swizzle_mxfp4 in
        // vllm/model_executor/layers/quantization/utils/mxfp4_utils.py); holding each 32-value scale in
        // two bytes accounts for all but 0.1 and 0.3 GiB of it.
        loaded.scaleBytes = 2;
    const Quantization* quantised = weightsStayQuantised(sc) ? &loaded : nullptr;
    // Layers come in a few kinds (ModelSpec::layerKind: dense or MoE, attention or linear attention, whole
    // or half a layer); compute each kind once. A quantised checkpoint's bytes depend on the layer's name
    // only through its skip list: a layer the list names by number is weighed alone, and one it does not
    // stands for the rest of its kind.
    LayerParams kinds[ModelSpec::kLayerKinds];
    LayerBytes kindBytes[ModelSpec::kLayerKinds];
    bool have[ModelSpec::kLayerKinds] = {}, haveBytes[ModelSpec::kLayerKinds] = {};
    LayerBytes named;
    for (int l = first; l < first + count; ++l) {
        const int k = m.layerKind(l);
        if (!have[k]) {
            kinds[k] = m.layerParams(l);
            have[k] = true;
        }
        const bool alone = inference && quantised && quantised->namesLayer(l);
        if (alone)
            named = m.layerBytes(l, eb, quantised);
        else if (inference && !haveBytes[k]) {
            kindBytes[k] = m.layerBytes(l, eb, quantised);
            haveBytes[k] = true;
        }
        const LayerParams& lp = kinds[k];
        const double replicated = static_cast<double>(lp.replicatedBiases);
        const double dense = (static_cast<double>(lp.attention + lp.denseMlp + lp.router) - replicated) / t +
                             replicated + static_cast<double>(lp.norms);
        const double experts = static_cast<double>(lp.perExpert) * lp.experts / expertDiv;
        sp.dense += dense;
        sp.experts += experts;
        sp.largestUnit = std::max(sp.largestUnit, dense + experts);
        sp.largestLayer = std::max(sp.largestLayer, dense + experts);
        if (inference) {
            const LayerBytes& lb = alone ? named : kindBytes[k];
            sp.bytes += (lb.attention + lb.denseMlp + lb.router) / t + lb.norms +
                        lb.perExpert * lb.experts / expertDiv;
        }
    }
    const double vocabShard = static_cast<double>(m.vocab) * m.hidden / t;
    // Embeddings, the head and the final norm stay 16-bit in every quantised checkpoint Headroom reads, and
    // when a serving engine quantises a 16-bit checkpoint as it loads it (weight_dtype fp8, int8, int4):
    // vLLM's quantisation methods hand out their linear method to LinearBase layers only
    // (Fp8Config.get_quant_method in vllm/model_executor/layers/quantization/fp8.py; ParallelLMHead is a
    // VocabParallelEmbedding), and SGLang's Fp8Config does the same.
    const bool engineQuantises =
        inference && !quantised && eb < 2 &&
        (sc.inference.engine == Engine::Vllm || sc.inference.engine == Engine::Sglang);
    const double ev = engineQuantises ? 2 : eb;
    if (stage == 0) {
        sp.dense += embeddingShard(m, t);
        sp.bytes += ev * embeddingShard(m, t);
        sp.largestUnit = std::max(sp.largestUnit, embeddingShard(m, t));
        // A multimodal checkpoint's vision tower and projector feed the first stage; 16-bit, and split by
        // tensor parallelism as vLLM's towers are (their linear layers are column/row parallel).
        const double vision = static_cast<double>(m.visionParams()) / t;
        sp.dense += vision;
        sp.bytes += eb * vision;
    }
    if (stage == c.pipelineParallel - 1) {
        sp.dense += static_cast<double>(m.finalNormParams());
        // A tied head is the embedding itself on a single stage; across stages the last keeps a copy.
        const double head = !m.tiedEmbeddings ? vocabShard : (c.pipelineParallel > 1 ? vocabShard : 0);
        sp.dense += head;
        sp.bytes += ev * (static_cast<double>(m.finalNormParams()) + head);
        sp.largestUnit = std::max(sp.largestUnit, head);
    }
    return sp;
}

// What FSDP's root unit holds on one GPU of a stage when only the decoder layers are wrapped: the
// embeddings on the first stage, the final norm and an untied head (or a tied one's copy across stages) on
// the last.
double rootUnitParams(const Scenario& sc, int stage, bool last) {
    const ModelSpec& m = sc.model;
    const double t = sc.cluster.tensorParallel;
    double root = stage == 0 ? embeddingShard(m, t) : 0;
    if (last)
        root +=
            static_cast<double>(m.finalNormParams()) + (!m.tiedEmbeddings || sc.cluster.pipelineParallel > 1
                                                            ? static_cast<double>(m.vocab) * m.hidden / t
                                                            : 0);
    return root;
}

// AdamW's step besides its states (torch/optim/adamw.py, _multi_tensor_adamw and _single_tensor_adamw):
// foreach computes the denominator as a list, one tensor per parameter (torch._foreach_sqrt of exp_avg_sq,
// then divided and incremented in place), so a whole state's worth lives during the update; one tensor at a
// time, sqrt and its quotient are two temporaries of the largest parameter; the fused kernels (torch's
// fused=True, Megatron's and DeepSpeed's FusedAdam) allocate nothing. On the GPU only when the step runs
// there; the states' own dtype (bf16 states under torchtune).
// The largest weight matrix on a GPU, in elements: a layer's widest (FFN, an expert's, the attention
// projections), or with `vocabulary` the embedding and head too.
double largestMatrix(const ModelSpec& m, double tensorParallel, bool vocabulary) {
    const double t = tensorParallel;
    const double layer =
        std::max({static_cast<double>(m.ffn) * m.hidden / t, static_cast<double>(m.moeFfn) * m.hidden,
                  static_cast<double>(m.heads) * m.headDim * m.hidden / t});
    return vocabulary ? std::max(layer, static_cast<double>(m.vocab) * m.hidden / t) : layer;
}

double optimizerTemporaries(const Scenario& sc, const StageParams& sp) {
    const TrainingSettings& tr = sc.training;
    const ClusterSettings& c = sc.cluster;
    // bitsandbytes' paged optimizers step each parameter with one kernel that updates it and its states in
    // place (bitsandbytes/optim/optimizer.py, Optimizer2State.update_step: F.optimizer_update_32bit or
    // optimizer_update_8bit_blockwise): no temporaries, whatever optimizer_implementation says.
    if (tr.optimizer != Optimizer::AdamW || c.offloadOptimizer || tr.optimizerImpl == OptimizerImpl::Fused ||
        tr.pagedOptimizer)
        return 0;
    const double stateBytes = tr.bytes.optimizerStates / 2;
    const double group = shardsOptimizer(c) ? shardGroup(c) : 1;
    const double expertGroup = shardsOptimizer(c) ? std::max(1.0, group / c.expertParallel) : 1;
    if (tr.optimizerImpl == OptimizerImpl::ForEach)
        return stateBytes * (sp.dense / group + sp.experts / expertGroup);
    if (!sc.model.known)
        return 0;
    if (tr.optimizerImpl == OptimizerImpl::Cs336Basics)
        // Its states are zeros_like(grad), in the parameters' dtype, and so are its temporaries.
        return cs336StepTemporaries(largestSteppedTensor(sc), tr.bytes.weights);
    return 2 * stateBytes * largestSteppedTensor(sc);
}

// bitsandbytes pages a parameter's states only when it has 100,000 elements or more
// (bitsandbytes/optim/optimizer.py, Optimizer8bit.get_state_buffer: below that, zeros_like on the device):
// norms, biases and a small rank's adapters (8 x 4,096) keep theirs as ordinary tensors in PyTorch's
// allocator. The share of the trained elements whose states are paged, each tensor as the optimizer steps
// it on this GPU: its tensor-parallel shard, and its own shard where FSDP2 or ZeRO shard the optimizer.
// FSDP1 (the huggingface profile) steps one flat parameter per wrapped unit, far above the threshold.
double pagedStateShare(const Scenario& sc) {
    const ClusterSettings& c = sc.cluster;
    const ModelSpec& m = sc.model;
    if (!m.known || (sc.training.framework == Framework::HuggingFace && shardsWeights(c)))
        return 1;
    const double local = std::max(1, c.tensorParallel) * (shardsOptimizer(c) ? shardGroup(c) : 1);
    double all = 0, paged = 0;
    auto add = [&](double elements) {
        all += elements;
        if (elements / local >= 100000)
            paged += elements;
    };
    if (sc.training.fineTuning.adapters())
        for (const TensorBytes& t : trainedTensors(sc))
            add(static_cast<double>(t.elements));
    else
        for (const std::uint64_t n : m.parameterTensors())
            add(static_cast<double>(n));
    return all > 0 ? paged / all : 0;
}

int communicators(const ClusterSettings& c) {
    return (c.dataParallelSize() > 1) + (c.tensorParallel > 1) + (c.pipelineParallel > 1) +
           (c.contextParallel > 1) + (c.expertParallel > 1);
}

// The parameters of a stage that torch.autocast casts for a matmul: all but the embedding (looked up) and
// the norms; a tied head on a single stage is the embedding matrix, cast for the head's matmul.
double castableParameters(const Scenario& sc, int stage, const StageModel& st, const StageParams& sp) {
    const ModelSpec& m = sc.model;
    const double t = sc.cluster.tensorParallel;
    double castable = sp.dense + sp.experts;
    if (stage == 0)
        castable -= embeddingShard(m, t);
    for (int l = st.firstLayer; l < st.firstLayer + st.layers; ++l)
        castable -= static_cast<double>(m.layerParams(l).norms);
    if (st.last) {
        castable -= static_cast<double>(m.finalNormParams());
        if (m.tiedEmbeddings && sc.cluster.pipelineParallel == 1)
            castable += static_cast<double>(m.vocab) * m.hidden / t;
    }
    return std::max(0.0, castable);
}

// What autocast casts of one layer on a GPU: its matmuls' weights (all but its norms), placed as
// stageParams places them.
double layerCastable(const Scenario& sc, const LayerParams& lp) {
    const double t = sc.cluster.tensorParallel, replicated = static_cast<double>(lp.replicatedBiases);
    return (static_cast<double>(lp.attention + lp.denseMlp + lp.router) - replicated) / t + replicated +
           static_cast<double>(lp.perExpert) * lp.experts / expertShards(sc);
}

// The layers a stage holds and the parameters on each of its GPUs.
StageParams placeStage(const Scenario& sc, int stage, StageModel& st) {
    const int p = sc.cluster.pipelineParallel;
    st.last = stage == p - 1;
    st.layers = sc.model.known ? stageLayers(sc.model.layers, p, stage) : 0;
    st.firstLayer = sc.model.known ? stageFirstLayer(sc.model.layers, p, stage) : 0;
    st.cudaContext = static_cast<double>(sc.overheads.cudaContextBytes);
    st.allocatorFraction = sc.overheads.allocatorOverheadFraction;
    return stageParams(sc, stage, st.firstLayer, st.layers);
}

// What the loss holds per (token, vocabulary entry) of this rank's logits: at the end of the forward and
// when the backward starts. docs/frameworks.md gives each line's source.
struct LossBytes {
    double forward = 0;
    double backward = 0;
};

// torchtune's CEWithChunkedOutputLoss(num_output_chunks=8): the model's output layer runs on as many chunks.
constexpr double kTorchtuneOutputChunks = 8;

// A FITTED term, named as such (beside the allocator fractions every profile shares): what torchtitan's
// eager blocks under per-op selective checkpointing reserve beyond the same run compiled, in bytes per
// hidden unit, token and block. torchtitan's December 2024 benchmarks
// (benchmarks/llama3_h100_202412_torchtitan.md, Llama 3.1 8B, 2 x 8,192 tokens a GPU, 32 blocks of 4,096)
// measured 82.4 against 77.0 GiB on 8 GPUs (Table 1) and 67.0 against 62.0 on 128 (Table 3): 5.4 and 5.0
// GiB, their mean 5.2 GiB over 2^31 = 16,384 x 32 x 4,096, 2.6 bytes. Both tables are fit runs. The source
// read (the block, the SAC policy, FSDP2's hooks at 9dec370) keeps the same tensors eager or compiled, so
// what these bytes are is not known: the form (per token, block and hidden unit, as a block's activations)
// is an assumption, and the term changes nothing else.
constexpr double kTorchtitanEagerExcessBytes = 2.6;

// `tensorParallel`: torchtitan computes the loss with loss_parallel whenever it has tensor parallelism
// (train.py: enable_loss_parallel unless --training.disable_loss_parallel).
LossBytes lossBytes(const TrainingSettings& tr, int tensorParallel) {
    const double chunks = kTorchtuneOutputChunks;
    if (tr.framework == Framework::Unsloth &&
        (tr.loss != LossKind::FusedLinear || 1.0 * tr.microBatchSize * tr.sequenceLength <= 1024))
        // Unsloth computes the logits itself when asked to, and whenever a micro-batch has at most 1,024
        // tokens (unsloth/models/llama.py: RETURN_LOGITS), in the model's dtype; its fast_cross_entropy_loss
        // (unsloth/kernels/cross_entropy_loss.py) saves them with an fp32 log-sum-exp per token and writes
        // the gradient into them in place (_cross_entropy_backward returns `logits`).
        return {2, 2};
    if (tr.loss == LossKind::FusedLinear)
        // The output layer's matmul and the cross-entropy run together on a chunk of tokens at a time and
        // write the gradient of their input during the forward (Liger's fused_linear_cross_entropy_forward,
        // ops/fused_linear_cross_entropy.py; unsloth_zoo's unsloth_fused_ce_loss; Cut Cross-Entropy keeps
        // only the log-sum-exp): no logits live whole. What stays is the head's input and that gradient,
        // both of the hidden size, which the output layer's own terms already count.
        return {0, 0};
    if (tr.loss == LossKind::Fused && tr.framework == Framework::Megatron)
        // --cross-entropy-loss-fusion (megatron/core/fusions/fused_cross_entropy.py) is not a loss that
        // skips the fp32 logits: it runs the same steps as the in-place one below, each through jit_fuser,
        // which is torch.compile from torch 2.2 (megatron/core/jit.py). The steps update their input in
        // place (`-=`, exp(out=), div_, and the gradient's index update and mul_); compiled, such an update
        // is written to a buffer of the input's size and copied back. So one fp32 logits-sized buffer more
        // while each step runs, forward and backward. Measured: Megatron-LM's CI runs
        // gpt3_mcore_te_tp2_pp2_(resume_torch_dist_)cross_entropy_loss_fusion peak 0.38 GiB above the same
        // runs without the flag, where this buffer is 0.385 GiB (examples/published: both rows are fit).
        // Under PyTorch 2.5 the same tests held two such buffers (Megatron-LM 0.12's, 0.77 GiB over; the
        // golden files date them to NGC 24.10, and the same tests held one under 2.7 and 2.9): measured,
        // not read (the Inductor change between the two was not found), and 2.6, not measured, is planned
        // with the older compiler, the side that does not promise memory that may not be there.
        return tr.torchBefore(2, 7) ? LossBytes{2 + 4 + 4 + 4, 4 + 4 + 4 + 2}
                                    : LossBytes{2 + 4 + 4, 4 + 4 + 2};
    if (tr.loss == LossKind::Fused)
        // A compiled (or fused) cross-entropy never writes fp32 logits: the 16-bit logits it saved and
        // their 16-bit gradient.
        return {2, 4};
    switch (tr.framework) {
    case Framework::Megatron:
        // megatron/core/tensor_parallel/cross_entropy.py: the logits' fp32 copy beside the bf16 ones;
        // exp and the softmax are written in place and saved; the backward turns the saved softmax into
        // the gradient in place and casts it to bf16.
        return {2 + 4, 4 + 2};
    case Framework::Torchtune:
        // Under compile torchtune compiles the loss too (torchtune/training/_compile.py compile_loss): for
        // the chunked loss only the upcast and cross-entropy of each chunk, which then keeps its bf16
        // input and writes one chunk's bf16 gradient at a time; otherwise the whole cross-entropy, which
        // keeps the fp32 logits the model returned and writes their fp32 gradient.
        if (tr.compile)
            return tr.loss == LossKind::Chunked ? LossBytes{2, 2 + 2 / chunks} : LossBytes{4, 4 + 4};
        if (tr.loss == LossKind::Chunked)
            // The output layer runs per chunk and returns bf16 chunks; each chunk is upcast and its
            // log-softmax saved (all of them: 4 bytes in total), one chunk's fp32 copy at a time. The
            // backward frees them chunk by chunk: one chunk's two fp32 gradients and its bf16 one.
            return {2 + 4 + 4 / chunks, 4 + (4 + 4 + 2) / chunks};
        // TransformerDecoder ends with self.output(h).float(): the fp32 logits, their log-softmax
        // (saved); the backward's nll and log-softmax gradients beside the saved output.
        return {4 + 4, 4 + 4 + 4};
    case Framework::HuggingFace:
    case Framework::DeepSpeed: // which most often runs transformers' models, and their loss
        if (tr.versionBefore(4, 46))
            // transformers before 4.46 (the *ForCausalLM forward, e.g. models/llama/modeling_llama.py at
            // v4.44.2): `logits = logits.float()` in the model, so the output holds fp32 logits through the
            // backward; the loss shifts them with a contiguous fp32 copy and saves its log-softmax. The
            // backward's start holds the output's logits, the saved log-softmax and two fp32 gradients.
            return {4 + 4 + 4, 4 + 4 + 4 + 4};
        if (tr.versionBefore(4, 49))
            // transformers 4.46 to 4.48 (loss/loss_utils.py ForCausalLMLoss at v4.47.0): the upcast moved
            // into the loss, which still shifted the logits, not the labels: `logits = logits.float()`, then
            // `shift_logits = logits[..., :-1, :].contiguous()`, a second fp32 copy, both alive while
            // cross_entropy writes its log-softmax, beside the bf16 logits the output holds. The backward is
            // the later releases': the shift's backward writes its fp32 gradient once the log-softmax's
            // has been freed. Since 4.49 the labels are padded and shifted instead (pull request #35646,
            // "removing unnecessary contiguous() call").
            return {2 + 4 + 4 + 4, 4 + 4 + 4};
        [[fallthrough]];
    case Framework::Torchtitan:
        if (tr.framework == Framework::Torchtitan && tensorParallel > 1 && tr.loss == LossKind::Full)
            // loss_parallel (torch/distributed/tensor/parallel/loss.py) runs log-softmax and nll on the
            // vocabulary shards by hand: _log_softmax makes shifted = x - max and exp(shifted) beside the
            // fp32 copy x, then the result; the fused backward (_nll_loss_and_log_softmax_backward) returns
            // (zeros_like(x) + exp(x)) * grad_output, so the saved result, grad_input, exp(x) and their sum
            // live together. The bf16 logits go before the backward (`del pred`).
            return {2 + 4 + 4 + 4, 4 + 4 + 4 + 4};
        // cross_entropy(pred.float(), ...) on bf16 logits the caller still holds: bf16, the fp32 copy
        // and the saved log-softmax; the caller drops the bf16 logits before backward (`del pred`;
        // transformers' outputs go out of scope), whose start holds the saved log-softmax and the two
        // fp32 gradients.
        return {2 + 4 + 4, 4 + 4 + 4};
    default:
        // Plain PyTorch as Headroom has always costed it: fp32 logits (and autocast's 16-bit ones) in the
        // forward, their fp32 gradient in the backward.
        return {4 + tr.autocastBytes, 8 + tr.autocastBytes};
    }
}

// The training step the FSDP1 replay runs after the wrap (core/plan/peftstep.h), where it is the code
// that file reads: transformers before 4.46 with a dense, gated, attention-only decoder, PEFT's LoRA (not
// DoRA), reentrant checkpointing of every layer, SDPA, the full loss, one stage holding the whole model.
std::optional<PeftStepShape> peftStep(const Scenario& sc, int layers, bool wholeModel) {
    const TrainingSettings& tr = sc.training;
    const ModelSpec& m = sc.model;
    const FineTuning& ft = tr.fineTuning;
    if (!wholeModel || !m.known || m.mla || m.isMoe() || !m.gatedMlp || !m.linearLayers.empty() ||
        m.learnedPositions || !tr.versionBefore(4, 46) || ft.method == FineTuneMethod::Dora ||
        ft.baseQuantization == BaseQuantization::Int8 || tr.checkpointing != Checkpointing::Full ||
        tr.checkpointEvery > 1 || tr.attention == Attention::Eager || tr.loss != LossKind::Full ||
        tr.activationOffloading || tr.autocastBytes > 0 || sc.cluster.tensorParallel != 1 ||
        sc.cluster.contextParallel != 1 || layers > 128)
        return std::nullopt;
    PeftStepShape d;
    d.sequence = tr.sequenceLength;
    d.tokens = static_cast<double>(tr.microBatchSize) * tr.sequenceLength;
    d.hidden = m.hidden;
    d.q = static_cast<double>(m.heads) * m.headDim;
    d.kv = static_cast<double>(m.kvHeads) * m.headDim;
    d.ffn = m.ffn;
    d.heads = m.heads;
    d.headDim = m.headDim;
    d.vocab = m.vocab;
    d.rank = ft.rank;
    d.bytes = tr.activationBytes;
    d.adapterBytes = ft.adapterBytes;
    const char* modules[] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
    for (int i = 0; i < 7; ++i)
        d.targets[i] = ft.targeted(modules[i]);
    d.dropout = ft.dropout > 0;
    d.quantised = ft.fourBitBase();
    // The code this replay reads ran bitsandbytes 0.43, whose MatMul4Bit kept its input: so unless a later
    // release is named.
    d.fourBitKeepsInput = d.quantised && (ft.bitsandbytesVersion.empty() || ft.fourBitKeepsInput);
    d.doubleQuant = d.quantised && ft.doubleQuantization;
    // A quantised base is built from its config in fp32 (fsdp_qlora's loader): its rotary cache too.
    d.ropeCast = d.quantised && tr.versionBefore(4, 38);
    d.layers = layers;
    d.loss = true;
    const double widest = std::max({d.hidden, d.q, d.ffn, d.vocab, d.rank});
    if (!(d.tokens > 0 && d.tokens * widest * 4 < 1e15))
        return std::nullopt;
    return d;
}

// cs336_basics' training step (core/plan/cs336basics.h) in the stage model's terms: every layer's saved
// tensors, the loss's, the last layer's softmax in its forward and its backward, and what the loop keeps.
// One GPU's whole model: the reader refuses tensor, pipeline and context parallelism for this profile.
void applyCs336Basics(const Scenario& sc, StageModel& st) {
    const ModelSpec& m = sc.model;
    const TrainingSettings& tr = sc.training;
    const Cs336Shape shape = cs336ShapeOf(m, tr.sequenceLength, tr.bytes.weights, tr.autocastBytes);
    const Cs336Training t = cs336Training(shape);
    const double layers = st.layers;
    st.ownBackwardMoment = true;
    st.backwardScratchScores = 0; // its own, below
    st.backwardTemporaries = t.backwardScratch;
    st.backwardTemporaryScores = t.backwardScratchScores;
    if (tr.checkpointing == Checkpointing::Full) {
        // torch.utils.checkpoint around each block: a block keeps its input; its forward runs without
        // saving (the working set of cs336Forward's softmax), and its backward first runs it again, saving
        // what an unchecked block saves. Under autocast the einsums' weight casts are then saved for one
        // block (and the head) at a time; autocast's cache holds every block's through the forward and the
        // loss (trainingStage: cachedCasts), the other blocks' going when it exits.
        const Cs336Forward f = cs336Forward(shape);
        st.activations = layers * tr.bytes.weights * m.hidden * tr.sequenceLength;
        st.checkpointInputs = st.activations;
        st.scores = 0;
        st.transient = std::max(0.0, f.activations - 2 * tr.bytes.weights * m.hidden * tr.sequenceLength);
        st.transientScores = f.scores;
        // (The recomputed block's first norm saves its input, which the checkpoint already keeps, when the
        // model is fp32.)
        const double input = tr.bytes.weights >= 4 ? 4.0 * m.hidden * tr.sequenceLength : 0;
        st.backwardActivations = t.layerSaved - input + t.lastLayerFreed;
        st.backwardScores = t.layerScores + t.lastLayerFreedScores;
        if (st.castWeights + st.cachedCasts > 0) {
            const double block = tr.autocastBytes * (4.0 * m.hidden * m.hidden + 3.0 * m.hidden * m.ffn);
            st.castWeights = tr.autocastBytes * static_cast<double>(m.vocab) * m.hidden + block;
            st.cachedCasts = (layers - 1) * block;
            st.recomputedCasts = 0; // the block's moments below count its casts
        }
        // The first block's backward, after every later block's: what it holds beyond its saved tensors
        // (its input, the recomputed output the checkpoint keeps while it runs; the q, k and v casts its
        // einsums still hold at the softmax's backward) and the gradients not written by then.
        st.recomputedSaved = t.layerSaved - input;
        st.recomputedScores = t.layerScores;
        st.recomputedMask = t.layerMask;
        st.blockOutputHeld = tr.bytes.weights * m.hidden * tr.sequenceLength;
        st.backwardActivations += st.blockOutputHeld; // the last block's too (1 x 2,048 small: 0.46% under)
        st.firstBlockMoment = true;
        st.firstBlockHeld = tr.bytes.weights * m.hidden * tr.sequenceLength; // its input (the output: above)
        st.firstBlockCasts = st.castWeights > 0 ? tr.autocastBytes * 3.0 * m.hidden * m.hidden : 0;
        st.firstBlockUnwritten = tr.bytes.gradients * (3.0 * m.hidden * m.hidden + m.hidden +
                                                       static_cast<double>(m.vocab) * m.hidden);
    } else {
        st.activations = layers * t.layerSaved;
        st.scores = layers * t.layerScores;
        st.fixedActivations = layers * t.layerMask;
        st.transient = t.lastLayerForward;
        st.transientScores = t.lastLayerForwardScores;
        // Its output projection and MLP come after its softmax: not saved yet there. (Below the backward's
        // moments but where the last step's gradients live through the forward, zero_grad after it: the
        // 2.7B model at 4 x 1,024 tokens 0.22% over the step's replay when they were counted.)
        st.transientNotMade = t.lastLayerNotMade;
        // And under autocast the casts of those einsums' weights and the head's: the 2.7B model at 1 x 2,048
        // tokens with the last step's gradients alive through the forward, 0.18% over the step's replay
        // when they were counted.
        if (st.castWeights > 0)
            st.castsNotMade =
                -tr.autocastBytes * (static_cast<double>(m.hidden) * m.hidden + 3.0 * m.hidden * m.ffn +
                                     static_cast<double>(m.vocab) * m.hidden);
        st.backwardActivations = t.lastLayerFreed;
        st.backwardScores = t.lastLayerFreedScores;
        // The first block's softmax backward, as the last one's but with one block's saved tensors left
        // and every later block's gradients written: the peak of a later step where the gradients outweigh
        // the activations (the XL model at 1 x 512 tokens, 0.27% over the last block's moment in the step's
        // replay, cs336replay.cpp, which showed it).
        st.firstBlockMoment = true;
        st.firstBlockHeld = t.layerSaved;
        st.firstBlockScores = t.layerScores;
        st.firstBlockCasts = st.castWeights > 0 ? tr.autocastBytes * 3.0 * m.hidden * m.hidden : 0;
        st.firstBlockUnwritten = tr.bytes.gradients * (3.0 * m.hidden * m.hidden + m.hidden +
                                                       static_cast<double>(m.vocab) * m.hidden);
    }
    st.firstBlockFixed = t.layerMask;
    // A block's MLP backward (SwiGLU's in model.py, cs336replay.cpp's blockBackward): w2's einsum frees
    // the product it saved and writes Pr's gradient and w2's (copied by AccumulateGrad), then the product's
    // backward makes both factors' gradients (f wide, in the matmul's dtype) beside Pr's, whose two saved
    // factors it frees (moment 0); then w3's einsum writes its input's gradient and w3's, which
    // AccumulateGrad copies (moment 1: w3's gradient twice). The residual's gradient flows in alongside.
    // Under autocast w2's weight cast goes with its einsum's backward, w3's and the cast of its input with
    // its own. One or the other is the peak of a later step where the FFN is wide and the tokens few, which
    // the step's replay showed (the 2.7B model at 8 x 128 tokens: in the first block, 0.22% over the
    // softmax's moment; checkpointed, up to 3.2%); the product's at more tokens, w3's copy at fewer.
    {
        const double e = tr.bytes.weights, mm = tr.autocastBytes > 0 ? tr.autocastBytes : e;
        const double h = m.hidden, f = m.ffn, v = static_cast<double>(m.vocab), g = tr.bytes.gradients;
        const double s = tr.sequenceLength, cast = st.castWeights > 0 ? tr.autocastBytes : 0;
        st.mlpMoment = true;
        StageModel::MlpMoment& product = st.mlp[0];
        product.freed = -mm * f * s;
        product.scratch = (e * h + 3 * mm * f) * s;
        product.castsFreed = cast * (v * h + h * f);
        product.firstCasts = cast * (4 * h * h + 2 * h * f);
        product.gradients = g * (v * h + h + h * f);
        product.firstUnwritten = g * (4 * h * h + 2 * h * f + 2 * h + v * h);
        StageModel::MlpMoment& w3 = st.mlp[1];
        w3.freed = -(3 * mm * f + (cast > 0 ? mm * h : 0)) * s;
        w3.scratch = ((e + mm) * h + 2 * mm * f) * s;
        w3.castsFreed = cast * (v * h + 2 * h * f);
        w3.firstCasts = cast * (4 * h * h + h * f);
        w3.gradients = g * (v * h + h + 2 * h * f);
        w3.firstUnwritten = g * (4 * h * h + h * f + 2 * h + v * h);
        w3.gradientCopy = g * h * f;
        // Before either: w2's gradient as its einsum writes it, the product it saved still alive, Pr's
        // gradient beside it (under autocast in the cast's dtype, w2's cast not freed yet). Into a .grad
        // that exists nothing is copied after, and this is the MLP's most (accumulation, checkpointed: the
        // medium model at 4 x 128 tokens, 0.12% over the others).
        StageModel::MlpMoment& w2 = st.mlp[2];
        w2.freed = 0;
        w2.scratch = (e * h + mm * f) * s;
        w2.castsFreed = cast * v * h;
        w2.firstCasts = cast * (4 * h * h + 3 * h * f);
        w2.gradients = g * (v * h + h);
        w2.firstUnwritten = g * (4 * h * h + 3 * h * f + 2 * h + v * h);
        w2.gradientCopy = (cast > 0 ? cast : g) * h * f;
    }
    const double tokens = tr.sequenceLength;
    st.logits = t.head + t.lossForward * tokens * m.vocab;
    st.logitsGradient = (t.lossBackward - t.lossForward) * tokens * m.vocab;
    st.heldLogits = t.heldLogits * tokens * m.vocab;
    // The head's backward reads the logits' gradient and writes its weight's. The einsum's backward leaves
    // that gradient transposed, so AccumulateGrad copies it into the parameter's layout once the einsum's
    // node has freed the logits' gradient and the head's saved input (torch/csrc/autograd/functions/
    // accumulate_grad.h, utils::clone_obey_contract; Wedsonlin's traces show the copy for every einsum
    // weight): two of the head's gradient beside the final norm's saved tensors, the head input's gradient
    // and the logits the loop holds. Into a .grad that exists (accumulation, zero_grad never) it is added
    // in place: less than the loss's start holds, no moment of its own. Its gradient, the final norm's and
    // the last layer's output projection and MLP are written when that layer's softmax backward runs.
    // Under autocast the head's and the last layer's output_proj, w1, w2 and w3 einsums have run their
    // backwards when its softmax's does, each freeing the weight's cast it saved (the step's replay,
    // cs336replay.cpp, showed the moment keeping them: 0.2% over the 1,024-token autocast run).
    if (st.castWeights > 0) {
        st.backwardCastsFreed =
            tr.autocastBytes * (static_cast<double>(m.vocab) * m.hidden +
                                static_cast<double>(m.hidden) * m.hidden + 3.0 * m.hidden * m.ffn);
        // The head's alone at its gradient's copy (AccumulateGrad runs once the einsum's node has released
        // what it saved): the medium model's later step at 4 x 128 tokens peaks there, 0.14% over before.
        st.headCastFreed = tr.autocastBytes * static_cast<double>(m.vocab) * m.hidden;
    }
    st.headGradient = st.headLogitsGradient = st.headGradientCopies = 0;
    const double headWeight = static_cast<double>(m.vocab) * m.hidden;
    if (!st.gradientsInForward) {
        st.headGradient = tr.bytes.gradients * headWeight;
        st.headGradientCopies = 2;
        st.headLogitsGradient = t.head + st.heldLogits;
    } else {
        // Into a .grad that exists (accumulation's later micro-batches, zero_grad never) the head's gradient
        // is added in place, with no copy, but is written first beside what the einsum's backward still
        // holds: the logits' gradient and the head's saved input (fp32). Under autocast it is written in
        // the cast's dtype in place of the head's cast; then its fp32 copy (the cast's backward) beside it,
        // once the logits' gradient and saved input are gone: whichever holds more at the scenario's
        // micro-batch. The step's replay showed it as the peak with torch's one-at-a-time AdamW and few
        // tokens (the small model at 1 x 64: 1.1% over the loss's moment).
        const double mm = tr.autocastBytes > 0 ? tr.autocastBytes : tr.bytes.weights;
        const double written = (mm * m.hidden + mm * m.vocab) * tokens; // per sample, beside t.head
        const bool cast = st.castWeights > 0;
        const double batch = tr.microBatchSize;
        if (cast && (tr.bytes.gradients + mm) * headWeight >= batch * written + mm * headWeight) {
            st.headGradient = headWeight;
            st.headGradientCopies = tr.bytes.gradients + mm;
            st.headLogitsGradient = t.head + st.heldLogits;
        } else {
            st.headGradient = (cast ? mm : tr.bytes.gradients) * headWeight;
            st.headGradientCopies = 1;
            st.headLogitsGradient = t.head + st.heldLogits + written;
        }
    }
    st.layerBackwardGradients =
        tr.bytes.gradients * (static_cast<double>(m.vocab) * m.hidden + m.hidden +
                              static_cast<double>(m.hidden) * m.hidden + 3.0 * m.hidden * m.ffn);
}

StageModel trainingStage(const Scenario& sc, int stage) {
    StageModel st;
    const ModelSpec& m = sc.model;
    const ClusterSettings& c = sc.cluster;
    const TrainingSettings& tr = sc.training;
    const int p = c.pipelineParallel;
    const StageParams sp = placeStage(sc, stage, st);

    const double group = shardGroup(c);
    const double expertGroup = std::max(1.0, group / c.expertParallel);
    auto sharded = [&](bool shard) {
        return shard ? sp.dense / group + sp.experts / expertGroup : sp.dense + sp.experts;
    };
    const BytesPerParam& b = tr.bytes;
    // Model states as they would be without offload; offload then moves some of them to the host.
    st.withoutOffload = {b.weights * sharded(shardsWeights(c)), b.gradients * sharded(shardsGradients(c)),
                         b.masterWeights * sharded(shardsOptimizer(c)),
                         b.optimizerStates * sharded(shardsOptimizer(c))};
    st.weights = c.offloadParameters ? 0 : st.withoutOffload.weights;
    // torch.autocast caches the 16-bit cast of every weight a matmul uses until the forward ends, and the
    // backward keeps them (they are saved for the weight-gradient matmuls) until each layer's backward: all
    // of this stage's matmul weights (not the embedding, which is looked up, nor the norms). Only when the
    // weights are stored wider than the cast: a bf16 model under bf16 autocast casts nothing.
    if (tr.autocastBytes > 0 && b.weights > tr.autocastBytes && m.known && !shardsWeights(c))
        st.castWeights = tr.autocastBytes * castableParameters(sc, stage, st, sp);
    // With the optimizer offloaded, a sharded gradient partition lives on the host too (ZeRO-Offload).
    st.gradients = c.offloadOptimizer && shardsGradients(c) ? 0 : st.withoutOffload.gradients;
    st.master = c.offloadOptimizer ? 0 : st.withoutOffload.master;
    st.optimizer = c.offloadOptimizer ? 0 : st.withoutOffload.optimizer;
    st.optimizerTemp = optimizerTemporaries(sc, sp);
    st.statesFromStep = tr.firstStep;
    if (tr.fineTuning.dpo && !tr.fineTuning.adapters()) {
        // DPO's reference model for full fine-tuning: a frozen copy in the weights' dtype (TRL's
        // DPOTrainer deep-copies the model when no ref_model is given; sharded as the weights are). With
        // adapters the reference is the base with them disabled (peft's disable_adapter): no copy.
        st.withoutOffload.weights += b.weights * sharded(shardsWeights(c));
        st.weights = c.offloadParameters ? 0 : st.withoutOffload.weights;
    }
    // The bytes of every gradient this GPU computes, whole (what DDP's buckets copy).
    double allGradientBytes = b.gradients * (sp.dense + sp.experts);
    double weightBytesPerParameter = b.weights; // what FSDP gathers per parameter
    if (tr.fineTuning.adapters()) {
        // Fine-tuning (core/plan/finetuning.h): the frozen base as stored, no gradient, master copy or state
        // for it; the adapters (and modules_to_save) in their dtype with their gradients and the optimizer's
        // states in that dtype (torch.optim keeps zeros_like(param); 8-bit Adam 2 bytes).
        const FineTuneStage f = fineTuneStage(sc, st.firstLayer, st.layers, stage == 0, st.last);
        const FineTuning& ft = tr.fineTuning;
        const double trainable = ft.adapterBytes * f.adapterParameters + b.weights * f.savedParameters;
        // bytes_per_param.optimizer_states, when given, is every trained parameter's (0: no optimizer).
        const double given = tr.optimizerStatesGiven;
        const double states =
            given >= 0
                ? given * (f.adapterParameters + f.savedParameters)
                : optimizerStateBytes(tr.optimizer, tr.pagedOptimizer, ft.adapterBytes) *
                          f.adapterParameters +
                      optimizerStateBytes(tr.optimizer, tr.pagedOptimizer, b.weights) * f.savedParameters;
        auto shard = [&](double bytes, bool split) { return split ? bytes / group : bytes; };
        st.withoutOffload = {shard(f.frozenBytes + trainable, shardsWeights(c)),
                             shard(trainable, shardsGradients(c)), 0, shard(states, shardsOptimizer(c))};
        st.weights = c.offloadParameters ? 0 : st.withoutOffload.weights;
        st.frozenWeights = c.offloadParameters ? 0 : shard(f.frozenBytes, shardsWeights(c));
        st.gradients = c.offloadOptimizer && shardsGradients(c) ? 0 : st.withoutOffload.gradients;
        st.master = 0;
        st.optimizer = c.offloadOptimizer ? 0 : st.withoutOffload.optimizer;
        // foreach's denominator list is one state's worth; fused and one-at-a-time (a few adapters' worth)
        // next to nothing.
        st.optimizerTemp = tr.optimizer == Optimizer::AdamW && !c.offloadOptimizer && !tr.pagedOptimizer &&
                                   tr.optimizerImpl == OptimizerImpl::ForEach && given != 0
                               ? shard(trainable, shardsOptimizer(c))
                               : 0;
        allGradientBytes = trainable;
        if (f.frozenParameters > 0)
            weightBytesPerParameter = f.frozenBytes / f.frozenParameters;
        // A quantised base is dequantised to 16 bits one matrix at a time for its matmul, in the forward and
        // again for the input gradient (bitsandbytes' MatMul4Bit: dequantize_4bit(B).to(A.dtype); torchao's
        // linear_nf4); autocast casts nothing of it.
        if (ft.baseQuantization != BaseQuantization::None) {
            st.layerTemporary = (tr.autocastBytes > 0 ? tr.autocastBytes : 2) * f.largestQuantised;
            st.castWeights = 0;
        }
        // DoRA recomputes each targeted weight's column norm every forward: B x A in the adapters' dtype and
        // the weight it is added to (peft/tuners/lora/dora.py, DoraLinearLayer.get_weight_norm).
        st.layerTemporary += 2 * ft.adapterBytes * f.largestDora;
    }
    if (tr.optimizerInBackward && m.known) {
        // torchtune's optimizer_in_bwd (torchtune/training/memory.py register_optim_in_bwd_hooks): a
        // post-accumulate-grad hook steps each parameter's own optimizer and zeroes (drops) its gradient, so
        // no step holds every gradient. A tied embedding gets its gradient once both uses are summed, at the
        // end of the backward: from the head's backward on it is held whole. Besides it, the largest other
        // tensor's gradient, and what one parameter's step allocates (foreach over one tensor: one
        // state-sized temporary; one tensor at a time: two; fused: none).
        const double shard = shardsGradients(c) ? group : 1;
        const double tied =
            m.tiedEmbeddings && p == 1 ? static_cast<double>(m.vocab) * m.hidden / c.tensorParallel : 0;
        // The largest other tensor: a layer's widest matrix, or an untied head (stepped right after the
        // loss's backward) and embedding (at the end).
        const double largest = largestMatrix(m, c.tensorParallel, tied == 0);
        st.stepInBackward = true;
        st.heldGradients = b.gradients * (tied + largest) / shard;
        const double stateBytes = b.optimizerStates / 2;
        const bool inPlace = tr.optimizer != Optimizer::AdamW || c.offloadOptimizer || tr.pagedOptimizer;
        const double perStep = inPlace                                      ? 0
                               : tr.optimizerImpl == OptimizerImpl::Fused   ? 0
                               : tr.optimizerImpl == OptimizerImpl::ForEach ? 1
                                                                            : 2;
        st.stepScratchInLayers = perStep * stateBytes * largest / shard;
        st.stepScratchAtEnd = perStep * stateBytes * std::max(tied, largest) / shard;
        st.optimizerTemp = 0;
    }

    const double unit = sp.largestUnit;
    const double prefetch = c.prefetch ? 2 : 1;
    if (shardsWeights(c) || c.offloadParameters) {
        st.gatherForward = prefetch * unit * weightBytesPerParameter;
        st.gatherBackward =
            prefetch * unit * weightBytesPerParameter + (tr.fineTuning.adapters() ? 0 : unit * b.gradients);
        if (tr.framework == Framework::HuggingFace && m.known) {
            // FSDP1, as Accelerate and Answer.AI's fsdp_qlora wrap a model (each decoder layer a unit, the
            // rest the root): the root's unsharded flat parameter (embeddings, final norm, head, 16-bit as
            // no quantiser touches them) is not freed after the forward
            // (torch/distributed/fsdp/_runtime_utils.py _post_forward_reshard: `not state._is_root`) and
            // a frozen one only at the backward's final callback (_catch_all_reshard): the whole step. It
            // is a buffer of its own beside the shard the weights count.
            const double root = rootUnitParams(sc, stage, st.last);
            st.gatherForward += b.weights * root;
            st.gatherBackward += b.weights * root;
        }
    } else if (shardsGradients(c)) {
        // Unsharded gradients awaiting reduce-scatter (a frozen base has none).
        st.gatherBackward = tr.fineTuning.adapters() ? 0 : unit * b.gradients;
    }

    // FSDP1 under the huggingface profile, sharded or NO_SHARD, wrapping a PEFT model: what the wrap leaves
    // cached and the side streams keep (core/plan/fsdp1pools.h).
    const bool fsdp1NoShard = c.dataParallelName == "fsdp_no_shard";
    if (tr.framework == Framework::HuggingFace && m.known && tr.fineTuning.adapters() &&
        (shardsWeights(c) || fsdp1NoShard)) {
        const double trainable = st.withoutOffload.gradients * (shardsGradients(c) ? group : 1);
        // CPUOffload(offload_params=True) steps the optimizer in host memory, where the shards are.
        const double statesPerByte = tr.pagedOptimizer || trainable <= 0 || c.offloadParameters
                                         ? 0
                                         : st.optimizer * (shardsOptimizer(c) ? group : 1) / trainable;
        const std::optional<PeftStepShape> step = peftStep(sc, st.layers, stage == 0 && st.last);
        const Fsdp1Pools pools = fsdp1Pools(
            sc, st.firstLayer, st.layers, stage == 0, st.last, shardsWeights(c) ? static_cast<int>(group) : 1,
            static_cast<int>(prefetch), statesPerByte, 1, step ? &*step : nullptr,
            // What the driver can give PyTorch: the GPU less the CUDA context and NCCL's communicators.
            static_cast<double>(c.capacityBytes) - st.cudaContext -
                static_cast<double>(communicators(c)) *
                    static_cast<double>(sc.overheads.ncclBytesPerCommunicator));
        st.fsdp1 = pools.replayed;
        st.fsdp1Reserved = pools.reserved;
        st.fsdp1Reusable = pools.reusable;
        st.fsdp1Wrapped = pools.wrapped;
        st.fsdp1StepReserved = pools.stepReserved;
        if (pools.replayed) {
            // What FSDP neither shards nor offloads is whole on every rank: bitsandbytes' quantisation state
            // (no parameter; the stage's weights counted a 1/group share of it) and the modules' buffers
            // (counted nowhere else).
            const double stateShare = c.offloadParameters             ? 1
                                      : shardsWeights(c) && group > 1 ? 1 - 1 / group
                                                                      : 0;
            const double kept = pools.unflattened * stateShare + pools.buffers;
            st.weights += kept;
            st.frozenWeights += kept;
        }
    }

    st.communication =
        static_cast<double>(communicators(c)) * static_cast<double>(sc.overheads.ncclBytesPerCommunicator);
    st.nonTorch = st.communication;
    if (tr.pagedOptimizer) {
        // Counted on the GPU while they fit there (the plan's peak), but neither allocated nor reserved by
        // PyTorch, and no allocator overhead.
        st.pagedStates = st.optimizer * pagedStateShare(sc);
        st.nonTorch += st.pagedStates;
    }
    if (c.dataParallel == DataParallel::Ddp && c.dataParallelSize() > 1 &&
        !sc.overheads.ddpGradientAsBucketView && !fsdp1NoShard && tr.framework != Framework::Megatron)
        // PyTorch DDP's flat buckets copy every gradient; FSDP1's NO_SHARD all-reduces each flat parameter's
        // gradient in place (torch/distributed/fsdp/_runtime_utils.py _reduce_grad_no_shard), and so does
        // Megatron's own DistributedDataParallel: its buckets are views of the contiguous main-grad buffer
        // (megatron/core/distributed/param_and_grad_buffer.py, _ParamAndGradBucket.grad_data from
        // _ParamAndGradBuffer._get), all-reduced where they lie (start_grad_sync).
        st.communication += allGradientBytes;
    if (tr.framework == Framework::DeepSpeed && shardsOptimizer(c)) {
        // DeepSpeed's ZeRO (deepspeed/runtime/zero/stage_1_and_2.py setup_buckets, stage3.py): gradients are
        // copied into a contiguous bucket of reduce_bucket_size elements in the gradients' dtype, allocated
        // whole whatever the model's size and kept from one backward to the next; ZeRO-1/2 double it under
        // overlap_comm (off by default there), ZeRO-3 keeps one. ZeRO-3 fetches a module's parameters and
        // prefetches up to stage3_prefetch_bucket_size more, never more than stage3_max_live_parameters.
        const DeepSpeedSettings& z = tr.deepspeed;
        const bool overlap = z.overlapComm < 0 ? shardsWeights(c) : z.overlapComm == 1;
        const double buckets = shardsWeights(c) ? 1 : (overlap ? 2 : 1);
        st.communication += buckets * z.reduceBucketSize * b.gradients;
        if (shardsWeights(c) || c.offloadParameters) {
            const double live = std::min(z.maxLiveParameters,
                                         sp.largestUnit + std::min(z.prefetchBucketSize, sp.largestUnit));
            st.gatherForward = live * b.weights;
            st.gatherBackward = live * b.weights + sp.largestUnit * b.gradients;
        }
    }
    // Gradients are there before the backward when an earlier micro-batch left them (accumulation, or the
    // pipeline's other micro-batches), and always under Megatron: its DistributedDataParallel keeps every
    // main_grad in one fp32 buffer allocated when the model is wrapped and only zeroed between steps
    // (megatron/core/distributed/param_and_grad_buffer.py, grad_data; distributed_data_parallel.py,
    // zero_grad_buffer). Elsewhere zero_grad(set_to_none=True) frees them.
    // A calibration may have found them held where the scenario frees them (Calibration::gradientsHeld).
    st.gradientsInForward = tr.gradientAccumulationSteps > 1 || p > 1 ||
                            tr.framework == Framework::Megatron || sc.calibration.gradientsHeld ||
                            (tr.zeroGrad == ZeroGrad::Keep && !tr.firstStep);
    // zero_grad after the forward: the previous step's gradients through this one's forward (none before a
    // first step, none when each was dropped as it was stepped).
    st.gradientsThroughForward =
        tr.zeroGrad == ZeroGrad::AfterForward && !tr.firstStep && !tr.optimizerInBackward;
    st.logitsThroughForward = !tr.firstStep || tr.gradientAccumulationSteps > 1;

    // Micro-batches in flight on this stage under 1F1B (interleaved: model chunks of layers/v each).
    const int mb = tr.gradientAccumulationSteps;
    if (c.virtualStages <= 1) {
        st.inFlight = std::min(mb, p - stage);
        st.current = 1;
    } else {
        // Megatron's warm-up (megatron/core/pipeline_parallel/schedules.py, get_pp_rank_microbatches):
        // 2 (p - rank - 1) + (chunks - 1) x the micro-batch group, which defaults to the pipeline size
        // (model_parallel_config.py, microbatch_group_size_per_vp_stage); one more runs forward before the
        // first backward.
        const int v = c.virtualStages;
        const long long microbatchGroup = c.microbatchGroupSize > 0 ? c.microbatchGroupSize : p;
        const long long chunks =
            std::min<long long>(1LL * mb * v, 2LL * (p - stage - 1) + 1LL * (v - 1) * microbatchGroup + 1);
        st.inFlight = static_cast<double>(chunks) / v;
        st.current = 1.0 / v;
    }

    if (m.known) {
        // Per layer kind (dense, MoE) and whether this layer is checkpointed: with checkpoint_every N only
        // every N-th layer is (torchtitan's selective_ac_option "N").
        LayerActivations kinds[2 * ModelSpec::kLayerKinds];
        double castable[2 * ModelSpec::kLayerKinds] = {};
        bool have[2 * ModelSpec::kLayerKinds] = {};
        double checkpointedCastable = 0, largestCheckpointedCastable = 0;
        double freedBeforeScores = std::numeric_limits<double>::max();
        for (int l = st.firstLayer; l < st.firstLayer + st.layers; ++l) {
            const RecomputeGroup recompute = recomputeGroup(tr, l - st.firstLayer, st.layers);
            const Checkpointing mode = layerCheckpointing(tr, l, l - st.firstLayer);
            const int k = 2 * m.layerKind(l) + (mode == tr.checkpointing ? 0 : 1);
            if (!have[k]) {
                const LayerParams lp = m.layerParams(l);
                kinds[k] = perSample(sc, m.isMoeLayer(l), lp.mlpWidth, mode);
                castable[k] = layerCastable(sc, lp);
                have[k] = true;
            }
            // A block run under torch.utils.checkpoint (whole, or torchtitan's per-op policy, which saves
            // matmul outputs, not the casts of their weights) saves nothing of its forward: its weights'
            // casts live in autocast's cache alone.
            if (mode == Checkpointing::Full || mode == Checkpointing::SelectiveOp) {
                checkpointedCastable += castable[k];
                largestCheckpointedCastable = std::max(largestCheckpointedCastable, castable[k]);
            }
            st.activations += recompute.keepsInput ? kinds[k].stored : 0;
            if (mode == Checkpointing::Full && recompute.keepsInput)
                st.checkpointInputs += kinds[k].stored;
            st.scores += kinds[k].scores;
            st.transient = std::max(st.transient, recompute.rebuilt * kinds[k].transient);
            st.transientScores = std::max(st.transientScores, recompute.rebuilt * kinds[k].transientScores);
            st.backwardScratchScores = std::max(st.backwardScratchScores, kinds[k].backwardScratchScores);
            freedBeforeScores = std::min(freedBeforeScores, kinds[k].freedBeforeScores);
            if (l == st.firstLayer && recompute.keepsInput &&
                (mode == Checkpointing::None || mode == Checkpointing::Selective)) {
                st.firstLayerSaved = kinds[k].stored;
                st.firstLayerScores = mode == Checkpointing::None ? kinds[k].scores : 0;
            }
        }
        st.freedBeforeScores = st.backwardScratchScores > 0 ? freedBeforeScores : 0;
        if (st.castWeights > 0 && checkpointedCastable > 0) {
            // Autocast caches the cast of every fp32 weight until the outermost autocast exits
            // (aten/src/ATen/autocast_mode.cpp cached_cast; torch.autocast.__exit__ clears the cache),
            // whether or not grad mode is on: through the forward and the loss, all of them. A checkpointed
            // block's casts have no other owner, so they go when autocast exits, before `loss.backward()`
            // outside it; its backward casts its weights again under the autocast it restores
            // (torch/utils/checkpoint.py, CheckpointFunction.backward and the non-reentrant recompute),
            // saved for that block's backward alone. The rest (the head, blocks not checkpointed) are saved
            // by autograd until each one's backward.
            const double cached = std::min(st.castWeights, tr.autocastBytes * checkpointedCastable);
            st.cachedCasts = cached;
            st.castWeights -= cached;
            st.recomputedCasts = tr.autocastBytes * largestCheckpointedCastable;
        }
        if (tr.activationOffloading && st.layers > 0) {
            // Saved tensors go to pinned host memory as the forward makes them and come back a layer
            // ahead of the backward (torchtune's OffloadActivations, Megatron's cpu_offloading): the
            // GPU holds the layer being computed and the one on its way.
            double perLayer = 0;
            for (const LayerActivations& kind : kinds)
                perLayer = std::max(perLayer, kind.stored + kind.scores);
            const double onGpu = std::min(2.0, static_cast<double>(st.layers)) * perLayer;
            const double all = st.activations + st.scores;
            if (all > onGpu) {
                st.offloadedActivations = all - onGpu;
                st.scores *= onGpu / all;
                st.activations *= onGpu / all;
                st.checkpointInputs *= onGpu / all;
            }
        }
        if (st.last) {
            const double sl = static_cast<double>(tr.sequenceLength) / c.contextParallel;
            const double spDiv = c.sequenceParallel ? c.tensorParallel : 1;
            // Output layer: final norm and LM-head inputs, fp32 logits, and their gradient in the loss
            // backward.
            // Under autocast the head's input is saved as its 16-bit copy and the head writes 16-bit
            // logits, which the loss (on the fp32 list) upcasts: both copies live.
            const LossBytes loss = lossBytes(tr, c.tensorParallel);
            // With sequence parallelism torchtitan's output layer (DTensor's ColwiseParallel from Shard(1))
            // all-gathers the final norm's output and the matmul saves the gathered tensor: the whole
            // sequence on every rank. Megatron's saves its shard and gathers again in the backward
            // (LinearWithGradAccumulationAndAsyncCommunication).
            const double headDiv = tr.framework == Framework::Torchtitan ? 1 : spDiv;
            const double logitBytes = tr.autocastBytes > 0 ? tr.autocastBytes : tr.activationBytes;
            const double headInputs =
                tr.activationBytes * sl * m.hidden / spDiv + logitBytes * sl * m.hidden / headDiv;
            st.logits = headInputs + loss.forward * sl * m.vocab / c.tensorParallel;
            // The head's own backward comes after the loss's, before any layer's (autograd's ready queue
            // takes the highest sequence number first, and the loss's nodes were made last): it reads the
            // logits' gradient in the logits' dtype (the loss's fp32 copies are gone) and writes its weight's
            // gradient, vocabulary x hidden, unsharded until FSDP reduces it. torchtune's chunked loss runs
            // the head on each chunk (TransformerDecoder with num_output_chunks): every chunk's loss backward
            // runs first, then the chunks' matmuls, each writing a whole weight gradient that the engine adds
            // to the sum so far (torch/csrc/autograd/input_buffer.cpp, in place): two alive from the second
            // chunk on, next to the other chunks' gradients. A frozen head (adapters), Megatron's (written
            // into its fp32 main_grad buffer) and a fused linear cross-entropy (the head's gradient made in
            // the forward) have no such moment.
            const bool chunked = tr.framework == Framework::Torchtune && tr.loss == LossKind::Chunked;
            if (!tr.fineTuning.adapters() && tr.framework != Framework::Megatron &&
                tr.framework != Framework::Unsloth && tr.loss != LossKind::FusedLinear) {
                st.headGradient = b.gradients * m.vocab * m.hidden / c.tensorParallel;
                st.headGradientCopies = chunked ? 2 : 1;
                // transformers before 4.46 keeps the fp32 logits in the model's output through the backward.
                const bool keptFp32 =
                    (tr.framework == Framework::HuggingFace || tr.framework == Framework::DeepSpeed) &&
                    tr.versionBefore(4, 46);
                st.headLogitsGradient =
                    headInputs +
                    (logitBytes * (chunked ? 1 - 1 / kTorchtuneOutputChunks : 1) + (keptFp32 ? 4 : 0)) * sl *
                        m.vocab / c.tensorParallel;
            }
            // Once the head's backward has run, its gradient and the final norm's stay written through every
            // layer's backward (StageModel::gradientsBeforeLayers), where the backward makes each .grad as it
            // goes: unsharded, none left from an earlier micro-batch, not stepped in the backward, not
            // reduced into DeepSpeed's partitions, a head that trains.
            if (!st.gradientsInForward && !shardsGradients(c) && !tr.optimizerInBackward &&
                !tr.fineTuning.adapters() && st.frozenWeights <= 0 &&
                !(tr.framework == Framework::DeepSpeed && shardsOptimizer(c)) &&
                tr.framework != Framework::Cs336Basics) {
                st.gradientsBeforeLayers =
                    b.gradients * (static_cast<double>(m.vocab) * m.hidden / c.tensorParallel + m.hidden);
                // The embedding's (and a learned position table's), written after the first layer's
                // backward: one stage holds both ends here (several stages leave gradients in the forward).
                st.embeddingGradient =
                    b.gradients *
                    ((m.tiedEmbeddings ? 0.0 : static_cast<double>(m.vocab) * m.hidden / c.tensorParallel) +
                     (m.learnedPositions ? static_cast<double>(m.maxPositions) * m.hidden : 0.0));
                // A layer's own: all of them, and those of the ops after its softmax (the output projection,
                // the norms after it, the MLP), whose nodes run before the softmax's backward. Dense
                // attention layers only (an MoE layer's experts, MLA's projections: 0, as before).
                struct Own {
                    double all = 0, afterScores = 0;
                };
                auto own = [&](int l) {
                    const LayerParams lp = m.layerParams(l);
                    if (lp.isMoe() || m.mla || m.isLinearLayer(l))
                        return Own{};
                    const double tp = c.tensorParallel;
                    const double norms = static_cast<double>(lp.norms);
                    const double output = static_cast<double>(m.heads) * m.headDim * m.hidden;
                    return Own{b.gradients * ((static_cast<double>(lp.attention) + lp.denseMlp) / tp + norms),
                               b.gradients * ((output + static_cast<double>(lp.denseMlp)) / tp +
                                              norms * (m.normsPerLayer - 1) / std::max(1, m.normsPerLayer))};
                };
                st.lastLayerGradientsAfterScores = own(st.firstLayer + st.layers - 1).afterScores;
                const Own first = own(st.firstLayer);
                st.firstLayerGradients = first.all;
                st.firstLayerGradientsAfterScores = first.afterScores;
            }
            // What the backward's start holds beyond the forward's end (less, when the forward's copies
            // are freed first: Megatron, a chunked loss).
            st.logitsGradient = (loss.backward - loss.forward) * sl * m.vocab / c.tensorParallel;
            // transformers 4.46 to 4.48 (lossBytes): the forward's loss holds the bf16 logits beside two fp32
            // copies, so its moment reserves what the backward's two fp32 gradients are later carved from
            // (the blocks of the copies it freed): nothing more is reserved after it.
            const bool lossCopiesLogits =
                (tr.framework == Framework::HuggingFace || tr.framework == Framework::DeepSpeed) &&
                !tr.versionBefore(4, 46) && tr.versionBefore(4, 49);
            if (tr.loss == LossKind::Full && !lossCopiesLogits &&
                (tr.framework == Framework::Torchtitan || tr.framework == Framework::HuggingFace ||
                 tr.framework == Framework::DeepSpeed))
                // The caller frees the bf16 logits before the backward (`del pred`), whose fp32 gradients
                // are twice their size: the caching allocator cannot hand their block out again and
                // asks the driver for more, so that block stays reserved at the peak.
                st.cachedLogits = 2 * sl * m.vocab / c.tensorParallel;
            if (tr.fineTuning.dpo) {
                // DPO scores the batch under the reference after the policy's forward (TRL's
                // get_batch_loss_metrics: concatenated_forward, then compute_ref_log_probs under no_grad),
                // with the policy's activations alive: the reference's 16-bit logits at the loss point,
                // gone when the backward starts.
                const double reference = 2 * sl * m.vocab / c.tensorParallel;
                st.logits += reference;
                st.logitsGradient -= reference;
            }
        }
    }
    if (tr.framework == Framework::Cs336Basics && m.known && st.layers > 0)
        applyCs336Basics(sc, st);
    if (tr.framework == Framework::Torchtitan && shardsWeights(c) && m.known) {
        // FSDP2 as torchtitan applies it (torchtitan/models/llama3/infra/parallelize.py apply_fsdp;
        // torch/distributed/fsdp/_fully_shard). Each unit's all-gather output is allocated on the all-gather
        // stream, so the allocator keeps a block of the largest cached on that stream, reserved but not
        // allocated at the peak. In the backward, the layer being computed and the one prefetched, its
        // gradients in bf16 and their fp32 copy for the reduce-scatter (reduce_dtype=float32).
        const double layer = sp.largestLayer;
        const double gb = b.weights;          // MixedPrecisionPolicy(param_dtype=bf16)
        const double reduced = 4 + 4 / group; // foreach_reduce's fp32 input, and the shard it writes
        st.gatherBackward = layer * (prefetch * gb + b.gradients + 4);
        if (tr.versionBefore(0, 2)) {
            // Before torchtitan 0.2 (83e694105, July 2025) the root module (embeddings, final norm, output)
            // is one unit, gathered when the forward starts and unsharded until the backward ends, and the
            // last layer is not resharded after its forward. The root's parameters get their gradients
            // unsharded, in the parameters' dtype, and its post-backward runs only in the final callback
            // (_fsdp_state.py _root_post_backward_final_callback: no input of the root needs a gradient to
            // trigger it earlier): the head's gradient is held from its backward on; at the end
            // foreach_reduce (_fsdp_collectives.py) copies every root gradient into one reduce-scatter input
            // of reduce_dtype (fp32) before it frees them, and writes the reduced shard.
            const double root = rootUnitParams(sc, stage, st.last);
            st.gatherForward = gb * (root + layer);
            st.gatherBackward += gb * root;
            st.reservedExtra = gb * std::max(root, prefetch * layer);
            if (st.headGradient > 0) {
                st.headGradient = gb * m.vocab * m.hidden / c.tensorParallel; // unsharded: param_dtype
                st.rootGradientHeld = st.headGradient;
            }
            st.rootReduceAtEnd = root * (gb + reduced);
        } else {
            // From 0.2 the embeddings, each layer and [final norm, output] are units of their own, and the
            // model the root with nothing left: layers are resharded after their forward (unless a
            // pipeline), [norm, output] not, so at the loss only the head is gathered; the head's backward
            // (its unit's pre-backward) prefetches the last layer. The head's unit reduces after its backward
            // (its input needs a gradient): its unsharded gradient goes into the reduce-scatter input, which
            // FSDP2 keeps until the next unit's reduce-scatter (ReduceScatterState), through the last layer's
            // backward. The embeddings' unit is gathered again for its backward and reduced when the backward
            // ends.
            const double embedding = stage == 0 ? embeddingShard(m, c.tensorParallel) : 0;
            const double head = st.last ? rootUnitParams(sc, p - 1, true) - (p == 1 ? embedding : 0) : 0;
            st.gatherForward = gb * (head + layer);
            st.gatherAtLoss = gb * head; // the last layer resharded; the head's backward prefetches it
            st.reservedExtra = gb * std::max({head, embedding, prefetch * layer});
            if (st.headGradient > 0) {
                st.headGradient = gb * m.vocab * m.hidden / c.tensorParallel;
                st.headReduceHeld = reduced * head;
            }
            st.rootReduceAtEnd = embedding * (2 * gb + reduced);
        }
    }
    // (A calibration that measured the allocator's overhead stands for it instead:
    // Calibration::allocatorOverhead.)
    const bool overheadMeasured =
        sc.calibration.allocatorOverhead >= 0 && sc.calibration.measuredIn(sc.keptAs());
    if (tr.framework == Framework::Torchtitan && !tr.compile &&
        tr.checkpointing == Checkpointing::SelectiveOp && m.known && st.layers > 0 && !overheadMeasured)
        // Per sample, as the layers' activations are: each of this stage's blocks, every local token, the
        // hidden size (split like a block's tensors across tensor-parallel ranks). A measured overhead
        // already holds whatever these bytes are.
        st.eagerBlocksExcess = kTorchtitanEagerExcessBytes * static_cast<double>(tr.sequenceLength) /
                               c.contextParallel * st.layers * m.hidden / c.tensorParallel;
    if (tr.framework == Framework::Unsloth && m.known && st.layers > 0 && !overheadMeasured) {
        // Unsloth's checkpointed layers, replayed op by op through the caching allocator
        // (core/plan/unslothreplay.h): their tensors reserve what the replay finds, in place of the fraction
        // that stands for the allocator elsewhere.
        const StepReplay replay = unslothStepReplay(sc, st.layers, m.layerParams(st.firstLayer).mlpWidth);
        if (replay.replayed) {
            st.reservedExtra +=
                std::max(0.0, replay.reserved - replay.allocated - st.allocatorFraction * replay.allocated);
            st.reservedExtraReplayed = true;
        }
    }
    return st;
}

// A training step of plain PyTorch whose forward is the inference scenario's (one sequence of its context,
// its weights' and autocast's dtypes, its attention, nothing checkpointed): what a forward with autograd on
// saves is what that step's forward saves.
Scenario trainingForward(const Scenario& sc) {
    Scenario t = sc.settingsCopy();
    const InferenceSettings& in = sc.inference;
    t.mode = Mode::Training;
    TrainingSettings& tr = t.training;
    tr = TrainingSettings{};
    tr.microBatchSize = 1;
    tr.sequenceLength = in.contextLength;
    tr.precision = in.weightBytes >= 4 ? "fp32" : "bf16";
    tr.bytes = {in.weightBytes, in.weightBytes, 0, 0};
    tr.activationBytes = !in.quantised && in.weightBytes >= 2 ? std::min(4.0, in.weightBytes) : 2;
    tr.autocastBytes = in.autocastBytes;
    tr.autocast = in.autocast;
    tr.attention = in.attention;
    tr.framework = Framework::PyTorch;
    tr.dropout = false; // a forward run for its memory or its outputs, as inference plans it
    t.calibration = Calibration{};
    return t;
}

// cs336_basics under autocast: the weight casts its forward has not made yet at its last layer's softmax
// (`atSoftmax`: the head's, the layer's output projection's and MLP's) or at its silu (the head's, w2's and
// w3's), in the cast's dtype.
double lastLayerCasts(const Cs336Shape& s, bool atSoftmax) {
    if (s.autocastBytes <= 0 || s.autocastBytes >= s.weightBytes)
        return 0;
    const double h = s.hidden, f = s.ffn;
    return s.autocastBytes * (s.vocab * h + (atSoftmax ? h * h + 3 * h * f : 2 * h * f));
}

StageModel inferenceStage(const Scenario& sc, int stage, EngineSizer engine) {
    StageModel st;
    st.mode = Mode::Inference;
    const ModelSpec& m = sc.model;
    const ClusterSettings& c = sc.cluster;
    const InferenceSettings& in = sc.inference;
    const int p = c.pipelineParallel;
    const StageParams sp = placeStage(sc, stage, st);
    st.weights = sp.bytes;
    st.communication = static_cast<double>((c.tensorParallel > 1) + (p > 1) + (c.expertParallel > 1)) *
                       static_cast<double>(sc.overheads.ncclBytesPerCommunicator);
    st.engine = in.engine == Engine::Vllm || in.engine == Engine::Sglang;
    ServingEstimate& sv = st.serving;
    sv.requestLength = in.requestLength();
    sv.blockSize = in.kvBlockSize;
    if (!m.known)
        return st;
    const double t = c.tensorParallel;
    // One token's keys and values in one layer on one GPU: the compressed latent and its rope part for
    // multi-head latent attention (once, whatever the tensor parallelism), else K and V of this rank's
    // KV heads, at least one (a head is replicated when there are fewer than ranks).
    const double kvPerToken = m.mla ? static_cast<double>(m.kvLoraRank + m.qkRopeHeadDim)
                                    : 2.0 * std::max(1.0, std::floor(m.kvHeads / t)) * m.headDim;
    const double kvLayerBytes = kvPerToken * in.kvCacheBytes;
    int fullLayers = 0, slidingLayers = 0, linearLayers = 0;
    for (int l = st.firstLayer; l < st.firstLayer + st.layers; ++l)
        if (m.hasMixer(l)) // an MLP block (Nemotron-H) caches nothing
            (m.isLinearLayer(l) ? linearLayers : m.isSlidingLayer(l) ? slidingLayers : fullLayers) += 1;
    sv.kvBytesPerToken = kvLayerBytes * (fullLayers + slidingLayers);
    const int tp = c.tensorParallel;

    // The dtype the forward computes in: autocast's, else the weights' when they are a floating dtype wider
    // than 8 bits (an fp32 model computes in fp32), else bf16 (a quantised checkpoint's compute dtype).
    const double e = in.autocastBytes > 0                   ? in.autocastBytes
                     : !in.quantised && in.weightBytes >= 2 ? std::min(4.0, in.weightBytes)
                                                            : 2;
    const double heads = m.heads / t;
    const int width = m.isMoe() ? m.expertsPerToken * m.moeFfn + m.sharedExpertWidth() : m.ffn;
    const double perToken =
        e * (2.0 * m.hidden + 2 * heads * m.headDim + kvPerToken + (m.gatedMlp ? 3.0 : 2.0) * width / t);

    InferenceShape shape{kvLayerBytes,
                         fullLayers,
                         slidingLayers,
                         perToken,
                         linearLayers,
                         m.linearConvStateElements(tp),
                         m.linearRecurrentStateElements(tp)};
    shape.linearStateBytes = e * (shape.linearConvElements + shape.linearRecurrentElements);
    sv.stateBytesPerRequest = linearLayers * shape.linearStateBytes;
    // Without an engine, torch.autocast caches the 16-bit copy of each weight a matmul casts until the
    // autocast region ends (autocast_mode.cpp cached_cast takes a leaf that requires a gradient: nn.Linear
    // hands it the parameter, and so does cs336_basics' einsum(x, weight), einsum being on autocast's 16-bit
    // list, autocast_mode.h AT_FORALL_LOWER_PRECISION_FP): every matmul weight but the embedding's, through
    // the forward. Under torch.inference_mode PyTorch since pytorch#165068 (December 2025; 2.11 has it)
    // caches nothing. Every copy is counted at the peak: a forward's largest moment is at its last layers or
    // its head, with all but the head's copy made.
    const bool castsWeights =
        !st.engine && in.autocastBytes > 0 && in.weightBytes > in.autocastBytes && !in.quantised;
    if (castsWeights && !in.inferenceMode)
        st.castWeights = in.autocastBytes * castableParameters(sc, stage, st, sp);
    if (!st.engine && in.framework == Framework::Cs336Basics) {
        // cs336_basics' forward (core/plan/cs336basics.h): the whole sequence at once, no cache.
        const Cs336Shape cs = cs336ShapeOf(m, in.contextLength, std::min(4.0, in.weightBytes), in.autocastBytes);
        st.kvCache = 0;
        sv.kvBytesPerToken = 0;
        if (in.gradEnabled) {
            // Autograd on and no backward: every layer saves what a training forward saves (the same table),
            // and the forward peaks at the later of two moments with the earlier layers' saved tensors alive:
            // the last layer's softmax (what it has saved by then, and the scores, x - max, exp's output and P
            // being written; its output projection and MLP not made yet), or the head writing the logits
            // with every layer's saved tensors and the final norm's and the head's saved inputs
            // (BasicsTransformerLM.forward ends with lm_head; the caller holds the logits and, through them,
            // the graph). The head's moment is the larger for short sequences, the softmax's for long ones.
            const Cs336Training saved = cs336Training(cs);
            const double tokens = in.contextLength;
            const double layers = st.layers * saved.layerSaved, layerScores = st.layers * saved.layerScores;
            st.fixedActivations = st.layers * saved.layerMask;
            // Under autocast the einsums keep their weights' casts for the backward: at the last layer's
            // softmax all but its output projection's, MLP's and the head's are made (the step's replay
            // showed the head's moment 0.1% to 0.2% under when all were counted at both).
            st.forwardMoments = 2;
            st.forwardMoment[0] = {layers + saved.lastLayerForward + saved.lastLayerNotMade,
                                   layerScores + saved.lastLayerForwardScores, 0,
                                   std::max(0.0, st.castWeights - lastLayerCasts(cs, true))};
            // At the head, under autocast the final norm's output is alive beside the cast the einsum saved
            // (the forward's local, until it returns: 0.23% under for the small model at 8 x 256 without).
            const double normOutput =
                st.castWeights > 0 ? std::min(4.0, in.weightBytes) * m.hidden * tokens : 0;
            st.forwardMoment[1] = {layers + saved.head + normOutput, layerScores,
                                   saved.heldLogits * tokens * m.vocab, st.castWeights};
            if (in.previousOutputHeld) {
                // The previous forward's graph as it ended, kept by the output the loop has not rebound
                // yet: every layer's saved tensors, scores and mask, the head's saved inputs, the logits
                // and the weights' casts its einsums saved (the norm's output was a local, gone).
                st.previousGraph = {layers + saved.head, layerScores, saved.heldLogits * tokens * m.vocab,
                                    st.castWeights};
                st.fixedActivations *= 2;
            }
            st.castWeights = 0;
            return st;
        }
        // Without autograd: at the last layer's softmax, its MLP and its head. Under torch.no_grad
        // autocast's cache keeps every cast made by then (not yet the last layer's output projection and
        // MLP, nor the head's, at the softmax); under
        // inference_mode each cast goes with its einsum, and only the head's is alive at its moment. The
        // forward's replay showed them: counted every cast at every moment, the 2.7B model at 1 x 1,024
        // tokens was 1.1% over it under no_grad; without the head's cast, 0.4% under at 1 x 64 under
        // inference_mode.
        const Cs336Forward f = cs336Forward(cs);
        st.fixedActivations = f.mask;
        const double cached = st.castWeights;
        const double headCast = in.autocastBytes > 0 && std::min(4.0, in.weightBytes) > in.autocastBytes
                                    ? in.autocastBytes * static_cast<double>(m.vocab) * m.hidden
                                    : 0;
        // In the MLP, three f-wide tensors are alive at silu and again at the product (w3's output in
        // sigmoid's place), when every cast but w2's and the head's has been made; under inference_mode
        // w3's own is alive while its einsum runs, beside silu's output, its input's cast and its output
        // (the 2.7B model at 8 x 64 tokens: 0.18% under without; under no_grad at 8 x 256, 0.10% under
        // with w3's cast left out at the product).
        const double w3Cast = headCast > 0 ? in.autocastBytes * static_cast<double>(m.hidden) * m.ffn : 0;
        const double mlpCasts = cached > 0 ? std::max(0.0, cached - lastLayerCasts(cs, false) + w3Cast) : 0;
        st.forwardMoments = 4;
        st.forwardMoment[0] = {f.attention.activations, f.attention.scores, 0,
                               std::max(0.0, cached - lastLayerCasts(cs, true))};
        st.forwardMoment[1] = {f.mlp.activations, 0, 0, mlpCasts};
        st.forwardMoment[2] = {f.head.activations, 0, f.head.logits, cached > 0 ? cached : headCast};
        st.forwardMoment[3] = {f.w3.activations, 0, 0, cached > 0 ? mlpCasts : w3Cast};
        st.castWeights = 0;
        return st;
    }
    if (!st.engine && in.gradEnabled) {
        // Other code with autograd on and no backward: every layer saves what a training step's forward
        // saves (core/plan/activations.cpp, the same table for the same settings), all of it alive until the
        // output is dropped, and no KV cache (a training forward builds none). The forward peaks as it ends,
        // with the final norm's and the head's saved inputs and the logits the caller holds, in the matmul's
        // dtype (no loss): nothing is checkpointed, so no layer holds more while it runs than it keeps.
        const Scenario forward = trainingForward(sc);
        const StageModel saved = trainingStage(forward, stage);
        st.kvCache = 0;
        sv.kvBytesPerToken = 0;
        st.activations = saved.activations;
        st.scores = saved.scores;
        if (st.last) {
            const LossBytes loss = lossBytes(forward.training, c.tensorParallel);
            st.logits = saved.logits + (e - loss.forward) * in.contextLength * m.vocab / t;
        }
        // The previous forward's graph, held by the output the loop has not rebound yet: what this one
        // holds as it ends, weights' casts included.
        if (in.previousOutputHeld)
            st.previousGraph = {st.activations, st.scores, st.logits, st.castWeights};
        return st;
    }
    if (!st.engine) {
        double ctx = in.contextLength;
        if (in.kvBlockSize > 0)
            ctx = std::ceil(ctx / in.kvBlockSize) * in.kvBlockSize; // paged caches hold whole blocks
        // Sliding-window layers cache at most the window (in whole blocks when paged).
        double window = std::min<double>(in.contextLength, m.slidingWindow);
        if (in.kvBlockSize > 0)
            window = std::ceil(window / in.kvBlockSize) * in.kvBlockSize;
        st.kvCache = kvLayerBytes * (fullLayers * ctx + slidingLayers * window) + sv.stateBytesPerRequest;
        if (!in.kvCache) {
            // A forward that keeps no cache (inference.kv_cache false): each layer's keys and values go
            // with the layer, inside its working set.
            st.kvCache = 0;
            sv.kvBytesPerToken = 0;
        }
        // Prefill works one layer at a time on a chunk of tokens; its working set is transient.
        const double chunk =
            in.prefillChunk > 0 ? std::min(in.prefillChunk, in.contextLength) : in.contextLength;
        st.activations = chunk * perToken;
        st.decodeActivations = perToken;
        if (in.attention == Attention::Eager) {
            // transformers' eager_attention_forward (what generate runs with attn_implementation="eager")
            // asks for an fp32 softmax: softmax(x, dtype=torch.float32) converts the scores to fp32 and
            // writes an fp32 output beside them and the scores, which stay referenced until the call returns
            // (aten softmax: input.toType(dtype), then _softmax): e + 4 + 4 bytes a score below fp32, the
            // scores and the output in fp32. Other code's softmax in the compute dtype writes its output
            // beside the scores it reads, which the caller holds until it returns (`attn = softmax(attn)`
            // drops them only then): two tensors of e bytes, as transformers' fp32 path holds two of 4.
            // Under torch.autocast (no engine) softmax is on the fp32 list (aten/src/ATen/autocast_mode.cpp):
            // its fp32 output beside the 16-bit scores it reads, as the training plan holds them
            // (core/plan/activations.cpp).
            const double bytesPerScore = in.engine == Engine::HuggingFace ? (e < 4 ? e + 8 : 8)
                                         : in.autocastBytes > 0           ? e + 4
                                                                          : 2 * e;
            st.scores = bytesPerScore * heads * chunk * ctx;
        }
        if (st.last)
            st.logits = 4.0 * m.vocab / t; // fp32 logits of the last position only
        if (st.last && in.engine == Engine::None && in.logits != ForwardLogits::Last) {
            // A forward that returns every position's logits (inference.logits; unset, one that keeps no
            // cache: scoring, evaluation, a benchmark's `model(x)`) writes them in the compute dtype
            // (transformers' LlamaForCausalLM.forward: logits_to_keep 0 slices every position and lm_head
            // writes in the weights' dtype; a hand-written model's head the same), beside the final norm's
            // output it reads: the head's moment. A model file that ends with `logits = logits.float()`
            // holds the fp32 copy beside them while it is written. A generation loop samples the last
            // position (generate asks for it alone since transformers 4.45), so with a cache the prefill
            // keeps the last position's unless told; a loop that calls `model(input_ids)` on the prompt
            // gets every position's, beside the cache the prefill wrote.
            const double bytes = in.logits == ForwardLogits::AllFp32 ? (e < 4 ? e + 4 : 4) : e;
            st.headLogits = bytes * chunk * m.vocab / t;
            st.headActivations = e * chunk * m.hidden;
        }
        if (castsWeights && in.inferenceMode && in.engine == Engine::None) {
            // Uncached, a cast is still made: cached_cast falls back to `arg.to(dtype)` for the one op
            // (aten/src/ATen/autocast_mode.cpp), so each matmul's 16-bit copy of its weight lives while it
            // runs. The layers' working set holds their largest weight's (one nn.Linear a matrix), the
            // head's moment the head's: at GPT-2's vocabulary, 77 MB beside a short sequence's logits.
            double largest = static_cast<double>(m.heads) * m.headDim / t;
            for (int l = st.firstLayer; l < st.firstLayer + st.layers; ++l) {
                const LayerParams lp = m.layerParams(l);
                largest = std::max({largest, static_cast<double>(lp.mlpWidth) / t,
                                    lp.isMoe() ? static_cast<double>(lp.perExpert) / (m.gatedMlp ? 3 : 2) /
                                                     std::max(1, m.hidden)
                                               : 0.0});
            }
            st.castWeights = in.autocastBytes * m.hidden * largest;
            if (st.last) {
                st.headCast = in.autocastBytes * static_cast<double>(m.vocab) * m.hidden / t;
                if (st.headLogits <= 0) { // a generation's prefill: the last position's logits
                    st.headLogits = st.logits;
                    st.headActivations = e * m.hidden;
                }
            }
        }
        if (in.engine == Engine::HuggingFace && engine)
            engine(sc, shape, st); // transformers' DynamicCache: what generate keeps (core/serve)
        return st;
    }

    // A serving engine sizes its step and its KV pool out of a budget (core/serve): without its sizer, the
    // stage holds the weights alone.
    if (engine)
        engine(sc, shape, st);
    return st;
}

// A stage's model for one sample (micro-batch or batch of 1); withBatch scales what grows with the batch.
// `probe`: a batch tried by the search for the largest that fits, which asks only whether it does.
StageModel stageModel(const Scenario& sc, int stage, EngineSizer engine, bool probe = false) {
    StageModel st = sc.mode == Mode::Training ? trainingStage(sc, stage) : inferenceStage(sc, stage, engine);
    if (st.mode == Mode::Inference)
        st.nonTorch = st.communication; // NCCL and the engines' non-torch memory
    // Calibration (fitted to recorded runs of this code): what grows with tokens, what grows with their
    // square, the KV cache, and the bytes the optimizer step and workspaces hold.
    // Measured in the other mode, the tokens' and scores' factors are not applied (Calibration::measuredOn).
    const Calibration c = sc.calibration.measuredIn(sc.keptAs()) ? sc.calibration : Calibration{};
    if (c.allocatorOverhead >= 0)
        st.allocatorFraction = c.allocatorOverhead; // what the runs' allocator reserved beyond allocated
    if (sc.mode == Mode::Training && sc.training.fineTuning.dpo)
        // DPO concatenates each chosen and rejected sequence (TRL's concatenated_forward): twice the
        // sequences per micro-batch.
        for (double* v :
             {&st.activations, &st.scores, &st.transient, &st.transientScores, &st.logits, &st.logitsGradient,
              &st.headLogitsGradient, &st.cachedLogits, &st.offloadedActivations, &st.backwardScratchScores,
              &st.freedBeforeScores, &st.firstLayerSaved, &st.firstLayerScores})
            *v *= 2;
    const double layerWorkingSet = st.activations; // before calibration, for prefillAttentionLinear below
    // A checkpointed layer keeps its input, the tensor torch.utils.checkpoint saves whatever the code's
    // modules do: what a calibration measured of the layers' saved tensors is of what it rebuilds.
    const double checkpointInputs = std::min(st.checkpointInputs, st.activations);
    st.activations -= checkpointInputs;
    for (double* v : {&st.activations, &st.transient, &st.decodeActivations, &st.backwardActivations,
                      &st.backwardTemporaries, &st.firstBlockHeld, &st.recomputedSaved, &st.blockOutputHeld,
                      &st.transientNotMade, &st.headActivations, &st.freedBeforeScores, &st.firstLayerSaved})
        *v *= c.linear;
    st.activations += checkpointInputs;
    // The vocabulary-sized tensors: as measured at the loss where they were (Calibration::logits).
    // Measured with another loss than this plan's, the plan's own copies of it (not the layers' factor).
    // Under another activation width, the factor the runs told for it (Calibration::logitsByDtype).
    const double logitsFactor = c.logits < 0 ? c.linear
                                : sc.mode != Mode::Training || c.logitsFactorAppliesTo(sc.training)
                                    ? c.logitsFor(sc.activationDtypeBytes())
                                    : 1.0;
    for (double* v : {&st.logits, &st.logitsGradient, &st.headLogitsGradient, &st.heldLogits, &st.headLogits})
        *v *= logitsFactor;
    for (StageModel::MlpMoment& m : st.mlp) {
        m.freed *= c.linear;
        m.scratch *= c.linear;
    }
    // cs336_basics' forward moments keep their own order under a calibration: each is scaled as the
    // calibration read it (the largest moment of the uncalibrated plan, core/compare/calibration.cpp), so
    // a run whose peak is in the MLP at one length still peaks in the attention at another. Scaling only
    // the largest moment's tensors put the 128-token forward's MLP against the attention's plan: x1.21 on a
    // profile that matched, +8.7% at 1,024 tokens.
    for (StageModel::ForwardMoment& f : st.forwardMoment) {
        f.activations *= c.linear;
        f.logits *= logitsFactor;
    }
    st.previousGraph.activations *= c.linear;
    st.previousGraph.logits *= logitsFactor;
    // Only where the head runs (a pipeline's last stage): the others have no logits to keep.
    // (A loss fused with the output layer writes no logits for a caller to hold.)
    if (c.heldLogitCopies >= 0 && sc.mode == Mode::Training && sc.model.known && st.logits > 0 &&
        sc.training.loss != LossKind::FusedLinear)
        st.heldLogits = c.heldLogitCopies * sc.activationDtypeBytes() * sc.training.sequenceLength *
                        sc.model.vocab / sc.cluster.tensorParallel; // measured, so not scaled with `linear`
    // Measured in another activation dtype, the scores' factor does not carry over (Calibration).
    std::optional<double> measuredQ = c.quadraticFor(sc.activationDtypeBytes());
    if (!measuredQ && sc.mode == Mode::Inference && sc.inference.autocastBytes > 0)
        measuredQ = c.forwardScoresFromFp32(sc.activationDtypeBytes());
    const double q = measuredQ.value_or(1);
    st.scores *= q;
    st.previousGraph.scores *= q;
    st.transientScores *= q;
    st.firstLayerScores *= q;
    if (c.backwardScratchScores >= 0)
        st.backwardScratchScores *= c.backwardScratchScores;
    if (sc.keptAs() == Mode::Inference && !st.engine && c.prefillAttentionLinear >= 0 && st.scores > 0) {
        // Measured at its two kinds of moment (Calibration::prefillAttentionLinear), the forward peaks at
        // the larger: inside a layer's attention, its scores beside what the attention holds, or elsewhere
        // (the FFN, the head), where no score is alive.
        const double inAttention = c.prefillAttentionLinear * layerWorkingSet;
        if (inAttention + st.scores >= st.activations)
            st.activations = inAttention;
        else
            st.scores = 0;
    }
    for (StageModel::ForwardMoment& f : st.forwardMoment)
        f.scores *= q;
    st.backwardScores *= q;
    st.firstBlockScores *= q;
    st.recomputedScores *= q;
    // Not the softmax backward's temporaries of cs336_basics (backwardTemporaryScores): they are what the
    // division's backward writes (cs336basics.cpp: the gradient of P in exp's dtype and four more), whatever
    // extra copies a student's forward keeps. NiuHuangxiaozi's softmax keeps a second exp (x1.67 of the
    // scores under autocast), and its step's peak, in that backward, holds the profile's five fp32 tensors
    // (to_dtype_layout, div, div, neg, mul; its temporaries there 134.1 MB, the plan's 134.4); scaled with
    // the forward's copies, its calibration was 6.4% over.
    if (!st.engine) {
        st.kvCache *= c.kvCache; // an engine's pool is what its budget leaves, whatever the code keeps
        st.decodeKvTransient *= c.kvCache;
        st.prefillKvExtra *= c.kvCache;
    }
    st.workspace = workspaceBytes(sc);
    // cs336_basics' forward without autograd, replayed through the allocator with its parameters
    // (core/plan/cs336replay.h): reserved is what the code's own sizes and order leave cached, not a
    // fraction. Under a calibration the replay is of the profile's tensors at this shape, not the calibrated
    // ones: it gives what the allocator keeps beyond them, to which the share the calibration's runs kept
    // beyond the replay of theirs is added (Calibration::replayedOverhead); a calibration that measured
    // only the fraction (no segments, or an older file) keeps the fraction.
    const bool scaled = sc.calibration.present && sc.calibration.measuredIn(sc.keptAs());
    const bool replay = !scaled || c.replayedOverheadMeasured();
    const double device = static_cast<double>(sc.cluster.capacityBytes) - st.cudaContext - st.nonTorch;
    // Calibrated on traces of cs336_basics' code and planned with another profile (CS336's runs as plain
    // PyTorch), the code replayed is the one the traces ran (Calibration::code): its tensors are what the
    // calibration scaled the plan to, and its order is what leaves the allocator's cache.
    // (Made only then: an empty Scenario built on every estimate cost 0.2 us of bench estimate_ns.)
    // Stepping the code's own AdamW, as the runs did, where the plan's step is theirs (cs336CodeAsRecorded).
    const std::optional<Scenario> asRecorded = scaled ? cs336CodeAsRecorded(sc, c) : std::nullopt;
    const Scenario* code = asRecorded ? &*asRecorded : &sc;
    Cs336Replay replayed;
    if (const auto run = st.engine || !replay ? std::nullopt : cs336ForwardRunOf(*code, st.workspace, device))
        replayed = cs336ForwardReplay(*run, !probe);
    // Its training step with fp32 parameters (under autocast or not), the same way: the backward's order and
    // AdamW's states made in a first step beside what the activations left cached.
    if (const auto run = replay ? cs336StepRunOf(*code, st.workspace, device) : std::nullopt)
        replayed = cs336StepReplay(*run, !probe);
    if (replayed.replayed) {
        st.replayedReserved = replayed.reserved;
        st.replayedAllocated = replayed.allocated;
        st.replayedReservedForward = replayed.reservedByForward;
        st.replayedReservedBackward = replayed.reservedByBackward;
        if (scaled) {
            st.calibratedWaste = std::max(0.0, replayed.reserved - replayed.allocated);
            st.calibratedShare = c.replayedOverhead;
            st.replayedReserved = st.replayedReservedForward = st.replayedReservedBackward = 0;
        }
    }
    if (sc.mode == Mode::Training && sc.training.bytes.weights > 0) {
        const double parameters = st.weights / sc.training.bytes.weights;
        st.optimizerStep = c.optimizerStepBytesPerParameter * parameters;
        if (!c.stepScratchAppliesTo(sc.training)) {
            // Measured with another implementation than this plan steps with: its own temporaries stand.
        } else if (c.stepScratchLargestTensors >= 0) {
            // A loop over the parameters: so many tensors of the largest one this GPU steps, in the states'
            // dtype, which follow the model's widest matrix rather than its parameter count.
            st.optimizerStep += c.stepScratchLargestTensors * sc.training.bytes.optimizerStates / 2 *
                                largestSteppedTensor(sc);
            st.optimizerTemp = 0;
        } else if (c.stepScratchBytesPerParameter >= 0) {
            st.optimizerStep += c.stepScratchBytesPerParameter * parameters;
            st.optimizerTemp = 0; // measured, whatever implementation it was declared as
        }
    }
    // Which moment of a layer's backward holds the most does not depend on the batch (both sides grow with
    // it): read per sample, calibrated, so the batch-free terms it decides (the layer's own gradients
    // written by then) are the same at every batch, the batch search's intercept and slope included.
    st.scratchOutweighsFreed = st.backwardScratchScores > st.freedBeforeScores;
    st.scratchAtAll = st.backwardScratchScores > 0;
    return st;
}

StageModel withBatch(StageModel st, double batch) {
    if (st.engine)
        return st; // the engine's pool and step do not follow the requested batch
    for (double* v : {&st.activations,
                      &st.scores,
                      &st.transient,
                      &st.transientScores,
                      &st.logits,
                      &st.logitsGradient,
                      &st.headLogitsGradient,
                      &st.kvCache,
                      &st.prefillKvExtra,
                      &st.decodeKvTransient,
                      &st.decodeActivations,
                      &st.cachedLogits,
                      &st.eagerBlocksExcess,
                      &st.offloadedActivations,
                      &st.backwardActivations,
                      &st.backwardScores,
                      &st.backwardTemporaries,
                      &st.backwardTemporaryScores,
                      &st.heldLogits,
                      &st.backwardScratchScores,
                      &st.freedBeforeScores,
                      &st.firstLayerSaved,
                      &st.firstLayerScores,
                      &st.firstBlockHeld,
                      &st.firstBlockScores,
                      &st.recomputedSaved,
                      &st.recomputedScores,
                      &st.blockOutputHeld,
                      &st.transientNotMade,
                      &st.headLogits,
                      &st.headActivations})
        *v *= batch;
    for (StageModel::MlpMoment& m : st.mlp) {
        m.freed *= batch;
        m.scratch *= batch;
    }
    for (StageModel::ForwardMoment* f : {&st.forwardMoment[0], &st.forwardMoment[1], &st.forwardMoment[2],
                                         &st.forwardMoment[3], &st.previousGraph}) {
        f->activations *= batch;
        f->scores *= batch;
        f->logits *= batch;
    }
    return st;
}

// `layerRunning`: at x = 1 of the forward or x = 0 of the backward, whether it is the last (first) layer
// that runs, with its transients, rather than the loss, with the logits. `headRunning`: at x = 0 of the
// backward, the head's backward between the two (the loss's when the head has none).
Breakdown memoryAt(const StageModel& st, Phase phase, double x, bool layerRunning = false,
                   bool headRunning = false, int moment = -1) {
    Breakdown b;
    b[Category::Weights] = st.weights;
    b[Category::MasterWeights] = st.master;
    b[Category::OptimizerStates] = st.optimizer;
    b[Category::CommunicationBuffers] = st.communication;
    b[Category::CudaContext] = st.cudaContext;
    b[Category::KvCache] = st.kvCache;
    const double before = st.inFlight - st.current;
    // A layer's transient tensors (what checkpointing rebuilds, what a layer's forward makes and drops) live
    // while that layer runs, never while the loss does: at the end of the forward (x = 1) and at the start
    // of the backward (x = 0) the loss holds the logits instead.
    if (st.statesFromStep && (phase == Phase::Forward || phase == Phase::Backward))
        b[Category::OptimizerStates] = 0;
    switch (phase) {
    case Phase::Forward: {
        const bool loss = x >= 1 && !layerRunning;
        b[Category::Gradients] = st.gradientsInForward || st.gradientsThroughForward ? st.gradients : 0;
        // Autocast's weight copies count as activations, where attribution finds them (the forward made
        // them; docs/formats.md, the category table): the same category on both sides of a comparison.
        b[Category::Activations] =
            std::max(0.0, st.activations * (before + x * st.current) +
                              (loss ? 0 : st.transient + st.transientNotMade)) +
            std::max(0.0, st.castWeights + st.cachedCasts + (loss ? 0 : st.castsNotMade)) * x +
            st.fixedActivations * x;
        b[Category::AttentionScores] =
            st.scores * (before + x * st.current) + (loss ? 0 : st.transientScores);
        // Until the loss, the logits the loop kept from the step before (cs336replay.cpp's `Lh`: the
        // checkpointed XL model at 16 x 1,024 tokens with zero_grad after the forward peaks in its last
        // block's softmax, 1.5% over the moment without them); by the loss the new ones have replaced them.
        b[Category::Logits] = loss ? st.logits : st.logitsThroughForward ? st.heldLogits : 0;
        b[Category::GatherBuffers] = loss && st.gatherAtLoss >= 0 ? st.gatherAtLoss : st.gatherForward;
        b[Category::Temporaries] = loss ? 0 : st.layerTemporary;
        break;
    }
    case Phase::Backward: {
        const bool loss = x <= 0 && !layerRunning;
        const double g0 = st.gradientsInForward ? st.gradients : 0;
        if (st.stepInBackward) {
            // Nothing is stepped before the loss's backward has run.
            b[Category::Gradients] = loss ? 0 : st.heldGradients;
            b[Category::Temporaries] = loss ? 0 : x >= 1 ? st.stepScratchAtEnd : st.stepScratchInLayers;
        } else if (!loss && st.gradientsBeforeLayers > 0) {
            // The head's and the final norm's from the last layer's backward on, each layer's as its
            // backward ends; the embedding's only after the first layer's, past every moment here.
            const double layers =
                std::max(0.0, st.gradients - st.gradientsBeforeLayers - st.embeddingGradient);
            b[Category::Gradients] = st.gradientsBeforeLayers + layers * x;
        } else {
            b[Category::Gradients] = g0 + (st.gradients - g0) * x;
        }
        b[Category::Temporaries] += loss ? 0 : st.layerTemporary;
        // What a running layer holds beyond its saved tensors: what it rebuilds (checkpointing), or, for a
        // profile that knows it, its own backward's peak, at the last layer only.
        // (and a checkpointed block's weight casts, made again for its backward)
        double layerActivations = loss ? 0 : st.transient + st.recomputedCasts;
        double layerScores = loss ? 0 : st.transientScores;
        if (st.ownBackwardMoment) {
            const bool peak = layerRunning && x <= 0;
            // Every block checkpointed, the first block's backward at the end can hold more: by then every
            // later block's gradients outweigh the inputs those blocks kept (the step's replay showed it).
            const bool first = st.firstBlockMoment && layerRunning && x >= 1;
            layerActivations =
                peak    ? st.backwardActivations - st.backwardCastsFreed + st.recomputedMask
                : first ? st.backwardActivations + st.firstBlockHeld + st.firstBlockFixed + st.firstBlockCasts
                        : 0;
            layerScores = peak ? st.backwardScores : first ? st.backwardScores + st.firstBlockScores : 0;
            b[Category::Temporaries] +=
                peak || first ? st.backwardTemporaries + st.backwardTemporaryScores : 0;
            // New gradients, unless earlier micro-batches left them (then they accumulate in place).
            b[Category::Gradients] += peak && !st.gradientsInForward ? st.layerBackwardGradients : 0;
            b[Category::Gradients] -= first && !st.gradientsInForward ? st.firstBlockUnwritten : 0;
            if (moment >= 0 && layerRunning && st.mlpMoment) {
                // Inside the block's MLP backward, before its attention's (StageModel::mlp): the last
                // block's (x = 0) or the first's (x = 1).
                const StageModel::MlpMoment& at = st.mlp[std::clamp(moment, 0, 2)];
                const bool atFirst = x >= 1;
                layerActivations = (atFirst ? st.firstBlockHeld + st.firstBlockFixed + at.firstCasts
                                            : st.recomputedMask - at.castsFreed) +
                                   st.recomputedSaved + st.blockOutputHeld + at.freed;
                layerScores = (atFirst ? st.firstBlockScores : 0) + st.recomputedScores;
                b[Category::Temporaries] = st.layerTemporary + at.scratch;
                b[Category::Gradients] =
                    (atFirst || st.gradientsInForward ? st.gradients : 0) + at.gradientCopy;
                if (!st.gradientsInForward)
                    b[Category::Gradients] += atFirst ? -at.firstUnwritten : at.gradients;
            }
        } else if (!loss) {
            // At the phase's end the first layer's backward runs beside every later layer's gradients, with
            // what it saved (StageModel::firstLayerSaved; a rebuilt layer's is `transient`).
            if (x >= 1 && layerRunning) {
                layerActivations += st.firstLayerSaved;
                layerScores += st.firstLayerScores;
            }
            // Eager attention's softmax backward in whichever layer's backward runs: the last one's (beside
            // every saved tensor) or, at the phase's end, the first one's (beside every gradient). By then
            // that layer's backward has released what the ops after its softmax saved
            // (StageModel::freedBeforeScores): the layer's backward peaks there when the scratch outweighs
            // them, else where it began. The last layer's saved tensors are in `activations`, the first's
            // in `firstLayerSaved`; a layer rebuilt for its backward holds them in `transient`.
            const bool holdsItsTensors =
                st.transient > 0 || x <= 0 || (layerRunning && st.firstLayerSaved > 0);
            // (Which of the two, read per sample: the same moment at every batch.)
            const bool atScores = holdsItsTensors ? st.scratchOutweighsFreed : st.scratchAtAll;
            if (atScores) {
                b[Category::Temporaries] += st.backwardScratchScores;
                layerActivations -= holdsItsTensors ? st.freedBeforeScores : 0;
            }
            // By the softmax's backward the ops after it have written their weights' gradients; where the
            // layer's backward begins, none of its own is written.
            if (st.gradientsBeforeLayers > 0 && x <= 0)
                b[Category::Gradients] += atScores ? st.lastLayerGradientsAfterScores : 0;
            else if (st.gradientsBeforeLayers > 0 && x >= 1)
                b[Category::Gradients] -=
                    st.firstLayerGradients - (atScores ? st.firstLayerGradientsAfterScores : 0);
        }
        // Each layer's copies (and masks) go with its backward.
        b[Category::Activations] = st.activations * (st.inFlight - x * st.current) + layerActivations +
                                   (st.castWeights + st.fixedActivations) * (1 - x);
        b[Category::AttentionScores] = st.scores * (st.inFlight - x * st.current) + layerScores;
        b[Category::Logits] = loss ? st.logits + st.logitsGradient : st.heldLogits;
        // The loss's backward runs before any layer's: only what the forward had gathered.
        b[Category::GatherBuffers] = !loss                                  ? st.gatherBackward
                                     : st.gatherAtLoss >= 0 && !headRunning ? st.gatherAtLoss
                                                                            : st.gatherForward;
        if (!loss)
            // FSDP2's root units: the head's gradient held through the layers (or its reduce-scatter input
            // through the last layer's backward), what the backward's end reduces (StageModel).
            b[Category::Gradients] +=
                x >= 1 ? st.rootReduceAtEnd : st.rootGradientHeld + (x <= 0 ? st.headReduceHeld : 0);
        if (loss && headRunning && st.headGradient > 0) {
            // The head's backward: the logits' gradient it reads and the weight gradients it writes, beside
            // the gradients earlier micro-batches left.
            b[Category::Logits] = st.headLogitsGradient;
            b[Category::Gradients] = (st.stepInBackward ? 0 : g0) + st.headGradientCopies * st.headGradient;
            b[Category::Activations] -= st.headCastFreed;
        }
        break;
    }
    case Phase::Optimizer:
        // Stepped in the backward, nothing is left for the step (its scratch went with each parameter).
        b[Category::Gradients] = st.stepInBackward ? 0 : st.gradients;
        // The step's scratch (foreach's sqrt list, a calibrated step's extra) is a temporary, not a state.
        b[Category::Temporaries] = st.stepInBackward ? 0 : st.optimizerStep + st.optimizerTemp;
        b[Category::Logits] = st.heldLogits;
        break;
    case Phase::Prefill:
        // A serving engine's CUDA graphs keep their captured buffers from start-up on.
        b[Category::Temporaries] = st.engine ? st.serving.cudaGraphBytes : 0;
        b[Category::Activations] = st.activations + st.fixedActivations + st.castWeights;
        b[Category::AttentionScores] = st.scores;
        b[Category::Logits] = st.logits;
        if (st.forwardMoments > 0) {
            const StageModel::ForwardMoment& f =
                st.forwardMoment[std::clamp(moment, 0, st.forwardMoments - 1)];
            b[Category::Activations] = f.activations + st.fixedActivations + f.casts;
            b[Category::AttentionScores] = f.scores;
            b[Category::Logits] = f.logits;
        }
        b[Category::KvCache] = st.engine ? st.kvCache // an engine allocates its pool up front
                                         : (st.kvCache + st.prefillKvExtra) * x;
        if (headRunning && st.headLogits > 0) {
            // The head's moment, after the last layer (StageModel::headLogits).
            b[Category::Activations] =
                st.headActivations + st.fixedActivations + (st.headCast > 0 ? st.headCast : st.castWeights);
            b[Category::AttentionScores] = 0;
            b[Category::Logits] = st.headLogits;
        }
        b[Category::Activations] += st.previousGraph.activations + st.previousGraph.casts;
        b[Category::AttentionScores] += st.previousGraph.scores;
        b[Category::Logits] += st.previousGraph.logits;
        break;
    case Phase::Decode:
        b[Category::Temporaries] = st.engine ? st.serving.cudaGraphBytes : 0;
        b[Category::Activations] =
            (st.engine ? st.activations : st.decodeActivations) + std::max(st.castWeights, st.headCast);
        b[Category::Logits] = st.logits;
        b[Category::KvCache] += st.decodeKvTransient;
        break;
    }
    // Held from the first matrix multiply to the end, in every phase.
    b[Category::Workspaces] = st.workspace;
    double managed = 0;
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        const Category cat = categoryAt(i);
        if (cat != Category::CommunicationBuffers && cat != Category::CudaContext)
            managed += b[cat];
    }
    // Paged states (in unified memory) are outside the allocator: as many as this point holds (none before
    // a first step's step).
    managed -= std::min(st.pagedStates, b[Category::OptimizerStates]);
    b[Category::AllocatorOverhead] =
        st.allocatorFraction * managed + st.reservedExtra + st.cachedLogits + st.eagerBlocksExcess;
    if (st.fsdp1) {
        // The replay's segments hold the model states and the gathers; the rest (activations, logits,
        // temporaries, the unsharded gradients) is allocated on the compute stream, first out of what the
        // wrap left cached there, and only beyond it in segments of its own.
        double held = 0;
        for (Category cat : {Category::Weights, Category::Gradients, Category::MasterWeights,
                             Category::OptimizerStates, Category::GatherBuffers})
            held += b[cat];
        const double transient = std::max(0.0, managed - held);
        // With the step replayed, its segments at their most: what a step reserves stays reserved through
        // the next ones (the allocator never hands a segment back unless asked to).
        const double reserved =
            st.fsdp1StepReserved > 0
                ? st.fsdp1StepReserved
                : st.fsdp1Reserved + std::max(0.0, (1 + st.allocatorFraction) * transient + st.cachedLogits -
                                                       st.fsdp1Reusable);
        b[Category::AllocatorOverhead] = std::max(0.0, reserved - managed);
    } else if (st.calibratedWaste >= 0) {
        // Calibrated (StageModel::calibratedWaste): the replay's cache beyond its own tensors, and the runs'
        // share beyond the replay of theirs, of what is allocated here.
        b[Category::AllocatorOverhead] = std::max(0.0, st.calibratedWaste + st.calibratedShare * managed);
    } else if (st.replayedReserved > 0) {
        // Reserved only grows: by a phase's end, what the replay had reserved by then.
        const double by =
            phase == Phase::Forward && st.replayedReservedForward > 0     ? st.replayedReservedForward
            : phase == Phase::Backward && st.replayedReservedBackward > 0 ? st.replayedReservedBackward
                                                                          : st.replayedReserved;
        b[Category::AllocatorOverhead] = std::max(0.0, by - managed);
    }
    return b;
}

// What must be resident on the GPU at a point: everything but a paged optimizer's states, which unified
// memory pages to the host when the GPU has no room for them (the driver, not PyTorch, decides).
double residentBytes(const StageModel& st, const Breakdown& b) {
    return b.total() - std::min(st.pagedStates, b[Category::OptimizerStates]);
}

struct Candidate {
    Phase phase;
    double x;
    bool layerRunning = false;
    bool headRunning = false;
    // A moment of a block's MLP backward (StageModel::mlp) or of cs336_basics' forward
    // (StageModel::forwardMoment), or none.
    int moment = -1;
};
// The points where a step's memory can peak: the last layer's forward (its transients), the loss at the
// end of the forward and at the start of the backward, the head's backward after it, the first layer's
// backward (all activations, its recomputation and gathered gradients), the end of the backward and the
// optimizer step.
constexpr Candidate kTrainingCandidates[] = {{Phase::Forward, 1, true},
                                             {Phase::Forward, 1},
                                             {Phase::Backward, 0},
                                             {Phase::Backward, 0, false, true},
                                             {Phase::Backward, 0, true},
                                             {Phase::Backward, 1},
                                             {Phase::Backward, 1, true},
                                             {Phase::Backward, 0, true, false, 0},
                                             {Phase::Backward, 0, true, false, 1},
                                             {Phase::Backward, 0, true, false, 2},
                                             {Phase::Backward, 1, true, false, 0},
                                             {Phase::Backward, 1, true, false, 1},
                                             {Phase::Backward, 1, true, false, 2},
                                             {Phase::Optimizer, 1}};
constexpr Candidate kInferenceCandidates[] = {{Phase::Prefill, 1},
                                              {Phase::Prefill, 1, false, true},
                                              {Phase::Prefill, 1, false, false, 1},
                                              {Phase::Prefill, 1, false, false, 2},
                                              {Phase::Prefill, 1, false, false, 3},
                                              {Phase::Decode, 1}};

template <typename F> void forEachCandidate(const StageModel& st, Mode mode, F&& f) {
    // The moments of a profile that names them (StageModel::mlp, forwardMoment) are looked at only there.
    if (mode == Mode::Training) {
        for (const auto& c : kTrainingCandidates)
            if (c.moment < 0 || st.mlpMoment)
                f(c);
    } else {
        for (const auto& c : kInferenceCandidates)
            if (c.moment < 0 || c.moment < st.forwardMoments)
                f(c);
    }
}

} // namespace

namespace {

// Megatron pads the vocabulary so that each tensor-parallel rank's slice is a multiple of 128
// (megatron/training/tokenizer: _vocab_size_with_padding, make_vocab_size_divisible_by = 128 by default):
// the embedding, the output layer and the logits are that much wider. Null when nothing changes.
std::optional<Scenario> megatronPadded(const Scenario& sc) {
    if (sc.mode != Mode::Training || sc.training.framework != Framework::Megatron || !sc.model.known)
        return std::nullopt;
    const long long multiple = 128LL * sc.cluster.tensorParallel;
    const long long padded = (sc.model.vocab + multiple - 1) / multiple * multiple;
    if (padded == sc.model.vocab || padded > std::numeric_limits<int>::max())
        return std::nullopt;
    Scenario out = sc.settingsCopy();
    out.warnings = sc.warnings;
    out.model.vocab = static_cast<int>(padded);
    return out;
}

// Calibrated against the tables of the code its runs ran (Calibration::codeTables), a plan that code can
// run is made with that code's profile, the scenario's settings otherwise as they are (the optimizer it
// declares included: the step's scratch measured applies as it was measured).
std::optional<Scenario> calibratedCode(const Scenario& sc) {
    if (codeTablesFor(sc, sc.calibration) != CodeTables::Planned)
        return std::nullopt;
    Scenario code = withPlannedFramework(sc, Framework::Cs336Basics);
    code.warnings = sc.warnings; // the estimate says them (which tables it is made with among them)
    return code;
}

Estimate estimateResolved(const Scenario& sc, EngineSizer engine, bool searchBatch = true);
std::vector<TimelinePoint> phaseTimelineResolved(const Scenario& sc, EngineSizer engine, int stage,
                                                 int pointsPerPhase);

} // namespace

Estimate estimateWith(const Scenario& sc, EngineSizer engine) {
    if (const auto padded = megatronPadded(sc))
        return estimateResolved(*padded, engine);
    if (const auto code = calibratedCode(sc))
        return estimateResolved(*code, engine);
    return estimateResolved(sc, engine);
}

Estimate estimatePeakWith(const Scenario& sc, EngineSizer engine) {
    if (const auto padded = megatronPadded(sc))
        return estimateResolved(*padded, engine, false);
    if (const auto code = calibratedCode(sc))
        return estimateResolved(*code, engine, false);
    return estimateResolved(sc, engine, false);
}

std::vector<TimelinePoint> phaseTimelineWith(const Scenario& sc, EngineSizer engine, int stage,
                                             int pointsPerPhase) {
    if (const auto padded = megatronPadded(sc))
        return phaseTimelineResolved(*padded, engine, stage, pointsPerPhase);
    if (const auto code = calibratedCode(sc))
        return phaseTimelineResolved(*code, engine, stage, pointsPerPhase);
    return phaseTimelineResolved(sc, engine, stage, pointsPerPhase);
}

namespace {

// The largest whole n in [0, limit] with fits(n), where fits holds from 0 up to some n and not beyond:
// doubling from 1 until one does not fit, then bisection between the last two, so few calls when each is
// costly (a replayed step).
template <typename Fits> double largestFitting(Fits&& fits, double limit) {
    if (!fits(0))
        return 0;
    double lo = 0, hi = 1;
    while (hi <= limit && fits(hi)) {
        lo = hi;
        hi *= 2;
    }
    hi = std::min(hi, limit + 1);
    while (hi - lo > 1) {
        const double mid = std::floor((lo + hi) / 2);
        (fits(mid) ? lo : hi) = mid;
    }
    return lo;
}

Estimate estimateResolved(const Scenario& sc, EngineSizer sizer, bool searchBatch) {
    Estimate est;
    est.mode = sc.mode;
    est.parameters = sc.model.totalParameters();
    // Each count sums over the layers; a dense model's parameters are all active and a full run trains
    // them all, so the sum is not done three times on every estimate (a slider tick, a sweep's point).
    est.activeParameters = sc.model.experts > 0 ? sc.model.activeParameters() : est.parameters;
    if (sc.mode == Mode::Training)
        est.trainableParameters =
            sc.training.fineTuning.adapters() ? trainableParameters(sc) : est.parameters;
    est.capacityBytes = static_cast<double>(sc.cluster.capacityBytes);
    est.dataParallelSize = sc.cluster.dataParallelSize();
    est.warnings = sc.warnings;
    const double batch = sc.mode == Mode::Training ? sc.training.microBatchSize : sc.inference.batchSize;
    const int stages = sc.cluster.pipelineParallel;
    est.ranks.reserve(static_cast<std::size_t>(stages));

    // Memory is linear in the batch at every candidate point, so the largest batch that fits follows
    // exactly from two evaluations: intercept + slope x batch <= capacity (FSDP1's replayed wrap aside).
    double maxBatch = static_cast<double>(kMaxBatchSearched);
    double worst = -1;
    double residentPeak = 0; // the most any stage must hold on its GPUs (Estimate::pagedToHostBytes)
    std::vector<StageModel> units;
    units.reserve(static_cast<std::size_t>(stages));
    for (int s = 0; s < stages; ++s)
        units.push_back(stageModel(sc, s, sizer));
    const bool engine = !units.empty() && units.front().engine;
    if (engine) {
        // Every worker allocates the smallest number of blocks any of them can hold (vLLM takes the
        // minimum over workers), so the stage that is shortest of memory sets the pool everywhere.
        std::size_t shortest = 0;
        for (std::size_t i = 1; i < units.size(); ++i)
            if (units[i].serving.numBlocks < units[shortest].serving.numBlocks)
                shortest = i;
        const ServingEstimate& least = units[shortest].serving;
        for (StageModel& u : units) {
            ServingEstimate& sv = u.serving;
            if (sv.numBlocks > 0 && sv.numBlocks != least.numBlocks) {
                const double ratio = static_cast<double>(least.numBlocks) / static_cast<double>(sv.numBlocks);
                sv.kvCacheTokens = least.kvCacheTokens;
                sv.maxConcurrency *= ratio;
                sv.numBlocks = least.numBlocks;
            }
            // SGLang 0.5's state pool for hybrid models sits beside the blocks (core/serve engines.cpp).
            sv.poolBytes = static_cast<double>(sv.numBlocks) * sv.blockBytes +
                           static_cast<double>(sv.stateSlots) * sv.stateBytesPerRequest;
            u.kvCache = sv.poolBytes;
        }
        est.serving = least;
    }
    for (int s = 0; s < stages; ++s) {
        const StageModel& unit = units[static_cast<std::size_t>(s)];
        const StageModel st = withBatch(unit, batch);
        const StageModel none = withBatch(unit, 0);
        StageEstimate se;
        se.stage = s;
        se.firstLayer = st.firstLayer;
        se.layers = st.layers;
        se.inFlightMicroBatches = st.inFlight;
        se.optimizerTemporaryBytes = st.optimizerTemp;
        // those the backward starts with (not the cache's alone), or a forward's head's own
        se.autocastCopyBytes = std::max(st.castWeights, st.headCast);
        for (int k = 0; k < st.forwardMoments; ++k) // cs336_basics' forward: the most at any of its moments
            se.autocastCopyBytes = std::max(se.autocastCopyBytes, st.forwardMoment[k].casts);
        se.frozenWeightBytes = st.frozenWeights;
        se.eagerBlocksExcessBytes = st.eagerBlocksExcess;
        se.wrappedReservedBytes = st.fsdp1Wrapped; // 0 unless the wrap was replayed
        if (st.replayedReserved > 0) {
            se.replayedReservedBytes = st.replayedReserved;
            se.replayedAllocatedBytes = st.replayedAllocated;
        }
        double stagePeak = -1, stageAllocated = -1;
        forEachCandidate(st, sc.mode, [&](const Candidate& c) {
            const Breakdown b = memoryAt(st, c.phase, c.x, c.layerRunning, c.headRunning, c.moment);
            const double total = b.total();
            residentPeak = std::max(residentPeak, residentBytes(st, b));
            // A replayed step reserves the same at every point (its segments stay): the peak is then
            // where the most is allocated.
            const double allocated = total - b[Category::AllocatorOverhead];
            if (total > stagePeak || (total == stagePeak && allocated > stageAllocated)) {
                stagePeak = total;
                stageAllocated = allocated;
                se.peak = b;
                se.peakPhase = c.phase;
            }
            // What PyTorch's peak counters would show: the most reserved (allocated plus what the caching
            // allocator holds besides) and the most allocated over the step, which need not be at the same
            // point. Neither counts the CUDA context or NCCL.
            const double paged = std::min(st.pagedStates, b[Category::OptimizerStates]);
            const double reserved = total - b[Category::CudaContext] - (st.nonTorch - st.pagedStates + paged);
            se.reservedBytes = std::max(se.reservedBytes, reserved);
            se.allocatedBytes = std::max(se.allocatedBytes, reserved - b[Category::AllocatorOverhead]);
            if (c.phase == Phase::Forward || c.phase == Phase::Backward)
                se.allocatedBeforeStepBytes =
                    std::max(se.allocatedBeforeStepBytes, reserved - b[Category::AllocatorOverhead]);
            if (unit.fsdp1StepReserved > 0 || unit.replayedReserved > 0 || unit.calibratedWaste >= 0)
                return; // the step's replay depends on the batch: searched below
            if (unit.fsdp1) {
                // What FSDP1's wrap left cached takes the first of the batch's tensors: memory is the
                // largest of a few lines in the batch, convex, so the batches that fit run from 0 to a
                // largest one, found by bisection.
                maxBatch = largestFitting(
                    [&](double n) {
                        const StageModel m = withBatch(unit, n);
                        return residentBytes(m, memoryAt(m, c.phase, c.x, c.layerRunning, c.headRunning,
                                                         c.moment)) <= est.capacityBytes;
                    },
                    maxBatch);
                return;
            }
            const double intercept =
                residentBytes(none, memoryAt(none, c.phase, c.x, c.layerRunning, c.headRunning, c.moment));
            const double slope =
                residentBytes(unit, memoryAt(unit, c.phase, c.x, c.layerRunning, c.headRunning, c.moment)) -
                intercept;
            if (slope > 0)
                maxBatch = std::min(maxBatch, std::floor((est.capacityBytes - intercept) / slope));
            else if (intercept > est.capacityBytes)
                maxBatch = 0;
        });
        if (((unit.fsdp1StepReserved > 0 && sc.mode == Mode::Training) || unit.replayedReserved > 0 ||
             unit.calibratedWaste >= 0 || unit.reservedExtraReplayed) &&
            searchBatch) {
            // The step replayed at each batch asked (core/plan/peftstep.h, cs336replay.h, unslothreplay.h).
            maxBatch = largestFitting(
                [&](double n) {
                    if (n <= 0)
                        return true;
                    Scenario probe = sc.settingsCopy();
                    if (sc.mode == Mode::Training)
                        probe.training.microBatchSize = static_cast<int>(n);
                    else
                        probe.inference.batchSize = static_cast<int>(n);
                    const StageModel m = withBatch(stageModel(probe, s, sizer, true), n);
                    bool ok = true;
                    forEachCandidate(m, sc.mode, [&](const Candidate& c) {
                        ok = ok && residentBytes(m, memoryAt(m, c.phase, c.x, c.layerRunning, c.headRunning,
                                                             c.moment)) <= est.capacityBytes;
                    });
                    return ok;
                },
                maxBatch);
        }
        if (stagePeak > worst) {
            worst = stagePeak;
            est.reservedPeakBytes = se.reservedBytes;
            est.allocatedPeakBytes = se.allocatedBytes;
            est.perGpu = se.peak;
            est.peakPhase = se.peakPhase;
            est.mostLoadedStage = s;
        }
        if (s == 0 && sc.mode == Mode::Training &&
            (sc.cluster.offloadOptimizer || sc.cluster.offloadParameters)) {
            // What was moved to the host, and what crosses PCIe each optimizer step (per GPU).
            const BytesPerParam& bp = sc.training.bytes;
            const StageModel::States& g = unit.withoutOffload;
            OffloadInfo& o = est.offload;
            if (sc.cluster.offloadOptimizer) {
                o.cpuBytesPerGpu += g.master + g.optimizer + (shardsGradients(sc.cluster) ? g.gradients : 0);
                if (sc.cluster.offloadStep == OffloadStep::Gpu) {
                    // States streamed to the GPU for the update and back (seed 002's accounting).
                    o.hostToDeviceBytes += g.master + g.optimizer;
                    o.deviceToHostBytes += g.master + g.optimizer;
                } else {
                    // Update on the CPU: gradients go down, updated 16-bit weights come back.
                    o.deviceToHostBytes += g.gradients;
                    o.hostToDeviceBytes += g.gradients / bp.gradients * bp.weights;
                }
            }
            if (sc.cluster.offloadParameters) {
                o.cpuBytesPerGpu += g.weights;
                o.hostToDeviceBytes += 2 * g.weights; // fetched for forward and again for backward
            }
            o.secondsPerStep =
                std::max(o.hostToDeviceBytes, o.deviceToHostBytes) / (sc.cluster.pcieGBps * 1e9);
        }
        if (s == 0 && st.offloadedActivations > 0) {
            // Every micro-batch's saved activations go down in the forward and come back in the backward.
            OffloadInfo& o = est.offload;
            const double perStep = st.offloadedActivations * sc.training.gradientAccumulationSteps;
            o.cpuBytesPerGpu += st.offloadedActivations * st.inFlight;
            o.deviceToHostBytes += perStep;
            o.hostToDeviceBytes += perStep;
            o.secondsPerStep =
                std::max(o.hostToDeviceBytes, o.deviceToHostBytes) / (sc.cluster.pcieGBps * 1e9);
        }
        est.ranks.push_back(se);
    }
    est.peakBytes = est.perGpu.total();
    if (residentPeak < est.peakBytes && est.peakBytes > est.capacityBytes) {
        // A paged optimizer's states beyond the GPU's room live in host memory; each step pages them in for
        // the update and out again, over PCIe.
        const StageModel& u = units[static_cast<std::size_t>(est.mostLoadedStage)];
        est.pagedToHostBytes = std::min(est.peakBytes - est.capacityBytes,
                                        std::min(u.pagedStates, est.perGpu[Category::OptimizerStates]));
        OffloadInfo& o = est.offload;
        o.cpuBytesPerGpu += est.pagedToHostBytes;
        o.hostToDeviceBytes += est.pagedToHostBytes;
        o.deviceToHostBytes += est.pagedToHostBytes;
        o.secondsPerStep = std::max(o.hostToDeviceBytes, o.deviceToHostBytes) / (sc.cluster.pcieGBps * 1e9);
    }
    est.fits = residentPeak <= est.capacityBytes;
    est.maxMicroBatchSize = static_cast<long long>(std::max(0.0, maxBatch));
    if (sc.mode == Mode::Inference && !engine && !units.empty()) {
        // The planned batch's own cache: what it holds, and how many requests of its length would fit.
        const StageModel& u = units[static_cast<std::size_t>(est.mostLoadedStage)];
        ServingEstimate& sv = est.serving;
        sv = u.serving;
        const int block = sc.inference.kvBlockSize;
        const long long ctx =
            block > 0 ? (sc.inference.contextLength + block - 1) / block * block : sc.inference.contextLength;
        sv.kvCacheTokens =
            sc.inference.framework == Framework::Cs336Basics ? 0 : static_cast<long long>(batch) * ctx;
        sv.requestLength = sc.inference.contextLength;
        sv.maxConcurrency = static_cast<double>(est.maxMicroBatchSize);
    } else if (engine) {
        // An engine serves when its pool holds at least one request of the longest length it accepts
        // (vLLM refuses to start otherwise: "max seq len ... is larger than the maximum number of tokens
        // that can be stored in KV cache").
        est.fits = est.fits && est.serving.availableBytes > 0 &&
                   est.serving.kvCacheTokens >= est.serving.requestLength && !est.serving.refusedAtStartup();
        est.maxMicroBatchSize = static_cast<long long>(std::floor(std::max(0.0, est.serving.maxConcurrency)));
    }
    return est;
}

std::vector<TimelinePoint> phaseTimelineResolved(const Scenario& sc, EngineSizer engine, int stage,
                                                 int pointsPerPhase) {
    std::vector<TimelinePoint> out;
    stage = std::clamp(stage, 0, sc.cluster.pipelineParallel - 1);
    pointsPerPhase = std::max(2, pointsPerPhase);
    const double batch = sc.mode == Mode::Training ? sc.training.microBatchSize : sc.inference.batchSize;
    const StageModel st = withBatch(stageModel(sc, stage, engine), batch);
    const Phase training[] = {Phase::Forward, Phase::Backward, Phase::Optimizer};
    const Phase inference[] = {Phase::Prefill, Phase::Decode};
    auto emit = [&](Phase ph) {
        for (int i = 0; i < pointsPerPhase; ++i) {
            const double x = static_cast<double>(i) / (pointsPerPhase - 1);
            // The last layer's forward runs before the loss, the first layer's backward after it: both
            // sit at the phase boundary, where the estimate's candidates look.
            if (ph == Phase::Forward && i == pointsPerPhase - 1)
                out.push_back({ph, x, memoryAt(st, ph, x, true), true});
            out.push_back({ph, x, memoryAt(st, ph, x), false});
            if (ph == Phase::Backward && i == 0 && st.headGradient > 0)
                out.push_back({ph, x, memoryAt(st, ph, x, false, true), false, true});
            if (ph == Phase::Backward && i == 0 && st.mlpMoment)
                for (int k : {0, 1, 2})
                    out.push_back({ph, x, memoryAt(st, ph, x, true, false, k), true});
            if (ph == Phase::Backward && i == 0)
                out.push_back({ph, x, memoryAt(st, ph, x, true), true});
            // Every block checkpointed (cs336_basics): the first block's backward, at the phase's end; or
            // a first layer that kept what it saved (StageModel::firstLayerSaved).
            if (ph == Phase::Backward && i == pointsPerPhase - 1 && st.mlpMoment)
                for (int k : {0, 1, 2})
                    out.push_back({ph, x, memoryAt(st, ph, x, true, false, k), true});
            if (ph == Phase::Backward && i == pointsPerPhase - 1 &&
                (st.firstBlockMoment || st.firstLayerSaved > 0))
                out.push_back({ph, x, memoryAt(st, ph, x, true), true});
            if (ph == Phase::Prefill)
                out.back().casts = st.forwardMoments > 0 ? st.forwardMoment[0].casts : st.castWeights;
            // A forward's head (StageModel::headLogits), at the prefill's end.
            if (ph == Phase::Prefill && i == pointsPerPhase - 1 && st.headLogits > 0) {
                out.push_back({ph, x, memoryAt(st, ph, x, false, true), false, true});
                out.back().casts = st.headCast > 0 ? st.headCast : st.castWeights;
            }
            // cs336_basics' forward: its other moments, at the prefill's end.
            if (ph == Phase::Prefill && i == pointsPerPhase - 1)
                for (int k = 1; k < st.forwardMoments; ++k) {
                    out.push_back({ph, x, memoryAt(st, ph, x, false, false, k), false});
                    out.back().casts = st.forwardMoment[k].casts;
                }
        }
    };
    if (sc.mode == Mode::Training)
        for (Phase ph : training)
            emit(ph);
    else
        for (Phase ph : inference)
            // cs336_basics generates by running the whole forward again: it has no decode step of its own.
            if (ph == Phase::Prefill || sc.inference.framework != Framework::Cs336Basics)
                emit(ph);
    return out;
}

} // namespace

bool weightsStayQuantised(const Scenario& sc) {
    if (sc.mode != Mode::Inference || !sc.inference.quantised)
        return false;
    // quant_method "fp8" is transformers' FineGrainedFP8 (DeepSeek-V3, Qwen3-FP8); compressed-tensors has its
    // own loader.
    return !(sc.inference.engine == Engine::HuggingFace && sc.model.quantization.name == "fp8" &&
             !hasNativeFp8(sc.cluster.gpu));
}

double largestSteppedTensor(const Scenario& sc) {
    if (!sc.model.known)
        return 0;
    const ClusterSettings& c = sc.cluster;
    return largestMatrix(sc.model, c.tensorParallel, true) / (shardsOptimizer(c) ? shardGroup(c) : 1);
}

} // namespace headroom
