// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/planner/settingspanel.h"

#include "core/serve/engines.h"
#include "core/serve/engineversions.h"

#include "core/plan/finetuning.h"
#include "core/plan/settingnames.h"

#include "core/error.h"
#include "core/io/bytesformat.h"
#include "core/io/scenariojson.h"
#include "core/model/presets.h"
#include "core/plan/gpucatalogue.h"
#include "ui/planner/scenariodocument.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <functional>

namespace headroom {

using nlohmann::json;

struct SettingsPanel::Field {
    enum Kind { Int, Bool, Choice } kind = Int;
    QString pointer;
    QString label;
    QString tip;
    int min = 1, max = 1, fallback = 1; // min and max: the spin box, as the reader accepts
    int sliderMin = 1, sliderMax = 1;   // the span the slider covers
    bool log = false;
    std::vector<std::pair<QString, QString>> choices; // value, display text
    QString fallbackChoice;
    // When the default depends on other settings (the reader resolves it from them), what it is for `doc`.
    std::function<QString(const nlohmann::json& doc)> fallbackChoiceFor;
    // An Int's default as the reader resolved it (a release's gpu_memory_utilization).
    std::function<int()> fallbackFor;
    bool fallbackBool = false;
    std::function<bool(const nlohmann::json& doc)> fallbackBoolFor; // a default that depends on other keys
    // Widgets.
    QSlider* slider = nullptr;
    QSpinBox* spin = nullptr;
    QCheckBox* check = nullptr;
    QComboBox* combo = nullptr;
    QWidget* row = nullptr;
    QFormLayout* form = nullptr;
    bool trainingOnly = false; // hidden when planning inference (sharding, offload, sequence parallelism)
    // Shown only when this holds for the document (settings that only mean something with another one).
    std::function<bool(const nlohmann::json& doc)> visibleWhen;
    // Written only while shown: one of several fields for the same key (a framework's release), whose
    // others stand for other frameworks.
    bool onlyWhenShown = false;
    // How a value the list does not offer reads (a release between the listed ones); as it is when unset.
    std::function<QString(const QString& value)> describe;
    // An Int shown as this many times what the file stores: 100 for a fraction shown in percent
    // (gpu_memory_utilization), 1024 for GiB shown in MiB, as nvidia-smi prints them (gpu_memory_gib).
    int scale = 0;
    // A choice's companion key in the same section, dropped when the choice changes: the engine's
    // engine_version names that engine, and gpu_memory_gib was the last GPU's memory.
    std::string clears;
    json stored(int v) const { return scale ? json(double(v) / scale) : json(v); }
    // Shown only for these inference engines ("" = always); batch_size is for no engine only.
    QStringList engines;

