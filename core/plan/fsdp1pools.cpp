// SPDX-License-Identifier: GPL-3.0-or-later
// FSDP1's wrap and its streams, replayed through the caching allocator's model. Read at torch 2.2 (what
// Answer.AI's benchmarks of March 2024 ran): torch/distributed/fsdp/_init_utils.py
// (_init_param_handle_from_module), _flat_param.py (FlatParamHandle: flatten_tensors_into_flat_param,
// shard, _get_shard, _alloc_padded_unsharded_flat_param), _runtime_utils.py (_unshard on the unshard
// stream, _reduce_grad on the post-backward stream), torch/csrc/distributed/c10d/comm.cpp
// (broadcast_coalesced) and torch/distributed/utils.py (_sync_params_and_buffers).
#include "core/plan/fsdp1pools.h"

#include "core/allocator/cachingallocator.h"
#include "core/plan/finetuning.h"
#include "core/recentresults.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <utility>
#include <vector>

namespace headroom {

namespace {

using u64 = std::uint64_t;

// The allocator's streams: the compute (default) stream, FSDP's unshard stream (every all-gather's output is
// allocated there) and its post-backward stream (the reduce-scatter's output, the sharded gradient).
constexpr std::int64_t kDefault = 0, kUnshard = 1, kPostBackward = 2;
// With CPUOffload, the pre-unshard stream copies a unit's shard from host memory before its all-gather
// (FlatParamHandle.pre_unshard: flat_param_to(device)).
constexpr std::int64_t kPreUnshard = 3;
// _sync_params_and_buffers' PARAM_BROADCAST_BUCKET_SIZE (torch/distributed/fsdp/_init_utils.py).
constexpr double kBroadcastBucket = 250.0 * 1024 * 1024;

struct Unit {
    std::vector<double> tensors; // each parameter's bytes, in the module's order
    std::vector<double> beside;  // moved with the unit, not flattened (bitsandbytes' quant_state)
    std::vector<double> buffers; // the module's buffers: moved with it, never sharded nor offloaded
    bool trainable = false;
    int layer = -1; // the decoder layer it belongs to (-1: the root)
};

u64 bytes(double b) {
    return static_cast<u64>(std::ceil(std::max(0.0, b)));
}

class Replay {
public:
    // `device`: what the driver can give PyTorch (0: unlimited); near it the allocator frees its cached
    // segments and retries before it fails, as PyTorch's does.
    Replay(bool expandable, int shards, bool offload, double device)
        : m_a([&] {
              AllocatorSettings s;
              s.expandableSegments = expandable;
              s.deviceMemory = bytes(device);
              return s;
          }()),
          m_shards(std::max(1, shards)), m_offload(offload) {}

    // One unit's FSDP construction on rank 0: its parameters moved to the GPU one by one
    // (_move_module_to_device), broadcast in flattened buckets of at least 250 MiB with two in flight
    // (broadcast_coalesced: a bucket closes once it reaches the size; each is flatten_dense_tensors'
    // copy), flattened into one FlatParameter (torch.cat), rank 0's shard cloned from it (_get_shard) and
    // the flat storage freed (shard: _resize_(0)); the original parameters go when the constructor's
    // list of them does. Returns the shard's bytes.
    double wrap(const Unit& u) {
        std::vector<u64> moved;
        for (double t : u.tensors)
            moved.push_back(malloc(t, kDefault));
        for (double t : u.beside)
            malloc(t, kDefault); // kept: the quantisation state stays whole on every rank
        for (double t : u.buffers)
            malloc(t, kDefault);
        std::deque<u64> inFlight;
        double bucket = 0, flat = 0;
        auto send = [&] {
            if (inFlight.size() >= 2) {
                m_a.free(inFlight.front(), 0);
                inFlight.pop_front();
            }
            inFlight.push_back(malloc(bucket, kDefault));
            bucket = 0;
        };
        for (double t : u.tensors) {
            bucket += t;
            flat += t;
            if (bucket >= kBroadcastBucket)
                send();
        }
        if (bucket > 0)
            send();
        for (u64 b : inFlight)
            m_a.free(b, 0);
        const u64 whole = malloc(flat, kDefault);
        // NO_SHARD keeps the flat parameter whole (shard: `if not self.uses_sharded_strategy`).
        const double shard = m_shards == 1 ? flat : std::ceil(flat / m_shards);
        u64 kept = whole;
        if (m_shards > 1) {
            kept = malloc(shard, kDefault);
            m_a.free(whole, 0);
        }
        // CPUOffload(offload_params=True): _init_param_handle_from_params moves the shard to host memory
        // as soon as it is made (handle.flat_param_to(cpu)).
        if (m_offload)
            m_a.free(kept, 0);
        for (u64 p : moved)
            m_a.free(p, 0);
        return shard;
    }

