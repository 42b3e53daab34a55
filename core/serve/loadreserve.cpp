// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/serve/loadreserve.h"

#include "core/allocator/cachingallocator.h"
#include "core/checkednumbers.h"
#include "core/plan/estimator.h"
#include "core/plan/finetuning.h"
#include "core/recentresults.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace headroom {

namespace {

using u64 = std::uint64_t;

// One tensor the load allocates, or (negative) the release of the tensor allocated `-bytes` entries
// before: the rotary table's intermediates are freed as soon as it is built.
struct Step {
    double bytes = 0;
    int freeOf = -1; // index of the allocation this step frees; -1: an allocation
};

// A linear layer's tensors on one rank as the engine creates them: the weight, then (quantised) its
// scales, zero points and group indices as one more tensor (they are separate parameters; together they
// are a few percent of the weight, so their own rounding is second order).
void addLinear(std::vector<Step>& out, const Quantization* q, bool skipped, double elementBytes, u64 rows,
               u64 cols) {
    if (rows == 0 || cols == 0)
        return;
    const double n = static_cast<double>(rows) * static_cast<double>(cols);
    if (!q || !q->active() || skipped) {
        out.push_back({elementBytes * n});
        return;
    }
    const double whole = q->matrixBytes(rows, cols);
    double packed = n;
    if (q->method == Quantization::Method::Mxfp4)
        packed = n / 2;
    else if (q->method == Quantization::Method::Int)
        packed = n * q->bits / 8;
    out.push_back({packed});
    if (whole > packed)
        out.push_back({whole - packed});
}

// Tensor parallelism as the engines split a linear layer: the output projections (attention's o_proj,
// the MLP's down_proj, a linear-attention block's out_proj) by their input, DeepSeek's low-rank
// down-projections (q_a_proj, kv_a_proj_with_mqa) not at all, the rest by their output.
enum class Split { Rows, Columns, None };
Split splitOf(const std::string& name) {
    if (name == "o_proj" || name == "down_proj" || name == "out_proj")
        return Split::Columns;
    if (name.find("_a_proj") != std::string::npos)
        return Split::None;
    return Split::Rows;
}

u64 part(u64 n, u64 t) {
    return std::max<u64>(1, n / std::max<u64>(1, t));
}

// The load's steps in order; `buffers`: the bytes of what stays allocated but is no parameter (and so in no
// count of the weights).
std::vector<Step> loadOrder(const Scenario& sc, int firstLayer, int layers, bool firstStage, bool lastStage,
                            double& buffers) {
    std::vector<Step> out;
    buffers = 0;
    const ModelSpec& m = sc.model;
    const ClusterSettings& c = sc.cluster;
    const double eb = sc.inference.weightBytes;
    const u64 t = static_cast<u64>(std::max(1, c.tensorParallel));
    const u64 h = static_cast<u64>(m.hidden);
    const Quantization* q = weightsStayQuantised(sc) ? &m.quantization : nullptr;
    // VocabParallelEmbedding and ParallelLMHead pad the vocabulary to a multiple of 64 and give each rank
    // an equal slice (python/sglang/srt/layers/vocab_parallel_embedding.py, DEFAULT_VOCAB_PADDING_SIZE).
    const u64 vocab = (static_cast<u64>(m.vocab) + 63) / 64 * 64;
    const double vocabSlice = eb * static_cast<double>((vocab + t - 1) / t) * static_cast<double>(h);
    if (firstStage) {
        out.push_back({vocabSlice});
        if (m.learnedPositions)
            out.push_back({eb * static_cast<double>(m.maxPositions) * static_cast<double>(h)});
    }
    const bool ep = c.expertParallel > 1;
    bool rope = false;
    for (int l = firstLayer; l < firstLayer + layers; ++l) {
        const std::string prefix = "model.layers." + std::to_string(l) + ".";
        const LayerParams lp = m.layerParams(l);
        const std::vector<LinearShape> linears =
            layerLinears(m, lp.mlpWidth, 0, m.isLinearLayer(l), m.hasMixer(l));
        auto skipped = [&](const std::string& module) { return q && q->skips(prefix + module); };
        // Attention: q, k and v fused into one QKVParallelLinear (K and V heads replicated when there are
        // fewer than ranks); the MLP's gate and up into one MergedColumnParallelLinear.
        u64 qkvRows = 0;
        u64 gateUpRows = 0;
        for (const LinearShape& lin : linears) {
            const bool kv = lin.name == "k_proj" || lin.name == "v_proj";
            if (lin.name == "q_proj" || kv) {
                qkvRows +=
                    kv ? part(static_cast<u64>(m.kvHeads), t) * static_cast<u64>(m.headDim) : lin.out / t;
                if (lin.name == "v_proj") {
                    addLinear(out, q, skipped("self_attn.q_proj"), eb, qkvRows, h);
                    if (m.qkvBias) // Qwen2's q, k and v biases, one 16-bit tensor
                        out.push_back({eb * static_cast<double>(qkvRows)});
                }
                continue;
            }
            if (lin.name == "gate_proj" || (lin.name == "up_proj" && m.gatedMlp)) {
                gateUpRows += lin.out / t;
                if (lin.name == "up_proj")
                    addLinear(out, q, skipped("mlp.gate_proj"), eb, gateUpRows, h);
                continue;
            }
            const Split s = splitOf(lin.name);
            addLinear(out, q, skipped("self_attn." + lin.name), eb,
                      s == Split::Rows ? part(lin.out, t) : lin.out,
                      s == Split::Columns ? part(lin.in, t) : lin.in);
            if (!rope && m.hasMixer(l) && !m.isLinearLayer(l) && lin.name == "o_proj" &&
                m.ropeCacheRows > 0) {
                // The model's rotary table (get_rope caches it; its rows and width as vLLM's, whose
                // rotary_embedding.py SGLang's follows: ModelSpec::ropeCacheRows), built on the GPU in the
                // first attention layer: positions, their angles, cos and sin, then the fp32 table
                // (rotary_embedding.py _compute_cos_sin_cache; kept in fp32 on CUDA), the rest freed.
                rope = true;
                const double p = m.ropeCacheRows;
                const double d = m.ropeCacheDim;
                const int base = static_cast<int>(out.size());
                out.push_back({4 * p});         // t = arange(max_position)
                out.push_back({4 * p * d / 2}); // freqs
                out.push_back({4 * p * d / 2}); // cos
                out.push_back({4 * p * d / 2}); // sin
                out.push_back({4 * p * d});     // the table
                buffers += 4 * p * d;
                for (int i = base; i < base + 4; ++i)
                    out.push_back({0, i});
            }
        }
        if (lp.isMoe()) {
            // FusedMoE (layers/moe/fused_moe_triton/layer.py create_weights): every local expert's gate
            // and up stacked in w13, their down projections in w2; tensor parallelism slices each expert,
            // expert parallelism deals whole experts out.
            const u64 experts = ep ? part(static_cast<u64>(lp.experts), static_cast<u64>(c.expertParallel))
                                   : static_cast<u64>(lp.experts);
            const u64 width = ep ? static_cast<u64>(m.moeFfn) : part(static_cast<u64>(m.moeFfn), t);
            std::vector<Step> one;
            addLinear(one, q, skipped("mlp.experts.0.gate_proj"), eb, (m.gatedMlp ? 2 : 1) * width, h);
            for (const Step& s : one)
                out.push_back({s.bytes * static_cast<double>(experts)});
            one.clear();
            addLinear(one, q, skipped("mlp.experts.0.down_proj"), eb, h, width);
            for (const Step& s : one)
                out.push_back({s.bytes * static_cast<double>(experts)});
            out.push_back({eb * static_cast<double>(lp.router)}); // the router, replicated, 16-bit
        }
        if (lp.norms > 0) // the layer's norms, small blocks
            out.push_back({eb * static_cast<double>(lp.norms)});
    }
    if (lastStage) {
        out.push_back({eb * static_cast<double>(m.finalNormParams())});
        if (!m.tiedEmbeddings || c.pipelineParallel > 1)
            out.push_back({vocabSlice});
    }
    return out;
}

} // namespace