    static constexpr int kSteps = 1000;
    int toSlider(int v) const {
        if (!log)
            return std::clamp(v, sliderMin, sliderMax);
        const double t = (std::log(double(std::max(v, sliderMin))) - std::log(double(sliderMin))) /
                         (std::log(double(sliderMax)) - std::log(double(sliderMin)));
        return static_cast<int>(std::lround(std::clamp(t, 0.0, 1.0) * kSteps));
    }
    int fromSlider(int s) const {
        if (!log)
            return s;
        const double v = std::exp(std::log(double(sliderMin)) +
                                  (std::log(double(sliderMax)) - std::log(double(sliderMin))) * s / kSteps);
        // Snap to powers of two near them: the values people actually use.
        const double p = std::exp2(std::round(std::log2(v)));
        return static_cast<int>(std::lround(std::abs(v - p) / p < 0.06 ? p : v));
    }
    json widgetValue() const {
        switch (kind) {
        case Int:
            return stored(spin->value());
        case Bool:
            return check->isChecked();
        case Choice:
            return combo->currentData().toString().toStdString();
        }
        return nullptr;
    }
};

namespace {

// An integer setting; its range and slider come from core/plan/settingnames.h, as the reader's do.
SettingsPanel::Field intField(const char* pointer, const char* label, int fallback, const char* tip) {
    const IntRange r = integerRange(pointer);
    SettingsPanel::Field f;
    f.kind = SettingsPanel::Field::Int;
    f.pointer = pointer;
    f.label = QString::fromUtf8(label);
    f.min = r.min;
    f.max = r.max;
    f.sliderMin = r.sliderMin;
    f.sliderMax = r.sliderMax;
    f.fallback = fallback;
    f.log = r.logSlider;
    f.tip = QString::fromUtf8(tip);
    return f;
}

// A choice's values and labels, from the same tables as the reader's names (aliases are not offered).
template <typename E> std::vector<std::pair<QString, QString>> choicesOf(std::span<const Named<E>> names) {
    std::vector<std::pair<QString, QString>> out;
    for (const auto& n : names)
        if (n.label)
            out.push_back({QString::fromUtf8(n.name), QString::fromUtf8(n.label)});
    return out;
}
std::vector<std::pair<QString, QString>> choicesOf(std::span<const NamedText> names) {
    std::vector<std::pair<QString, QString>> out;
    for (const auto& n : names)
        out.push_back({QString::fromUtf8(n.name), QString::fromUtf8(n.label)});
    return out;
}

// xformers is Unsloth's training path only (the reader refuses it for inference).
std::vector<std::pair<QString, QString>> inferenceAttention() {
    auto out = choicesOf(attentionNames());
    std::erase_if(out, [](const auto& c) { return c.first == QStringLiteral("xformers"); });
    return out;
}

SettingsPanel::Field boolField(const char* pointer, const char* label, const char* tip,
                               bool fallback = false) {
    SettingsPanel::Field f;
    f.kind = SettingsPanel::Field::Bool;
    f.pointer = pointer;
    f.label = QString::fromUtf8(label);
    f.tip = QString::fromUtf8(tip);
    f.fallbackBool = fallback;
    return f;
}

SettingsPanel::Field choiceField(const char* pointer, const char* label,
                                 std::vector<std::pair<QString, QString>> choices, const char* fallback,
                                 const char* tip) {
    SettingsPanel::Field f;
    f.kind = SettingsPanel::Field::Choice;
    f.pointer = pointer;
    f.label = QString::fromUtf8(label);
    f.choices = std::move(choices);
    f.fallbackChoice = fallback;
    f.tip = QString::fromUtf8(tip);
    return f;
}

SettingsPanel::Field forEngines(SettingsPanel::Field f, QStringList engines) {
    f.engines = std::move(engines);
    return f;
}

// A fraction shown in percent (gpu_memory_utilization).
SettingsPanel::Field percentField(const char* pointer, const char* label, int min, int max, int fallback,
                                  const char* tip) {
    SettingsPanel::Field f;
    f.kind = SettingsPanel::Field::Int;
    f.pointer = pointer;
    f.label = QString::fromUtf8(label);
    f.min = f.sliderMin = min;
    f.max = f.sliderMax = max;
    f.fallback = fallback;
    f.tip = QString::fromUtf8(tip);
    f.scale = 100;
    return f;
}

// The GPU's memory in MiB (nvidia-smi's memory.total), stored as gpu_memory_gib; by default what the
// reader resolved from the GPU named.
SettingsPanel::Field gpuMemoryField(std::function<int()> resolved) {
    SettingsPanel::Field f;
    f.kind = SettingsPanel::Field::Int;
    f.pointer = QStringLiteral("/cluster/gpu_memory_gib");
    f.label = QStringLiteral("GPU memory (MiB)");
    f.min = 1;
    f.max = 1 << 24;
    f.sliderMin = 1024;
    f.sliderMax = 1 << 18;
    f.log = true;
    f.scale = 1024;
    f.fallbackFor = std::move(resolved);
    f.tip = QStringLiteral("memory.total as nvidia-smi prints it, for a GPU the list lacks or a MIG slice; "
                           "the GPU's own by default (choosing a GPU resets it)");
    return f;
}

// The training section of a document being edited, which may be anything while it is invalid.
const json& trainingOf(const json& doc) {
    static const json none = json::object();
    return doc.is_object() && doc.contains("training") && doc["training"].is_object() ? doc["training"]
                                                                                      : none;
}
std::string textAt(const json& section, const char* key) {
    return section.contains(key) && section[key].is_string() ? section[key].get<std::string>()
                                                             : std::string();
}
// How the frozen base is stored as the reader takes it (QLoRA's default NF4), or empty without fine-tuning.
std::string baseQuantizationOf(const json& doc) {
    const json& t = trainingOf(doc);
    if (!t.contains("fine_tuning") || !t["fine_tuning"].is_object())
        return {};
    const json& f = t["fine_tuning"];
    const std::string base = textAt(f, "base_quantization");
    return !base.empty() ? base : textAt(f, "method") == "qlora" ? "nf4" : "none";
}

} // namespace

SettingsPanel::SettingsPanel(ScenarioDocument* document, QWidget* parent) : QWidget(parent), m_doc(document) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);

    // Model.
    auto* model = new QGroupBox(tr("Model"), this);
    auto* modelForm = new QFormLayout(model);
    m_preset = new QComboBox(model);
    m_preset->setObjectName("preset");
    for (const auto& p : modelPresets())
        m_preset->addItem(QString::fromStdString(p.name), QString::fromStdString(p.name));
    m_preset->setToolTip(tr("A model preset (its Hugging Face config.json ships with Headroom)"));
    modelForm->addRow(tr("Preset"), m_preset);
    auto* import = new QPushButton(tr("Import Hugging Face config.json..."), model);
    import->setObjectName("importConfig");
    modelForm->addRow(import);
    m_modelInfo = new QLabel(model);
    m_modelInfo->setObjectName("modelInfo");
    m_modelInfo->setWordWrap(true);
    modelForm->addRow(m_modelInfo);
    layout->addWidget(model);
    connect(m_preset, &QComboBox::activated, this, [this](int i) {
        const QString name = m_preset->itemData(i).toString();
        if (!name.isEmpty())
            m_doc->applyPatch({{"model", json{{"preset", name.toStdString()}}}}, tr("Model %1").arg(name));
    });
    connect(import, &QPushButton::clicked, this, &SettingsPanel::importConfig);
    chooseConfigFile = [this] {
        return QFileDialog::getOpenFileName(this, tr("Import Hugging Face config.json"), QString(),
                                            tr("config.json (*.json)"));
    };

    auto* modeRow = new QHBoxLayout;
    m_mode = new QComboBox(this);
    m_mode->setObjectName("mode");
    m_mode->addItem(tr("Training"), "training");
    m_mode->addItem(tr("Inference"), "inference");
    modeRow->addWidget(new QLabel(tr("Plan for"), this));
    modeRow->addWidget(m_mode, 1);
    layout->addLayout(modeRow);
    connect(m_mode, &QComboBox::activated, this, [this](int i) {
        const bool training = m_mode->itemData(i).toString() == "training";
        if (training == m_doc->json().contains("training"))
            return;
        // A new section starts from the defaults a file that leaves the keys out gets (one source).
        const json patch = training ? json{{"inference", nullptr}, {"training", defaultTrainingSection()}}
                                    : json{{"training", nullptr}, {"inference", defaultInferenceSection()}};
        m_doc->applyPatch(patch, training ? tr("Plan training") : tr("Plan inference"));
    });

    m_training = new QGroupBox(tr("Training"), this);
    auto* trainingForm = new QFormLayout(m_training);
    addField(trainingForm,
             intField("/training/micro_batch_size", "Micro-batch", 1, "Sequences per GPU per forward pass"));
    addField(trainingForm,
             intField("/training/sequence_length", "Sequence length", 2048, "Tokens per sequence"));
    addField(trainingForm, intField("/training/gradient_accumulation_steps", "Accumulation steps", 1,
                                    "Micro-batches per optimizer step (also the pipeline's micro-batches)"));
    addField(trainingForm,
             choiceField("/training/framework", "Framework", choicesOf(frameworkNames()), "pytorch",
                         "What runs the step: each framework keeps its own tensors for backward, its own "
                         "loss and buffers (docs/frameworks.md)"));
    m_fields.back()->clears = "framework_version"; // a release names its framework
    // The framework's release where its memory changed between releases (docs/frameworks.md): one field
    // per framework that has them, shown and written with that framework only.
    // The releases listed newest first: the current one, then each older one whose memory differs. A tier
    // holds the releases from `since` (none: every older one) to the next newer tier's; `value` is what the
    // choice writes, `span` how another release of the tier reads ("4.37 (before 4.46)").
    struct ReleaseTier {
        const char *value, *text, *since, *span;
    };
    struct ReleaseChoice {
        std::vector<std::string> frameworks;
        std::vector<ReleaseTier> tiers;
        const char* tip;
        const char* pointer = "/training/framework_version";
        const char* label = "Release";
    };
    const ReleaseChoice frameworkReleases[] = {
        {{"torchtitan"},
         {{"0.2", "0.2 and later", "0.2", "0.2 and later"},
          {"0.1", "before 0.2 (one FSDP2 root unit)", nullptr, "before 0.2"}},
         "torchtitan's release: before 0.2 the embeddings, final norm and head are one FSDP2 unit, gathered "
         "through the step and reduced when the backward ends"},
        {{"huggingface", "deepspeed"},
         {{"4.49", "transformers 4.49 and later", "4.49", "4.49 and later"},
          {"4.47", "4.46 to 4.48 (the loss copies fp32 logits)", "4.46", "4.46 to 4.48"},
          {"4.44", "before 4.46 (fp32 logits kept)", nullptr, "before 4.46"}},
         "transformers' release: before 4.46 the causal-LM output keeps fp32 logits through the backward; "
         "from 4.46 to 4.48 the loss upcasts the logits and shifts them with a second fp32 copy"},
        // PyTorch's release, where a framework's code holds different memory under it: shown with the
        // frameworks where that is modelled (docs/frameworks.md, Loss).
        {{"megatron"},
         {{"2.7", "2.7 and later", "2.7", "2.7 and later"},
          {"2.5", "before 2.7 (two loss buffers)", nullptr, "before 2.7"}},
         "PyTorch's release: before 2.7 Megatron's --cross-entropy-loss-fusion holds a second fp32 buffer, "
         "the size of the logits (measured on Megatron-LM 0.12's CI under PyTorch 2.5)",
         "/training/torch_version",
         "PyTorch"}};
    for (const ReleaseChoice& r : frameworkReleases) {
        std::vector<std::pair<QString, QString>> choices;
        for (const ReleaseTier& t : r.tiers)
            choices.emplace_back(QString::fromLatin1(t.value), QString::fromUtf8(t.text));
        addField(trainingForm, choiceField(r.pointer, r.label, choices, r.tiers.front().value, r.tip));
        m_fields.back()->visibleWhen = [names = r.frameworks](const json& doc) {
            return std::find(names.begin(), names.end(), textAt(trainingOf(doc), "framework")) != names.end();
        };
        m_fields.back()->onlyWhenShown = true;
        // Another release reads as the tier whose memory it has: "4.37 (before 4.46)", "4.48 (4.46 to 4.48)".
        m_fields.back()->describe = [tiers = r.tiers](const QString& value) {
            const auto given = parseRelease(value.toStdString());
            if (!given)
                return value; // the reader says what is wrong with it
            for (const ReleaseTier& t : tiers) {
                const auto since = t.since ? parseRelease(t.since) : std::nullopt;
                if (!t.since || (since && !(*given < *since)))
                    return value + QStringLiteral(" (") + QString::fromUtf8(t.span) + QLatin1Char(')');
            }
            return value;
        };
    }
    addField(trainingForm,
             choiceField("/training/precision", "Precision", choicesOf(precisionNames()), "bf16_mixed",
                         "Bytes per parameter: weights + gradients + master weights + Adam states"));
    addField(trainingForm,
             choiceField("/training/autocast", "Autocast", choicesOf(autocastNames()), "none",
                         "torch.autocast: matmuls keep 16-bit copies of their inputs, the fp32 list (norms, "
                         "softmax, losses) stays fp32, and wider weights get 16-bit cast copies"));
    addField(trainingForm,
             choiceField("/training/optimizer", "Optimizer", choicesOf(optimizerNames()), "adamw",
                         "Optimizer states per parameter: AdamW 8 B, SGD 4 B, 8-bit Adam 2 B"));
    addField(trainingForm,
             choiceField("/training/optimizer_implementation", "AdamW step", choicesOf(optimizerImplNames()),
                         "foreach",
                         "foreach holds sqrt(exp_avg_sq) for every parameter during the step; fused "
                         "kernels (Megatron, DeepSpeed, torchtune's fused=True) hold nothing"));
    m_fields.back()->fallbackChoiceFor = [](const json& doc) {
        return QString::fromStdString(derivedTrainingDefault(trainingOf(doc), "optimizer_implementation"));
    };
    addField(trainingForm, choiceField("/training/activation_checkpointing", "Checkpointing",
                                       choicesOf(checkpointingNames()), "none",
                                       "Activation checkpointing: recompute in backward instead of keeping"));
    // Which layers full checkpointing takes: shown with full checkpointing only.
    const auto fullCheckpointing = [](const json& doc) {
        const json& t = trainingOf(doc);
        return textAt(t, "activation_checkpointing") == "full";
    };
    addField(trainingForm, intField("/training/checkpoint_every", "Checkpoint every", 1,
                                    "With full checkpointing: only every N-th layer is checkpointed, the "
                                    "others keep everything (torchtitan's selective_ac_option \"N\")"));
    m_fields.back()->visibleWhen = fullCheckpointing;
    addField(trainingForm, choiceField("/training/recompute_method", "Recompute method",
                                       choicesOf(recomputeMethodNames()), "every_layer",
                                       "With full checkpointing, Megatron's --recompute-method: groups of N "
                                       "layers keep one input, or only the first N layers are checkpointed"));
    m_fields.back()->visibleWhen = fullCheckpointing;
    addField(trainingForm, intField("/training/recompute_num_layers", "Recompute layers (N)", 1,
                                    "Megatron's --recompute-num-layers"));
    m_fields.back()->visibleWhen = [](const json& doc) {
        const json& t = trainingOf(doc);
        return textAt(t, "activation_checkpointing") == "full" && !textAt(t, "recompute_method").empty() &&
               textAt(t, "recompute_method") != "every_layer";
    };
    addField(trainingForm,
             choiceField("/training/loss", "Loss", choicesOf(lossNames()), "full",
                         "What the cross-entropy holds: the framework's own (fp32 logits and their "
                         "gradients), per chunk, or a compiled kernel that never writes fp32 logits "
                         "(torchtitan's under torch.compile; under Megatron, --cross-entropy-loss-fusion, "
                         "which holds one fp32 buffer of the logits more than its own loss)"));
    m_fields.back()->fallbackChoiceFor = [](const json& doc) {
        return QString::fromStdString(derivedTrainingDefault(trainingOf(doc), "loss"));
    };
    addField(trainingForm, boolField("/training/activation_offloading", "Offload activations",
                                     "Saved activations wait in host memory, a layer ahead of the "
                                     "backward (torchtune's OffloadActivations, Megatron's cpu_offloading)"));
    addField(
        trainingForm,
        boolField("/training/optimizer_in_backward", "Optimizer step in backward",
                  "Each parameter is stepped as soon as its gradient is ready and the gradient dropped: "
                  "no step holds every gradient (torchtune's optimizer_in_bwd; no gradient accumulation)"));
    addField(trainingForm,
             choiceField("/training/zero_grad", "zero_grad", choicesOf(zeroGradNames()), "before_forward",
                         "Where the loop frees the previous step's gradients: before the forward (none "
                         "through it), after the forward (out = model(x); zero_grad(); backward: every "
                         "gradient through the forward), or set_to_none=False (never freed)"));
    addField(trainingForm,
             boolField("/training/first_step", "First step",
                       "Plan the run's first step, as a one-step profile records it: the optimizer makes its "
                       "states in that step, so its forward and backward run without them"));
    addField(trainingForm,
             boolField("/training/paged_optimizer", "Paged optimizer",
                       "bitsandbytes' paged Adam: the states of parameters of 100,000 elements or more live "
                       "in unified memory, outside PyTorch's counters, and page out to host memory when the "
                       "GPU runs short (with AdamW, bitsandbytes' fp32 states)"));
    addField(trainingForm, boolField("/training/compile", "torch.compile",
                                     "Compiled layers (and in torchtitan the loss): fused kernels keep fewer "
                                     "intermediate copies"));
    addField(trainingForm,
             choiceField("/training/float8", "Float8", choicesOf(float8Names()), "none",
                         "torchao float8 linear layers: the saved activations stay bf16, so the peak barely "
                         "moves (torchtitan measured 0.2 GiB)"));
    addField(trainingForm,
             choiceField("/training/attention", "Attention", choicesOf(attentionNames()), "flash",
                         "Eager attention keeps the s x s score, softmax and dropout tensors; xformers is "
                         "Unsloth's path without flash-attn (K and V expanded to every query head)"));
    layout->addWidget(m_training);

    // Fine-tuning (training.fine_tuning): which weights train, and how the frozen base is stored.
    m_fineTuning = new QGroupBox(tr("Fine-tuning"), this);
    auto* fineTuningForm = new QFormLayout(m_fineTuning);
    auto adapters = [](const json& doc) {
        const json& t = trainingOf(doc);
        return t.contains("fine_tuning") && t["fine_tuning"].is_object() &&
               textAt(t["fine_tuning"], "method") != "" && textAt(t["fine_tuning"], "method") != "full";
    };
    addField(
        fineTuningForm,
        choiceField("/training/fine_tuning/method", "Method", choicesOf(fineTuneMethodNames()), "full",
                    "Full: every weight trains. LoRA: the base is frozen, low-rank adapters train beside "
                    "the chosen layers (PEFT, torchtune); QLoRA: the same on a 4-bit base; DoRA: LoRA "
                    "plus a trained magnitude per output"));
    addField(fineTuningForm,
             intField("/training/fine_tuning/rank", "Rank", 16,
                      "The adapters' rank r: each adapted layer trains r x (inputs + outputs)"));
    m_fields.back()->visibleWhen = adapters;
    addField(fineTuningForm,
             choiceField("/training/fine_tuning/base_quantization", "Base",
                         choicesOf(baseQuantizationNames()), "none",
                         "How the frozen base's linear layers are stored: 16-bit, bitsandbytes' LLM.int8, or "
                         "4-bit NF4 / FP4 (embeddings, the head and norms stay 16-bit)"));
    m_fields.back()->visibleWhen = adapters;
    m_fields.back()->fallbackChoiceFor = [](const json& doc) {
        const json& t = trainingOf(doc);
        const bool qlora = t.contains("fine_tuning") && t["fine_tuning"].is_object() &&
                           textAt(t["fine_tuning"], "method") == "qlora";
        return QString::fromLatin1(qlora ? "nf4" : "none");
    };
    // The 4-bit base's scales: bitsandbytes' bnb_4bit_use_double_quant, which torchtune (torchao's NF4) and
    // Unsloth (its loader) always use; shown ticked where the reader plans it without the key.
    addField(
        fineTuningForm,
        boolField("/training/fine_tuning/double_quantization", "Double quantisation",
                  "bitsandbytes' bnb_4bit_use_double_quant: each block of 64 weights keeps a uint8 scale "
                  "(and every 256 of those an fp32 one) instead of an fp32 scale, 3/64 of a byte less per "
                  "weight. Always on under torchtune (torchao's NF4) and Unsloth (its loader asks for it)"));
    m_fields.back()->visibleWhen = [](const json& doc) {
        const std::string base = baseQuantizationOf(doc);
        return base == "nf4" || base == "fp4";
    };
    m_fields.back()->fallbackBoolFor = [](const json& doc) { return defaultDoubleQuantization(doc); };
    // bitsandbytes' release, for a base it quantises: before 0.43.2 each 4-bit layer kept its input, before
    // 0.45.0 each LLM.int8 layer an int8 transposed copy of its input besides.
    addField(
        fineTuningForm,
        choiceField(
            "/training/fine_tuning/bitsandbytes_version", "bitsandbytes",
            {{QStringLiteral("0.45.0"), QStringLiteral("0.45.0 and later")},
             {QStringLiteral("0.44.1"), QStringLiteral("0.43.2 to 0.44 (int8 layers keep copies)")},
             {QStringLiteral("0.43.1"), QStringLiteral("before 0.43.2 (4-bit inputs, int8 copies kept)")}},
            "0.45.0",
            "bitsandbytes' release: before 0.43.2 (July 2024) MatMul4Bit kept each 4-bit layer's "
            "input for the backward, as a trained layer does; before 0.45.0 (December 2024) "
            "MatMul8bitLt kept an int8 transposed copy of each LLM.int8 layer's input besides"));
    m_fields.back()->visibleWhen = [](const json& doc) {
        const std::string base = baseQuantizationOf(doc);
        // torchtune's 4-bit base is torchao's, not bitsandbytes'.
        return textAt(trainingOf(doc), "framework") != "torchtune" &&
               (base == "int8" || base == "nf4" || base == "fp4");
    };
    m_fields.back()->onlyWhenShown = true;
    // Another release reads as the side of 0.43.2 and 0.45.0 it is on: "0.42.0 (before 0.43.2)".
    m_fields.back()->describe = [](const QString& value) {
        const std::optional<bool> fourBit = fourBitKeepsInputIn(value.toStdString());
        const std::optional<bool> int8 = int8KeepsTransposedInputIn(value.toStdString());
        if (!fourBit || !int8)
            return value; // the reader says what is wrong with it
        return value + (*fourBit ? QStringLiteral(" (before 0.43.2)")
                        : *int8  ? QStringLiteral(" (0.43.2 to 0.44)")
                                 : QStringLiteral(" (0.45.0 and later)"));
    };
    addField(fineTuningForm, choiceField("/training/fine_tuning/adapter_dtype", "Adapters",
                                         {{QStringLiteral("fp32"), QStringLiteral("fp32 (PEFT's default)")},
                                          {QStringLiteral("bf16"), QStringLiteral("bf16 (torchtune's)")}},
                                         "fp32",
                                         "PEFT keeps adapters in fp32 and casts each adapted input to fp32 "
                                         "for them; torchtune builds them in the model's dtype"));
    m_fields.back()->visibleWhen = adapters;
    m_fields.back()->fallbackChoiceFor = [](const json& doc) {
        return QString::fromLatin1(textAt(trainingOf(doc), "framework") == "torchtune" ? "bf16" : "fp32");
    };
    addField(
        fineTuningForm,
        choiceField("/training/fine_tuning/preference", "Objective",
                    {{QStringLiteral("none"), QStringLiteral("supervised")},
                     {QStringLiteral("dpo"), QStringLiteral("DPO (chosen + rejected, a reference)")}},
                    "none",
                    "DPO runs each chosen and rejected sequence together and scores them under a frozen "
                    "reference: a second copy of the model in full fine-tuning, the base itself with LoRA"));
    // The adapted layers: one check box per linear layer of a decoder layer, written as target_modules.
    auto* targets = new QWidget(m_fineTuning);
    auto* targetsLayout = new QGridLayout(targets);
    targetsLayout->setContentsMargins(0, 0, 0, 0);
    targetsLayout->setHorizontalSpacing(6);
    targetsLayout->setVerticalSpacing(0);
    const char* modules[] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
    for (int i = 0; i < 7; ++i) {
        auto* box = new QCheckBox(QString::fromLatin1(modules[i]).remove(QStringLiteral("_proj")), targets);
        box->setObjectName(QStringLiteral("/training/fine_tuning/target_modules#") + modules[i]);
        targetsLayout->addWidget(box, i / 4, i % 4);
        m_targets.push_back(box);
        connect(box, &QCheckBox::toggled, this, [this] {
            if (m_refreshing)
                return;
            json list = json::array();
            for (QCheckBox* b : m_targets)
                if (b->isChecked())
                    list.push_back(b->objectName().section(QLatin1Char('#'), 1).toStdString());
            if (!list.empty()) // the reader refuses an empty list: keep the last one checked
                m_doc->setValue(QStringLiteral("/training/fine_tuning/target_modules"), list);
            else
                refresh();
        });
    }
    targets->setToolTip(tr("The linear layers that get adapters (PEFT's target_modules)"));
    fineTuningForm->addRow(tr("Adapted"), targets);
    m_targetsRow = targets;
    layout->addWidget(m_fineTuning);

    m_inference = new QGroupBox(tr("Inference"), this);
    auto* inferenceForm = new QFormLayout(m_inference);
    addField(
        inferenceForm,
        choiceField("/inference/engine", "Engine", choicesOf(engineNames()), "none",
                    "A serving engine turns what its memory budget leaves after weights and one profiled "
                    "step into a KV-cache pool; without one, the batch's own cache is planned"));
    m_fields.back()->clears = "engine_version"; // a release names its engine: the reader would refuse it
    addField(inferenceForm,
             forEngines(intField("/inference/batch_size", "Batch", 1, "Sequences served at once"),
                        {"none", "huggingface"}));
    addField(inferenceForm, intField("/inference/context_length", "Context length", 4096,
                                     "Tokens per sequence (prompt + output); an engine's max_model_len"));
    // The engine's release: its defaults and what its budget counts (docs/serving.md, Engine versions).
    for (const Engine engine : {Engine::Vllm, Engine::Sglang}) {
        std::vector<std::pair<QString, QString>> releases;
        for (const EngineVersion& v : engineVersions())
            if (v.engine == engine)
                releases.push_back({QString::fromUtf8(v.name), QString::fromUtf8(v.name)});
        addField(inferenceForm,
                 forEngines(choiceField("/inference/engine_version", "Release", std::move(releases),
                                        newestEngineVersion(engine)->name,
                                        "The engine's release: its default budget, what its profiled step "
                                        "holds and whether it counts CUDA graphs (vLLM from 0.21)"),
                            {engine == Engine::Vllm ? QStringLiteral("vllm") : QStringLiteral("sglang")}));
    }
    addField(inferenceForm,
             forEngines(percentField("/inference/gpu_memory_utilization", "GPU memory use (%)", 10, 100, 92,
                                     "vLLM's gpu_memory_utilization: the share of the GPU it budgets (the "
                                     "release's default when not set: 0.9 before 0.21, then 0.92)"),
                        {"vllm"}));
    m_fields.back()->fallbackFor = [this] {
        return static_cast<int>(std::lround(m_doc->scenario().inference.gpuMemoryUtilization * 100));
    };
    addField(inferenceForm,
             forEngines(boolField("/inference/cuda_graphs", "CUDA graphs",
                                  "Unchecked: --enforce-eager, no graphs captured (from vLLM 0.21 their "
                                  "estimate comes out of the KV cache's budget)",
                                  true),
                        {"vllm"}));
    // Where the release estimates its graphs inside the budget (vLLM from 0.21), the engine's own switch
    // for that estimate; shown while graphs are captured.
    addField(inferenceForm,
             forEngines(boolField("/inference/cuda_graph_estimate", "CUDA graph estimate in budget",
                                  "Unchecked: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0, the pool is sized "
                                  "without the graphs' estimate and they are captured after it, beyond "
                                  "gpu_memory_utilization",
                                  true),
                        {"vllm"}));
    m_fields.back()->visibleWhen = [this](const json&) {
        const EngineVersion* v = engineVersionOf(m_doc->scenario());
        return v && v->cudaGraphsInBudget && m_doc->scenario().inference.cudaGraphs;
    };
    // NCCL's NVLink SHARP buffers (docs/serving.md, Tensor parallelism on NVSwitch systems): offered where
    // they can exist, more than two GPUs of an NVSwitch system in the tensor-parallel group; vLLM leaves them
    // on, SGLang off.
    for (const bool vllm : {true, false}) {
        addField(inferenceForm,
                 forEngines(boolField("/inference/nccl_nvls", "NCCL NVLS",
                                      "NCCL's NVLink SHARP buffers for the tensor-parallel all-reduces: "
                                      "unchecked is NCCL_NVLS_ENABLE=0 (SGLang's default unless "
                                      "--enable-nccl-nvls)",
                                      vllm),
                            {vllm ? QStringLiteral("vllm") : QStringLiteral("sglang")}));
        m_fields.back()->visibleWhen = [this](const json&) {
            const ClusterSettings& c = m_doc->scenario().cluster;
            return c.tensorParallel > 2 && hasNvlinkSharp(c.gpu);
        };
    }
    addField(inferenceForm,
             forEngines(choiceField("/inference/sampler", "Sampler", choicesOf(samplerNames()), "pytorch",
                                    "Which kernels sample the profiled step's logits: FlashInfer's when the "
                                    "log says \"Using FlashInfer for top-p & top-k sampling\" (14 bytes per "
                                    "request and vocabulary entry, where PyTorch's sort keeps 38: vLLM "
                                    "0.10-0.11)"),
                        {"vllm"}));
    addField(
        inferenceForm,
        forEngines(choiceField("/inference/chunked_layers", "Chunked layers", choicesOf(chunkedLayerNames()),
                               "release",
                               "Llama 4's chunked-attention layers: pooled apart by vLLM's hybrid allocator "
                               "(one chunk a request) or cached in full. 0.11 caches them in full unless "
                               "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1; later releases pool "
                               "them"),
                   {"vllm"}));
    m_fields.back()->visibleWhen = [this](const json&) { return m_doc->scenario().model.chunkedAttention; };
    addField(inferenceForm,
             forEngines(choiceField("/inference/mamba_ssm_cache_dtype", "Mamba state dtype",
                                    choicesOf(mambaSsmCacheDtypeNames()), "auto",
                                    "The linear-attention layers' recurrent state per request: vLLM's "
                                    "--mamba-ssm-cache-dtype (auto: the model's dtype, or for Nemotron-H the "
                                    "checkpoint's or the release's, float32 since vLLM #39032, April 2026, "
                                    "float16 before; for Qwen3.5 the checkpoint's mamba_ssm_dtype), SGLang's "
                                    "--mamba-ssm-dtype (auto: float32)"),
                        {"vllm", "sglang"}));
    m_fields.back()->visibleWhen = [this](const json&) {
        const Scenario& sc = m_doc->scenario();
        const ModelSpec& m = sc.model;
        if (m.linearLayers.empty())
            return false;
        if (sc.inference.engine == Engine::Sglang) {
            const EngineVersion* v = engineVersionOf(sc);
            return v && v->sglangStatePool;
        }
        return m.vllmTakesSsmDtype();
    };
    addField(inferenceForm,
             forEngines(percentField("/inference/mem_fraction_static", "Static memory (%)", 0, 100, 0,
                                     "SGLang's mem_fraction_static: weights + KV pool (the release's default "
                                     "when not set: by TP size in 0.4, from the GPU's memory in 0.5)"),
                        {"sglang"}));
    // Unset, the box shows the release's default as the planner resolved it.
    m_fields.back()->fallbackFor = [this] {
        return static_cast<int>(std::lround(sglangStaticFraction(m_doc->scenario()) * 100));
    };
    addField(inferenceForm,
             forEngines(intField("/inference/max_num_batched_tokens", "Tokens per step", 0,
                                 "max_num_batched_tokens / chunked_prefill_size; 0 = the engine's default"),
                        {"vllm", "sglang"}));
    addField(inferenceForm,
             forEngines(intField("/inference/max_num_seqs", "Requests per step", 0,
                                 "max_num_seqs; 0 = the engine's default (vLLM profiles sampling this many)"),
                        {"vllm", "sglang"}));
    addField(inferenceForm,
             choiceField("/inference/weight_dtype", "Weights", choicesOf(weightDtypeNames()), "checkpoint",
                         "As stored: quantization_config's layout (MXFP4, FP8 blocks, GPTQ/AWQ) where the "
                         "config.json has one, else 16-bit; or one dtype for every weight"));
    // A forward that keeps no cache (cs336_basics', one with autograd on, one calibrated on runs that kept
    // none: Scenario::keepsNoKvCache, what the planner plans): nothing to say about one.
    const auto cached = [this](const json&) { return !m_doc->scenario().keepsNoKvCache(); };
    addField(inferenceForm, forEngines(choiceField("/inference/kv_cache_dtype", "KV cache",
                                                   choicesOf(kvCacheDtypeNames()), "bf16", "KV cache precision"),
                                       {"none", "vllm", "sglang", "huggingface"}));
    m_fields.back()->visibleWhen = cached;
    addField(
        inferenceForm,
        forEngines(intField("/inference/kv_block_size", "KV block (tokens)", 0,
                            "Paged KV cache block size; 0 = contiguous, or the engine's default (vLLM 16, "
                            "SGLang 1)"),
                   {"none", "vllm", "sglang"})); // generate's DynamicCache is contiguous
    m_fields.back()->visibleWhen = cached;
    addField(inferenceForm,
             choiceField("/inference/attention", "Attention", inferenceAttention(), "flash", ""));
    // Without an engine: the code that runs the forward, and torch.autocast around it.
    addField(inferenceForm,
             forEngines(choiceField("/inference/framework", "Framework",
                                    {{QStringLiteral("pytorch"), QStringLiteral("plain PyTorch")},
                                     {QStringLiteral("cs336_basics"), QStringLiteral("CS336 basics (no cache)")}},
                                    "pytorch",
                                    "Plain PyTorch: the batch's forward with its KV cache; CS336 basics: "
                                    "cs336_basics' TransformerLM, one forward over the whole sequence that "
                                    "caches nothing (docs/frameworks.md)"),
                        {"none"}));
    addField(inferenceForm,
             forEngines(choiceField("/inference/autocast", "Autocast", choicesOf(autocastNames()), "none",
                                    "torch.autocast around the forward: matmuls (and the keys and values "
                                    "they write) in 16 bits, wider nn.Linear weights cast once and cached"),
                        {"none"}));
    addField(
        inferenceForm,
        forEngines(choiceField("/inference/grad_mode", "Grad mode",
                               {{QStringLiteral("no_grad"), QStringLiteral("torch.no_grad")},
                                {QStringLiteral("inference_mode"), QStringLiteral("torch.inference_mode")},
                                {QStringLiteral("enabled"), QStringLiteral("autograd on (no backward)")}},
                               "no_grad",
                               "Under autocast, torch.no_grad keeps every weight's 16-bit copy in "
                               "autocast's cache through the forward; torch.inference_mode (PyTorch "
                               "2.11) frees each after its matmul. Autograd on: a forward without either "
                               "keeps everything a backward would need, and no KV cache"),
                   {"none"}));
    addField(inferenceForm,
             forEngines(boolField("/inference/previous_output_held", "Previous output held",
                                  "On: the loop still holds the previous forward's output, and so its whole "
                                  "graph, while the next forward runs (`out = model(x)` repeated without "
                                  "`del out`): two graphs at the peak"),
                        {"none"}));
    m_fields.back()->visibleWhen = [this](const json&) { return m_doc->scenario().inference.gradEnabled; };
    // Plain PyTorch's forward keeps its KV cache and returns the positions it is told (cs336_basics' and a
    // forward with autograd on keep none and return every position's whatever these say).
    const auto plainForward = [this](const json&) {
        const InferenceSettings& in = m_doc->scenario().inference;
        return in.framework == Framework::PyTorch && !in.gradEnabled;
    };
    addField(inferenceForm,
             forEngines(boolField("/inference/kv_cache", "Keep a KV cache",
                                  "Off: one forward over each sequence that keeps no cache (scoring, "
                                  "evaluation, a model whose forward builds none, transformers' "
                                  "use_cache=False)",
                                  true),
                        {"none"}));
    m_fields.back()->visibleWhen = plainForward;
    // What the forward returns: unset, every position's without a cache and the last one's with one.
    addField(inferenceForm,
             forEngines(choiceField("/inference/logits", "Logits returned", choicesOf(forwardLogitsNames()),
                                    "last",
                                    "The positions whose logits the forward writes: the last one's "
                                    "(generate), every position's (a loop or a scoring pass that calls "
                                    "model(input_ids)), or those upcast to fp32 as well"),
                        {"none"}));
    m_fields.back()->fallbackChoiceFor = [this](const json&) {
        return QString::fromStdString(nameOf(forwardLogitsNames(), m_doc->scenario().inference.logits));
    };
    m_fields.back()->visibleWhen = plainForward;
    layout->addWidget(m_inference);

    auto* cluster = new QGroupBox(tr("Cluster"), this);
    auto* clusterForm = new QFormLayout(cluster);
    std::vector<std::pair<QString, QString>> gpus;
    for (const auto& g : gpuCatalogue())
        gpus.push_back({QString::fromStdString(g.name),
                        QStringLiteral("%1 (%2)").arg(
                            QString::fromStdString(g.name),
                            QString::fromStdString(formatBytes(double(g.memoryBytes), ByteUnit::GiB, 1)))});
    addField(clusterForm, choiceField("/cluster/gpu", "GPU", gpus, "H100-SXM-80GB",
                                      "Usable memory as the driver reports it"));
    m_fields.back()->clears = "gpu_memory_gib"; // another GPU brings its own memory
    // A file that gives gpu_memory_gib and no GPU: show the GPU the reader named for its memory.
    m_fields.back()->fallbackChoiceFor = [this](const json&) {
        return QString::fromStdString(m_doc->scenario().cluster.gpu);
    };
    addField(clusterForm, gpuMemoryField([this] {
                 return static_cast<int>(
                     std::lround(double(m_doc->scenario().cluster.capacityBytes) / 1048576.0));
             }));
    addField(clusterForm, intField("/cluster/num_gpus", "GPUs", 1,
                                   "All GPUs: data x tensor x pipeline x context parallel"));
    addField(clusterForm, intField("/cluster/gpus_per_node", "GPUs per node", 8, "For hybrid sharding"));
    addField(clusterForm,
             choiceField("/cluster/data_parallel", "Data parallel", choicesOf(dataParallelNames()), "ddp",
                         "What each data-parallel rank shards"));
    addField(clusterForm,
             intField("/cluster/tensor_parallel", "Tensor parallel", 1, "Splits each layer's matrices"));
    addField(clusterForm, intField("/cluster/pipeline_parallel", "Pipeline parallel", 1,
                                   "Splits the layers into stages (1F1B)"));
    addField(clusterForm,
             intField("/cluster/context_parallel", "Context parallel", 1, "Splits each sequence"));
    addField(clusterForm, intField("/cluster/expert_parallel", "Expert parallel", 1,
                                   "Splits MoE experts across data-parallel ranks"));
    addField(clusterForm, boolField("/cluster/sequence_parallel", "Sequence parallel",
                                    "Splits norms and dropout along the sequence with TP"));
    addField(clusterForm, boolField("/cluster/offload_optimizer", "Offload optimizer",
                                    "Master weights and optimizer states in CPU memory"));
    addField(clusterForm, boolField("/cluster/offload_parameters", "Offload parameters",
                                    "Weights in CPU memory, fetched per layer"));
    addField(
        clusterForm,
        choiceField("/cluster/offload_optimizer_step", "Offloaded step", choicesOf(offloadStepNames()), "cpu",
                    "Where the optimizer step of offloaded states runs (sets the PCIe traffic per step)"));
    addField(clusterForm, intField("/cluster/virtual_pipeline_stages", "Interleaving", 1,
                                   "Model chunks per pipeline stage (interleaved 1F1B)"));
    addField(
        clusterForm,
        intField("/cluster/microbatch_group_size_per_vp_stage", "Micro-batch group", 1,
                 "Megatron's --microbatch-group-size-per-virtual-pipeline-stage: the micro-batches each "
                 "model chunk runs before the next chunk's turn (default the pipeline size); a stage warms "
                 "up (chunks - 1) x group of them"));
    m_fields.back()->fallbackFor = [this] {
        const ClusterSettings& c = m_doc->scenario().cluster;
        return c.microbatchGroupSize > 0 ? c.microbatchGroupSize : c.pipelineParallel;
    };
    m_fields.back()->visibleWhen = [](const json& doc) {
        const auto section = doc.find("cluster");
        if (section == doc.end() || !section->is_object())
            return false;
        const auto v = section->find("virtual_pipeline_stages");
        return v != section->end() && v->is_number_integer() && v->get<long long>() > 1;
    };
    m_fields.back()->onlyWhenShown = true; // without interleaving the group means nothing
    addField(
        clusterForm,
        boolField(
            "/cluster/expandable_segments", "Expandable segments",
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: segments grow in place. The plan's "
            "replays of a step run with it; elsewhere the allocator reserves 1.5% beyond what it "
            "holds instead of 3%. On by default for Unsloth, which sets it on import, and torchtitan, whose "
            "launcher does"));
    m_fields.back()->fallbackBoolFor = [](const json& doc) { return defaultExpandableSegments(doc); };
    addField(clusterForm, boolField("/cluster/prefetch", "Prefetch",
                                    "FSDP/ZeRO-3 gathers the next layer while computing this one", true));
    layout->addWidget(cluster);

    auto* overheads = new QGroupBox(tr("Overheads"), this);
    auto* overheadsForm = new QFormLayout(overheads);
    addField(overheadsForm, intField("/overheads/cuda_context_mib", "CUDA context (MiB)", 512,
                                     "Memory the CUDA context takes outside the allocator"));
    addField(overheadsForm,
             intField("/overheads/nccl_mib_per_communicator", "NCCL per group (MiB)", 384,
                      "NCCL buffers per communicator (data, tensor, pipeline, context, expert groups)"));
    layout->addWidget(overheads);
    layout->addStretch(1);

    connect(m_doc, &ScenarioDocument::changed, this, &SettingsPanel::refresh);
    refresh();
}

