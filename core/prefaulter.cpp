// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/prefaulter.h"

#include "core/bigvector.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 // <linux/mman.h>, Linux 5.14
#endif

namespace headroom {

Prefaulter::Prefaulter(std::size_t lead) : m_lead(lead) {
#ifndef HEADROOM_ASAN
    m_thread = std::thread([this] { run(); });
#endif
}

Prefaulter::~Prefaulter() {
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_one();
    if (m_thread.joinable())
        m_thread.join();
}

void Prefaulter::advance(const std::vector<GrowingBlock>& blocks) {
    if (!m_thread.joinable())
        return;
    {
        std::lock_guard lock(m_mutex);
        m_pending = blocks;
        m_fresh = true;
    }
    m_wake.notify_one();
}

void Prefaulter::run() {
    constexpr std::size_t kStep = HugePageAllocator<char>::kHugePage;
    // How far each block (by its start) is populated; a block that moved (a column outgrew its reservation
    // and was copied) starts again from its new start.
    std::map<std::uintptr_t, std::uintptr_t> done;
    std::vector<GrowingBlock> blocks;
    while (true) {
        {
            std::unique_lock lock(m_mutex);
            m_wake.wait(lock, [this] { return m_fresh || m_stop; });
            if (m_stop)
                return;
            blocks.swap(m_pending);
            m_fresh = false;
        }
        for (const GrowingBlock& b : blocks) {
            // Only the mapped columns (HugePageAllocator's, 2 MiB aligned); heap blocks are left alone.
            const auto start = reinterpret_cast<std::uintptr_t>(b.data);
            if (b.capacity < HugePageAllocator<char>::kThreshold || start % kStep != 0)
                continue;
            const std::uintptr_t end = start + std::min(b.capacity, b.used + m_lead);
            std::uintptr_t& at = done.try_emplace(start, start).first->second;
            // Whole steps from where the filler is, never behind it: those pages it has faulted itself.
            at = std::max(at, (start + b.used) & ~(kStep - 1));
            while (at + kStep <= end) {
                {
                    std::lock_guard lock(m_mutex);
                    if (m_stop)
                        return;
                }
                if (::madvise(reinterpret_cast<void*>(at), kStep, MADV_POPULATE_WRITE) != 0)
                    break; // unsupported, or the block is gone: the filler faults its pages itself
                at += kStep;
            }
        }
    }
}

} // namespace headroom
