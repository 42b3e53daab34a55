// SPDX-License-Identifier: GPL-3.0-or-later
// Read at transformers 4.37 (src/transformers/models/llama/modeling_llama.py: LlamaRMSNorm,
// LlamaRotaryEmbedding, apply_rotary_pos_emb, repeat_kv, LlamaSdpaAttention, LlamaMLP,
// LlamaForCausalLM.forward), PEFT 0.10 (tuners/lora/layer.py Linear.forward), bitsandbytes 0.43
// (autograd/_functions.py MatMul4Bit, functional.py dequantize_4bit), torch 2.2 (utils/checkpoint.py
// CheckpointFunction, csrc/autograd/input_buffer.cpp accumulate, the flash attention backward's dq
// accumulator) and Answer.AI's fsdp_qlora train.py (the step: the output, with its fp32 logits, is kept until
// the backward is done).
#include "core/plan/peftstep.h"

#include "core/plan/tensorprogram.h"

#include <utility>

namespace headroom {

namespace {

enum Id : int {
    In, // the layer's input: its checkpoint
    Dy, // the gradient arriving at the layer's output
    Y1, // the norms' outputs
    Y2,
    Xa, // RMSNorm's fp32 copy of its input and inverse RMS, saved (one pair per norm)
    Ra,
    Xb,
    Rb,
    Q, // the attention's projections, rotated
    K,
    V,
    Ci, // cos and sin gathered for the positions, saved by the rotation
    Si,
    Cc, // cos and sin cast from the fp32 cache
    Cs,
    O, // SDPA's output and log-sum-exp
    L,
    Ao, // o_proj's output
    H1, // the residual sums
    H2,
    G, // the MLP: gate, SiLU, up, their product, down
    S,
    U,
    M,
    D,
    T1, // temporaries
    T2,
    T3,
    T4,
    T5,
    W, // a dequantised weight and its absmax
    Am,
    G1, // gradients
    G2,
    G3,
    G4,
    G5,
    G6,
    Fn, // the final norm, the logits and the loss
    Xf,
    Rf,
    Lg,
    L32,
    Sh,
    Ls,
    kFixed
};
constexpr int kModules = 7; // q, k, v, o, gate, up, down
enum Module { Mq, Mk, Mv, Mo, Mg, Mu, Md };
// Each adapted module's saved tensors: its input's copy (cast and dropped out), dropout's mask, lora_A's
// output.
int copyOf(int m) {
    return kFixed + 3 * m;
}
int maskOf(int m) {
    return kFixed + 3 * m + 1;
}
int lowOf(int m) {
    return kFixed + 3 * m + 2;
}
int checkpointOf(int layer) {
    return kFixed + 3 * kModules + layer;
}

class Step {
public:
    Step(CachingAllocatorModel& a, const PeftStepShape& d) : m_p(a, checkpointOf(d.layers) + 1), m_d(d) {}

    StepPeaks run() {
        const PeftStepShape& d = m_d;
        const double e = d.bytes, t = d.tokens;
        m_p.alloc(In, e * t * d.hidden); // the embeddings' output, the first checkpoint
        // Out of memory, the step goes no further: the verdict is given (it does not fit).
        for (int l = 0; l < d.layers; ++l) {
            // CheckpointFunction.forward runs the layer without gradients and keeps its input.
            m_p.rename(In, checkpointOf(l));
            layer(false);
            m_p.rename(H2, In);
            if (m_p.outOfMemory())
                return peaks();
        }
        if (d.loss)
            loss();
        else
            m_p.alloc(Dy, e * t * d.hidden); // the next stage's gradient
        for (int l = d.layers - 1; l >= 0; --l) {
            if (m_p.outOfMemory())
                return peaks();
            // CheckpointFunction.backward: the input detached, the layer rebuilt with gradients, then
            // torch.autograd.backward through it.
            m_p.rename(checkpointOf(l), In);
            layer(true);
            layerBackward();
            // In's gradient (dH1's storage) is the next layer's dY; the rebuilt output, the input and dY go.
            m_p.free(H2);
            m_p.free(In);
            m_p.free(Dy);
            m_p.rename(H1, Dy);
        }
        m_p.free(Dy);
        if (d.loss)
            m_p.free(L32); // the output's logits, dropped after the backward
        return peaks();
    }
    StepPeaks peaks() const { return {m_p.peakAllocated(), m_p.peakReserved()}; }

private:
    double width(int m) const {
        const PeftStepShape& d = m_d;
        switch (m) {
        case Mq:
            return d.q;
        case Mk:
        case Mv:
            return d.kv;
        case Mo:
        case Md:
            return d.hidden;
        default:
            return d.ffn;
        }
    }
    double input(int m) const { return m == Mo ? m_d.q : m == Md ? m_d.ffn : m_d.hidden; }
    bool adapted(int m) const { return m_d.targets[m]; }

