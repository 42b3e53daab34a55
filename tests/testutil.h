// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Helpers shared by the test executables.
#include "core/io/scenariojson.h"
#include "core/io/validation.h"
#include "core/plan/scenario.h"

#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QString>
#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

namespace headroom::test {

inline constexpr double kGiB = 1073741824.0;
inline constexpr double kMiB = 1048576.0;

// tests/data: the fixtures and the licensed real traces and configs the tests read
// (tests/data/traces/NOTICES.txt). A clone carries all of it; no test reads anything from outside the
// repository.
inline QString dataDir() {
    return QStringLiteral(HEADROOM_TEST_DATA);
}

// Text of a PDF (poppler's pdftotext) and its page count (pdfinfo): exported PDFs must be readable text.
inline QString pdfText(const QString& pdf) {
    QProcess p;
    p.start(QStringLiteral("pdftotext"), {QStringLiteral("-layout"), pdf, QStringLiteral("-")});
    p.waitForFinished(30000);
    return QString::fromUtf8(p.readAllStandardOutput());
}
// Pairs of words of a PDF whose boxes overlap (pdftotext -bbox): text drawn over other text, which a reader
// cannot read. Each as "word1 / word2 at y".
inline QStringList pdfOverlappingWords(const QString& pdf) {
    QProcess p;
    p.start(QStringLiteral("pdftotext"), {QStringLiteral("-bbox"), pdf, QStringLiteral("-")});
    p.waitForFinished(30000);
    const QString html = QString::fromUtf8(p.readAllStandardOutput());
    struct Word {
        double x0, y0, x1, y1;
        QString text;
    };
    std::vector<Word> words;
    static const QRegularExpression re(QStringLiteral(
        R"re(<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>)re"));
    for (auto it = re.globalMatch(html); it.hasNext();) {
        const auto m = it.next();
        words.push_back({m.captured(1).toDouble(), m.captured(2).toDouble(), m.captured(3).toDouble(),
                         m.captured(4).toDouble(), m.captured(5)});
    }
    QStringList out;
    for (std::size_t i = 0; i < words.size(); ++i)
        for (std::size_t j = i + 1; j < words.size(); ++j) {
        const Word& a = words[i];
        const Word& b = words[j];
        // Glyph boxes include the line's leading: half a point either way is touching, not overlapping.
        if (std::min(a.x1, b.x1) - std::max(a.x0, b.x0) > 0.5 &&
            std::min(a.y1, b.y1) - std::max(a.y0, b.y0) > 1.0)
            out << QStringLiteral("%1 / %2 at %3").arg(a.text, b.text).arg(a.y0, 0, 'f', 0);
        }
    return out;
}
inline int pdfPages(const QString& pdf) {
    QProcess p;
    p.start(QStringLiteral("pdfinfo"), {pdf});
    p.waitForFinished(30000);
    const QString info = QString::fromUtf8(p.readAllStandardOutput());
    const auto m = QRegularExpression(QStringLiteral("Pages:\\s+(\\d+)")).match(info);
    return m.hasMatch() ? m.captured(1).toInt() : -1;
}

// A training scenario document with the product's defaults for everything it leaves out (plain PyTorch,
// torch.optim.AdamW's foreach step); callers patch what they test, and a test about another choice (a
// paper's fused Adam, say) says so in its patch.
inline nlohmann::json trainingDoc(const nlohmann::json& model) {
    return {{"schema", "headroom.scenario/1"},
            {"name", "test"},
            {"model", model},
            {"training",
             {{"micro_batch_size", 1},
              {"sequence_length", 2048},
              {"gradient_accumulation_steps", 1},
              {"precision", "bf16_mixed"},
              {"optimizer", "adamw"},
              {"activation_checkpointing", "none"},
              {"attention", "flash"}}},
            {"cluster",
             {{"gpu", "H100-SXM-80GB"},
              {"num_gpus", 1},
              {"data_parallel", "ddp"},
              {"tensor_parallel", 1},
              {"pipeline_parallel", 1}}}};
}

// A one-layer Llama whose matrices are all 64 x 64 (q, k, v, o and the three MLP matrices: seven tensors of
// 4,096 elements) and a vocabulary of 8: tensors told apart by size in attribution tests.
// A recording of a first step, without frames: the forward keeps 8,192 bytes of activations (events 0, 1),
// frees them (2-5), then the optimizer's record_function region creates two states of 3,072 bytes (6, 7) that
// outlive the recording; the final state (segments) holds the two states, as a real snapshot's would. The peak
// is the forward's 8,192, without states; a later step would hold 8,192 + 6,144 = 14,336 there.
inline const char* firstStepRecording() {
    return R"({"segments": [{"device": 0, "address": 65536, "total_size": 2097152,
        "stream": 0, "segment_type": "large", "blocks": [
          {"address": 65536, "size": 3072, "requested_size": 3072, "state": "active_allocated"},
          {"address": 68608, "size": 62464, "requested_size": 0, "state": "inactive"},
          {"address": 131072, "size": 3072, "requested_size": 3072, "state": "active_allocated"},
          {"address": 134144, "size": 2029568, "requested_size": 0, "state": "inactive"}]}],
      "device_traces": [[
      {"action": "alloc", "addr": 4096, "size": 4096, "time_us": 1},
      {"action": "alloc", "addr": 16384, "size": 4096, "time_us": 2},
      {"action": "free_requested", "addr": 4096, "size": 4096, "time_us": 3},
      {"action": "free_completed", "addr": 4096, "size": 4096, "time_us": 3},
      {"action": "free_requested", "addr": 16384, "size": 4096, "time_us": 4},
      {"action": "free_completed", "addr": 16384, "size": 4096, "time_us": 4},
      {"action": "alloc", "addr": 65536, "size": 3072, "time_us": 11},
      {"action": "alloc", "addr": 131072, "size": 3072, "time_us": 12}
    ]], "external_annotations": [
      {"name": "Optimizer.step#AdamW.step", "stage": "START", "device": 0, "time_us": 10},
      {"name": "Optimizer.step#AdamW.step", "stage": "END", "device": 0, "time_us": 15}
    ]})";
}

inline nlohmann::json tinyLlama() {
    return {{"model_type", "llama"},      {"vocab_size", 8},        {"hidden_size", 64},
            {"intermediate_size", 64},    {"num_hidden_layers", 1}, {"num_attention_heads", 1},
            {"tie_word_embeddings", true}};
}

// One published run's line for a test's log and failure message: estimate, measurement, counter, error.
inline QString caseLine(const CaseResult& r) {
    return QStringLiteral("%1: estimate %2 GiB, measured %3 GiB (%4), error %5%")
        .arg(QString::fromStdString(r.c->id))
        .arg(r.estimated / kGiB, 0, 'f', 2)
        .arg(r.measured / kGiB, 0, 'f', 2)
        .arg(QString::fromStdString(r.c->metric))
        .arg(100 * r.error(), 0, 'f', 1);
}

inline Scenario scenarioWith(nlohmann::json doc, const nlohmann::json& patch) {
    if (!patch.is_null()) // `{}` in a braced list is JSON null, which merge_patch would take as "delete all"
        doc.merge_patch(patch);
    return scenarioFromJson(doc);
}

} // namespace headroom::test
