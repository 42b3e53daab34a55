// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace headroom {

// A column that grows into memory reserved for it: `used` bytes written so far of `capacity`.
struct GrowingBlock {
    const void* data = nullptr;
    std::size_t used = 0, capacity = 0;
};

// Faults the next pages of growing columns in on a second thread, ahead of the thread that fills them.
// The kernel zeroes every new page on its first touch: reading a 10M-entry snapshot spent 28% of its time
// in clear_page (perf record -e cpu-clock), on the one core that parses, while the other core waited. This
// moves that work to the other core with MADV_POPULATE_WRITE (Linux 5.14), which makes pages present
// without writing to them, so it never races with the filling thread's data. It stays `lead` bytes ahead
// of what each column uses (never populating what a generous reservation will not need), and does
// nothing where the kernel lacks the call or under AddressSanitizer (heap blocks).
class Prefaulter {
public:
    explicit Prefaulter(std::size_t lead = std::size_t(4) << 20);
    ~Prefaulter(); // stops and joins; pages already populated stay with their columns
    Prefaulter(const Prefaulter&) = delete;
    Prefaulter& operator=(const Prefaulter&) = delete;
    // The columns' state now, from the filling thread: cheap, and returns at once.
    void advance(const std::vector<GrowingBlock>& blocks);

private:
    void run();

    std::size_t m_lead;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::vector<GrowingBlock> m_pending; // the latest state, taken by the helper
    bool m_fresh = false, m_stop = false;
    std::thread m_thread;
};

} // namespace headroom
