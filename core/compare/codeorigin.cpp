// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/codeorigin.h"

#include "core/checkednumbers.h"
#include "core/plan/settingnames.h"
#include "core/trace/frames.h"

#include <algorithm>
#include <array>
#include <iomanip>
#include <map>
#include <sstream>
#include <string_view>

namespace headroom {
namespace {

struct Marker {
    Framework framework;
    std::string_view directory; // a path component of the framework's own source files
};
// The frameworks whose profiles plan their own code, in the order a stack's frames decide between them: a
// framework that drives another's modules first (DeepSpeed's engine, Unsloth and torchtitan's trainers around
// transformers' or their own models), transformers' models last.
constexpr std::array<Marker, 9> kMarkers = {{
    {Framework::Unsloth, "unsloth"},
    {Framework::Unsloth, "unsloth_zoo"},
    {Framework::DeepSpeed, "deepspeed"},
    {Framework::Torchtitan, "torchtitan"},
    {Framework::Megatron, "megatron"},
    {Framework::Torchtune, "torchtune"},
    {Framework::Cs336Basics, "cs336_basics"},
    {Framework::HuggingFace, "transformers"},
    {Framework::HuggingFace, "peft"},
}};

// Whether `file` has `dir` as one of its directories (either separator: Windows runs record backslashes).
bool inDirectory(std::string_view file, std::string_view dir) {
    for (std::size_t at = file.find(dir); at != std::string_view::npos; at = file.find(dir, at + 1)) {
        const std::size_t end = at + dir.size();
        const bool before = at == 0 || file[at - 1] == '/' || file[at - 1] == '\\';
        const bool after = end < file.size() && (file[end] == '/' || file[end] == '\\');
        if (before && after)
            return true;
    }
    return false;
}

} // namespace

CodeOrigin codeOrigin(const Trace& trace, const Attribution& atPeak) {
    CodeOrigin out;
    std::array<std::int64_t, kMarkers.size()> bytes{};
    // Per marker, the bytes each of its files allocated: the file the advice names is the one that holds
    // the most of them (the first one met is the largest allocation's, which need not be: at CS336's
    // 1,024-token forward's peak the score-sized tensors of model.py and of nn_utils.py's softmax are all
    // 256 MiB, and nn_utils.py holds more of them).
    std::array<std::map<std::string_view, std::int64_t>, kMarkers.size()> files;
    for (const AttributedAllocation& a : atPeak.allocations) {
        const std::uint32_t stack = a.allocation.stack;
        if (stack >= trace.stacks.size() || trace.stacks[stack].empty())
            continue;
        out.stacked = saturatingAdd(out.stacked, a.allocation.size);
        std::size_t best = kMarkers.size();
        std::string_view file;
        for (const Frame& f : trace.stacks[stack]) {
            if (f.filename >= trace.strings.size())
                continue;
            const std::string_view name = trace.strings[f.filename];
            for (std::size_t m = 0; m < best; ++m)
                if (inDirectory(name, kMarkers[m].directory)) {
                    best = m;
                    file = name;
                    break;
                }
        }
        if (best == kMarkers.size())
            continue;
        bytes[best] = saturatingAdd(bytes[best], a.allocation.size);
        std::int64_t& held = files[best][file];
        held = saturatingAdd(held, a.allocation.size);
    }
    // Per framework (two markers may name one), and its file that allocated the most.
    for (std::size_t m = 0; m < kMarkers.size(); ++m) {
        std::int64_t sum = 0, most = -1;
        std::string_view file;
        for (std::size_t k = 0; k < kMarkers.size(); ++k) {
            if (kMarkers[k].framework != kMarkers[m].framework)
                continue;
            sum = saturatingAdd(sum, bytes[k]);
            for (const auto& [name, held] : files[k])
                if (held > most) {
                    most = held;
                    file = name;
                }
        }
        if (sum > out.bytes && !file.empty()) {
            out.bytes = sum;
            out.framework = kMarkers[m].framework;
            out.file = std::string(file);
        }
    }
    out.found = out.stacked > 0 && out.bytes >= out.stacked / 4;
    return out;
}

std::optional<bool> stepsOwnOptimizer(const Trace& trace, const TraceIndex& index, Framework code,
                                      const AttributionRules& rules) {
    std::int64_t own = 0, all = 0;
    OptimizerStacks optimizerStack(trace, rules);
    for (const Allocation& a : index.allocations()) {
        if (a.stack >= trace.stacks.size() || !optimizerStack(a.stack))
            continue;
        all = saturatingAdd(all, a.size);
        // The innermost Python frame made the tensor: cs336_basics/optimizer.py for its AdamW, torch/optim's
        // for torch's even where the training loop calling it is the framework's (further out).
        for (const Frame& f : trace.stacks[a.stack]) {
            if (f.filename >= trace.strings.size() || !isPythonFrame(trace, f))
                continue;
            const std::string_view name = trace.strings[f.filename];
            if (std::any_of(kMarkers.begin(), kMarkers.end(), [&](const Marker& m) {
                    return m.framework == code && inDirectory(name, m.directory);
                }))
                own = saturatingAdd(own, a.size);
            break;
        }
    }
    if (all == 0)
        return std::nullopt;
    return own >= all - own;
}

std::string codeOriginAdvice(const CodeOrigin& origin, Framework planned) {
    if (!origin.found || origin.framework == planned)
        return {};
    auto label = [](Framework f) { return nameOf(frameworkNames(), f); };
    std::ostringstream s;
    s << "framework \"" << label(origin.framework)
      << "\" plans this trace's code op by op, where the scenario "
      << "plans it as " << label(planned) << ": " << std::fixed << std::setprecision(0)
      << 100.0 * static_cast<double>(origin.bytes) / static_cast<double>(origin.stacked)
      << "% of the peak's bytes that have a stack were allocated through its source, the most through "
      << origin.file;
    return s.str();
}

} // namespace headroom
