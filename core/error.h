// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <stdexcept>
#include <string>

namespace headroom {

// The one exception type core throws for bad input. `where` is a JSON path ("training.micro_batch_size"),
// a byte offset or a field name, so that every message can point at the offending place.
class Error : public std::runtime_error {
public:
    Error(std::string where, const std::string& why);
    const std::string& where() const { return m_where; }
    const std::string& why() const { return m_why; }
    // Same error, prefixed with the file it came from: "FILE: where: why".
    std::string withFile(const std::string& file) const;

private:
    std::string m_where;
    std::string m_why;
};

// An nlohmann/json exception's message without its "[json.exception.parse_error.101] " prefix, for the
// error messages of every reader that parses JSON.
std::string jsonExceptionText(const std::exception& e);

} // namespace headroom
