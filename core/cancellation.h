// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/error.h"

#include <atomic>
#include <memory>

namespace headroom {

// A flag that long work (reading a trace, a replay, a sweep) polls to stop early. Copies share the flag,
// so whoever asks for the work can cancel it while the worker holds its own copy; the work then throws
// Error("", "cancelled") from check().
class Cancellation {
public:
    Cancellation() : m_flag(std::make_shared<std::atomic<bool>>(false)) {}
    void cancel() const { m_flag->store(true, std::memory_order_relaxed); }
    bool cancelled() const { return m_flag->load(std::memory_order_relaxed); }
    void check() const {
        if (cancelled())
            throw Error("", "cancelled");
    }

private:
    std::shared_ptr<std::atomic<bool>> m_flag;
};

} // namespace headroom
