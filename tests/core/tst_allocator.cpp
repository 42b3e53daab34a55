// SPDX-License-Identifier: GPL-3.0-or-later
// The caching-allocator model, rule by rule on hand-built requests (each expected value worked out here
// from CUDACachingAllocator.cpp's rules), and the replay of a real recording.
#include "core/allocator/cachingallocator.h"
#include "core/allocator/replay.h"
#include "core/io/allocatorwhatifjson.h"
#include "core/trace/formats/tracereader.h"
#include "tests/testutil.h"

#include <QDir>
#include <QTest>

#include "core/error.h"

using namespace headroom;
using namespace headroom::test;
using Kind = AllocatorEvent::Kind;

namespace {

constexpr std::uint64_t MiB = 1048576;

std::vector<std::pair<Kind, std::uint64_t>> segmentEvents(const CachingAllocatorModel& m) {
    std::vector<std::pair<Kind, std::uint64_t>> out;
    for (const AllocatorEvent& e : m.events())
        out.push_back({e.kind, e.size});
    return out;
}

std::uint64_t take(CachingAllocatorModel& m, std::uint64_t bytes, std::int64_t stream = 0) {
    const auto a = m.malloc(bytes, stream, 0);
    return a ? *a : 0;
}

} // namespace

class TestAllocator : public QObject {
    Q_OBJECT
private slots:
    void rounding();
    void segmentSizes();
    void smallAndLargePoolsSplit();
    void bestFitPerStream();
    void freedNeighboursMerge();
    void maxSplitSize();
    void releaseOnCudaMallocFailure();
    void releaseAvailableWithMaxSplit();
    void releasesReplayInTheAllocatorsOrder();
    void garbageCollection();
    void expandableSegments();
    void startingStateFromTheSnapshot();
    void decomflReplayReproducesTheRecording();
    void everyRealSnapshotReplaysAtItsAddresses();
};

void TestAllocator::rounding() {
    const AllocatorSettings plain;
    QCOMPARE(alloc::roundSize(1, plain), 512ull);
    QCOMPARE(alloc::roundSize(512, plain), 512ull);
    QCOMPARE(alloc::roundSize(513, plain), 1024ull);
    QCOMPARE(alloc::roundSize(3 * MiB + 1, plain), 3 * MiB + 512);
    // roundup_power2_divisions 4: between 1 and 2 MiB in steps of 256 KiB, between 4 and 8 MiB of 1 MiB.
    AllocatorSettings four;
    std::fill(four.roundupPower2Divisions.begin(), four.roundupPower2Divisions.end(), 4);
    QCOMPARE(alloc::roundSize(1363148, four), 1572864ull); // 1.3 MiB -> 1.5 MiB
    QCOMPARE(alloc::roundSize(5 * MiB + 1, four), 6 * MiB);
    QCOMPARE(alloc::roundSize(4 * MiB, four), 4 * MiB); // a power of two stays
    QCOMPARE(alloc::roundSize(1500, four), 1536ull);    // at most 512 x divisions: plain rounding
}

void TestAllocator::segmentSizes() {
    QCOMPARE(alloc::allocationSize(MiB), 2 * MiB);        // small pool: 2 MiB
    QCOMPARE(alloc::allocationSize(MiB + 512), 20 * MiB); // large, under 10 MiB: 20 MiB
    QCOMPARE(alloc::allocationSize(10 * MiB - 512), 20 * MiB);
    QCOMPARE(alloc::allocationSize(10 * MiB), 10 * MiB); // from 10 MiB: rounded up to 2 MiB
    QCOMPARE(alloc::allocationSize(10 * MiB + 1), 12 * MiB);
}

void TestAllocator::smallAndLargePoolsSplit() {
    CachingAllocatorModel m{AllocatorSettings{}};
    const std::uint64_t a = take(m, 1000);
    const std::uint64_t b = take(m, 1000); // the same 2 MiB segment, right after a's 1,024 bytes
    QCOMPARE(b, a + 1024);
    const std::uint64_t c = take(m, 5 * MiB); // a 20 MiB segment, split (15 MiB > 1 MiB remains)
    const std::uint64_t d = take(m, 5 * MiB);
    QCOMPARE(d, c + 5 * MiB);
    QCOMPARE(m.reserved(), 22 * MiB);
    // 19.5 MiB from a fresh 20 MiB segment leaves 0.5 MiB, not more than 1 MiB: the block is not split.
    take(m, 20447232);
    QCOMPARE(m.allocated(), 2048 + 10 * MiB + 20 * MiB);
    QCOMPARE(segmentEvents(m), (std::vector<std::pair<Kind, std::uint64_t>>{{Kind::SegmentAlloc, 2 * MiB},
                                                                            {Kind::SegmentAlloc, 20 * MiB},
                                                                            {Kind::SegmentAlloc, 20 * MiB}}));
}

