// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the in-process benchmarks time with: a steady clock, and the median of repeated runs (a shared VM's
// speed moves between runs; the median is the figure they print).
#include <algorithm>
#include <chrono>
#include <vector>

namespace headroom::bench {

using Clock = std::chrono::steady_clock;

inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace headroom::bench
