// SPDX-License-Identifier: GPL-3.0-or-later
// Framework profiles (training.framework) against what the frameworks' own runs measured, and their
// op-by-op accounting against hand computations. The published figures and their sources are in
// examples/published/cases.json; docs/frameworks.md derives every number the profiles use.
#include "core/compare/trackrecord.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/io/jsontext.h"
#include "core/io/scenariojson.h"
#include "core/io/validation.h"
#include "core/plan/cs336replay.h"
#include "core/plan/settingnames.h"
#include "core/plan/workspaces.h"
#include "core/serve/estimate.h"
#include "tests/testutil.h"

#include <QFile>
#include <QTest>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

using namespace headroom;
using namespace headroom::test;
using nlohmann::json;

namespace {

QString publishedDir() {
    return QStringLiteral(HEADROOM_SOURCE_DIR "/examples/published/");
}

// The published runs, estimated as `headroom-cli validate` estimates them (core/io/validation).
const Validation& published() {
    static const Validation v =
        runValidation({loadValidationCases((publishedDir() + QStringLiteral("cases.json")).toStdString())},
                      AttributionRules::pytorchDefaults());
    return v;
}

const CaseResult* publishedRun(const std::string& id) {
    for (const CaseResult& r : published().results)
        if (r.c->id == id)
            return &r;
    return nullptr;
}

// Stage 0 at the start of the backward, where the loss runs (not the first layer's backward beside it).
Breakdown atLoss(const Scenario& sc) {
    for (const TimelinePoint& t : phaseTimeline(sc, 0, 2))
        if (t.phase == Phase::Backward && t.progress == 0 && !t.layerRunning)
            return t.bytes;
    return Breakdown{};
}

// torchtitan's newest release unless `version` names one.
Scenario llama3(const std::string& preset, int gpus, int mbs, int seq, const char* checkpointing,
                const char* version = nullptr) {
    json doc = trainingDoc({{"preset", preset}});
    doc["training"]["framework"] = "torchtitan";
    if (version)
        doc["training"]["framework_version"] = version;
    doc["training"]["micro_batch_size"] = mbs;
    doc["training"]["sequence_length"] = seq;
    doc["training"]["activation_checkpointing"] = checkpointing;
    doc["cluster"]["num_gpus"] = gpus;
    doc["cluster"]["data_parallel"] = "zero3";
    return scenarioFromJson(doc);
}

} // namespace

class TestFrameworks : public QObject {
    Q_OBJECT
private slots:
    void publishedPeaks_data();
    void publishedPeaks();
    void medianErrorAcrossPublishedRuns();
    void validateRunsAgainstTheTargets_data();
    void validateRunsAgainstTheTargets();
    void trackRecordFollowsTheCases();
    void autocastCacheFollowsTheGradMode();
    void inferenceModeCastsEachWeightForItsMatmul();
    void qkNormsKeepTheirInputs();
    void forwardWithGraphByHand();
    void firstStepHoldsNoStatesBeforeItsStep();
    void cs336BasicsCheckpointedAndRefused();
    void megatronStatesAndPaddingByHand();
    void megatronStateBetweenSteps_data();
    void megatronStateBetweenSteps();
    void megatronDdpReducesInPlace();
    void stateBetweenStepsAcrossRuns();
    void megatronMicrobatchGroup();
    void selectiveOpKeepsEveryOtherMatmul();
    void lossBytesPerFramework();
    void transformersLossByRelease();
    void torchtitanRootStaysGathered();
    void contextParallelShardsStates();
    void torchtuneAdamStatesFollowTheWeights();
    void optimizerInBackwardByHand();
    void frameworkValuesAreChecked();
    void eagerLayersByHand();
    void autocastCastsPerMatmulByHand();
    void eagerSoftmaxByHand();
    void activationOffloadingKeepsTwoLayers();
    void deepspeedBuckets();
    void fullCheckpointingEveryNthLayer();
    void adamStepTemporaries();
};

namespace {
// The published runs the profiles are checked against, fixed here so that none can vanish from cases.json
// unnoticed: cases.json must hold exactly these, the fit runs (used to build the profiles) first.
const std::vector<std::string> kFitRuns = {
    "megatron-gpt-7b-tp4-pp1-h100",
    "megatron-gpt-7b-tp4-pp1-a100",
    "megatron-gpt-7b-tp1-pp4-h100",
    "megatron-gpt-7b-tp1-pp4-a100",
    "megatron-nemotron-15b-tp8-sp-h100",
    "torchtitan-llama3-8b-fsdp8-sac-op",
    "torchtitan-llama3-8b-fsdp8-sac-op-compile",
    "torchtitan-llama3-8b-fsdp8-sac-op-compile-float8",
    "torchtitan-llama3-8b-fsdp128-sac-op",
    "torchtitan-llama3-8b-fsdp128-sac-op-compile",
    "torchtitan-llama3-8b-fsdp128-sac-op-compile-float8",
    "torchtitan-llama3-8b-fsdp8-cp1-full-ac",
    "torchtitan-llama3-8b-fsdp4-cp2-full-ac",
    "torchtitan-llama3-8b-fsdp2-cp4-full-ac",
    "torchtitan-llama3-8b-fsdp1-cp8-full-ac",
    "torchtitan-llama3-8b-fsdp32-h200",
    "torchtitan-llama3-8b-fsdp64-h200",
    "torchtune-llama3.2-3b-packed",
    "torchtune-llama3.2-3b-compile",
    "torchtune-llama3.2-3b-chunked-loss",
    "torchtune-llama3.2-3b-full-ac",
    // A validate run until loss_parallel and the gathered head input were read from source because of it.
    "torchtitan-llama3-70b-fsdp32-tp8-full-ac",
    // Validate runs until the head's backward was modelled because they were 6.7% under.
    "torchtune-llama3.2-3b-optimizer-in-backward",
    "torchtune-llama3.2-3b-activation-offloading",
    "torchtune-llama3.2-3b-adamw8bit",
    // Megatron-LM CI tests that were validate runs until Megatron's fused cross-entropy was modelled on them.
    "megatron-ci-gpt3_mcore_te_tp2_pp2_cross_entropy_loss_fusion",
    "megatron-ci-gpt3_mcore_te_tp2_pp2_resume_torch_dist_cross_entropy_loss_fusion",
    // Validate runs (22.4% under) until PyTorch 2.5's second fused-loss buffer was planned on them
    // (training.torch_version).
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_cross_entropy_loss_fusion_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_resume_torch_dist_cross_entropy_loss_fusion_dgx_"
    "a100_"
    "1N8G",
};
// Runs that played no part in building the profiles (Megatron-LM's CI tests, converted from their own
// arguments by examples/published/megatron_ci.py, and torchtitan's logged runs): checked as a set against the
// targets, never one by one, and never tuned for (a constant changed to pass one moves it to the fit runs
// above).
const std::vector<std::string> kValidateRuns = {
    "megatron-ci-gpt3_mcore_te_tp1_pp1_dist_optimizer_fim_dataset",
    "megatron-ci-gpt3_mcore_te_tp1_pp1_dist_optimizer_no_mmap_bin_files",
    "megatron-ci-gpt3_mcore_te_tp1_pp1_frozen_resume_torch_dist_dist_optimizer",
    "megatron-ci-gpt3_mcore_te_tp1_pp1_resume_torch_dist_dist_optimizer",
    "megatron-ci-gpt3_mcore_te_tp1_pp1_resume_torch_dist_uniform_full_recompute",
    "megatron-ci-gpt3_mcore_te_tp1_pp2_resume_torch_dist_rope_embeddings",
    "megatron-ci-gpt3_mcore_te_tp1_pp2_resume_torch_dist_rope_embeddings_interleaved_no_fusion",
    "megatron-ci-gpt3_mcore_te_tp1_pp4_resume_torch_dist_untie_embeddings_and_outputs",
    "megatron-ci-gpt3_mcore_te_tp1_pp4_vp1",
    "megatron-ci-gpt3_mcore_te_tp1_pp4_vp1_dist_optimizer_overlap_grad_reduce_param_gather_overlap_optimizer",
    "megatron-ci-gpt3_mcore_te_tp1_pp4_vp1_resume_torch_decoupled_lr",
    "megatron-ci-gpt3_mcore_te_tp1_pp4_vp1_resume_torch_dist",
    "megatron-ci-gpt3_mcore_te_tp1_pp4_vp1_resume_torch_dist_calculate_per_token_loss",
    "megatron-ci-gpt3_mcore_te_tp1_pp4_vp1_resume_torch_dist_dist_optimizer_overlap_grad_reduce",
    "megatron-ci-gpt3_mcore_te_tp1_pp4_vp1_resume_torch_dist_dist_optimizer_overlap_grad_reduce_param_gather",
    "megatron-ci-gpt3_mcore_te_tp1_pp4_vp1_resume_torch_dist_dist_optimizer_overlap_grad_reduce_untied",
    "megatron-ci-gpt3_mcore_te_tp1_pp4_vp1_resume_torch_dist_tunable_overlap",
    "megatron-ci-gpt3_mcore_te_tp1_pp4_vp1_tunable_overlap",
    "megatron-ci-gpt3_mcore_te_tp2_pp1_frozen_resume_torch_dist_cp2_nondeterministic",
    "megatron-ci-gpt3_mcore_te_tp2_pp1_resume_torch_dist_cp2_nondeterministic",
    "megatron-ci-gpt3_mcore_te_tp2_pp2_cp2",
    "megatron-ci-gpt3_mcore_te_tp2_pp2_cp2_calculate_per_token_loss",
    "megatron-ci-gpt3_mcore_te_tp2_pp2_cp2_calculate_per_token_loss_nondeterministic",
    "megatron-ci-gpt3_mcore_te_tp2_pp2_cp2_etp4_calculate_per_token_loss_dp_last",
    "megatron-ci-gpt3_mcore_te_tp2_pp2_cp2_etp4_calculate_per_token_loss_nondeterministic_dp_last",
    "megatron-ci-gpt3_mcore_te_tp2_pp2_cp2_etp4_dp_last",
    "megatron-ci-gpt3_mcore_te_tp2_pp2_cp2_etp4_nondeterministic_dp_last",
    "megatron-ci-gpt3_mcore_te_tp2_pp2_cp2_nondeterministic",
    "megatron-ci-gpt3_mcore_te_tp2_pp2_resume_torch_dist",
    "megatron-ci-gpt3_mcore_te_tp2_pp2_resume_torch_dist_cp2_nondeterministic",
    "megatron-ci-gpt3_mcore_te_tp2_pp2_resume_torch_dist_ddp_average_in_collective",
    "megatron-ci-gpt3_mcore_te_tp2_pp2_resume_torch_dist_no_create_attention_mask_in_dataloader",
    "megatron-ci-gpt3_mcore_te_tp2_pp2_resume_torch_dist_reshard_1x4xNone",
    "megatron-ci-gpt3_mcore_te_tp4_pp1_dist_optimizer_overlap_grad_reduce_param_gather",
    "megatron-ci-gpt3_mcore_te_tp4_pp1_resume_torch_dist_dist_optimizer_overlap_grad_reduce",
    "megatron-ci-gpt3_mcore_te_tp4_pp1_resume_torch_dist_dist_optimizer_overlap_grad_reduce_param_gather",
    "megatron-ci-gpt3_mcore_te_tp4_pp1_resume_torch_dist_qk_layernorm_test_mode",
    "megatron-ci-gpt3_mcore_te_tp4_pp2_frozen_resume_torch_dist_reshard_8x1xNone",
    "megatron-ci-gpt3_mcore_te_tp4_pp2_resume_torch_dist_reshard_8x1xNone",
    "megatron-ci-gpt3_mcore_tp1_pp2",
    "megatron-ci-gpt3_mcore_tp1_pp4",
    // The same CI at core_v0.12.0 (May 2025), on DGX A100s in its dev container: another Megatron-LM, another
    // PyTorch, another GPU.
    "megatron-ci-core-v0.12-dev-gpt3_345m_nightly_dgx_a100_1N8G_mcore_tp1_pp1_dist_optimizer_overlap_grad_"
    "reduce_param_gather",
    "megatron-ci-core-v0.12-dev-gpt3_345m_nightly_dgx_a100_1N8G_mcore_tp1_pp2",
    "megatron-ci-core-v0.12-dev-gpt3_345m_nightly_dgx_a100_1N8G_mcore_tp1_pp4",
    "megatron-ci-core-v0.12-dev-gpt3_345m_nightly_dgx_a100_1N8G_mcore_tp4_pp1",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp1_dist_optimizer_no_mmap_bin_files_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp1_frozen_resume_torch_dist_dist_optimizer_dgx_a100_"
    "1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp1_resume_torch_dist_dist_optimizer_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp1_resume_torch_dist_dist_optimizer_no_mmap_bin_files_"
    "dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp1_resume_torch_dist_uniform_full_recompute_dgx_a100_"
    "1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp1_uniform_full_recompute_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp2_cp4_a2a_p2p_nondeterministic_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp2_resume_torch_dist_cp4_a2a_p2p_nondeterministic_dgx_"
    "a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp2_resume_torch_dist_rope_embeddings_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp2_resume_torch_dist_rope_embeddings_interleaved_no_"
    "fusion_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp2_rope_embeddings_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp2_rope_embeddings_interleaved_no_fusion_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_resume_torch_dist_sequence_parallel_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_resume_torch_dist_untie_embeddings_and_outputs_dgx_"
    "a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_sequence_parallel_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_untie_embeddings_and_outputs_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_calculate_per_token_loss_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_decoupled_lr_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_dist_optimizer_overlap_grad_reduce_dgx_a100_"
    "1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_dist_optimizer_overlap_grad_reduce_param_gather_"
    "dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_dist_optimizer_overlap_grad_reduce_param_gather_"
    "overlap_optimizer_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_dist_optimizer_overlap_grad_reduce_untied_dgx_"
    "a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_resume_torch_decoupled_lr_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_resume_torch_dist_calculate_per_token_loss_dgx_"
    "a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_resume_torch_dist_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_resume_torch_dist_dist_optimizer_overlap_grad_"
    "reduce_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_resume_torch_dist_dist_optimizer_overlap_grad_"
    "reduce_param_gather_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_resume_torch_dist_dist_optimizer_overlap_grad_"
    "reduce_untied_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_resume_torch_dist_tunable_overlap_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp1_pp4_vp1_tunable_overlap_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp1_cp2_nondeterministic_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp1_frozen_resume_torch_dist_cp2_nondeterministic_dgx_"
    "a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp1_resume_torch_dist_cp2_nondeterministic_dgx_a100_"
    "1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_cp2_calculate_per_token_loss_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_cp2_calculate_per_token_loss_nondeterministic_dgx_"
    "a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_cp2_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_cp2_etp4_calculate_per_token_loss_dp_last_dgx_a100_"
    "1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_cp2_etp4_calculate_per_token_loss_nondeterministic_"
    "dp_last_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_cp2_etp4_dp_last_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_cp2_etp4_nondeterministic_dp_last_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_cp2_nondeterministic_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_ddp_average_in_collective_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_no_create_attention_mask_in_dataloader_dgx_a100_"
    "1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_no_mmap_bin_files_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_resume_torch_dist_cp2_nondeterministic_dgx_a100_"
    "1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_resume_torch_dist_ddp_average_in_collective_dgx_"
    "a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_resume_torch_dist_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_resume_torch_dist_no_create_attention_mask_in_"
    "dataloader_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_resume_torch_dist_no_mmap_bin_files_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp2_pp2_resume_torch_dist_reshard_1x4xNone_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp4_pp1_dist_optimizer_overlap_grad_reduce_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp4_pp1_dist_optimizer_overlap_grad_reduce_param_gather_dgx_"
    "a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp4_pp1_qk_layernorm_test_mode_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp4_pp1_resume_torch_dist_dist_optimizer_overlap_grad_"
    "reduce_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp4_pp1_resume_torch_dist_dist_optimizer_overlap_grad_"
    "reduce_param_gather_dgx_a100_1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp4_pp1_resume_torch_dist_qk_layernorm_test_mode_dgx_a100_"
    "1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp4_pp2_frozen_resume_torch_dist_reshard_8x1xNone_dgx_a100_"
    "1N8G",
    "megatron-ci-core-v0.12-dev-gpt3_mr_mcore_te_tp4_pp2_resume_torch_dist_reshard_8x1xNone_dgx_a100_1N8G",
    // torchtitan's own llama3_8b.toml as pull requests logged it: January 2025's compiled blocks (bf16,
    // float8 rowwise, float8 tensorwise), March and June 2025's eager runs, October 2025's flex attention
    // under CP 2.
    "torchtitan-llama3-8b-fsdp8-sac-op-bs1-compile-2025-01",
    "torchtitan-llama3-8b-fsdp8-sac-op-bs1-compile-float8-rowwise-2025-01",
    "torchtitan-llama3-8b-fsdp8-sac-op-bs1-compile-float8-tensorwise-2025-01",
    "torchtitan-llama3-8b-fsdp8-sac-op-bs1-2025-03",
    "torchtitan-llama3-8b-fsdp8-sac-op-bs1-2025-06",
    "torchtitan-llama3-8b-fsdp2-cp2-full-ac-2025-10",
};
// The known misses, by name, with their |error| when last looked at and their reasons: each is an expected
// failure (counted by scripts/test), and an unexpected pass once the profile closes it; none may get worse by
// more than half a point. Nothing else may miss.
struct KnownMiss {
    double recorded;
    const char* reason;
};
const std::map<std::string, KnownMiss> kKnownMisses = {
    {"torchtune-llama3.2-3b-chunked-loss",
     {0.066,
      "6.6% over, 2.9 GiB: the head's backward (two gradients of the tied weight beside seven of the "
      "eight chunks' logit gradients) is where this uncheckpointed run peaks in the plan; the plan was "
      "already 4.4% (1.9 GiB) over at the loss, so what it keeps for the compiled layers without "
      "checkpointing is too much, and by how much is not read yet."}},
    {"torchtune-llama3.2-3b-adamw8bit",
     {0.129, "13% under, 2.3 GiB: the table ran torchao's AdamW8bit, whose step is a torch.compile'd "
             "function per parameter (torchao/prototype/low_bit_optim/adam.py single_param_adam: states "
             "dequantised to fp32, the update in fp32), not bitsandbytes' kernel the scenario's adam8bit "
             "plans; stepping the 394M-parameter tied embedding last, what Inductor keeps in fp32 besides "
             "(about one and a half of its fp32 copies) is not read yet."}},
    {"torchtitan-llama3-70b-fsdp32-tp8-full-ac",
     {0.122, "12% under, 8.8 GiB: loss_parallel's four fp32 vocabulary shards and the output layer's "
             "gathered input are planned (torch's tensor/parallel/loss.py, DTensor's ColwiseParallel); "
             "the rest of what the 70B run reserves at its loss is not read yet."}},
};
// The validate runs beyond the 12% target, with their |error| when they were last looked at: none may get
// worse by more than half a point (a regression guard, not a tolerance: the target stays 12%, an expected
// failure), and no other run may go beyond 12%. Improving one is for the table to be updated by hand.
const std::map<std::string, double> kValidateMisses = {};
} // namespace

