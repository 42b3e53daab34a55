// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/allocator/cachingallocator.h"
#include "core/checkednumbers.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace headroom {

// A step's tensors through the caching allocator's model, each allocated and freed by a name (a small
// integer the caller chooses) on one stream, the most allocated and reserved recorded. The replays of the
// estimate (core/plan/unslothreplay.cpp, fsdp1pools.cpp) write the order their frameworks' code makes and
// drops tensors in these terms.
class TensorProgram {
public:
    TensorProgram(CachingAllocatorModel& a, int names, std::int64_t stream = 0)
        : m_a(a), m_stream(stream), m_at(static_cast<std::size_t>(names), 0),
          m_size(static_cast<std::size_t>(names), 0), m_held(static_cast<std::size_t>(names), 0) {}
    // Once a request has failed, ask the allocator for nothing more (each failed request releases the cache
    // and retries: a replay that goes on past its verdict costs the whole cache's walk per tensor).
    void stopAtFirstFailure() { m_stop = true; }
    void alloc(int id, double bytes) {
        const auto i = static_cast<std::size_t>(id);
        if (m_stop && m_outOfMemory) {
            m_held[i] = 0;
            m_size[i] = 0;
            return;
        }
        // (At most 2^63: a plan past what an int64 counts asks for that, which no device has.)
        const auto request =
            std::max<std::uint64_t>(1, static_cast<std::uint64_t>(clampToInt64(std::round(bytes))));
        const auto p = m_a.malloc(request, m_stream, 0);
        m_at[i] = p.value_or(0);
        m_held[i] = p ? 1 : 0;
        m_size[i] = p ? bytes : 0;
        m_live += m_size[i];
        m_peakAllocated = std::max(m_peakAllocated, m_live + (p ? 0 : bytes));
        // Out of memory even after the cache was released: what it would have taken is the figure, so a
        // plan that needs more than the device says so.
        m_peakReserved = std::max(m_peakReserved, static_cast<double>(m_a.reserved()) +
                                                      (p ? 0.0 : static_cast<double>(request)));
        m_outOfMemory = m_outOfMemory || !p;
    }
    void free(int id) {
        const auto i = static_cast<std::size_t>(id);
        if (m_held[i]) // a request that failed holds nothing
            m_a.free(m_at[i], 0);
        m_live -= m_size[i];
        m_size[i] = 0;
        m_held[i] = 0;
    }
    // `to` now names what `from` named (a gradient written over a saved tensor's storage).
    void rename(int from, int to) {
        m_at[static_cast<std::size_t>(to)] = m_at[static_cast<std::size_t>(from)];
        m_size[static_cast<std::size_t>(to)] = m_size[static_cast<std::size_t>(from)];
        m_held[static_cast<std::size_t>(to)] = m_held[static_cast<std::size_t>(from)];
        m_size[static_cast<std::size_t>(from)] = 0;
        m_held[static_cast<std::size_t>(from)] = 0;
    }
    // Every tensor named so far stays allocated with no name: what a caller holds past the program's reach
    // (the previous forward's graph kept by its output), its names free for the next pass to write.
    void keepAllUnnamed() {
        std::fill(m_held.begin(), m_held.end(), 0);
        std::fill(m_size.begin(), m_size.end(), 0.0);
    }
    double peakAllocated() const { return m_peakAllocated; } // the program's own tensors
    double peakReserved() const { return m_peakReserved; }   // the whole allocator's segments
    bool outOfMemory() const { return m_outOfMemory; }       // a request failed at the device's limit

private:
    CachingAllocatorModel& m_a;
    std::int64_t m_stream;
    std::vector<std::uint64_t> m_at;
    std::vector<double> m_size;
    std::vector<char> m_held;
    double m_live = 0, m_peakAllocated = 0, m_peakReserved = 0;
    bool m_outOfMemory = false;
    bool m_stop = false;
};

} // namespace headroom
