// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/model/modelspec.h"

namespace headroom {

// Stanford CS336's reference Transformer LM, the cs336_basics package its assignments ship
// (cs336-basics/cs336_basics/model.py, nn_utils.py, optimizer.py), read op by op: Linear is an einsum of the
// input and the weight, RMSNorm upcasts to fp32, SwiGLU's silu is x * sigmoid(x), attention writes its
// scores, mask and softmax (x - max, exp, / sum) by hand, the cross-entropy is a hand-written log-softmax
// and gather, and AdamW steps one parameter at a time with temporaries of its size. docs/frameworks.md,
// "CS336 basics", gives every term its line.
//
// What the forward keeps and the moments the step peaks at, per sequence of `sequence` tokens (the
// estimator scales them by the micro-batch), in bytes. `weightBytes` is the parameters' dtype (4 for fp32,
// 2 for a model converted to bf16) and `autocastBytes` torch.autocast's (2, or 0 without it).
struct Cs336Shape {
    double sequence = 0;
    double hidden = 0, ffn = 0, heads = 0, vocab = 0;
    double weightBytes = 4, autocastBytes = 0;
};

// The shape of a model of `m`'s dimensions over `sequence` tokens.
Cs336Shape cs336ShapeOf(const ModelSpec& m, double sequence, double weightBytes, double autocastBytes);

struct Cs336Training {
    // Per sequence, all layers of one kind summed by the caller from these per-layer figures.
    double layerSaved = 0;       // what one layer's forward leaves for its backward, growing with tokens
    double layerScores = 0;      // the same, growing with tokens x keys (exp's output and softmax's)
    double layerMask = 0;        // the causal mask torch.where saves, one per layer, whatever the batch
    // The last layer's softmax in the forward: held beside everything saved (tokens; tokens x keys).
    double lastLayerForward = 0, lastLayerForwardScores = 0;
    // Its backward at the softmax's division: what the layer's saved tensors have lost by then (negative)
    // and the scratch its gradients take.
    double lastLayerFreed = 0, lastLayerFreedScores = 0;
    // In its forward at the softmax, what it has not made yet (its output projection and MLP; negative).
    double lastLayerNotMade = 0;
    double backwardScratch = 0, backwardScratchScores = 0;
    double head = 0;       // the final norm's and the head's saved inputs
    double lossForward = 0;  // per (token, vocabulary entry): the loss's tensors at their most, forward
    double lossBackward = 0; // and when its backward starts
    double heldLogits = 0;   // per (token, vocabulary entry): the logits the caller keeps (`output`)
};

Cs336Training cs336Training(const Cs336Shape& s);

// The forward under torch.inference_mode, which keeps nothing for a backward: its working set at its three
// moments, per sequence (the attention's softmax, the MLP's silu, and the head writing the logits).
struct Cs336Forward {
    double activations = 0; // at the largest moment: what grows with tokens
    double scores = 0;      // what grows with tokens x keys
    double logits = 0;      // the logits, when the head's moment is the largest
    double mask = 0;        // the causal mask while a layer attends (once, whatever the batch)
    // Each moment apart (the attention's softmax, the MLP's silu, the head): which is the largest can
    // depend on what does not grow with the sequences (autocast's weight casts), so a plan weighs them at
    // its batch.
    struct Moment {
        double activations = 0, scores = 0, logits = 0;
    };
    Moment attention, mlp, head;
    // And w3's einsum in the last layer's MLP, silu's output beside its input's cast and its output: with
    // the weight's cast (its own under inference_mode, a whatever-the-batch figure the plan adds) the
    // largest at a few tokens.
    Moment w3;
};

Cs336Forward cs336Forward(const Cs336Shape& s);

// The hand-written AdamW's temporaries while it steps one parameter (`elements` of the largest, in
// `bytes` each): five of its size at once (optimizer.py, AdamW.step).
double cs336StepTemporaries(double elements, double bytes);

} // namespace headroom
