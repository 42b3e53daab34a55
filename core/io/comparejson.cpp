#include "core/io/comparejson.h"

namespace headroom {

nlohmann::json comparisonToJson(const Comparison& c, const std::string& traceName) {
    nlohmann::json measured = nlohmann::json::object(), estimated = nlohmann::json::object();
    for (std::size_t i = 0; i < kMeasuredCategories; ++i) {
        const char* key = measuredCategoryKey(static_cast<MeasuredCategory>(i));
        measured[key] = c.measured.bytes[i];
        estimated[key] = c.estimated[i];
    }
    return {{"schema", "headroom.compare/1"},
            {"trace", traceName},
            {"device", c.device},
            {"at_event", c.measured.event},
            {"measured", {{"allocated_bytes", c.measured.total}, {"by_category", measured}}},
            {"estimate", {{"allocated_bytes", c.estimatedTotal}, {"by_category", estimated}}},
            {"difference_bytes", c.difference()},
            {"relative_error", c.relativeError()}};
}

} // namespace headroom