void TestAllocator::bestFitPerStream() {
    CachingAllocatorModel m{AllocatorSettings{}};
    const std::uint64_t six = take(m, 12 * MiB); // a 12 MiB segment
    const std::uint64_t four = take(m, 10 * MiB);
    const std::uint64_t otherStream = take(m, 10 * MiB, 1);
    m.free(six, 0);
    m.free(four, 0);
    m.free(otherStream, 0);
    // 3 MiB takes the smallest block that fits on its stream: the 10 MiB one, not stream 1's, not 12.
    QCOMPARE(take(m, 3 * MiB), four);
    const std::uint64_t onOne = take(m, 3 * MiB, 1);
    QCOMPARE(onOne, otherStream);
    QCOMPARE(m.reserved(), 32 * MiB);
}

void TestAllocator::freedNeighboursMerge() {
    CachingAllocatorModel m{AllocatorSettings{}};
    const std::uint64_t a = take(m, 4 * MiB);
    const std::uint64_t b = take(m, 4 * MiB);
    take(m, 4 * MiB);
    m.free(b, 0);
    m.free(a, 0);
    // a and b merged into one 8 MiB block at a's address: an 8 MiB request fits there.
    QCOMPARE(take(m, 8 * MiB), a);
    QCOMPARE(m.reserved(), 20 * MiB);
    QVERIFY(!m.free(a + 512, 0)); // not the start of an allocated block
}

void TestAllocator::maxSplitSize() {
    AllocatorSettings s;
    s.maxSplitSize = 8 * MiB;
    CachingAllocatorModel m(s);
    // 9 MiB >= max_split_size: its 20 MiB segment is not split.
    const std::uint64_t big = take(m, 9 * MiB);
    QCOMPARE(m.allocated(), 20 * MiB);
    m.free(big, 0);
    // A request under max_split_size never takes a block at or above it: a new segment.
    const std::uint64_t two = take(m, 2 * MiB);
    QCOMPARE(m.reserved(), 40 * MiB);
    QVERIFY(two != big);
    // A request at or above it takes the smallest cached block that fits if smaller than size + 20 MiB:
    // the 18 MiB left after the 2 MiB, not the whole 20 MiB segment.
    QCOMPARE(take(m, 9 * MiB), two + 2 * MiB);
    CachingAllocatorModel m2(s);
    const std::uint64_t forty = take(m2, 40 * MiB);
    m2.free(forty, 0);
    take(m2, 12 * MiB); // 40 >= 12 + 20: not taken
    QCOMPARE(m2.reserved(), 52 * MiB);
}

void TestAllocator::releaseOnCudaMallocFailure() {
    AllocatorSettings s;
    s.deviceMemory = 40 * MiB;
    CachingAllocatorModel m(s);
    const std::uint64_t a = take(m, 5 * MiB);
    const std::uint64_t b = take(m, 16 * MiB); // does not fit a's remainder: a second 20 MiB segment
    m.free(a, 0);
    m.free(b, 0);
    // 30 MiB needs a new segment; 40 + 30 > 40, so the cached segments are released and it is retried.
    // release_blocks walks the pool in its (stream, size, address) order: the 16 MiB segment goes first,
    // though the 20 MiB one has the lower address.
    QVERIFY(take(m, 30 * MiB) != 0);
    QCOMPARE(m.reserved(), 30 * MiB);
    QCOMPARE(segmentEvents(m), (std::vector<std::pair<Kind, std::uint64_t>>{{Kind::SegmentAlloc, 20 * MiB},
                                                                            {Kind::SegmentAlloc, 16 * MiB},
                                                                            {Kind::SegmentFree, 16 * MiB},
                                                                            {Kind::SegmentFree, 20 * MiB},
                                                                            {Kind::SegmentAlloc, 30 * MiB}}));
    // Past what the device holds even when empty: an OOM, and nothing changes.
    QCOMPARE(take(m, 20 * MiB), 0ull);
    QCOMPARE(m.events().back().kind, Kind::Oom);
    QCOMPARE(m.reserved(), 30 * MiB);
}

