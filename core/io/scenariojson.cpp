// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/scenariojson.h"

#include "core/plan/activations.h"
#include "core/plan/cs336replay.h"
#include "core/plan/finetuning.h"

#include "core/io/jsontext.h"

#include "core/fileio.h"

#include "core/error.h"
#include "core/model/hfconfig.h"
#include "core/model/presets.h"
#include "core/plan/gpucatalogue.h"
#include "core/plan/layout.h"
#include "core/plan/optimizerstate.h"
#include "core/plan/settingnames.h"
#include "core/plan/workspaces.h"
#include "core/serve/engineversions.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <sstream>
#include <tuple>

namespace headroom::data {
std::string_view default_headroom_json();
}

namespace headroom {

using nlohmann::json;

namespace {

// A view of one JSON object with its path, so that every read can name where a bad value sits. It notes
// each key the reader asks for, so that a key nobody read (misspelt, or from a newer version) is reported
// instead of silently planned as its default.
class Section {
public:
    Section(const json* obj, std::string path) : m_obj(obj), m_path(std::move(path)) {}

    std::string at(const std::string& key) const { return m_path + "." + key; }
    const json* find(const std::string& key) const {
        if (!m_obj)
            return nullptr;
        m_read.push_back(key);
        auto it = m_obj->find(key);
        return it == m_obj->end() || it->is_null() ? nullptr : &*it;
    }
    // Warnings for the keys present that no read asked for: "training.micro_batchsize: ... (did you mean
    // micro_batch_size?)". The file keeps them; the plan uses the default.
    void reportUnread(std::vector<std::string>& warnings) const {
        if (!m_obj)
            return;
        for (const auto& [key, value] : m_obj->items()) {
            if (std::find(m_read.begin(), m_read.end(), key) != m_read.end())
                continue;
            std::string nearest;
            std::size_t best = 3; // at most two edits away
            for (const std::string& known : m_read) {
                const std::size_t d = editDistance(key, known);
                if (d < best)
                    best = d, nearest = known;
            }
            warnings.push_back(at(key) +
                               " is not a setting Headroom reads here: kept in the file, planned as "
                               "if absent" +
                               (nearest.empty() ? std::string() : " (did you mean " + nearest + "?)"));
        }
    }
    int integer(const std::string& key, int fallback, long long lo, long long hi) const {
        const json* v = find(key);
        if (!v)
            return fallback;
        if (!v->is_number_integer())
            throw Error(at(key), "must be an integer, got " + v->dump());
        const bool tooBig =
            v->is_number_unsigned() && v->get<unsigned long long>() > static_cast<unsigned long long>(hi);
        if (tooBig || v->get<long long>() < lo || v->get<long long>() > hi)
            throw Error(at(key), "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                                     ", got " + v->dump());
        return static_cast<int>(v->get<long long>());
    }
    double number(const std::string& key, double fallback, double lo, double hi) const {
        const json* v = find(key);
        if (!v)
            return fallback;
        if (!v->is_number())
            throw Error(at(key), "must be a number, got " + v->dump());
        const double d = v->get<double>();
        if (!(d >= lo && d <= hi))
            throw Error(at(key), "must be between " + fmt(lo) + " and " + fmt(hi) + ", got " + v->dump());
        return d;
    }
    bool boolean(const std::string& key, bool fallback) const {
        const json* v = find(key);
        if (!v)
            return fallback;
        if (!v->is_boolean())
            throw Error(at(key), "must be true or false, got " + v->dump());
        return v->get<bool>();
    }
    std::string string(const std::string& key, const std::string& fallback) const {
        const json* v = find(key);
        if (!v)
            return fallback;
        if (!v->is_string())
            throw Error(at(key), "must be a string, got " + v->dump());
        return v->get<std::string>();
    }
    template <typename E>
    E choice(const std::string& key, E fallback, std::span<const Named<E>> options) const {
        const json* v = find(key);
        if (!v)
            return fallback;
        std::string list;
        for (const auto& n : options) {
            if (v->is_string() && v->get<std::string>() == n.name)
                return n.value;
            list += (list.empty() ? "" : ", ") + std::string(n.name);
        }
        throw Error(at(key), "must be one of " + list + "; got " + v->dump());
    }
    // An integer setting, in the range core/plan/settingnames.h gives it.
    int integer(const std::string& key, int fallback) const {
        std::string pointer = "/" + m_path + "/" + key; // "training.fine_tuning" -> /training/fine_tuning
        std::replace(pointer.begin(), pointer.end(), '.', '/');
        const IntRange r = integerRange(pointer);
        return integer(key, fallback, r.min, r.max);
    }

private:
    static std::string fmt(double d) {
        std::ostringstream s;
        s << d;
        return s.str();
    }
    // Levenshtein distance, for the "did you mean" of a misspelt key (keys are short).
    static std::size_t editDistance(const std::string& a, const std::string& b) {
        std::vector<std::size_t> row(b.size() + 1);
        for (std::size_t j = 0; j <= b.size(); ++j)
            row[j] = j;
        for (std::size_t i = 1; i <= a.size(); ++i) {
            std::size_t diagonal = row[0];
            row[0] = i;
            for (std::size_t j = 1; j <= b.size(); ++j) {
                const std::size_t up = row[j];
                row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
                diagonal = up;
            }
        }
        return row[b.size()];
    }
    const json* m_obj;
    std::string m_path;
    mutable std::vector<std::string> m_read;
};

Section section(const json& doc, const std::string& key, bool required) {
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) {
        if (required)
            throw Error(key, "missing");
        return {nullptr, key};
    }
    if (!it->is_object())
        throw Error(key, "must be an object");
    return {&*it, key};
}

// Bytes per element for the dtype names used by precision and inference settings.
const std::map<std::string, double>& dtypeBytes() {
    static const std::map<std::string, double> m = {
        {"fp32", 4},    {"float32", 4}, {"tf32", 4}, {"bf16", 2},  {"bfloat16", 2}, {"fp16", 2},
        {"float16", 2}, {"fp8", 1},     {"int8", 1}, {"fp4", 0.5}, {"int4", 0.5},   {"nf4", 0.5}};
    return m;
}

double dtype(const Section& s, const std::string& key, const std::string& fallback, std::string& name) {
    name = s.string(key, fallback);
    auto it = dtypeBytes().find(name);
    if (it == dtypeBytes().end()) {
        std::string list;
        for (const auto& [n, b] : dtypeBytes())
            list += (list.empty() ? "" : ", ") + n;
        throw Error(s.at(key), "unknown dtype '" + name + "' (one of " + list + ")");
    }
    return it->second;
}

// A config.json read once per version of the file: the window re-reads its scenario on every slider
// step, and reading and parsing the config each time was most of a step's core work.
ModelSpec cachedHfConfig(const std::string& path) {
    struct Entry {
        std::filesystem::file_time_type mtime;
        std::uintmax_t size = 0;
        ModelSpec spec;
    };
    static std::mutex mutex;
    static std::map<std::string, Entry> cache;
    std::error_code ec;
    const auto mtime = std::filesystem::last_write_time(path, ec);
    const auto size = ec ? 0 : std::filesystem::file_size(path, ec);
    if (!ec) {
        std::lock_guard lock(mutex);
        const auto it = cache.find(path);
        if (it != cache.end() && it->second.mtime == mtime && it->second.size == size)
            return it->second.spec;
    }
    ModelSpec spec = modelFromHfConfig(parseJsonText(readTextFile(path, 16u << 20)), "");
    if (!ec) {
        std::lock_guard lock(mutex);
        if (cache.size() > 64)
            cache.clear();
        cache[path] = {mtime, size, spec};
    }
    return spec;
}

void readModel(const json& doc, const std::string& baseDir, Scenario& sc) {
    const auto sec = section(doc, "model", true);
    const json& m = doc.at("model");
    const json* params = sec.find("parameters");
    if (const json* preset = sec.find("preset")) {
        if (!preset->is_string())
            throw Error("model.preset", "must be a string naming a preset");
        const ModelPreset* p = findModelPreset(preset->get<std::string>());
        if (!p) {
            std::string names;
            for (const auto& q : modelPresets())
                names += (names.empty() ? "" : ", ") + q.name;
            throw Error("model.preset",
                        "unknown preset '" + preset->get<std::string>() + "' (known: " + names + ")");
        }
        sc.model = p->spec;
        sc.modelLabel = p->name;
    } else if (const json* path = sec.find("hf_config")) {
        if (!path->is_string())
            throw Error("model.hf_config", "must be a path to a config.json");
        std::filesystem::path file(path->get<std::string>());
        if (file.is_relative())
            file = std::filesystem::path(baseDir) / file;
        try {
            sc.model = cachedHfConfig(file.string());
        } catch (const Error& e) {
            throw Error("model.hf_config", e.withFile(file.string()));
        }
        sc.modelLabel = file.filename().string();
    } else if (const json* type = sec.find("model_type")) {
        // Only an unknown family is planned by its size alone; any other mistake in the config (a bad key,
        // a model_type that is not a string) is an error even when the size is given.
        const auto& known = supportedModelTypes();
        const bool unknownFamily = type->is_string() && std::find(known.begin(), known.end(),
                                                                  type->get<std::string>()) == known.end();
        if (unknownFamily && params)
            sc.warnings.push_back("model.model_type '" + type->get<std::string>() +
                                  "' is not a known family; planning with model.parameters alone");
        else
            sc.model = modelFromHfConfig(m, "model");
        sc.modelLabel = type->get<std::string>();
    } else if (!params) {
        throw Error("model",
                    "give one of \"preset\", \"hf_config\", an inline config.json with \"model_type\", "
                    "or \"parameters\"");
    }
    // A preset or a config file names the whole model: another key beside it would be silently ignored.
    // An inline config.json keeps its own keys, most of which (token ids, architectures) plan nothing.
    if (sec.find("preset") || sec.find("hf_config"))
        sec.reportUnread(sc.warnings);
    if (!sc.model.known) {
        if (!params || !params->is_number_integer() || params->get<long long>() <= 0)
            throw Error("model.parameters", "must be a positive integer");
        sc.model = ModelSpec{};
        sc.model.parametersOverride = params->get<std::uint64_t>();
        sc.modelLabel = sc.modelLabel.empty() ? "parameters only" : sc.modelLabel;
    }
}

} // namespace

namespace {
Framework frameworkNamed(const std::string& name) {
    Framework f = Framework::PyTorch;
    valueOf(frameworkNames(), name, &f);
    return f;
}
} // namespace

std::string derivedTrainingDefault(const json& training, const std::string& key) {
    // The rules are the plan's (defaultOptimizerImpl, defaultLoss); this spells them as the file would.
    const bool object = training.is_object();
    const Framework framework = object && training.contains("framework") && training["framework"].is_string()
                                    ? frameworkNamed(training["framework"].get<std::string>())
                                    : Framework::PyTorch;
    if (key == "optimizer_implementation")
        return nameOf(optimizerImplNames(), defaultOptimizerImpl(framework));
    if (key == "loss")
        return nameOf(lossNames(), defaultLoss(framework, object && training.contains("compile") &&
                                                              training["compile"] == true));
    return {};
}

namespace {
// The training section's framework as the file names it; PyTorch's where it names none (or is inference).
Framework trainingFramework(const json& doc) {
    const auto training = doc.find("training");
    if (training == doc.end() || !training->is_object())
        return Framework::PyTorch;
    const auto framework = training->find("framework");
    return framework != training->end() && framework->is_string()
               ? frameworkNamed(framework->get<std::string>())
               : Framework::PyTorch;
}

// torchao's NF4 always quantises its scales; bitsandbytes only with bnb_4bit_use_double_quant, which
// Unsloth always sets: FastLlamaModel.from_pretrained's BitsAndBytesConfig (unsloth/models/llama.py) and
// loader.py's for its pre-quantised checkpoints, and its fast_dequantize reads the second-level state
// unconditionally (unsloth/kernels/utils.py; read at e3162dc5bf).
bool quantisesScales(Framework f) {
    return f == Framework::Torchtune || f == Framework::Unsloth;
}
} // namespace

bool defaultExpandableSegments(const json& doc) {
    // Where the framework sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True itself. Unsloth, when it is
    // imported, before anything is allocated (with roundup_power2_divisions): unsloth/__init__.py from March
    // 2024 (c599ae0f), unsloth_zoo's from October 2025 (unsloth 1c1f7033). torchtitan's launcher,
    // run_llama_train.sh from October 2024 (a5e57e4a9, PR #643), run_train.sh since: a run started with
    // torchrun directly says false. Everything else runs PyTorch's default.
    const Framework f = trainingFramework(doc);
    return f == Framework::Unsloth || f == Framework::Torchtitan;
}

bool defaultDoubleQuantization(const json& doc) {
    return quantisesScales(trainingFramework(doc));
}

namespace {

// training.fine_tuning (docs/formats.md section 2): which weights train and how the frozen base is stored.
void readFineTuning(const Section& training, Scenario& sc) {
    const json* obj = training.find("fine_tuning");
    if (!obj)
        return;
    if (!obj->is_object())
        throw Error("training.fine_tuning", "must be an object");
    const Section s(obj, "training.fine_tuning");
    FineTuning& f = sc.training.fineTuning;
    const FineTuning d;
    f.method = s.choice<FineTuneMethod>("method", d.method, fineTuneMethodNames());
    f.rank = s.integer("rank", d.rank);
    f.alpha = s.number("alpha", 2.0 * f.rank, 0, 1e9);
    f.dropout = s.number("dropout", d.dropout, 0, 1);
    // PEFT casts adapters to fp32 (get_peft_model(autocast_adapter_dtype=True)); torchtune builds them in the
    // model's dtype.
    const bool torchtune = sc.training.framework == Framework::Torchtune;
    const std::string adapterDtype = s.string("adapter_dtype", torchtune ? "bf16" : "fp32");
    if (adapterDtype != "fp32" && adapterDtype != "bf16" && adapterDtype != "fp16")
        throw Error(s.at("adapter_dtype"), "must be one of fp32, bf16, fp16; got \"" + adapterDtype + "\"");
    f.adapterBytes = adapterDtype == "fp32" ? 4 : 2;
    f.baseQuantization = s.choice<BaseQuantization>(
        "base_quantization",
        f.method == FineTuneMethod::Qlora ? BaseQuantization::Nf4 : BaseQuantization::None,
        baseQuantizationNames());
    if (f.method == FineTuneMethod::Qlora && f.baseQuantization == BaseQuantization::None)
        throw Error(s.at("base_quantization"),
                    "QLoRA quantises the base: give int8, nf4 or fp4 (or method lora)");
    if (f.method == FineTuneMethod::Full && f.baseQuantization != BaseQuantization::None)
        throw Error(s.at("base_quantization"),
                    "a quantised base cannot be trained in full: use lora or qlora");
    f.doubleQuantization = s.boolean("double_quantization", quantisesScales(sc.training.framework));
    f.bitsandbytesVersion = s.string("bitsandbytes_version", "");
    if (!f.bitsandbytesVersion.empty()) {
        const std::optional<bool> keeps = fourBitKeepsInputIn(f.bitsandbytesVersion);
        if (!keeps)
            throw Error(s.at("bitsandbytes_version"),
                        "must be a release as major.minor.patch (\"0.43.1\"); got \"" +
                            f.bitsandbytesVersion + "\"");
        // torchtune's 4-bit base is torchao's NF4 tensor, not bitsandbytes' layer.
        f.fourBitKeepsInput = *keeps && !torchtune;
        f.int8KeepsTransposedInput = !torchtune && f.baseQuantization == BaseQuantization::Int8 &&
                                     int8KeepsTransposedInputIn(f.bitsandbytesVersion).value_or(false);
        if (f.baseQuantization == BaseQuantization::None)
            sc.warnings.push_back("training.fine_tuning.bitsandbytes_version: without a quantised base "
                                  "(base_quantization int8, nf4 or fp4) the release changes nothing here");
        else if (torchtune)
            sc.warnings.push_back("training.fine_tuning.bitsandbytes_version: torchtune's 4-bit base is "
                                  "torchao's NF4, not bitsandbytes': the release changes nothing here");
    }
    const std::string storage = s.string("quant_storage", "uint8");
    if (storage != "uint8" && storage != "bf16" && storage != "fp16" && storage != "fp32")
        throw Error(s.at("quant_storage"), "must be one of uint8, bf16, fp16, fp32; got \"" + storage + "\"");
    auto names = [&](const std::string& key, std::vector<std::string> fallback, bool targets) {
        const json* v = s.find(key);
        if (!v)
            return fallback;
        std::vector<std::string> out;
        if (v->is_string() && v->get<std::string>() == "all-linear" && targets)
            // PEFT's "all-linear": every linear layer but the output head.
            return std::vector<std::string>{
                "q_proj",    "k_proj",       "v_proj",     "o_proj",      "gate_proj",
                "up_proj",   "down_proj",    "q_a_proj",   "q_b_proj",    "kv_a_proj_with_mqa",
                "kv_b_proj", "in_proj_qkvz", "in_proj_ba", "in_proj_qkv", "in_proj_z",
                "in_proj_b", "in_proj_a",    "out_proj"};
        if (!v->is_array())
            throw Error(s.at(key), targets ? "must be a list of module names or \"all-linear\""
                                           : "must be a list of module names");
        if (v->size() > 64)
            throw Error(s.at(key), "lists more than 64 modules");
        for (std::size_t i = 0; i < v->size(); ++i) {
            const json& e = (*v)[i];
            const std::string where = s.at(key) + "[" + std::to_string(i) + "]";
            if (!e.is_string())
                throw Error(where, "must be a module name");
            const std::string name = e.get<std::string>();
            std::string canonical;
            if (targets) {
                std::string list;
                for (const NamedText& t : loraTargetNames()) {
                    if (name == t.name)
                        canonical = t.label;
                    list += (list.empty() ? "" : ", ") + std::string(t.name);
                }
                if (canonical.empty())
                    throw Error(where,
                                "unknown module \"" + name + "\" (one of " + list + ", or \"all-linear\")");
            } else {
                if (name != "lm_head" && name != "embed_tokens" && name != "output" &&
                    name != "tok_embeddings")
                    throw Error(where, "unknown module \"" + name + "\" (lm_head or embed_tokens)");
                canonical = name == "output" ? "lm_head" : name == "tok_embeddings" ? "embed_tokens" : name;
            }
            if (std::find(out.begin(), out.end(), canonical) == out.end())
                out.push_back(canonical);
        }
        return out;
    };
    const std::string preference = s.string("preference", "none");
    if (preference != "none" && preference != "dpo")
        throw Error(s.at("preference"), "must be one of none, dpo; got \"" + preference + "\"");
    f.dpo = preference == "dpo";
    f.targets = names("target_modules", d.targets, true);
    f.modulesToSave = names("modules_to_save", {}, false);
    if (f.adapters() && f.targets.empty())
        throw Error(s.at("target_modules"), "names no module: the adapters would train nothing");
    if (f.adapters() && sc.model.known && s.find("target_modules")) {
        // Every layer of a kind has the same linear layers: one of each kind stands for all.
        std::vector<LinearShape> linears;
        bool seen[ModelSpec::kLayerKinds] = {};
        for (int l = 0; l < sc.model.layers; ++l)
            if (!seen[sc.model.layerKind(l)]) {
                seen[sc.model.layerKind(l)] = true;
                const std::vector<LinearShape> kind = layerLinears(sc.model, l);
                linears.insert(linears.end(), kind.begin(), kind.end());
            }
        auto has = [&](const std::string& t) {
            return std::any_of(linears.begin(), linears.end(),
                               [&](const LinearShape& lin) { return lin.name == t; });
        };
        if ((*s.find("target_modules")).is_string()) {
            // "all-linear", as PEFT resolves it: the linear layers this model has, by name.
            std::erase_if(f.targets, [&](const std::string& t) { return !has(t); });
        } else {
            // A name the architecture has no layer of adapts nothing (MLA has no q_proj with a query rank,
            // a plain MLP no gate_proj): said, not silently planned.
            for (const std::string& t : f.targets)
                if (t != "lm_head" && !has(t))
                    sc.warnings.push_back("training.fine_tuning.target_modules: the model has no " + t +
                                          " layer; it adapts nothing");
        }
    }
    if (f.adapters() && !sc.model.known)
        sc.warnings.push_back("training.fine_tuning: the model is known only by its parameter count, so no "
                              "adapter is counted; give the model's architecture");
    if (f.adapters() && sc.training.optimizerInBackward)
        throw Error(s.at("method"), "a step in the backward is modelled for full fine-tuning only");
    s.reportUnread(sc.warnings);
}

// Whether a section names the cs336_basics framework, whose code sets defaults read before the framework.
bool namesCs336Basics(const Section& s) {
    const json* f = s.find("framework");
    return f && f->is_string() && f->get<std::string>() == "cs336_basics";
}

void readTraining(const json& doc, Scenario& sc) {
    const auto s = section(doc, "training", true);
    auto& t = sc.training;
    const TrainingSettings d; // the defaults live there, and only there
    t.microBatchSize = s.integer("micro_batch_size", d.microBatchSize);
    t.sequenceLength = s.integer("sequence_length", d.sequenceLength);
    t.gradientAccumulationSteps = s.integer("gradient_accumulation_steps", d.gradientAccumulationSteps);
    // cs336_basics builds its parameters in fp32 (torch.empty's default) and runs mixed only under
    // autocast: its precision defaults to fp32.
    t.precision = s.string("precision", namesCs336Basics(s) ? "fp32" : d.precision);
    // Weights + gradients + fp32 master + Adam states, as docs/formats.md section 2 fixes them.
    static const std::map<std::string, BytesPerParam> presets = {{"fp32", {4, 4, 0, 8}},
                                                                 {"bf16_mixed", {2, 2, 4, 8}},
                                                                 {"fp16_mixed", {2, 2, 4, 8}},
                                                                 {"bf16_mixed_fp32_grads", {2, 4, 4, 8}},
                                                                 {"bf16", {2, 2, 0, 8}}};
    auto it = presets.find(t.precision);
    if (it == presets.end())
        throw Error("training.precision",
                    "must be one of bf16, bf16_mixed, bf16_mixed_fp32_grads, fp16_mixed, fp32; got \"" +
                        t.precision + "\"");
    t.bytes = it->second;
    t.activationBytes = t.precision == "fp32" ? 4 : 2;
    t.optimizer = s.choice<Optimizer>("optimizer", d.optimizer, optimizerNames());
    t.activationBytes = s.number("activation_bytes", t.activationBytes, 0.5, 8);
    t.autocast = s.string("autocast", "none");
    if (t.autocast != "none" && t.autocast != "bf16" && t.autocast != "fp16")
        throw Error(s.at("autocast"), "must be one of none, bf16, fp16; got \"" + t.autocast + "\"");
    t.autocastBytes = t.autocast == "none" ? 0 : 2;
    t.checkpointing =
        s.choice<Checkpointing>("activation_checkpointing", d.checkpointing, checkpointingNames());
    t.checkpointEvery = s.integer("checkpoint_every", d.checkpointEvery);
    if (t.checkpointEvery > 1 && t.checkpointing != Checkpointing::Full)
        sc.warnings.push_back("training.checkpoint_every applies to activation_checkpointing \"full\" only; "
                              "ignored");
    t.recomputeMethod =
        s.choice<RecomputeMethod>("recompute_method", d.recomputeMethod, recomputeMethodNames());
    t.recomputeLayers = s.integer("recompute_num_layers", d.recomputeLayers);
    if (t.recomputeMethod != RecomputeMethod::EveryLayer && t.checkpointing != Checkpointing::Full)
        sc.warnings.push_back("training.recompute_method applies to activation_checkpointing \"full\" only; "
                              "ignored");
    if (t.recomputeMethod != RecomputeMethod::EveryLayer && t.checkpointEvery > 1)
        throw Error(s.at("recompute_method"), "Megatron's recompute_method and torchtitan's checkpoint_every "
                                              "cannot both apply");
    t.attention = s.choice<Attention>("attention", d.attention, attentionNames());
    t.framework = s.choice<Framework>("framework", d.framework, frameworkNames());
    t.compile = s.boolean("compile", d.compile);
    // A release as major.minor, where memory changed between releases (empty: a current one).
    auto readRelease = [&](const char* key, const char* example, std::string& text, Release& release) {
        text = s.string(key, "");
        if (text.empty())
            return;
        const auto parsed = parseRelease(text);
        if (!parsed)
            throw Error(s.at(key), std::string("must be a release as major.minor (\"") + example +
                                       "\"); got \"" + text + "\"");
        release = *parsed;
    };
    readRelease("framework_version", "4.44", t.frameworkVersion, t.version);
    readRelease("torch_version", "2.5", t.torchVersion, t.torch);
    t.optimizerImpl = s.choice<OptimizerImpl>("optimizer_implementation", defaultOptimizerImpl(t.framework),
                                              optimizerImplNames());
    t.optimizerImplGiven = s.find("optimizer_implementation") != nullptr;
    t.float8 = s.choice<Float8>("float8", d.float8, float8Names());
    t.loss = s.choice<LossKind>("loss", defaultLoss(t.framework, t.compile), lossNames());
    t.activationOffloading = s.boolean("activation_offloading", d.activationOffloading);
    t.optimizerInBackward = s.boolean("optimizer_in_backward", d.optimizerInBackward);
    t.firstStep = s.boolean("first_step", d.firstStep);
    t.zeroGrad = s.choice<ZeroGrad>("zero_grad", d.zeroGrad, zeroGradNames());
    if (t.firstStep && t.optimizerInBackward)
        throw Error(s.at("first_step"), "a step in the backward makes each state as its parameter's gradient "
                                        "arrives; first_step describes a step after the backward");
    t.pagedOptimizer = s.boolean("paged_optimizer", d.pagedOptimizer);
    if (t.pagedOptimizer && t.optimizer == Optimizer::SgdMomentum)
        throw Error(s.at("paged_optimizer"),
                    "bitsandbytes pages Adam's states (PagedAdamW, PagedAdamW8bit), not SGD's");
    // torchtune refuses both (recipes/full_finetune_single_device.py): a gradient stepped and dropped in
    // the backward cannot accumulate over micro-batches; a pipeline's stages would step each micro-batch.
    if (t.optimizerInBackward && t.gradientAccumulationSteps > 1)
        throw Error(s.at("optimizer_in_backward"),
                    "a step in the backward drops each gradient, so gradient_accumulation_steps must be 1");
    // Megatron's --hidden-dropout and --attention-dropout default to 0.1, whatever the checkpoint's config.
    t.dropout = s.boolean("dropout", t.framework == Framework::Megatron || sc.model.dropout);
    // The optimizer's states per parameter follow the optimizer, its paging and the framework (torchtune's
    // recipes, Hugging Face's Trainer, Unsloth and cs336_basics step bf16 weights with torch.optim, whose
    // states are bf16 too; core/plan/optimizerstate.h); bytes_per_param, when given, has the last word.
    t.bytes.optimizerStates = optimizerStateBytes(t);
    if (const json* b = s.find("bytes_per_param")) {
        if (!b->is_object())
            throw Error("training.bytes_per_param", "must be an object");
        const Section bs(b, "training.bytes_per_param");
        for (const auto& [key, value] : b->items())
            if (key != "weights" && key != "gradients" && key != "master_weights" &&
                key != "optimizer_states")
                throw Error("training.bytes_per_param." + key,
                            "unknown key (weights, gradients, master_weights, optimizer_states)");
        t.bytes.weights = bs.number("weights", t.bytes.weights, 0, 64);
        t.bytes.gradients = bs.number("gradients", t.bytes.gradients, 0, 64);
        t.bytes.masterWeights = bs.number("master_weights", t.bytes.masterWeights, 0, 64);
        t.bytes.optimizerStates = bs.number("optimizer_states", t.bytes.optimizerStates, 0, 64);
        if (b->contains("optimizer_states"))
            t.optimizerStatesGiven = t.bytes.optimizerStates;
        t.bytesOverridden = true;
    }
    if (t.loss == LossKind::Chunked && t.framework != Framework::Torchtune)
        // Only torchtune's recipes have CEWithChunkedOutputLoss; elsewhere the loss keeps its logits, and a
        // user who asked for less should hear that the plan did not give it.
        sc.warnings.push_back(
            "training.loss \"chunked\" is torchtune's CEWithChunkedOutputLoss: with this "
            "framework the loss keeps its usual logits (the output layer fused with the loss, such as "
            "Liger's or Cut Cross-Entropy, is \"fused_linear\")");
    if (t.checkpointing == Checkpointing::SelectiveOp && t.framework != Framework::Torchtitan)
        sc.warnings.push_back("training.activation_checkpointing \"selective_op\" is torchtitan's per-op "
                              "policy; the estimate applies it as torchtitan does");
    if (const json* ds = s.find("deepspeed")) {
        if (!ds->is_object())
            throw Error("training.deepspeed", "must be an object (DeepSpeed's zero_optimization keys)");
        const Section zs(ds, "training.deepspeed");
        for (const auto& [key, value] : ds->items())
            if (key != "reduce_bucket_size" && key != "allgather_bucket_size" &&
                key != "stage3_prefetch_bucket_size" && key != "stage3_max_live_parameters" &&
                key != "overlap_comm")
                throw Error("training.deepspeed." + key,
                            "unknown key (reduce_bucket_size, allgather_bucket_size, "
                            "stage3_prefetch_bucket_size, stage3_max_live_parameters, overlap_comm)");
        DeepSpeedSettings& z = t.deepspeed;
        z.reduceBucketSize = zs.number("reduce_bucket_size", z.reduceBucketSize, 0, 1e12);
        z.allgatherBucketSize = zs.number("allgather_bucket_size", z.allgatherBucketSize, 0, 1e12);
        z.prefetchBucketSize = zs.number("stage3_prefetch_bucket_size", z.prefetchBucketSize, 0, 1e12);
        z.maxLiveParameters = zs.number("stage3_max_live_parameters", z.maxLiveParameters, 0, 1e15);
        if (zs.find("overlap_comm"))
            z.overlapComm = zs.boolean("overlap_comm", false) ? 1 : 0;
        if (t.framework != Framework::DeepSpeed)
            sc.warnings.push_back("training.deepspeed applies only with training.framework \"deepspeed\"");
    }
    readFineTuning(s, sc);
    if (sc.model.known && sc.model.maxPositions > 0 && t.sequenceLength > sc.model.maxPositions)
        sc.warnings.push_back("training.sequence_length " + std::to_string(t.sequenceLength) +
                              " exceeds the model's max_position_embeddings " +
                              std::to_string(sc.model.maxPositions));
    s.reportUnread(sc.warnings);
}

void readInference(const json& doc, Scenario& sc) {
    const auto s = section(doc, "inference", true);
    auto& i = sc.inference;
    const InferenceSettings d;
    i.batchSize = s.integer("batch_size", d.batchSize);
    i.contextLength = s.integer("context_length", d.contextLength);
    i.prefillChunk = s.integer("prefill_chunk", d.prefillChunk);
    // "checkpoint" (the default): as the checkpoint stores its weights, quantization_config included.
    // cs336_basics' parameters are fp32 unless converted: its weights default to fp32.
    const bool cs336 = namesCs336Basics(s);
    if (s.string("weight_dtype", cs336 ? "fp32" : "checkpoint") == "checkpoint") {
        i.weightDtype = "checkpoint";
        i.weightBytes = 2; // what the checkpoint leaves unquantised, and every weight of a 16-bit one
        i.quantised = sc.model.quantization.active();
    } else {
        i.weightBytes = dtype(s, "weight_dtype", cs336 ? "fp32" : d.weightDtype, i.weightDtype);
    }
    // torch.autocast, as in training: matmuls (and so the keys and values they write) in 16 bits.
    i.autocast = s.string("autocast", "none");
    if (i.autocast != "none" && i.autocast != "bf16" && i.autocast != "fp16")
        throw Error(s.at("autocast"), "must be one of none, bf16, fp16; got \"" + i.autocast + "\"");
    i.autocastBytes = i.autocast == "none" ? 0 : 2;
    const std::string gradMode = s.string("grad_mode", "no_grad");
    if (gradMode != "no_grad" && gradMode != "inference_mode" && gradMode != "enabled")
        throw Error(s.at("grad_mode"),
                    "must be one of no_grad, inference_mode, enabled; got \"" + gradMode + "\"");
    i.inferenceMode = gradMode == "inference_mode";
    i.gradEnabled = gradMode == "enabled";
    i.kvCacheBytes = dtype(s, "kv_cache_dtype",
                           i.autocastBytes > 0 ? i.autocast : defaultKvCacheDtype(i.weightDtype, i.weightBytes),
                           i.kvCacheDtype);
    i.kvCacheDtypeGiven = s.find("kv_cache_dtype") != nullptr;
    i.attention = s.choice<Attention>("attention", d.attention, attentionNames());
    i.framework = s.choice<Framework>("framework", d.framework, frameworkNames());
    if (i.framework != Framework::PyTorch && i.framework != Framework::Cs336Basics)
        throw Error(s.at("framework"), "an inference scenario runs \"pytorch\" or \"cs336_basics\" without "
                                       "an engine; the other frameworks serve through inference.engine");
    if (i.attention == Attention::Xformers)
        throw Error(s.at("attention"),
                    "\"xformers\" is Unsloth's training attention; inference runs \"flash\" "
                    "or \"eager\"");

    i.engine = s.choice<Engine>("engine", d.engine, engineNames());
    const bool engine = i.engine == Engine::Vllm || i.engine == Engine::Sglang;
    if (i.framework == Framework::Cs336Basics && i.engine != Engine::None)
        throw Error(s.at("framework"), "cs336_basics runs its own forward: inference.engine must be \"none\"");
    if (i.gradEnabled && i.engine != Engine::None)
        // An engine's forward runs under inference_mode whatever the caller does.
        throw Error(s.at("grad_mode"), "\"enabled\" (a forward that keeps its autograd graph) is planned "
                                       "without an engine; vLLM, SGLang and generate run their forward "
                                       "without autograd");
    i.kvCache = s.boolean("kv_cache", d.kvCache);
    if (!i.kvCache && i.engine != Engine::None)
        throw Error(s.at("kv_cache"),
                    "false (a forward that keeps no KV cache) is planned without an engine; "
                    "vLLM, SGLang and generate keep one");
    // What the forward returns (ForwardLogits), without an engine: an engine computes the logits of the
    // positions it samples.
    i.logits = s.choice<ForwardLogits>("logits", i.usualLogits(), forwardLogitsNames());
    if (s.find("logits") && i.engine != Engine::None)
        throw Error(s.at("logits"), "what the forward returns is planned without an engine; vLLM, SGLang and "
                                    "generate compute the logits of the positions they sample");
    if (i.framework == Framework::Cs336Basics && i.logits != ForwardLogits::All)
        throw Error(s.at("logits"),
                    "cs336_basics' TransformerLM returns every position's logits in its compute "
                    "dtype: \"all\"");
    if (i.gradEnabled && i.logits != ForwardLogits::All)
        throw Error(s.at("logits"),
                    "a forward with autograd on (grad_mode \"enabled\") is planned from the "
                    "training tables, which keep every position's logits in the matmul's dtype: "
                    "\"all\"");
    // Without autograd (or under an engine) the output holds no graph: the setting is said to do nothing
    // (as the window leaves it when the grad mode changes), not refused.
    i.previousOutputHeld = s.boolean("previous_output_held", d.previousOutputHeld);
    if (i.previousOutputHeld && !i.gradEnabled) {
        i.previousOutputHeld = false;
        sc.warnings.push_back(
            "inference.previous_output_held applies to a forward with autograd on (grad_mode "
            "\"enabled\"), whose output keeps its graph: without autograd it changes nothing");
    }
    if (!i.kvCache && i.prefillChunk > 0)
        throw Error(s.at("prefill_chunk"), "a chunked prefill reads the keys and values its earlier chunks "
                                           "cached; with kv_cache false each sequence runs whole");
    if (i.autocastBytes > 0 && i.engine != Engine::None)
        sc.warnings.push_back("inference.autocast applies without an engine: vLLM, SGLang and generate compute "
                              "in the model's dtype");
    // The engines' own defaults: vLLM pages 16 tokens, SGLang 1 (its page_size).
    const int blockDefault = i.engine == Engine::Vllm ? 16 : i.engine == Engine::Sglang ? 1 : d.kvBlockSize;
    i.kvBlockSize = s.find("block_size") ? s.integer("block_size", blockDefault)
                                         : s.integer("kv_block_size", blockDefault);
    if (engine && i.kvBlockSize == 0) // "contiguous" is not an engine's choice: it pages with its default
        i.kvBlockSize = blockDefault;
    // The engine's release (core/serve/engineversions.h): its defaults and what its budget counts.
    double utilization = d.gpuMemoryUtilization;
    if (engine) {
        const EngineVersion* newest = newestEngineVersion(i.engine);
        const std::string name = s.string("engine_version", newest->name);
        const EngineVersion* version = findEngineVersion(i.engine, name);
        if (!version) {
            std::string known;
            for (const EngineVersion& v : engineVersions())
                if (v.engine == i.engine)
                    known += (known.empty() ? "" : ", ") + std::string("\"") + v.name + "\"";
            throw Error(s.at("engine_version"), "'" + name + "' is not a modelled release of this engine (" +
                                                    known + "; docs/serving.md, Engine versions)");
        }
        i.engineVersion = version->name;
        if (i.engine == Engine::Vllm)
            utilization = version->defaultUtilization;
    }
    i.gpuMemoryUtilization = s.number("gpu_memory_utilization", utilization, 0.01, 1);
    if (const json* g = s.find("cuda_graph_gib"); g && engine)
        i.cudaGraphBytes = s.number("cuda_graph_gib", 0, 0, 1024) * 1073741824.0;
    i.memFractionStatic = s.number("mem_fraction_static", d.memFractionStatic, 0, 1);
    i.maxModelLen = s.integer("max_model_len", d.maxModelLen);
    i.maxNumBatchedTokens = s.integer("max_num_batched_tokens", d.maxNumBatchedTokens);
    i.maxNumSeqs = s.integer("max_num_seqs", d.maxNumSeqs);
    i.cudaGraphs = s.boolean("cuda_graphs", d.cudaGraphs);
    i.cudaGraphEstimate = s.boolean("cuda_graph_estimate", d.cudaGraphEstimate);
    i.mambaFullMemoryRatio = s.number("mamba_full_memory_ratio", d.mambaFullMemoryRatio, 0.01, 100);
    // The names vLLM's --mamba-ssm-cache-dtype and SGLang's --mamba-ssm-dtype take (the panel's choices).
    const std::string ssm = s.string("mamba_ssm_cache_dtype", mambaSsmCacheDtypeNames().front().name);
    if (std::none_of(mambaSsmCacheDtypeNames().begin(), mambaSsmCacheDtypeNames().end(),
                     [&](const NamedText& n) { return ssm == n.name; }))
        throw Error(s.at("mamba_ssm_cache_dtype"), "'" + ssm +
                                                       "' is not a state dtype the engines take (\"auto\", "
                                                       "\"float32\", \"bfloat16\" or \"float16\")");
    i.mambaSsmCacheBytes = ssm == "auto" ? 0 : static_cast<int>(dtypeBytes().at(ssm));
    const std::string sampler = s.string("sampler", samplerNames().front().name);
    if (std::none_of(samplerNames().begin(), samplerNames().end(),
                     [&](const NamedText& n) { return sampler == n.name; }))
        throw Error(s.at("sampler"), "'" + sampler + "' is not a sampler (\"pytorch\" or \"flashinfer\")");
    i.flashinferSampler = sampler == "flashinfer";
    const std::string chunked = s.string("chunked_layers", chunkedLayerNames().front().name);
    if (std::none_of(chunkedLayerNames().begin(), chunkedLayerNames().end(),
                     [&](const NamedText& n) { return chunked == n.name; }))
        throw Error(s.at("chunked_layers"),
                    "'" + chunked + "' is not a choice (\"release\", \"pooled\" or \"full\")");
    i.poolChunkedLayers = chunked == "pooled" ? 1 : chunked == "full" ? 0 : -1;
    if (s.find("nccl_nvls"))
        i.ncclNvls = s.boolean("nccl_nvls", true) ? 1 : 0;
    const EngineVersion* release = engine ? findEngineVersion(i.engine, i.engineVersion) : nullptr;
    if (i.poolChunkedLayers >= 0 && engine && !(release && hasHybridAllocator(*release)))
        sc.warnings.push_back(
            "inference.chunked_layers applies to vLLM's V1 engine, whose hybrid allocator pools "
            "layer kinds apart; it changes nothing here");
    if (i.flashinferSampler && i.engine == Engine::Vllm)
        if (const EngineVersion* v = findEngineVersion(i.engine, i.engineVersion);
            v && v->flashinferSamplerBytes <= 0)
            sc.warnings.push_back("inference.sampler \"flashinfer\" does not change " + i.engineVersion +
                                  "'s profiled step: its dummy sampler run never takes FlashInfer's path "
                                  "(docs/serving.md, Engine versions)");
    if (s.find("cuda_graph_estimate") && engine && !(release && release->cudaGraphsInBudget))
        sc.warnings.push_back(
            "inference.cuda_graph_estimate applies to releases that estimate their CUDA graphs "
            "inside the budget (vLLM from 0.21: vllm 0.31); " +
            std::string(release ? release->name : i.engineVersion.c_str()) +
            " sizes its pool without them whatever it says");
    if (i.flashinferSampler && i.engine == Engine::Sglang)
        sc.warnings.push_back("inference.sampler applies to vLLM: SGLang's sampler is planned as its own "
                              "(docs/serving.md)");
    if (!engine)
        for (const char* key :
             {"gpu_memory_utilization", "mem_fraction_static", "max_num_batched_tokens", "max_num_seqs",
              "cuda_graphs", "cuda_graph_estimate", "mamba_ssm_cache_dtype", "mamba_full_memory_ratio",
              "engine_version", "cuda_graph_gib", "sampler", "chunked_layers", "nccl_nvls"})
            if (s.find(key))
                sc.warnings.push_back(std::string("inference.") + key +
                                      " only applies to a serving engine (inference.engine vllm or sglang)");
    // transformers' DynamicCache is one contiguous tensor per layer in the model's compute dtype: an 8-bit
    // checkpoint still computes, and caches, in bf16.
    if (i.engine == Engine::HuggingFace) {
        if (!i.kvCacheDtypeGiven && i.kvCacheBytes < 2) {
            i.kvCacheBytes = 2;
            i.kvCacheDtype = "bf16";
        }
        if (i.kvBlockSize > 0)
            sc.warnings.push_back("inference.kv_block_size does not apply to Hugging Face generate: its "
                                  "DynamicCache is contiguous");
        if (i.kvCacheDtypeGiven && i.kvCacheBytes < 2)
            sc.warnings.push_back(
                "inference.kv_cache_dtype " + i.kvCacheDtype +
                ": Hugging Face generate's DynamicCache keeps keys and values in the model's "
                "dtype (its quantised caches are int2/int4 through optimum-quanto or HQQ)");
    }
    s.reportUnread(sc.warnings);
}

void readCluster(const json& doc, Scenario& sc) {
    const auto s = section(doc, "cluster", true);
    auto& c = sc.cluster;
    c.gpu = s.string("gpu", "H100-SXM-80GB");
    const GpuSpec* gpu = findGpu(c.gpu);
    const json* gib = s.find("gpu_memory_gib");
    if (!gpu && !gib) {
        std::string names;
        for (const auto& g : gpuCatalogue())
            names += (names.empty() ? "" : ", ") + g.name;
        throw Error("cluster.gpu",
                    "unknown GPU '" + c.gpu + "' (known: " + names + "; or give gpu_memory_gib)");
    }
    if (gpu) {
        c.gpu = gpu->name;
        c.capacityBytes = gpu->memoryBytes;
        c.pcieGBps = gpu->pcieGBps;
    }
    if (gib) {
        const double g = s.number("gpu_memory_gib", 0, 0.001, 1 << 20);
        c.capacityBytes = static_cast<std::uint64_t>(std::llround(g * 1073741824.0));
        // A GPU given by its memory alone is named by it, not by the default GPU's (the title, the setup
        // line and the report print the name).
        if (!s.find("gpu")) {
            char name[48];
            std::snprintf(name, sizeof name, "GPU-%gGiB", g);
            c.gpu = name;
        }
    }
    c.pcieGBps = s.number("pcie_gb_per_s", c.pcieGBps, 0.001, 1e6);
    c.numGpus = s.integer("num_gpus", 1);
    c.gpusPerNode = s.integer("gpus_per_node", std::min(8, c.numGpus));
    c.gpusPerNodeGiven = s.find("gpus_per_node") != nullptr;
    c.dataParallelName = s.string("data_parallel", "ddp");
    c.dataParallel = s.choice<DataParallel>("data_parallel", DataParallel::Ddp, dataParallelNames());
    c.tensorParallel = s.integer("tensor_parallel", 1);
    c.pipelineParallel = s.integer("pipeline_parallel", 1);
    c.virtualStages = s.integer("virtual_pipeline_stages", 1);
    c.microbatchGroupSize = s.integer("microbatch_group_size_per_vp_stage", 0);
    if (c.microbatchGroupSize > 0 && c.virtualStages <= 1)
        sc.warnings.push_back("cluster.microbatch_group_size_per_vp_stage has no effect without "
                              "virtual_pipeline_stages");
    c.sequenceParallel = s.boolean("sequence_parallel", false);
    c.contextParallel = s.integer("context_parallel", 1);
    c.expertParallel = s.integer("expert_parallel", 1);
    c.offloadOptimizer = s.boolean("offload_optimizer", false);
    c.offloadParameters = s.boolean("offload_parameters", false);
    c.offloadStep = s.choice<OffloadStep>("offload_optimizer_step", OffloadStep::Cpu, offloadStepNames());
    c.prefetch = s.boolean("prefetch", true);
    c.expandableSegments = s.boolean("expandable_segments", defaultExpandableSegments(doc));
    c.cublasWorkspaceConfig = s.string("cublas_workspace_config", "");
    if (!c.cublasWorkspaceConfig.empty() && !cublasWorkspaceConfigBytes(c.cublasWorkspaceConfig))
        throw Error(
            "cluster.cublas_workspace_config",
            "'" + c.cublasWorkspaceConfig +
                "' is not CUBLAS_WORKSPACE_CONFIG's \":SIZE:COUNT\" pairs (\":4096:8\", \":4096:2:16:8\"), "
                "sizes in KiB, at most 1 TiB in all");

    checkLayout(sc);
    const int dp = c.dataParallelSize();
    if (c.sequenceParallel && c.tensorParallel == 1)
        sc.warnings.push_back("cluster.sequence_parallel has no effect without tensor parallelism");
    if (c.dataParallel == DataParallel::HybridShard && dp == 1)
        sc.warnings.push_back("hybrid_shard with a data-parallel size of 1 shards nothing");
    s.reportUnread(sc.warnings);
}

void readOverheads(const json& doc, Scenario& sc) {
    const auto s = section(doc, "overheads", false);
    auto& o = sc.overheads;
    o.cudaContextBytes = static_cast<std::uint64_t>(
        s.number("cuda_context_mib", 512, 0, integerRange("/overheads/cuda_context_mib").max) * 1048576.0);
    o.ncclBytesPerCommunicator =
        static_cast<std::uint64_t>(s.number("nccl_mib_per_communicator", 384, 0,
                                            integerRange("/overheads/nccl_mib_per_communicator").max) *
                                   1048576.0);
    o.allocatorOverheadFractionGiven = s.find("allocator_overhead_fraction") != nullptr;
    o.allocatorOverheadFraction =
        s.number("allocator_overhead_fraction",
                 defaultAllocatorOverheadFraction(sc.cluster.expandableSegments), 0, 10);
    o.ddpGradientAsBucketView = s.boolean("ddp_gradient_as_bucket_view", false);
    s.reportUnread(sc.warnings);
}

void readCalibrationFactors(const json& calibration, const json& f, const std::string& at, Scenario& sc);

// Whether a calibration's own_profile factors plan this scenario in place of its factors: these were fitted
// against the tables of code (Calibration::codeTables) that cannot run it, in its mode (looked at before the
// factors are read, so that only one set is; a file whose keys are not of these types is read as it comes,
// and its errors said there).
bool ownProfileFactorsPlan(const json& f, const Scenario& sc) {
    const auto tables = f.find("code_tables"), code = f.find("code"), on = f.find("measured_on");
    Calibration peek;
    peek.present = true;
    peek.codeTables = tables != f.end() && tables->is_boolean() && tables->get<bool>();
    if (code != f.end() && code->is_string() &&
        code->get<std::string>() == nameOf(frameworkNames(), Framework::Cs336Basics))
        peek.code = Framework::Cs336Basics;
    if (on != f.end()) {
        if (!on->is_string() || (*on != "training" && *on != "inference"))
            return false;
        peek.measuredOn = *on == "training" ? Mode::Training : Mode::Inference;
    }
    return codeTablesFor(sc, peek) == CodeTables::CannotRun;
}

void readCalibration(const json& doc, Scenario& sc) {
    const auto it = doc.find("calibration");
    if (it == doc.end() || it->is_null())
        return;
    if (!it->is_object())
        throw Error("calibration", "must be an object");
    const auto f = it->find("factors");
    if (f == it->end() || !f->is_object())
        throw Error("calibration.factors", "missing: an object of fitted factors");
    // calibrate writes beside factors fitted against a code's tables the same runs' factors against the
    // scenario's own profile (CalibrationResult::ownProfile): a plan that code cannot run (grouped-query
    // attention, tensor parallelism, adapters) is made with that profile, so with those.
    const auto own = f->find("own_profile");
    if (own != f->end()) {
        if (!own->is_object())
            throw Error("calibration.factors.own_profile", "must be an object of fitted factors");
        if (own->contains("own_profile"))
            throw Error("calibration.factors.own_profile.own_profile",
                        "is not read: the own profile's factors have none of their own");
        if (ownProfileFactorsPlan(*f, sc)) {
            readCalibrationFactors(*it, *own, "calibration.factors.own_profile", sc);
            sc.warnings.push_back(
                "calibration.factors.own_profile: the factors were fitted against the tables of " +
                f->at("code").get<std::string>() +
                ", the code the runs ran, which cannot run this scenario's model or settings: it is planned "
                "with the factors the same runs gave against the " +
                nameOf(frameworkNames(), plannedFramework(sc)) + " profile's own tables");
            return;
        }
        // Not this plan's, but read all the same, so that a file's error is said whatever plan reads it.
        Scenario unused = sc;
        readCalibrationFactors(*it, *own, "calibration.factors.own_profile", unused);
    }
    readCalibrationFactors(*it, *f, "calibration.factors", sc);
}

void readCalibrationFactors(const json& calibration, const json& f, const std::string& at, Scenario& sc) {
    const auto* it = &calibration;
    const Section factors(&f, at);
    Calibration& c = sc.calibration;
    c.present = true;
    constexpr double scale = Calibration::kMostScale;
    for (const CalibrationFactor& k : kCalibrationFactors)
        c.*k.member = factors.number(k.key, k.absent, k.least, k.most);
    c.gradientsHeld = factors.boolean("gradients_held", false);
    if (factors.find("code"))
        c.code = factors.choice<Framework>("code", Framework::PyTorch, frameworkNames());
    c.codeOptimizer = c.code && factors.boolean("code_optimizer", false);
    c.codeTables = c.code && factors.boolean("code_tables", false);
    if (factors.find("logits_measured_with")) {
        c.logitsMeasuredWith = factors.choice<LossKind>("logits_measured_with", LossKind::Full, lossNames());
        if (c.logits >= 0 && sc.mode == Mode::Training && !c.logitsFactorAppliesTo(sc.training))
            sc.warnings.push_back(
                "calibration.factors.logits_measured_with: the loss's vocabulary-sized tensors "
                "were measured with the loss \"" +
                nameOf(lossNames(), *c.logitsMeasuredWith) + "\" and this plan's is \"" +
                nameOf(lossNames(), sc.training.plannedLoss()) +
                "\": that loss's are planned, not the measured ones");
    }
    if (factors.find("optimizer_step_measured_with")) {
        c.stepMeasuredWith = factors.choice<OptimizerImpl>("optimizer_step_measured_with",
                                                           OptimizerImpl::ForEach, optimizerImplNames());
        const bool measured = c.stepScratchBytesPerParameter >= 0 || c.stepScratchLargestTensors >= 0;
        if (measured && sc.mode == Mode::Training && !c.stepScratchAppliesTo(sc.training))
            sc.warnings.push_back(
                "calibration.factors.optimizer_step_measured_with: the optimizer step's scratch was measured "
                "with AdamW's " +
                nameOf(optimizerImplNames(), *c.stepMeasuredWith) +
                " implementation and this plan steps with " +
                nameOf(optimizerImplNames(), sc.training.optimizerImpl) +
                ": that implementation's temporaries are planned, not the measured ones");
    }
    // A run calibrate said the scenario may not describe (CalibrationRun::mismatch): every figure of the plan
    // carries its factors, so the plan says so wherever the file is opened. The runs are calibrate's record,
    // otherwise not read; a few are looked at, each sentence cut to a bound.
    if (const auto runs = it->find("runs"); runs != it->end() && runs->is_array())
        for (std::size_t i = 0; i < std::min<std::size_t>(runs->size(), 64); ++i) {
            const json& run = (*runs)[i];
            if (!run.is_object())
                continue;
            const auto m = run.find("mismatch");
            if (m == run.end() || !m->is_string())
                continue;
            std::string said = m->get<std::string>();
            if (said.size() > 2000) {
                // Cut at a character's first byte: the warning is written out as JSON, which must be UTF-8.
                std::size_t cut = 2000;
                while (cut > 0 && (static_cast<unsigned char>(said[cut]) & 0xC0) == 0x80)
                    --cut;
                said = said.substr(0, cut) + "...";
            }
            sc.warnings.push_back("calibration.runs[" + std::to_string(i) + "]: " + said +
                                  " (its factors are in every figure of this plan)");
        }
    if (const std::string on = factors.string("measured_on", ""); on == "training" || on == "inference")
        c.measuredOn = on == "training" ? Mode::Training : Mode::Inference;
    else if (!on.empty())
        throw Error(at + ".measured_on", "must be \"training\" or \"inference\"; got \"" + on + "\"");
    if (!c.measuredIn(sc.keptAs())) {
        const bool training = sc.keptAs() == Mode::Training;
        const char* plan = sc.mode == Mode::Training ? "a training plan"
                           : training                ? "a forward with autograd on"
                                                     : "an inference plan";
        sc.warnings.push_back(
            std::string("calibration.factors.measured_on: calibrated on ") +
            (training ? "forward-only runs without autograd" : "training runs or forwards with autograd on") +
            " and this is " + plan + ": what " +
            (training ? "a forward holds one layer at a time is not what autograd keeps for the backward"
                      : "autograd keeps for the backward is not what a forward holds one layer at a time") +
            ", so the tokens' and the scores' factors are not applied (the workspaces are); calibrate on a " +
            (training ? "training" : "forward-only") + " run of this code to know");
        return;
    }
    // Planned with another profile than the one it names: said, whether the code's tables apply or not
    // (only in the mode the factors were measured in, as calibratedCode in core/plan/estimator.cpp).
    if (const CodeTables tables = codeTablesFor(sc, c); tables != CodeTables::NotFitted) {
        const std::string code = nameOf(frameworkNames(), *c.code);
        sc.warnings.push_back(
            tables == CodeTables::Planned
                ? "calibration.factors.code_tables: planned with the tables of " + code +
                      ", the code the runs ran (their stacks name it), which the factors were fitted "
                      "against; `headroom-cli calibrate --own-profile` fits this scenario's own profile"
                : "calibration.factors.code_tables: the factors were fitted against the tables of " + code +
                      ", the code the runs ran, which cannot run this scenario's model or settings: they are "
                      "applied to the " +
                      nameOf(frameworkNames(), plannedFramework(sc)) +
                      " profile's tables, which keep other copies of its tensors (a calibration written "
                      "since calibrate fits both sets has calibration.factors.own_profile for this)");
    }
    // A factor per activation width: {"2": x, "4": y}.
    auto byDtype = [&](const char* key, std::vector<std::pair<double, double>>& into) {
        const auto by = f.find(key);
        if (by == f.end())
            return;
        const std::string by_at = at + "." + key;
        if (!by->is_object() || by->size() > 4)
            throw Error(
                by_at,
                "must be an object of at most four dtype widths (\"1\", \"2\", \"4\", \"8\") to factors");
        for (const auto& [width, value] : by->items()) {
            if (width != "1" && width != "2" && width != "4" && width != "8")
                throw Error(by_at + "." + width, "is not a dtype width: \"1\", \"2\", \"4\" or \"8\"");
            if (!value.is_number() || !(value.get<double>() >= 0) || value.get<double>() > scale)
                throw Error(by_at + "." + width,
                            "must be a number from 0 to " + std::to_string(static_cast<int>(scale)));
            into.emplace_back(std::stod(width), value.get<double>());
        }
    };
    byDtype("quadratic_by_activation_bytes", c.quadraticByDtype);
    byDtype("logits_by_activation_bytes", c.logitsByDtype);
    if (!c.quadraticFor(sc.activationDtypeBytes())) {
        auto number = [](double v) {
            std::ostringstream o;
            o << v;
            return o.str();
        };
        const double e = sc.activationDtypeBytes();
        if (const auto q = c.forwardScoresFromFp32(e);
            q && sc.mode == Mode::Inference && sc.inference.autocastBytes > 0) {
            const double copies = 2 * *q;
            const std::string low = number(copies * e + 4 - e), high = number(copies * 4 + e - 4);
            sc.warnings.push_back(
                "calibration.factors.quadratic was measured on fp32 runs only: " + number(copies) +
                " score-sized tensors at once inside the attention. Beyond the 16-bit scores "
                "and the softmax's fp32 output, which of them autocast runs in " +
                number(e) +
                " bytes and which in fp32 no fp32 run says: each is planned at "
                "the mean of the two widths, " +
                number(copies * (e + 4) / 2) + " bytes a score, where they may hold from " + low + " to " +
                high + "; calibrate on an autocast run to know");
            return;
        }
        const std::string text =
            "calibration.factors.quadratic (x" + number(c.quadratic) + ") was measured with " +
            number(c.quadraticActivationBytes) + "-byte activations and this scenario's are " +
            number(sc.activationDtypeBytes()) +
            " bytes: which copies of the attention scores exist depends on the dtype each op runs in, so it "
            "is not applied (the tokens-linear factor is)";
        sc.warnings.push_back(text);
    }
}

} // namespace

nlohmann::json parseJsonText(const std::string& text) {
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        throw Error("byte " + std::to_string(e.byte), "invalid JSON: " + jsonExceptionText(e));
    } catch (const json::exception& e) {
        // out_of_range: a number no double holds (1e400), which nlohmann reports without an offset.
        throw Error("", "invalid JSON: " + jsonExceptionText(e));
    }
}

