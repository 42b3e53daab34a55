// SPDX-License-Identifier: GPL-3.0-or-later
// What one transformer layer keeps for its backward: Korthikanti et al.'s accounting generalised to GQA,
// MLA, gated MLPs and MoE, with each framework's modules and checkpointing (docs/frameworks.md).
#include "core/plan/activations.h"

#include "core/plan/finetuning.h"
#include "core/plan/layout.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace headroom {

// How a layer is checkpointed: with checkpoint_every N > 1, full checkpointing wraps only the N-th, 2N-th,
// ... layer (torchtitan's apply_ac with selective_ac_option "N" counts blocks from 1); the others keep
// everything.
// Megatron's --recompute-method block checkpoints the first recompute_num_layers layers of each pipeline
// stage (`position` counts from the stage's first layer); uniform checkpoints every layer, in groups.
Checkpointing layerCheckpointing(const TrainingSettings& tr, int layer, int position) {
    if (tr.checkpointing != Checkpointing::Full)
        return tr.checkpointing;
    if (tr.checkpointEvery > 1 && (layer + 1) % tr.checkpointEvery != 0)
        return Checkpointing::None;
    if (tr.recomputeMethod == RecomputeMethod::Block && position >= tr.recomputeLayers)
        return Checkpointing::None;
    return Checkpointing::Full;
}

// Megatron's uniform method: groups of recompute_num_layers layers keep only the group's input and rebuild
// the whole group in its backward (a stage shorter than a group rebuilds what it has).
RecomputeGroup recomputeGroup(const TrainingSettings& tr, int position, int stageLayerCount) {
    if (tr.checkpointing != Checkpointing::Full || tr.recomputeMethod != RecomputeMethod::Uniform ||
        tr.recomputeLayers <= 1)
        return {};
    return {position % tr.recomputeLayers == 0,
            static_cast<double>(std::min(tr.recomputeLayers, std::max(1, stageLayerCount)))};
}

