// SPDX-License-Identifier: GPL-3.0-or-later
// The trace viewer's core: the level-of-detail index and timeline frames against brute-force reductions
// written here, at several zoom levels of a real snapshot; notes, annotations, ghost frees, segments and
// range queries on hand-written snapshots whose answers are worked out in the comments.
#include "core/trace/formats/tracereader.h"
#include "core/trace/timeline.h"
#include "core/trace/traceindex.h"
#include "core/trace/traceloadjob.h"
#include "core/trace/tracesummary.h"
#include "tests/testutil.h"

#include <QTest>
#include <random>

using namespace headroom;

namespace {

QString traces() {
    return test::dataDir() + "/traces";
}

// Brute force: the events a column [xa, xb) shows, scanning every event's x.
std::pair<std::size_t, std::size_t> bruteColumn(const std::vector<double>& xs, double xa, double xb) {
    std::size_t first = 0, last = 0;
    bool any = false;
    for (std::size_t e = 0; e < xs.size(); ++e) {
        if (xs[e] <= xa)
            first = e; // the state holding at xa
        if (xs[e] < xb)
            last = e, any = true;
    }
    if (!any || last < first)
        last = first;
    return {first, last};
}

bool liveAfter(const Allocation& a, std::size_t e) {
    return (a.start == kBeforeFirstEvent || a.start <= e) && e < a.end;
}

} // namespace

class TestTimeline : public QObject {
    Q_OBJECT
private slots:
    void seriesLodMatchesBruteForce();
    void framesMatchBruteForceAtEveryZoom_data();
    void framesMatchBruteForceAtEveryZoom();
    void drawnPeakIsTheSummaryPeak();
    void notesAnnotationsAndGhostFrees();
    void segmentsAndRanges();
    void lifetimeIndexMatchesBruteForce();
};

void TestTimeline::lifetimeIndexMatchesBruteForce() {
    // Lifetimes of every shape over 40,000 events (ten buckets): short ones, ones spanning several buckets,
    // ones live from before the trace, ones never freed, and ones starting or ending exactly on a bucket
    // edge.
    std::mt19937_64 rng(5);
    const std::size_t n = 40000;
    BigVector<Allocation> items;
    for (int i = 0; i < 6000; ++i) {
        Allocation a;
        a.addr = static_cast<std::uint64_t>(i);
        const int kind = static_cast<int>(rng() % 5);
        const std::size_t start = rng() % n;
        a.start = kind == 0 ? kBeforeFirstEvent : start;
        const std::size_t from = a.start == kBeforeFirstEvent ? 0 : a.start;
        a.end = kind == 1   ? n
                : kind == 2 ? std::min(n, from + rng() % 50)
                            : std::min(n, from + rng() % 20000);
        if (kind == 3) // on a bucket edge: positions are events + 1
            a.start = (rng() % 9 + 1) * LifetimeIndex::kBucket - 1,
            a.end = std::min(n, a.start + LifetimeIndex::kBucket);
        items.push_back(a);
    }
    std::stable_sort(items.begin(), items.end(),
                     [](const Allocation& a, const Allocation& b) { return startPos(a) < startPos(b); });
    const LifetimeIndex index(items, n + 1);
    std::vector<std::size_t> probes = {0, 1, n, n - 1};
    for (std::size_t k = 1; k < 10; ++k)
        for (std::size_t d :
             {LifetimeIndex::kBucket * k - 1, LifetimeIndex::kBucket * k, LifetimeIndex::kBucket * k + 1})
            probes.push_back(d);
    for (int q = 0; q < 200; ++q)
        probes.push_back(rng() % (n + 1));
    for (std::size_t p : probes) {
        std::vector<const Allocation*> got;
        index.collect(items, p, got);
        std::vector<std::uint64_t> fast, brute;
        for (const Allocation* a : got)
            fast.push_back(a->addr);
        for (const Allocation& a : items)
            if (startPos(a) <= p && p < endPos(a))
                brute.push_back(a.addr);
        std::sort(fast.begin(), fast.end());
        std::sort(brute.begin(), brute.end());
        QCOMPARE(fast, brute); // same set, each once
    }
}

