// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>
#include <string>
#include <tuple>
#include <vector>

namespace headroom {

// PYTORCH_CUDA_ALLOC_CONF as the model takes it (c10/cuda/CUDACachingAllocator.cpp, CachingAllocatorConfig).
struct AllocatorSettings {
    bool expandableSegments = false;
    std::uint64_t maxSplitSize = UINT64_MAX; // max_split_size_mb x MiB; UINT64_MAX: unlimited
    // roundup_power2_divisions per power-of-two interval from 1 MiB (index 0) to 32 GiB and beyond (15);
    // 0 or 1: plain 512-byte rounding.
    std::vector<int> roundupPower2Divisions = std::vector<int>(16, 0);
    double garbageCollectionThreshold = 0; // acts only with a memory fraction (as in PyTorch)
    double memoryFraction = 0;             // torch.cuda.set_per_process_memory_fraction; 0: not set
    std::uint64_t deviceMemory = 0;        // cudaMalloc fails past this many reserved bytes; 0: unlimited
};

// Sizes and rules of the allocator, named as in CUDACachingAllocator.cpp.
namespace alloc {
inline constexpr std::uint64_t kMinBlockSize = 512;
inline constexpr std::uint64_t kSmallSize = 1048576;      // largest "small" request
inline constexpr std::uint64_t kSmallBuffer = 2097152;    // small-pool segment
inline constexpr std::uint64_t kMinLargeAlloc = 10485760; // below: a 20 MiB segment
inline constexpr std::uint64_t kLargeBuffer = 20971520;   // large-pool segment for < 10 MiB requests
inline constexpr std::uint64_t kRoundLarge = 2097152;     // larger requests round to 2 MiB
inline constexpr std::uint64_t kMaxNonSplitRounding = 20971520;
std::uint64_t roundSize(std::uint64_t size, const AllocatorSettings& s);
std::uint64_t allocationSize(std::uint64_t roundedSize);
} // namespace alloc

// What the model did that the recording can show: segments reserved and released, OOMs.
struct AllocatorEvent {
    enum class Kind { SegmentAlloc, SegmentFree, SegmentMap, SegmentUnmap, Oom };
    Kind kind = Kind::SegmentAlloc;
    std::uint64_t address = 0;
    std::uint64_t size = 0;
    std::size_t at = 0; // the trace event being replayed when it happened
};

// A model of PyTorch's CUDA caching allocator on one device: best fit per stream over free blocks kept in
// (stream, size, address) order, splitting at the low end, merging freed neighbours, new segments from
// cudaMalloc when nothing fits (released and retried the way PyTorch does when cudaMalloc fails), and
// expandable segments mapped a page at a time.
class CachingAllocatorModel {
public:
    explicit CachingAllocatorModel(AllocatorSettings settings);

    // Where the next new segment goes: the replay of a recording passes the recorded address; a what-if
    // lets the model choose (ascending or descending addresses bound the effect of that choice).
    enum class AddressRule { Ascending, Descending };
    void setAddressRule(AddressRule r) { m_rule = r; }
    void setNextSegmentAddress(std::optional<std::uint64_t> a) { m_nextAddress = a; }

    // The starting state: a segment, and blocks of it that are allocated (the rest is free).
    void addSegment(std::uint64_t address, std::uint64_t size, std::int64_t stream, bool small);
    void markAllocated(std::uint64_t address, std::uint64_t size);
    // A recording placed a block at `address`, inside what the starting state has as free space but not at
    // its start: when the gap before it is one no split could have left free, it was the hidden remainder
    // of the starting block before it (see markAllocated), which takes it back. Only for blocks given by
    // markAllocated; returns whether it did.
    bool claimHiddenRemainder(std::uint64_t address);

    // malloc of `requested` bytes on `stream`; the block's address, or nothing on out-of-memory.
    std::optional<std::uint64_t> malloc(std::uint64_t requested, std::int64_t stream, std::size_t at);
    // The block at `address` returns to the pool (free_completed); false if no allocated block is there.
    bool free(std::uint64_t address, std::size_t at);
    void emptyCache(std::size_t at);

