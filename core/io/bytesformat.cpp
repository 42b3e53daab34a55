// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/io/bytesformat.h"

#include <cstdio>

namespace headroom {

std::string formatBytes(double bytes, ByteUnit unit, int precision) {
    const double div = unit == ByteUnit::GiB ? 1073741824.0 : 1e9;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f %s", precision, bytes / div, unit == ByteUnit::GiB ? "GiB" : "GB");
    return buf;
}

std::string formatCount(unsigned long long n) {
    std::string digits = std::to_string(n);
    std::string out;
    const int len = static_cast<int>(digits.size());
    for (int i = 0; i < len; ++i) {
        out += digits[static_cast<std::size_t>(i)];
        const int left = len - 1 - i;
        if (left > 0 && left % 3 == 0)
            out += ',';
    }
    return out;
}

} // namespace headroom
