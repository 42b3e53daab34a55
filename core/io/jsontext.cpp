// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/jsontext.h"

#include "core/error.h"

namespace headroom {

std::string jsonText(const nlohmann::json& j, int indent) {
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void requireSchema(const nlohmann::json& doc, const char* schema) {
    // value() would throw a JSON type_error on a schema that is not a string: compare only a string.
    const auto it = doc.is_object() ? doc.find("schema") : doc.end();
    if (!doc.is_object() || it == doc.end() || !it->is_string() || *it != schema)
        throw Error("schema", std::string("must be \"") + schema + "\"");
}

} // namespace headroom