    std::uint64_t reserved() const { return m_reserved; }
    std::uint64_t allocated() const { return m_allocated; }
    std::uint64_t largestFreeBlock() const;
    // The bytes cached (reserved, not allocated) for `stream` in the small or the large pool: what that
    // stream's next requests of that kind can take without a new segment.
    std::uint64_t freeBytes(std::int64_t stream, bool small) const;
    // The free blocks, large pool then small, as (stream, size, address). Two states with the same segments
    // and the same free blocks go on alike under the same requests: a replay of identical layers can tell
    // when they start repeating.
    std::vector<std::tuple<std::int64_t, std::uint64_t, std::uint64_t>> freeBlocks() const {
        std::vector<std::tuple<std::int64_t, std::uint64_t, std::uint64_t>> out(m_free[0].begin(),
                                                                                m_free[0].end());
        out.insert(out.end(), m_free[1].begin(), m_free[1].end());
        out.emplace_back(-1, m_free[0].size(), 0); // where the large pool ends
        return out;
    }
    const std::vector<AllocatorEvent>& events() const { return m_events; }

private:
    struct Block {
        std::uint64_t size = 0;
        std::uint64_t segment = 0; // the segment's base address
        std::int64_t stream = 0;
        bool small = false;
        bool allocated = false;
        std::uint64_t freedAt = 0; // gc clock when it became free
        bool expandable = false;   // its segment's, which never changes: no segment lookup per split
    };
    struct Segment {
        std::uint64_t size = 0; // expandable: the mapped size
        std::int64_t stream = 0;
        bool small = false;
        bool expandable = false;
    };
    using Key = std::tuple<std::int64_t, std::uint64_t, std::uint64_t>; // stream, size, address

    std::set<Key>& pool(bool small) { return m_free[small ? 1 : 0]; }
    void insertFree(std::uint64_t address) { insertFree(address, m_blocks.at(address)); }
    void insertFree(std::uint64_t address, Block& b);
    void eraseFree(std::uint64_t address);
    // PyTorch's should_split for block b serving a request of `size` with `remaining` bytes left over.
    bool wouldSplit(const Block& b, std::uint64_t size, std::uint64_t remaining) const;
    std::unordered_set<std::uint64_t> m_startBlocks; // blocks markAllocated gave, while they live
    std::optional<std::uint64_t> freeBlock(std::uint64_t size, std::int64_t stream, bool small);
    std::optional<std::uint64_t> newSegment(std::uint64_t size, std::int64_t stream, bool small,
                                            std::size_t at);
    std::optional<std::uint64_t> expand(std::uint64_t size, std::int64_t stream, bool small, std::size_t at);
    bool cudaMalloc(std::uint64_t bytes) const;
    std::uint64_t chooseAddress(std::uint64_t size);
    bool wholeSegment(std::uint64_t address, const Block& b) const;
    void releaseSegment(std::uint64_t address, std::size_t at);
    bool releaseAvailable(std::uint64_t size, std::int64_t stream, bool small, std::size_t at);
    void releaseCached(std::size_t at);
    void unmapExpandableTails(bool small, std::size_t at);
    void garbageCollect(std::size_t at);
    std::uint64_t takeBlock(std::uint64_t address, std::uint64_t size);

    AllocatorSettings m_s;
    AddressRule m_rule = AddressRule::Ascending;
    std::optional<std::uint64_t> m_nextAddress;
    std::map<std::uint64_t, Block> m_blocks;     // every block by address
    std::map<std::uint64_t, Segment> m_segments; // by base address
    std::set<Key> m_free[2];                     // large, small
    std::set<std::uint64_t> m_wholeFree;         // free blocks that are whole (non-expandable) segments
    std::uint64_t m_reserved = 0, m_allocated = 0;
    std::uint64_t m_low = UINT64_MAX, m_high = 0; // address range used so far
    std::uint64_t m_gcClock = 0;
    std::vector<AllocatorEvent> m_events;
};

} // namespace headroom
