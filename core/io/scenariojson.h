// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/fileio.h"
#include "core/plan/scenario.h"

#include <nlohmann/json.hpp>
#include <string>

namespace headroom {

inline constexpr const char* kScenarioSchema = "headroom.scenario/1";

// Validates and resolves a scenario document (schema headroom.scenario/1). `baseDir` resolves a relative
// model.hf_config path. Throws Error naming the JSON path of the first invalid value.
Scenario scenarioFromJson(const nlohmann::json& doc, const std::string& baseDir = ".");
// Reads and parses a file; errors are prefixed with the file name. JSON syntax errors name the byte.
Scenario loadScenarioFile(const std::string& path);
// Parses JSON text; syntax errors become Error with the byte offset.
nlohmann::json parseJsonText(const std::string& text);
// The document to save: the scenario's own document (unknown keys kept), pretty-printed.
std::string scenarioToJsonString(const Scenario& scenario);
// What a scenario gets for keys it leaves out, written out (TrainingSettings' and InferenceSettings'
// member defaults are the one source): a new training or inference section starts from these.
nlohmann::json defaultTrainingSection();
// What the reader assumes for a training key the file leaves out when the default depends on other keys of
// the section (the loss, the AdamW step: by framework and compile), as the file would spell it; empty when
// the key's default is fixed. The settings panel shows these, so that it and the reader never disagree.
std::string derivedTrainingDefault(const nlohmann::json& training, const std::string& key);
nlohmann::json defaultInferenceSection();
// cluster.expandable_segments when the file leaves it out: true where the framework sets it itself (Unsloth
// on import, torchtitan's launcher), else PyTorch's default, false. The settings panel shows the same.
bool defaultExpandableSegments(const nlohmann::json& doc);
// training.fine_tuning.double_quantization when the file leaves it out: true where the framework quantises
// the base's scales itself (torchtune's torchao NF4 always; Unsloth's loader asks bitsandbytes for it),
// else bitsandbytes' default, false. The settings panel shows the same.
bool defaultDoubleQuantization(const nlohmann::json& doc);
// The default scenario embedded from resources/default.headroom.json.
nlohmann::json defaultScenarioDocument();

} // namespace headroom
