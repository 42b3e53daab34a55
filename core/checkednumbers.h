// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

namespace headroom {

// Arithmetic on values read from files: nothing a file says may overflow or convert out of range
// (both are undefined behaviour in C++). Fuzzers found both in the first loaders. Every room that adds up
// sizes from a trace (the readers, attribution, comparison, diff, the allocator replay) uses these.

// A double converted to int64 when it is finite and in range; false otherwise.
inline bool doubleToInt64(double d, long long* out) {
    if (!std::isfinite(d) || d < -9.2233720368547758e18 || d >= 9.2233720368547758e18)
        return false;
    *out = static_cast<long long>(d);
    return true;
}

// The same, saturating (NaN gives 0): for timestamps and totals that only order or display.
inline long long clampToInt64(double d) {
    if (std::isnan(d))
        return 0;
    if (d <= -9.2233720368547758e18)
        return std::numeric_limits<long long>::min();
    if (d >= 9.2233720368547758e18)
        return std::numeric_limits<long long>::max();
    return static_cast<long long>(d);
}

inline long long saturatingAdd(long long a, long long b) {
    long long r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? std::numeric_limits<long long>::max() : std::numeric_limits<long long>::min();
    return r;
}

inline long long saturatingMul(long long a, long long b) {
    long long r;
    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) != (b < 0) ? std::numeric_limits<long long>::min()
                                  : std::numeric_limits<long long>::max();
    return r;
}

// |a|, with |INT64_MIN| saturated to INT64_MAX (std::llabs of it is undefined).
inline long long saturatingAbs(long long a) {
    return a == std::numeric_limits<long long>::min() ? std::numeric_limits<long long>::max()
           : a < 0                                    ? -a
                                                      : a;
}

inline long long saturatingSub(long long a, long long b) {
    long long r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? std::numeric_limits<long long>::max() : std::numeric_limits<long long>::min();
    return r;
}

// v plus (sign > 0) or minus (sign < 0) size, saturating; v when sign is 0 (an EventEffect's step).
inline long long saturatingStep(long long v, int sign, long long size) {
    return sign > 0 ? saturatingAdd(v, size) : sign < 0 ? saturatingSub(v, size) : v;
}

} // namespace headroom