    // MatMul4Bit's weight: dequantize_4bit makes the fp32 absmax first (double quantisation), then the
    // 16-bit weight, and drops the absmax on return.
    void dequantise(double rows, double cols) {
        if (!m_d.quantised)
            return;
        if (m_d.doubleQuant)
            m_p.alloc(Am, 4 * rows * cols / 64);
        m_p.alloc(W, 2 * rows * cols);
        if (m_d.doubleQuant)
            m_p.free(Am);
    }

    // PEFT's Linear.forward: the base layer's result, then `result + lora_B(lora_A(dropout(x))) * scaling`
    // with x cast to the adapters' dtype first. With gradients lora_A keeps its (copied) input, dropout its
    // mask and lora_B lora_A's output; bitsandbytes' MatMul4Bit before 0.43.2 keeps its input, the layer's x.
    void linear(int m, int out, bool grad) {
        const PeftStepShape& d = m_d;
        const double t = d.tokens, rows = width(m), cols = input(m), e = d.bytes, ab = d.adapterBytes;
        dequantise(rows, cols);
        m_p.alloc(out, e * t * rows);
        if (d.quantised)
            m_p.free(W);
        if (!adapted(m))
            return;
        const bool cast = ab != e;
        const bool copy = cast || d.dropout;
        if (cast)
            m_p.alloc(T1, ab * t * cols);
        if (d.dropout) {
            m_p.alloc(copyOf(m), ab * t * cols);
            m_p.alloc(maskOf(m), t * cols);
            if (cast)
                m_p.free(T1);
        } else if (cast) {
            m_p.rename(T1, copyOf(m));
        }
        m_p.alloc(lowOf(m), ab * t * d.rank);
        m_p.alloc(T2, ab * t * rows); // lora_B
        m_p.alloc(T3, ab * t * rows); // * scaling
        m_p.free(T2);
        m_p.alloc(T4, std::max(ab, e) * t * rows); // result + ...
        m_p.free(T3);
        m_p.free(out);
        if (cast) { // result.to(torch_result_dtype)
            m_p.alloc(T5, e * t * rows);
            m_p.free(T4);
            m_p.rename(T5, out);
        } else {
            m_p.rename(T4, out);
        }
        if (!grad) {
            m_p.free(lowOf(m));
            if (copy)
                m_p.free(copyOf(m));
            if (d.dropout)
                m_p.free(maskOf(m));
        }
    }

    // The backward of linear() from the gradient of its output (which the caller holds and drops), into
    // `dx`: the adapters' path first (its nodes came later), then the base's, and the two summed into the
    // first (InputBuffer::accumulate).
    void linearBackward(int m, int dx) {
        const PeftStepShape& d = m_d;
        const double t = d.tokens, rows = width(m), cols = input(m), e = d.bytes, ab = d.adapterBytes;
        const bool cast = ab != e;
        const bool copy = cast || d.dropout;
        bool lora = false;
        if (adapted(m)) {
            if (cast) { // the cast back to the result's dtype
                m_p.alloc(G5, ab * t * rows);
            }
            m_p.alloc(G1, ab * t * rows); // * scaling
            if (cast)
                m_p.free(G5);
            m_p.alloc(G2, ab * t * d.rank); // lora_B's input gradient; its own is rank-sized
            m_p.free(G1);
            m_p.free(lowOf(m));
            m_p.alloc(G3, ab * t * cols); // lora_A's
            m_p.free(G2);
            if (copy)
                m_p.free(copyOf(m));
            if (d.dropout) {
                m_p.alloc(G4, ab * t * cols);
                m_p.free(G3);
                m_p.free(maskOf(m));
                m_p.rename(G4, G3);
            }
            if (cast) { // the cast's backward
                m_p.alloc(G4, e * t * cols);
                m_p.free(G3);
                m_p.rename(G4, G3);
            }
            lora = true;
        }
        dequantise(rows, cols);
        m_p.alloc(dx, e * t * cols);
        if (d.quantised)
            m_p.free(W);
        if (lora) { // summed into the adapters' gradient, which arrived first
            m_p.free(dx);
            m_p.rename(G3, dx);
        }
    }

