// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/jsontext.h"

namespace headroom {

std::string jsonText(const nlohmann::json& j, int indent) {
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace headroom