    u64 malloc(double b, std::int64_t stream) {
        // No device limit is set, so the model never fails a request.
        return m_a.malloc(std::max<u64>(1, bytes(b)), stream, 0).value_or(0);
    }
    int shards() const { return m_shards; }
    bool offloaded() const { return m_offload; }
    void free(u64 address) { m_a.free(address, 0); }
    const CachingAllocatorModel& allocator() const { return m_a; }
    CachingAllocatorModel& allocator() { return m_a; }

private:
    CachingAllocatorModel m_a;
    int m_shards;
    bool m_offload;
};

// The units of one stage in the order FSDP1's auto-wrap constructs them (post-order: a layer's adapters
// before the layer, the root last).
std::vector<Unit> units(const Scenario& sc, int firstLayer, int layers, bool firstStage, bool lastStage) {
    const ModelSpec& m = sc.model;
    const FineTuning& ft = sc.training.fineTuning;
    const double wb = sc.training.bytes.weights, ab = ft.adapterBytes;
    const double t = std::max(1, sc.cluster.tensorParallel);
    const double ep = std::max(1, sc.cluster.expertParallel);
    const double r = ft.rank;
    std::vector<Unit> out;
    for (int l = firstLayer; l < firstLayer + layers; ++l) {
        Unit layer;
        layer.layer = l;
        double linear = 0;
        for (const LinearShape& lin : layerLinears(m, l)) {
            // A routed expert's matrices are one tensor for all the layer's experts, as transformers now
            // stores them (and a tensor per expert would not change the buckets, the flat parameter or
            // its shard, only how the moved ones pack).
            // Routed experts are split by expert parallelism too (finetuning.cpp's share()).
            const double n = static_cast<double>(lin.out) * static_cast<double>(lin.in);
            const double k = lin.copies > 1 ? lin.copies / ep : lin.copies;
            linear += n * lin.copies;
            if (ft.adapters() && ft.targeted(lin.name)) {
                out.push_back({{k * r * static_cast<double>(lin.in) * ab / t}, {}, {}, true, l});
                out.push_back({{k * static_cast<double>(lin.out) * r * ab / t}, {}, {}, true, l});
                if (ft.method == FineTuneMethod::Dora)
                    out.push_back({{k * static_cast<double>(lin.out) * ab / t}, {}, {}, true, l});
            }
            switch (ft.baseQuantization) {
            case BaseQuantization::None:
                layer.tensors.push_back(k * wb * n / t);
                break;
            case BaseQuantization::Int8:
                layer.tensors.push_back(k * n / t);
                layer.beside.push_back(k * (int8Bytes(lin.out, lin.in) - n) / t);
                break;
            case BaseQuantization::Nf4:
            case BaseQuantization::Fp4: {
                // Params4bit's packed values in the FlatParameter (quant_storage); absmax and the codes
                // beside it.
                const double packed = std::ceil(n / 2);
                layer.tensors.push_back(k * packed / t);
                layer.beside.push_back(k * (fourBitBytes(lin.out, lin.in, ft.doubleQuantization) - packed) /
                                       t);
                break;
            }
            }
        }
        // transformers before 4.38 gives every attention layer its own rotary embedding, which caches cos
        // and sin for max_position_embeddings positions as buffers (LlamaRotaryEmbedding._set_cos_sin_cache,
        // MistralRotaryEmbedding: register_buffer("cos_cached", ...), persistent=False) in the default dtype
        // the model was built in: fp32 when a quantised base is built from its config (fsdp_qlora's loader),
        // the weights' dtype when the model is loaded or cast to it.
        if (sc.training.versionBefore(4, 38) && !m.learnedPositions && m.maxPositions > 0 && m.hasMixer(l) &&
            !m.isLinearLayer(l))
            layer.buffers.push_back(2.0 * m.maxPositions * m.headDim *
                                    (ft.baseQuantization != BaseQuantization::None ? 4.0 : wb));
        // Norms, biases and routers, after the projections (a decoder layer registers its attention and
        // MLP before its norms).
        const double rest = static_cast<double>(m.layerParams(l).total()) - linear;
        if (rest > 0)
            layer.tensors.push_back(wb * rest / t);
        out.push_back(std::move(layer));
    }
    Unit root;
    const double vocabShard = static_cast<double>(m.vocab) * m.hidden / t;
    if (firstStage)
        root.tensors.push_back(wb * static_cast<double>(m.embeddingParams()) / t);
    if (lastStage) {
        root.tensors.push_back(wb * static_cast<double>(m.finalNormParams()));
        if (!m.tiedEmbeddings || sc.cluster.pipelineParallel > 1)
            root.tensors.push_back(wb * vocabShard);
    }
    for (const std::string& saved : ft.modulesToSave)
        if ((saved == "lm_head" && lastStage) || (saved == "embed_tokens" && firstStage))
            out.push_back({{wb * vocabShard}, {}, {}, true, -1});
    if (!root.tensors.empty())
        out.push_back(std::move(root));
    return out;
}

// The gathered parameters of a sharded step, each unit's padded unsharded FlatParameter allocated on the
// unshard stream: the root's for the whole step, and `gathered` decoder layers (the largest) with their
// adapters'.
void gatherForTheStep(Replay& replay, const std::vector<Unit>& all, const std::vector<double>& shardBytes,
                      int gathered, int firstLayer, int layers) {
    const double w = replay.shards();
    const bool offload = replay.offloaded();
    std::vector<double> layerGather(static_cast<std::size_t>(std::max(0, layers)), 0.0);
    double root = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const double whole = shardBytes[i] * w;
        if (all[i].layer < 0 && !all[i].trainable)
            root = whole;
        else if (all[i].layer >= firstLayer)
            layerGather[static_cast<std::size_t>(all[i].layer - firstLayer)] += whole;
    }
    // Under CPUOffload each unit's shard is first copied to the GPU on the pre-unshard stream and freed
    // once the all-gather has read it.
    auto gather = [&](double whole) {
        const u64 copy = offload ? replay.malloc(whole / w, kPreUnshard) : 0;
        replay.malloc(whole, kUnshard);
        if (offload)
            replay.free(copy);
    };
    if (root > 0)
        gather(root);
    int largest = 0;
    for (std::size_t l = 0; l < layerGather.size(); ++l)
        if (layerGather[l] > layerGather[static_cast<std::size_t>(largest)])
            largest = static_cast<int>(l);
    for (int g = 0; g < gathered && !layerGather.empty(); ++g)
        for (std::size_t i = 0; i < all.size(); ++i)
            if (all[i].layer == firstLayer + largest)
                gather(shardBytes[i] * w);
}

Fsdp1Pools replayUnits(const std::vector<Unit>& all, bool expandable, int shards, bool offload, int gathered,
                       double statesPerByte, double gradientsPerByte, int firstLayer, int layers,
                       const PeftStepShape* step, double device) {
    Fsdp1Pools p;
    for (const Unit& u : all) {
        for (double t : u.beside)
            p.unflattened += t;
        for (double t : u.buffers)
            p.buffers += t;
    }
    // The wrap alone is replayed without a limit (its figures are what it leaves, limit or not); the step,
    // which can come close to the GPU's memory, on the device's.
    Replay replay(expandable, shards, offload, step ? device : 0);
    std::vector<double> shardBytes;
    for (const Unit& u : all)
        shardBytes.push_back(replay.wrap(u));
    p.wrapped = static_cast<double>(replay.allocator().reserved());
    // The step's own: the optimizer's states, zeros_like each trainable shard (torch/optim/adamw.py
    // _init_group), on the compute stream; each sharded gradient, allocated by the reduce-scatter on the
    // post-backward stream (_reduce_grad: new_sharded_grad) and kept as the parameter's .grad.
    // Under CPUOffload both live in host memory (the optimizer steps there); each sharded gradient passes
    // through the post-backward stream on its way (_offload_grad), so that stream keeps the largest.
    double largestGradient = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (!all[i].trainable)
            continue;
        if (offload) {
            largestGradient = std::max(largestGradient, shardBytes[i] * gradientsPerByte);
            continue;
        }
        if (statesPerByte > 0) {
            replay.malloc(shardBytes[i] * statesPerByte / 2, kDefault);
            replay.malloc(shardBytes[i] * statesPerByte / 2, kDefault);
        }
        // NO_SHARD all-reduces the gradient autograd computed, in place (_reduce_grad_no_shard).
        if (gradientsPerByte > 0)
            replay.malloc(shardBytes[i] * gradientsPerByte, replay.shards() > 1 ? kPostBackward : kDefault);
    }
    if (largestGradient > 0)
        replay.free(replay.malloc(largestGradient, kPostBackward));
    if (replay.shards() > 1) // NO_SHARD gathers nothing
        gatherForTheStep(replay, all, shardBytes, gathered, firstLayer, layers);
    const CachingAllocatorModel& a = std::as_const(replay).allocator();
    p.replayed = true;
    p.reserved = static_cast<double>(a.reserved());
    p.reusable = static_cast<double>(a.freeBytes(kDefault, false));
    if (step) {
        // The step's tensors on the compute stream, first out of what the wrap left cached there.
        const StepPeaks peaks = replayPeftStep(replay.allocator(), *step);
        p.stepReserved = peaks.reserved;
        p.stepAllocated = peaks.allocated;
    }
    return p;
}

} // namespace