void TestFrameworks::publishedPeaks_data() {
    QTest::addColumn<QString>("id");
    std::vector<std::string> fit, validate;
    for (const CaseResult& r : published().results)
        (r.c->role == "fit" ? fit : validate).push_back(r.c->id);
    QVERIFY2(
        fit == kFitRuns,
        qPrintable(
            QStringLiteral("%1 fit runs in cases.json, %2 expected").arg(fit.size()).arg(kFitRuns.size())));
    QVERIFY2(validate == kValidateRuns,
             qPrintable(QStringLiteral("%1 validate runs in cases.json, %2 expected")
                            .arg(validate.size())
                            .arg(kValidateRuns.size())));
    for (const std::string& id : kFitRuns)
        QTest::newRow(id.c_str()) << QString::fromStdString(id);
}

void TestFrameworks::publishedPeaks() {
    // Each row: a real run's published peak (its source in cases.json: a CI golden value, a benchmark
    // table), the scenario that describes its workload, and Headroom's figure for the same counter.
    QFETCH(QString, id);
    const CaseResult* r = publishedRun(id.toStdString());
    QVERIFY(r);
    // A run may go past the model's configured context (torchtitan's 262,144 tokens on Llama 3.1 8B), but
    // no framework setting may be ignored.
    for (const std::string& w : r->warnings)
        QVERIFY2(w.find("framework") == std::string::npos, w.c_str());
    const QString what = caseLine(*r);
    qInfo().noquote() << what;
    // cases.json explains the same misses to its readers ("open"); the list here decides.
    QCOMPARE(!r->c->knownMiss.empty(), kKnownMisses.count(id.toStdString()) == 1);
    if (const auto miss = kKnownMisses.find(id.toStdString()); miss != kKnownMisses.end()) {
        // No worse than recorded, and an unexpected pass (XPASS) once the profile closes the gap.
        QVERIFY2(std::abs(r->error()) <= miss->second.recorded + 0.005, qPrintable(what));
        QEXPECT_FAIL("", miss->second.reason, Continue);
    }
    QVERIFY2(std::abs(r->error()) <= 0.05, qPrintable(what));
}

void TestFrameworks::medianErrorAcrossPublishedRuns() {
    // Every fit run counts, the known misses too; the median computed here, not by the summary.
    std::vector<double> errors;
    for (const CaseResult& r : published().results)
        if (r.c->role == "fit")
            errors.push_back(std::abs(r.estimated / r.measured - 1));
    std::sort(errors.begin(), errors.end());
    const double median = errors.size() % 2 ? errors[errors.size() / 2]
                                            : (errors[errors.size() / 2 - 1] + errors[errors.size() / 2]) / 2;
    // The aim was 2%; this guards what the profiles reached (1.5%) against regressions. Runs moved from
    // validate to fit because a rule was chosen on them come with their errors: the 24 runs fit before
    // 2026-11-25 are held to it on their own, and the whole set's miss is named.
    std::vector<double> before;
    for (const CaseResult& r : published().results)
        if (r.c->role == "fit" && r.c->id.rfind("torchtune-llama3.2-3b-", 0) != 0 &&
            r.c->id.rfind("megatron-ci-core-v0.12-dev-", 0) != 0)
            before.push_back(std::abs(r.estimated / r.measured - 1));
    for (const char* id : {"torchtune-llama3.2-3b-packed", "torchtune-llama3.2-3b-compile",
                           "torchtune-llama3.2-3b-chunked-loss", "torchtune-llama3.2-3b-full-ac"}) {
        const CaseResult* r = publishedRun(id);
        QVERIFY(r);
        before.push_back(std::abs(r->estimated / r->measured - 1));
    }
    QCOMPARE(before.size(), size_t(24));
    std::sort(before.begin(), before.end());
    const double beforeMedian = (before[11] + before[12]) / 2;
    QVERIFY2(beforeMedian <= 0.02, qPrintable(QString::number(100 * beforeMedian, 'f', 2) + "%"));
    QEXPECT_FAIL(
        "",
        "2.3% over the 29 fit runs: torchtune's three rows with the step in the backward (2.4%, 2.2% "
        "and 12.9% off) became fit when the head's backward was modelled because of them, and Megatron-LM "
        "0.12's fused-loss pair (4.0%) when PyTorch 2.5's second buffer was planned on them.",
        Continue);
    QVERIFY2(median <= 0.02, qPrintable(QString::number(100 * median, 'f', 2) + "%"));
    std::vector<const CaseResult*> all;
    for (const CaseResult& r : published().results)
        if (r.c->role == "fit")
            all.push_back(&r);
    QCOMPARE(summarizeErrors(all).median, median);
}

void TestFrameworks::validateRunsAgainstTheTargets_data() {
    QTest::addColumn<QString>("counter");
    QTest::newRow("allocated") << QStringLiteral("allocated"); // Megatron's mem-max-allocated-bytes
    QTest::newRow("reserved") << QStringLiteral("reserved");   // torchtitan's max reserved
    // No validate run reports active memory since torchtune's rows with the step in the backward became fit
    // runs (the head's backward was modelled looking at them, 2026-11-25).
}

void TestFrameworks::validateRunsAgainstTheTargets() {
    // The target for runs nobody tuned for: a median error of at most 5% and a worst of at most 12%, per
    // counter. Computed here from the runs.
    QFETCH(QString, counter);
    std::vector<double> errors;
    std::size_t all = 0;
    for (const CaseResult& r : published().results)
        if (r.c->role == "validate") {
            ++all;
            if (QString::fromStdString(r.c->metric) == counter)
                errors.push_back(std::abs(r.estimated / r.measured - 1));
        }
    QCOMPARE(all, kValidateRuns.size());
    QVERIFY(!errors.empty());
    std::sort(errors.begin(), errors.end());
    const double median = (errors[(errors.size() - 1) / 2] + errors[errors.size() / 2]) / 2,
                 worst = errors.back();
    const QString what = QStringLiteral("validate, %1: %2 runs, median %3%, worst %4%")
                             .arg(counter)
                             .arg(errors.size())
                             .arg(100 * median, 0, 'f', 1)
                             .arg(100 * worst, 0, 'f', 1);
    qInfo().noquote() << what;
    // Not yet explained, and not tuned for, beyond 5%: torchtitan's October run (under). (0.12's QK-layernorm
    // test mode was 6.0% under until the LayerNorms over q and k were planned from Transformer Engine's
    // source: 3.7%.) A run beyond 12% would be pinned in kValidateMisses at its error, guarded run by run
    // against getting worse while the profile improves (none is since 0.12's fused-loss pair became fit).
    for (const CaseResult& r : published().results) {
        if (r.c->role != "validate" || QString::fromStdString(r.c->metric) != counter)
            continue;
        const double e = std::abs(r.estimated / r.measured - 1);
        const auto miss = kValidateMisses.find(r.c->id);
        if (miss == kValidateMisses.end())
            QVERIFY2(e <= 0.12, qPrintable(QStringLiteral("%1: %2% off, beyond 12% and not a known miss")
                                               .arg(QString::fromStdString(r.c->id))
                                               .arg(100 * e, 0, 'f', 1)));
        else
            QVERIFY2(e <= miss->second + 0.005,
                     qPrintable(QStringLiteral("%1: %2% off, worse than the %3% recorded")
                                    .arg(QString::fromStdString(r.c->id))
                                    .arg(100 * e, 0, 'f', 1)
                                    .arg(100 * miss->second, 0, 'f', 1)));
    }
    // reserved: torchtitan's five runs, 0.3-0.6% off in January 2025's three, 4.4% under in June's, 11.3%
    // (5.1 GiB) under in October's (torchtitan 0.2's FSDP2 units, flex attention under CP 2, full AC), where
    // what it reserves beyond the plan is not read yet.
    QVERIFY2(median <= 0.05, qPrintable(what));
    QVERIFY2(worst <= 0.12, qPrintable(what));
}

