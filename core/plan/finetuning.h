// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/plan/scenario.h"

#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

// One linear layer of a decoder layer, by its Hugging Face module name, as fine-tuning libraries target and
// quantise it. `copies`: how many of it the layer has (a routed expert's matrices once per expert).
struct LinearShape {
    std::string name;
    std::uint64_t out = 0, in = 0;
    double copies = 1;
};
// The layer's linear layers (attention projections, the MLP's matrices, routed and shared experts'); an
// architecture known only by its size has none.
std::vector<LinearShape> layerLinears(const ModelSpec& m, int layer);
// The same for a layer whose dense MLP (or shared experts) is `mlpWidth` wide with `experts` routed experts,
// and whose mixer is a linear-attention (Gated DeltaNet) one when `linearAttention`, or none at all without
// `mixer` (Nemotron-H's MLP blocks).
std::vector<LinearShape> layerLinears(const ModelSpec& m, int mlpWidth, int experts,
                                      bool linearAttention = false, bool mixer = true);

// Bytes of one out x in matrix as bitsandbytes stores it (bitsandbytes/functional.py quantize_4bit,
// Int8Params): 4-bit NF4/FP4 packs two values per byte with one fp32 absmax per block of 64 and keeps its
// 16-entry fp32 code; double quantisation stores the absmax as uint8 with one fp32 scale per 256 of them and
// an fp32 offset. `secondLevelScaleBytes`: torchao's NF4 (torchtune) keeps that scale in bf16 (2).
double fourBitBytes(std::uint64_t out, std::uint64_t in, bool doubleQuantization,
                    double secondLevelScaleBytes = 4);
// LLM.int8: one int8 per value and one fp32 scale per row (Int8Params' CB and SCB).
double int8Bytes(std::uint64_t out, std::uint64_t in);

// What fine-tuning puts on one GPU of a pipeline stage (layers [firstLayer, firstLayer + layers)), before
// data-parallel sharding.
struct FineTuneStage {
    double frozenBytes = 0; // the base's weights as stored (quantised linear layers included)
    double frozenParameters = 0;
    double adapterParameters = 0; // trainable LoRA A and B (and DoRA's magnitudes)
    double savedParameters = 0;   // modules_to_save: full trainable copies beside the frozen originals
    double largestQuantised = 0;  // elements of the largest quantised matrix (dequantised for its matmul)
    double largestDora = 0;       // elements of the largest DoRA-targeted matrix (its norm is recomputed)
};
FineTuneStage fineTuneStage(const Scenario& sc, int firstLayer, int layers, bool firstStage, bool lastStage);

// The tensors fine-tuning trains, one entry per tensor as PEFT allocates them (lora_A, lora_B per targeted
// layer, DoRA's magnitudes; modules_to_save's copies), in elements, with each one's bytes per element; and
// the frozen base's tensors as stored, in bytes (a quantised matrix: its packed values and its absmax).
// What a memory trace of the run shows as separate allocations (core/compare/attribution).
struct TensorBytes {
    std::uint64_t elements = 0;
    double bytesPerElement = 0;
};
std::vector<TensorBytes> trainedTensors(const Scenario& sc);
std::vector<std::uint64_t> frozenTensorBytes(const Scenario& sc);

// The trainable parameters of the whole model (PEFT's print_trainable_parameters "trainable params"):
// every parameter for full fine-tuning.
std::uint64_t trainableParameters(const Scenario& sc);

} // namespace headroom
