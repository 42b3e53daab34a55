// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/plan/unslothreplay.h"

#include "core/plan/activations.h"
#include "core/plan/tensorprogram.h"
#include "core/recentresults.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace headroom {

namespace {

using u64 = std::uint64_t;

// More layers than any published model has (Llama 3.1 405B: 126).
constexpr int kMaxReplayedLayers = 512;

// The tensors the program names. Each is allocated and freed by name; a name is reused once freed.
enum Id : int {
    In, // the layer's input (the rebuilt layer's X0 in the backward)
    Dy, // the gradient arriving at the layer's output
    Y1, // the first norm's output (LoRA_QKV's X; its storage becomes dX in the backward)
    R1, // its fp32 inverse RMS
    Q,  // the attention's query, key and value, rotated in place
    K,
    V,
    O,   // flash-attn's output (LoRA_W's X)
    Lse, // its fp32 log-sum-exp
    Ao,  // o_proj's output
    H1,  // the residual sum after attention
    Y2,  // the second norm's output (LoRA_MLP's X; becomes dX)
    R2,
    E, // LoRA_MLP's gate and up results (df and de in the backward)
    G,
    Hh, // SwiGLU's output (DW in the backward, then h)
    I,  // down_proj's output
    H2, // the layer's output
    W,  // a dequantised base weight (fast_dequantize)
    Am, // its dequantised absmax
    A1, // an adapter cast to the compute dtype
    A2, // that cast scaled
    Xa, // X @ A: tokens x rank
    T,  // (X A)(s B), or another product added into a result
    Dq, // flash-attn's gradients and its scratch
    Dk,
    Dv,
    Sd,
    Acc,
    Dke,
    Dve,
    Do, // o_proj's input gradient
    Fn, // the final norm's output and inverse RMS, Cut Cross-Entropy's log-sum-exp and valid rows
    Fr,
    Ce,
    Cv,
    kIds
};

using Program = TensorProgram;

struct Shape {
    double s = 0; // tokens in the micro-batch
    double h = 0, q = 0, kv = 0, f = 0, heads = 0, r = 0;
    double e = 2;              // the activations' bytes
    bool quantised = false;    // a 4-bit base: fast_dequantize makes each weight for its matmul
    bool doubleQuant = false;  // and its absmax first
    bool castAdapters = false; // fp32 adapters cast to the compute dtype for each matmul
    bool expanded = false;     // xformers' path: K and V copied out to every query head for the kernel
};

// `out += (X @ A.to(dtype)) @ (s * B.to(dtype))`, X tokens x cols and the result tokens x rows: each
// temporary goes as soon as the next op has used it.
void loraAdd(Program& p, const Shape& d, double rows, double cols) {
    if (d.castAdapters)
        p.alloc(A1, 2 * d.r * cols);
    p.alloc(Xa, d.e * d.s * d.r);
    if (d.castAdapters) {
        p.free(A1);
        p.alloc(A1, 2 * d.r * rows);
    }
    p.alloc(A2, 2 * d.r * rows);
    if (d.castAdapters)
        p.free(A1);
    p.alloc(T, d.e * d.s * rows);
    p.free(Xa);
    p.free(A2);
    p.free(T);
}

// A base weight as its matmul sees it: fast_dequantize's output and, with double quantisation, the absmax
// it dequantises first and drops on return. A 16-bit base is used as it is.
void dequantise(Program& p, const Shape& d, double rows, double cols) {
    if (!d.quantised)
        return;
    p.alloc(W, 2 * rows * cols);
    if (d.doubleQuant) {
        p.alloc(Am, 4 * rows * cols / 64);
        p.free(Am);
    }
}

// matmul_lora(X, W, W_quant, A, B, s) (unsloth/kernels/utils.py): `out` (tokens x rows) from X (tokens x
// cols); the dequantised weight is deleted once the matmul is done, then the adapters' product is added.
void matmulLora(Program& p, const Shape& d, int out, double rows, double cols) {
    dequantise(p, d, rows, cols);
    p.alloc(out, d.e * d.s * rows);
    if (d.quantised)
        p.free(W);
    loraAdd(p, d, rows, cols);
}

// An adapter's two weight gradients (d_A = X.t() @ (dY @ B.t()), d_B = (A.t() @ X.t()) @ dY): a tokens x
// rank product each, dropped once it has been multiplied out; the gradients themselves are rank-sized and
// accumulate into the adapters' .grad (not replayed: small, and counted as gradients).
void adapterGradients(Program& p, const Shape& d) {
    for (int i = 0; i < 2; ++i) {
        p.alloc(Xa, d.e * d.s * d.r);
        p.free(Xa);
    }
}

// Fast_RMS_Layernorm.forward (unsloth/kernels/rms_layernorm.py): Y and an fp32 inverse RMS per row.
void norm(Program& p, const Shape& d, int y, int r) {
    p.alloc(y, d.e * d.s * d.h);
    p.alloc(r, 4 * d.s);
}

// LlamaDecoderLayer_fast_forward (unsloth/models/llama.py) on In, to H2. Without gradients (the checkpointed
// forward) nothing is saved: each tensor goes when the code drops it. With them (the rebuild in the
// backward) the kernels keep their saved tensors: Y1, R1, Q, K, V, O, Lse, H1, Y2, R2, E, G.
void layerForward(Program& p, const Shape& d, bool grad) {
    norm(p, d, Y1, R1);
    if (!grad)
        p.free(R1);
    matmulLora(p, d, Q, d.q, d.h); // LoRA_QKV
    matmulLora(p, d, K, d.kv, d.h);
    matmulLora(p, d, V, d.kv, d.h);
    if (grad && d.expanded && d.kv < d.q) {
        // xformers' path needing gradients: K.expand(...).reshape(...) copies K and V out to every query
        // head, and the rotated originals go with their last reference (without gradients they stay
        // expanded views).
        for (auto [id, wide] : {std::pair{K, Dke}, std::pair{V, Dve}}) {
            p.alloc(wide, d.e * d.s * d.q);
            p.free(id);
            p.rename(wide, id);
        }
    }
    p.alloc(O, d.e * d.s * d.q); // the attention kernel's output and its log-sum-exp
    p.alloc(Lse, 4 * d.heads * d.s);
    if (!grad)
        p.free(Lse);
    matmulLora(p, d, Ao, d.h, d.q); // LoRA_W (o_proj)
    if (!grad) {
        // LlamaAttention_fast_forward returns: its locals go, then the layer drops the norm's output.
        p.free(Q);
        p.free(K);
        p.free(V);
        p.free(O);
        p.free(Y1);
    }
    p.alloc(H1, d.e * d.s * d.h); // residual + hidden_states
    p.free(Ao);
    norm(p, d, Y2, R2);
    if (!grad)
        p.free(R2);
    matmulLora(p, d, E, d.f, d.h); // LoRA_MLP: e, g, h = swiglu(e, g), i = h @ down
    matmulLora(p, d, G, d.f, d.h);
    p.alloc(Hh, d.e * d.s * d.f);
    matmulLora(p, d, I, d.h, d.f);
    p.free(Hh);
    if (!grad) {
        p.free(E);
        p.free(G);
        p.free(Y2);
    }
    p.alloc(H2, d.e * d.s * d.h);
    p.free(I);
    if (!grad)
        p.free(H1);
}

// torch.autograd.backward(output, dY) over the rebuilt layer, node by node as the engine runs them; each
// node's saved tensors go when it has run. Gradients written in place keep the storage they were written
// over: dX of LoRA_MLP over Y2, of LoRA_QKV over Y1; the norms' backward writes into its incoming gradient.
void layerBackward(Program& p, const Shape& d) {
    // LoRA_MLP.backward: DW = matmul_lora(dY, down^T, ...), f wide, into which the SwiGLU backward writes h
    // while df and de overwrite e and g.
    matmulLora(p, d, Hh, d.f, d.h);
    for (int i = 0; i < 3; ++i) // down, up and gate adapters' gradients
        adapterGradients(p, d);
    dequantise(p, d, d.f, d.h); // up: dX = df @ up^T written over X
    if (d.quantised)
        p.free(W);
    loraAdd(p, d, d.h, d.f);
    dequantise(p, d, d.f, d.h); // gate: dX += de @ gate^T
    p.alloc(T, d.e * d.s * d.h);
    p.free(T);
    if (d.quantised)
        p.free(W);
    loraAdd(p, d, d.h, d.f);
    p.free(E);
    p.free(G);
    p.free(Hh);
    // The second norm's backward in place on dX; then H1's two gradients (the residual's dY and the norm's)
    // are summed into the norm's, which nothing else holds (autograd's InputBuffer::accumulate).
    p.free(H1);
    p.free(R2);
    // AddBackward hands dH1 to In's gradient and to LoRA_W.backward: its adapters' gradients, then
    // dX = dY @ W^T with the adapters' product added.
    adapterGradients(p, d);
    dequantise(p, d, d.h, d.q);
    p.alloc(Do, d.e * d.s * d.q);
    if (d.quantised)
        p.free(W);
    loraAdd(p, d, d.q, d.h);
    // flash-attn's backward (flash_attn_interface.py FlashAttnFunc.backward, csrc mha_bwd): dq, dk, dv,
    // softmax_d and the fp32 dq accumulator; under grouped-query attention dk and dv at every query head,
    // summed into dk and dv before it returns.
    // xformers' path (its flash_bwd on Ampere and newer, cutlass's kernel before, whose fp32 gradient
    // accumulator is planned alike) gets K and V at every query head: its dk and dv are that wide, and the
    // expand's backward sums them down to the KV heads.
    const bool wide = d.expanded && d.kv < d.q;
    p.alloc(Dq, d.e * d.s * d.q);
    p.alloc(Dk, d.e * d.s * (wide ? d.q : d.kv));
    p.alloc(Dv, d.e * d.s * (wide ? d.q : d.kv));
    p.alloc(Sd, 4 * d.heads * d.s);
    p.alloc(Acc, 4 * d.s * d.q);
    if (d.kv < d.q && !wide) {
        p.alloc(Dke, d.e * d.s * d.q);
        p.alloc(Dve, d.e * d.s * d.q);
        p.free(Dke);
        p.free(Dve);
    }
    p.free(Acc);
    p.free(Sd);
    if (wide) {
        for (auto [id, sum] : {std::pair{Dk, Dke}, std::pair{Dv, Dve}}) {
            p.alloc(sum, d.e * d.s * d.kv);
            p.free(id);
            p.rename(sum, id);
        }
    }
    for (int id : {Q, K, V, O, Lse, Do})
        p.free(id);
    // The rotation's backward is in place. LoRA_QKV.backward: three adapters' gradients, then dX over X
    // (Y1) from q's weight, plus k's and v's products.
    for (int i = 0; i < 3; ++i)
        adapterGradients(p, d);
    dequantise(p, d, d.q, d.h);
    if (d.quantised)
        p.free(W);
    loraAdd(p, d, d.h, d.q);
    for (int i = 0; i < 2; ++i) {
        dequantise(p, d, d.kv, d.h);
        p.alloc(T, d.e * d.s * d.h);
        p.free(T);
        if (d.quantised)
            p.free(W);
        loraAdd(p, d, d.h, d.kv);
    }
    for (int id : {Dq, Dk, Dv})
        p.free(id);
    // The first norm's backward in place; X0's two gradients summed into dH1 (Y2's storage), its .grad.
    p.free(R1);
    p.free(Y1);
}

} // namespace

