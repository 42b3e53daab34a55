// SPDX-License-Identifier: GPL-3.0-or-later
// cs336_basics' forward and training step through the caching allocator. The order below is the code's
// (cs336-basics/cs336_basics/model.py and nn_utils.py at Wedsonlin/assignment2-systems 882ca8d, as
// docs/frameworks.md cites them): each tensor is allocated when the op that writes it runs and freed when
// its last Python reference goes (a rebound local, a function's return). Autocast's dtypes are
// aten/src/ATen/autocast_mode.cpp's: einsum on the 16-bit list (its inputs cast, a weight's cast cached
// under torch.no_grad but not under torch.inference_mode), exp and sum on the fp32 list, the rest promoted;
// autograd's saved tensors tools/autograd/derivatives.yaml's.
#include "core/plan/cs336replay.h"

#include "core/plan/tensorprogram.h"
#include "core/recentresults.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <vector>

namespace headroom {

namespace {

constexpr int kMaxReplayedLayers = 128; // more than any published model has (Llama 3.1 405B: 126)
// With autocast's cache kept every block leaves its casts behind, so every block is replayed: up to twice
// the 2.7B model's 32 (CS336's largest has 48); beyond, the fraction stands (a bound on the time).
constexpr int kMaxCachedCastLayers = 64;
constexpr int kCastsPerLayer = 7;       // q, k, v, output_proj, w1, w2, w3
// A training step replays each block's forward and backward once per micro-batch, and a later step after a
// first one: at most 128 such passes (the 2.7B model's later step, 32 layers, with two micro-batches; its
// first step with four), which bounds the time (about 6 ms a replay); beyond, the fraction stands.
constexpr int kMaxBlockPasses = 128;

enum Id : int {
    Param,  // a parameter or buffer: allocated once, never freed
    Tokens, // the batch's token ids
    Ws,     // cuBLAS's workspace
    Emb,    // the embedding's output, which forward keeps as embedded_tokens to the end
    X,      // a block's input (the previous block's output)
    Xf,     // RMSNorm: the fp32 copy of a 16-bit input, pow's output, mean, + eps, rsqrt, x * rms, weight * x
    Pw,
    Mn,
    Me,
    Rs,
    Xn,
    Wx,
    Y1,  // ln1's output
    Cin, // an einsum's input cast to autocast's dtype
    Cw,  // its weight's cast (inference_mode: freed after the einsum)
    Q,
    K,
    V,
    R1, // RoPE: cos * x1, sin * x2, their difference (x1_rot), the same for x2_rot, the concatenation
    R2,
    X1,
    X2,
    Qr,
    Kr,
    Iota, // the causal mask: arange and qi >= kj
    Mask,
    S1, // the scores' einsum, / sqrt(d_k), where's -inf scalar and output
    S2,
    Inf,
    S3,
    Mv, // softmax: max's values and indices, x - max, its fp32 cast, exp, sum, the quotient P
    Mi,
    Rm,
    Rc,
    E,
    Sm,
    P,
    Pc, // P cast for the P @ V einsum
    O1, // that einsum's output and the copy torch.einsum returns for this pattern
    O2,
    C,  // the heads' output made contiguous
    A,  // output_proj's output (x_attn)
    H1, // x + x_attn
    Y2, // ln2's output
    G,  // w1's output, its sigmoid, x * sigmoid(x), w3's output, the product
    Sg,
    Si,
    U,
    Pr,
    Fo, // w2's output (x_ffn)
    H2, // the block's output
    Yf, // ln_final's output
    L,  // the logits
    // The training step's: the loss's tensors, the gradient flowing back (Gin) and what it becomes (Gout),
    // and an op's temporaries in the backward and the optimizer's step.
    Lr,
    Le,
    Gin,
    Gout,
    T1,
    T2,
    T3,
    T4,
    T5,
    T6,
    Lh,  // the logits of the step before, which the caller's variable holds until the new ones come
    Gw,  // a weight's gradient on its way into the .grad an earlier micro-batch made
    Gw2, // under autocast, a weight's gradient in its cast's dtype, before the cast's backward
    Gr,  // an einsum's weight gradient as its backward wrote it, before AccumulateGrad copies it
    Gc,  // under autocast, a gradient in another dtype (a cast's backward)
    kIds
};

// What autograd saves of one layer, held from its forward to its backward (cs336basics.cpp's layerSaved,
// layerScores and layerMask, tensor by tensor; tools/autograd/derivatives.yaml): the block's input, which
// ln1's pow saves, each norm's rsqrt and normalised x, ln1's output (the q, k, v einsums' input), the rotated
// Q and K and V (the score and P @ V einsums'), the mask (where's condition), max's indices, exp's output and
// the row sums (the division's), P, the heads' output (output_proj's input), the residual after attention
// (ln2's input), ln2's output (w1's and w3's input) and SwiGLU's five.
enum Saved : int {
    SX,
    SRs1,
    SXn1,
    SY1,
    SQr,
    SKr,
    SV,
    SMask,
    SMi,
    SE,
    SSm,
    SP,
    SC,
    SH1,
    SRs2,
    SXn2,
    SY2,
    SG,
    SSg,
    SSi,
    SU,
    SPr,
    // Under autocast each einsum saves its own 16-bit cast of an fp32 input (q, k, v of ln1's output, the
    // score einsum of the rotated Q and K, w1 and w3 of ln2's output; the head's of ln_final's as the
    // head's q slot), not the input.
    SCq,
    SCk,
    SCv,
    SCQr,
    SCKr,
    SC1,
    SC3,
    kSavedPerLayer
};
constexpr int kParamsPerLayer = 9; // q, k, v, output_proj, w1, w2, w3, ln1, ln2

struct Dims {
    double t = 0; // tokens in the batch
    double h = 0, f = 0, a = 0, s = 0, vocab = 0;
    double e = 4;      // the parameters' and the residual stream's dtype
    double m = 4;      // an einsum's output: autocast's dtype, else e
    bool cast = false; // autocast below the parameters' dtype
    bool cachedCasts = false;
    double r = 4; // RoPE's output: its fp32 or 16-bit buffer (the model's dtype) times Q, promoted
    // exp's and sum's (autocast's fp32 list: fp32 under autocast, whatever the parameters' dtype), else m.
    double exp = 4;
};

// The code's tensors in its order: the forward alone (without autograd), or with `training` the forward
// that saves what autograd keeps, the loss, the backward and AdamW's step.
class Program {
public:
    Program(CachingAllocatorModel& a, TensorProgram& p, const Dims& d, int layers, bool training = false)
        : m_a(a), m_p(p), m_d(d), m_layers(layers), m_training(training) {}

