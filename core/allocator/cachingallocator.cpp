// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/allocator/cachingallocator.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace headroom {

namespace alloc {

// CachingAllocatorConfig::roundup_power2_divisions(size): intervals start at 1 MiB (2^20) and the last
// one covers everything from 2^35 up.
static int divisionsFor(std::uint64_t size, const AllocatorSettings& s) {
    if (s.roundupPower2Divisions.empty())
        return 0;
    const int log = 63 - std::countl_zero(size);
    const int last = static_cast<int>(s.roundupPower2Divisions.size()) - 1;
    const int index = std::clamp(log - 20, 0, last);
    return s.roundupPower2Divisions[static_cast<std::size_t>(index)];
}

// roundup_power2_next_division: the next of `divisions` equal steps between two powers of two.
static std::uint64_t nextDivision(std::uint64_t size, int divisions) {
    if (std::has_single_bit(size))
        return size;
    const std::uint64_t floor = std::bit_floor(size);
    const std::uint64_t step = floor >> (63 - std::countl_zero(static_cast<std::uint64_t>(divisions)));
    if (step == 0)
        return floor << 1;
    const std::uint64_t down = size & ~(step - 1);
    return down == size ? size : down + step;
}

std::uint64_t roundSize(std::uint64_t size, const AllocatorSettings& s) {
    if (size < kMinBlockSize)
        return kMinBlockSize;
    const int divisions = divisionsFor(size, s);
    if (divisions > 1 && size > kMinBlockSize * static_cast<std::uint64_t>(divisions))
        return nextDivision(size, divisions);
    return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

std::uint64_t allocationSize(std::uint64_t size) {
    if (size <= kSmallSize)
        return kSmallBuffer;
    if (size < kMinLargeAlloc)
        return kLargeBuffer;
    return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}

} // namespace alloc

using namespace alloc;

namespace {
constexpr std::uint64_t kAscendingBase = 1ull << 40;
constexpr std::uint64_t kDescendingTop = 1ull << 47;
constexpr std::uint64_t kExpandableReservation = 1ull << 40; // virtual range of one expandable segment
std::uint64_t pageOf(bool small) {
    return small ? kSmallBuffer : kLargeBuffer;
}
} // namespace

CachingAllocatorModel::CachingAllocatorModel(AllocatorSettings settings) : m_s(std::move(settings)) {}

void CachingAllocatorModel::insertFree(std::uint64_t address, Block& b) {
    b.freedAt = m_gcClock;
    pool(b.small).insert({b.stream, b.size, address});
    if (wholeSegment(address, b))
        m_wholeFree.insert(address);
}

void CachingAllocatorModel::eraseFree(std::uint64_t address) {
    const Block& b = m_blocks.at(address);
    pool(b.small).erase({b.stream, b.size, address});
    m_wholeFree.erase(address);
}

void CachingAllocatorModel::addSegment(std::uint64_t address, std::uint64_t size, std::int64_t stream,
                                       bool small) {
    if (size == 0 || m_segments.count(address))
        return;
    m_segments[address] = {size, stream, small, false};
    insertFree(address, m_blocks[address] = {size, address, stream, small, false, 0, false});
    m_reserved += size;
    m_low = std::min(m_low, address);
    m_high = std::max(m_high, address + size);
}

bool CachingAllocatorModel::wouldSplit(const Block& b, std::uint64_t size, std::uint64_t remaining) const {
    // should_split: small pool and expandable segments keep any remainder of 512 bytes or more; the large
    // pool splits blocks under max_split_size when more than 1 MiB would remain.
    return (b.small || b.expandable) ? remaining >= kMinBlockSize
                                     : (size < m_s.maxSplitSize && remaining > kSmallSize);
}

void CachingAllocatorModel::markAllocated(std::uint64_t address, std::uint64_t size) {
    auto it = m_blocks.upper_bound(address);
    if (it == m_blocks.begin())
        return;
    --it;
    if (it->second.allocated || address + size > it->first + it->second.size)
        return; // not inside one free block: the starting state is inconsistent here; leave it
    // A block live when the recording began was carved from a free block by should_split: a remainder too
    // small to split off stayed part of it, and the trace gives only the requested size. So a gap after a
    // live block that no split could have left free belongs to that block; replaying it as a free block
    // PyTorch never had makes best fit choose differently from then on (the 512- and 1024-token CS336
    // training runs put 1,400 blocks elsewhere). Blocks are marked in address order, so the gap before
    // this one is checked against the block before it, and the gap after it against the segment's end.
    std::uint64_t start = it->first;
    eraseFree(start);
    if (address > start) {
        const std::uint64_t gap = address - start;
        Block back = it->second;
        back.size = it->second.size - gap;
        auto before = it == m_blocks.begin() ? m_blocks.end() : std::prev(it);
        if (before != m_blocks.end() && before->second.allocated && before->second.segment == it->second.segment &&
            before->first + before->second.size == start && !wouldSplit(before->second, before->second.size, gap)) {
            before->second.size += gap; // the gap was never free
            m_allocated += gap;
            m_blocks.erase(start);
        } else {
            it->second.size = gap; // stays free
            insertFree(start);
        }
        m_blocks[address] = back;
        start = address;
    }
    Block& b = m_blocks.at(start);
    if (!wouldSplit(b, size, b.size - std::min(b.size, size)))
        size = b.size;
    if (b.size > size) {
        Block rest = b;
        rest.size = b.size - size;
        b.size = size;
        m_blocks[start + size] = rest;
        insertFree(start + size);
    }
    m_blocks.at(start).allocated = true;
    m_allocated += size;
    m_startBlocks.insert(start);
}

bool CachingAllocatorModel::claimHiddenRemainder(std::uint64_t address) {
    auto it = m_blocks.upper_bound(address);
    if (it == m_blocks.begin())
        return false;
    --it;
    if (it->second.allocated || it->first == address || it == m_blocks.begin())
        return false;
    const auto before = std::prev(it);
    const std::uint64_t gap = address - it->first;
    if (!before->second.allocated || !m_startBlocks.count(before->first) ||
        before->second.segment != it->second.segment || before->first + before->second.size != it->first ||
        wouldSplit(before->second, before->second.size, gap))
        return false;
    const std::uint64_t freeStart = it->first;
    Block rest = it->second;
    eraseFree(freeStart);
    m_blocks.erase(freeStart);
    before->second.size += gap;
    m_allocated += gap;
    rest.size -= gap;
    m_blocks[address] = rest;
    insertFree(address);
    return true;
}

bool CachingAllocatorModel::cudaMalloc(std::uint64_t bytes) const {
    if (m_s.deviceMemory == 0)
        return true;
    const double limit = m_s.memoryFraction > 0 ? m_s.memoryFraction * static_cast<double>(m_s.deviceMemory)
                                                : static_cast<double>(m_s.deviceMemory);
    return static_cast<double>(m_reserved + bytes) <= limit;
}

std::uint64_t CachingAllocatorModel::chooseAddress(std::uint64_t size) {
    if (m_nextAddress) {
        const std::uint64_t a = *m_nextAddress;
        m_nextAddress.reset();
        // A recorded address the model's own segments already cover cannot be honoured.
        auto next = m_segments.lower_bound(a);
        const bool clearAfter = next == m_segments.end() || next->first >= a + size;
        bool clearBefore = true;
        if (next != m_segments.begin()) {
            auto prev = std::prev(next);
            clearBefore =
                prev->first + std::max(prev->second.size, prev->second.expandable ? kExpandableReservation
                                                                                  : prev->second.size) <=
                a;
        }
        if (clearAfter && clearBefore && a > 0)
            return a;
    }
    if (m_rule == AddressRule::Ascending) {
        const std::uint64_t base = m_high == 0 ? kAscendingBase : m_high;
        return (base + kSmallBuffer - 1) / kSmallBuffer * kSmallBuffer;
    }
    const std::uint64_t top = m_low == UINT64_MAX ? kDescendingTop : m_low;
    return (top - size) / kSmallBuffer * kSmallBuffer;
}

std::optional<std::uint64_t> CachingAllocatorModel::freeBlock(std::uint64_t size, std::int64_t stream,
                                                              bool small) {
    auto& p = pool(small);
    auto it = p.lower_bound({stream, size, 0});
    if (it == p.end() || std::get<0>(*it) != stream)
        return std::nullopt;
    const std::uint64_t address = std::get<2>(*it);
    if (!m_blocks.at(address).expandable) {
        const std::uint64_t found = std::get<1>(*it);
        // Do not return an oversized block for a small request, nor a much larger one for a large request.
        if (size < m_s.maxSplitSize && found >= m_s.maxSplitSize)
            return std::nullopt;
        if (size >= m_s.maxSplitSize && found >= size + kMaxNonSplitRounding)
            return std::nullopt;
    }
    p.erase(it);
    m_wholeFree.erase(address);
    return address;
}

std::optional<std::uint64_t> CachingAllocatorModel::newSegment(std::uint64_t size, std::int64_t stream,
                                                               bool small, std::size_t at) {
    if (!cudaMalloc(size))
        return std::nullopt;
    const std::uint64_t address = chooseAddress(size);
    m_segments[address] = {size, stream, small, false};
    m_blocks[address] = {size, address, stream, small, false, m_gcClock, false};
    m_reserved += size;
    m_low = std::min(m_low, address);
    m_high = std::max(m_high, address + size);
    m_events.push_back({AllocatorEvent::Kind::SegmentAlloc, address, size, at});
    return address;
}

std::optional<std::uint64_t> CachingAllocatorModel::expand(std::uint64_t size, std::int64_t stream,
                                                           bool small, std::size_t at) {
    // One expandable segment per (stream, pool), mapped in pages at its end.
    std::uint64_t base = 0;
    bool found = false;
    for (auto& [b, seg] : m_segments)
        if (seg.expandable && seg.stream == stream && seg.small == small) {
            base = b;
            found = true;
            break;
        }
    if (!found) {
        if (m_rule == AddressRule::Ascending) {
            base = std::max(m_high, kAscendingBase);
            base = (base + kSmallBuffer - 1) / kSmallBuffer * kSmallBuffer;
            m_high = base + kExpandableReservation;
        } else {
            base = (std::min(m_low, kDescendingTop) - kExpandableReservation) / kSmallBuffer * kSmallBuffer;
            m_low = base;
        }
        m_segments[base] = {0, stream, small, true};
    }
    Segment& seg = m_segments.at(base);
    const std::uint64_t end = base + seg.size;
    // A free block ending at the mapped end grows into the pages mapped after it.
    std::uint64_t tail = 0, tailSize = 0;
    if (seg.size > 0) {
        auto it = m_blocks.lower_bound(end);
        if (it != m_blocks.begin()) {
            --it;
            if (it->second.segment == base && !it->second.allocated && it->first + it->second.size == end) {
                tail = it->first;
                tailSize = it->second.size;
            }
        }
    }
    const std::uint64_t page = pageOf(small);
    const std::uint64_t map = (size - tailSize + page - 1) / page * page;
    if (!cudaMalloc(map))
        return std::nullopt;
    m_reserved += map;
    seg.size += map;
    m_events.push_back({AllocatorEvent::Kind::SegmentMap, end, map, at});
    if (tailSize > 0) {
        eraseFree(tail);
        m_blocks.at(tail).size += map;
        return tail;
    }
    m_blocks[end] = {map, base, stream, small, false, m_gcClock, true};
    return end;
}

std::uint64_t CachingAllocatorModel::takeBlock(std::uint64_t address, std::uint64_t size) {
    const auto it = m_blocks.find(address);
    Block& b = it->second;
    const std::uint64_t remaining = b.size - size;
    if (wouldSplit(b, size, remaining)) {
        Block rest = b;
        rest.size = remaining;
        b.size = size;
        // Map nodes stay where they are when others are inserted, so b is still the block.
        insertFree(address + size, m_blocks.emplace_hint(std::next(it), address + size, rest)->second);
    }
    b.allocated = true;
    m_allocated += b.size;
    return address;
}

std::optional<std::uint64_t> CachingAllocatorModel::malloc(std::uint64_t requested, std::int64_t stream,
                                                           std::size_t at) {
    // No device has 64 TiB: a larger request (a corrupt trace) is an out-of-memory, not an overflow.
    if (requested > (1ull << 46)) {
        m_events.push_back({AllocatorEvent::Kind::Oom, 0, requested, at});
        return std::nullopt;
    }
    const std::uint64_t size = roundSize(requested, m_s);
    const bool small = size <= kSmallSize;
    if (m_s.garbageCollectionThreshold > 0 && m_s.memoryFraction > 0)
        garbageCollect(at);
    ++m_gcClock;
    std::optional<std::uint64_t> b = freeBlock(size, stream, small);
    if (!b && m_s.expandableSegments) {
        b = expand(size, stream, small, at);
        if (!b) {
            releaseCached(at);
            b = expand(size, stream, small, at);
        }
    } else if (!b) {
        const std::uint64_t segment = allocationSize(size);
        b = newSegment(segment, stream, small, at);
        if (!b && releaseAvailable(size, stream, small, at))
            b = newSegment(segment, stream, small, at);
        if (!b) {
            releaseCached(at);
            b = newSegment(segment, stream, small, at);
        }
    }
    if (!b) {
        m_events.push_back({AllocatorEvent::Kind::Oom, 0, size, at});
        return std::nullopt;
    }
    return takeBlock(*b, size);
}

bool CachingAllocatorModel::free(std::uint64_t address, std::size_t) {
    auto it = m_blocks.find(address);
    if (it == m_blocks.end() || !it->second.allocated)
        return false;
    Block& b = it->second;
    b.allocated = false;
    m_allocated -= b.size;
    m_startBlocks.erase(address);
    std::uint64_t start = address;
    // Merge with free neighbours of the same segment.
    if (it != m_blocks.begin()) {
        auto prev = std::prev(it);
        if (prev->second.segment == b.segment && !prev->second.allocated &&
            prev->first + prev->second.size == address) {
            eraseFree(prev->first);
            prev->second.size += b.size;
            m_blocks.erase(it);
            it = prev;
            start = prev->first;
        }
    }
    auto next = std::next(it);
    if (next != m_blocks.end() && next->second.segment == it->second.segment && !next->second.allocated &&
        start + it->second.size == next->first) {
        eraseFree(next->first);
        it->second.size += next->second.size;
        m_blocks.erase(next);
    }
    insertFree(start, it->second);
    return true;
}

bool CachingAllocatorModel::wholeSegment(std::uint64_t address, const Block& b) const {
    if (b.expandable || b.allocated || address != b.segment)
        return false;
    return b.size == m_segments.at(b.segment).size;
}

void CachingAllocatorModel::releaseSegment(std::uint64_t address, std::size_t at) {
    const Block b = m_blocks.at(address);
    eraseFree(address);
    m_blocks.erase(address);
    m_segments.erase(address);
    m_reserved -= b.size;
    m_events.push_back({AllocatorEvent::Kind::SegmentFree, address, b.size, at});
}

bool CachingAllocatorModel::releaseAvailable(std::uint64_t size, std::int64_t stream, bool small,
                                             std::size_t at) {
    // release_available_cached_blocks: only with max_split_size set; frees oversize cached blocks, the one
    // that fits or else the largest first, until the request's size is released.
    if (m_s.maxSplitSize == UINT64_MAX)
        return false;
    auto& p = pool(small);
    const std::uint64_t keySize = size < m_s.maxSplitSize ? m_s.maxSplitSize : size;
    auto it = p.lower_bound({stream, keySize, 0});
    if (it == p.end() || std::get<0>(*it) != stream) {
        if (it == p.begin())
            return false;
        std::uint64_t released = 0;
        --it;
        while (released < keySize && std::get<1>(*it) >= m_s.maxSplitSize && std::get<0>(*it) == stream) {
            auto cur = it;
            const bool first = cur == p.begin();
            if (!first)
                --it;
            const std::uint64_t address = std::get<2>(*cur);
            if (wholeSegment(address, m_blocks.at(address))) {
                released += std::get<1>(*cur);
                releaseSegment(address, at);
            }
            if (first)
                break;
        }
        return released >= keySize;
    }
    const std::uint64_t address = std::get<2>(*it);
    if (!wholeSegment(address, m_blocks.at(address)))
        return false;
    releaseSegment(address, at);
    return true;
}

void CachingAllocatorModel::releaseCached(std::size_t at) {
    // release_cached_blocks calls release_blocks on the large pool, then on the small one. Each walks its
    // pool's free blocks in the pool's own order, (stream, size, address) (BlockComparatorSize), and gives
    // every block that is a whole segment back to the driver: the smallest first, not the lowest address.
    // An expandable segment's free pages are unmapped after the pool's whole segments (release_blocks
    // gathers them into to_unmap first); the model unmaps the free pages at a segment's end.
    // The whole free segments are indexed as blocks enter and leave the pools (m_wholeFree), so a release
    // near the device's limit need not walk every free block; they go in the pool's order.
    for (const bool small : {false, true}) {
        std::vector<Key> whole;
        for (std::uint64_t base : m_wholeFree) {
            const Block& b = m_blocks.at(base);
            if (b.small == small)
                whole.push_back({b.stream, b.size, base});
        }
        std::sort(whole.begin(), whole.end());
        for (const Key& k : whole)
            releaseSegment(std::get<2>(k), at);
        unmapExpandableTails(small, at);
    }
}

void CachingAllocatorModel::unmapExpandableTails(bool small, std::size_t at) {
    if (!m_s.expandableSegments)
        return; // no expandable segment to unmap
    for (auto& [base, seg] : m_segments) {
        if (!seg.expandable || seg.size == 0 || seg.small != small)
            continue;
        const std::uint64_t end = base + seg.size;
        auto it = m_blocks.lower_bound(end);
        if (it == m_blocks.begin())
            continue;
        --it;
        if (it->second.segment != base || it->second.allocated)
            continue;
        const std::uint64_t page = pageOf(seg.small);
        const std::uint64_t keep = (it->first - base + page - 1) / page * page + base;
        if (keep >= end)
            continue;
        const std::uint64_t unmap = end - keep;
        eraseFree(it->first);
        if (keep > it->first) {
            it->second.size = keep - it->first;
            insertFree(it->first);
        } else {
            m_blocks.erase(it);
        }
        seg.size -= unmap;
        m_reserved -= unmap;
        m_events.push_back({AllocatorEvent::Kind::SegmentUnmap, keep, unmap, at});
    }
}

void CachingAllocatorModel::emptyCache(std::size_t at) {
    releaseCached(at);
}

void CachingAllocatorModel::garbageCollect(std::size_t at) {
    // garbage_collect_cached_blocks: above threshold x the allowed memory, free whole cached segments of
    // the large pool, oldest (by allocations since they were freed) first, until back under it.
    if (m_s.deviceMemory == 0)
        return;
    const double allowed = m_s.memoryFraction * static_cast<double>(m_s.deviceMemory);
    const double threshold = m_s.garbageCollectionThreshold * allowed;
    if (static_cast<double>(m_reserved) <= threshold)
        return;
    const double target = static_cast<double>(m_reserved) - threshold;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> aged; // age, address
    for (const Key& k : pool(false))
        if (wholeSegment(std::get<2>(k), m_blocks.at(std::get<2>(k))))
            aged.push_back({m_gcClock - m_blocks.at(std::get<2>(k)).freedAt, std::get<2>(k)});
    double reclaimed = 0;
    while (reclaimed < target && !aged.empty()) {
        double total = 0;
        for (const auto& a : aged)
            total += static_cast<double>(a.first);
        const double mean = total / static_cast<double>(aged.size());
        bool freed = false;
        for (auto it = aged.begin(); it != aged.end() && reclaimed < target;) {
            if (static_cast<double>(it->first) >= mean) {
                reclaimed += static_cast<double>(m_blocks.at(it->second).size);
                releaseSegment(it->second, at);
                it = aged.erase(it);
                freed = true;
            } else {
                ++it;
            }
        }
        if (!freed)
            break;
    }
}

std::uint64_t CachingAllocatorModel::freeBytes(std::int64_t stream, bool small) const {
    const std::set<Key>& p = m_free[small ? 1 : 0];
    std::uint64_t sum = 0;
    for (auto it = p.lower_bound({stream, 0, 0}); it != p.end() && std::get<0>(*it) == stream; ++it)
        sum += std::get<1>(*it);
    return sum;
}

std::uint64_t CachingAllocatorModel::largestFreeBlock() const {
    // The free sets are ordered by (stream, size, address): each stream's largest block is its last, so
    // this costs a lookup per stream, not a walk over every free block.
    std::uint64_t best = 0;
    for (const auto& p : m_free)
        for (auto it = p.begin(); it != p.end();) {
            const std::int64_t stream = std::get<0>(*it);
            auto next = p.upper_bound({stream, UINT64_MAX, UINT64_MAX});
            best = std::max(best, std::get<1>(*std::prev(next)));
            it = next;
        }
    return best;
}

} // namespace headroom
