// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/compare/attribution.h"
#include "core/plan/breakdown.h"

#include <QColor>

class QBarSet;

namespace headroom {

// One fixed colour per memory category, the same in every chart and export, readable on light and dark
// backgrounds: model states in blues/greens, activations in oranges, overheads in greys.
QColor categoryColor(Category c);
// Fills and outlines a bar set in its category's colour (Qt Charts themes reset colours, so charts call
// this again after a theme change).
void colourBarSet(QBarSet* set, Category c);
// The measured categories of a trace in the colours of the estimate's categories they correspond to, so that
// an estimate and a measurement read alike side by side; temporaries in the gather buffers' purple,
// workspaces in the allocator's olive, unattributed in a mid grey.
QColor categoryColor(MeasuredCategory c);
// A fine-tuning plan's frozen base, drawn under the adapters' weights: a darker shade of the weights' blue,
// at least 25 apart in lightness from it so the two read apart in greyscale too.
QColor frozenWeightsColor();
void colourFrozenWeights(QBarSet* set);

} // namespace headroom
