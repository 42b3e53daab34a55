// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/comparejson.h"

#include "core/checkednumbers.h"
#include "core/plan/settingnames.h"

namespace headroom {

nlohmann::json comparisonToJson(const Comparison& c, const std::string& traceName) {
    nlohmann::json measured = nlohmann::json::object(), estimated = nlohmann::json::object();
    for (std::size_t i = 0; i < kMeasuredCategories; ++i) {
        const char* key = measuredCategoryKey(static_cast<MeasuredCategory>(i));
        measured[key] = c.measured.bytes[i];
        estimated[key] = c.estimated[i];
    }
    nlohmann::json j = {{"schema", "headroom.compare/1"},
                        {"trace", traceName},
                        {"device", c.device},
                        {"at_event", c.measured.event},
                        {"measured", {{"allocated_bytes", c.measured.total}, {"by_category", measured}}},
                        {"estimate", {{"allocated_bytes", c.estimatedTotal}, {"by_category", estimated}}},
                        {"allocated_recorded", c.allocatedRecorded},
                        {"events_recorded", c.eventsRecorded},
                        {"difference_bytes", c.difference()},
                        {"relative_error", c.relativeError()}};
    if (!c.allocatedRecorded) { // nothing measured to be off from: not a 0% error
        j["difference_bytes"] = nullptr;
        j["relative_error"] = nullptr;
        j["used"] = {{"measured_bytes", c.usedMeasured},
                     {"estimate_bytes", clampToInt64(c.usedEstimated)},
                     {"relative_error", c.usedError()}};
    }
    if (c.reservedMeasured > 0)
        j["reserved"] = {{"measured_bytes", c.reservedMeasured},
                         {"estimate_bytes", clampToInt64(c.reservedEstimated)},
                         {"relative_error", c.reservedError()}};
    if (c.reservedMeasured > 0 && !c.allocatorNote.empty())
        j["reserved"]["planned_as_recorded"] = c.allocatorNote;
    if (c.code.found)
        j["code"] = {{"framework", nameOf(frameworkNames(), c.code.framework)},
                     {"file", c.code.file},
                     {"bytes", c.code.bytes},
                     {"bytes_with_stack", c.code.stacked},
                     {"planned_with", nameOf(frameworkNames(), c.planned)}};
    if (c.code.found && c.codePlanAllocated >= 0)
        j["code"]["planned_with_code_profile"] = {{"allocated_bytes", clampToInt64(c.codePlanAllocated)},
                                                  {"reserved_bytes", clampToInt64(c.codePlanReserved)}};
    if (c.firstStep)
        j["first_step"] = {{"created_optimizer_states_bytes", c.createdStates},
                           {"later_step_peak_bytes", c.laterStepPeak},
                           {"relative_error", c.laterStepError()}};
    return j;
}

nlohmann::json calibrationFactorsToJson(const Calibration& c) {
    nlohmann::json j = {{"linear", c.linear},
                        {"quadratic", c.quadratic},
                        {"kv_cache", c.kvCache},
                        {"optimizer_step_bytes_per_parameter", c.optimizerStepBytesPerParameter},
                        {"workspace_bytes", c.workspaceBytes}};
    if (c.stepScratchBytesPerParameter >= 0)
        j["optimizer_step_scratch_bytes_per_parameter"] = c.stepScratchBytesPerParameter;
    if (c.heldLogitCopies >= 0)
        j["held_logit_copies"] = c.heldLogitCopies;
    if (c.logits >= 0)
        j["logits"] = c.logits;
    for (const auto& [dtype, factor] : c.logitsByDtype)
        j["logits_by_activation_bytes"][std::to_string(static_cast<int>(dtype))] = factor;
    if (c.stepScratchLargestTensors >= 0)
        j["optimizer_step_scratch_largest_tensors"] = c.stepScratchLargestTensors;
    if (c.backwardScratchScores >= 0)
        j["backward_score_scratch"] = c.backwardScratchScores;
    if (c.prefillAttentionLinear >= 0)
        j["prefill_attention_linear"] = c.prefillAttentionLinear;
    if (c.quadraticActivationBytes > 0)
        j["quadratic_activation_bytes"] = c.quadraticActivationBytes;
    for (const auto& [dtype, factor] : c.quadraticByDtype)
        j["quadratic_by_activation_bytes"][std::to_string(static_cast<int>(dtype))] = factor;
    if (c.allocatorOverhead >= 0)
        j["allocator_overhead_fraction"] = c.allocatorOverhead;
    if (c.replayedOverheadMeasured())
        j["reserved_beyond_replay_fraction"] = c.replayedOverhead;
    if (c.gradientsHeld)
        j["gradients_held"] = true;
    if (c.code)
        j["code"] = nameOf(frameworkNames(), *c.code);
    if (c.code && c.codeOptimizer)
        j["code_optimizer"] = true;
    if (c.code && c.codeTables)
        j["code_tables"] = true;
    if (c.measuredOn)
        j["measured_on"] = *c.measuredOn == Mode::Training ? "training" : "inference";
    if (c.logits >= 0 && c.logitsMeasuredWith)
        j["logits_measured_with"] = nameOf(lossNames(), *c.logitsMeasuredWith);
    if (c.stepMeasuredWith)
        j["optimizer_step_measured_with"] = nameOf(optimizerImplNames(), *c.stepMeasuredWith);
    return j;
}

namespace {

nlohmann::json tensorTableToJson(const TensorTable& t) {
    nlohmann::json rows = nlohmann::json::array();
    for (const TensorRow& row : t.rows)
        rows.push_back({{"shape", row.shape},
                        {"dtype_bytes", row.dtypeBytes},
                        {"bytes_each", row.each},
                        {"count", row.count},
                        {"bytes", row.bytes()}});
    return {{"allocated_bytes", t.total},
            {"model_state_bytes", t.modelState},
            {"workspace_bytes", t.workspaces},
            {"kv_cache_bytes", t.kvCache},
            {"rows", rows},
            {"residual_bytes", t.residual},
            {"residual_allocations", t.residualAllocations},
            {"largest_residual_bytes", t.largestResiduals}};
}

} // namespace

nlohmann::json calibrationToJson(const CalibrationResult& r) {
    nlohmann::json runs = nlohmann::json::array();
    for (const CalibrationRun& run : r.runs) {
        nlohmann::json j = {
            {"trace", run.trace},          {"measured_bytes", run.measured},
            {"before_bytes", run.before},  {"after_bytes", run.after},
            {"first_step", run.firstStep}, {"tensors_at_loss_peak", tensorTableToJson(run.atLoss)}};
        if (run.hasStep)
            j["tensors_at_step_peak"] = tensorTableToJson(run.atStep);
        if (run.noBackward)
            j["no_backward"] = true;
        if (!run.mismatch.empty())
            j["mismatch"] = run.mismatch;
        if (run.reservedMeasured > 0)
            j["reserved"] = {{"measured_bytes", run.reservedMeasured},
                             {"before_bytes", run.reservedBefore},
                             {"after_bytes", run.reservedAfter}};
        runs.push_back(std::move(j));
    }
    nlohmann::json factors = calibrationFactorsToJson(r.factors);
    if (r.ownProfile && r.factors.codeTables)
        factors["own_profile"] = calibrationFactorsToJson(*r.ownProfile);
    return {{"schema", "headroom.calibration/1"}, {"factors", factors}, {"runs", runs}};
}

nlohmann::json traceDiffToJson(const TraceDiff& d, const std::string& nameA, const std::string& nameB,
                               std::size_t limit) {
    nlohmann::json categories = nlohmann::json::object();
    for (std::size_t i = 0; i < kMeasuredCategories; ++i)
        categories[measuredCategoryKey(static_cast<MeasuredCategory>(i))] = {
            {"a", d.a.bytes[i]},
            {"b", d.b.bytes[i]},
            {"difference", saturatingSub(d.b.bytes[i], d.a.bytes[i])}};
    auto frames = [&](const std::vector<FrameDelta>& list) {
        nlohmann::json out = nlohmann::json::array();
        for (std::size_t i = 0; i < list.size() && i < limit; ++i)
            out.push_back({{"frame", list[i].frame},
                           {"a_bytes", list[i].bytesA},
                           {"b_bytes", list[i].bytesB},
                           {"a_count", list[i].countA},
                           {"b_count", list[i].countB},
                           {"difference", list[i].difference()}});
        return out;
    };
    return {
        {"schema", "headroom.diff/1"},
        {"a",
         {{"trace", nameA}, {"device", d.deviceA}, {"at_event", d.a.event}, {"allocated_bytes", d.a.total}}},
        {"b",
         {{"trace", nameB}, {"device", d.deviceB}, {"at_event", d.b.event}, {"allocated_bytes", d.b.total}}},
        {"difference_bytes", d.allocatedRecorded ? nlohmann::json(d.difference()) : nlohmann::json()},
        {"allocated_recorded", d.allocatedRecorded},
        {"reserved",
         {{"a_bytes", d.reservedA}, {"b_bytes", d.reservedB}, {"difference_bytes", d.reservedDifference()}}},
        {"by_category", categories},
        {"by_top_frame", frames(d.byFrame)},
        {"unmatched", frames(d.unmatched)}};
}

} // namespace headroom