    // LlamaRMSNorm: x.to(float32), its square's mean, rsqrt, x * rsqrt, .to(bf16), weight * that. With
    // gradients the fp32 x and the inverse RMS are saved (the weight is frozen: its product keeps nothing).
    void norm(int y, int x32, int r, bool grad) {
        const double t = m_d.tokens, h = m_d.hidden, e = m_d.bytes;
        m_p.alloc(x32, 4 * t * h);
        m_p.alloc(T1, 4 * t * h); // pow(2)
        m_p.alloc(T2, 4 * t);     // mean
        m_p.free(T1);
        m_p.alloc(T3, 4 * t); // + eps
        m_p.free(T2);
        m_p.alloc(r, 4 * t); // rsqrt
        m_p.free(T3);
        m_p.alloc(T4, 4 * t * h); // x * rsqrt
        if (!grad) {
            m_p.free(x32);
            m_p.free(r);
        }
        m_p.alloc(T5, e * t * h); // .to(bf16)
        m_p.free(T4);
        m_p.alloc(y, e * t * h); // weight * ...
        m_p.free(T5);
    }

    // Its backward from the gradient of its output (the caller's) into `dx`: the weight's product, the casts,
    // x * rsqrt (both inputs' gradients, rsqrt's reduced over the row), rsqrt, the mean (expanded) and the
    // square; x's two gradients summed.
    void normBackward(int dx, int x32, int r) {
        const double t = m_d.tokens, h = m_d.hidden, e = m_d.bytes;
        m_p.alloc(G1, e * t * h); // g * weight
        m_p.alloc(G2, 4 * t * h); // .to(float32)
        m_p.free(G1);
        m_p.alloc(G3, 4 * t * h); // x's gradient through x * rsqrt
        m_p.alloc(G4, 4 * t * h); // g * x, summed for rsqrt's
        m_p.alloc(G5, 4 * t);
        m_p.free(G4);
        m_p.free(G2);
        m_p.alloc(G6, 4 * t); // rsqrt's backward
        m_p.free(G5);
        m_p.alloc(G1, 4 * t * h); // the mean's, expanded
        m_p.free(G6);
        m_p.alloc(G2, 4 * t * h); // the square's: x * 2, then times the gradient
        m_p.alloc(G4, 4 * t * h);
        m_p.free(G2);
        m_p.free(G1);
        m_p.free(G4);             // summed into G3
        m_p.alloc(dx, e * t * h); // .to(bf16)
        m_p.free(G3);
        m_p.free(x32);
        m_p.free(r);
    }

    // apply_rotary_pos_emb on one projection of `w` values a token: (x * cos) + (rotate_half(x) * sin),
    // rotate_half a cat of -x2 and x1.
    void rotate(int x, double w) {
        const double t = m_d.tokens, e = m_d.bytes;
        m_p.alloc(T1, e * t * w);     // x * cos
        m_p.alloc(T2, e * t * w / 2); // -x2
        m_p.alloc(T3, e * t * w);     // cat
        m_p.free(T2);
        m_p.alloc(T4, e * t * w); // * sin
        m_p.free(T3);
        m_p.alloc(T5, e * t * w); // +
        m_p.free(T1);
        m_p.free(T4);
        m_p.free(x);
        m_p.rename(T5, x);
    }