namespace {

// An engine refuses to load FP8 weights on a GPU below its release's minimum (the quantisation config's
// get_min_capability): the plan still sizes them, and says so.
void checkEngineFp8(Scenario& sc) {
    const InferenceSettings& in = sc.inference;
    if (in.engine != Engine::Vllm && in.engine != Engine::Sglang)
        return;
    const bool fp8 = in.weightDtype == "fp8" ||
                     (in.quantised && sc.model.quantization.method == Quantization::Method::Fp8);
    const EngineVersion* version = engineVersionOf(sc);
    const double cc = computeCapability(sc.cluster.gpu);
    if (!fp8 || !version || cc >= version->fp8WeightsMinCapability)
        return;
    char text[256];
    std::snprintf(text, sizeof text,
                  "%s: %s loads FP8 weights on compute capability %.1f and above, and %s is %.1f: the "
                  "engine refuses them (its Fp8Config's minimum capability)",
                  in.weightDtype == "fp8" ? "inference.weight_dtype fp8" : "model: an FP8 checkpoint",
                  version->name, version->fp8WeightsMinCapability, sc.cluster.gpu.c_str(), cc);
    sc.warnings.push_back(text);
}

// What Unsloth runs (docs/frameworks.md, "Unsloth"): one GPU or data-parallel copies, whole layers
// checkpointed or none (use_gradient_checkpointing), its own attention kernels.
void checkUnsloth(Scenario& sc) {
    const ClusterSettings& c = sc.cluster;
    const TrainingSettings& t = sc.training;
    if (c.tensorParallel > 1 || c.pipelineParallel > 1 || c.contextParallel > 1 || c.expertParallel > 1)
        throw Error("training.framework",
                    "Unsloth trains on one GPU or data-parallel copies: tensor, pipeline, "
                    "context and expert parallel must be 1");
    if (t.checkpointing == Checkpointing::Selective || t.checkpointing == Checkpointing::SelectiveOp)
        throw Error("training.activation_checkpointing",
                    "Unsloth checkpoints whole layers (use_gradient_checkpointing): \"none\" or \"full\"");
    if (t.attention == Attention::Eager)
        sc.warnings.push_back("training.attention \"eager\": Unsloth runs its own attention (flash-attn, "
                              "xformers or SDPA), planned as \"flash\" would be");
    // unsloth/models/_utils.py: flash-attn only from compute capability 8 (HAS_FLASH_ATTENTION), xformers'
    // path below it whatever is installed.
    if (t.attention != Attention::Xformers && computeCapability(c.gpu) < 8.0) {
        sc.training.attention = Attention::Xformers;
        sc.warnings.push_back("training.attention: Unsloth runs flash-attn only on compute capability 8.0 "
                              "and above; " +
                              c.gpu +
                              " runs xformers' path, planned (K and V expanded to "
                              "every query head)");
    }
    if (const std::string why = unslothFallback(sc); !why.empty())
        sc.warnings.push_back("training.framework \"unsloth\": " + why +
                              ", so the layers are planned as PEFT's (the huggingface profile's)");
}

// What cs336_basics' model is (docs/frameworks.md, "CS336 basics"): a dense decoder with multi-head
// attention (no grouped keys), a SwiGLU MLP, no tensor, pipeline or context parallelism, its attention
// written by hand, its blocks checkpointed whole or not at all; the training and the inference section alike.
void checkCs336Basics(Scenario& sc) {
    const bool training = sc.mode == Mode::Training;
    const std::string section = training ? "training" : "inference";
    const ClusterSettings& c = sc.cluster;
    const ModelSpec& m = sc.model;
    if (c.tensorParallel > 1 || c.pipelineParallel > 1 || c.contextParallel > 1 || c.expertParallel > 1)
        throw Error(section + ".framework", "cs336_basics' model runs whole on each GPU: tensor, pipeline, "
                                            "context and expert parallel must be 1");
    if (!m.known)
        throw Error(section + ".framework", "cs336_basics is planned from the model's shape: give the model's "
                                            "config, not only its parameter count");
    if (m.isMoe() || m.mla || !m.gatedMlp || !m.linearLayers.empty() || m.kvHeads != m.heads ||
        m.headDim * m.heads != m.hidden)
        throw Error("model", "cs336_basics' TransformerLM is a dense decoder with multi-head attention "
                             "(num_key_value_heads = num_attention_heads, head_dim = hidden_size / heads) and "
                             "a SwiGLU MLP");
    if (training) {
        TrainingSettings& t = sc.training;
        if (t.checkpointing == Checkpointing::Selective || t.checkpointing == Checkpointing::SelectiveOp)
            throw Error("training.activation_checkpointing",
                        "cs336_basics' blocks are checkpointed whole (torch.utils.checkpoint) or not at all: "
                        "\"none\" or \"full\"");
        if (t.checkpointEvery > 1)
            throw Error("training.checkpoint_every", "cs336_basics is planned with every block checkpointed");
        if (t.fineTuning.method != FineTuneMethod::Full)
            throw Error("training.fine_tuning.method", "cs336_basics trains every weight of its own modules "
                                                       "(PEFT's adapters wrap nn.Linear, which it has not): "
                                                       "\"full\"");
        if (t.compile)
            sc.warnings.push_back("training.compile: Inductor's fused kernels keep fewer of the layers' "
                                  "tensors than the eager code planned here (the optimizer step is the same)");
        if (t.loss != LossKind::Full)
            sc.warnings.push_back("training.loss: cs336_basics' cross_entropy is planned as written");
    }
    const json& doc = sc.document;
    if (doc.contains(section) && doc.at(section).is_object() && doc.at(section).contains("attention") &&
        (training ? sc.training.attention : sc.inference.attention) != Attention::Eager)
        sc.warnings.push_back(section + ".attention: cs336_basics writes its attention by hand (scores, "
                                        "mask, softmax), planned as it does whatever this says");
}

} // namespace

