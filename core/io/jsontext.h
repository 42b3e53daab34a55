// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace headroom {

// JSON text for output (CLI, saved files). Strings read from a trace are arbitrary bytes (a hostile pickle
// can name an action "\xff"), and nlohmann's dump throws on invalid UTF-8: they are written with U+FFFD
// in place of each bad byte instead, so output never fails on what a file contained.
std::string jsonText(const nlohmann::json& j, int indent = -1);

// A document's "schema" is exactly `schema` (a string; any other type is a wrong schema, never a JSON
// type error): throws Error at "schema" otherwise.
void requireSchema(const nlohmann::json& doc, const char* schema);

} // namespace headroom