void TestFrameworks::trackRecordFollowsTheCases() {
    // The track record a plan shows (core/compare/trackrecord) against every published and recorded run the
    // project checks, recomputed here from the cases files: per framework, the runs never used to choose a
    // rule apart from those that were, calibrated predictions left out (they test calibration).
    const std::string root = HEADROOM_SOURCE_DIR "/examples/";
    const Validation v = runValidation({loadValidationCases(root + "published/cases.json"),
                                        loadValidationCases(root + "published/fine-tuning/cases.json"),
                                        loadValidationCases(root + "measured/cases.json")},
                                       AttributionRules::pytorchDefaults());
    std::map<Framework, std::array<std::vector<const CaseResult*>, 2>> byFramework; // [0] validate, [1] fit
    std::map<Framework, std::set<std::string>> counters;
    std::array<std::vector<const CaseResult*>, 2> calibrated;
    for (const CaseResult& r : v.results) {
        if (r.calibrated) {
            calibrated[r.c->role == "fit" ? 1 : 0].push_back(&r);
            continue;
        }
        const auto named = std::find_if(frameworkNames().begin(), frameworkNames().end(),
                                        [&](const auto& n) { return r.c->stack == n.name; });
        QVERIFY2(named != frameworkNames().end(), r.c->stack.c_str());
        byFramework[named->value][r.c->role == "fit" ? 1 : 0].push_back(&r);
        counters[named->value].insert(r.c->metric);
    }
    // Calibrated plans, every profile together: the line under a calibrated plan.
    {
        const ErrorSummary validate = summarizeErrors(calibrated[0]), fit = summarizeErrors(calibrated[1]);
        const QString row = QStringLiteral("{%1, %2, %3, %4, %5}")
                                .arg(validate.runs)
                                .arg(validate.median, 0, 'f', 5)
                                .arg(validate.worst, 0, 'f', 5)
                                .arg(fit.runs)
                                .arg(fit.median, 0, 'f', 5);
        qInfo().noquote() << "calibrated:" << row;
        const CalibrationTrackRecord& c = calibrationTrackRecord();
        QVERIFY2(c.validateRuns == static_cast<int>(validate.runs) &&
                     c.fitRuns == static_cast<int>(fit.runs) &&
                     std::abs(c.validateMedian - validate.median) <= 0.000005 &&
                     std::abs(c.validateWorst - validate.worst) <= 0.000005 &&
                     std::abs(c.fitMedian - fit.median) <= 0.000005,
                 qPrintable(row));
    }
    QCOMPARE(trackRecords().size(), byFramework.size());
    for (const auto& [framework, sets] : byFramework) {
        const ErrorSummary validate = summarizeErrors(sets[0]), fit = summarizeErrors(sets[1]);
        std::string metrics;
        for (const std::string& m : counters[framework])
            metrics += (metrics.empty() ? "" : ", ") + m;
        // The row as trackrecord.cpp writes it, to paste there when a figure has moved.
        const QString row = QStringLiteral("{Framework::%1, %2, %3, %4, %5, %6, \"%7\"}")
                                .arg(QString::fromStdString(labelOf(frameworkNames(), framework)))
                                .arg(validate.runs)
                                .arg(validate.median, 0, 'f', 5)
                                .arg(validate.worst, 0, 'f', 5)
                                .arg(fit.runs)
                                .arg(fit.median, 0, 'f', 5)
                                .arg(QString::fromStdString(metrics));
        qInfo().noquote() << row;
        const TrackRecord* r = trackRecordOf(framework);
        QVERIFY2(r, qPrintable(row));
        const auto near = [](double table, double computed) {
            return std::abs(table - computed) <= 0.000005;
        };
        QVERIFY2(r->validateRuns == static_cast<int>(validate.runs) &&
                     r->fitRuns == static_cast<int>(fit.runs) && near(r->validateMedian, validate.median) &&
                     near(r->validateWorst, validate.worst) && near(r->fitMedian, fit.median) &&
                     metrics == r->counters,
                 qPrintable(row));
    }
    // The sentence, written out by hand for one row: torchtitan's six validate runs (0.3%, 0.4%, 0.63%,
    // 0.83%, 0.99% and 11.3% off: the median halfway between the middle two, 0.73%).
    QCOMPARE(
        QString::fromStdString(trackRecordText(Framework::Torchtitan)),
        QStringLiteral("Track record: 6 runs it was not built on, median 0.7% off (worst 11.3%); 13 it was, "
                       "median 2.6% (reserved)"));
    QCOMPARE(QString::fromStdString(trackRecordText(Framework::DeepSpeed)),
             QStringLiteral("Track record: no published or recorded run checks the DeepSpeed profile yet"));
}

void TestFrameworks::qkNormsKeepTheirInputs() {
    // A norm over each head's query and key keeps its input for its backward; the rotation after it keeps
    // nothing per token, so without the norm nobody keeps q and k before it. Megatron's --qk-layernorm
    // (Transformer Engine's LayerNorm: the bf16 input, and the mean and 1/sigma of each row in fp32): its CI
    // test's GPT at tensor parallelism 4, 8 heads of 64 (2 on a rank, queries and keys), 1,024 tokens, one
    // sample: 1,024 x (2 + 2) x (64 x 2 + 8) bytes a layer more, and a weight and a bias of 64 on each.
    json doc = parseJsonText(readTextFile(
        (publishedDir() +
         QStringLiteral(
             "megatron-ci/gpt3_mcore_te_tp4_pp1_resume_torch_dist_qk_layernorm_test_mode.headroom.json"))
            .toStdString()));
    const auto stored = [](const json& j) { return layerActivations(scenarioFromJson(j), 0, 1).stored; };
    const auto parameters = [](const json& j) { return scenarioFromJson(j).model.totalParameters(); };
    QVERIFY(doc["model"]["qk_layernorm"].get<bool>());
    json without = doc;
    without["model"].erase("qk_layernorm");
    QCOMPARE(stored(doc) - stored(without), 1024.0 * (2 + 2) * (64 * 2 + 8));
    QCOMPARE(parameters(doc) - parameters(without), std::uint64_t(12 * 4 * 64));
    // Qwen3's RMSNorm in transformers (Qwen3RMSNorm, eager): the fp32 upcast its square and product save,
    // the normalised tensor in the input's dtype its weight's gradient needs, and one fp32 1/rms a row. 16
    // query heads and 8 key heads of 128, 2,048 tokens; the same shape written as Llama has no such norm.
    const json qwen3 = {
        {"model_type", "qwen3"},     {"hidden_size", 1024},      {"num_hidden_layers", 2},
        {"num_attention_heads", 16}, {"num_key_value_heads", 8}, {"head_dim", 128},
        {"intermediate_size", 3072}, {"vocab_size", 151936},     {"tie_word_embeddings", true}};
    json llama = qwen3;
    llama["model_type"] = "llama";
    json q = trainingDoc(qwen3), l = trainingDoc(llama);
    q["training"]["framework"] = l["training"]["framework"] = "huggingface";
    const double rows = 2048.0 * (16 + 8);
    QCOMPARE(stored(q) - stored(l), rows * (128 * (4 + 2) + 4));
    // With its weight frozen (LoRA) the normalised tensor is not kept; compiled, the fused norm keeps its
    // bf16 input.
    q["training"]["fine_tuning"] = l["training"]["fine_tuning"] = {
        {"method", "lora"}, {"rank", 16}, {"target_modules", {"q_proj", "v_proj"}}};
    QCOMPARE(stored(q) - stored(l), rows * (128 * 4 + 4));
    q["training"].erase("fine_tuning");
    l["training"].erase("fine_tuning");
    q["training"]["compile"] = l["training"]["compile"] = true;
    QCOMPARE(stored(q) - stored(l), rows * (128 * 2 + 4));
}

void TestFrameworks::inferenceModeCastsEachWeightForItsMatmul() {
    // Under torch.inference_mode autocast caches no cast, but cached_cast still makes one for the op that
    // asks (aten/src/ATen/autocast_mode.cpp: `arg.to(dtype)` when it cannot cache): an fp32 nn.Linear
    // computes with a bf16 copy of its weight that lives while it runs. A GPT-2-sized head (50,257 x 768)
    // on six layers, one 128-token sequence, every position's logits: at the head's moment its copy is
    // there beside the final norm's output and the logits (2 bytes each under autocast); while a layer runs,
    // its largest weight's copy, one of the MLP's 768 x 3,072 matrices. Under torch.no_grad the cache holds
    // every matmul weight's copy at both moments instead: the six layers' four attention and three MLP
    // matrices and the head.
    const double V = 50257, d = 768, f = 3072, layers = 6, s = 128;
    const json doc = {{"schema", "headroom.scenario/1"},
                      {"model",
                       {{"model_type", "llama"},
                        {"vocab_size", 50257},
                        {"hidden_size", 768},
                        {"intermediate_size", 3072},
                        {"num_hidden_layers", 6},
                        {"num_attention_heads", 12},
                        {"num_key_value_heads", 12},
                        {"tie_word_embeddings", false}}},
                      {"inference",
                       {{"batch_size", 1},
                        {"context_length", 128},
                        {"weight_dtype", "fp32"},
                        {"autocast", "bf16"},
                        {"grad_mode", "inference_mode"},
                        {"kv_cache", false},
                        {"framework", "pytorch"}}},
                      {"cluster", {{"gpu", "A100-80GB"}, {"num_gpus", 1}}}};
    const auto points = [](const json& j) {
        Breakdown head, layer;
        for (const TimelinePoint& t : phaseTimeline(scenarioFromJson(j), 0, 2))
            if (t.phase == Phase::Prefill && t.headRunning)
                head = t.bytes;
            else if (t.phase == Phase::Prefill && t.progress == 0)
                layer = t.bytes;
        return std::pair{head, layer};
    };
    const auto [head, layer] = points(doc);
    QCOMPARE(head[Category::Activations], 2 * s * d + 2 * V * d);
    QCOMPARE(head[Category::Logits], 2 * s * V);
    json noGrad = doc;
    noGrad["inference"]["grad_mode"] = "no_grad";
    const auto [cachedHead, cachedLayer] = points(noGrad);
    const double cached = 2 * (layers * (4 * d * d + 3 * d * f) + V * d);
    QCOMPARE(cachedHead[Category::Activations] - head[Category::Activations], cached - 2 * V * d);
    QCOMPARE(cachedLayer[Category::Activations] - layer[Category::Activations], cached - 2 * d * f);
    // The head's copy is the largest at this length: the forward peaks at the head, 77 MB above where it
    // peaked when none was planned (the logits and the norm's output alone).
    const Estimate e = estimate(scenarioFromJson(doc));
    QCOMPARE(e.ranks.at(0).peak[Category::Activations], 2 * s * d + 2 * V * d);
}

