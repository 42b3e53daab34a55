// SPDX-License-Identifier: GPL-3.0-or-later
// cs336_basics' forward without autograd through the caching allocator. The order below is the code's
// (cs336-basics/cs336_basics/model.py and nn_utils.py at Wedsonlin/assignment2-systems 882ca8d, as
// docs/frameworks.md cites them): each tensor is allocated when the op that writes it runs and freed when
// its last Python reference goes (a rebound local, a function's return). Autocast's dtypes are
// aten/src/ATen/autocast_mode.cpp's: einsum on the 16-bit list (its inputs cast, a weight's cast cached
// under torch.no_grad but not under torch.inference_mode), exp and sum on the fp32 list, the rest promoted.
#include "core/plan/cs336replay.h"

#include "core/plan/tensorprogram.h"
#include "core/recentresults.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace headroom {

namespace {

constexpr int kMaxReplayedLayers = 128; // more than any published model has (Llama 3.1 405B: 126)
// With autocast's cache kept every block leaves its casts behind, so every block is replayed: up to twice
// the 2.7B model's 32 (CS336's largest has 48); beyond, the fraction stands (a bound on the time).
constexpr int kMaxCachedCastLayers = 64;
constexpr int kCastsPerLayer = 7;       // q, k, v, output_proj, w1, w2, w3

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
    kIds
};

struct Dims {
    double t = 0; // tokens in the batch
    double h = 0, f = 0, a = 0, s = 0, vocab = 0;
    double e = 4;      // the parameters' and the residual stream's dtype
    double m = 4;      // an einsum's output: autocast's dtype, else e
    bool cast = false; // autocast below the parameters' dtype
    bool cachedCasts = false;
    double r = 4; // RoPE's output: its fp32 or 16-bit buffer (the model's dtype) times Q, promoted
};

class Forward {
public:
    Forward(CachingAllocatorModel& a, TensorProgram& p, const Dims& d, int layers)
        : m_a(a), m_p(p), m_d(d), m_layers(layers) {}

    void parameters() {
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

    // BasicsTransformerLM.forward on the batch's token ids; the caller drops the logits.
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
            block(l);   // its input: the embedding's output, then the last block's
            if (l > 0)
                m_p.free(X); // `x = layer(x)` drops the block's input once it returns
            m_p.rename(H2, X);
            if (lastOne)
                break;
            if (d.cachedCasts || m_everyBlock)
                continue;
            after.emplace_back(m_a.events().size(), m_a.freeBlocks());
            if (l >= 2 && after[static_cast<std::size_t>(l)] == after[static_cast<std::size_t>(l - 2)] &&
                l + 1 < m_layers) {
                if ((m_layers - 1 - l) % 2 == 0)
                    break;      // the state after the last block is this one
                lastOne = true; // one block more brings it
            }
        }
        norm(Yf);
        m_p.free(X);
        einsum(d.e, L, d.vocab, d.h, m_layers * kCastsPerLayer);
        m_p.free(Yf);
        m_p.free(Emb);
        m_p.free(L);
        // Leaving the autocast region clears its cache of weight casts.
        for (int i = 0; i <= m_layers * kCastsPerLayer; ++i)
            m_p.free(kIds + i);
    }

