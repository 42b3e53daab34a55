// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/stackedseries.h"

#include "core/checkednumbers.h"

#include <algorithm>

namespace headroom {

StackedSeries::StackedSeries(const TraceIndex& index, const std::vector<std::uint8_t>& classOf,
                             std::uint8_t rest) {
    const DeviceTrace& d = index.device();
    const auto& all = index.allocations();
    if (d.hasTotals || classOf.size() != all.size() || rest >= kClasses)
        return;
    m_device = &d;
    m_rest = rest;
    m_allocationClass = classOf;
    const std::size_t n = d.entries();
    m_class.assign(n, rest);
    Bytes bytes{};
    // In start order, so that when an address is reused without a free (the index closes the old lifetime
    // at the new one's alloc), the event is charged to the new allocation, whose size it adds.
    for (std::size_t i = 0; i < all.size(); ++i) {
        const Allocation& a = all[i];
        const std::uint8_t c = std::min<std::uint8_t>(classOf[i], kClasses - 1);
        if (a.start == kBeforeFirstEvent)
            bytes[c] = saturatingAdd(bytes[c], a.size);
        else if (a.start < n)
            m_class[a.start] = c;
        if (a.end < n && eventEffect(d.action[a.end]).allocated < 0)
            m_class[a.end] = c;
    }
    // What was live before the first event: the index's initial state, of which the allocations it knows
    // explain what they can; the rest (or, in a damaged file, the excess) is `rest`'s.
    std::int64_t known = 0;
    for (std::int64_t b : bytes)
        known = saturatingAdd(known, b);
    bytes[rest] =
        saturatingAdd(bytes[rest], saturatingSub(index.stateAfter(kBeforeFirstEvent).allocated, known));
    m_checkpoints.reserve(n / kStride + 1);
    for (std::size_t i = 0; i < n; ++i) {
        if (i % kStride == 0)
            m_checkpoints.push_back(bytes);
        const int sign = eventEffect(d.action[i]).allocated;
        if (sign != 0) {
            std::int64_t& b = bytes[m_class[i]];
            b = saturatingStep(b, sign, d.size[i]);
        }
    }
    if (n % kStride == 0)
        m_checkpoints.push_back(bytes);
}

StackedSeries::Bytes StackedSeries::after(std::size_t event) const {
    if (!valid())
        return {};
    const std::size_t n = m_class.size();
    const std::size_t position = event == kBeforeFirstEvent ? 0 : std::min(event + 1, n);
    const std::size_t k = std::min(position / kStride, m_checkpoints.size() - 1);
    Bytes bytes = m_checkpoints[k];
    for (std::size_t i = k * kStride; i < position; ++i) {
        const int sign = eventEffect(m_device->action[i]).allocated;
        if (sign != 0) {
            std::int64_t& b = bytes[m_class[i]];
            b = saturatingStep(b, sign, m_device->size[i]);
        }
    }
    return bytes;
}

} // namespace headroom
