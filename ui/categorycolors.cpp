#include "ui/categorycolors.h"

#include <QBarSet>

namespace headroom {

QColor categoryColor(Category c) {
    static const QColor colors[kCategoryCount] = {
        QColor(0x1f, 0x77, 0xb4), // weights
        QColor(0x6b, 0xae, 0xd6), // gradients
        QColor(0x2c, 0xa0, 0x2c), // master weights
        QColor(0x98, 0xdf, 0x8a), // optimizer states
        QColor(0xff, 0x7f, 0x0e), // activations
        QColor(0xd6, 0x27, 0x28), // attention scores
        QColor(0xff, 0xbb, 0x78), // logits
        QColor(0x94, 0x67, 0xbd), // gather buffers
        QColor(0xc5, 0xb0, 0xd5), // communication buffers
        QColor(0x8c, 0x56, 0x4b), // kv cache
        QColor(0x7f, 0x7f, 0x7f), // cuda context
        QColor(0xbc, 0xbd, 0x22), // allocator overhead
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
        return categoryColor(Category::GatherBuffers);
    case MeasuredCategory::KvCache:
        return categoryColor(Category::KvCache);
    case MeasuredCategory::Workspaces:
        return categoryColor(Category::AllocatorOverhead);
    case MeasuredCategory::Unattributed:
        break;
    }
    return QColor(0x8a, 0x8a, 0x8a); // darker than the timeline's grey "everything else" band
}

void colourBarSet(QBarSet* set, Category c) {
    set->setColor(categoryColor(c));
    set->setBorderColor(categoryColor(c).darker(130));
}

} // namespace headroom