namespace {
Scenario readScenario(const json& doc, const std::string& baseDir);

// Top-level keys other than the sections are free-form metadata (docs/formats.md section 2), but one a
// section reads is a setting put at the wrong level, planned as if absent without a word (a top-level
// "fine_tuning" planned a full fine-tune): it is said, with the section that reads it. Which section does
// is asked of the reader itself, moving the key there (only when such a key is present).
void reportMisplacedSettings(const json& doc, const std::string& baseDir, Scenario& sc) {
    static const std::set<std::string> sections = {"schema",    "name",    "model",     "training",
                                                   "inference", "cluster", "overheads", "calibration"};
    std::vector<std::string> free;
    for (const auto& [key, value] : doc.items())
        if (!sections.count(key) && key.rfind("x_", 0) != 0)
            free.push_back(key);
    if (free.empty() || free.size() > 16)
        return;
    json base = doc;
    for (const std::string& key : free)
        base.erase(key);
    for (const std::string& key : free)
        for (const char* section :
             {sc.mode == Mode::Training ? "training" : "inference", "cluster", "overheads"}) {
            const auto it = base.find(section);
            if (it != base.end() && (!it->is_object() || it->contains(key)))
                continue;
            json moved = base;
            moved[section][key] = doc[key];
            const std::string path = std::string(section) + "." + key;
            bool reads = false;
            try {
                const Scenario probe = readScenario(moved, baseDir);
                reads = std::none_of(probe.warnings.begin(), probe.warnings.end(),
                                     [&](const std::string& w) { return w.rfind(path + " ", 0) == 0; });
            } catch (const Error& e) {
                reads = e.where().rfind(path, 0) == 0; // read there, with a value it refuses
            } catch (const std::exception&) {
            }
            if (reads) {
                sc.warnings.push_back(key +
                                      " at the top of the scenario is metadata, not a setting: planned as if "
                                      "absent (did you mean " +
                                      path + "?)");
                break;
            }
        }
}
} // namespace