std::string unslothFallback(const Scenario& sc) {
    const FineTuning& ft = sc.training.fineTuning;
    const ModelSpec& m = sc.model;
    if (!ft.adapters())
        return "full fine-tuning runs the model's own layers";
    if (ft.method == FineTuneMethod::Dora)
        return "DoRA runs PEFT's layers";
    if (ft.dropout > 0)
        return "its fast LoRA kernels need lora_dropout 0";
    if (ft.baseQuantization == BaseQuantization::Int8)
        return "an 8-bit base runs bitsandbytes' layers";
    if (m.known && (!m.gatedMlp || m.mla || m.isMoe() || !m.linearLayers.empty()))
        return "its fast LoRA kernels cover dense decoders with a gated MLP";
    for (const char* module : {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"})
        if (!ft.targeted(module))
            return "its fast LoRA kernels patch a layer whose q, k, v, o, gate, up and down projections all "
                   "have adapters";
    return {};
}

// Per-sample activations of one layer kind (dense or MoE); multiply by the micro-batch size.
LayerActivations perSample(const Scenario& sc, bool moe, int mlpWidth, Checkpointing checkpointing) {
    LayerActivations a;
    const ModelSpec& m = sc.model;
    if (!m.known)
        return a;
    const TrainingSettings& tr = sc.training;
    const ClusterSettings& c = sc.cluster;
    const double e = tr.activationBytes;
    // Under torch.autocast (docs/formats.md section 2) a matmul saves the 16-bit copy of its input it
    // computed with, and its output is 16-bit; the residual stream, norms and softmax (autocast's fp32 list)
    // keep the weights' precision. `ea` is the bytes of what matmuls keep.
    const double ea = tr.autocastBytes > 0 ? tr.autocastBytes : e;
    const double t = c.tensorParallel;
    const double s = tr.sequenceLength;
    const double sl = s / c.contextParallel; // this rank's tokens under context parallelism
    const double h = m.hidden;
    const double heads = m.heads / t;
    const double kvHeads = m.mla ? heads : std::max(1.0, m.kvHeads / t);
    const double dq = m.headDim;
    const double dv = m.mla ? m.vHeadDim : m.headDim;
    const double sbh = sl * h;
    const double spDiv = c.sequenceParallel ? t : 1;

    // Replicated across tensor-parallel ranks unless sequence parallelism splits them: the two norm
    // inputs, the QKV and MLP inputs, and two dropout masks (11sbh + 19sbh + 4sbh of Korthikanti's 34).
    // The two norm inputs are the residual stream (e); the QKV and MLP inputs are matmul inputs (ea).
    // Fine-tuning a frozen base: autograd saves a matmul's input only for its weight's gradient
    // (tools/autograd/gen_variable_type.py guards each saved input with should_compute_output; bitsandbytes'
    // MatMul4Bit saves only the quantised weight), so a linear layer without an adapter keeps nothing of
    // its own; what the norms, activation functions and attention save stays. LLM.int8 saves its input
    // whatever (MatMul8bitLt keeps A for the backward).
    // An adapter keeps the layer's input itself (lora_A saves it) unless it works on its own copy: cast to
    // the adapters' dtype or dropped out (then the 16-bit input is kept by nobody; the copy is counted
    // below).
    const FineTuning& ft = tr.fineTuning;
    if (tr.framework == Framework::Unsloth && unslothFallback(sc).empty()) {
        // Unsloth's decoder layer (unsloth/models/llama.py LlamaDecoderLayer_fast_forward and
        // LlamaAttention_fast_forward, unsloth/kernels/fast_lora.py, rms_layernorm.py, rope_embedding.py
        // at e3162dc5, January 2025; docs/frameworks.md, "Unsloth"). One GPU: no tensor parallelism.
        // xformers' path (no flash-attn, or a GPU before Ampere) expands K and V to every query head and,
        // for training, reshapes them into new tensors that memory_efficient_attention saves
        // (LlamaAttention_fast_forward: K.expand(...) then K.reshape(bsz, kv_seq_len, n_heads, head_dim)).
        const double kvSaved = tr.attention == Attention::Xformers ? heads : kvHeads;
        const double q = sl * heads * dq, k = sl * kvSaved * dq, v = sl * kvSaved * dv, o = sl * heads * dv;
        const double ff = sl * mlpWidth;
        // Saved for the backward besides the layer's input (which the first norm keeps): the first norm's
        // output (LoRA_QKV's X); Q, K and V, rotated in place, and the attention output, kept by the
        // attention kernel (o_proj's LoRA_W keeps the same output); the residual sum and the second norm's
        // output (Fast_RMS_Layernorm's and LoRA_MLP's X); the gate and up results e and g (LoRA_MLP keeps
        // them, not their product); each norm's fp32 inverse RMS and the attention's fp32 log-sum-exp.
        // The adapters keep nothing of their own: matmul_lora adds (X A)(s B) and the backward recomputes
        // X A from X.
        const double saved = e * (3 * sbh + q + k + v + o + 2 * ff) + 2 * 4 * sl + 4 * heads * sl;
        // The backward's working set at its largest, in LoRA_MLP.backward: the incoming gradient and the
        // rebuilt layer's output, then DW = matmul_lora(dY, down^T, ...), an f-wide result, and the f-wide
        // product (dY B^T)(s A^T) that matmul_lora makes before adding it (`out += ...`). The SwiGLU
        // backward then writes h, df and de over DW, e and g, and dX over X, in place.
        const double working = e * (2 * sbh + 2 * ff);
        if (checkpointing == Checkpointing::Full) {
            // use_gradient_checkpointing: each layer keeps its input and is rebuilt in its backward
            // ("unsloth" sends the inputs to the host as well: activation_offloading).
            a.stored = e * sbh;
            a.transient = saved + working;
        } else {
            a.stored = e * sbh + saved;
            a.transient = working;
        }
        return a;
    }
    // bitsandbytes before 0.43.2 kept a 4-bit layer's input too (ctx.tensors = (A, B)).
    const bool frozen = ft.adapters() && ft.baseQuantization != BaseQuantization::Int8 &&
                        !(ft.fourBitBase() && ft.fourBitKeepsInput);
    const double adapterInputBytes = tr.autocastBytes > 0 ? tr.autocastBytes : ft.adapterBytes;
    const bool ownCopy = ft.dropout > 0 || adapterInputBytes != ea;
    auto keeps = [&](std::initializer_list<const char*> modules) {
        if (!frozen)
            return true;
        if (ownCopy)
            return false;
        for (const char* module : modules)
            if (ft.targeted(module))
                return true;
        return false;
    };
    // Under autocast a norm's output wider than autocast's dtype is cast once for every matmul that reads
    // it: autocast caches the casts of weights (leaf tensors that require grad), not of activations
    // (aten/src/ATen/autocast_mode.cpp, cached_cast), so q, k and v each save a 16-bit copy of the first
    // norm's output, gate and up each one of the second's. One copy where the model fuses the projections
    // (a single matmul reads it), and where Megatron's layers run without torch.autocast.
    const bool castPerMatmul = tr.autocastBytes > 0 && ea != e && tr.framework != Framework::Megatron;
    auto inputCopies = [&](std::initializer_list<const char*> modules, bool fused) {
        double readers = 0;
        for (const char* module : modules)
            readers += keeps({module}) ? 1 : 0;
        return castPerMatmul && !fused ? readers : std::min(readers, 1.0);
    };
    const bool fusedQkv = m.fusedQkv();
    const double qkvInputs =
        m.mla ? inputCopies({m.qLoraRank > 0 ? "q_a_proj" : "q_proj", "kv_a_proj_with_mqa"}, false)
              : inputCopies({"q_proj", "k_proj", "v_proj"}, fusedQkv);
    const double mlpInputs =
        m.gatedMlp ? inputCopies({"gate_proj", "up_proj"}, m.fusedGateUp()) : inputCopies({"up_proj"}, true);
    const bool keepDownInput = keeps({"down_proj"});
    const bool keepOutInput = keeps({"o_proj"});
    double replicated =
        2 * e * sbh + qkvInputs * ea * sbh + mlpInputs * ea * sbh + (tr.dropout ? 2 * sbh : 0);
    // Of these, what comes after attention's softmax in the block (the second norm's, the MLP's input
    // copies, both residual dropouts' masks; below: the output projection's input, the MLP's tensors):
    // what the block's backward has released by the time it reaches the softmax's (freedBeforeScores).
    double laterReplicated = e * sbh + mlpInputs * ea * sbh + (tr.dropout ? 2 * sbh : 0);
    if (m.mla)
        replicated += ea * sl * (m.qLoraRank + m.kvLoraRank + m.qkRopeHeadDim);
    // Split across tensor-parallel ranks: Q, K, V, the output projection's input.
    double split = ea * sl * (heads * dq + kvHeads * dq + kvHeads * dv + heads * dv);
    double laterSplit = ea * sl * heads * dv;
    if (tr.attention != Attention::Eager)
        split += 4 * heads * sl; // fp32 log-sum-exp per row; FlashAttention keeps no s x s tensor
    // MLP: gated keeps gate, up, act(gate) and their product (4 x f); plain keeps up and act(up) (2 x f).
    // (Of these the product, or act(up), is the down projection's input.)
    const double perWidth = ((m.gatedMlp ? 3 : 1) + (keepDownInput ? 1 : 0)) * ea * sl / t;
    double mlpSaved = perWidth * mlpWidth;
    if (moe) {
        const double k = m.expertsPerToken;
        mlpSaved += 4 * sl * m.experts;      // fp32 router logits
        mlpSaved += k * 2 * ea * sbh;        // tokens dispatched to k experts, and their outputs
        mlpSaved += k * perWidth * m.moeFfn; // each routed copy's expert intermediates
    }
    split += mlpSaved;
    laterSplit += mlpSaved; // all of it after the softmax
    // What the eager modules of torchtitan, torchtune and transformers keep beyond that (docs/frameworks.md,
    // "Eager modules"): RMSNorm upcasts its input and saves the fp32 copy and the normalised tensor besides
    // its output (+4 bytes per hidden unit, per norm, whatever the weights' dtype); SDPA gets K and V
    // expanded to every query head (repeat_kv); and the attention output is copied contiguous for the output
    // projection. torch.compile fuses the norms and the copy (their inputs are recomputed); the expanded K
    // and V stay, as SDPA's saved inputs. Megatron's Transformer Engine layers do none of it. The rotations
    // keep nothing per token, though torchtitan and torchtune rotate fp32 copies of q and k: the multiply by
    // the cos/sin cache, a buffer that needs no gradient, saves only the cache (mul's `self` is saved for
    // `other`'s gradient alone: tools/autograd/derivatives.yaml, guarded in gen_variable_type.py).
    const Framework fw = tr.framework;
    const bool eagerModules = fw == Framework::Torchtitan || fw == Framework::Torchtune ||
                              fw == Framework::HuggingFace || fw == Framework::DeepSpeed ||
                              fw == Framework::Unsloth; // where PEFT's layers run (unslothFallback)
    if (eagerModules && !m.mla) {
        if (!tr.compile) {
            // Two norms' fp32 upcasts. The residual-stream term above is, in these modules, the normalised
            // tensor the norm's weight gradient needs (weight * x_normed): with the weight frozen nobody
            // keeps it. (In fp32 the upcast is the input itself and the normalised tensor another: the same
            // sum.)
            replicated += 2 * 4 * sbh;
            laterReplicated += 4 * sbh;
            if (ft.adapters()) {
                replicated -= 2 * e * sbh;
                laterReplicated -= e * sbh;
            }
            split += keepOutInput ? ea * sl * heads * dv : 0; // the contiguous attention output
            laterSplit += keepOutInput ? ea * sl * heads * dv : 0;
        }
        split += ea * sl * (heads - kvHeads) * (dq + dv); // K and V expanded to every head
    }
    if (m.qkNorm && !m.mla) {
        // A norm over each head's query and key (Qwen3, Gemma 3; Megatron's --qk-layernorm) keeps its input
        // for its backward, which the rotation after it does not keep: q and k before the norm, beside the
        // rotated ones attention saves, and a statistic a row in fp32 (Transformer Engine's LayerNorm two:
        // the mean and 1/sigma, transformer_engine/pytorch/module/layernorm.py). The eager modules' RMSNorm
        // (transformers' Qwen3RMSNorm, as the layers' norms above) saves its fp32 upcast instead, and the
        // normalised tensor its weight's gradient needs (none when the weight is frozen); compiled, its
        // input.
        const double perUnit = eagerModules && !tr.compile ? 4 + (ft.adapters() ? 0 : ea) : ea;
        split += sl * (heads + kvHeads) * (dq * perUnit + (m.normHasBias ? 8 : 4));
    }
    if (ft.baseQuantization == BaseQuantization::Int8 && ft.int8KeepsTransposedInput) {
        // bitsandbytes before 0.45.0: each LLM.int8 layer (MatMul8bitLt.forward, bitsandbytes/autograd/
        // _functions.py at 0.44.1) quantises its 16-bit cast of the input both ways (F.double_quant) and
        // keeps the transposed int8 copy for its backward whatever needs a gradient, ctx.tensors = (CAt,
        // subA, A): one byte per element of every int8 layer's input, beside the input A itself, q, k and v
        // each their own. From 0.45.0 (#1401) only a weight that needs its gradient makes it. subA (the
        // input's outlier columns, fp32 here) and the weight's outlier columns the layer's state keeps
        // depend on the data (LLM.int8's threshold of 6): not planned.
        double perToken = 0, later = 0;
        for (const LinearShape& lin : layerLinears(m, mlpWidth, 0)) {
            const bool rowParallel = lin.name == "o_proj" || lin.name == "down_proj";
            const double in = static_cast<double>(lin.in) / (rowParallel ? t : 1);
            perToken += in;
            if (lin.name == "o_proj" || lin.name == "gate_proj" || lin.name == "up_proj" ||
                lin.name == "down_proj")
                later += in;
        }
        if (moe) { // each token's routed experts: their gate and up read the hidden state, down the FFN's
            const double routed = m.expertsPerToken * ((m.gatedMlp ? 2 : 1) * h + m.moeFfn);
            perToken += routed;
            later += routed;
        }
        split += sl * perToken;
        laterSplit += sl * later;
    }
    if (ft.adapters()) {
        // Each adapter's own tensors (peft/tuners/lora/layer.py Linear.forward: lora_B(lora_A(dropout(x))),
        // x first cast to the adapters' dtype; torchtune/modules/peft/lora.py LoRALinear the same without the
        // cast): lora_A's r-wide output, saved by lora_B; a copy of x when it is cast or dropped out (then
        // one per adapter, with dropout's 1-byte mask); DoRA's base and LoRA results, saved by its rescaling
        // (peft/tuners/lora/dora.py). Under autocast lora_A's matmul keeps its 16-bit input.
        const double cb = adapterInputBytes;
        // Routed experts' adapters are left out (their tokens are a fraction of the layer's).
        for (const LinearShape& lin : layerLinears(m, mlpWidth, 0)) {
            if (!ft.targeted(lin.name))
                continue;
            // Tensor parallelism splits o_proj's and down_proj's inputs (row-parallel), the others' outputs.
            const bool rowParallel = lin.name == "o_proj" || lin.name == "down_proj";
            const double in = static_cast<double>(lin.in) / (rowParallel ? t : 1);
            const double out = static_cast<double>(lin.out) / (rowParallel ? 1 : t);
            double perToken = cb * ft.rank;
            if (ownCopy)
                perToken += cb * in + (ft.dropout > 0 ? in : 0);
            if (ft.method == FineTuneMethod::Dora)
                perToken += (ea + cb) * out;
            split += sl * perToken;
            if (lin.name == "o_proj" || lin.name == "gate_proj" || lin.name == "up_proj" ||
                lin.name == "down_proj")
                laterSplit += sl * perToken;
        }
    }
    const double stored = replicated / spDiv + split;

    double scores = 0;
    if (tr.attention == Attention::Eager) {
        const double sq = heads * sl * s; // local queries against every key
        // The softmax output, which its backward saves, and the copy the score-times-V matmul saves when
        // it computes in another dtype. Under autocast softmax is on the fp32 list and the matmul keeps
        // its 16-bit cast. transformers' eager_attention_forward (models/llama/modeling_llama.py, the
        // model code DeepSpeed and PEFT run too) asks for an fp32 softmax whatever the dtype,
        // softmax(..., dtype=torch.float32).to(query.dtype): the fp32 output and, below fp32, its cast.
        const bool fp32Softmax = tr.autocastBytes > 0 || fw == Framework::HuggingFace ||
                                 fw == Framework::DeepSpeed || fw == Framework::Unsloth;
        const double softmaxBytes = fp32Softmax ? 4 : e;
        scores = softmaxBytes * sq + (ea < softmaxBytes ? ea * sq : 0) + (tr.dropout ? sq + ea * sq : 0);
        // The backward of softmax (tools/autograd/derivatives.yaml: _softmax_backward_data(grad, result,
        // dim, dtype)) reads the gradient of its output and writes the gradient of its input, both of the
        // scores' size in the softmax's dtype (fp32 under autocast, its fp32 list), beside the saved output.
        // Megatron's fused scaled-masked softmax (megatron/core/fusions/fused_softmax.py) writes its gradient
        // over the incoming one (apex's and Transformer Engine's scaled_masked_softmax backward: "completely
        // in-place", it returns output_grads): nothing beside.
        if (fw != Framework::Megatron) {
            a.backwardScratchScores = 2 * softmaxBytes * sq;
            a.freedBeforeScores = laterReplicated / spDiv + laterSplit;
        }
    }

    switch (checkpointing) {
    case Checkpointing::None:
        a.stored = stored;
        a.scores = scores;
        break;
    case Checkpointing::SelectiveOp: {
        // torchtitan's per-op policy (torchtitan/models/llama3/infra/parallelize.py, _custom_policy and
        // _save_list; docs/frameworks.md): the layer's input, attention's output and log-sum-exp, and the
        // output of every other aten.mm (the 1st, 3rd, ...: its counter restarts in every layer). Linear
        // layers run in the order the module calls them: wq, wk, wv, wo, then w1, w3, w2 (gated) or the
        // two of a plain MLP. Grouped expert matmuls are not aten.mm and are not kept; a MoE layer counts
        // its router and shared experts. Everything else is recomputed in this layer's backward.
        std::vector<double> mm = {heads * dq, kvHeads * dq, kvHeads * dv, h};
        auto mlp = [&](double width) {
            if (m.gatedMlp)
                mm.insert(mm.end(), {width / t, width / t, h});
            else
                mm.insert(mm.end(), {width / t, h});
        };
        if (moe) {
            mm.push_back(m.experts);
            if (m.sharedFfn > 0)
                mlp(m.sharedFfn);
            else
                for (int i = 0; i < m.sharedExperts; ++i)
                    mlp(m.moeFfn);
        } else {
            mlp(mlpWidth);
        }
        double kept = e * sbh / spDiv + ea * sl * heads * dv + 4 * heads * sl;
        for (std::size_t i = 0; i < mm.size(); i += 2)
            kept += ea * sl * mm[i];
        a.stored = kept;
        a.transient = stored; // the layer rebuilt in its backward
        a.transientScores = scores;
        break;
    }
    case Checkpointing::Selective: // attention core recomputed: only the scores go
        a.stored = stored;
        a.transientScores = scores;
        break;
    case Checkpointing::Full: // only the layer input stays; everything else is rebuilt in backward
        a.stored = e * sbh / spDiv;
        a.transient = stored;
        a.transientScores = scores;
        break;
    }
    return a;
}

LayerActivations layerActivations(const Scenario& sc, int layer, int microBatch) {
    const ModelSpec& m = sc.model;
    const int p = sc.cluster.pipelineParallel;
    int stage = 0;
    while (stage + 1 < p && layer >= stageFirstLayer(m.layers, p, stage + 1))
        ++stage;
    const int position = layer - stageFirstLayer(m.layers, p, stage);
    LayerActivations a = perSample(sc, m.isMoeLayer(layer), m.known ? m.layerParams(layer).mlpWidth : 0,
                                   layerCheckpointing(sc.training, layer, position));
    const RecomputeGroup group = recomputeGroup(sc.training, position, stageLayers(m.layers, p, stage));
    if (!group.keepsInput)
        a.stored = 0;
    a.transient *= group.rebuilt;
    a.transientScores *= group.rebuilt;
    a.stored *= microBatch;
    a.scores *= microBatch;
    a.transient *= microBatch;
    a.transientScores *= microBatch;
    a.backwardScratchScores *= microBatch;
    a.freedBeforeScores *= microBatch;
    return a;
}

double plannedBackwardScoreScratch(const Scenario& sc) {
    if (sc.mode != Mode::Training || !sc.model.known || sc.training.framework == Framework::Cs336Basics)
        return 0;
    double most = 0;
    for (int l = 0; l < sc.model.layers; ++l)
        most = std::max(most, layerActivations(sc, l, sc.training.microBatchSize).backwardScratchScores);
    return most;
}

int stageLayers(int layers, int p, int stage) {
    return layers / p + (stage < layers % p ? 1 : 0);
}

int stageFirstLayer(int layers, int p, int stage) {
    int first = 0;
    for (int i = 0; i < stage; ++i)
        first += stageLayers(layers, p, i);
    return first;
}

} // namespace headroom