double loadReservedBytes(const Scenario& sc, int firstLayer, int layers, bool firstStage, bool lastStage) {
    // More layers than any published model has are not replayed (a scenario file can ask for 100,000).
    if (!sc.model.known || layers < 0 || layers > 512)
        return 0;
    double buffers = 0;
    const std::vector<Step> steps = loadOrder(sc, firstLayer, layers, firstStage, lastStage, buffers);
    double sum = 0;
    for (const Step& s : steps)
        sum += s.bytes;
    if (!(sum > 0 && sum < 1e15))
        return 0;
    // The result depends on the tensors alone, and a sweep asks for the same load many times: the last few
    // are kept, keyed by the sizes.
    std::vector<double> key;
    key.reserve(2 * steps.size());
    for (const Step& s : steps) {
        key.push_back(s.bytes);
        key.push_back(s.freeOf);
    }
    static RecentResults<double> kept;
    return kept.get(std::move(key), [&] {
        CachingAllocatorModel a{AllocatorSettings{}};
        std::vector<u64> at(steps.size(), 0);
        for (std::size_t i = 0; i < steps.size(); ++i) {
            const Step& s = steps[i];
            if (s.freeOf >= 0) {
                a.free(at[static_cast<std::size_t>(s.freeOf)], i);
                continue;
            }
            at[i] = a.malloc(std::max<u64>(1, static_cast<u64>(clampToInt64(std::round(s.bytes)))), 0, i)
                        .value_or(0);
        }
        // get_available_gpu_memory empties the cache first: segments with no live block go back to the
        // driver.
        a.emptyCache(steps.size());
        // What the load holds beyond the parameters' bytes: the segments' slack (the allocator's own count of
        // allocated bytes includes a block's unsplit remainder, so the tensors' sizes are summed here), and
        // the rotary table, which is a buffer and no parameter.
        double live = 0;
        for (std::size_t i = 0; i < steps.size(); ++i)
            if (steps[i].freeOf < 0)
                live += steps[i].bytes;
        for (const Step& s : steps)
            if (s.freeOf >= 0)
                live -= steps[static_cast<std::size_t>(s.freeOf)].bytes;
        return static_cast<double>(a.reserved()) - (live - buffers);
    });
}

} // namespace headroom
