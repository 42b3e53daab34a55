// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/scenario.h"
#include "core/serve/estimate.h"

#include <QObject>
#include <QString>
#include <QUndoStack>
#include <nlohmann/json.hpp>

namespace headroom {

// The scenario being edited: its JSON document (the source of truth, unknown keys included), the
// validated Scenario and Estimate derived from it, the undo stack and the file it belongs to.
// Every change goes through setValue/applyPatch as an undoable command; a change that makes the
// document invalid is kept (so it can be undone or fixed) and reported by validationError(), while the
// last valid estimate stays on screen.
class ScenarioDocument : public QObject {
    Q_OBJECT
public:
    explicit ScenarioDocument(QObject* parent = nullptr);

    const nlohmann::json& json() const { return m_json; }
    const Scenario& scenario() const { return m_scenario; }
    const Estimate& estimate() const { return m_estimate; }
    QString validationError() const { return m_error; }
    QUndoStack* undoStack() { return &m_undo; }
    QString filePath() const { return m_path; }
    bool isModified() const { return !m_undo.isClean(); }

    // A JSON pointer ("/training/micro_batch_size") and its new value. Changes with the same non-zero
    // mergeKey and path coalesce into one undo step (a slider drag).
    void setValue(const QString& pointer, const nlohmann::json& value, int mergeKey = 0);
    // A JSON merge patch (RFC 7386) as one undo step, e.g. a "what would make it fit" suggestion.
    void applyPatch(const nlohmann::json& patch, const QString& description);

    // Opening a file, each reading and parsing it once. False with `error` ("FILE: where: why") when it
    // cannot be used, and then nothing changes.
    // - open: a Hugging Face config.json (model_type and no scenario sections) becomes the scenario's model
    //   as one undo step (*wasConfig); anything else must be a scenario and replaces the document. This is
    //   File > Open and drag-and-drop.
    // - load: a scenario only (Open Recent, session restore); importModelConfig: a config only (the panel).
    bool open(const QString& path, QString* error, bool* wasConfig = nullptr);
    bool load(const QString& path, QString* error);
    bool importModelConfig(const QString& path, QString* error);

    // Replace the whole document (New, crash recovery). Clears undo history.
    void reset(const nlohmann::json& document, const QString& path = QString());
    // Atomic save (QSaveFile). On failure the document and its path are unchanged.
    bool saveAs(const QString& path, QString* error);
    // Writes the document somewhere without changing its path or clean state (autosave).
    bool writeCopy(const QString& path, QString* error) const;

    // Used by the undo commands.
    void setDocument(const nlohmann::json& document);

signals:
    void changed();     // the document (and, when valid, the estimate) changed
    void fileChanged(); // path or modified state changed

private:
    enum class Accept { Scenario, ModelConfig, Either };
    bool openAs(const QString& path, QString* error, Accept accept, bool* wasConfig);
    void recompute();

    nlohmann::json m_json;
    Scenario m_scenario;
    Estimate m_estimate;
    QString m_error;
    QString m_path;
    QUndoStack m_undo;
};

} // namespace headroom
