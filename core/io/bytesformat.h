// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <string>

namespace headroom {

enum class ByteUnit { GiB, GB };

// "12.34 GiB" / "13.25 GB"; negative values keep their sign. Precision in decimals.
std::string formatBytes(double bytes, ByteUnit unit = ByteUnit::GiB, int precision = 2);
// Thousands separators for exact counts: 124,439,808.
std::string formatCount(unsigned long long n);

} // namespace headroom
