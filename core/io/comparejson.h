// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/calibration.h"
#include "core/compare/comparison.h"
#include "core/compare/tracediff.h"

#include <nlohmann/json.hpp>
#include <string>

namespace headroom {

// docs/formats.md section 6, schema headroom.compare/1.
nlohmann::json comparisonToJson(const Comparison& c, const std::string& traceName);
// docs/formats.md section 7, schema headroom.calibration/1; and the "calibration" object a scenario keeps
// (its factors, and the runs they were fitted on).
nlohmann::json calibrationToJson(const CalibrationResult& r);
nlohmann::json calibrationFactorsToJson(const Calibration& c);
// headroom.diff/1: two runs at their peaks; `limit` caps the frame lists.
nlohmann::json traceDiffToJson(const TraceDiff& d, const std::string& nameA, const std::string& nameB,
                               std::size_t limit = 50);

} // namespace headroom