SettingsPanel::~SettingsPanel() = default;

void SettingsPanel::addField(QFormLayout* form, Field spec) {
    // What a field shows when the document leaves its key out is what the reader then assumes: training
    // and inference fields take it from the core's defaults rather than from a number written here.
    static const json defaults = {{"training", defaultTrainingSection()},
                                  {"inference", defaultInferenceSection()}};
    const json::json_pointer ptr(spec.pointer.toStdString());
    if (defaults.contains(ptr)) {
        const json& d = defaults.at(ptr);
        if (d.is_number_integer())
            spec.fallback = d.get<int>();
        else if (d.is_boolean())
            spec.fallbackBool = d.get<bool>();
        else if (d.is_string())
            spec.fallbackChoice = QString::fromStdString(d.get<std::string>());
    }
    m_fields.push_back(std::make_unique<Field>(std::move(spec)));
    Field* f = m_fields.back().get();
    auto* row = new QWidget(this);
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    f->row = row;
    switch (f->kind) {
    case Field::Int: {
        f->slider = new QSlider(Qt::Horizontal, row);
        f->slider->setRange(f->log ? 0 : f->sliderMin, f->log ? Field::kSteps : f->sliderMax);
        f->spin = new QSpinBox(row);
        f->spin->setRange(f->min, f->max);
        f->spin->setAccelerated(true);
        f->spin->setMinimumWidth(80);
        f->slider->setObjectName(f->pointer + "#slider");
        f->spin->setObjectName(f->pointer + "#spin");
        h->addWidget(f->slider, 1);
        h->addWidget(f->spin);
        connect(f->slider, &QSlider::sliderPressed, this,
                [this] { m_dragKey = (m_dragKey + 1) % 1000000 + 1; });
        connect(f->slider, &QSlider::sliderReleased, this, [this] { m_dragKey = 0; });
        connect(f->slider, &QSlider::valueChanged, this, [this, f](int s) {
            if (m_refreshing)
                return;
            const int v = f->fromSlider(s);
            {
                const QSignalBlocker block(f->spin);
                f->spin->setValue(v);
            }
            // While dragged, every value is one undo step; keyboard and clicks are separate steps.
            m_doc->setValue(f->pointer, f->stored(v), f->slider->isSliderDown() ? m_dragKey : 0);
        });
        connect(f->spin, &QSpinBox::valueChanged, this, [this, f](int v) {
            if (m_refreshing)
                return;
            {
                const QSignalBlocker block(f->slider);
                f->slider->setValue(f->toSlider(v));
            }
            m_doc->setValue(f->pointer, f->stored(v));
        });
        break;
    }
    case Field::Bool:
        f->check = new QCheckBox(row);
        f->check->setObjectName(f->pointer);
        h->addWidget(f->check);
        h->addStretch(1);
        connect(f->check, &QCheckBox::toggled, this, [this, f](bool on) {
            if (!m_refreshing)
                m_doc->setValue(f->pointer, on);
        });
        break;
    case Field::Choice:
        f->combo = new QComboBox(row);
        f->combo->setObjectName(f->pointer);
        for (const auto& [value, text] : f->choices)
            f->combo->addItem(text, value);
        h->addWidget(f->combo, 1);
        connect(f->combo, &QComboBox::activated, this, [this, f](int i) {
            if (m_refreshing)
                return;
            const std::string value = f->combo->itemData(i).toString().toStdString();
            // A choice that decides a companion setting drops it in the same undo step (the engine's
            // release, the GPU's given memory).
            const json& doc = m_doc->json();
            const json::json_pointer at(f->pointer.toStdString());
            const std::string section = at.parent_pointer().back(), key = at.back();
            if (!f->clears.empty() && doc.contains(section) && doc[section].is_object() &&
                doc[section].contains(f->clears)) {
                m_doc->applyPatch({{section, {{key, value}, {f->clears, nullptr}}}}, f->label);
                return;
            }
            m_doc->setValue(f->pointer, value);
        });
        break;
    }
    row->setToolTip(f->tip);
    form->addRow(f->label, row);
    f->form = form;
    static const QStringList trainingOnly = {"/cluster/data_parallel",
                                             "/cluster/gpus_per_node",
                                             "/cluster/context_parallel",
                                             "/cluster/sequence_parallel",
                                             "/cluster/offload_optimizer",
                                             "/cluster/offload_parameters",
                                             "/cluster/offload_optimizer_step",
                                             "/cluster/virtual_pipeline_stages",
                                             "/cluster/prefetch",
                                             "/cluster/microbatch_group_size_per_vp_stage"};
    f->trainingOnly = trainingOnly.contains(f->pointer);
}