    // The names a program of `layers` layers uses: its own, the weights' casts, each layer's saved tensors
    // (and the head's, as a layer past the last), each parameter's gradient, its two AdamW states and
    // foreach AdamW's temporary.
    static int names(int layers) { return stateBase(layers) + 3 * parameters(layers); }

    void allocateParameters() {
        // model.to(device) (Module._apply): each module's children before its own parameters, in the order
        // __init__ registered them: the embedding, RoPE's cos/sin buffer, every block (attention's q, k, v
        // and output projections, SwiGLU's w1, w2, w3, then ln1 and ln2), ln_final, lm_head.
        const Dims& d = m_d;
        m_p.alloc(Param, d.e * d.vocab * d.h);
        m_p.alloc(Param, d.e * d.s * (d.h / d.a)); // stack((cos, sin)): 2 x context x d_head / 2
        for (int l = 0; l < m_layers; ++l) {
            for (int i = 0; i < 4; ++i)
                m_p.alloc(Param, d.e * d.h * d.h);
            for (int i = 0; i < 3; ++i)
                m_p.alloc(Param, d.e * d.h * d.f);
            m_p.alloc(Param, d.e * d.h);
            m_p.alloc(Param, d.e * d.h);
        }
        m_p.alloc(Param, d.e * d.h);
        m_p.alloc(Param, d.e * d.vocab * d.h);
    }

    // What has been allocated stays so, out of the program's hands (a previous pass's graph).
    void keepEverything() { m_p.keepAllUnnamed(); }

    // BasicsTransformerLM.forward on the batch's token ids; the caller drops the logits (with autograd, keeps
    // them for the loss).
    void run(double workspace, bool everyBlock) {
        const Dims& d = m_d;
        m_workspace = workspace;
        m_everyBlock = everyBlock;
        m_p.alloc(Emb, d.e * d.t * d.h); // weight[token_ids, :]
        // Every block makes and frees the same tensors but its output. Once the allocator's state after a
        // block is the one two blocks before (the same segments and free blocks; the input and output
        // take turns between two places), the blocks left repeat the last two exactly, peaks included:
        // only the parity of what is left matters. With autocast's cache kept (no_grad) every block leaves
        // its weights' casts behind and no state repeats.
        using State = std::pair<std::size_t, decltype(m_a.freeBlocks())>;
        std::vector<State> after;
        bool lastOne = false;
        for (int l = 0; l < m_layers; ++l) {
            if (m_p.outOfMemory())
                return; // out of memory, the forward goes no further: the verdict is given
            if (m_checkpointed) {
                // torch.utils.checkpoint runs the block under torch.no_grad, keeping only its input.
                m_training = false;
                block(l);
                m_training = true;
                if (l > 0)
                    m_p.rename(X, saved(l, SX));
            } else {
                block(l); // its input: the embedding's output, then the last block's
                if (l > 0)
                    keep(X, l,
                         SX); // `x = layer(x)` drops the block's input once it returns (ln1's pow saved it)
            }
            m_p.rename(H2, X);
            if (lastOne)
                break;
            if (d.cachedCasts || m_everyBlock || m_training)
                continue; // every block leaves what it saves (or its casts) behind: no state repeats
            after.emplace_back(m_a.events().size(), m_a.freeBlocks());
            if (l >= 2 && after[static_cast<std::size_t>(l)] == after[static_cast<std::size_t>(l - 2)] &&
                l + 1 < m_layers) {
                if ((m_layers - 1 - l) % 2 == 0)
                    break;      // the state after the last block is this one
                lastOne = true; // one block more brings it
            }
        }
        norm(Yf, m_layers, 0);
        keep(X, m_layers, SX);
        einsum(d.e, L, d.vocab, d.h, m_layers * kCastsPerLayer, m_layers, SCq);
        keepUncast(Yf, m_layers, SY1);
        keep(Emb, 0, SX); // forward's embedded_tokens; ln1's pow of the first block saved it
        if (!m_training)
            m_p.free(L); // with autograd the caller keeps the logits (`logits = model(x)`) for the loss
        // Leaving the autocast region clears its cache of weight casts (with autograd each einsum still holds
        // its weight's, to its backward).
        if (!m_training)
            for (int i = 0; i <= m_layers * kCastsPerLayer; ++i)
                m_p.free(kIds + i);
    }

    // One training step of a benchmark's loop (optimizer.zero_grad(); then per micro-batch logits =
    // model(x); loss = cross_entropy(logits, y); loss.backward(); then optimizer.step()): the forward
    // saving what autograd keeps, the loss, the backward layer by layer and the optimizer's step.
    // `first`: the optimizer makes its states in this step. zero_grad (set_to_none: each .grad dropped in
    // the parameters' order) runs before the forward, after the first micro-batch's forward and loss (the
    // previous step's gradients alive through it), or never (each step's gradients added into the last's).
    // The caller's logits go once the next ones are made; a weight's gradient is added into a .grad that
    // exists (AccumulateGrad, in place).
    void trainingStep(double workspace, bool first, int microBatches, ZeroGrad zeroGrad,
                      OptimizerImpl adamw) {
        if (zeroGrad == ZeroGrad::BeforeForward)
            dropGradients();
        for (int k = 0; k < microBatches; ++k) {
            const bool held = !first || k > 0;
            if (held)
                m_p.rename(L, Lh);
            run(k == 0 ? workspace : 0, true);
            if (held)
                m_p.free(Lh);
            loss();
            m_reservedByForward = m_p.peakReserved();
            if (k == 0 && zeroGrad == ZeroGrad::AfterForward)
                dropGradients();
            m_accumulating = k > 0 || (zeroGrad == ZeroGrad::Keep && !first);
            backward();
            m_reservedByBackward = m_p.peakReserved();
        }
        step(first, adamw);
    }
    void checkpointEveryBlock() { m_checkpointed = true; }
    double reservedByForward() const { return m_reservedByForward; }
    double reservedByBackward() const { return m_reservedByBackward; }

private:
    // nn_utils.cross_entropy on the logits L (held by the caller): R = L - max, E = exp(R) (saved), LS =
    // R - log(sum E), N = -LS, then gather and mean; R goes with log_softmax's frame, LS once negated.
    // Under autocast L and R are 16-bit, exp is on autocast's fp32 list (R cast up first) and LS, N promoted.
    void loss() {
        const double n = m_d.t * m_d.vocab, l = m_d.m * n, x = m_d.cast ? 4 * n : l;
        m_p.alloc(Lr, l);
        if (m_d.cast)
            m_p.alloc(Gc, x);
        m_p.alloc(Le, x);
        if (m_d.cast)
            m_p.free(Gc);
        m_p.alloc(Gout, x);
        m_p.free(Lr);
        m_p.alloc(Gin, x);
        m_p.free(Gout);
        m_p.free(Gin);
    }