void TestTimeline::seriesLodMatchesBruteForce() {
    std::mt19937_64 rng(11);
    for (std::size_t n : {std::size_t(1), std::size_t(31), std::size_t(32), std::size_t(33),
                          std::size_t(5000), std::size_t(40000)}) {
        BigVector<std::int64_t> v(n);
        std::int64_t x = 0;
        for (auto& e : v)
            e = x += static_cast<std::int64_t>(rng() % 2001) - 1000; // a random walk, like a memory series
        const SeriesLod lod(v);
        for (int q = 0; q < 300; ++q) {
            std::size_t a = rng() % n, b = rng() % (n + 1);
            if (a > b)
                std::swap(a, b);
            if (q == 0)
                a = 0, b = n;
            if (a == b)
                continue;
            const auto [lo, hi] = std::minmax_element(v.begin() + a, v.begin() + b);
            const auto got = lod.range(a, b);
            QCOMPARE(got.first, *lo);
            QCOMPARE(got.second, *hi);
        }
    }
}

void TestTimeline::framesMatchBruteForceAtEveryZoom_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<bool>("timeAxis");
    QTest::newRow("DeComFL events") << "snapshots/DeComFL_memory.pickle" << false;
    QTest::newRow("DeComFL time") << "snapshots/DeComFL_memory.pickle" << true;
    QTest::newRow("bcrafton time") << "snapshots/cs336_bcrafton_memory_snapshot.pickle" << true;
    QTest::newRow("kineto profiler")
        << "chrome_traces/kineto_tb_plugin_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"
        << true;
}

void TestTimeline::framesMatchBruteForceAtEveryZoom() {
    QFETCH(QString, file);
    QFETCH(bool, timeAxis);
    const auto loaded = loadTrace((traces() + "/" + file).toStdString());
    const TraceIndex& index = *loaded->indexes.at(0);
    const Timeline timeline(index, 12);
    QVERIFY(timeline.hasTime()); // all of these record time_us or ts
    const TimelineAxis axis = timeAxis ? TimelineAxis::Time : TimelineAxis::Event;
    const std::size_t n = index.events();
    std::vector<double> xs(n);
    for (std::size_t e = 0; e < n; ++e)
        xs[e] = timeAxis ? static_cast<double>(index.device().time[e]) : static_cast<double>(e);
    const auto [d0, d1] = timeline.domain(axis);
    QCOMPARE(d0, xs.front());
    const auto& allocated = index.allocatedSeries();
    const auto& reserved = index.reservedSeries();
    // The whole run, then windows of 1/10, 1/1000 and a few events, at two widths.
    std::mt19937 rng(3);
    const double span = d1 - d0;
    for (double fraction : {1.0, 0.1, 0.001, 8.0 / static_cast<double>(n)}) {
        for (int width : {97, 640}) {
            const double w = span * fraction;
            const double x0 = d0 + std::uniform_real_distribution<double>(0, span - w)(rng);
            const double x1 = x0 + w;
            const TimelineFrame f = timeline.frame(axis, x0, x1, width);
            QCOMPARE(int(f.columns.size()), width);
            const double dx = (x1 - x0) / width; // as the frame divides it, so the edges agree to the bit
            for (int c = 0; c < width; ++c) {
                const double xa = x0 + c * dx, xb = x0 + (c + 1) * dx;
                const TimelineColumn& col = f.columns[c];
                if (!col.valid)
                    continue;
                const auto [first, last] = bruteColumn(xs, xa, xb);
                QCOMPARE(col.first, first);
                QCOMPARE(col.last, last);
                std::int64_t aMin = INT64_MAX, aMax = INT64_MIN, rMin = INT64_MAX, rMax = INT64_MIN;
                for (std::size_t e = first; e <= last; ++e) {
                    aMin = std::min(aMin, allocated[e]), aMax = std::max(aMax, allocated[e]);
                    rMin = std::min(rMin, reserved[e]), rMax = std::max(rMax, reserved[e]);
                }
                QCOMPARE(col.allocatedMin, aMin);
                QCOMPARE(col.allocatedMax, aMax);
                QCOMPARE(col.reservedMin, rMin);
                QCOMPARE(col.reservedMax, rMax);
                // Each band's extent over the column, stacking the live ones bottom-up at every event.
                const auto& bands = timeline.bands();
                std::vector<std::int64_t> lo(bands.size(), INT64_MAX), hi(bands.size(), -1);
                for (std::size_t e = first; e <= last; ++e) {
                    std::int64_t sum = 0;
                    for (std::size_t b = 0; b < bands.size(); ++b)
                        if (liveAfter(bands[b], e)) {
                            lo[b] = std::min(lo[b], sum);
                            sum += bands[b].size;
                            hi[b] = std::max(hi[b], sum);
                        }
                }
                for (std::size_t b = 0; b < bands.size(); ++b) {
                    const std::size_t at = b * width + c;
                    QCOMPARE(f.bandTop[at], hi[b]);
                    if (hi[b] >= 0)
                        QCOMPARE(f.bandBottom[at], lo[b]);
                }
            }
        }
    }
    // The bands are the largest allocations of the run.
    if (!timeline.bands().empty()) {
        std::vector<std::int64_t> sizes;
        for (const auto& a : index.allocations())
            sizes.push_back(a.size);
        std::sort(sizes.rbegin(), sizes.rend());
        std::int64_t smallestBand = INT64_MAX;
        for (const auto& b : timeline.bands())
            smallestBand = std::min(smallestBand, b.size);
        QCOMPARE(smallestBand, sizes.at(timeline.bands().size() - 1));
    }
}

