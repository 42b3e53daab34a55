#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Megatron-LM's CI runs as Headroom cases: a maintainer's tool, run once per Megatron-LM commit.

    python3 examples/published/megatron_ci.py MEGATRON_CHECKOUT COMMIT > cases-fragment.json
    python3 examples/published/megatron_ci.py MEGATRON_CHECKOUT core_v0.12.0 golden_values_dev.json A100 \
        core-v0.12-dev 2.5 > cases-fragment.json

The optional arguments name the golden-values file (golden_values_dev_dgx_h100.json by default; Megatron-LM
0.12 ran its GPT tests on DGX A100s in two containers, golden_values_dev.json and golden_values_lts.json), the
GPU it ran on (H100 or A100), a tag that keeps that version's scenarios and case ids apart
(megatron-ci-TAG/NAME.headroom.json, megatron-ci-TAG-NAME) and the PyTorch release of the container the
golden values were written in (training.torch_version: 0.12's dev values date from January 2025, the dev
image built on NGC 24.10, PyTorch 2.5). MEGATRON_CHECKOUT may be a bare clone: files are read with git show.

Megatron-LM's functional tests (tests/functional_tests/test_cases/gpt/NAME/) each give the run's arguments
(model_config.yaml) and what the run logged per iteration (golden_values_dev_dgx_h100.json), among them
mem-max-allocated-bytes: torch.cuda.max_memory_allocated() on the rank that writes tensorboard, the last
one (the last pipeline stage). For every training test whose arguments Headroom can express, this writes the
scenario (examples/published/megatron-ci/NAME.headroom.json) and prints its case (role "validate": these
runs were added after the Megatron profile was built and played no part in it; FIT_RUNS later set a rule). A test whose arguments
Headroom cannot express is listed on stderr with the reason, never approximated silently; a flag planned
approximately (APPROXIMATED) is named on stderr too.