    // loss.backward(): gather's backward scatters into zeros (T1), neg's makes LS's gradient (T2), exp's
    // E's part of R's (T3, added into T2 in place: autograd's InputBuffer adds into a gradient nothing else
    // holds), max's backward a dense scatter (added in place too); then the head, the final norm, every
    // layer from the last, and the embedding.
    void backward() {
        const Dims& d = m_d;
        const double n = d.m * d.t * d.vocab, x = (d.cast ? 4 : d.m) * d.t * d.vocab;
        m_p.alloc(T1, x);
        m_p.alloc(T2, x);
        m_p.free(T1);
        int dl = T2;
        if (d.cast) {
            // LS's gradient (fp32) cast back to R's dtype for R, and exp's part cast back and added.
            m_p.alloc(T4, n);
            m_p.alloc(T3, x);
            m_p.free(T2);
            m_p.alloc(T5, n);
            m_p.free(T3);
            m_p.free(T5);
            dl = T4;
        } else {
            m_p.alloc(T3, x);
            m_p.free(T3);
        }
        m_p.free(Le);
        m_p.alloc(T5, n);
        m_p.free(T5);
        // lm_head's einsum: the final norm's output's gradient and the head's weight's.
        m_p.alloc(Gin, d.m * d.t * d.h);
        weightGradient(parameters(m_layers) - 1, m_layers * kCastsPerLayer);
        m_p.free(dl);
        m_p.free(saved(m_layers, d.cast ? SCq : SY1));
        accumulated(parameters(m_layers) - 1);
        castUp(Gin, 4 * d.t * d.h);
        normBackward(m_layers, 0, parameters(m_layers) - 2);
        m_p.free(Gin);
        m_p.rename(Gout, Gin);
        m_p.free(saved(m_layers, SX));
        for (int l = m_layers - 1; l >= 0; --l) {
            if (m_p.outOfMemory())
                return;
            if (m_checkpointed) {
                // The checkpoint's backward (reentrant: torch/utils/checkpoint.py
                // CheckpointFunction.backward) runs the block's forward again from its kept input, saving
                // what autograd keeps, then the backward through it; the recomputed output it holds goes when
                // it returns.
                block(l);
                blockBackward(l);
                m_p.free(H2);
            } else {
                blockBackward(l);
            }
        }
        // The embedding's weight gradient (embedding_dense_backward: zeros of its size, indexed into).
        gradient(0);
        m_p.free(Gin);
    }

    // RMSNorm's backward on its output's gradient (the caller's, freed by it): the weight's gradient (the sum
    // of dy * x_norm), x_norm's (dy * weight), through x * rms to x and to rms (the sum of that times x), and
    // pow's part of x's, added in place; the result in Gout. Uses T4-T6.
    void normBackward(int layer, int which, int parameter) {
        const double bytes = 4 * m_d.t * m_d.h; // RMSNorm computes in fp32
        m_p.alloc(T4, bytes);
        gradient(parameter);
        m_p.free(T4);
        m_p.alloc(T4, bytes);
        m_p.alloc(T5, bytes);
        m_p.alloc(T6, bytes);
        m_p.free(T6);
        m_p.free(T4);
        m_p.free(saved(layer, which ? SXn2 : SXn1));
        m_p.alloc(T6, bytes);
        m_p.free(T6);
        m_p.free(saved(layer, which ? SRs2 : SRs1));
        m_p.rename(T5, Gout);
    }

