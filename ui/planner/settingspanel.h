// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <QString>
#include <QWidget>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

class QCheckBox;
class QComboBox;
class QGroupBox;
class QLabel;
class QFormLayout;
class QPushButton;

namespace headroom {

class ScenarioDocument;

// The settings side panel: Model, Training (or Inference) and Cluster groups. Every numeric setting is a
// slider with a spin box (log-scaled where the range is wide), every choice a combo box, every flag a
// check box. Widgets write through the document (undoable; a slider drag is one undo step) and follow
// it when it changes (undo, open, a suggestion applied).
class SettingsPanel : public QWidget {
    Q_OBJECT
public:
    explicit SettingsPanel(ScenarioDocument* document, QWidget* parent = nullptr);
    ~SettingsPanel() override;

    // Each field's JSON pointer and the value its widget shows: what scenario -> widgets -> scenario reads.
    nlohmann::json valuesFromWidgets() const;
    // The widget for a JSON pointer ("/training/micro_batch_size"), for tests and benchmarks.
    QWidget* fieldWidget(const QString& pointer) const;
    QStringList pointers() const;
    // Asks for a config.json (the handler lets tests skip the file dialog).
    std::function<QString()> chooseConfigFile;

public slots:
    void refresh();
    void importConfig();

private:
public:
    struct Field;

private:
    void addField(QFormLayout* form, Field field);
    void refreshModel();

    ScenarioDocument* m_doc;
    std::vector<std::unique_ptr<Field>> m_fields;
    QGroupBox* m_training = nullptr;
    QGroupBox* m_inference = nullptr;
    QGroupBox* m_fineTuning = nullptr;
    std::vector<QCheckBox*> m_targets; // the adapted layers (target_modules)
    QWidget* m_targetsRow = nullptr;
    QComboBox* m_mode = nullptr;
    QComboBox* m_preset = nullptr;
    QLabel* m_modelInfo = nullptr;
    int m_dragKey = 0;
    bool m_refreshing = false;
};

} // namespace headroom
