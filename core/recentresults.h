// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace headroom {

// The last few results of a computation that depends on nothing but its key: the allocator replays of the
// estimate, which a sweep or a slider asks for many times over with the same inputs. Shared by the threads
// that estimate; the computation runs outside the lock.
template <typename T> class RecentResults {
public:
    template <typename Compute> T get(std::vector<double> key, Compute&& compute) {
        {
            const std::lock_guard<std::mutex> lock(m_mutex);
            if (auto it = m_kept.find(key); it != m_kept.end())
                return it->second;
        }
        T value = std::forward<Compute>(compute)();
        const std::lock_guard<std::mutex> lock(m_mutex);
        if (m_kept.size() >= kKept)
            m_kept.clear();
        m_kept.emplace(std::move(key), value);
        return value;
    }

private:
    // A validation of the recorded runs asks for a few dozen distinct replays, each several times (the
    // estimate, its calibration, the what-ifs); 16 kept were cleared before the second asking. A result is
    // tens of bytes.
    static constexpr std::size_t kKept = 256;
    std::mutex m_mutex;
    std::map<std::vector<double>, T> m_kept;
};

} // namespace headroom