    // TransformerBlock's backward on its output's gradient (Gin), op by op in reverse; the input's gradient
    // is left in Gin. Each saved tensor goes once the node that saved it has run; a parameter's gradient is
    // kept as its .grad.
    void blockBackward(int l) {
        const Dims& d = m_d;
        const int p = 1 + l * kParamsPerLayer; // q, k, v, output_proj, w1, w2, w3, ln1, ln2
        const double lin = d.m * d.t * d.h, wide = d.m * d.t * d.f, scores = d.m * d.t * d.a * d.s;
        const double wideScores = (d.cast ? 4 : d.m) * d.t * d.a * d.s, fp32 = 4 * d.t * d.h;
        const int c = l * kCastsPerLayer; // q, k, v, output_proj, w1, w2, w3
        // SwiGLU: w2's einsum (Pr's gradient, w2's), the product (both factors'), w3's einsum (part of ln2's
        // output's gradient), x * sigmoid(x) and sigmoid's backward (G's two parts, added in place), w1's
        // einsum (the other part of ln2's output's, added in place).
        m_p.alloc(T1, wide);
        weightGradient(p + 5, c + 5);
        m_p.free(saved(l, SPr));
        accumulated(p + 5);
        m_p.alloc(T2, wide);
        m_p.alloc(T3, wide);
        m_p.free(T1);
        m_p.free(saved(l, SU));
        m_p.free(saved(l, SSi));
        m_p.alloc(T1, lin);
        weightGradient(p + 6, c + 6);
        freeCast(l, SC3);
        accumulated(p + 6);
        castUp(T1, fp32);
        m_p.free(T3);
        m_p.alloc(T3, wide);
        m_p.alloc(T4, wide);
        m_p.free(T2);
        m_p.alloc(T2, wide);
        m_p.free(T4);
        m_p.free(T2);
        m_p.free(saved(l, SSg));
        m_p.free(saved(l, SG));
        m_p.alloc(T2, lin);
        weightGradient(p + 4, c + 4);
        freeCast(l, SC1);
        accumulated(p + 4);
        castUp(T2, fp32);
        m_p.free(T3);
        m_p.free(T2);
        if (!d.cast)
            m_p.free(saved(l, SY2));
        // ln2, and the residual's two gradients added in place.
        normBackward(l, 1, p + 8);
        m_p.free(T1);
        m_p.free(Gout);
        m_p.free(saved(l, SH1));
        // Attention: output_proj's einsum, P @ V's (P's gradient, score-sized, and V's), the division E / sum
        // (its gradient beside four more of P's size), the sum's gradient expanded and added (a new tensor:
        // the expansion is a view), exp's, max's scatter (added in place), where's, the division by
        // sqrt(d_k), the score einsum (Q's and K's), RoPE's halves put back together, and the q, k, v
        // einsums (ln1's output's three parts added in place, their weights').
        m_p.alloc(T1, lin);
        weightGradient(p + 3, c + 3);
        m_p.free(saved(l, SC));
        accumulated(p + 3);
        m_p.alloc(T2, scores);
        m_p.alloc(T3, lin);
        m_p.free(T1);
        m_p.free(saved(l, SP));
        m_p.free(saved(l, SV));
        castUp(T2, wideScores); // P's cast's backward: its gradient in exp's dtype
        m_p.alloc(T1, wideScores);
        m_p.alloc(T4, wideScores);
        m_p.alloc(T5, wideScores);
        m_p.alloc(T6, wideScores);
        m_p.free(T4);
        m_p.free(T5);
        m_p.free(T6);
        m_p.free(T2);
        m_p.free(saved(l, SSm));
        m_p.alloc(T2, wideScores);
        m_p.free(T1);
        m_p.alloc(T1, wideScores);
        m_p.free(T2);
        m_p.free(saved(l, SE));
        castUp(T1, scores); // x - max's cast up's backward: back to the scores' dtype
        m_p.alloc(T2, scores);
        m_p.free(T2);
        m_p.free(saved(l, SMi));
        m_p.alloc(T2, scores);
        m_p.free(T1);
        m_p.free(saved(l, SMask));
        m_p.alloc(T1, scores);
        m_p.free(T2);
        const bool castQk = d.cast && d.r != d.m; // the score einsum read casts of the rotated Q and K
        m_p.alloc(T2, (castQk ? d.m : d.r) * d.t * d.h);
        m_p.alloc(T4, (castQk ? d.m : d.r) * d.t * d.h);
        m_p.free(T1);
        m_p.free(saved(l, castQk ? SCQr : SQr));
        m_p.free(saved(l, castQk ? SCKr : SKr));
        if (castQk) {
            castUp(T2, d.r * d.t * d.h);
            castUp(T4, d.r * d.t * d.h);
        }
        for (const auto& [rotated, input] : {std::pair{T2, T1}, std::pair{T4, Gout}}) {
            m_p.alloc(T5, d.r * d.t * d.h / 2);
            m_p.alloc(T6, d.r * d.t * d.h / 2);
            m_p.alloc(input, lin);
            m_p.free(T5);
            m_p.free(T6);
            m_p.free(rotated);
        }
        m_p.alloc(T2, lin);
        weightGradient(p, c);
        m_p.free(T1);
        freeCast(l, SCq);
        accumulated(p);
        castUp(T2, fp32);
        m_p.alloc(T4, lin);
        weightGradient(p + 1, c + 1);
        m_p.free(Gout);
        freeCast(l, SCk);
        accumulated(p + 1);
        castUp(T4, fp32);
        m_p.free(T4);
        m_p.alloc(T4, lin);
        weightGradient(p + 2, c + 2);
        m_p.free(T3);
        freeCast(l, SCv);
        accumulated(p + 2);
        castUp(T4, fp32);
        m_p.free(T4);
        if (!d.cast)
            m_p.free(saved(l, SY1));
        // ln1, the residual's gradients added in place, and the block's input (ln1's pow saved it).
        normBackward(l, 0, p + 7);
        m_p.free(T2);
        m_p.free(Gout);
        m_p.free(saved(l, SX));
    }

    void dropGradients() {
        for (int i = 0; i < parameters(m_layers); ++i)
            m_p.free(grad(i));
    }

    // optimizer.step(): the package's AdamW, or torch.optim.AdamW in one of its three implementations
    // (torch/optim/adam.py, which AdamW runs with decoupled weight decay since torch 2.6, and adamw.py
    // before: the same tensors). torch's _init_group makes every parameter's states, zeros_like exp_avg then
    // exp_avg_sq, before any is updated; fused and capturable keep each step count on the device too (a
    // 0-dimensional fp32 tensor). The update then works in place but for the denominator, sqrt(exp_avg_sq)
    // / bias_correction2_sqrt + eps: one tensor at a time (_single_tensor_adam) makes the square root and the
    // quotient, the root going as the quotient is made; foreach (_multi_tensor_adam) the square roots of
    // every state at once (_foreach_sqrt), divided and added to in place, dropped when the function returns
    // (a list's elements last first); fused (_fused_adam_) none.
    void step(bool first, OptimizerImpl adamw) {
        const int n = parameters(m_layers);
        if (adamw == OptimizerImpl::Cs336Basics) {
            for (int i = 0; i < n; ++i)
                stepParameter(i, first);
            return;
        }
        if (first)
            for (int i = 0; i < n; ++i) {
                if (adamw == OptimizerImpl::Fused)
                    m_p.alloc(Param, 4); // state["step"], never freed
                m_p.alloc(state(i, 0), size(i));
                m_p.alloc(state(i, 1), size(i));
            }
        if (adamw == OptimizerImpl::ForLoop)
            for (int i = 0; i < n; ++i) {
                m_p.alloc(T1, size(i));
                m_p.alloc(T2, size(i));
                m_p.free(T1);
                m_p.free(T2);
            }
        if (adamw == OptimizerImpl::ForEach) {
            for (int i = 0; i < n; ++i)
                m_p.alloc(root(i), size(i));
            for (int i = n - 1; i >= 0; --i)
                m_p.free(root(i));
        }
    }