void TestTimeline::drawnPeakIsTheSummaryPeak() {
    for (const char* f : {"DeComFL_memory.pickle", "cs336_MAGMA27_memory_snapshot.pickle",
                          "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle",
                          "LLM-inference_oom_snapshot_legacy_history.pickle"}) {
        const auto loaded = loadTrace((traces() + "/snapshots/" + f).toStdString());
        const Timeline timeline(*loaded->indexes.at(0));
        for (TimelineAxis axis : {TimelineAxis::Event, TimelineAxis::Time}) {
            const auto [d0, d1] = timeline.domain(axis);
            const TimelineFrame frame = timeline.frame(axis, d0, d1 + (d1 - d0) * 1e-9 + 1e-9, 1920);
            std::int64_t peak = 0;
            for (const auto& c : frame.columns)
                if (c.valid)
                    peak = std::max(peak, c.allocatedMax);
            const DeviceSummary& s = loaded->summary.devices.at(0);
            // The state before the first event is not drawn; the summary's peak is after an event
            // unless the trace only ever frees.
            QCOMPARE(peak, s.peakAllocatedAfter == kBeforeFirstEvent ? peak : s.peakAllocated);
        }
    }
}

void TestTimeline::notesAnnotationsAndGhostFrees() {
    // Event 0 frees 0x100, which the trace never saw allocated: one ghost free. Event 1 carries user
    // metadata, event 2 a compile context; "N/A" and "" are PyTorch's "nothing" and are not kept.
    const std::string json = R"({"segments": [], "device_traces": [[
      {"action": "free_requested", "addr": 256, "size": 100, "stream": 0, "time_us": 10},
      {"action": "alloc", "addr": 512, "size": 50, "stream": 7, "time_us": 20, "user_metadata": "step=3",
       "compile_context": "N/A"},
      {"action": "alloc", "addr": 1024, "size": 60, "stream": 0, "time_us": 30, "user_metadata": "",
       "compile_context": "torch/_dynamo frame 2"},
      {"action": "free_requested", "addr": 512, "size": 50, "stream": 7, "time_us": 40},
      {"action": "oom", "device_free": 123456, "size": 999999, "stream": 0, "time_us": 41}
    ]], "external_annotations": [
      {"name": "forward", "stage": "START", "device": 0, "time_us": 15},
      {"name": "forward", "stage": "END", "device": 0, "time_us": 35},
      {"name": "step", "stage": "START", "device": 0, "time_us": 38}
    ]})";
    const Trace t = readTrace(json);
    const DeviceTrace& d = t.devices.at(0);
    QCOMPARE(d.userMetadata.size(), size_t(1));
    QCOMPARE(t.strings[noteAt(d.userMetadata, 1)], std::string("step=3"));
    QCOMPARE(noteAt(d.userMetadata, 2), 0u);
    QCOMPARE(t.strings[noteAt(d.compileContext, 2)], std::string("torch/_dynamo frame 2"));
    QCOMPARE(noteAt(d.compileContext, 1), 0u);
    QCOMPARE(t.annotations.size(), size_t(2));
    QCOMPARE(t.annotations[0].name, std::string("forward"));
    QCOMPARE(t.annotations[0].start, 15LL);
    QCOMPARE(t.annotations[0].end, 35LL);
    QCOMPARE(t.annotations[1].end, INT64_MAX); // never ended
    const TraceSummary s = summarize(t);
    const TraceIndex index(d, s.devices.at(0));
    QCOMPARE(index.ghostFrees(), size_t(1));
    // PyTorch writes an OOM's free device memory under "device_free" instead of "addr".
    QCOMPARE(index.ooms().size(), size_t(1));
    QCOMPARE(index.ooms()[0].requested, 999999LL);
    QCOMPARE(index.ooms()[0].deviceFree, 123456LL);
    const auto live = index.liveAfter(2); // 0x200 (50) and 0x400 (60)
    QCOMPARE(live.size(), size_t(2));
    QCOMPARE(live[1].stream, 7LL);
    QCOMPARE(live[1].alloc, size_t(1));
}