void SettingsPanel::refresh() {
    m_refreshing = true;
    const json& doc = m_doc->json();
    const bool training = !doc.contains("inference");
    m_training->setVisible(training);
    m_fineTuning->setVisible(training);
    {
        // The adapted layers as the reader resolved them (torchtune's names, "all-linear", the default).
        const json& t = trainingOf(doc);
        const json* ft =
            t.contains("fine_tuning") && t["fine_tuning"].is_object() ? &t["fine_tuning"] : nullptr;
        const std::string method = ft ? textAt(*ft, "method") : "";
        const bool adapted = !method.empty() && method != "full";
        const std::vector<std::string>& on = m_doc->scenario().training.fineTuning.targets;
        for (QCheckBox* b : m_targets)
            b->setChecked(std::find(on.begin(), on.end(),
                                    b->objectName().section(QLatin1Char('#'), 1).toStdString()) != on.end());
        if (auto* form = qobject_cast<QFormLayout*>(m_fineTuning->layout()))
            form->setRowVisible(m_targetsRow, adapted);
    }
    m_inference->setVisible(!training);
    m_mode->setCurrentIndex(training ? 0 : 1);
    for (const auto& field : m_fields) {
        Field* f = field.get();
        if (f->trainingOnly)
            f->form->setRowVisible(f->row, training);
        if (f->visibleWhen && f->engines.isEmpty())
            f->form->setRowVisible(f->row, training && f->visibleWhen(doc));
        if (!f->engines.isEmpty()) {
            const json* engine =
                doc.contains("inference") && doc["inference"].is_object()
                    ? (doc["inference"].contains("engine") ? &doc["inference"]["engine"] : nullptr)
                    : nullptr;
            const QString name = engine && engine->is_string()
                                     ? QString::fromStdString(engine->get<std::string>())
                                     : QStringLiteral("none");
            f->form->setRowVisible(f->row,
                                   f->engines.contains(name) && (!f->visibleWhen || f->visibleWhen(doc)));
        }
        const json::json_pointer ptr(f->pointer.toStdString());
        const json* v = doc.contains(ptr) ? &doc.at(ptr) : nullptr;
        switch (f->kind) {
        case Field::Int: {
            int value = v && v->is_number_integer() ? v->get<int>()
                        : f->fallbackFor            ? f->fallbackFor()
                                                    : f->fallback;
            if (f->scale && v && v->is_number())
                value = static_cast<int>(std::lround(v->get<double>() * f->scale));
            if (f->spin->value() != value || f->spin->minimum() > value)
                f->spin->setValue(value);
            if (!f->slider->isSliderDown())
                f->slider->setValue(f->toSlider(value));
            break;
        }
        case Field::Bool:
            f->check->setChecked(v && v->is_boolean() ? v->get<bool>()
                                 : f->fallbackBoolFor ? f->fallbackBoolFor(doc)
                                                      : f->fallbackBool);
            break;
        case Field::Choice: {
            const QString value = v && v->is_string()    ? QString::fromStdString(v->get<std::string>())
                                  : f->fallbackChoiceFor ? f->fallbackChoiceFor(doc)
                                                         : f->fallbackChoice;
            int i = f->combo->findData(value);
            if (i < 0) { // a value the list does not offer (an alias, a newer name): show it as it is
                f->combo->addItem(f->describe ? f->describe(value) : value, value);
                i = f->combo->count() - 1;
            }
            f->combo->setCurrentIndex(i);
            break;
        }
        }
    }
    refreshModel();
    m_refreshing = false;
}

