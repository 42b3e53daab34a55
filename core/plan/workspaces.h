// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <optional>
#include <string>

namespace headroom {

struct Scenario;

// The GEMM libraries' workspaces: device memory PyTorch's caching allocator hands out once, at the first
// matrix multiply of a thread and stream, and never takes back. Nothing else in a plan is held this way, and
// on a small model they are a tenth of the peak (Megatron-LM's CI runs, hidden 512: 96 MiB of 0.8 GiB).
struct Workspaces {
    double pytorchEach = 0;       // one cuBLAS workspace (CUBLAS_WORKSPACE_CONFIG, or PyTorch's default)
    int pytorchCount = 0;         // how many: one per thread that multiplies
    double transformerEngine = 0; // Transformer Engine's one workspace (Megatron-Core's default layers)
    double total() const { return pytorchEach * pytorchCount + transformerEngine; }
};

// CUBLAS_WORKSPACE_CONFIG's size in bytes: the sum of SIZE KiB x COUNT over its ":SIZE:COUNT" pairs, as
// PyTorch reads it (aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize). nullopt when the
// text has no pair, a number is not a decimal integer, or the total passes 1 TiB.
std::optional<double> cublasWorkspaceConfigBytes(const std::string& config);

// PyTorch's default when CUBLAS_WORKSPACE_CONFIG is unset, by compute capability: ":4096:8" (32 MiB) on
// Hopper (9.0 exactly), ":4096:2:16:8" (8,519,680 bytes) on every other CUDA GPU.
double defaultCublasWorkspaceBytes(double computeCapability);

// The workspaces a plan holds throughout (before calibration; workspaceBytes applies it):
// - PyTorch keeps a cuBLAS workspace per (handle, stream) and a handle per thread (CublasHandlePool.cpp:
//   thread-local handle pools, workspaces keyed by handle and stream). The forward runs on the Python thread
//   and autograd runs a CUDA backward on its own device thread (torch/csrc/autograd/engine.cpp), so a
//   training step holds two, a forward one. cuBLASLt's 1 MiB workspaces are left out.
// - Megatron-Core builds its layers from Transformer Engine by default (--transformer-impl
//   transformer_engine), which keeps one more for its GEMMs: 32 MiB from compute capability 9.0, 4 MiB
//   before (transformer_engine/pytorch/module/base.py, get_cublas_workspace_size_bytes).
// - A serving engine measures its own (its profile run's peak): none planned here.
// ROCm's hipBLAS and hipBLASLt workspaces (the MI300X) are not modelled: the CUDA rule is applied.
Workspaces plannedWorkspaces(const Scenario& sc);

// What the plan counts: a calibration's measured workspaces replace the model's (the trace saw them).
double workspaceBytes(const Scenario& sc);

} // namespace headroom
