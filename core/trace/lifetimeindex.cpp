// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/lifetimeindex.h"

#include <algorithm>

namespace headroom {

LifetimeIndex::LifetimeIndex(const BigVector<Allocation>& items, std::size_t positions) {
    const std::size_t buckets = positions / kBucket + 1;
    while (m_leaves < buckets)
        m_leaves *= 2;
    m_node.resize(2 * m_leaves);
    for (std::size_t id = 0; id < items.size(); ++id) {
        const std::size_t s = startPos(items[id]), e = endPos(items[id]);
        // Buckets covered entirely: [ceil(s / K), floor(e / K) - 1].
        std::size_t lo = (s + kBucket - 1) / kBucket, hi = e / kBucket; // half-open [lo, hi)
        if (lo >= hi)
            continue;
        for (lo += m_leaves, hi += m_leaves; lo < hi; lo /= 2, hi /= 2) {
            if (lo & 1)
                m_node[lo++].push_back(static_cast<std::uint32_t>(id));
            if (hi & 1)
                m_node[--hi].push_back(static_cast<std::uint32_t>(id));
        }
    }
    // Counting sort by end bucket.
    m_endOffset.assign(buckets + 2, 0);
    for (const Allocation& a : items)
        ++m_endOffset[std::min(endPos(a) / kBucket, buckets) + 1];
    for (std::size_t b = 1; b < m_endOffset.size(); ++b)
        m_endOffset[b] += m_endOffset[b - 1];
    m_endIds.resize(items.size());
    std::vector<std::size_t> fill(m_endOffset.begin(), m_endOffset.end() - 1);
    for (std::size_t id = 0; id < items.size(); ++id)
        m_endIds[fill[std::min(endPos(items[id]) / kBucket, buckets)]++] = static_cast<std::uint32_t>(id);
}

void LifetimeIndex::collect(const BigVector<Allocation>& items, std::size_t p,
                            std::vector<const Allocation*>& out) const {
    if (m_node.empty())
        return;
    const std::size_t b = p / kBucket, bucketStart = b * kBucket;
    // Live through the whole bucket.
    if (b < m_leaves)
        for (std::size_t node = b + m_leaves; node >= 1; node /= 2)
            for (std::uint32_t id : m_node[node])
                out.push_back(&items[id]);
    // Starting inside the bucket, up to p (a contiguous run of the start-sorted items).
    auto it = std::upper_bound(items.begin(), items.end(), bucketStart,
                               [](std::size_t pos, const Allocation& a) { return pos < startPos(a); });
    for (; it != items.end() && startPos(*it) <= p; ++it)
        if (endPos(*it) > p)
            out.push_back(&*it);
    // Started at or before the bucket's start and ending inside it, after p.
    if (b + 1 < m_endOffset.size())
        for (std::size_t i = m_endOffset[b]; i < m_endOffset[b + 1]; ++i) {
            const Allocation& a = items[m_endIds[i]];
            if (endPos(a) > p && startPos(a) <= bucketStart)
                out.push_back(&a);
        }
}

} // namespace headroom