void SettingsPanel::refreshModel() {
    const json& model = m_doc->json().value("model", json::object());
    const std::string preset = model.is_object() && model.contains("preset") && model["preset"].is_string()
                                   ? model["preset"].get<std::string>()
                                   : "";
    const ModelPreset* p = preset.empty() ? nullptr : findModelPreset(preset);
    const int custom = m_preset->findData(QString());
    if (p) {
        if (custom >= 0)
            m_preset->removeItem(custom);
        m_preset->setCurrentIndex(m_preset->findData(QString::fromStdString(p->name)));
    } else {
        if (custom < 0)
            m_preset->insertItem(0, tr("Custom model"), QString());
        m_preset->setCurrentIndex(0);
    }
    const Scenario& sc = m_doc->scenario();
    const ModelSpec& m = sc.model;
    QString info =
        QStringLiteral("<b>%1</b> parameters").arg(QString::fromStdString(formatCount(m.totalParameters())));
    if (m.activeParameters() != m.totalParameters())
        info += QStringLiteral(", %1 active").arg(QString::fromStdString(formatCount(m.activeParameters())));
    if (sc.mode == Mode::Training && sc.training.fineTuning.adapters())
        info += QStringLiteral(", <b>%1</b> trainable")
                    .arg(QString::fromStdString(formatCount(trainableParameters(sc))));
    const auto linear = static_cast<int>(std::count(m.linearLayers.begin(), m.linearLayers.end(), 1));
    // Nemotron-H's blocks are half layers: say what they are rather than "layers".
    int attending = 0, mlps = 0;
    for (int l = 0; l < m.layers && !m.blockParts.empty(); ++l) {
        attending += m.hasMixer(l) && !m.isLinearLayer(l);
        mlps += !m.hasMixer(l);
    }
    if (m.known && !m.blockParts.empty())
        info +=
            QStringLiteral("<br>%1: %2 blocks (%3 Mamba-2, %4 attention, %5 %6), hidden %7, %8 heads (%9 KV)")
                .arg(QString::fromStdString(m.modelType))
                .arg(m.layers)
                .arg(linear)
                .arg(attending)
                .arg(mlps)
                .arg(m.isMoe() ? QStringLiteral("MLP or MoE") : QStringLiteral("MLP"))
                .arg(m.hidden)
                .arg(m.heads)
                .arg(m.kvHeads);
    else if (m.known)
        info +=
            QStringLiteral("<br>%1: %2 layers%7, hidden %3, %4 heads (%5 KV)%6")
                .arg(QString::fromStdString(m.modelType))
                .arg(m.layers)
                .arg(m.hidden)
                .arg(m.heads)
                .arg(m.mla ? QStringLiteral("MLA") : QString::number(m.kvHeads))
                .arg(m.isMoe() ? QStringLiteral(", %1 of %2 experts").arg(m.expertsPerToken).arg(m.experts)
                               : QString())
                .arg(linear > 0 ? (m.linearKind == ModelSpec::LinearKind::Mamba2
                                       ? QStringLiteral(" (%1 Mamba-2)")
                                       : QStringLiteral(" (%1 linear attention)"))
                                      .arg(linear)
                     : m.chunkedAttention
                         ? QStringLiteral(" (%1 chunked attention)")
                               .arg(std::count(m.slidingLayers.begin(), m.slidingLayers.end(), 1))
                         : QString());
    else
        info += tr("<br>architecture unknown: activations are not estimated");
    // A multimodal checkpoint's vision tower (and projector) is in the count; say how much of it.
    if (m.visionParams() > 0)
        info +=
            QStringLiteral(", vision tower %1").arg(QString::fromStdString(formatCount(m.visionParams())));
    m_modelInfo->setText(info);
}