private:
    // RMSNorm.forward: x.to(float32) (a copy for a 16-bit input), pow, mean, + eps, rsqrt, x * rms (the
    // copy goes as x is rebound), weight * x in fp32 (promoted), .to(in_dtype); the locals go on return.
    void norm(int out) {
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
        m_p.free(Xn);
        m_p.free(Rs);
    }

    // Linear.forward, einsum(x, weight) on an input of `inBytes` per element: under autocast the input cast
    // to the 16-bit dtype unless it is in it already, the weight's cast (each weight is used once per
    // forward, so the cast is new; under no_grad autocast's cache keeps it to the region's end), the output;
    // the casts go after.
    void einsum(double inBytes, int out, double rows, double cols, int castId) {
        const Dims& d = m_d;
        const bool castInput = d.cast && inBytes != d.m;
        if (castInput)
            m_p.alloc(Cin, d.m * d.t * cols);
        if (d.cast)
            m_p.alloc(d.cachedCasts ? kIds + castId : Cw, d.m * rows * cols);
        if (m_workspace > 0) { // cuBLAS's workspace, at the first matrix multiply
            m_p.alloc(Ws, m_workspace);
            m_workspace = 0;
        }
        m_p.alloc(out, d.m * d.t * rows);
        if (castInput)
            m_p.free(Cin);
        if (d.cast && !d.cachedCasts)
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
        einsum(d.e, Q, d.h, d.h, l * kCastsPerLayer + 0);
        einsum(d.e, K, d.h, d.h, l * kCastsPerLayer + 1);
        einsum(d.e, V, d.h, d.h, l * kCastsPerLayer + 2);
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
        if (d.cast && d.r != d.m) {
            m_p.free(Cin);
            m_p.free(Cw);
        }
        m_p.alloc(S2, d.m * scores);
        m_p.free(S1);
        m_p.alloc(Inf, d.m);
        m_p.alloc(S3, d.m * scores);
        m_p.free(Inf);
        m_p.free(S2);
        // nn_utils.softmax: x - max(x)[0] (the indices go at once, the values after the subtraction), exp
        // (fp32 under autocast, of R cast up), sum, E / sum.
        const double x = d.cast ? 4 : d.m;
        m_p.alloc(Mv, d.m * rows);
        m_p.alloc(Mi, 8 * rows);
        m_p.free(Mi);
        m_p.alloc(Rm, d.m * scores);
        m_p.free(Mv);
        if (x != d.m)
            m_p.alloc(Rc, x * scores);
        m_p.alloc(E, x * scores);
        if (x != d.m)
            m_p.free(Rc);
        m_p.alloc(Sm, x * rows);
        m_p.alloc(P, x * scores);
        m_p.free(Sm);
        m_p.free(Rm);
        m_p.free(E);
        // einsum(P, V): P cast to the 16-bit dtype under autocast; torch.einsum writes the batched product
        // and returns a copy of it in the pattern's layout.
        if (x != d.m)
            m_p.alloc(Pc, d.m * scores);
        m_p.alloc(O1, d.m * d.t * d.h);
        m_p.alloc(O2, d.m * d.t * d.h);
        m_p.free(O1);
        if (x != d.m)
            m_p.free(Pc);
        m_p.free(S3); // the function's locals: where's output and P
        m_p.free(P);
        // rearrange(...).contiguous(), then output_proj; the attention's locals go on return.
        m_p.alloc(C, d.m * d.t * d.h);
        m_p.free(O2);
        einsum(d.m, A, d.h, d.h, l * kCastsPerLayer + 3);
        for (int id : {Qr, Kr, V, Iota, Mask, C})
            m_p.free(id);
    }

    // TransformerBlock.forward: x_attn = attn(ln1(x)), x + x_attn, ffn(ln2(...)), and the sum; the locals
    // (x_attn, the first sum, x_ffn) go on return.
    void block(int l) {
        const Dims& d = m_d;
        norm(Y1);
        attention(l);
        m_p.free(Y1);
        m_p.alloc(H1, d.e * d.t * d.h); // promoted: the residual stream keeps the parameters' dtype
        norm(Y2);
        // SwiGLU.forward: w2(silu(w1(x)) * w3(x)), silu being x * sigmoid(x).
        einsum(d.e, G, d.f, d.h, l * kCastsPerLayer + 4);
        m_p.alloc(Sg, d.m * d.t * d.f);
        m_p.alloc(Si, d.m * d.t * d.f);
        m_p.free(Sg);
        m_p.free(G);
        einsum(d.e, U, d.f, d.h, l * kCastsPerLayer + 6);
        m_p.alloc(Pr, d.m * d.t * d.f);
        m_p.free(Si);
        m_p.free(U);
        einsum(d.m, Fo, d.h, d.f, l * kCastsPerLayer + 5);
        m_p.free(Pr);
        m_p.free(Y2);
        m_p.alloc(H2, d.e * d.t * d.h);
        m_p.free(A);
        m_p.free(H1);
        m_p.free(Fo);
    }

    CachingAllocatorModel& m_a;
    TensorProgram& m_p;
    const Dims& m_d;
    int m_layers;
    double m_workspace = 0;
    bool m_everyBlock = false;
};

} // namespace