Fsdp1Pools fsdp1Pools(const Scenario& sc, int firstLayer, int layers, bool firstStage, bool lastStage,
                      int shards, int gathered, double statesPerByte, double gradientsPerByte,
                      const PeftStepShape* step, double device) {
    Fsdp1Pools p;
    if (!sc.model.known)
        return p;
    const std::vector<Unit> all = units(sc, firstLayer, layers, firstStage, lastStage);
    // The model's sizes come from a file: a model beyond a pebibyte on one GPU (no GPU holds one) is not
    // replayed, so no size or sum reaches the allocator's arithmetic near its 64-bit limit.
    constexpr double kLargest = 1125899906842624.0;
    double sum = 0;
    for (const Unit& u : all) {
        for (double t : u.tensors)
            sum += t;
        for (double t : u.beside)
            sum += t;
        for (double t : u.buffers)
            sum += t;
    }
    if (!(sum <= kLargest) || !std::isfinite(statesPerByte) || !std::isfinite(gradientsPerByte))
        return p;
    // The replay depends on nothing the batch or the sequence changes, and a sweep or a slider asks for
    // the same one many times: the last few are kept, keyed by everything the replay reads.
    const bool offload = sc.cluster.offloadParameters;
    std::vector<double> key{static_cast<double>(shards),
                            static_cast<double>(gathered),
                            statesPerByte,
                            gradientsPerByte,
                            sc.cluster.expandableSegments ? 1.0 : 0.0,
                            offload ? 1.0 : 0.0};
    for (const Unit& u : all) {
        key.push_back(static_cast<double>(u.tensors.size()));
        key.insert(key.end(), u.tensors.begin(), u.tensors.end());
        key.push_back(static_cast<double>(u.beside.size()));
        key.insert(key.end(), u.beside.begin(), u.beside.end());
        key.push_back(static_cast<double>(u.buffers.size()));
        key.insert(key.end(), u.buffers.begin(), u.buffers.end());
        key.push_back(u.trainable ? 1.0 : 0.0);
        key.push_back(static_cast<double>(u.layer - firstLayer));
    }
    if (step) {
        const PeftStepShape& d = *step;
        key.insert(key.end(), {d.tokens, d.sequence, d.hidden, d.q, d.kv, d.ffn, d.heads, d.headDim, d.vocab,
                               d.rank, d.bytes, d.adapterBytes, d.dropout ? 1.0 : 0.0,
                               d.quantised ? 1.0 : 0.0, d.doubleQuant ? 1.0 : 0.0, d.ropeCast ? 1.0 : 0.0,
                               static_cast<double>(d.layers), d.loss ? 1.0 : 0.0, device});
        for (bool target : d.targets)
            key.push_back(target ? 1.0 : 0.0);
    }
    static RecentResults<Fsdp1Pools> kept;
    return kept.get(std::move(key), [&] {
        return replayUnits(all, sc.cluster.expandableSegments, shards, offload, gathered, statesPerByte,
                           gradientsPerByte, firstLayer, layers, step, device);
    });
}

} // namespace headroom