    // Its backward from the gradient `g` (held as `g`), into `g`: sin's product, the cat's and neg's, each
    // slice's (a zeroed full tensor each), cos's; then the view back to (batch, tokens, width) copies it,
    // the rotation's output being contiguous in heads-first order.
    void rotateBackward(int g, double w) {
        const double t = m_d.tokens, e = m_d.bytes;
        m_p.alloc(G1, e * t * w);     // g * sin
        m_p.alloc(G2, e * t * w / 2); // -
        m_p.alloc(G3, e * t * w);     // x2's slice
        m_p.free(G2);
        m_p.alloc(G4, e * t * w); // x1's slice
        m_p.free(G1);
        m_p.free(G4);             // summed into G3
        m_p.alloc(G5, e * t * w); // g * cos
        m_p.free(G5);             // summed into G3
        m_p.free(g);
        m_p.alloc(G6, e * t * w); // the view's reshape
        m_p.free(G3);
        m_p.rename(G6, g);
    }

    // LlamaDecoderLayer.forward on In, to H2.
    void layer(bool grad) {
        const PeftStepShape& d = m_d;
        const double t = d.tokens, e = d.bytes;
        norm(Y1, Xa, Ra, grad);
        linear(Mq, Q, grad);
        linear(Mk, K, grad);
        linear(Mv, V, grad);
        // LlamaRotaryEmbedding.forward: the cached cos and sin, cast to the activations' dtype where the
        // cache is fp32; indexed by the positions.
        if (d.ropeCast) {
            m_p.alloc(Cc, e * d.sequence * d.headDim);
            m_p.alloc(Cs, e * d.sequence * d.headDim);
        }
        m_p.alloc(Ci, e * t * d.headDim);
        m_p.alloc(Si, e * t * d.headDim);
        rotate(Q, d.q);
        rotate(K, d.kv);
        if (d.kv < d.q) { // repeat_kv: expand, then reshape copies
            for (auto [x, wide] : {std::pair{K, T1}, std::pair{V, T2}}) {
                m_p.alloc(wide, e * t * d.q);
                m_p.free(x);
                m_p.rename(wide, x);
            }
        }
        m_p.alloc(O, e * t * d.q); // SDPA (flash, causal): the output and its fp32 log-sum-exp
        m_p.alloc(L, 4 * d.heads * t);
        if (!grad)
            m_p.free(L);
        // transpose(1, 2).contiguous() of flash's output is already contiguous: no copy.
        linear(Mo, Ao, grad);
        if (d.ropeCast) {
            m_p.free(Cc);
            m_p.free(Cs);
        }
        if (!grad) {
            for (int id : {Q, K, V, O, Ci, Si})
                m_p.free(id);
        }
        // The norm's output is kept by MatMul4Bit (a 4-bit base before bitsandbytes 0.43.2) and by an adapter
        // with no copy of its own.
        if (!grad || !keepsInput(Mq, Mk, Mv))
            m_p.free(Y1);
        m_p.alloc(H1, e * t * d.hidden);
        m_p.free(Ao);
        norm(Y2, Xb, Rb, grad);
        linear(Mg, G, grad);
        m_p.alloc(S, e * t * d.ffn); // SiLU keeps its input
        if (!grad)
            m_p.free(G);
        linear(Mu, U, grad);
        m_p.alloc(M, e * t * d.ffn); // their product keeps both
        if (!grad) {
            m_p.free(S);
            m_p.free(U);
        }
        linear(Md, D, grad);
        if (!grad || !keepsInput(Md, Md, Md))
            m_p.free(M);
        if (!grad || !keepsInput(Mg, Mu, Mu))
            m_p.free(Y2);
        m_p.alloc(H2, e * t * d.hidden);
        m_p.free(D);
        m_p.free(H1);
    }
    bool keepsInput(int a, int b, int c) const {
        if (m_d.fourBitKeepsInput)
            return true;
        const bool own = m_d.dropout || m_d.adapterBytes != m_d.bytes;
        return !own && (adapted(a) || adapted(b) || adapted(c));
    }