The mapping follows megatron/training/arguments.py at that commit: dropout 0.1 unless set, vocabulary
padded by the profile, bf16 with fp32 main gradients, ffn 4h (swiglu: int(8h/3 / 64) * 64), tied
embeddings unless --untie-embeddings-and-output-weights, learned absolute positions unless
--position-embedding-type rope, 8 GPUs (a dgx_h100 test runs on one node), Megatron's unfused attention
for --transformer-impl local and --attention-backend unfused or local.
"""
import json
import os
import subprocess
import sys

import yaml  # python3-yaml

SKIP_FLAGS = {
    "--num-experts": "mixture of experts in a GPT test (the MoE tests are not converted yet)",
    "--multi-latent-attention": "multi-latent attention is not modelled for Megatron",
    "--fp8": "Transformer Engine fp8 training is not modelled",
    "--fp8-format": "Transformer Engine fp8 training is not modelled",
    "--use-megatron-fsdp": "Megatron FSDP is not modelled",
    "--use-custom-fsdp": "Megatron FSDP (--use-custom-fsdp, as 0.12 named it) is not modelled",
    "--use-torch-fsdp2": "FSDP2 under Megatron is not modelled",
    "--decoder-first-pipeline-num-layers": "uneven pipeline stages are not modelled",
    "--decoder-last-pipeline-num-layers": "uneven pipeline stages are not modelled",
    "--account-for-embedding-in-pipeline-split": "uneven pipeline stages are not modelled",
    "--account-for-loss-in-pipeline-split": "uneven pipeline stages are not modelled",
    "--pipeline-model-parallel-layout": "uneven pipeline stages are not modelled",
    "--defer-embedding-wgrad-compute": "deferred embedding weight gradients are not modelled",
    "--num-distributed-optimizer-instances": "several distributed-optimizer instances are not modelled",
    "--cpu-offloading": "Transformer Engine activation offloading is not modelled",
    "--fp16": "fp16 with loss scaling is not checked for Megatron (the profile reads bf16)",
    "--use-legacy-models": "Megatron's legacy GPT model (megatron/legacy) is not modelled: the profile reads "
                           "Megatron-Core's",
}


# Flags a scenario cannot say, planned without them, each named on stderr for the tests that set them.
# (--qk-layernorm was one until the model's qk_layernorm key planned its LayerNorms over q and k.)
APPROXIMATED = {}


# Tests a rule of the Megatron profile was chosen on after they were added (cases.json says which rule).
# (tag, test) of the runs a rule was set on: d98e8a64d's fused-loss pair set --cross-entropy-loss-fusion's
# buffer, 0.12's (PyTorch 2.5) the second buffer that PyTorch before 2.7 holds.
FIT_RUNS = {("", "gpt3_mcore_te_tp2_pp2_cross_entropy_loss_fusion"),
            ("", "gpt3_mcore_te_tp2_pp2_resume_torch_dist_cross_entropy_loss_fusion"),
            ("core-v0.12-dev", "gpt3_mr_mcore_te_tp2_pp2_cross_entropy_loss_fusion_dgx_a100_1N8G"),
            ("core-v0.12-dev", "gpt3_mr_mcore_te_tp2_pp2_resume_torch_dist_cross_entropy_loss_fusion_dgx_a100_1N8G")}


def git_show(repo, commit, path):
    return subprocess.run(["git", "-C", repo, "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout


GPUS = {"H100": "H100-SXM-80GB", "A100": "A100-80GB"}


def scenario_for(name, args, gpu="H100", env=None, torch_version=""):
    """The scenario of one test, or (None, reason). env: the test's ENV_VARS."""
    for flag, why in SKIP_FLAGS.items():
        if flag in args and args[flag] not in (False, None):
            return None, why
    a = lambda k, d=None: args.get(k, d)
    L, h, heads = int(a("--num-layers")), int(a("--hidden-size")), int(a("--num-attention-heads"))
    groups = int(a("--num-query-groups")) if a("--group-query-attention") else heads
    swiglu = bool(a("--swiglu"))
    ffn = a("--ffn-hidden-size")
    ffn = int(ffn) if ffn else (int(4 * h * 2 / 3 / 64) * 64 if swiglu else 4 * h)
    rope = a("--position-embedding-type", "learned_absolute") == "rope"
    rms = a("--normalization", "LayerNorm") == "RMSNorm"
    bias = not a("--disable-bias-linear")
    seq = int(a("--seq-length"))
    if a("--tokenizer-type") == "NullTokenizer":
        vocab = int(a("--vocab-size")) + 1  # _NullTokenizer's vocab_size counts its EOD token
    elif a("--vocab-file") or a("--tokenizer-type", "GPT2BPETokenizer") == "GPT2BPETokenizer":
        vocab = 50257  # GPT-2's BPE vocabulary (gpt2-vocab.json)
    else:
        return None, "tokenizer " + str(a("--tokenizer-type")) + " has no known vocabulary size"
    hidden_dropout = float(a("--hidden-dropout", 0.1))
    attention_dropout = float(a("--attention-dropout", 0.1))
    tied = not a("--untie-embeddings-and-output-weights")
    if swiglu or rms:
        if not (swiglu and rms and rope):
            return None, "a mix of swiglu, RMSNorm and positions that no model family here has"
        model = {"model_type": "llama", "hidden_size": h, "num_hidden_layers": L, "num_attention_heads": heads,
                 "num_key_value_heads": groups, "intermediate_size": ffn, "vocab_size": vocab,
                 "max_position_embeddings": int(a("--max-position-embeddings", seq)),
                 "tie_word_embeddings": tied, "attention_bias": bias, "mlp_bias": bias,
                 "hidden_dropout": hidden_dropout, "attention_dropout": attention_dropout}
    elif rope:
        model = {"model_type": "gpt_neox", "hidden_size": h, "num_hidden_layers": L, "num_attention_heads": heads,
                 "num_key_value_heads": groups, "intermediate_size": ffn, "vocab_size": vocab,
                 "max_position_embeddings": int(a("--max-position-embeddings", seq)),
                 "tie_word_embeddings": tied, "attention_bias": bias,
                 "hidden_dropout": hidden_dropout, "attention_dropout": attention_dropout}
    else:
        if not bias:
            return None, "GPT-2 layout without biases: no model family here has it"
        model = {"model_type": "gpt2", "n_embd": h, "n_layer": L, "n_head": heads, "num_key_value_heads": groups,
                 "n_inner": ffn, "vocab_size": vocab, "n_positions": int(a("--max-position-embeddings", seq)),
                 "tie_word_embeddings": tied, "resid_pdrop": hidden_dropout, "attn_pdrop": attention_dropout}
    if a("--qk-layernorm"):
        model["qk_layernorm"] = True  # a norm over each head's query and key (Headroom's key, as GQA's)
    tp, pp = int(a("--tensor-model-parallel-size", 1)), int(a("--pipeline-model-parallel-size", 1))
    cp = int(a("--context-parallel-size", 1))
    gpus = 8
    if gpus % (tp * pp * cp):
        return None, "TP x PP x CP does not divide 8 GPUs"
    dp = gpus // (tp * pp * cp)
    mbs, gbs = int(a("--micro-batch-size")), int(a("--global-batch-size"))
    if gbs % (mbs * dp):
        return None, "the global batch is not a whole number of micro-batches per rank"
    # Megatron's own attention (--transformer-impl local, or --attention-backend unfused/local) materialises
    # the scores; flash, fused and auto (Transformer Engine's choice) do not.
    unfused = a("--transformer-impl", "transformer_engine") == "local" or \
        a("--attention-backend", "auto") in ("unfused", "local")
    training = {"framework": "megatron", "micro_batch_size": mbs, "sequence_length": seq,
                "gradient_accumulation_steps": gbs // (mbs * dp), "precision": "bf16_mixed_fp32_grads",
                "optimizer": "adamw", "attention": "eager" if unfused else "flash"}
    gran = a("--recompute-granularity")
    if gran == "full":
        training["activation_checkpointing"] = "full"
        training["recompute_method"] = a("--recompute-method", "uniform")
        training["recompute_num_layers"] = int(a("--recompute-num-layers", 1))
    elif gran == "selective":
        training["activation_checkpointing"] = "selective"
    else:
        training["activation_checkpointing"] = "none"
    # --cross-entropy-loss-fusion is "loss": "fused", which the Megatron profile reads as
    # megatron/core/fusions/fused_cross_entropy.py: the in-place loss's steps compiled by megatron/core/jit.py,
    # each holding a second fp32 logits-sized buffer while it updates its input. The two tests with it set
    # that rule, so they are fit runs (FIT_RUNS).
    if a("--cross-entropy-loss-fusion"):
        training["loss"] = "fused"
    if torch_version:
        training["torch_version"] = torch_version
    cluster = {"gpu": GPUS[gpu], "num_gpus": gpus, "data_parallel":
               "zero1" if a("--use-distributed-optimizer") else "ddp",
               "tensor_parallel": tp, "pipeline_parallel": pp, "context_parallel": cp,
               "sequence_parallel": bool(a("--sequence-parallel")) and tp > 1}
    vp = a("--num-layers-per-virtual-pipeline-stage")
    if vp:
        if L % (pp * int(vp)):
            return None, "virtual stages do not divide the layers"
        cluster["virtual_pipeline_stages"] = L // (pp * int(vp))
        group = a("--microbatch-group-size-per-virtual-pipeline-stage")
        if group:
            cluster["microbatch_group_size_per_vp_stage"] = int(group)
    # Deterministic tests set CUBLAS_WORKSPACE_CONFIG (":4096:8"), which sizes PyTorch's cuBLAS workspaces.
    if env and env.get("CUBLAS_WORKSPACE_CONFIG"):
        cluster["cublas_workspace_config"] = str(env["CUBLAS_WORKSPACE_CONFIG"])
    return {"schema": "headroom.scenario/1", "name": f"Megatron-LM CI {name}",
            "model": model, "training": training, "cluster": cluster}, None


