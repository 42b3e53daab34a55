// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/error.h"

namespace headroom {

static std::string compose(const std::string& where, const std::string& why) {
    return where.empty() ? why : where + ": " + why;
}

Error::Error(std::string where, const std::string& why)
    : std::runtime_error(compose(where, why)), m_where(std::move(where)), m_why(why) {}

std::string Error::withFile(const std::string& file) const {
    return file.empty() ? std::string(what()) : file + ": " + what();
}

std::string jsonExceptionText(const std::exception& e) {
    const std::string msg = e.what();
    const auto bracket = msg.find("] ");
    return bracket == std::string::npos ? msg : msg.substr(bracket + 2);
}

} // namespace headroom