    // optimizer.py AdamW.step for one parameter (cs336basics.cpp cs336StepTemporaries): p.data -= lr * wd *
    // p.data (a temporary), state.get("m", zeros_like(grad)) (the default made even when the state exists,
    // then dropped), m_t = b1 * m + (1 - b1) * grad, the same for v_t with grad * grad, then p.data -=
    // alpha_t * m_t / (sqrt(v_t) + eps); m_t and v_t become the states, the old ones go. On the first step
    // m and v are the defaults, alive until the next parameter's rebinds them.
    void stepParameter(int i, bool first) {
        const double n = size(i);
        m_p.alloc(T1, n);
        m_p.free(T1);
        m_p.alloc(T2, n);
        if (!first)
            m_p.free(T2);
        m_p.alloc(T3, n);
        m_p.alloc(T4, n);
        m_p.alloc(T5, n);
        m_p.free(T3);
        m_p.free(T4);
        m_p.alloc(T3, n);
        if (!first)
            m_p.free(T3);
        m_p.alloc(T4, n);
        m_p.alloc(T6, n);
        m_p.alloc(T1, n);
        m_p.free(T6);
        m_p.alloc(T6, n);
        m_p.free(T4);
        m_p.free(T1);
        m_p.alloc(T1, n);
        m_p.alloc(T4, n);
        m_p.alloc(Gin, n);
        m_p.free(T4);
        m_p.alloc(T4, n);
        m_p.free(T1);
        m_p.free(Gin);
        m_p.free(T4);
        m_p.free(T2);
        m_p.free(T3);
        m_p.free(state(i, 0));
        m_p.free(state(i, 1));
        m_p.rename(T5, state(i, 0));
        m_p.rename(T6, state(i, 1));
    }

    // Parameter i's bytes, in model.parameters()' order: the embedding, each layer's q, k, v, output_proj,
    // w1, w2, w3, ln1 and ln2, ln_final, lm_head.
    double size(int i) const {
        const Dims& d = m_d;
        if (i == 0 || i == parameters(m_layers) - 1)
            return d.e * d.vocab * d.h;
        if (i == parameters(m_layers) - 2)
            return d.e * d.h;
        const int k = (i - 1) % kParamsPerLayer;
        return d.e * (k < 4 ? d.h * d.h : k < 7 ? d.h * d.f : d.h);
    }
    int grad(int i) const { return gradBase(m_layers) + i; }
    // A weight's gradient as its einsum's backward writes it (under autocast in its cast's dtype; the
    // cast, cached by autocast and saved by the einsum, goes with the einsum's other saved tensors).
    // `accumulated` follows once the node has released what it held.
    void weightGradient(int i, int castId) {
        if (!m_d.cast) {
            m_p.alloc(Gr, size(i));
            return;
        }
        m_p.alloc(Gw2, size(i) * m_d.m / m_d.e);
        m_p.free(kIds + castId);
    }
    // Then, under autocast, the cast's backward (ToCopyBackward0, next in autograd's ready queue: the
    // weight's cast was made after the input's) writes it in the parameter's dtype, keeping its strides;
    // AccumulateGrad (torch/csrc/autograd/functions/accumulate_grad.h, accumulateGrad) cannot take it as
    // the .grad, since the einsum's backward leaves it transposed, not in the parameter's layout: it
    // copies it (utils::clone_obey_contract), and the written one goes. Into a .grad that exists it is
    // added in place. Wedsonlin's traces show the copy for every einsum weight (24 x 7 + the head's).
    void accumulated(int i) {
        if (m_d.cast) {
            m_p.alloc(Gr, size(i));
            m_p.free(Gw2);
        }
        if (!m_accumulating)
            m_p.alloc(grad(i), size(i));
        m_p.free(Gr);
    }
    // Under autocast: a gradient through a cast's backward, written anew in the other dtype (`bytes`).
    void castUp(int id, double bytes) {
        if (!m_d.cast)
            return;
        m_p.alloc(Gc, bytes);
        m_p.free(id);
        m_p.rename(Gc, id);
    }
    // Under autocast: an einsum's saved cast of its input, once its backward has run.
    void freeCast(int layer, int slot) {
        if (m_d.cast)
            m_p.free(saved(layer, slot));
    }
    // Parameter i's gradient as its backward node writes it: kept as its .grad, or added into the .grad an
    // earlier micro-batch made.
    void gradient(int i) {
        if (m_accumulating) {
            m_p.alloc(Gw, size(i));
            m_p.free(Gw);
        } else {
            m_p.alloc(grad(i), size(i));
        }
    }
    int state(int i, int k) const { return stateBase(m_layers) + 2 * i + k; }
    // foreach AdamW's square root of parameter i's exp_avg_sq, in the list _foreach_sqrt returns.
    int root(int i) const { return stateBase(m_layers) + 2 * parameters(m_layers) + i; }

    // RMSNorm.forward: x.to(float32) (a copy for a 16-bit input), pow, mean, + eps, rsqrt, x * rms (the
    // copy goes as x is rebound), weight * x in fp32 (promoted), .to(in_dtype); the locals go on return.
    // `layer` and `which` (0: ln1 or ln_final, 1: ln2) name where autograd keeps its rsqrt and normalised x.
    void norm(int out, int layer, int which) {
        const Dims& d = m_d;
        if (d.e < 4)
            m_p.alloc(Xf, 4 * d.t * d.h);
        m_p.alloc(Pw, 4 * d.t * d.h);
        m_p.alloc(Mn, 4 * d.t);
        m_p.free(Pw);
        m_p.alloc(Me, 4 * d.t);
        m_p.free(Mn);
        m_p.alloc(Rs, 4 * d.t);
        m_p.free(Me);
        m_p.alloc(Xn, 4 * d.t * d.h);
        if (d.e < 4) {
            m_p.free(Xf);
            m_p.alloc(Wx, 4 * d.t * d.h);
            m_p.alloc(out, d.e * d.t * d.h);
            m_p.free(Wx);
        } else {
            m_p.alloc(out, 4 * d.t * d.h);
        }
        keep(Xn, layer, which ? SXn2 : SXn1); // saved by weight * x
        keep(Rs, layer, which ? SRs2 : SRs1); // saved by rsqrt (its output) and x * rms
    }

    // Linear.forward, einsum(x, weight) on an input of `inBytes` per element: under autocast the input cast
    // to the 16-bit dtype unless it is in it already, the weight's cast (each weight is used once per
    // forward, so the cast is new; under no_grad autocast's cache keeps it to the region's end), the output;
    // the casts go after.
    // In a training step under autocast the input's cast is saved (in `layer`'s `castSlot`) and the weight's,
    // cached, lives to the einsum's backward.
    void einsum(double inBytes, int out, double rows, double cols, int castId, int layer = -1,
                int castSlot = -1) {
        const Dims& d = m_d;
        const bool castInput = d.cast && inBytes != d.m;
        const bool kept = d.cachedCasts || m_training;
        if (castInput)
            m_p.alloc(Cin, d.m * d.t * cols);
        if (d.cast)
            m_p.alloc(kept ? kIds + castId : Cw, d.m * rows * cols);
        if (m_workspace > 0) { // cuBLAS's workspace, at the first matrix multiply
            m_p.alloc(Ws, m_workspace);
            m_workspace = 0;
        }
        m_p.alloc(out, d.m * d.t * rows);
        if (castInput && m_training && castSlot >= 0)
            keep(Cin, layer, castSlot);
        else if (castInput)
            m_p.free(Cin);
        if (d.cast && !kept)
            m_p.free(Cw);
    }

