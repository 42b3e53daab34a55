// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/scenario.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace headroom {

// One table per setting of a scenario: how a file spells each value (`name`, the first of a value being the
// one written back), what people read (`label`: the panel's choices, the report, the CLI; none for an alias
// the reader accepts but nobody is offered), and the ranges the reader accepts and the panel offers. The
// reader, the settings panel, the report and the CLI all read these; none restates them.
template <typename E> struct Named {
    const char* name;
    E value;
    const char* label; // nullptr: an alias, accepted when read, never offered
};

std::span<const Named<Optimizer>> optimizerNames();
std::span<const Named<Checkpointing>> checkpointingNames();
std::span<const Named<ZeroGrad>> zeroGradNames();
std::span<const Named<Framework>> frameworkNames();
std::span<const Named<RecomputeMethod>> recomputeMethodNames();
std::span<const Named<OptimizerImpl>> optimizerImplNames();
std::span<const Named<Float8>> float8Names();
std::span<const Named<LossKind>> lossNames();
std::span<const Named<Engine>> engineNames();
std::span<const Named<Attention>> attentionNames();
std::span<const Named<ForwardLogits>> forwardLogitsNames();
std::span<const Named<DataParallel>> dataParallelNames();
std::span<const Named<OffloadStep>> offloadStepNames();
std::span<const Named<FineTuneMethod>> fineTuneMethodNames();
std::span<const Named<BaseQuantization>> baseQuantizationNames();

// Settings that are strings rather than enums: precision, autocast, dtypes.
struct NamedText {
    const char* name;
    const char* label;
};
std::span<const NamedText> precisionNames();
std::span<const NamedText> autocastNames();
std::span<const NamedText> weightDtypeNames(); // "checkpoint" first: as the checkpoint stores them
std::span<const NamedText> kvCacheDtypeNames();
std::span<const NamedText> samplerNames(); // inference.sampler: "pytorch" (the default) first
// inference.chunked_layers: "release" (the default: as the engine release does), "pooled", "full".
std::span<const NamedText> chunkedLayerNames();
// inference.mamba_ssm_cache_dtype: "auto" (the default: the model's dtype, or vLLM's NemotronH hook's), then
// the dtypes vLLM's --mamba-ssm-cache-dtype takes.
std::span<const NamedText> mambaSsmCacheDtypeNames();
// LoRA target names as PEFT writes them, each `label` the canonical name (q_proj ... down_proj, lm_head) with
// torchtune's spellings as aliases (output_proj, w1, w3, w2, output); "all-linear" is expanded by the reader.
std::span<const NamedText> loraTargetNames();

// The first name and the label of a value.
template <typename E> std::string nameOf(std::span<const Named<E>> names, E value) {
    for (const auto& n : names)
        if (n.value == value)
            return n.name;
    return {};
}
template <typename E> std::string labelOf(std::span<const Named<E>> names, E value) {
    for (const auto& n : names)
        if (n.value == value && n.label)
            return n.label;
    return nameOf(names, value);
}
// The value a name spells; false when no entry has it.
template <typename E> bool valueOf(std::span<const Named<E>> names, std::string_view name, E* out) {
    for (const auto& n : names)
        if (name == n.name) {
            *out = n.value;
            return true;
        }
    return false;
}

// The integer settings' ranges, by JSON pointer ("/training/micro_batch_size"): what the reader accepts and
// the panel's sliders and spin boxes span.
struct IntRange {
    const char* pointer;
    int min; // what the reader accepts, and the panel's spin box
    int max;
    int sliderMin; // the span the panel's slider covers: the values people choose (typed values may go past)
    int sliderMax;
    bool logSlider; // a slider on a log scale (batches, lengths, GPU counts)
};
std::span<const IntRange> integerRanges();
// The range of one setting; all zero for one that has none.
IntRange integerRange(std::string_view pointer);

// A framework release (scenario.h) as training.framework_version writes it: major.minor[.patch], digits only
// ("4.44", "4.44.2", "0.2"). nullopt for anything else; the scenario reader names the field, the window's
// Release box reads another release as the listed one whose memory it has.
std::optional<Release> parseRelease(const std::string& text);

// training.fine_tuning.bitsandbytes_version, major.minor[.patch] ("0.43.1"): whether that release's
// MatMul4Bit keeps its input for the backward (before 0.43.2, bitsandbytes #1270). nullopt for anything
// that is not such a release; the reader names the field, the window's box shows which side it is on.
std::optional<bool> fourBitKeepsInputIn(const std::string& release);
// The same release's MatMul8bitLt (LLM.int8): whether it keeps, beside its input, an int8 transposed copy
// of it (`CAt`) whatever needs a gradient (before 0.45.0, bitsandbytes #1401, December 2024).
std::optional<bool> int8KeepsTransposedInputIn(const std::string& release);

} // namespace headroom
