#pragma once
#include "core/plan/breakdown.h"

#include <QColor>

namespace headroom {

// One fixed colour per memory category, the same in every chart and export, readable on light and dark
// backgrounds: model states in blues/greens, activations in oranges, overheads in greys.
QColor categoryColor(Category c);

} // namespace headroom