    // The autograd engine's order through the rebuilt layer, from Dy: down, the product, up, SiLU, gate, the
    // second norm, o_proj, SDPA, the rotations, v, k, q, the first norm. Gradients summed land in the
    // tensor nothing else holds.
    void layerBackward() {
        const PeftStepShape& d = m_d;
        const double t = d.tokens, e = d.bytes;
        linearBackward(Md, G6); // dM (as G6, then renamed)
        m_p.rename(G6, T1);
        if (keepsInput(Md, Md, Md))
            m_p.free(M);
        m_p.alloc(T2, e * t * d.ffn); // dS = dM * U
        m_p.alloc(T3, e * t * d.ffn); // dU = dM * S
        m_p.free(T1);
        m_p.free(S);
        m_p.free(U);
        linearBackward(Mu, T4); // dY2 (up's)
        m_p.free(T3);
        m_p.alloc(T3, e * t * d.ffn); // SiLU's backward: dG
        m_p.free(T2);
        m_p.free(G);
        linearBackward(Mg, T5); // gate's
        m_p.free(T3);
        m_p.free(T5); // summed into T4
        if (keepsInput(Mg, Mu, Mu))
            m_p.free(Y2);
        normBackward(T1, Xb, Rb); // into T1, the residual's dY summed into it
        m_p.free(T4);
        m_p.rename(T1, H1);     // dH1, which In's gradient will be (H1 itself went with the rebuilt forward)
        linearBackward(Mo, T2); // dO
        // SDPA's flash backward: dq, dk, dv, softmax_d and the fp32 dq accumulator.
        m_p.alloc(T3, e * t * d.q);
        m_p.alloc(T4, e * t * d.q);
        m_p.alloc(T5, e * t * d.q);
        m_p.alloc(G5, 4 * d.heads * t);
        m_p.alloc(G6, 4 * t * d.q);
        m_p.free(G6);
        m_p.free(G5);
        for (int id : {Q, K, V, O, L, T2})
            m_p.free(id);
        if (d.kv < d.q) { // repeat_kv's backward sums the heads back
            m_p.alloc(T1, e * t * d.kv);
            m_p.free(T4);
            m_p.rename(T1, T4);
            m_p.alloc(T1, e * t * d.kv);
            m_p.free(T5);
            m_p.rename(T1, T5);
        }
        rotateBackward(T4, d.kv);
        rotateBackward(T3, d.q);
        m_p.free(Ci);
        m_p.free(Si);
        linearBackward(Mv, T1); // dY1 (v's)
        m_p.free(T5);
        linearBackward(Mk, T2);
        m_p.free(T4);
        m_p.free(T2); // summed into T1
        linearBackward(Mq, T2);
        m_p.free(T3);
        m_p.free(T2);
        if (keepsInput(Mq, Mk, Mv))
            m_p.free(Y1);
        normBackward(T2, Xa, Ra);
        m_p.free(T1);
        m_p.free(T2); // summed into dH1, In's gradient
    }

    // The final norm, the head and the loss (LlamaForCausalLM.forward before 4.46): bf16 logits cast to fp32
    // (the output keeps them), the shifted copy, log_softmax (saved) and nll; then the backward down to the
    // last layer's output: nll's, log_softmax's, the slice's (a zeroed full tensor), the cast's, the head's,
    // the norm's.
    void loss() {
        const PeftStepShape& d = m_d;
        const double t = d.tokens, e = d.bytes, v = d.vocab;
        norm(Fn, Xf, Rf, true);
        m_p.free(In); // the last layer's output
        m_p.alloc(Lg, e * t * v);
        m_p.alloc(L32, 4 * t * v);
        m_p.free(Lg);
        m_p.alloc(Sh, 4 * t * v);
        m_p.alloc(Ls, 4 * t * v);
        m_p.free(Sh);
        m_p.free(Fn);
        m_p.alloc(G1, 4 * t * v); // nll's
        m_p.alloc(G2, 4 * t * v); // log_softmax's
        m_p.free(G1);
        m_p.free(Ls);
        m_p.alloc(G3, 4 * t * v); // the slice's
        m_p.free(G2);
        m_p.alloc(G4, e * t * v); // the cast's
        m_p.free(G3);
        m_p.alloc(T1, e * t * d.hidden); // the head's
        m_p.free(G4);
        normBackward(Dy, Xf, Rf);
        m_p.free(T1);
    }

    TensorProgram m_p;
    const PeftStepShape& m_d;
};

} // namespace

StepPeaks replayPeftStep(CachingAllocatorModel& a, const PeftStepShape& d) {
    if (d.layers <= 0 || d.tokens <= 0)
        return {};
    return Step(a, d).run();
}

} // namespace headroom