void TestFrameworks::autocastCacheFollowsTheGradMode() {
    // cs336_basics' Linear is einsum(x, weight) and einsum is on autocast's 16-bit list
    // (aten/src/ATen/autocast_mode.h AT_FORALL_LOWER_PRECISION_FP): the wrapper casts the parameter itself, a
    // leaf that requires a gradient, and keeps the copy in its cache until the region ends (cached_cast).
    // Under torch.no_grad the 2.7B model's forward holds a bf16 copy of every matmul weight: all parameters
    // but the embedding's 10,000 x 2,560 and the 65 norms' 2,560 each. Under torch.inference_mode PyTorch
    // since pytorch#165068 (December 2025) caches nothing: Wedsonlin's 512-token forward (torch 2.11) frees
    // each copy after its einsum (cs336BasicsForwardByHand).
    const double V = 10000, d = 2560, f = 10240, layers = 32;
    const double parameters = 2 * V * d + layers * (4 * d * d + 3 * d * f + 2 * d) + d;
    QCOMPARE(parameters, 3406809600.0);
    const double copies = 2 * (parameters - V * d - (2 * layers + 1) * d);
    QCOMPARE(copies, 6762086400.0);
    json doc = parseJsonText(readTextFile(
        (measuredDir() + QStringLiteral("cs336-basics/cs336-2.7b-128-forward-no-grad-bf16-autocast.headroom.json"))
            .toStdString()));
    const Estimate noGrad = estimate(scenarioFromJson(doc));
    doc["inference"]["grad_mode"] = "inference_mode";
    const Estimate inferenceMode = estimate(scenarioFromJson(doc));
    // Under no_grad the forward peaks as the head writes the logits, every copy cached: beside them the
    // final norm's output, the head's input and its cast (4 + 4 + 2 bytes a hidden unit) and the bf16
    // logits. Under inference_mode it peaks in the last layer's MLP, at w3's einsum, whose own copy is alive
    // while it runs: silu's output and w3's (2 + 2 bytes a unit of the FFN), the input's cast (2 a hidden
    // unit) beside the block's input, the embedding's output, x_attn, the residual and ln2's output (4 + 4
    // + 2 + 4 + 4).
    const double tokens = 4 * 128;
    const double atHead = tokens * ((4 + 4 + 2) * d + 2 * V);
    const double atW3 = tokens * ((2 + 2) * f + 2 * d + (4 + 4 + 2 + 4 + 4) * d) + 2 * d * f;
    QCOMPARE(noGrad.allocatedPeakBytes - inferenceMode.allocatedPeakBytes, copies + atHead - atW3);
    // The published runs agree: the bf16 forward at 128 tokens peaked 6.28 GiB above the fp32 one (19.18
    // and 12.90 GiB, damek's memory_viz_report.md), the copies 6.30 GiB with bf16 activations a little
    // smaller than fp32's.
    QVERIFY(std::abs(copies / kGiB - (19.18 - 12.90)) < 0.05);
    // The plain PyTorch forward (nn.Linear's weights) follows the same rule: under inference_mode each
    // matmul still casts its own weight while it runs, and at the layers' working set, where both peak, the
    // largest is one of the MLP's d x f matrices in bf16. Without autocast nothing is cast, whatever the
    // mode.
    doc["inference"]["framework"] = "pytorch";
    doc["inference"]["grad_mode"] = "no_grad";
    const Estimate plainNoGrad = estimate(scenarioFromJson(doc));
    doc["inference"]["grad_mode"] = "inference_mode";
    QCOMPARE(plainNoGrad.allocatedPeakBytes - estimate(scenarioFromJson(doc)).allocatedPeakBytes,
             copies - 2 * d * f);
    doc["inference"].erase("autocast");
    const double fp32 = estimate(scenarioFromJson(doc)).allocatedPeakBytes;
    doc["inference"]["grad_mode"] = "no_grad";
    QCOMPARE(estimate(scenarioFromJson(doc)).allocatedPeakBytes, fp32);
    doc["inference"]["grad_mode"] = "eval";
    QVERIFY(refusedNaming(doc, "inference.grad_mode"));
}

void TestFrameworks::forwardWithGraphByHand() {
    // A forward with autograd on and no backward (a benchmark's `_ = model(x)` without torch.no_grad): every
    // op saves what its backward would need, so the 2.7B model at 4 x 128 tokens in fp32 peaks as its head
    // writes the logits with every layer's saved tensors alive: per layer ten b·s·d fp32 tensors, SwiGLU's
    // five b·s·d_ff, exp's output and P (b·heads·s²), two rsqrt rows, max's int64 indices, the row sums and
    // the (s, s) bool mask; the final norm's three b·s·d and its rsqrt row; the fp32 logits. One cuBLAS
    // workspace (no backward thread), on an A100.
    const double b = 4, s = 128, d = 2560, f = 10240, heads = 32, V = 10000, layers = 32;
    const auto layerAt = [&](double n) {
        return 10 * b * n * d * 4 + 5 * b * n * f * 4 + 2 * b * heads * n * n * 4 + 2 * b * n * 4 +
               b * heads * n * (8 + 4) + n * n;
    };
    const double byHand =
        3406809600.0 * 4 + 8519680 + layers * layerAt(s) + 3 * b * s * d * 4 + b * s * 4 + b * s * V * 4;
    json doc = parseJsonText(readTextFile(
        (measuredDir() + QStringLiteral("cs336-basics/cs336-2.7b-128-forward-with-graph-h800.headroom.json"))
            .toStdString()));
    doc["cluster"]["gpu"] = "A100-80GB";
    const Estimate est = estimate(scenarioFromJson(doc));
    QCOMPARE(est.allocatedPeakBytes, byHand);
    // Cgfyufsygsm's run of it (an H800 PCIe, torch 2.9.1) peaked at 18.08 GiB.
    QVERIFY(std::abs(byHand / kGiB / 18.08 - 1) < 0.01);
    // At 2,048 tokens the last layer's softmax is the larger moment: 31 layers' saved tensors, and of the
    // last what it has saved by then (ln1's input, normalised x and rsqrt row, their product with the weight
    // that q, k and v take, the rotated Q and K, V, the max indices and sums), exp's output, where's output,
    // x - max and P being written (b·heads·s² fp32 each) and its mask; its output projection and MLP not
    // made yet, no logits.
    const double n = 2048;
    const double longByHand = 3406809600.0 * 4 + 8519680 + (layers - 1) * layerAt(n) +
                              b * n * (6 * d * 4 + 4 + heads * 12) + 4 * b * heads * n * n * 4 + n * n;
    json longer = doc;
    longer["inference"]["context_length"] = 2048;
    QCOMPARE(estimate(scenarioFromJson(longer)).allocatedPeakBytes, longByHand);
    // torch.no_grad is offered, and saves the graph: what the no_grad forward plans.
    const auto savings = rankSavings(scenarioFromJson(doc));
    const auto noGrad =
        std::find_if(savings.begin(), savings.end(), [](const Saving& sv) { return sv.id == "no_grad"; });
    QVERIFY(noGrad != savings.end());
    doc["inference"]["grad_mode"] = "no_grad";
    QCOMPARE(noGrad->peakAfter, estimate(scenarioFromJson(doc)).peakBytes);
    // Other code (plain PyTorch) keeps what its training forward saves (docs/frameworks.md, the training
    // table): per layer the two norms' inputs and the inputs q, k, v and the MLP read (four b·s·d), Q, K, V
    // and the attention output (four more), SwiGLU's gate, up, act(gate) and their product (four b·s·d_ff),
    // the softmax's output (b·heads·s², fp32 without autocast); then the final norm's input and output and
    // the logits the caller holds, fp32; no KV cache. Fewer score copies than cs336_basics' own code, as
    // plain code is planned until a calibration measures its own.
    doc["inference"]["grad_mode"] = "enabled";
    doc["inference"]["framework"] = "pytorch";
    const double plainLayer = 8 * b * s * d * 4 + 4 * b * s * f * 4 + b * heads * s * s * 4;
    const double plainByHand =
        3406809600.0 * 4 + 8519680 + layers * plainLayer + 2 * b * s * d * 4 + b * s * V * 4;
    const Estimate plain = estimate(scenarioFromJson(doc));
    QCOMPARE(plain.allocatedPeakBytes, plainByHand);
    QCOMPARE(plain.perGpu[Category::KvCache], 0.0);
    // An engine runs its forward without autograd: the mode is refused there, naming it.
    doc["inference"].erase("framework");
    doc["inference"]["engine"] = "vllm";
    QVERIFY(refusedNaming(doc, "inference.grad_mode"));
}

void TestFrameworks::firstStepHoldsNoStatesBeforeItsStep() {
    // A one-step profile records the run's first optimizer step: torch.optim, and cs336_basics' AdamW with
    // its state.get("m", zeros_like), make the states in that step, so its forward and backward hold none.
    // The 2.7B model at 4 x 512 tokens in fp32 (damek's run: five forward-backward warm-ups without a step,
    // then a full step): planned as a later step its backward would peak with 25.4 GiB of states beside its
    // activations; as the first, the step peaks: weights, gradients, both states, the five temporaries the
    // size of the largest parameter (an MLP matrix, 10,240 x 2,560), both cuBLAS workspaces and the logits
    // the loop holds. A later step's forward also holds the logits of the step before until the loss (the
    // loop's `logits` is rebound only when the new ones are returned); a first step has none.
    const double V = 10000, d = 2560, f = 10240, b = 4, s = 512;
    const double parameters = 3406809600.0;
    const double states = 8 * parameters;
    const double step = parameters * (4 + 4 + 8) + 5 * f * d * 4 + 2 * 8519680.0 + b * s * V * 4;
    json doc = parseJsonText(readTextFile(
        (measuredDir() + QStringLiteral("cs336-basics/cs336-2.7b-512-first-step.headroom.json")).toStdString()));
    QCOMPARE(doc["training"]["first_step"].get<bool>(), true);
    const Scenario first = scenarioFromJson(doc);
    const Estimate est = estimate(first);
    QCOMPARE(est.peakPhase, Phase::Optimizer);
    QCOMPARE(est.allocatedPeakBytes, step);
    QVERIFY(std::abs(step / kGiB / 51.38 - 1) < 0.002); // the published peak
    doc["training"]["first_step"] = false;
    const Scenario later = scenarioFromJson(doc);
    QCOMPARE(estimate(later).peakPhase, Phase::Backward);
    const auto a = phaseTimeline(first, 0, 4), z = phaseTimeline(later, 0, 4);
    QCOMPARE(a.size(), z.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        const bool beforeStep = a[i].phase != Phase::Optimizer;
        QCOMPARE(a[i].bytes[Category::OptimizerStates], beforeStep ? 0.0 : states);
        QCOMPARE(z[i].bytes[Category::OptimizerStates], states);
        // What the caching allocator hands out (the allocator's own overhead grows with it).
        const auto handedOut = [](const Breakdown& x) { return x.total() - x[Category::AllocatorOverhead]; };
        const bool beforeLoss = a[i].phase == Phase::Forward && (a[i].progress < 1 || a[i].layerRunning);
        QCOMPARE(handedOut(z[i].bytes) - handedOut(a[i].bytes),
                 (beforeStep ? states : 0.0) + (beforeLoss ? b * s * V * 4 : 0.0));
    }
    // The peak before the step (max_memory_allocated read before optimizer.step()) is the later step's
    // backward peak without its states; the whole step's is the step itself.
    QCOMPARE(est.ranks.at(0).allocatedBeforeStepBytes,
             estimate(later).ranks.at(0).allocatedBeforeStepBytes - states);
    QVERIFY(est.ranks.at(0).allocatedBeforeStepBytes < est.allocatedPeakBytes);
    // A step inside the backward makes each state as its gradient arrives: the reader refuses the pair.
    doc["training"]["first_step"] = true;
    doc["training"]["optimizer_in_backward"] = true;
    QVERIFY(refusedNaming(doc, "training.first_step"));
}

void TestFrameworks::cs336BasicsCheckpointedAndRefused() {
    // With every block under torch.utils.checkpoint the layers keep their inputs, and the last block's
    // backward first runs it again: its saved tensors, less the input the checkpoint kept, at the softmax's
    // backward. 256 tokens, fp32: the step's peak moves to the optimizer (below the loss it had).
    json doc = parseJsonText(
        readTextFile((measuredDir() + QStringLiteral("cs336-basics/cs336-medium-256-training.headroom.json"))
                         .toStdString()));
    const Estimate plain = estimate(scenarioFromJson(doc));
    doc["training"]["activation_checkpointing"] = "full";
    const Estimate checkpointed = estimate(scenarioFromJson(doc));
    QVERIFY(checkpointed.allocatedPeakBytes < plain.allocatedPeakBytes);
    QCOMPARE(checkpointed.peakPhase, Phase::Optimizer);
    // What the reader refuses, naming the field: parallelism the model has not, a model it is not, an
    // engine it does not run under.
    const auto refused = [&](const json& patch, const std::string& field) {
        json d = doc;
        d.merge_patch(patch);
        return refusedNaming(d, field);
    };
    QVERIFY(refused({{"cluster", {{"num_gpus", 2}, {"tensor_parallel", 2}}}}, "training.framework"));
    QVERIFY(refused({{"model", {{"num_key_value_heads", 4}}}}, "model"));
    QVERIFY(refused({{"training", {{"activation_checkpointing", "selective"}}}}, "training.activation_checkpointing"));
    json inference = parseJsonText(
        readTextFile((measuredDir() + QStringLiteral("cs336-basics/cs336-medium-1024-inference.headroom.json"))
                         .toStdString()));
    inference["inference"]["engine"] = "vllm";
    QVERIFY(refusedNaming(inference, "inference.framework"));
    // Its parameters are built in fp32 (torch.empty's default): left out, the precision and an inference's
    // weights are fp32, and leaving out the attention it writes by hand warns of nothing.
    json bare = doc;
    bare["training"].erase("precision");
    bare["training"].erase("attention");
    const Scenario defaults = scenarioFromJson(bare);
    QCOMPARE(defaults.training.bytes.weights, 4.0);
    QVERIFY(std::none_of(defaults.warnings.begin(), defaults.warnings.end(),
                         [](const std::string& w) { return w.find("attention") != std::string::npos; }));
    inference["inference"].erase("engine");
    inference["inference"].erase("weight_dtype");
    QCOMPARE(scenarioFromJson(inference).inference.weightBytes, 4.0);
    // The package's AdamW declared with another profile's layers: the code is CS336's, and the scenario
    // says which profile plans it (uncalibrated; a calibration on a trace of the run stands for the layers).
    auto optimizerWarning = [](const Scenario& sc) {
        return std::count_if(sc.warnings.begin(), sc.warnings.end(), [](const std::string& w) {
            return w.find("training.optimizer_implementation: cs336_basics' AdamW") == 0 &&
                   w.find("training.framework \"cs336_basics\" plans its code") != std::string::npos;
        });
    };
    json asPlain = doc;
    asPlain["training"]["framework"] = "pytorch";
    asPlain["training"]["optimizer_implementation"] = "cs336_basics";
    QCOMPARE(optimizerWarning(scenarioFromJson(asPlain)), 1);
    asPlain["calibration"] = {{"factors", {{"linear", 1.0}}}};
    QCOMPARE(optimizerWarning(scenarioFromJson(asPlain)), 0);
    json own = doc;
    own["training"]["optimizer_implementation"] = "cs336_basics";
    QCOMPARE(optimizerWarning(scenarioFromJson(own)), 0);
}

