// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/compare/codeorigin.h"

#include "core/checkednumbers.h"
#include "core/plan/settingnames.h"

#include <array>
#include <iomanip>
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
    std::array<std::string, kMarkers.size()> files;
    for (const AttributedAllocation& a : atPeak.allocations) {
        const std::uint32_t stack = a.allocation.stack;
        if (stack >= trace.stacks.size() || trace.stacks[stack].empty())
            continue;
        out.stacked = saturatingAdd(out.stacked, a.allocation.size);
        std::size_t best = kMarkers.size();
        std::string file;
        for (const Frame& f : trace.stacks[stack]) {
            if (f.filename >= trace.strings.size())
                continue;
            const std::string_view name = trace.strings[f.filename];
            for (std::size_t m = 0; m < best; ++m)
                if (inDirectory(name, kMarkers[m].directory)) {
                    best = m;
                    file = std::string(name);
                    break;
                }
        }
        if (best == kMarkers.size())
            continue;
        bytes[best] = saturatingAdd(bytes[best], a.allocation.size);
        if (files[best].empty())
            files[best] = file;
    }
    // Per framework (two markers may name one).
    for (std::size_t m = 0; m < kMarkers.size(); ++m) {
        std::int64_t sum = 0;
        for (std::size_t k = 0; k < kMarkers.size(); ++k)
            if (kMarkers[k].framework == kMarkers[m].framework)
                sum = saturatingAdd(sum, bytes[k]);
        if (sum > out.bytes && !files[m].empty()) {
            out.bytes = sum;
            out.framework = kMarkers[m].framework;
            out.file = files[m];
        }
    }
    out.found = out.stacked > 0 && out.bytes >= out.stacked / 4;
    return out;
}

std::string codeOriginAdvice(const CodeOrigin& origin, Framework planned) {
    if (!origin.found || origin.framework == planned)
        return {};
    auto label = [](Framework f) { return nameOf(frameworkNames(), f); };
    std::ostringstream s;
    s << "framework \"" << label(origin.framework) << "\" plans this trace's code op by op, where the scenario "
      << "plans it as " << label(planned) << ": " << std::fixed << std::setprecision(0)
      << 100.0 * static_cast<double>(origin.bytes) / static_cast<double>(origin.stacked)
      << "% of the peak's bytes that have a stack were allocated through " << origin.file
      << " (among others)";
    return s.str();
}

} // namespace headroom
