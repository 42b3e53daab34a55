// SPDX-License-Identifier: GPL-3.0-or-later
// cs336_basics op by op (docs/frameworks.md, "CS336 basics"). Lines cited are those of the package as
// Wedsonlin/assignment2-systems ships it (cs336-basics/cs336_basics at 882ca8d), whose recorded runs
// tests/data holds; autograd's saved tensors are tools/autograd/derivatives.yaml's, autocast's dtypes
// aten/src/ATen/autocast_mode.cpp's.
#include "core/plan/cs336basics.h"

#include <algorithm>

namespace headroom {

namespace {

// The dtypes the code's tensors take.
struct Dtypes {
    double e;    // the parameters' and the residual stream's (buffers follow the model's dtype too)
    double m;    // a matmul's output: autocast's dtype, else the parameters'
    bool cast;   // autocast changes a matmul's inputs: each einsum saves its own cast copy
    double exp;  // exp's output and what follows it (autocast's fp32 list: exp, sum, log)
};

Dtypes dtypesOf(const Cs336Shape& s) {
    const bool autocast = s.autocastBytes > 0;
    Dtypes d;
    d.e = s.weightBytes;
    d.m = autocast ? s.autocastBytes : s.weightBytes;
    d.cast = autocast && s.autocastBytes != s.weightBytes;
    d.exp = autocast ? 4 : s.weightBytes;
    return d;
}

// One RMSNorm (model.py RMSNorm.forward): x.to(float32) is saved by pow (the fp32 input itself, or its
// copy when the model is 16-bit), x * rms saves rms, weight * x saves the normalised x: 8 bytes per hidden
// unit and the fp32 rsqrt per token, whatever the model's dtype.
double normSaved(double h) {
    return 8 * h + 4;
}

} // namespace

Cs336Shape cs336ShapeOf(const ModelSpec& m, double sequence, double weightBytes, double autocastBytes) {
    Cs336Shape s;
    s.sequence = sequence;
    s.hidden = m.hidden;
    s.ffn = m.ffn;
    s.heads = m.heads;
    s.vocab = m.vocab;
    s.weightBytes = weightBytes;
    s.autocastBytes = autocastBytes;
    return s;
}

Cs336Training cs336Training(const Cs336Shape& s) {
    const Dtypes d = dtypesOf(s);
    const double h = s.hidden, f = s.ffn, a = s.heads, keys = s.sequence;
    Cs336Training t;
    // Before the softmax: ln1; q, k and v einsums, each saving its input (three cast copies under autocast,
    // else the norm's output once); RoPE (model.py RotaryEmbedding.forward) multiplies by slices of its
    // cos/sin buffer, which need no gradient, so it saves nothing but writes new rotated Q and K in the
    // buffer's dtype, which the score einsum saves (or their casts); V is saved as the einsum wrote it.
    // The softmax (nn_utils.py softmax) saves max's int64 indices and the sum's fp32 (under autocast) row.
    const double qkvInputs = d.cast ? 3 * d.m * h : d.e * h;
    const double rotated = d.cast ? 2 * d.m * h : 2 * d.e * h;
    const double beforeSoftmax = normSaved(h) + qkvInputs + rotated + d.m * h + a * (8 + d.exp);
    // After it: the heads' output made contiguous for output_proj (einops' rearrange + .contiguous()), ln2,
    // w1 and w3 saving their input, and SwiGLU's five f-wide tensors: w1's and w3's outputs, sigmoid's
    // output, x * sigmoid(x) (model.py silu) and the product w2 saves.
    const double w13Inputs = d.cast ? 2 * d.m * h : d.e * h;
    const double afterSoftmax = d.m * h + normSaved(h) + w13Inputs + 5 * d.m * f;
    t.layerSaved = (beforeSoftmax + afterSoftmax) * s.sequence;
    // exp saves its output; the P @ V einsum saves P, or under autocast its cast copy: in the matmul's
    // dtype either way.
    t.layerScores = a * keys * (d.exp + d.m) * s.sequence;
    // torch.where(mask, scores, -inf) saves its condition: the (1, s, s) bool mask (qi >= kj).
    t.layerMask = keys * keys;

    // The last layer's softmax in the forward: the scores, where's output and x - max (the matmul's
    // dtype) and P beside exp's output, before the einsum keeps its own copy of P. Under autocast the norm's
    // output and the rotated Q and K are not saved, but alive as locals. (Its output projection and MLP,
    // not made yet, are in what is saved: lastLayerNotMade below takes them out.)
    t.lastLayerForward = (d.cast ? 3 * d.e * h : 0) * s.sequence;
    t.lastLayerForwardScores = a * keys * (d.m + d.exp) * s.sequence; // beside what is saved
    // Or a little later, as the P @ V einsum writes its output and the copy torch.einsum returns (two of
    // b·s·h in the matmul's dtype): x - max is gone by then, P's cast (autocast) in its place. The larger
    // when the keys are few against the hidden size (in fp32, 2h > heads x keys); under autocast always,
    // by those two tensors (the step's replay showed it: the small model at 8 x 1,024 tokens 0.18% under
    // it with autograd on).
    const double atProduct = 2 * d.m * h - (d.cast ? 0 : a * keys * d.m);
    if (atProduct > 0)
        t.lastLayerForward += atProduct * s.sequence;
    // Its backward at the softmax's division (DivBackward0: grad / Z, then -grad * (E / Z) / Z): the MLP's
    // and output projection's saved tensors, P's kept copy and V (saved by the P @ V einsum alone, freed
    // once its backward has run: the training step's replay, cs336replay.cpp, showed it kept here one
    // tensor too long) are gone; the gradient of P in exp's dtype (cast up from the matmul's under autocast)
    // and four more of its size, the residual's gradient and V's.
    t.lastLayerFreed = -(afterSoftmax + d.m * h) * s.sequence;
    t.lastLayerNotMade = -afterSoftmax * s.sequence;
    t.lastLayerFreedScores = -a * keys * d.m * s.sequence;
    t.backwardScratch = (d.e + d.m) * h * s.sequence;
    t.backwardScratchScores = 5 * a * keys * d.exp * s.sequence;

    // The final norm and the head's input (model.py BasicsTransformerLM.forward).
    t.head = (normSaved(h) + (d.cast ? d.m : d.e) * h) * s.sequence;
    // The loss (nn_utils.py log_softmax, cross_entropy) on logits L in the matmul's dtype: R = L - max,
    // E = exp(R) (saved), LS = R - log(sum E) (fp32 under autocast: log is on its fp32 list), N = -LS,
    // then gather and mean. At their most: at exp (L, R, R's fp32 copy under autocast, E), at LS (L, R, E,
    // LS), at N (L, E, LS, N: R went with log_softmax's frame).
    // LS and -LS take exp's dtype too (R minus the fp32 log under autocast).
    const double L = d.m, E = d.exp, ls = d.exp;
    t.lossForward = std::max({L + L + (s.autocastBytes > 0 ? 4 : 0) + E, L + L + E + ls, L + E + 2 * ls});
    // The backward's start: gather's gradient (zeros, scattered) turned by neg's backward into LS's, the
    // negation sub's backward makes for log(sum E), and R's gradient cast back to the matmul's dtype when
    // LS was wider; L and the saved E alongside.
    t.lossBackward = L + E + 2 * ls + (ls != L ? L : 0);
    t.heldLogits = L;
    return t;
}

Cs336Forward cs336Forward(const Cs336Shape& s) {
    const Dtypes d = dtypesOf(s);
    const double h = s.hidden, f = s.ffn, a = s.heads, keys = s.sequence;
    // BasicsTransformerLM.forward keeps the embedding's output (embedded_tokens) to the end, and a block
    // its input until it returns.
    const double held = 2 * d.e * h;
    // At the softmax (P = E / sum): the norm's output, the rotated Q and K (the buffer's dtype) and V,
    // and the scores, where's output and R = x - max (the matmul's dtype) with E and P (exp's); the
    // q and k casts went with their einsum.
    double attention = held + 3 * d.e * h + d.m * h;
    double attentionScores = a * keys * (2 * d.m + 2 * d.exp) + a * (8 + d.exp);
    // Or as the P @ V einsum writes its output and the copy torch.einsum returns (two of b·s·h): exp's
    // output, x - max and the row statistics gone by then (nothing is saved), P's cast beside P under
    // autocast. The larger when the keys are few against the hidden size (the 2.7B model at 64 tokens: the
    // forward's replay showed it, 0.2% under without).
    const double productScores = a * keys * (d.m + d.exp + (d.cast ? d.m : 0));
    if (2 * d.m * h + productScores > attentionScores) {
        attention += 2 * d.m * h;
        attentionScores = productScores;
    }
    // At x * sigmoid(x) in the MLP: the attention's output (x_attn) and the residual after it, ln2's
    // output, and w1's output, its sigmoid and their product.
    const double mlp = held + d.m * h + 2 * d.e * h + 3 * d.m * f;
    // At the head: the final norm's output (and its cast) and the logits.
    const double head = d.e * h + d.e * h + (d.cast ? d.m * h : 0);
    const double logits = d.m * s.vocab;

    Cs336Forward out;
    out.attention = {attention * s.sequence, attentionScores * s.sequence, 0};
    out.mlp = {mlp * s.sequence, 0, 0};
    out.head = {head * s.sequence, 0, logits * s.sequence};
    // (w3's output in sigmoid's and w1's place, beside the cast of its input.)
    out.w3 = {(mlp - d.m * f + (d.cast ? d.m * h : 0)) * s.sequence, 0, 0};
    const double atAttention = attention + attentionScores, atHead = head + logits;
    if (atAttention >= mlp && atAttention >= atHead) {
        out.activations = attention * s.sequence;
        out.scores = attentionScores * s.sequence;
        out.mask = keys * keys;
    } else if (mlp >= atHead) {
        out.activations = mlp * s.sequence;
    } else {
        out.activations = head * s.sequence;
        out.logits = logits * s.sequence;
    }
    return out;
}

double cs336StepTemporaries(double elements, double bytes) {
    // optimizer.py AdamW.step, per parameter p: p.data -= lr * wd * p.data (one temporary), then
    // state.get("m", torch.zeros_like(grad)) builds a zero tensor even when the state exists (freed at
    // once), m_t = b1 * m + (1 - b1) * grad (two temporaries and m_t), v_t likewise beside m_t, and
    // p.data -= alpha_t * m_t / (sqrt(v_t) + eps): alpha_t * m_t, sqrt, + eps and the quotient beside m_t
    // and v_t, five of p's size at once before the old states go.
    return 5 * elements * bytes;
}

} // namespace headroom