void TestFrameworks::megatronStateBetweenSteps_data() {
    QTest::addColumn<QString>("scenario");
    QTest::addColumn<double>("logged");
    QTest::addColumn<double>("workspaces");
    // What Megatron-LM's CI logs as mem-allocated-bytes after every iteration (torch.cuda.memory_stats()'s
    // allocated_bytes.all.current, megatron/training/training.py training_log): what stays allocated between
    // steps, the same value from the first iteration to the last in both files.
    // - NVIDIA/Megatron-LM d98e8a64d, tests/functional_tests/test_cases/gpt/
    //   gpt3_mcore_te_tp1_pp1_dist_optimizer_no_mmap_bin_files/golden_values_dev_dgx_h100.json: 581,489,664.
    // - core_v0.12.0, .../gpt3_mr_mcore_te_tp1_pp1_dist_optimizer_no_mmap_bin_files_dgx_a100_1N8G/
    //   golden_values_dev.json (DGX A100): 552,128,512.
    // Both set CUBLAS_WORKSPACE_CONFIG=:4096:8 (model_config.yaml): PyTorch's two cuBLAS workspaces (the
    // Python thread's and autograd's) are 4096 KiB x 8 each on either GPU; Transformer Engine's is 32 MiB on
    // the H100 and 4 MiB on the A100 (transformer_engine/pytorch/module/base.py).
    QTest::newRow("d98e8a64d, H100")
        << QStringLiteral("megatron-ci/gpt3_mcore_te_tp1_pp1_dist_optimizer_no_mmap_bin_files.headroom.json")
        << 581489664.0 << (2 * 33554432.0 + 33554432.0);
    QTest::newRow("core_v0.12.0, A100")
        << QStringLiteral(
               "megatron-ci-core-v0.12-dev/"
               "gpt3_mr_mcore_te_tp1_pp1_dist_optimizer_no_mmap_bin_files_dgx_a100_1N8G.headroom.json")
        << 552128512.0 << (2 * 33554432.0 + 4194304.0);
}

void TestFrameworks::megatronStateBetweenSteps() {
    // By hand: 12 layers of hidden 512 (QKV, projection, two MLP matrices with their biases, two LayerNorms:
    // 12h^2 + 13h = 3,152,384), the vocabulary padded to 50,304 x 512, 1,024 learned positions x 512 and
    // the final LayerNorm: 64,109,568 parameters, all on one GPU (TP 1, PP 1). Between steps: bf16 weights
    // (2 bytes) and Megatron's fp32 gradient buffer (4) whole, the distributed optimizer's fp32 main weights
    // and Adam's two states sharded over the 8 data-parallel ranks (12 / 8), and the workspaces.
    QFETCH(QString, scenario);
    QFETCH(double, logged);
    QFETCH(double, workspaces);
    const double p = 12 * (12.0 * 512 * 512 + 13 * 512) + 50304.0 * 512 + 1024.0 * 512 + 2 * 512;
    QCOMPARE(p, 64109568.0);
    const double byHand = 2 * p + 4 * p + 12 * p / 8 + workspaces;
    const Scenario sc = loadScenarioFile((publishedDir() + scenario).toStdString());
    const Breakdown& b = estimate(sc).perGpu; // its forward peak holds all of it
    const double planned = b[Category::Weights] + b[Category::Gradients] + b[Category::MasterWeights] +
                           b[Category::OptimizerStates] + b[Category::Workspaces];
    QCOMPARE(planned, byHand);
    // The rest of what was allocated between steps is a few scalars (the loss, the gradient norm).
    QVERIFY2(logged - byHand >= 0 && logged - byHand < 8192,
             qPrintable(QStringLiteral("%1 bytes apart").arg(logged - byHand, 0, 'f', 0)));
}

void TestFrameworks::stateBetweenStepsAcrossRuns() {
    // Every Megatron-LM CI run in the cases logged what stayed allocated between its steps
    // (between_steps_bytes): the model state, Megatron's buffers and the libraries' workspaces, nothing of a
    // step's. The plan's share of the same (weights, gradients, master weights, optimizer states and
    // workspaces of the logged stage) is held to issue 21's targets for runs nobody tuned for, as a second
    // counter of the same runs: median at most 5%, worst at most 12%.
    std::vector<double> errors;
    std::size_t runs = 0;
    for (const CaseResult& r : published().results) {
        if (r.c->betweenStepsBytes <= 0)
            continue;
        ++runs;
        const Scenario sc = loadScenarioFile(r.c->scenarioPath);
        const Estimate est = estimate(sc);
        const Breakdown& b = r.c->lastStage ? est.ranks.back().peak : est.perGpu;
        const double planned = b[Category::Weights] + b[Category::Gradients] + b[Category::MasterWeights] +
                               b[Category::OptimizerStates] + b[Category::Workspaces];
        const double e = planned / r.c->betweenStepsBytes - 1;
        QVERIFY2(std::abs(e) <= 0.12, qPrintable(QStringLiteral("%1: %2 MiB planned between steps, %3 logged")
                                                     .arg(QString::fromStdString(r.c->id))
                                                     .arg(planned / 1048576, 0, 'f', 1)
                                                     .arg(r.c->betweenStepsBytes / 1048576, 0, 'f', 1)));
        if (r.c->role == "validate")
            errors.push_back(std::abs(e));
    }
    QCOMPARE(runs, std::size_t{109}); // the 105 validate and 4 fit runs of Megatron-LM's CI
    std::sort(errors.begin(), errors.end());
    const double median = (errors[(errors.size() - 1) / 2] + errors[errors.size() / 2]) / 2;
    qInfo().noquote() << QStringLiteral("between steps, validate: %1 runs, median %2%, worst %3%")
                             .arg(errors.size())
                             .arg(100 * median, 0, 'f', 1)
                             .arg(100 * errors.back(), 0, 'f', 1);
    QVERIFY(median <= 0.05);
}

void TestFrameworks::megatronDdpReducesInPlace() {
    // Megatron's DistributedDataParallel all-reduces each bucket where it lies in the contiguous main-grad
    // buffer (param_and_grad_buffer.py: the bucket's grad_data is a view from _get, start_grad_sync reduces
    // it in place); PyTorch's DDP copies every gradient into flat buckets of its own unless
    // gradient_as_bucket_view. A TP 2 x PP 2 CI test with plain data parallelism over 2: what the plan says
    // PyTorch allocates is what its categories hold, and the same layout under plain PyTorch holds one copy
    // of the stage's gradients more.
    const Scenario sc = loadScenarioFile(
        (publishedDir() + "megatron-ci/gpt3_mcore_te_tp2_pp2_resume_torch_dist.headroom.json").toStdString());
    QCOMPARE(sc.cluster.dataParallelSize(), 2);
    const auto allocatedOf = [](const Breakdown& b) {
        double sum = 0;
        for (std::size_t i = 0; i < kCategoryCount; ++i)
            if (const Category c = categoryAt(i); c != Category::CommunicationBuffers &&
                                                  c != Category::CudaContext &&
                                                  c != Category::AllocatorOverhead)
                sum += b[c];
        return sum;
    };
    const Estimate megatron = estimate(sc);
    const StageEstimate& last = megatron.ranks.back();
    QCOMPARE(last.allocatedBytes, allocatedOf(last.peak));
    Scenario plain = sc.settingsCopy();
    plain.training.framework = Framework::PyTorch;
    const Estimate torchDdp = estimate(plain);
    const StageEstimate& same = torchDdp.ranks.back();
    QCOMPARE(same.allocatedBytes - allocatedOf(same.peak), same.peak[Category::Gradients]);
}

void TestFrameworks::megatronMicrobatchGroup() {
    // Megatron-LM's gpt3_mcore_te_tp1_pp4_vp1_tunable_overlap: 12 layers in 4 stages of 3 one-layer chunks,
    // 5 micro-batches a step, --microbatch-group-size-per-virtual-pipeline-stage 5. The last stage warms up
    // 2 x 0 + (3 - 1) x 5 = 10 chunks' forwards (schedules.py, get_pp_rank_microbatches) and runs one more
    // before its first backward: 11 one-layer chunks, 11/3 of its micro-batches' activations, where the
    // default group (the pipeline size, 4) gives (3 - 1) x 4 + 1 = 9, three.
    const Scenario sc = loadScenarioFile(
        (publishedDir() + "megatron-ci/gpt3_mcore_te_tp1_pp4_vp1_tunable_overlap.headroom.json")
            .toStdString());
    QCOMPARE(sc.cluster.microbatchGroupSize, 5);
    QCOMPARE(estimate(sc).ranks.back().inFlightMicroBatches, 11.0 / 3);
    Scenario byDefault = sc.settingsCopy();
    byDefault.cluster.microbatchGroupSize = 0;
    QCOMPARE(estimate(byDefault).ranks.back().inFlightMicroBatches, 3.0);
    // The first stage: 2 x 3 + 2 x 5 + 1 = 17 chunks, more than the step's 15: all of them, five.
    QCOMPARE(estimate(sc).ranks.front().inFlightMicroBatches, 5.0);
}

void TestFrameworks::megatronStatesAndPaddingByHand() {
    // Megatron-LM's gpt3_7b_tp4_pp1_memory_speed: 32 layers, h 4096, 32 heads in 8 groups of 128, FFN
    // 16384 with biases, LayerNorm, a learned 8192 x 4096 position table, untied vocabulary 131073.
    const Scenario sc =
        loadScenarioFile((publishedDir() + "megatron-gpt-7b-tp4-pp1-h100.headroom.json").toStdString());
    const Estimate est = estimate(sc);
    // --make-vocab-size-divisible-by 128 x TP 4: 131073 -> 131584 = 257 x 512.
    // Per layer per GPU: QKV 4096 x 6144 / 4 + 6144 / 4, proj 4096² / 4 + 4096 (its bias is not split),
    // fc1 4096 x 16384 / 4 + 16384 / 4, fc2 16384 x 4096 / 4 + 4096, two LayerNorms 4 x 4096: 44,070,400.
    // x 32, the split embedding and output layer (131584 x 4096 / 4 each), the replicated position table
    // and the final LayerNorm: 1,713,299,456 parameters per GPU.
    const double perGpu = 32.0 * 44070400 + 2.0 * 131584 * 4096 / 4 + 8192.0 * 4096 + 2 * 4096;
    QCOMPARE(perGpu, 1713299456.0);
    QCOMPARE(est.parameters, std::uint64_t(32ull * 176207872 + 2ull * 131584 * 4096 + 8192ull * 4096 + 8192));
    // bf16 weights, fp32 main gradients, and the distributed optimizer's fp32 copy and Adam states over
    // DP 2: 2 + 4 + 12 / 2 bytes per parameter. The run's own mem-allocated-bytes after each step,
    // 20,663,519,232, is 0.5% above this (what else it holds is not modelled).
    const Breakdown& b = est.ranks.back().peak;
    QCOMPARE(b[Category::Weights] + b[Category::Gradients] + b[Category::MasterWeights] +
                 b[Category::OptimizerStates],
             12 * perGpu);
    // With one micro-batch per step the fp32 main-grad buffer is still there at the forward's peak: Megatron
    // allocates it when the model is wrapped and only zeroes it (param_and_grad_buffer.py). The same sum.
    json oneStep =
        loadScenarioFile((publishedDir() + "megatron-gpt-7b-tp4-pp1-h100.headroom.json").toStdString())
            .document;
    oneStep["training"]["gradient_accumulation_steps"] = 1;
    const Estimate one = estimate(scenarioFromJson(oneStep));
    const Breakdown& b1 = one.ranks.back().peak;
    QCOMPARE(b1[Category::Gradients], 4 * perGpu);
    QCOMPARE(b1[Category::Weights] + b1[Category::Gradients] + b1[Category::MasterWeights] +
                 b1[Category::OptimizerStates],
             12 * perGpu);
    // Step 1's peak, before Adam's states exist, is lower by their 8 / 2 bytes per parameter in the golden
    // values (50,289,487,872 against 57,143,791,616), to 0.02%: the distributed optimizer pads its
    // shards. The per-GPU count is the run's.
    QVERIFY(std::abs((57143791616.0 - 50289487872.0) / (4 * perGpu) - 1) < 2e-4);
}

