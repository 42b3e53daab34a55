#pragma once
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

} // namespace headroom