void TestTimeline::segmentsAndRanges() {
    // One 2 MiB segment (small pool) at 0x1000000 and one 20 MiB segment at 0x4000000.
    // Event 2 allocates 1000 B at the segment's start, event 3 4 MiB at +2 MiB in the large one, event 4
    // frees the first; event 5 allocates 512 B at +4096 of the small one.
    const std::string json = R"({"segments": [
        {"address": 16777216, "total_size": 2097152, "stream": 0, "segment_type": "small", "blocks": [
          {"address": 16777216, "size": 2097152, "state": "inactive"}]},
        {"address": 67108864, "total_size": 20971520, "stream": 0, "segment_type": "large", "blocks": [
          {"address": 67108864, "size": 20971520, "state": "inactive"}]}],
      "device_traces": [[
        {"action": "segment_alloc", "addr": 16777216, "size": 2097152, "stream": 0, "time_us": 1},
        {"action": "segment_alloc", "addr": 67108864, "size": 20971520, "stream": 0, "time_us": 2},
        {"action": "alloc", "addr": 16777216, "size": 1000, "stream": 0, "time_us": 3},
        {"action": "alloc", "addr": 69206016, "size": 4194304, "stream": 0, "time_us": 4},
        {"action": "free_requested", "addr": 16777216, "size": 1000, "stream": 0, "time_us": 5},
        {"action": "alloc", "addr": 16781312, "size": 512, "stream": 0, "time_us": 6},
        {"action": "free_requested", "addr": 16781312, "size": 512, "stream": 0, "time_us": 7},
        {"action": "free_requested", "addr": 69206016, "size": 4194304, "stream": 0, "time_us": 8}
      ]]})";
    const Trace t = readTrace(json);
    const TraceSummary s = summarize(t);
    const TraceIndex index(t.devices.at(0), s.devices.at(0));
    const auto segs = index.segmentsAfter(3);
    QCOMPARE(segs.size(), size_t(2));
    QVERIFY(!segs[0].smallPool()); // large pool first
    QCOMPARE(segs[0].allocated, 4194304LL);
    QCOMPARE(segs[0].largestFree, 20971520LL - 2097152 - 4194304); // the space after the block
    QVERIFY(segs[1].smallPool());
    QCOMPARE(segs[1].blocks.size(), size_t(1));
    QCOMPARE(segs[1].largestFree, 2097152LL - 1000);
    QCOMPARE(index.stateAfter(3).largestFreeBlock, 20971520LL - 2097152 - 4194304);
    // Live at any moment after event 3 through event 5: the 4 MiB block, the 1000 B freed at 4, the 512 B
    // allocated at 5. After event 6 through 7 only the 4 MiB block (freed at 7).
    QCOMPARE(index.liveDuring(3, 5).size(), size_t(3));
    QCOMPARE(index.liveDuring(6, 7).size(), size_t(1));
    QCOMPARE(index.liveDuring(7, 7).size(), size_t(0));
}

QTEST_GUILESS_MAIN(TestTimeline)
#include "tst_timeline.moc"