void TestFrameworks::selectiveOpKeepsEveryOtherMatmul() {
    // Llama 3 8B under torchtitan's per-op policy, per token and layer in bf16: the layer input (4096), wq's
    // output (4096, mm 1), wv's (1024, mm 3), attention's output (4096), w1's (14336, mm 5) and w2's
    // (4096, mm 7): 2 x 31,744 bytes, plus the fp32 log-sum-exp of 32 heads (128 bytes).
    const Scenario sc = llama3("meta-llama/Llama-3.1-8B", 8, 1, 8192, "selective_op");
    QCOMPARE(layerActivations(sc, 0, 1).stored, 8192.0 * (2 * 31744 + 128));
    // Megatron's selective checkpointing keeps every tensor but the attention core's (which flash
    // attention does not keep anyway): many times more.
    const Scenario megatronStyle = llama3("meta-llama/Llama-3.1-8B", 8, 1, 8192, "selective");
    QVERIFY(layerActivations(megatronStyle, 0, 1).stored > 2.5 * layerActivations(sc, 0, 1).stored);
    // Full checkpointing keeps the layer input only.
    QCOMPARE(layerActivations(llama3("meta-llama/Llama-3.1-8B", 8, 1, 8192, "full"), 0, 1).stored,
             8192.0 * 2 * 4096);
}

// transformers' causal-LM loss by release, per token and vocabulary entry of Llama 3 8B (V = 128256), batch
// 1 x 4096, less the head's saved input (2 + 2 bytes per token and hidden unit), at the forward's loss and
// the backward's start. Read in the releases' sources:
// - before 4.46 (models/llama/modeling_llama.py at v4.44.2): the model returns `logits.float()`, the loss
//   shifts it with a contiguous copy and saves its log-softmax: 4 + 4 + 4; the backward starts beside the
//   output's fp32 logits: 4 + 4 + 4 + 4.
// - 4.46 to 4.48 (loss/loss_utils.py ForCausalLMLoss at v4.47.0): the output's bf16 logits, the loss's
//   `logits.float()` and its shift's contiguous copy, and the log-softmax: 2 + 4 + 4 + 4; the backward as
//   later: 4 + 4 + 4.
// - 4.49 on (pull request #35646 shifts the labels): 2 + 4 + 4, then 4 + 4 + 4.
void TestFrameworks::transformersLossByRelease() {
    const double tokens = 4096, vocab = 128256, headInput = 4.0 * 4096 * 4096;
    auto lossBytes = [&](const char* version, Phase phase) {
        json doc = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
        doc["training"]["framework"] = "huggingface";
        doc["training"]["sequence_length"] = 4096;
        if (version)
            doc["training"]["framework_version"] = version;
        const Scenario sc = scenarioFromJson(doc);
        for (const TimelinePoint& t : phaseTimeline(sc, 0, 2))
            if (t.phase == phase && t.progress == (phase == Phase::Forward ? 1 : 0) && !t.layerRunning &&
                !t.headRunning)
                return (t.bytes[Category::Logits] - headInput) / (tokens * vocab);
        return -1.0;
    };
    QCOMPARE(lossBytes("4.44", Phase::Forward), 12.0);
    QCOMPARE(lossBytes("4.44", Phase::Backward), 16.0);
    for (const char* release : {"4.46", "4.47", "4.48.2"}) {
        QCOMPARE(lossBytes(release, Phase::Forward), 14.0);
        QCOMPARE(lossBytes(release, Phase::Backward), 12.0);
    }
    for (const char* release : {"4.49", "4.57"}) {
        QCOMPARE(lossBytes(release, Phase::Forward), 10.0);
        QCOMPARE(lossBytes(release, Phase::Backward), 12.0);
    }
    // No release named: the current one.
    QCOMPARE(lossBytes(nullptr, Phase::Forward), 10.0);
    // Reserved beyond the tensors at the forward's loss, less the allocator's 3%: from 4.49 the bf16 logits'
    // block, which the backward's larger fp32 gradients cannot reuse (2 bytes a logit, cached from then
    // on); from 4.46 to 4.48 none, the forward's two fp32 copies leaving the backward's gradients their
    // blocks.
    auto cachedAtLoss = [&](const char* version) {
        json doc = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
        doc["training"]["framework"] = "huggingface";
        doc["training"]["sequence_length"] = 4096;
        doc["training"]["framework_version"] = version;
        const Scenario sc = scenarioFromJson(doc);
        for (const TimelinePoint& t : phaseTimeline(sc, 0, 2))
            if (t.phase == Phase::Forward && t.progress == 1 && !t.layerRunning) {
                double managed = 0;
                for (std::size_t i = 0; i < kCategoryCount; ++i)
                    if (const Category c = categoryAt(i); c != Category::CommunicationBuffers &&
                                                          c != Category::CudaContext &&
                                                          c != Category::AllocatorOverhead)
                        managed += t.bytes[c];
                return (t.bytes[Category::AllocatorOverhead] - 0.03 * managed) / (tokens * vocab);
            }
        return -1.0;
    };
    QCOMPARE(cachedAtLoss("4.49") + 1, 2.0 + 1);
    QCOMPARE(cachedAtLoss("4.47") + 1, 0.0 + 1);
}

void TestFrameworks::lossBytesPerFramework() {
    // The logits category at the start of the backward, less the head's saved input (2 + 2 bytes per
    // token and hidden unit), per token and vocabulary entry of Llama 3 8B (V = 128256), batch 1 x 4096.
    auto lossAtBackward = [](const char* framework, const char* loss) {
        json doc = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
        doc["training"]["framework"] = framework;
        doc["training"]["sequence_length"] = 4096;
        if (loss)
            doc["training"]["loss"] = loss;
        return (atLoss(scenarioFromJson(doc))[Category::Logits] - 4.0 * 4096 * 4096) / (4096.0 * 128256);
    };
    // torchtitan and transformers: the saved fp32 log-softmax, nll's gradient and log-softmax's.
    QCOMPARE(lossAtBackward("torchtitan", nullptr), 12.0);
    QCOMPARE(lossAtBackward("huggingface", nullptr), 12.0);
    QCOMPARE(lossAtBackward("deepspeed", nullptr), 12.0);
    // Megatron: the softmax it saved turns into the gradient in place, then its bf16 cast. The forward's
    // bf16 logits and fp32 copy are as much.
    QCOMPARE(lossAtBackward("megatron", nullptr), 6.0);
    // Megatron's --cross-entropy-loss-fusion: the same steps compiled (megatron/core/jit.py), each holding a
    // buffer of the fp32 logits' size while it updates its input: the saved softmax, that buffer and the
    // bf16 gradient.
    QCOMPARE(lossAtBackward("megatron", "fused"), 10.0);
    // On the CI test that has the flag: GPT-2's 50,257 entries padded by Megatron to a multiple of 128 x TP 2
    // (50,432), 25,216 a rank; micro-batch 4 x 1,024 tokens; the fused loss holds 4 bytes more a logit.
    Scenario fusion = loadScenarioFile(
        (publishedDir() + "megatron-ci/gpt3_mcore_te_tp2_pp2_cross_entropy_loss_fusion.headroom.json")
            .toStdString());
    QCOMPARE(fusion.training.loss, LossKind::Fused);
    auto lastStageLogits = [](const Scenario& sc) { // the loss runs on the last of the two stages
        for (const TimelinePoint& t : phaseTimeline(sc, sc.cluster.pipelineParallel - 1, 2))
            if (t.phase == Phase::Backward && t.progress == 0 && !t.layerRunning)
                return t.bytes[Category::Logits];
        return 0.0;
    };
    const double fused = lastStageLogits(fusion);
    // Under PyTorch before 2.7 (Megatron-LM 0.12's CI values, PyTorch 2.5), a second such buffer: 4 bytes
    // more a logit again, 0.385 GiB on this test, and as much in the forward.
    Scenario older = fusion;
    older.training.torchVersion = "2.5";
    older.training.torch = {2, 5};
    QCOMPARE(lastStageLogits(older) - fused, 4.0 * 4 * 1024 * 25216);
    older.training.torch = {2, 7};
    QCOMPARE(lastStageLogits(older), fused);
    fusion.training.loss = LossKind::Full;
    QCOMPARE(fused - lastStageLogits(fusion), 4.0 * 4 * 1024 * 25216);
    // torchtune: fp32 output, so the same three fp32 tensors; chunked: all eight chunks' log-softmax
    // outputs (4) and one chunk's two fp32 gradients and bf16 one ((4 + 4 + 2) / 8).
    QCOMPARE(lossAtBackward("torchtune", nullptr), 12.0);
    QCOMPARE(lossAtBackward("torchtune", "chunked"), 4 + 10.0 / 8);
    // A compiled or fused loss: the bf16 logits it saved and their bf16 gradient.
    QCOMPARE(lossAtBackward("torchtitan", "fused"), 4.0);
    // The output layer fused with the loss (Liger, Cut Cross-Entropy) a chunk at a time: no logits at all,
    // only the head's input and its gradient (the 2 + 2 bytes per hidden unit taken off above).
    QCOMPARE(lossAtBackward("huggingface", "fused_linear"), 0.0);
    QCOMPARE(lossAtBackward("torchtune", "fused_linear"), 0.0);
    // Plain PyTorch as Headroom has costed it: fp32 logits and their gradient.
    QCOMPARE(lossAtBackward("pytorch", nullptr), 8.0);
}

void TestFrameworks::torchtitanRootStaysGathered() {
    // Before torchtitan 0.2, FSDP2's root (embeddings 128256 x 4096, output 128256 x 4096, final norm 4096)
    // is one unit, not resharded after the forward, nor the last layer (218,112,000 parameters): both are
    // gathered in bf16 at the loss.
    const double embedding = 128256.0 * 4096, head = 128256.0 * 4096 + 4096;
    const double root = embedding + head, layer = 218112000;
    const Scenario sc = llama3("meta-llama/Llama-3.1-8B", 8, 2, 8192, "selective_op", "0.1");
    const Estimate est = estimate(sc);
    QCOMPARE(est.peakPhase, Phase::Backward);
    QCOMPARE(est.perGpu[Category::GatherBuffers], 2 * (root + layer));
    // Reserved beyond allocated: 1.5% of the allocated bytes (expandable segments, which torchtitan's
    // launcher sets: the reader's default for the profile), the root's all-gather block cached on the
    // all-gather stream (2 x root), the bf16 logits freed before the backward (2 x 16384 x 128256), and,
    // the blocks being eager (compile's default, off) under per-op SAC, the fitted excess of eager blocks:
    // 2.6 bytes per hidden unit, token and block, 2.6 x 4096 x 16384 x 32 = 5.2 GiB, which is the mean of
    // what torchtitan's Tables 1 and 3 measured eager beyond compiled (5.4 and 5.0 GiB at these settings).
    QVERIFY(sc.cluster.expandableSegments && !sc.training.compile);
    const double allocated = est.allocatedPeakBytes;
    const double eagerExcess = 2.6 * 4096 * 16384 * 32;
    QCOMPARE(eagerExcess, 5.2 * 1024 * 1024 * 1024);
    QCOMPARE(est.eagerBlocksExcessBytes(), eagerExcess);
    QCOMPARE(est.perGpu[Category::AllocatorOverhead],
             0.015 * allocated + 2 * root + 2.0 * 16384 * 128256 + eagerExcess);
    // Compiled, or another checkpointing, there is none.
    for (auto [compile, checkpointing] : {std::pair{true, "selective_op"}, std::pair{false, "full"}}) {
        json doc = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
        doc["training"]["framework"] = "torchtitan";
        doc["training"]["framework_version"] = "0.1";
        doc["training"]["micro_batch_size"] = 2;
        doc["training"]["sequence_length"] = 8192;
        doc["training"]["activation_checkpointing"] = checkpointing;
        doc["training"]["compile"] = compile;
        doc["cluster"]["num_gpus"] = 8;
        doc["cluster"]["data_parallel"] = "zero3";
        QCOMPARE(estimate(scenarioFromJson(doc)).eagerBlocksExcessBytes(), 0.0);
    }
    // Nor where a calibration measured the allocator's overhead: the runs' reserved already holds it.
    json calibrated = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
    calibrated["training"].update({{"framework", "torchtitan"},
                                   {"framework_version", "0.1"},
                                   {"micro_batch_size", 2},
                                   {"sequence_length", 8192},
                                   {"activation_checkpointing", "selective_op"}});
    calibrated["cluster"].update({{"num_gpus", 8}, {"data_parallel", "zero3"}});
    QCOMPARE(estimate(scenarioFromJson(calibrated)).eagerBlocksExcessBytes(), eagerExcess);
    calibrated["calibration"] = {
        {"factors", {{"allocator_overhead_fraction", 0.05}, {"measured_on", "training"}}}};
    QCOMPARE(estimate(scenarioFromJson(calibrated)).eagerBlocksExcessBytes(), 0.0);
    // The root's gradients: unsharded in bf16 until the root's post-backward, which only the backward's
    // final callback runs (no input of the root needs a gradient). The head's is held from its backward
    // through the layers; at the end FSDP2's foreach_reduce copies all of the root's into one fp32
    // reduce-scatter input before freeing them, and writes the fp32 shard: root x (2 + 4 + 4 / 64) bytes
    // on 64 GPUs, beside every layer's sharded gradient (2 bytes a parameter here, over 64). With full
    // checkpointing and 2,048 tokens that end of the backward is the peak.
    const double sharded = 2 * 8030261248.0 / 64;
    auto gradients = [](const Scenario& s, double progress, bool layerRunning) {
        for (const TimelinePoint& t : phaseTimeline(s, 0, 4))
            if (t.phase == Phase::Backward && std::abs(t.progress - progress) < 1e-9 &&
                t.layerRunning == layerRunning && !t.headRunning)
                return t.bytes[Category::Gradients];
        return -1.0;
    };
    const Scenario old = llama3("meta-llama/Llama-3.1-8B", 64, 1, 2048, "full", "0.1");
    QCOMPARE(gradients(old, 1, false), sharded + root * (2 + 4 + 4.0 / 64));
    QCOMPARE(gradients(old, 0, true), 2 * embedding); // the head's, held: nothing sharded yet
    const Estimate oldEnd = estimate(old);
    QCOMPARE(oldEnd.peakPhase, Phase::Backward);
    QCOMPARE(oldEnd.perGpu[Category::Gradients], gradients(old, 1, false));
    // From 0.2 (the default) the embeddings, each layer and [norm, output] are units of their own, layers
    // resharded after their forward: at the loss only the head is gathered (the last layer comes back at
    // the head's backward, whose pre-backward prefetches it), not the embeddings. The head's unit reduces
    // after its own backward; FSDP2
    // keeps its fp32 reduce-scatter input and shard until the next unit reduces, through the last layer's
    // backward: head x (4 + 4 / 8). The embeddings' unit is gathered again at the end and reduced: embedding
    // x (2 + 2 + 4 + 4 / 8).
    const Scenario now = llama3("meta-llama/Llama-3.1-8B", 8, 2, 8192, "selective_op");
    QCOMPARE(estimate(now).perGpu[Category::GatherBuffers], 2 * head); // at the loss, the peak
    bool sawHead = false;
    for (const TimelinePoint& t : phaseTimeline(now, 0, 4))
        if (t.headRunning) { // its unit's pre-backward prefetches the last layer
            sawHead = true;
            QCOMPARE(t.bytes[Category::GatherBuffers], 2 * (head + layer));
        }
    QVERIFY(sawHead);
    QCOMPARE(gradients(now, 0, true), head * (4 + 4.0 / 8));
    QCOMPARE(gradients(now, 1, false), 2 * 8030261248.0 / 8 + embedding * (2 + 2 + 4 + 4.0 / 8));
    QVERIFY(estimate(now).peakBytes < est.peakBytes - 2 * embedding); // the embeddings gathered no more
}