AllocatorSettings unslothAllocatorSettings(const Scenario& sc) {
    AllocatorSettings s;
    s.expandableSegments = sc.cluster.expandableSegments;
    if (s.expandableSegments) {
        // The list as CachingAllocatorConfig parses it (c10/cuda/CUDAAllocatorConfig.cpp): each size (MiB)
        // closes the power-of-two intervals the sizes before it left open, ">" takes the rest. Interval i is
        // [2^i, 2^(i+1)) MiB: 256 divisions below 32 MiB, 128 below 64, 64 below 256, 32 from there on.
        for (std::size_t i = 0; i < s.roundupPower2Divisions.size(); ++i)
            s.roundupPower2Divisions[i] = i < 5 ? 256 : i < 6 ? 128 : i < 8 ? 64 : 32;
    }
    return s;
}

StepReplay unslothStepReplay(const Scenario& sc, int layers, int mlpWidth) {
    StepReplay out;
    const TrainingSettings& tr = sc.training;
    const ModelSpec& m = sc.model;
    if (tr.framework != Framework::Unsloth || !unslothFallback(sc).empty() || !m.known || layers <= 0 ||
        tr.checkpointing != Checkpointing::Full || tr.attention == Attention::Eager || mlpWidth <= 0)
        return out;
    const FineTuning& ft = tr.fineTuning;
    Shape d;
    d.s = static_cast<double>(tr.microBatchSize) * tr.sequenceLength;
    d.h = m.hidden;
    d.q = static_cast<double>(m.heads) * m.headDim;
    d.kv = static_cast<double>(m.kvHeads) * m.headDim;
    d.f = mlpWidth;
    d.heads = m.heads;
    d.r = ft.rank;
    d.e = tr.activationBytes;
    d.quantised =
        ft.baseQuantization == BaseQuantization::Nf4 || ft.baseQuantization == BaseQuantization::Fp4;
    d.doubleQuant = d.quantised && ft.doubleQuantization;
    d.castAdapters = ft.adapterBytes != d.e;
    d.expanded = tr.attention == Attention::Xformers;
    const bool offload = tr.activationOffloading;
    // With the inputs offloaded a layer's forward and backward leave the allocator as they found it, so two
    // layers give the whole step's figures (checked against all of them for Llama 3.1 8B and 3.3 70B); kept
    // on the GPU, the inputs shape where every layer's tensors land, and every layer is replayed.
    if (offload)
        layers = std::min(layers, 2);
    // A scenario file can ask for anything: sizes past any GPU, or more layers than any model has, are not
    // replayed (the fraction stands), so neither the sizes nor the time can run away.
    const double widest = std::max({d.h, d.q, d.kv, d.f, d.heads, d.r});
    if (!(d.s > 0 && widest > 0 && d.s * widest * 4 < 1e15 && d.h * std::max(d.q, d.f) * 2 < 1e15) ||
        layers > kMaxReplayedLayers)
        return out;
    // The replay reads nothing else; a sweep asks for the same one many times.
    std::vector<double> key{d.s,
                            d.h,
                            d.q,
                            d.kv,
                            d.f,
                            d.heads,
                            d.r,
                            d.e,
                            d.quantised ? 1.0 : 0.0,
                            d.doubleQuant ? 1.0 : 0.0,
                            d.castAdapters ? 1.0 : 0.0,
                            d.expanded ? 1.0 : 0.0,
                            offload ? 1.0 : 0.0,
                            static_cast<double>(layers),
                            sc.cluster.expandableSegments ? 1.0 : 0.0};
    static RecentResults<StepReplay> kept;
    return kept.get(key, [&] {
        // The checkpointed inputs: Unsloth_Offloaded_Gradient_Checkpointer sends each to the host and brings
        // it back for the layer's backward; torch's reentrant checkpoint keeps each on the GPU. Ids from kIds
        // on name those kept.
        // The allocator as the run configures it (expandable segments map pages into one growing segment
        // instead of caching blocks of the sizes first asked for; the divisions round a large block up to
        // 1/32 of its power-of-two interval).
        CachingAllocatorModel allocator{unslothAllocatorSettings(sc)};
        Program p(allocator, kIds + (offload ? 0 : layers));
        p.alloc(In, d.e * d.s * d.h); // the embeddings' output
        for (int l = 0; l < layers; ++l) {
            if (!offload)
                p.rename(In, kIds + l);
            layerForward(p, d, false);
            if (offload)
                p.free(In);
            p.rename(H2, In);
        }
        // The final norm (its input and inverse RMS saved) and Cut Cross-Entropy's forward, which keeps the
        // normed states, an fp32 log-sum-exp per token and the valid rows as int32; its backward writes the
        // normed states' gradient, which the norm's backward overwrites in place.
        norm(p, d, Fn, Fr);
        p.alloc(Ce, 4 * d.s);
        p.alloc(Cv, 4 * d.s);
        p.alloc(Dy, d.e * d.s * d.h);
        for (int id : {Fn, Fr, Ce, Cv, In})
            p.free(id);
        for (int l = layers - 1; l >= 0; --l) {
            if (offload)
                p.alloc(In, d.e * d.s * d.h);
            else
                p.rename(kIds + l, In);
            layerForward(p, d, true);
            layerBackward(p, d);
            // Y2's storage is In's .grad, the next layer's dY; the rebuilt output, the input and dY go.
            p.free(H2);
            p.free(In);
            p.free(Dy);
            p.rename(Y2, Dy);
        }
        StepReplay r;
        r.replayed = true;
        r.allocated = p.peakAllocated();
        r.reserved = p.peakReserved();
        return r;
    });
}

} // namespace headroom
