// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/scoresites.h"

#include "core/compare/tensortable.h"
#include "core/trace/frames.h"

#include <map>
#include <tuple>
#include <unordered_map>

namespace headroom {

namespace {

enum Evidence : std::uint8_t { kReduction = 1, kLinear = 2, kPerToken = 4 };

// The sizes that say something, each one thing only: a size two of these shapes share, or a score's, says
// nothing; nor does the allocator's smallest block (512 bytes: every scalar).
std::unordered_map<std::int64_t, std::uint8_t> evidenceBySize(const Scenario& sc) {
    const RunShape shape(sc);
    const double act = sc.activationDtypeBytes();
    const bool masks = sc.mode == Mode::Training && sc.training.dropout;
    std::multimap<std::int64_t, std::uint8_t> all;
    auto add = [&](double bytes, std::uint8_t kind) {
        if (bytes > 512 && bytes < 4e18)
            all.emplace(static_cast<std::int64_t>(bytes), kind);
    };
    for (const double d : {act, 4.0}) {
        add(RunShape::rounded(shape.b * shape.heads * shape.queries * d), kReduction);
        for (const auto& [symbol, w] : shape.linearWidths())
            add(shape.linear(w, d), kLinear);
        add(shape.scores(d), 0);
    }
    if (masks)
        add(shape.scores(1), 0);
    for (const double d : {1.0, 2.0, 4.0, 8.0})
        add(RunShape::rounded(shape.tokens() * d), kPerToken);
    std::unordered_map<std::int64_t, std::uint8_t> out;
    for (auto it = all.begin(); it != all.end();) {
        const auto [from, to] = all.equal_range(it->first);
        std::uint8_t kinds = 0;
        bool score = false;
        for (auto k = from; k != to; ++k)
            kinds |= k->second, score = score || k->second == 0;
        if (!score && (kinds == kReduction || kinds == kLinear || kinds == kPerToken))
            out.emplace(it->first, kinds);
        it = to;
    }
    return out;
}

} // namespace

ScoreSites::ScoreSites(const Scenario& sc, const Trace& trace, const TraceIndex& index) {
    const ModelSpec& md = sc.model;
    if (!md.known || md.heads <= 0)
        return;
    const auto evidence = evidenceBySize(sc);
    // The call tree: node 0 the root; a node per (caller's node, file, function, line), created callers
    // first, so that a child's number is above its parent's.
    struct Node {
        std::uint32_t parent = 0;
        std::uint8_t seen = 0;
    };
    std::vector<Node> nodes(1);
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, std::int64_t>, std::uint32_t> children;
    constexpr std::uint32_t kUnseen = UINT32_MAX;
    std::vector<std::uint32_t> leaf(trace.stacks.size(), kUnseen); // by stack: its innermost user call
    auto leafOf = [&](std::uint32_t stack) {
        if (stack >= leaf.size())
            return 0u;
        if (leaf[stack] != kUnseen)
            return leaf[stack];
        const auto& frames = trace.stacks[stack];
        const std::size_t top = topUserFrame(trace, stack);
        std::uint32_t node = 0;
        if (top != std::string::npos && top < frames.size() && isUserFrame(trace, frames[top]))
            for (std::size_t i = frames.size(); i-- > top;) {
                const Frame& f = frames[i];
                if (!isUserFrame(trace, f))
                    continue;
                const auto [it, fresh] = children.try_emplace({node, f.filename, f.name, f.line},
                                                              static_cast<std::uint32_t>(nodes.size()));
                if (fresh)
                    nodes.push_back({node, 0});
                node = it->second;
            }
        return leaf[stack] = node;
    };
    const DeviceTrace& d = index.device();
    bool reductions = false, perToken = false;
    for (std::size_t e = 0; e < d.entries(); ++e) {
        if (d.action[e] != TraceAction::Alloc)
            continue;
        const std::uint32_t node = leafOf(d.stack[e]);
        const auto it = evidence.find(d.size[e]);
        if (node != 0 && it != evidence.end()) {
            nodes[node].seen |= it->second;
            reductions = reductions || it->second == kReduction;
            perToken = perToken || it->second == kPerToken;
        }
    }
    for (std::size_t n = nodes.size(); n-- > 1;)
        nodes[nodes[n].parent].seen |= nodes[n].seen;
    m_readings.assign(trace.stacks.size(), Reading::Untold);
    // Without a per-token vector anywhere (norms fused into one kernel, or too few tokens for one to be
    // told from a scalar) no call can be seen to span a sublayer, and a layer's call holds both readings.
    if (!perToken)
        return;
    for (std::size_t s = 0; s < leaf.size(); ++s) {
        if (leaf[s] == kUnseen || leaf[s] == 0)
            continue;
        Reading r = Reading::Untold;
        // Attention's: the nearest call within one sublayer that computes per-head vectors.
        for (std::uint32_t n = leaf[s]; n != 0 && !(nodes[n].seen & kPerToken); n = nodes[n].parent)
            if (nodes[n].seen & kReduction) {
                r = Reading::Scores;
                break;
            }
        // Not attention's: the nearest call that shows anything shows tokens-linear tensors only.
        if (r == Reading::Untold && reductions)
            for (std::uint32_t n = leaf[s]; n != 0 && !(nodes[n].seen & (kPerToken | kReduction));
                 n = nodes[n].parent)
                if (nodes[n].seen & kLinear) {
                    r = Reading::TokensLinear;
                    break;
                }
        m_readings[s] = r;
    }
}

} // namespace headroom