void TestFrameworks::contextParallelShardsStates() {
    // ZeRO-3 over 8 GPUs as FSDP 4 x CP 2 shards the 16 bytes per parameter over all 8.
    json doc = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
    doc["cluster"]["num_gpus"] = 8;
    doc["cluster"]["data_parallel"] = "zero3";
    doc["cluster"]["context_parallel"] = 2;
    doc["training"]["sequence_length"] = 16384;
    const Estimate est = estimate(scenarioFromJson(doc));
    QCOMPARE(est.perGpu[Category::MasterWeights] + est.perGpu[Category::OptimizerStates],
             12 * 8030261248.0 / 8);
}

void TestFrameworks::torchtuneAdamStatesFollowTheWeights() {
    // torch.optim.AdamW makes exp_avg and exp_avg_sq zeros_like(param): bf16 weights, bf16 states.
    json doc = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
    doc["training"]["precision"] = "bf16";
    doc["training"]["framework"] = "torchtune";
    QCOMPARE(estimate(scenarioFromJson(doc)).perGpu[Category::OptimizerStates], 4 * 8030261248.0);
    doc["training"]["framework"] = "pytorch"; // the contract's bf16 preset: fp32 states
    QCOMPARE(estimate(scenarioFromJson(doc)).perGpu[Category::OptimizerStates], 8 * 8030261248.0);
}

void TestFrameworks::optimizerInBackwardByHand() {
    // torchtune's optimizer_in_bwd on Llama 3.2 3B in bf16 (hidden 3072, FFN 8192, vocabulary 128256, tied
    // embeddings), one GPU: each parameter is stepped by its post-accumulate-grad hook and its gradient
    // dropped. Worked out here from the shapes, not from the estimator.
    json doc = trainingDoc({{"preset", "meta-llama/Llama-3.2-3B"}});
    doc["training"]["precision"] = "bf16";
    doc["training"]["framework"] = "torchtune";
    doc["training"]["optimizer_implementation"] = "for_loop";
    const Scenario plain = scenarioFromJson(doc);
    doc["training"]["optimizer_in_backward"] = true;
    const Scenario fused = scenarioFromJson(doc);
    QVERIFY(fused.training.optimizerInBackward && !plain.training.optimizerInBackward);
    const double embedding = 128256.0 * 3072, mlp = 3072.0 * 8192; // the tied embedding, the largest other
    auto at = [](const Scenario& sc, Phase phase) {
        for (const TimelinePoint& t : phaseTimeline(sc, 0, 4))
            if (t.phase == phase && (phase == Phase::Optimizer || (t.progress > 0 && t.progress < 1)))
                return t.bytes;
        return Breakdown{};
    };
    // In the backward: the embedding's bf16 gradient, held from the head's backward until both its uses
    // are summed at the end, and one more tensor's at a time: 2 x (394,002,432 + 25,165,824) bytes.
    QCOMPARE(at(fused, Phase::Backward)[Category::Gradients], 2 * (embedding + mlp));
    QCOMPARE(2 * (embedding + mlp), 838336512.0);
    // One tensor at a time, AdamW's step makes two temporaries of the parameter's (bf16) state: 2 x 2 x
    // 25,165,824 bytes for an MLP matrix while layers run, 2 x 2 x 394,002,432 for the embedding, stepped
    // last; nothing is left for a step after the backward, and nothing is stepped before the loss's.
    QCOMPARE(at(fused, Phase::Backward)[Category::Temporaries], 2 * 2 * mlp);
    const auto timeline = phaseTimeline(fused, 0, 4);
    for (const TimelinePoint& t : timeline)
        if (t.phase == Phase::Backward && t.progress == 1)
            QCOMPARE(t.bytes[Category::Temporaries], 2 * 2 * embedding);
        else if (t.phase == Phase::Backward && t.progress == 0 && !t.layerRunning && !t.headRunning)
            QCOMPARE(t.bytes[Category::Gradients] + t.bytes[Category::Temporaries], 0.0);
    QCOMPARE(at(fused, Phase::Optimizer)[Category::Gradients], 0.0);
    QCOMPARE(at(fused, Phase::Optimizer)[Category::Temporaries], 0.0);
    // The head's backward, after the loss's and before any layer's. With torchtune's chunked loss the head
    // runs on 8 chunks: every chunk's loss backward runs first (autograd takes the highest sequence number,
    // and the loss's nodes were made after the model's), then the chunks' matmuls, each writing a whole
    // bf16 gradient of the tied weight that is added to the sum so far. From the second chunk on: the sum
    // and the new one, 2 x 2 x 128,256 x 3,072 bytes, beside 7 of the 8 chunks' bf16 logit gradients and the
    // final norm's input and the head's (bf16, b x s x 3,072 each).
    json chunkedDoc = doc;
    chunkedDoc["training"]["loss"] = "chunked";
    const Scenario chunked = scenarioFromJson(chunkedDoc);
    const double tokens = 1.0 * chunked.training.microBatchSize * chunked.training.sequenceLength;
    bool sawHead = false;
    for (const TimelinePoint& t : phaseTimeline(chunked, 0, 4)) {
        if (!t.headRunning)
            continue;
        sawHead = true;
        QCOMPARE(t.phase, Phase::Backward);
        QCOMPARE(t.bytes[Category::Gradients], 2 * 2 * embedding);
        QCOMPARE(t.bytes[Category::Logits], tokens * (2 * 3072 + 2 * 3072) + 7.0 / 8 * 2 * tokens * 128256);
        QCOMPARE(t.bytes[Category::Temporaries], 0.0);
    }
    QVERIFY(sawHead);
    // A frozen head (adapters) has no such moment.
    chunkedDoc["training"]["optimizer_in_backward"] = false;
    chunkedDoc["training"]["fine_tuning"] = {{"method", "lora"}, {"rank", 8}};
    for (const TimelinePoint& t : phaseTimeline(scenarioFromJson(chunkedDoc), 0, 4))
        QVERIFY(!t.headRunning);
    // Without it, the step holds every gradient: 2 bytes x 3,212,749,824 parameters.
    QCOMPARE(at(plain, Phase::Optimizer)[Category::Gradients], 2 * 3212749824.0);
    // With full checkpointing the plain peak is that step; in the backward it is gone. Without, both peak
    // where the first layer's backward starts, and the held gradient is the price.
    json ac = doc;
    ac["training"]["activation_checkpointing"] = "full";
    const double inBackward = estimate(scenarioFromJson(ac)).perGpu.total();
    ac["training"]["optimizer_in_backward"] = false;
    const Estimate stepped = estimate(scenarioFromJson(ac));
    QCOMPARE(stepped.ranks.at(0).peakPhase, Phase::Optimizer);
    QVERIFY(inBackward < stepped.perGpu.total() - 4e9); // at least the non-embedding gradients go
    // torchtune refuses it with accumulation; a pipeline cannot step before its micro-batches are summed.
    doc["training"]["gradient_accumulation_steps"] = 2;
    try {
        scenarioFromJson(doc);
        QFAIL("optimizer_in_backward with accumulation was accepted");
    } catch (const Error& e) {
        QCOMPARE(QString::fromStdString(e.where()), QStringLiteral("training.optimizer_in_backward"));
    }
    doc["training"]["gradient_accumulation_steps"] = 1;
    doc["cluster"]["num_gpus"] = 2;
    doc["cluster"]["pipeline_parallel"] = 2;
    try {
        scenarioFromJson(doc);
        QFAIL("optimizer_in_backward with a pipeline was accepted");
    } catch (const Error& e) {
        QCOMPARE(QString::fromStdString(e.where()), QStringLiteral("training.optimizer_in_backward"));
    }
}

void TestFrameworks::frameworkValuesAreChecked() {
    json doc = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
    doc["training"]["framework"] = "jax";
    try {
        scenarioFromJson(doc);
        QFAIL("an unknown framework must be an error");
    } catch (const Error& e) {
        QCOMPARE(QString::fromStdString(e.where()), QStringLiteral("training.framework"));
        QVERIFY(QString(e.what()).contains("torchtitan"));
    }
    doc["training"]["framework"] = "torchtitan";
    doc["training"]["loss"] = "sampled";
    QVERIFY_THROWS_EXCEPTION(Error, scenarioFromJson(doc));
    doc["training"]["loss"] = "chunked";
    doc["training"]["float8"] = "mxfp8";
    QVERIFY_THROWS_EXCEPTION(Error, scenarioFromJson(doc));
    // Under torch.compile torchtitan compiles its loss too (since April 2025): fused unless told.
    doc["training"].erase("float8");
    doc["training"].erase("loss");
    doc["training"]["compile"] = true;
    QCOMPARE(scenarioFromJson(doc).training.loss, LossKind::Fused);
}

void TestFrameworks::eagerLayersByHand() {
    // Llama 3.1 8B, no checkpointing, per token and layer, bf16. What every profile keeps (Korthikanti's
    // accounting): the two norm inputs and outputs (4 x 2 x 4096), Q, K, V and the output projection's
    // input (2 x (4096 + 1024 + 1024 + 4096)), the log-sum-exp (32 x 4), the MLP's four tensors
    // (4 x 2 x 14336): 168,064 bytes.
    auto perToken = [](const char* framework, bool compiled) {
        json doc = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
        doc["training"]["framework"] = framework;
        doc["training"]["sequence_length"] = 1024;
        doc["training"]["compile"] = compiled;
        return layerActivations(scenarioFromJson(doc), 0, 1).stored / 1024;
    };
    const double base = 4 * 2 * 4096 + 2 * (4096 + 1024 + 1024 + 4096) + 32 * 4 + 4 * 2 * 14336;
    // Megatron's hidden dropout (0.1 by default) adds its two one-byte masks.
    QCOMPARE(perToken("megatron", false), base + 2 * 4096);
    QCOMPARE(perToken("pytorch", false), base);
    // torchtitan's eager modules add the norms' fp32 copies (2 x 4 x 4096), the contiguous attention
    // output (2 x 4096) and K and V expanded to 32 heads (2 x 2 x (4096 - 1024)). Their rotations of fp32
    // copies of q and k keep nothing: the multiply by the cache (no gradient) saves only the cache.
    const double norms = 2 * 4 * 4096, copy = 2 * 4096, expand = 2 * 2 * (4096 - 1024);
    QCOMPARE(perToken("torchtitan", false), base + norms + copy + expand);
    QCOMPARE(perToken("torchtune", false), base + norms + copy + expand);
    // transformers rotates in bf16: the same.
    QCOMPARE(perToken("huggingface", false), base + norms + copy + expand);
    // Compiled, only the expansion (SDPA's saved inputs) stays.
    QCOMPARE(perToken("torchtitan", true), base + expand);
}