    // RotaryEmbedding.forward on Q or K (their heads views of the einsum's output): x1_rot = cos * x1 -
    // sin * x2 and x2_rot = sin * x1 + cos * x2, half a head each, in the buffer's dtype promoted with
    // the input's, then concatenated; the unrotated tensor goes as the caller rebinds it.
    void rope(int in, int out) {
        const Dims& d = m_d;
        for (int half : {X1, X2}) {
            m_p.alloc(R1, d.r * d.t * d.h / 2);
            m_p.alloc(R2, d.r * d.t * d.h / 2);
            m_p.alloc(half, d.r * d.t * d.h / 2);
            m_p.free(R1);
            m_p.free(R2);
        }
        m_p.alloc(out, d.r * d.t * d.h);
        m_p.free(X1);
        m_p.free(X2);
        m_p.free(in);
    }

    void attention(int l) {
        const Dims& d = m_d;
        const double scores = d.t * d.a * d.s; // per batch: heads x queries x keys
        const double rows = d.t * d.a;         // a row statistic per head and query
        einsum(d.e, Q, d.h, d.h, l * kCastsPerLayer + 0, l, SCq);
        einsum(d.e, K, d.h, d.h, l * kCastsPerLayer + 1, l, SCk);
        einsum(d.e, V, d.h, d.h, l * kCastsPerLayer + 2, l, SCv);
        rope(Q, Qr);
        rope(K, Kr);
        m_p.alloc(Iota, 8 * d.s);
        m_p.alloc(Mask, d.s * d.s);
        // scaled_dot_product_attention: einsum(Q, K) (both cast when RoPE wrote them wider), / sqrt(d_k),
        // torch.where(mask, scores, float("-inf")) with its 0-dim -inf.
        if (d.cast && d.r != d.m) {
            m_p.alloc(Cin, d.m * d.t * d.h);
            m_p.alloc(Cw, d.m * d.t * d.h);
        }
        m_p.alloc(S1, d.m * scores);
        if (d.cast && d.r != d.m) { // with autograd the einsum saves the casts, not Q and K
            keep(Cin, l, SCQr);
            keep(Cw, l, SCKr);
        }
        m_p.alloc(S2, d.m * scores);
        m_p.free(S1);
        m_p.alloc(Inf, d.m);
        m_p.alloc(S3, d.m * scores);
        m_p.free(Inf);
        m_p.free(S2);
        // nn_utils.softmax: x - max(x)[0] (the indices go at once, the values after the subtraction), exp
        // (fp32 under autocast, of R cast up, a 16-bit model's too), sum, E / sum.
        const double x = d.exp;
        m_p.alloc(Mv, d.m * rows);
        m_p.alloc(Mi, 8 * rows);
        keep(Mi, l, SMi); // max's backward scatters through its indices
        m_p.alloc(Rm, d.m * scores);
        m_p.free(Mv);
        if (x != d.m)
            m_p.alloc(Rc, x * scores);
        m_p.alloc(E, x * scores);
        if (x != d.m)
            m_p.free(Rc);
        m_p.alloc(Sm, x * rows);
        m_p.alloc(P, x * scores);
        keep(Sm, l, SSm); // the division saves both operands
        m_p.free(Rm);
        keep(E, l, SE); // exp saves its output
        // einsum(P, V): P cast to the 16-bit dtype under autocast; torch.einsum writes the batched product
        // and returns a copy of it in the pattern's layout.
        if (x != d.m)
            m_p.alloc(Pc, d.m * scores);
        m_p.alloc(O1, d.m * d.t * d.h);
        m_p.alloc(O2, d.m * d.t * d.h);
        m_p.free(O1);
        m_p.free(
            S3); // the function's locals: where's output and P (saved by the P @ V einsum: P, or its cast)
        if (x != d.m) {
            keep(Pc, l, SP);
            m_p.free(P);
        } else {
            keep(P, l, SP);
        }
        // rearrange(...).contiguous(), then output_proj; the attention's locals go on return.
        m_p.alloc(C, d.m * d.t * d.h);
        m_p.free(O2);
        einsum(d.m, A, d.h, d.h, l * kCastsPerLayer + 3);
        if (d.cast && d.r != d.m) {
            m_p.free(Qr);
            m_p.free(Kr);
        } else {
            keep(Qr, l, SQr); // the score einsum's inputs
            keep(Kr, l, SKr);
        }
        keep(V, l, SV);
        m_p.free(Iota);
        keep(Mask, l, SMask); // where's condition
        keep(C, l, SC);       // output_proj's input
    }

    // TransformerBlock.forward: x_attn = attn(ln1(x)), x + x_attn, ffn(ln2(...)), and the sum; the locals
    // (x_attn, the first sum, x_ffn) go on return.
    void block(int l) {
        const Dims& d = m_d;
        norm(Y1, l, 0);
        attention(l);
        keepUncast(Y1, l, SY1);         // the q, k and v einsums' input (or their casts)
        m_p.alloc(H1, d.e * d.t * d.h); // promoted: the residual stream keeps the parameters' dtype
        norm(Y2, l, 1);
        // SwiGLU.forward: w2(silu(w1(x)) * w3(x)), silu being x * sigmoid(x).
        einsum(d.e, G, d.f, d.h, l * kCastsPerLayer + 4, l, SC1);
        m_p.alloc(Sg, d.m * d.t * d.f);
        m_p.alloc(Si, d.m * d.t * d.f);
        keep(Sg, l, SSg); // sigmoid saves its output, x * sigmoid(x) both operands
        keep(G, l, SG);
        einsum(d.e, U, d.f, d.h, l * kCastsPerLayer + 6, l, SC3);
        m_p.alloc(Pr, d.m * d.t * d.f);
        keep(Si, l, SSi); // the product saves both operands
        keep(U, l, SU);
        einsum(d.m, Fo, d.h, d.f, l * kCastsPerLayer + 5);
        keep(Pr, l, SPr); // w2's input
        keepUncast(Y2, l, SY2); // w1's and w3's
        m_p.alloc(H2, d.e * d.t * d.h);
        m_p.free(A);
        keep(H1, l, SH1); // ln2's pow saved it
        m_p.free(Fo);
    }