def main():
    repo, commit = sys.argv[1], sys.argv[2]
    golden_file = sys.argv[3] if len(sys.argv) > 3 else "golden_values_dev_dgx_h100.json"
    gpu = sys.argv[4] if len(sys.argv) > 4 else "H100"
    tag = sys.argv[5] if len(sys.argv) > 5 else ""
    torch_version = sys.argv[6] if len(sys.argv) > 6 else ""
    sha = subprocess.run(["git", "-C", repo, "rev-parse", commit], check=True, capture_output=True,
                         text=True).stdout.strip()
    version = f"{commit} ({sha[:9]})" if commit != sha and not sha.startswith(commit) else commit[:9]
    root = "tests/functional_tests/test_cases/gpt"
    names = sorted(subprocess.run(["git", "-C", repo, "ls-tree", "--name-only", f"{commit}:{root}"],
                                  check=True, capture_output=True, text=True).stdout.split())
    folder = f"megatron-ci-{tag}" if tag else "megatron-ci"
    prefix = f"megatron-ci-{tag}-" if tag else "megatron-ci-"
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), folder)
    os.makedirs(out_dir, exist_ok=True)
    cases = []
    for name in names:
        if any(k in name for k in ("inference", "grpo", "release", "memory_speed")):
            continue  # not training tests, or already fit cases
        try:
            golden = json.loads(git_show(repo, commit, f"{root}/{name}/{golden_file}"))
            config = yaml.safe_load(git_show(repo, commit, f"{root}/{name}/model_config.yaml"))
        except subprocess.CalledProcessError:
            continue
        peaks = golden.get("mem-max-allocated-bytes", {}).get("values", {})
        peaks = [v for v in peaks.values() if isinstance(v, (int, float)) and v == v]
        if not peaks:
            continue
        # What stayed allocated after each iteration (torch.cuda.memory_stats()'s allocated_bytes.all.current
        # in training_log): the state between steps, at its least after the first step made Adam's states.
        held = golden.get("mem-allocated-bytes", {}).get("values", {})
        held = [v for k, v in held.items() if int(k) >= 2 and isinstance(v, (int, float)) and v == v]
        sc, why = scenario_for(name, config.get("MODEL_ARGS", {}), gpu, config.get("ENV_VARS", {}), torch_version)
        if sc is None:
            print(f"skipped {name}: {why}", file=sys.stderr)
            continue
        approximated = [f"{flag} {how}" for flag, how in APPROXIMATED.items()
                        if config.get("MODEL_ARGS", {}).get(flag) not in (False, None)]
        for what in approximated:
            print(f"approximated {name}: {what}", file=sys.stderr)
        with open(os.path.join(out_dir, f"{name}.headroom.json"), "w") as f:
            json.dump(sc, f, indent=2)
            f.write("\n")
        title = f"Megatron-LM {tag} CI `{name}`, {gpu}" if tag else f"Megatron-LM CI `{name}`, {gpu}"
        cases.append({"id": f"{prefix}{name}", "title": title,
                      "role": "fit" if (tag, name) in FIT_RUNS else "validate",
                      "framework": "megatron", "scenario": f"{folder}/{name}.headroom.json",
                      "metric": "allocated", "stage": "last", "measured_bytes": int(max(peaks)),
                      **({"between_steps_bytes": int(min(held))} if held else {}),
                      "source": f"NVIDIA/Megatron-LM {version}, {root}/{name}/{golden_file}: "
                                f"mem-max-allocated-bytes, the largest over iterations {min(golden['mem-max-allocated-bytes']['values'], key=int)} "
                                f"to {max(golden['mem-max-allocated-bytes']['values'], key=int)}"
                                + ("; between_steps_bytes: mem-allocated-bytes, the least from iteration 2 on" if held else "")
                                + "; the run's arguments in model_config.yaml"
                                + (f"; run on DGX {gpu}s (tests/test_utils/recipes/gpt.yaml, platforms)" if tag else "")
                                + "".join(f"; {what}" for what in approximated)})
    json.dump(cases, sys.stdout, indent=2, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