Scenario scenarioFromJson(const json& doc, const std::string& baseDir) {
    Scenario sc = readScenario(doc, baseDir);
    if (doc.is_object())
        reportMisplacedSettings(doc, baseDir, sc);
    return sc;
}

namespace {
Scenario readScenario(const json& doc, const std::string& baseDir) {
    if (!doc.is_object())
        throw Error("", "a scenario must be a JSON object");
    Scenario sc;
    sc.document = doc;
    sc.baseDir = baseDir;
    auto schema = doc.find("schema");
    if (schema != doc.end() && (!schema->is_string() || schema->get<std::string>() != kScenarioSchema))
        throw Error("schema", std::string("must be \"") + kScenarioSchema + "\", got " + schema->dump());
    if (auto name = doc.find("name"); name != doc.end()) {
        if (!name->is_string())
            throw Error("name", "must be a string");
        sc.name = name->get<std::string>();
    }
    const bool training = doc.contains("training"), inference = doc.contains("inference");
    if (training && inference)
        throw Error("inference", "a scenario has either \"training\" or \"inference\", not both");
    if (!training && !inference)
        throw Error("training", "missing (or give \"inference\" for an inference scenario)");
    sc.mode = inference ? Mode::Inference : Mode::Training;
    try {
        readModel(doc, baseDir, sc);
        if (sc.mode == Mode::Training)
            readTraining(doc, sc);
        else
            readInference(doc, sc);
        readCluster(doc, sc);
        // A pipeline's micro-batches must all add to the gradients before a step: no step in the backward.
        if (sc.mode == Mode::Training && sc.training.optimizerInBackward && sc.cluster.pipelineParallel > 1)
            throw Error("training.optimizer_in_backward",
                        "cannot step in the backward of a pipeline (pipeline_parallel > 1)");
        if (sc.mode == Mode::Training && sc.training.framework == Framework::Unsloth)
            checkUnsloth(sc);
        else if ((sc.mode == Mode::Training ? sc.training.framework : sc.inference.framework) ==
                 Framework::Cs336Basics)
            checkCs336Basics(sc);
        else if (sc.mode == Mode::Training && sc.training.optimizerImpl == OptimizerImpl::Cs336Basics &&
                 !doc.contains("calibration"))
            // The package's AdamW says the code is CS336's; its layers are written by hand too, and keep
            // more than the generic modules another profile plans (its softmax's exp and quotient, its SiLU's
            // sigmoid, its cross-entropy's copies of the logits).
            sc.warnings.push_back(
                "training.optimizer_implementation: cs336_basics' AdamW, with the layers planned by the " +
                std::string(nameOf(frameworkNames(), sc.training.framework)) +
                " profile: the package writes its attention, softmax, SiLU and cross-entropy by hand and "
                "keeps more than these layers do; training.framework \"cs336_basics\" plans its code op by "
                "op (or calibrate this plan on a trace of the run)");
        else if (sc.mode == Mode::Training && sc.training.attention == Attention::Xformers)
            throw Error("training.attention",
                        "\"xformers\" is Unsloth's attention path (training.framework "
                        "\"unsloth\"); the other frameworks run \"flash\" or \"eager\"");
        if (sc.mode == Mode::Inference)
            checkEngineFp8(sc);
        readOverheads(doc, sc);
        readCalibration(doc, sc);
    } catch (const json::exception& e) {
        // Every value is type-checked where it is read, naming its path; this is the net under that, so
        // that a check someone forgets is an error message and never an abort.
        throw Error("", "a value has the wrong JSON type: " + jsonExceptionText(e));
    }
    if (!sc.model.known)
        sc.warnings.push_back(
            "the model is known only by its parameter count: activations, attention scores, "
            "logits, gather buffers and KV cache are not estimated (0)");
    if (!sc.model.linearLayers.empty()) {
        // What the hybrid models' linear-attention layers are modelled for: their weights everywhere, their
        // state per request in vLLM's pool, transformers' generate and plain inference.
        if (sc.mode == Mode::Training)
            sc.warnings.push_back(
                sc.model.linearKind == ModelSpec::LinearKind::Mamba2
                    ? "model: the Mamba-2 layers' activations are planned as an attention layer's; what "
                      "their chunked scan saves for the backward is not modelled yet"
                    : "model: the linear-attention (Gated DeltaNet) layers' activations are planned "
                      "as an attention layer's; what their chunked delta rule saves for the "
                      "backward is not modelled yet");
        else if (const EngineVersion* v = findEngineVersion(sc.inference.engine, sc.inference.engineVersion);
                 sc.inference.engine == Engine::Sglang && !(v && v->sglangStatePool))
            sc.warnings.push_back(
                "model: SGLang keeps the linear-attention layers' states in a pool of its own "
                "(--max-mamba-cache-size, --mamba-full-memory-ratio), modelled from sglang 0.5 on: "
                "here the KV pool is planned for the attention layers alone");
    }
    if (!sc.model.blockParts.empty() && sc.mode == Mode::Training)
        sc.warnings.push_back("model: each of Nemotron-H's blocks (a mixer or an MLP alone) is planned in "
                              "training as a whole layer's activations, an over-estimate until its blocks "
                              "are modelled apart");
    return sc;
}
} // namespace