    static int parameters(int layers) { return 3 + kParamsPerLayer * layers; }
    static int savedBase(int layers) { return kIds + layers * kCastsPerLayer + 1; }
    static int gradBase(int layers) { return savedBase(layers) + (layers + 1) * kSavedPerLayer; }
    static int stateBase(int layers) { return gradBase(layers) + parameters(layers); }
    int saved(int layer, int slot) const { return savedBase(m_layers) + layer * kSavedPerLayer + slot; }
    // An einsum's fp32 input, saved by it unless autocast casts it (the cast is saved instead).
    void keepUncast(int id, int layer, int slot) {
        if (m_d.cast)
            m_p.free(id);
        else
            keep(id, layer, slot);
    }
    // A tensor autograd saves stays to its layer's backward under another name; without autograd it goes.
    void keep(int id, int layer, int slot) {
        if (m_training)
            m_p.rename(id, saved(layer, slot));
        else
            m_p.free(id);
    }

    CachingAllocatorModel& m_a;
    TensorProgram& m_p;
    const Dims& m_d;
    int m_layers;
    bool m_training = false;
    bool m_checkpointed = false; // every block under torch.utils.checkpoint (a training step)
    double m_workspace = 0;
    bool m_everyBlock = false;
    double m_reservedByForward = 0, m_reservedByBackward = 0;
    bool m_accumulating = false;
};

} // namespace

namespace {

// A shape at a batch in the replay's terms: the parameters' dtype `e`, autocast's `m` (or e), RoPE's `r`.
Dims dimsOf(const Cs336Shape& s, double batch) {
    Dims d;
    d.s = s.sequence;
    d.t = batch * s.sequence;
    d.h = s.hidden;
    d.f = s.ffn;
    d.a = s.heads;
    d.vocab = s.vocab;
    d.e = s.weightBytes;
    d.cast = s.autocastBytes > 0 && s.autocastBytes != s.weightBytes;
    d.m = d.cast ? s.autocastBytes : s.weightBytes;
    d.r = std::max(d.e, d.m);
    d.exp = s.autocastBytes > 0 ? 4 : d.m;
    return d;
}

// What a replay is kept by: the dims, then the run's own settings.
std::vector<double> keyOf(const Dims& d, std::initializer_list<double> more) {
    std::vector<double> key{
        d.t, d.s, d.h, d.f, d.a, d.vocab, d.e, d.m, d.cast ? 1.0 : 0.0, d.cachedCasts ? 1.0 : 0.0, d.exp};
    key.insert(key.end(), more);
    return key;
}

// A scenario file can ask for anything: sizes past any GPU, or more layers than any model has, are not
// replayed (the fraction stands), so neither the sizes nor the time can run away.
bool replayable(const Dims& d, int layers, int maxLayers, double workspace, double device) {
    const double widest = std::max({d.h, d.f, d.vocab});
    return d.t > 0 && d.h > 0 && d.a > 0 && d.f > 0 && d.vocab > 0 && d.t * widest * 4 < 1e15 &&
           d.t * d.a * d.s * 4 < 1e15 && d.h * widest * 4 < 1e15 && workspace >= 0 && workspace < 1e12 &&
           device >= 0 && device < 1e18 && layers > 0 && layers <= maxLayers;
}

// The program `body` writes after the parameters and the batch's token ids, through a fresh allocator
// (expandable segments or not, the device's limit), kept by `key`: what it allocated and reserved.
template <typename Body>
Cs336Replay replayed(RecentResults<Cs336Replay>& kept, const std::vector<double>& key, const Dims& d,
                     int layers, bool training, bool expandableSegments, double device, Body body) {
    return kept.get(key, [&] {
        AllocatorSettings settings;
        settings.expandableSegments = expandableSegments;
        settings.deviceMemory = static_cast<std::uint64_t>(std::ceil(device));
        CachingAllocatorModel allocator{settings};
        TensorProgram p(allocator, Program::names(layers));
        p.stopAtFirstFailure();
        Program program(allocator, p, d, layers, training);
        program.allocateParameters();
        p.alloc(Tokens, 8 * d.t);
        Cs336Replay one;
        body(program, one);
        one.replayed = true;
        one.allocated = p.peakAllocated();
        one.reserved = p.peakReserved();
        one.outOfMemory = p.outOfMemory();
        return one;
    });
}

// Out of memory a replay stops at its first failed request: what it needs is what it reserves on a device
// without a limit (a GPU that would hold it), the figure a plan that does not fit shows.
template <typename Run, typename Replay>
Cs336Replay beyondTheDevice(const Cs336Replay& r, const Run& run, bool beyond, Replay replay) {
    if (!r.outOfMemory || !beyond)
        return r;
    Run unlimited = run;
    unlimited.device = 0;
    Cs336Replay whole = replay(unlimited, false);
    whole.reserved = std::max(whole.reserved, r.reserved);
    whole.outOfMemory = true;
    return whole;
}

} // namespace

Cs336Replay cs336ForwardReplay(const Cs336ForwardRun& run, bool beyond) {
    Dims d = dimsOf(run.shape, run.batch);
    d.cachedCasts = d.cast && run.cachedCasts && !run.graph;
    // With autograd on, the training step's forward (fp32 parameters only), which leaves every block's saved
    // tensors behind: the step's bound on its passes.
    const int most = run.graph ? kMaxBlockPasses : d.cachedCasts ? kMaxCachedCastLayers : kMaxReplayedLayers;
    if ((run.graph && run.shape.weightBytes != 4) ||
        !replayable(d, run.layers, most, run.workspace, run.device))
        return {};
    const std::vector<double> key = keyOf(
        d, {run.workspace, run.expandableSegments ? 1.0 : 0.0, static_cast<double>(run.layers), run.device,
            run.graph ? 1.0 : 0.0, run.everyBlock ? 1.0 : 0.0, run.graph && run.previousGraph ? 1.0 : 0.0});
    static RecentResults<Cs336Replay> kept;
    const Cs336Replay r = replayed(kept, key, d, run.layers, run.graph, run.expandableSegments, run.device,
                                   [&](Program& forward, Cs336Replay&) {
                                       forward.run(run.workspace, run.everyBlock);
                                       if (run.graph && run.previousGraph) {
                                           forward.keepEverything(); // the output the loop still holds
                                           forward.run(0, run.everyBlock);
                                       }
                                   });
    return beyondTheDevice(r, run, beyond, cs336ForwardReplay);
}

Cs336Replay cs336StepReplay(const Cs336StepRun& run, bool beyond) {
    const Dims d = dimsOf(run.shape, run.batch);
    // fp32 parameters (under autocast or not): a 16-bit model's own dtypes are not written here.
    if (run.shape.weightBytes != 4 || run.microBatches < 1 || run.microBatches > kMaxBlockPasses ||
        !replayable(d, run.layers, kMaxBlockPasses / run.microBatches / (run.firstStep ? 1 : 2),
                    run.workspace, run.device))
        return {};
    const std::vector<double> key = keyOf(
        d, {run.workspace, run.expandableSegments ? 1.0 : 0.0, static_cast<double>(run.layers), run.device,
            run.firstStep ? 1.0 : 0.0, static_cast<double>(run.microBatches),
            static_cast<double>(run.zeroGrad), static_cast<double>(run.adamw), run.checkpointed ? 1.0 : 0.0});
    static RecentResults<Cs336Replay> kept;
    const Cs336Replay r =
        replayed(kept, key, d, run.layers, true, run.expandableSegments, run.device,
                 [&](Program& step, Cs336Replay& one) {
                     // A later step follows a first one, whose segments stay cached (the allocator hands none
                     // back): what the run reserves is the most over both.
                     if (run.checkpointed)
                         step.checkpointEveryBlock();
                     step.trainingStep(run.workspace, true, run.microBatches, run.zeroGrad, run.adamw);
                     if (!run.firstStep)
                         step.trainingStep(0, false, run.microBatches, run.zeroGrad, run.adamw);
                     if (run.firstStep) { // a later step's cache is the first step's from its start
                         one.reservedByForward = step.reservedByForward();
                         one.reservedByBackward = step.reservedByBackward();
                     }
                 });
    return beyondTheDevice(r, run, beyond, cs336StepReplay);
}

std::optional<Scenario> cs336CodeAsRecorded(const Scenario& sc, const Calibration& c) {
    if (c.code != Framework::Cs336Basics ||
        (plannedFramework(sc) == Framework::Cs336Basics && !c.codeTables) || !cs336CanRun(sc))
        return std::nullopt;
    Scenario asRecorded = withPlannedFramework(sc, Framework::Cs336Basics);
    if (sc.mode == Mode::Training && c.codeOptimizer && c.stepScratchAppliesTo(sc.training))
        asRecorded.training.optimizerImpl = OptimizerImpl::Cs336Basics;
    return asRecorded;
}

CodeTables codeTablesFor(const Scenario& sc, const Calibration& c) {
    if (!c.present || !c.codeTables || c.code != Framework::Cs336Basics || !c.measuredIn(sc.keptAs()) ||
        plannedFramework(sc) == Framework::Cs336Basics)
        return CodeTables::NotFitted;
    return cs336CanRun(sc) ? CodeTables::Planned : CodeTables::CannotRun;
}

bool cs336CanRun(const Scenario& sc) {
    const ModelSpec& m = sc.model;
    const ClusterSettings& c = sc.cluster;
    const TrainingSettings& t = sc.training;
    return m.known && !m.isMoe() && !m.mla && m.gatedMlp && m.linearLayers.empty() && m.kvHeads == m.heads &&
           m.headDim * m.heads == m.hidden && c.tensorParallel == 1 && c.pipelineParallel == 1 &&
           c.contextParallel == 1 && c.expertParallel == 1 &&
           (sc.mode != Mode::Training ||
            (t.fineTuning.method == FineTuneMethod::Full && t.checkpointEvery <= 1 &&
             (t.checkpointing == Checkpointing::None || t.checkpointing == Checkpointing::Full)));
}

std::optional<Cs336StepRun> cs336StepRunOf(const Scenario& sc, double workspace, double device) {
    const TrainingSettings& tr = sc.training;
    const ClusterSettings& c = sc.cluster;
    if (sc.mode != Mode::Training || tr.framework != Framework::Cs336Basics || !sc.model.known ||
        tr.bytes.weights != 4 || tr.optimizer != Optimizer::AdamW || tr.bytesOverridden ||
        tr.optimizerStatesGiven >= 0 || tr.compile || c.numGpus != 1 ||
        !(tr.checkpointing == Checkpointing::None ||
          (tr.checkpointing == Checkpointing::Full && tr.checkpointEvery <= 1 && tr.autocastBytes == 0)) ||
        c.tensorParallel != 1 || c.pipelineParallel != 1)
        return std::nullopt;
    Cs336StepRun run;
    run.shape = cs336ShapeOf(sc.model, tr.sequenceLength, 4, tr.autocastBytes);
    run.layers = sc.model.layers;
    run.batch = tr.microBatchSize;
    run.workspace = workspace;
    run.firstStep = tr.firstStep;
    run.microBatches = tr.gradientAccumulationSteps;
    run.zeroGrad = tr.zeroGrad;
    run.adamw = tr.optimizerImpl;
    run.checkpointed = tr.checkpointing == Checkpointing::Full;
    run.expandableSegments = c.expandableSegments;
    run.device = std::max(0.0, device);
    return run;
}

std::optional<Cs336ForwardRun> cs336ForwardRunOf(const Scenario& sc, double workspace, double device) {
    const InferenceSettings& in = sc.inference;
    if (sc.mode != Mode::Inference || in.engine != Engine::None || in.framework != Framework::Cs336Basics ||
        (in.gradEnabled && in.weightBytes < 4) || !sc.model.known || sc.cluster.tensorParallel != 1 ||
        sc.cluster.pipelineParallel != 1)
        return std::nullopt;
    Cs336ForwardRun run;
    run.shape = cs336ShapeOf(sc.model, in.contextLength, std::min(4.0, in.weightBytes), in.autocastBytes);
    run.layers = sc.model.layers;
    run.batch = in.batchSize;
    run.workspace = workspace;
    run.cachedCasts = !in.inferenceMode; // torch.no_grad keeps autocast's cache; inference_mode does not
    run.graph = in.gradEnabled;
    run.previousGraph = in.previousOutputHeld;
    run.expandableSegments = sc.cluster.expandableSegments;
    run.device = std::max(0.0, device);
    return run;
}

} // namespace headroom