void TestFrameworks::autocastCastsPerMatmulByHand() {
    // Llama 3.1 8B in fp32 under bf16 autocast (PyTorch's AMP recipe), per token and layer. The residual
    // stream and the two norm inputs stay fp32 (2 x 4 x 4096); each matmul saves its own bf16 cast of its
    // input, as autocast caches casts of weights, not of activations: q, k and v three of the first norm's
    // output, gate and up two of the second's (5 x 2 x 4096); Q, K, V and the output projection's input
    // (2 x (4096 + 1024 + 1024 + 4096)), the log-sum-exp (32 x 4), the MLP's four tensors (4 x 2 x 14336).
    auto perToken = [](const char* framework, const char* autocast,
                       const char* preset = "meta-llama/Llama-3.1-8B") {
        json doc = trainingDoc({{"preset", preset}});
        doc["training"]["framework"] = framework;
        doc["training"]["precision"] = "fp32";
        doc["training"]["autocast"] = autocast;
        doc["training"]["sequence_length"] = 1024;
        return layerActivations(scenarioFromJson(doc), 0, 1).stored / 1024;
    };
    const double amp = 2 * 4 * 4096 + 5 * 2 * 4096 + 2 * (4096 + 1024 + 1024 + 4096) + 32 * 4 + 4 * 2 * 14336;
    QCOMPARE(perToken("pytorch", "bf16"), amp);
    // Without autocast one fp32 tensor feeds q, k and v, another gate and up: 4 x 4 x 4096 for the norms,
    // everything else in fp32 too.
    QCOMPARE(perToken("pytorch", "none"),
             4 * 4 * 4096 + 4 * (4096 + 1024 + 1024 + 4096) + 32 * 4 + 4 * 4 * 14336);
    // transformers' eager modules in fp32: LlamaRMSNorm's x.float() is x itself, and the normalised tensor
    // the weight's gradient needs is one more fp32 tensor per norm (2 x 4 x 4096); the contiguous attention
    // output (2 x 4096) and K and V expanded to 32 heads (2 x 2 x (4096 - 1024)) are bf16 as SDPA sees them.
    QCOMPARE(perToken("huggingface", "bf16"), amp + 2 * 4 * 4096 + 2 * 4096 + 2 * 2 * (4096 - 1024));
    // GPT-2 computes q, k and v with one matmul (c_attn) and has no gate: one cast each. Per token, 768
    // wide, 12 heads, MLP 3,072: two fp32 norm inputs, two bf16 casts, Q, K, V and the projection's input,
    // the log-sum-exp, up and GELU's output, and the two one-byte dropout masks its config trains with.
    QCOMPARE(perToken("pytorch", "bf16", "openai-community/gpt2"),
             2 * 4 * 768 + 2 * 2 * 768 + 2 * 4 * 768 + 12 * 4 + 2 * 2 * 3072 + 2 * 768);
}

void TestFrameworks::eagerSoftmaxByHand() {
    // Llama 3.1 8B, eager attention, 1,024 tokens: per token and layer, 32 heads x 1,024 keys of scores.
    auto perToken = [](const char* framework, const char* precision, const char* autocast) {
        json doc = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
        doc["training"]["framework"] = framework;
        doc["training"]["precision"] = precision;
        doc["training"]["autocast"] = autocast;
        doc["training"]["attention"] = "eager";
        doc["training"]["sequence_length"] = 1024;
        return layerActivations(scenarioFromJson(doc), 0, 1).scores / 1024;
    };
    const double sq = 32 * 1024;
    // F.softmax in the model's dtype saves its output, the tensor the matmul with V saves too.
    QCOMPARE(perToken("pytorch", "bf16", "none"), 2 * sq);
    QCOMPARE(perToken("pytorch", "fp32", "none"), 4 * sq);
    // Under autocast softmax runs in fp32 (autocast's fp32 list) and the matmul saves its bf16 cast,
    // whatever the weights' dtype.
    QCOMPARE(perToken("pytorch", "fp32", "bf16"), (4 + 2) * sq);
    QCOMPARE(perToken("pytorch", "bf16", "bf16"), (4 + 2) * sq);
    // transformers' eager_attention_forward: softmax(..., dtype=torch.float32).to(query.dtype), the fp32
    // output and its bf16 cast; in fp32 the cast is the output itself.
    QCOMPARE(perToken("huggingface", "bf16", "none"), (4 + 2) * sq);
    QCOMPARE(perToken("huggingface", "fp32", "none"), 4 * sq);
    QCOMPARE(perToken("deepspeed", "bf16", "none"), (4 + 2) * sq);
}

void TestFrameworks::activationOffloadingKeepsTwoLayers() {
    json doc = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
    doc["training"]["framework"] = "torchtune";
    doc["training"]["sequence_length"] = 2048;
    const Scenario kept = scenarioFromJson(doc);
    doc["training"]["activation_offloading"] = true;
    const Scenario offloaded = scenarioFromJson(doc);
    const double layer = layerActivations(kept, 0, 1).stored;
    // On the GPU: the layer being computed and the next one; in host memory: the other 30 of 32.
    QCOMPARE(atLoss(offloaded)[Category::Activations], 2 * layer);
    const Estimate est = estimate(offloaded);
    QCOMPARE(est.offload.cpuBytesPerGpu, 30 * layer);
    QCOMPARE(est.offload.deviceToHostBytes, 30 * layer);
    QVERIFY(estimate(kept).offload.cpuBytesPerGpu == 0);
}

void TestFrameworks::deepspeedBuckets() {
    // GPT-2 (124M) on 8 GPUs: DeepSpeed allocates reduce_bucket_size (5e8) bf16 elements whatever the
    // model's size, once under ZeRO-2 (overlap_comm off by default) and ZeRO-3, twice with overlap_comm.
    auto communication = [](const char* stage, const json& deepspeed) {
        json doc = trainingDoc({{"preset", "openai-community/gpt2"}});
        doc["training"]["framework"] = "deepspeed";
        if (!deepspeed.is_null())
            doc["training"]["deepspeed"] = deepspeed;
        doc["cluster"]["num_gpus"] = 8;
        doc["cluster"]["data_parallel"] = stage;
        const Scenario sc = scenarioFromJson(doc);
        return estimate(sc).perGpu[Category::CommunicationBuffers] - 384.0 * 1048576; // one NCCL communicator
    };
    QCOMPARE(communication("zero2", nullptr), 5e8 * 2);
    QCOMPARE(communication("zero3", nullptr), 5e8 * 2);
    QCOMPARE(communication("zero2", json{{"overlap_comm", true}}), 2 * 5e8 * 2);
    QCOMPARE(communication("zero2", json{{"reduce_bucket_size", 2e8}}), 2e8 * 2);
    // ZeRO-3 fetches a module and prefetches up to 5e7 more elements: GPT-2's largest unit is its
    // embedding (50257 x 768 + 1024 x 768 = 39,383,808), so the prefetch is another as large.
    json doc = trainingDoc({{"preset", "openai-community/gpt2"}});
    doc["training"]["framework"] = "deepspeed";
    doc["cluster"]["num_gpus"] = 8;
    doc["cluster"]["data_parallel"] = "zero3";
    const auto points = phaseTimeline(scenarioFromJson(doc), 0, 2);
    QCOMPARE(points.front().bytes[Category::GatherBuffers], 2 * 39383808.0 * 2);
    doc["training"]["deepspeed"] = {{"stage3_max_live_parameters", 5e7}};
    QCOMPARE(phaseTimeline(scenarioFromJson(doc), 0, 2).front().bytes[Category::GatherBuffers], 5e7 * 2);
    doc["training"]["deepspeed"] = {{"reduce_bucket", 1}};
    QVERIFY_THROWS_EXCEPTION(Error, scenarioFromJson(doc));
}

void TestFrameworks::fullCheckpointingEveryNthLayer() {
    // torchtitan's selective_ac_option "2": blocks 2, 4, ..., 32 keep their input only, the other 16 keep
    // everything.
    json doc = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
    doc["training"]["framework"] = "torchtitan";
    doc["training"]["sequence_length"] = 4096;
    doc["training"]["activation_checkpointing"] = "none";
    const double all = layerActivations(scenarioFromJson(doc), 0, 1).stored;
    doc["training"]["activation_checkpointing"] = "full";
    const double input = layerActivations(scenarioFromJson(doc), 0, 1).stored;
    QCOMPARE(input, 4096.0 * 2 * 4096);
    doc["training"]["checkpoint_every"] = 2;
    const Scenario every2 = scenarioFromJson(doc);
    QCOMPARE(layerActivations(every2, 0, 1).stored, all);   // block 1
    QCOMPARE(layerActivations(every2, 1, 1).stored, input); // block 2
    QCOMPARE(atLoss(every2)[Category::Activations], 16 * all + 16 * input);
    doc["training"]["activation_checkpointing"] = "selective"; // only full checkpointing takes it
    QCOMPARE(scenarioFromJson(doc).warnings.size(), std::size_t(1));

    // Megatron's --recompute-method uniform --recompute-num-layers 4: 8 groups keep one input each and a
    // group of 4 layers is rebuilt at once; block 4: the first 4 layers keep their inputs, 28 everything.
    doc["training"]["activation_checkpointing"] = "full";
    doc["training"].erase("checkpoint_every");
    doc["training"]["recompute_method"] = "uniform";
    doc["training"]["recompute_num_layers"] = 4;
    const Scenario uniform = scenarioFromJson(doc);
    const auto at = [](const Scenario& sc) { return atLoss(sc)[Category::Activations]; };
    QCOMPARE(at(uniform), 8 * input);
    QCOMPARE(layerActivations(uniform, 1, 1).stored, 0.0);
    QCOMPARE(layerActivations(uniform, 4, 1).stored, input);
    QCOMPARE(layerActivations(uniform, 0, 1).transient, 4 * all);
    doc["training"]["recompute_method"] = "block";
    QCOMPARE(at(scenarioFromJson(doc)), 4 * input + 28 * all);
    doc["training"]["checkpoint_every"] = 2;
    QVERIFY_THROWS_EXCEPTION(Error, scenarioFromJson(doc)); // two ways of choosing layers at once
}

void TestFrameworks::adamStepTemporaries() {
    // Llama 3.1 8B on one GPU, bf16 mixed: AdamW's two fp32 states are 8 bytes per parameter. At the step,
    // torch.optim.AdamW's foreach path (its default on CUDA) also holds sqrt(exp_avg_sq) for every
    // parameter (4 bytes each); one tensor at a time it holds two temporaries of the largest parameter (the
    // 128256 x 4096 embedding, fp32); the fused kernels nothing.
    const double n = 8030261248.0, largest = 128256.0 * 4096;
    auto atStep = [n](const char* framework, const char* impl) {
        json doc = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
        doc["training"]["framework"] = framework;
        if (impl)
            doc["training"]["optimizer_implementation"] = impl;
        else
            doc["training"].erase("optimizer_implementation");
        doc["cluster"]["gpu"] = "B200-180GB";
        const auto points = phaseTimeline(scenarioFromJson(doc), 0, 2);
        // The states stay the states; the step's scratch is its own category (temporaries).
        if (points.back().bytes[Category::OptimizerStates] != 8 * n)
            return -1.0;
        return points.back().bytes[Category::OptimizerStates] + points.back().bytes[Category::Temporaries];
    };
    QCOMPARE(atStep("pytorch", nullptr), 8 * n + 4 * n);
    QCOMPARE(atStep("huggingface", nullptr), 8 * n + 4 * n);
    QCOMPARE(atStep("pytorch", "for_loop"), 8 * n + 2 * 4 * largest);
    QCOMPARE(atStep("pytorch", "fused"), 8 * n);
    QCOMPARE(atStep("megatron", nullptr), 8 * n); // FusedAdam
    QCOMPARE(atStep("deepspeed", nullptr), 8 * n);
    // Sharded states shard the temporaries too: ZeRO-1 over 8.
    json doc = trainingDoc({{"preset", "meta-llama/Llama-3.1-8B"}});
    doc["training"].erase("optimizer_implementation");
    doc["cluster"]["num_gpus"] = 8;
    doc["cluster"]["data_parallel"] = "zero1";
    const Breakdown step = phaseTimeline(scenarioFromJson(doc), 0, 2).back().bytes;
    QCOMPARE(step[Category::OptimizerStates], 8 * n / 8);
    QCOMPARE(step[Category::Temporaries], 4 * n / 8);
}

QTEST_GUILESS_MAIN(TestFrameworks)
#include "tst_frameworks.moc"