void TestAllocator::releaseAvailableWithMaxSplit() {
    AllocatorSettings s;
    s.maxSplitSize = 8 * MiB;
    s.deviceMemory = 60 * MiB;
    CachingAllocatorModel m(s);
    const std::uint64_t a = take(m, 24 * MiB);
    const std::uint64_t b = take(m, 26 * MiB);
    m.free(a, 0);
    m.free(b, 0);
    // 2 MiB may not use the oversize cached blocks; its 20 MiB segment does not fit beside them (70 > 60),
    // so the oversize block the request's size would take (the smallest at or above max_split_size: 24 MiB)
    // is released first, and only that one.
    QVERIFY(take(m, 2 * MiB) != 0);
    QCOMPARE(m.reserved(), 46 * MiB);
    QCOMPARE(m.events()[2].kind, Kind::SegmentFree);
    QCOMPARE(m.events()[2].size, 24 * MiB);
}

// A recording whose cudaMalloc failed and whose cached segments were released, generated to match what
// PyTorch writes (the shape of a 2024 SQAttn inference snapshot, whose 17th segment event is the release
// of a 26 MiB segment before a 1,036 MiB one at a lower address): the large pool is released smallest
// first, then the small pool, so the replay reproduces every segment event in order.
void TestAllocator::releasesReplayInTheAllocatorsOrder() {
    const std::uint64_t base = 0x7f0000000000ull;
    const std::uint64_t big = 1086324736, mid = 27262976, small = 2 * MiB;
    const std::uint64_t bigAt = base, midAt = base + 0x80000000ull, smallAt = base + 0xC0000000ull;
    std::string events;
    auto event = [&](const char* action, std::uint64_t addr, std::uint64_t size) {
        static int t = 0;
        events += std::string(events.empty() ? "" : ", ") + R"({"action": ")" + action + R"(", "addr": )" +
                  std::to_string(addr) + R"(, "size": )" + std::to_string(size) +
                  R"(, "stream": 0, "time_us": )" + std::to_string(++t) + "}";
    };
    event("segment_alloc", bigAt, big);
    event("alloc", bigAt, big);
    event("segment_alloc", midAt, mid);
    event("alloc", midAt, mid);
    event("segment_alloc", smallAt, small);
    event("alloc", smallAt, 4096);
    for (auto [at, size] : {std::pair{bigAt, big}, {midAt, mid}, {smallAt, std::uint64_t(4096)}}) {
        event("free_requested", at, size);
        event("free_completed", at, size);
    }
    // cudaMalloc of 2 GiB failed: release_cached_blocks, then the retry.
    event("segment_free", midAt, mid);
    event("segment_free", bigAt, big);
    event("segment_free", smallAt, small);
    event("segment_alloc", bigAt, 2048 * MiB);
    event("alloc", bigAt, 2048 * MiB);
    const std::string snapshot = R"({"segments": [{"device": 0, "address": )" + std::to_string(bigAt) +
                                 R"(, "total_size": )" + std::to_string(2048 * MiB) +
                                 R"(, "stream": 0, "segment_type": "large", "blocks": [{"address": )" +
                                 std::to_string(bigAt) + R"(, "size": )" + std::to_string(2048 * MiB) +
                                 R"(, "requested_size": )" + std::to_string(2048 * MiB) +
                                 R"(, "state": "active_allocated"}]}], "device_traces": [[)" + events + "]]}";
    const Trace trace = readTrace(snapshot);
    ReplayOptions o;
    o.recordedAddresses = true;
    const ReplayResult r = replayDevice(trace.devices.at(0), o);
    QVERIFY2(r.matchesRecording, r.firstDifference.c_str());
    QCOMPARE(r.segmentFrees, 3);
    // Ordered by address instead, the 1,036 MiB segment would have gone first.
    std::vector<std::uint64_t> freed;
    for (const AllocatorEvent& e : r.events)
        if (e.kind == Kind::SegmentFree)
            freed.push_back(e.size);
    QCOMPARE(freed, (std::vector<std::uint64_t>{mid, big, small}));
}

