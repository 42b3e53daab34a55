// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/traceindex.h"

#include <array>
#include <cstdint>
#include <vector>

namespace headroom {

// A device's allocated bytes split into classes, one class per allocation (memory by category over
// time): the bytes of every class after any event, exactly, without storing a row per event. Each event
// that changes allocated memory is charged to the class of the allocation it opens or frees (one byte per
// event), and the classes' bytes are kept every kStride events (8 classes x 8 bytes per 256 events); a
// query starts at the checkpoint before it and applies at most kStride events. The classes sum to the
// index's allocated series at every event, byte for byte: both apply the same events to the same start.
class StackedSeries {
public:
    static constexpr std::size_t kClasses = 8, kStride = 256;
    using Bytes = std::array<std::int64_t, kClasses>;

    StackedSeries() = default;
    // `classOf` holds one class (< kClasses) per index.allocations() entry. Bytes the allocations before the
    // trace do not explain (the initial allocated state is the final one walked back) go to `rest`. A trace
    // that records totals instead of allocations has no split (valid() is false).
    StackedSeries(const TraceIndex& index, const std::vector<std::uint8_t>& classOf, std::uint8_t rest);

    bool valid() const { return !m_checkpoints.empty(); }
    std::size_t events() const { return m_class.size(); }
    // Each class's bytes after event e (kBeforeFirstEvent: before the first).
    Bytes after(std::size_t event) const;
    // The class of allocation `id` (index.allocations() order); `rest` when out of range.
    std::uint8_t classOf(std::size_t id) const {
        return id < m_allocationClass.size() ? m_allocationClass[id] : m_rest;
    }

private:
    const DeviceTrace* m_device = nullptr;
    BigVector<std::uint8_t> m_class; // per event: the class its allocated change is charged to
    std::vector<std::uint8_t> m_allocationClass;
    std::uint8_t m_rest = kClasses - 1;
    std::vector<Bytes> m_checkpoints; // [k]: the bytes before event k * kStride
};

} // namespace headroom