Scenario loadScenarioFile(const std::string& path) {
    try {
        const json doc = parseJsonText(readTextFile(path));
        const auto dir = std::filesystem::path(path).parent_path();
        return scenarioFromJson(doc, dir.empty() ? "." : dir.string());
    } catch (const Error& e) {
        throw Error(e.where().empty() ? path : path + ": " + e.where(), e.why());
    }
}

std::string scenarioToJsonString(const Scenario& scenario) {
    return jsonText(scenario.document, 2) + "\n";
}

json defaultTrainingSection() {
    const TrainingSettings d;
    return {{"micro_batch_size", d.microBatchSize},
            {"sequence_length", d.sequenceLength},
            {"gradient_accumulation_steps", d.gradientAccumulationSteps},
            {"precision", d.precision},
            {"optimizer", nameOf(optimizerNames(), d.optimizer)},
            {"activation_checkpointing", nameOf(checkpointingNames(), d.checkpointing)},
            {"attention", nameOf(attentionNames(), d.attention)}};
}

json defaultInferenceSection() {
    const InferenceSettings d;
    // No kv_cache_dtype: left out, the KV cache follows the compute dtype.
    return {{"batch_size", d.batchSize},
            {"context_length", d.contextLength},
            {"kv_block_size", d.kvBlockSize},
            {"attention", nameOf(attentionNames(), d.attention)}};
}

json defaultScenarioDocument() {
    return json::parse(data::default_headroom_json());
}

} // namespace headroom
