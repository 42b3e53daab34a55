// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/planner/scenariodocument.h"

#include "core/fileio.h"
#include "core/io/jsontext.h"
#include "core/model/hfconfig.h"

#include "core/error.h"
#include "core/io/scenariojson.h"

#include <QFileInfo>
#include <QSaveFile>

namespace headroom {

namespace {

// Undo by swapping whole documents: they are small, and this keeps unknown keys and ordering exact.
class DocumentCommand : public QUndoCommand {
public:
    DocumentCommand(ScenarioDocument* doc, nlohmann::json before, nlohmann::json after, const QString& text,
                    std::string mergePath, int mergeKey)
        : QUndoCommand(text), m_doc(doc), m_before(std::move(before)), m_after(std::move(after)),
          m_mergePath(std::move(mergePath)), m_mergeKey(mergeKey) {}

    void undo() override { m_doc->setDocument(m_before); }
    void redo() override { m_doc->setDocument(m_after); }
    int id() const override { return m_mergeKey != 0 ? 1 : -1; }
    bool mergeWith(const QUndoCommand* other) override {
        const auto* o = static_cast<const DocumentCommand*>(other);
        if (o->m_mergeKey != m_mergeKey || o->m_mergePath != m_mergePath)
            return false;
        m_after = o->m_after;
        return true;
    }

private:
    ScenarioDocument* m_doc;
    nlohmann::json m_before, m_after;
    std::string m_mergePath;
    int m_mergeKey;
};

QString fieldName(const QString& pointer) {
    return pointer.section('/', -1).replace('_', ' ');
}

} // namespace

ScenarioDocument::ScenarioDocument(QObject* parent) : QObject(parent) {
    connect(&m_undo, &QUndoStack::cleanChanged, this, &ScenarioDocument::fileChanged);
    reset(defaultScenarioDocument());
}

void ScenarioDocument::setDocument(const nlohmann::json& document) {
    m_json = document;
    recompute();
}

void ScenarioDocument::recompute() {
    const std::string base = m_path.isEmpty() ? "." : QFileInfo(m_path).absolutePath().toStdString();
    try {
        Scenario sc = scenarioFromJson(m_json, base);
        m_estimate = headroom::estimate(sc);
        m_scenario = std::move(sc);
        m_error.clear();
    } catch (const Error& e) {
        m_error = QString::fromStdString(e.what());
    }
    emit changed();
}

void ScenarioDocument::setValue(const QString& pointer, const nlohmann::json& value, int mergeKey) {
    const nlohmann::json::json_pointer ptr(pointer.toStdString());
    if (m_json.contains(ptr) && m_json.at(ptr) == value)
        return;
    nlohmann::json after = m_json;
    after[ptr] = value;
    m_undo.push(new DocumentCommand(this, m_json, after, tr("Change %1").arg(fieldName(pointer)),
                                    pointer.toStdString(), mergeKey));
}

void ScenarioDocument::applyPatch(const nlohmann::json& patch, const QString& description) {
    nlohmann::json after = m_json;
    after.merge_patch(patch);
    if (after == m_json)
        return;
    m_undo.push(new DocumentCommand(this, m_json, after, description, {}, 0));
}

void ScenarioDocument::reset(const nlohmann::json& document, const QString& path) {
    m_undo.clear();
    m_path = path;
    setDocument(document);
    m_undo.setClean();
    emit fileChanged();
}

bool ScenarioDocument::openAs(const QString& path, QString* error, Accept accept, bool* wasConfig) {
    try {
        const nlohmann::json j = parseJsonText(readTextFile(path.toStdString()));
        const bool config =
            j.is_object() && j.contains("model_type") && !j.contains("training") && !j.contains("inference");
        if (config ? accept == Accept::Scenario : accept == Accept::ModelConfig)
            throw Error(
                "", config ? "a Hugging Face config.json, not a scenario"
                           : "not a Hugging Face config.json (it has no model_type, or it is a scenario)");
        if (wasConfig)
            *wasConfig = config;
        // Validate fully before changing anything: a bad file leaves the current scenario untouched.
        if (config) {
            modelFromHfConfig(j);  // validate before touching the scenario
            setValue("/model", j); // replaces the whole model object: one undo step
        } else {
            const QFileInfo file(path);
            Scenario sc = scenarioFromJson(j, file.absolutePath().toStdString());
            // The scenario just validated is the one shown: the file is parsed once.
            m_undo.clear();
            m_path = file.absoluteFilePath();
            m_json = sc.document;
            m_estimate = headroom::estimate(sc);
            m_scenario = std::move(sc);
            m_error.clear();
            m_undo.setClean();
            emit changed();
            emit fileChanged();
        }
        return true;
    } catch (const Error& e) {
        if (error)
            *error = path + ": " + QString::fromStdString(e.what());
        return false;
    }
}

bool ScenarioDocument::open(const QString& path, QString* error, bool* wasConfig) {
    return openAs(path, error, Accept::Either, wasConfig);
}

bool ScenarioDocument::load(const QString& path, QString* error) {
    return openAs(path, error, Accept::Scenario, nullptr);
}

bool ScenarioDocument::importModelConfig(const QString& path, QString* error) {
    return openAs(path, error, Accept::ModelConfig, nullptr);
}

bool ScenarioDocument::writeCopy(const QString& path, QString* error) const {
    QSaveFile file(path);
    const QByteArray bytes = QByteArray::fromStdString(jsonText(m_json, 2) + "\n");
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
        if (error)
            *error = path + ": " + file.errorString();
        return false;
    }
    return true;
}

bool ScenarioDocument::saveAs(const QString& path, QString* error) {
    if (!writeCopy(path, error))
        return false;
    m_path = QFileInfo(path).absoluteFilePath();
    m_undo.setClean();
    emit fileChanged();
    return true;
}

} // namespace headroom
