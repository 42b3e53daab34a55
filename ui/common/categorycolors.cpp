// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/common/categorycolors.h"

#include <QBarSet>

namespace headroom {

QColor categoryColor(Category c) {
    // Chosen so that every pair stays apart for the three common colour-vision deficiencies: simulated
    // with Machado et al. (2009) at full severity, every two categories differ by at least 20 in CIELAB
    // (tst_mainwindow checks it with its own simulation), and categories stacked next to each other differ
    // by at least 25 in lightness, so that the bars read in greyscale print too.
    static const QColor colors[kCategoryCount] = {
        QColor(0x11, 0x88, 0xee), // weights: blue
        QColor(0xdd, 0xdd, 0x44), // gradients: yellow
        QColor(0xaa, 0x88, 0x77), // master weights: taupe
        QColor(0x55, 0x33, 0xaa), // optimizer states: indigo
        QColor(0x99, 0xff, 0xff), // temporaries: pale cyan (light: its neighbours are dark and mid)
        QColor(0x66, 0x00, 0x11), // workspaces: maroon (the lightest left that keeps every rule above)
        QColor(0xdd, 0x77, 0x11), // activations: orange
        QColor(0x99, 0x11, 0x00), // attention scores: dark red
        QColor(0x55, 0xcc, 0x66), // logits: green
        QColor(0x77, 0x33, 0x77), // gather buffers: plum
        QColor(0xbb, 0xaa, 0xdd), // communication buffers: lavender
        QColor(0x22, 0x55, 0x44), // kv cache: dark teal
        QColor(0xaa, 0xdd, 0xbb), // cuda context: pale green
        QColor(0xbb, 0x66, 0x99), // allocator overhead: mauve
    };
    return colors[static_cast<std::size_t>(c)];
}

QColor categoryColor(MeasuredCategory c) {
    switch (c) {
    case MeasuredCategory::Weights:
        return categoryColor(Category::Weights);
    case MeasuredCategory::Gradients:
        return categoryColor(Category::Gradients);
    case MeasuredCategory::OptimizerStates:
        return categoryColor(Category::OptimizerStates);
    case MeasuredCategory::Activations:
        return categoryColor(Category::Activations);
    case MeasuredCategory::Temporaries:
        return categoryColor(Category::Temporaries);
    case MeasuredCategory::KvCache:
        return categoryColor(Category::KvCache);
    case MeasuredCategory::Workspaces:
        return categoryColor(Category::Workspaces);
    case MeasuredCategory::Unattributed:
        break;
    }
    return QColor(0x66, 0x66, 0x66); // darker than the timeline's grey "everything else" band
}

QColor frozenWeightsColor() {
    return QColor(0x00, 0x00, 0x58);
} // navy: CIELAB L* 6 against the blue's 55

void colourFrozenWeights(QBarSet* set) {
    set->setColor(frozenWeightsColor());
    set->setBorderColor(frozenWeightsColor().darker(130));
}

void colourBarSet(QBarSet* set, Category c) {
    set->setColor(categoryColor(c));
    set->setBorderColor(categoryColor(c).darker(130));
}

} // namespace headroom