void TestAllocator::garbageCollection() {
    AllocatorSettings s;
    s.deviceMemory = 100 * MiB;
    s.memoryFraction = 0.5;             // 50 MiB allowed
    s.garbageCollectionThreshold = 0.5; // collect above 25 MiB reserved
    CachingAllocatorModel m(s);
    const std::uint64_t a = take(m, 12 * MiB);
    const std::uint64_t b = take(m, 14 * MiB);
    m.free(a, 0);
    m.free(b, 0);
    QCOMPARE(m.reserved(), 26 * MiB);
    take(m, 1000); // 26 > 25: cached segments are collected (equally old: lowest first) until under
    QCOMPARE(m.events()[2].kind, Kind::SegmentFree);
    QCOMPARE(m.reserved(), 14 * MiB + 2 * MiB);
    // Without a memory fraction PyTorch does not collect.
    AllocatorSettings off = s;
    off.memoryFraction = 0;
    CachingAllocatorModel n(off);
    const std::uint64_t c = take(n, 12 * MiB);
    n.free(c, 0);
    take(n, 14 * MiB);
    take(n, 1000);
    QCOMPARE(n.reserved(), 12 * MiB + 14 * MiB + 2 * MiB);
}

void TestAllocator::expandableSegments() {
    AllocatorSettings s;
    s.expandableSegments = true;
    CachingAllocatorModel m(s);
    const std::uint64_t a = take(m, 5 * MiB); // maps one 20 MiB page
    QCOMPARE(m.reserved(), 20 * MiB);
    const std::uint64_t b = take(m, 5 * MiB); // from what is mapped
    QCOMPARE(b, a + 5 * MiB);
    // 15 MiB: the free 10 MiB at the end grows by one more page (round_up(15 - 10, 20 MiB)).
    const std::uint64_t c = take(m, 15 * MiB);
    QCOMPARE(c, b + 5 * MiB);
    QCOMPARE(m.reserved(), 40 * MiB);
    take(m, 1000); // the small pool has its own segment, mapped 2 MiB at a time
    QCOMPARE(m.reserved(), 42 * MiB);
    m.free(c, 0);
    m.emptyCache(0); // the free pages at the end are unmapped: 15 MiB free from 10 MiB on keeps 1 page
    QCOMPARE(m.reserved(), 20 * MiB + 2 * MiB);
    QCOMPARE(m.events().back().kind, Kind::SegmentUnmap);
}

void TestAllocator::startingStateFromTheSnapshot() {
    // A trace that starts mid-run: a 4 MiB block allocated before the first event is freed, then an 8 MiB
    // request takes the merged free space at the segment's start.
    DeviceTrace d;
    d.key = "0";
    const std::uint64_t base = 0x7f0000000000;
    SnapshotSegment seg;
    seg.address = base;
    seg.totalSize = 20 * MiB;
    seg.blocks.push_back({base, static_cast<std::int64_t>(8 * MiB), static_cast<std::int64_t>(8 * MiB),
                          SnapshotBlock::State::ActiveAllocated, 0});
    seg.blocks.push_back(
        {base + 8 * MiB, static_cast<std::int64_t>(12 * MiB), 0, SnapshotBlock::State::Inactive, 0});
    d.segments.push_back(seg);
    d.append(1, TraceAction::FreeRequested, base, 4 * MiB);
    d.append(2, TraceAction::FreeCompleted, base, 4 * MiB);
    d.append(3, TraceAction::Alloc, base, 8 * MiB);
    ReplayOptions o;
    o.recordedAddresses = true;
    const ReplayResult r = replayDevice(d, o);
    QCOMPARE(r.startReserved, 20 * MiB);
    QCOMPARE(r.unknownFrees, 0);
    QCOMPARE(r.addressMatches, std::size_t(1));
    QVERIFY(r.matchesRecording); // no segment events recorded, none replayed
    // A recorded segment_alloc the replay does not make is a difference, named.
    d.append(4, TraceAction::SegmentAlloc, base + 32 * MiB, 20 * MiB);
    const ReplayResult differs = replayDevice(d, o);
    QVERIFY(!differs.matchesRecording);
    QVERIFY(QString::fromStdString(differs.firstDifference).contains("recorded segment_alloc of 20971520 B"));
}

