// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <cstddef>
#include <string>

namespace headroom {

// Reads a whole file, refusing files over maxBytes; throws Error (without the path: callers add it).
std::string readTextFile(const std::string& path, std::size_t maxBytes = 64u << 20);

} // namespace headroom