ForwardReplay cs336ForwardReplay(const Cs336ForwardRun& run, bool beyond) {
    ForwardReplay out;
    const Cs336Shape& s = run.shape;
    Dims d;
    d.s = s.sequence;
    d.t = run.batch * s.sequence;
    d.h = s.hidden;
    d.f = s.ffn;
    d.a = s.heads;
    d.vocab = s.vocab;
    d.e = s.weightBytes;
    d.cast = s.autocastBytes > 0 && s.autocastBytes != s.weightBytes;
    d.m = d.cast ? s.autocastBytes : s.weightBytes;
    d.cachedCasts = d.cast && run.cachedCasts;
    d.r = std::max(d.e, d.m);
    // A scenario file can ask for anything: sizes past any GPU, or more layers than any model has, are not
    // replayed (the fraction stands), so neither the sizes nor the time can run away.
    const double widest = std::max({d.h, d.f, d.vocab});
    if (!(d.t > 0 && d.h > 0 && d.a > 0 && d.f > 0 && d.vocab > 0 && d.t * widest * 4 < 1e15 &&
          d.t * d.a * d.s * 4 < 1e15 && d.h * widest * 4 < 1e15 && run.workspace >= 0 &&
          run.workspace < 1e12 && run.device >= 0 && run.device < 1e18) ||
        run.layers <= 0 || run.layers > (d.cachedCasts ? kMaxCachedCastLayers : kMaxReplayedLayers))
        return out;
    std::vector<double> key{d.t,
                            d.s,
                            d.h,
                            d.f,
                            d.a,
                            d.vocab,
                            d.e,
                            d.m,
                            d.cast ? 1.0 : 0.0,
                            d.cachedCasts ? 1.0 : 0.0,
                            run.workspace,
                            run.expandableSegments ? 1.0 : 0.0,
                            static_cast<double>(run.layers),
                            run.device};
    static RecentResults<ForwardReplay> kept;
    const ForwardReplay r = kept.get(key, [&] {
        AllocatorSettings settings;
        settings.expandableSegments = run.expandableSegments;
        settings.deviceMemory = static_cast<std::uint64_t>(std::ceil(run.device));
        CachingAllocatorModel allocator{settings};
        TensorProgram p(allocator, kIds + run.layers * kCastsPerLayer + 1);
        p.stopAtFirstFailure();
        Forward forward(allocator, p, d, run.layers);
        forward.parameters();
        p.alloc(Tokens, 8 * d.t);
        forward.run(run.workspace, run.everyBlock);
        ForwardReplay one;
        one.replayed = true;
        one.allocated = p.peakAllocated();
        one.reserved = p.peakReserved();
        one.outOfMemory = p.outOfMemory();
        return one;
    });
    if (!r.outOfMemory || !beyond)
        return r;
    // Out of memory the forward stops at its first failed request: what it needs is what it reserves on a
    // device without a limit (a GPU that would hold it), the figure a plan that does not fit shows.
    Cs336ForwardRun unlimited = run;
    unlimited.device = 0;
    ForwardReplay whole = cs336ForwardReplay(unlimited, false);
    whole.reserved = std::max(whole.reserved, r.reserved);
    whole.outOfMemory = true;
    return whole;
}

std::optional<Cs336ForwardRun> cs336ForwardRunOf(const Scenario& sc, double workspace, double device) {
    const InferenceSettings& in = sc.inference;
    if (sc.mode != Mode::Inference || in.engine != Engine::None || in.framework != Framework::Cs336Basics ||
        in.gradEnabled || (sc.calibration.present && sc.calibration.measuredIn(sc.keptAs())) ||
        !sc.model.known || sc.cluster.tensorParallel != 1 || sc.cluster.pipelineParallel != 1)
        return std::nullopt;
    Cs336ForwardRun run;
    run.shape = cs336ShapeOf(sc.model, in.contextLength, std::min(4.0, in.weightBytes), in.autocastBytes);
    run.layers = sc.model.layers;
    run.batch = in.batchSize;
    run.workspace = workspace;
    run.cachedCasts = !in.inferenceMode; // torch.no_grad keeps autocast's cache; inference_mode does not
    run.expandableSegments = sc.cluster.expandableSegments;
    run.device = std::max(0.0, device);
    return run;
}

} // namespace headroom