void TestAllocator::decomflReplayReproducesTheRecording() {
    const QString path = dataDir() + "/traces/snapshots/DeComFL_memory.pickle";
    const Trace trace = readTraceFile(path.toStdString());
    // Recorded with PyTorch's defaults (its allocator_settings say so).
    QVERIFY(trace.allocatorSettings.recorded);
    QCOMPARE(trace.allocatorSettings.maxSplitSize, std::int64_t(-1));
    AllocatorSettings expandable;
    expandable.expandableSegments = true;
    const auto devices = allocatorWhatIf(trace, expandable);
    QCOMPARE(devices.size(), std::size_t(1));
    const DeviceWhatIf& w = devices[0];
    // The issue's figures: 61 segments, peak reserved 1,897,922,560 bytes, from the recording itself ...
    QCOMPARE(w.recorded.segmentAllocs, 61);
    QCOMPARE(w.recorded.peakReserved, 1897922560ull);
    // ... and the model replaying it: every segment event in size and order, the same peak, and every one
    // of the 7,946 allocations at the address PyTorch gave it.
    QVERIFY2(w.replayed.matchesRecording, w.replayed.firstDifference.c_str());
    QCOMPARE(w.replayed.segmentAllocs, 61);
    QCOMPARE(w.replayed.peakReserved, 1897922560ull);
    QCOMPARE(w.replayed.allocations, std::size_t(7946));
    QCOMPARE(w.replayed.addressMatches, std::size_t(7946));
    QCOMPARE(w.replayed.unknownFrees, 0);
    // Expandable segments map pages instead of carving fixed segments: less reserved, less fragmentation.
    QVERIFY(w.whatif.peakReserved < w.replayed.peakReserved);
    QVERIFY(w.bandLow <= w.whatif.peakReserved && w.whatif.peakReserved <= w.bandHigh);
    const auto j = allocatorWhatIfToJson(devices, expandable);
    QCOMPARE(j["schema"].get<std::string>(), std::string("headroom.allocator-whatif/1"));
    QCOMPARE(j["devices"]["0"]["replayed"]["matches_recording"].get<bool>(), true);
    QCOMPARE(j["devices"]["0"]["whatif"]["settings"]["expandable_segments"].get<bool>(), true);
}

void TestAllocator::everyRealSnapshotReplaysAtItsAddresses() {
    // Every real snapshot with allocation events (the cs336 ones start mid-run, with their segments
    // already cached): the replay puts every allocation where PyTorch put it and reserves what it reserved.
    const QDir dir(dataDir() + "/traces/snapshots");
    std::size_t traces = 0, allocations = 0;
    for (const QString& f : dir.entryList({"*.pickle"}, QDir::Files)) {
        const Trace trace = readTraceFile(dir.filePath(f).toStdString());
        std::vector<DeviceWhatIf> devices;
        try {
            devices = allocatorWhatIf(trace, AllocatorSettings{});
        } catch (const Error&) {
            continue; // the legacy OOM snapshot records no alloc events
        }
        for (const DeviceWhatIf& w : devices) {
            QVERIFY2(w.replayed.matchesRecording, qPrintable(f));
            QCOMPARE(w.replayed.addressMatches, w.replayed.allocations);
            QCOMPARE(w.replayed.unknownFrees, 0);
            QCOMPARE(w.replayed.peakReserved, w.recorded.peakReserved);
            QVERIFY(w.baseline.allocatedAtPeak <= w.baseline.peakReserved);
            allocations += w.replayed.allocations;
        }
        ++traces;
    }
    // 21 snapshots; their alloc events counted by CPython's pickle module (27,539 in the first seven; the
    // 512- and 1024-token CS336 runs add 7,591 + 7,591 + 1,666 + 1,280; notHanmin's XL forwards 3,368 and
    // 4,138; NiuHuangxiaozi's steps 3,853, 3,907 and 3,907 in fp32 and 4,404 under autocast, its forwards
    // 785 three times and 995; Athrun0109's 2.7B steps 9,134 in fp32 and 10,418 under autocast, its
    // forwards 2,187 twice). The two bf16 training runs start with blocks whose hidden remainders only
    // their later placements reveal (claimHiddenRemainder).
    QCOMPARE(traces, std::size_t(25));
    QCOMPARE(allocations, std::size_t(27539 + 7591 + 7591 + 1666 + 1280 + 3368 + 4138 + 3853 + 3907 + 3907 +
                                      4404 + 3 * 785 + 995 + 9134 + 10418 + 2 * 2187));
}

QTEST_APPLESS_MAIN(TestAllocator)
#include "tst_allocator.moc"
