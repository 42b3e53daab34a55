// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Helpers shared by the test executables.
#include "core/error.h"
#include "core/io/scenariojson.h"
#include "core/io/validation.h"
#include "core/plan/scenario.h"

#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QString>
#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
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

// examples/measured: the recorded runs (cases.json) and their scenarios.
inline QString measuredDir() {
    return QStringLiteral(HEADROOM_SOURCE_DIR "/examples/measured/");
}

// Whether reading the scenario document `doc` fails with an error that names `field`.
inline bool refusedNaming(const nlohmann::json& doc, const std::string& field) {
    try {
        scenarioFromJson(doc);
    } catch (const Error& e) {
        return e.where() == field;
    }
    return false;
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

// A one-layer forward of b = 4, h = 64, a = 4 heads of 16, f = 256 at `tokens`, every tensor kept, written
// as a snapshot whose frames are those of hand-written code: model.py's forward (line 90) calls the block,
// whose lines 50 and 52 are norms (each a b·s fp32 statistic and a b·s·h output unless `fusedNorm`), line 51
// the attention (q, k, v at 61; q·kᵀ at 62; the softmax called at 63, its max over the keys at nn.py:5, a
// b·a·s vector, unless `fusedSoftmax`, and its exp at nn.py:6; the output at 64) and line 53 the FFN (w1 and
// w3 at 70, their product at 71, w2 at 72; with `flatFfn` those are lines 53, 54 and 55 of the block
// itself). At 64 tokens a score (4 x 4 x 64 x 64 x 4 bytes) and an FFN output (4 x 64 x 256 x 4) are both
// 256 KiB.
inline std::string handWrittenForward(int tokens, bool fusedSoftmax, bool fusedNorm, bool flatFfn) {
    const long long b = 4, s = tokens, bsh = b * s * 64 * 4, bsf = b * s * 256 * 4,
                    scores = b * 4 * s * s * 4;
    const long long bas = b * 4 * s * 4, bs = b * s * 4;
    std::string events;
    long long addr = 1 << 20;
    auto frame = [](const char* file, int line, const char* name) {
        return std::string(R"({"name": ")") + name + R"(", "filename": "/home/u/)" + file + R"(", "line": )" +
               std::to_string(line) + "}";
    };
    auto alloc = [&](long long size, std::initializer_list<std::string> frames) {
        std::string f; // (each frame but the outermost ends in ", ")
        for (const std::string& x : frames)
            f += x;
        events += std::string(events.empty() ? "" : ",\n") + R"({"action": "alloc", "addr": )" +
                  std::to_string(addr) + R"(, "size": )" + std::to_string(size) + R"(, "time_us": )" +
                  std::to_string(addr) + R"(, "frames": [)" + f + frame("model.py", 90, "forward") + "]}";
        addr += size + 512;
    };
    const std::string blockNorm1 = frame("model.py", 50, "forward") + ", ";
    const std::string blockAttn = frame("model.py", 51, "forward") + ", ";
    const std::string blockNorm2 = frame("model.py", 52, "forward") + ", ";
    const std::string blockFfn = frame("model.py", 53, "forward") + ", ";
    for (const std::string& norm : {blockNorm1, blockNorm2}) {
        if (!fusedNorm)
            alloc(bs, {frame("model.py", 10, "rmsnorm") + ", ", norm});
        alloc(bsh, {frame("model.py", 11, "rmsnorm") + ", ", norm});
        if (norm == blockNorm2)
            break;
        for (int i = 0; i < 3; ++i)
            alloc(bsh, {frame("model.py", 61, "forward") + ", ", blockAttn});
        alloc(scores, {frame("model.py", 62, "forward") + ", ", blockAttn});
        const std::string softmax = frame("model.py", 63, "forward") + ", ";
        if (!fusedSoftmax)
            alloc(bas, {frame("nn.py", 5, "softmax") + ", ", softmax, blockAttn});
        alloc(scores, {frame("nn.py", 6, "softmax") + ", ", softmax, blockAttn});
        alloc(bsh, {frame("model.py", 64, "forward") + ", ", blockAttn});
    }
    if (flatFfn) {
        alloc(bsf, {frame("model.py", 53, "forward") + ", "});
        alloc(bsf, {frame("model.py", 53, "forward") + ", "});
        alloc(bsf, {frame("model.py", 54, "forward") + ", "});
        alloc(bsh, {frame("model.py", 55, "forward") + ", "});
    } else {
        alloc(bsf, {frame("model.py", 70, "forward") + ", ", blockFfn});
        alloc(bsf, {frame("model.py", 70, "forward") + ", ", blockFfn});
        alloc(bsf, {frame("model.py", 71, "forward") + ", ", blockFfn});
        alloc(bsh, {frame("model.py", 72, "forward") + ", ", blockFfn});
    }
    return R"({"segments": [], "device_traces": [[)" + events + "]]}";
}
// Its scenario: a training step in fp32 of eager attention (the trace records the forward only).
inline nlohmann::json handWrittenForwardDoc(int tokens) {
    nlohmann::json doc = trainingDoc({{"model_type", "llama"},
                                      {"vocab_size", 1000},
                                      {"hidden_size", 64},
                                      {"intermediate_size", 256},
                                      {"num_hidden_layers", 1},
                                      {"num_attention_heads", 4},
                                      {"num_key_value_heads", 4},
                                      {"tie_word_embeddings", true}});
    doc["training"]["precision"] = "fp32";
    doc["training"]["attention"] = "eager";
    doc["training"]["micro_batch_size"] = 4;
    doc["training"]["sequence_length"] = tokens;
    return doc;
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