void SettingsPanel::importConfig() {
    const QString path = chooseConfigFile ? chooseConfigFile() : QString();
    if (path.isEmpty())
        return;
    QString error;
    if (!m_doc->importModelConfig(path, &error))
        QMessageBox::warning(this, tr("Cannot import config.json"), error);
}

nlohmann::json SettingsPanel::valuesFromWidgets() const {
    json out = json::object();
    for (const auto& f : m_fields)
        if (f->row->parentWidget() &&
            ((f->engines.isEmpty() && !f->onlyWhenShown) || f->form->isRowVisible(f->row)) &&
            ((f->pointer.startsWith("/training") && !m_training->isHidden()) ||
             (f->pointer.startsWith("/inference") && !m_inference->isHidden()) ||
             f->pointer.startsWith("/cluster") || f->pointer.startsWith("/overheads")))
            out[json::json_pointer(f->pointer.toStdString())] = f->widgetValue();
    return out;
}

QWidget* SettingsPanel::fieldWidget(const QString& pointer) const {
    for (const auto& f : m_fields)
        if (f->pointer == pointer)
            return f->kind == Field::Int    ? static_cast<QWidget*>(f->slider)
                   : f->kind == Field::Bool ? static_cast<QWidget*>(f->check)
                                            : f->combo;
    return nullptr;
}

QStringList SettingsPanel::pointers() const {
    QStringList out;
    for (const auto& f : m_fields)
        out << f->pointer;
    return out;
}

} // namespace headroom
