// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/fileio.h"

#include "core/error.h"

#include <filesystem>
#include <fstream>

namespace headroom {

std::string readTextFile(const std::string& path, std::size_t maxBytes) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec)
        throw Error("", "cannot read the file: " + ec.message());
    if (size > maxBytes)
        throw Error("", "the file is " + std::to_string(size) + " bytes, more than the " +
                            std::to_string(maxBytes) + " this file type may have");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error("", "cannot open the file");
    std::string text(static_cast<std::size_t>(size), '\0');
    in.read(text.data(), static_cast<std::streamsize>(size));
    if (!in)
        throw Error("", "cannot read the file");
    return text;
}

} // namespace headroom
