// SPDX-License-Identifier: GPL-3.0-or-later
// The trace viewer's core: the level-of-detail index and timeline frames against brute-force reductions
// written here, at several zoom levels of a real snapshot; notes, annotations, ghost frees, segments and
// range queries on hand-written snapshots whose answers are worked out in the comments.
#include "core/compare/comparison.h"
#include "core/compare/planoverlay.h"
#include "core/compare/runtimeline.h"
#include "core/io/scenariojson.h"
#include "core/plan/estimator.h"
#include "core/trace/formats/tracereader.h"
#include "core/trace/regions.h"
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
    void seriesLodArgMaxIsTheFirstMaximum();
    void categoriesSumToAllocatedAndMatchCompare_data();
    void categoriesSumToAllocatedAndMatchCompare();
    void categoryBucketsByHand();
    void planOverTheRun();
    void allocationStackMatchesASimulation_data();
    void allocationStackMatchesASimulation();
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

void TestTimeline::seriesLodArgMaxIsTheFirstMaximum() {
    // Plateaus of equal values across block boundaries, so that the first maximum is not the first block
    // read with it: brute force over every range of a few sizes.
    std::mt19937 rng(11);
    BigVector<std::int64_t> values;
    for (int i = 0; i < 5000; ++i)
        values.push_back(std::uniform_int_distribution<int>(0, 40)(rng) / 8);
    const SeriesLod lod(values);
    for (int trial = 0; trial < 3000; ++trial) {
        std::size_t from = std::uniform_int_distribution<std::size_t>(0, values.size() - 1)(rng);
        std::size_t to =
            std::min(values.size(),
                     from + std::uniform_int_distribution<std::size_t>(1, trial % 3 == 0 ? 5000 : 300)(rng));
        std::size_t best = from;
        for (std::size_t i = from; i < to; ++i)
            if (values[i] > values[best])
                best = i;
        QCOMPARE(lod.argMax(from, to), best);
    }
    QCOMPARE(lod.argMax(7, 7), std::size_t(7)); // empty
}

void TestTimeline::categoriesSumToAllocatedAndMatchCompare_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("scenario"); // examples/measured, or "" for none
    QTest::newRow("DeComFL") << "snapshots/DeComFL_memory.pickle"
                             << "";
    QTest::newRow("bcrafton") << "snapshots/cs336_bcrafton_memory_snapshot.pickle"
                              << "";
    QTest::newRow("OOM, legacy history") << "snapshots/LLM-inference_oom_snapshot_legacy_history.pickle"
                                         << "";
    QTest::newRow("CS336 256 training + scenario")
        << "snapshots/cs336_Wedsonlin_medium_256_training_memory_snapshot.pickle"
        << "cs336-medium-256-training.headroom.json";
    QTest::newRow("CS336 1024 autocast + scenario")
        << "snapshots/cs336_Wedsonlin_medium_1024_training_memory_snapshot.pickle"
        << "cs336-medium-1024-training-bf16-autocast.headroom.json";
}

void TestTimeline::categoriesSumToAllocatedAndMatchCompare() {
    // The issue's proof: at every event the categories sum to the allocated line byte for byte, and at the
    // peak they are what `compare` attributes there (the same rules and the scenario's tensor table).
    QFETCH(QString, file);
    QFETCH(QString, scenario);
    const auto loaded = loadTrace((traces() + "/" + file).toStdString());
    const std::size_t device = busiestDevice(loaded->summary);
    const TraceIndex& index = *loaded->indexes.at(device);
    std::optional<Scenario> sc;
    if (!scenario.isEmpty())
        sc = loadScenarioFile(
            QStringLiteral(HEADROOM_SOURCE_DIR "/examples/measured/%1").arg(scenario).toStdString());
    const AttributionRules rules = AttributionRules::pytorchDefaults();
    const auto series = categorySeries(loaded->trace, index, rules, sc ? &*sc : nullptr);
    QVERIFY(series->valid());
    const auto& allocated = index.allocatedSeries();
    auto sum = [](const StackedSeries::Bytes& b) {
        std::int64_t s = 0;
        for (std::int64_t v : b)
            s += v;
        return s;
    };
    QCOMPARE(sum(series->after(kBeforeFirstEvent)), index.stateAfter(kBeforeFirstEvent).allocated);
    for (std::size_t e = 0; e < index.events(); ++e)
        if (sum(series->after(e)) != allocated[e])
            QFAIL(qPrintable(QStringLiteral("after event %1: categories %2, allocated %3")
                                 .arg(e)
                                 .arg(sum(series->after(e)))
                                 .arg(allocated[e])));
    // No category goes below zero anywhere (each allocation is charged its own alloc and free).
    for (std::size_t e = 0; e < index.events(); e += 7)
        for (std::int64_t v : series->after(e))
            QVERIFY(v >= 0);
    const std::size_t peak = index.peakAfter();
    const Attribution at = attribute(loaded->trace, index, peak, rules, sc ? &*sc : nullptr);
    const StackedSeries::Bytes b = series->after(peak);
    for (std::size_t k = 0; k < kMeasuredCategories; ++k)
        QCOMPARE(b[k], at.bytes[k]);
    if (sc) {
        const Comparison c = compareAtPeak(*sc, estimate(*sc), loaded->trace, index, rules);
        for (std::size_t k = 0; k < kMeasuredCategories; ++k)
            QCOMPARE(b[k], c.measured.bytes[k]);
        QVERIFY(b[std::size_t(MeasuredCategory::Weights)] > 0);
        QVERIFY(b[std::size_t(MeasuredCategory::Activations)] > 0);
    }
    // Drawn columns at three zooms: the stack is the state at the column's first maximum, so its top is
    // the column's allocated peak.
    Timeline timeline(index, 0);
    timeline.setClasses(series);
    const auto [d0, d1] = timeline.domain(TimelineAxis::Event);
    for (double fraction : {1.0, 0.05, 0.002}) {
        const double w = (d1 - d0) * fraction, x0 = d0 + (d1 - d0 - w) / 2;
        const TimelineFrame f =
            timeline.frame(TimelineAxis::Event, x0, x0 + w, 300, TimelineDetail::Categories);
        for (std::size_t c = 0; c < f.columns.size(); ++c) {
            const TimelineColumn& col = f.columns[c];
            if (!col.valid)
                continue;
            std::int64_t s = 0;
            for (std::size_t k = 0; k < StackedSeries::kClasses; ++k)
                s += f.classBytes[c * StackedSeries::kClasses + k];
            QCOMPARE(s, col.allocatedMax);
            QVERIFY(col.classEvent >= col.first && col.classEvent <= col.last);
            QCOMPARE(allocated[col.classEvent], col.allocatedMax);
        }
    }
    // The CLI's buckets: categories at each bucket's end sum to its allocated bytes, and at its maximum to
    // the maximum; the peak's split is the one above.
    const RunTimeline run = runTimeline(loaded->trace, index, rules, sc ? &*sc : nullptr, 97);
    QVERIFY(run.byCategory);
    QVERIFY(!run.buckets.empty() && run.buckets.size() <= 97);
    QCOMPARE(run.buckets.back().last, index.events() - 1);
    std::int64_t highest = 0;
    for (const TimelineBucket& bucket : run.buckets) {
        std::int64_t end = 0, atMax = 0;
        for (std::size_t k = 0; k < kMeasuredCategories; ++k)
            end += bucket.bytes[k], atMax += bucket.bytesAtMax[k];
        QCOMPARE(end, bucket.allocated);
        QCOMPARE(atMax, bucket.allocatedMax);
        highest = std::max(highest, bucket.allocatedMax);
    }
    QCOMPARE(highest, loaded->summary.devices.at(device).peakAllocated);
    for (std::size_t k = 0; k < kMeasuredCategories; ++k)
        QCOMPARE(run.peakBytes[k], at.bytes[k]);
}

void TestTimeline::categoryBucketsByHand() {
    // Written by hand: a weight loaded before the step (nn/modules/module.py), an activation kept by a
    // forward, a 4 KiB temporary of the optimizer step freed at once. Events (time_us):
    //   0 @10 alloc W 1000 (module.py)   1 @20 alloc A 300 (forward)   2 @30 alloc T 4096 (optimizer.py)
    //   3 @40 free_requested T           4 @50 free_requested A
    // allocated after each: 1000, 1300, 5396, 1300, 1000. The run [10, 50] ends 1 µs after its last event
    // (so that it falls in the last bucket): two buckets of 20.5 µs, [10, 30.5) and [30.5, 51).
    Trace t;
    DeviceTrace& d = t.device("0");
    t.strings = {"", "load", "torch/nn/modules/module.py", "forward", "model.py", "step", "optimizer.py"};
    t.stacks = {{}, {Frame{1, 2, 1}}, {Frame{3, 4, 2}}, {Frame{5, 6, 3}}};
    d.append(10, TraceAction::Alloc, 0x1000, 1000, 0, 1);
    d.append(20, TraceAction::Alloc, 0x2000, 300, 0, 2);
    d.append(30, TraceAction::Alloc, 0x3000, 4096, 0, 3);
    d.append(40, TraceAction::FreeRequested, 0x3000, 4096, 0, 3);
    d.append(50, TraceAction::FreeRequested, 0x2000, 300, 0, 2);
    // The final state: W still allocated in a 2 MiB segment that predates the recording.
    SnapshotSegment seg;
    seg.address = 0x1000;
    seg.totalSize = 2 << 20;
    seg.blocks.push_back({0x1000, 1024, 1000, SnapshotBlock::State::ActiveAllocated, 1});
    d.segments.push_back(seg);
    const TraceSummary summary = summarize(t);
    const TraceIndex index(t.devices[0], summary.devices[0]);
    const RunTimeline run = runTimeline(t, index, AttributionRules::pytorchDefaults(), nullptr, 2);
    QVERIFY(run.timeAxis);
    QCOMPARE(run.buckets.size(), std::size_t(2));
    using C = MeasuredCategory;
    auto of = [](const std::array<std::int64_t, kMeasuredCategories>& b, C c) { return b[std::size_t(c)]; };
    const TimelineBucket& first = run.buckets[0];
    QCOMPARE(first.first, std::size_t(0));
    QCOMPARE(first.last, std::size_t(2)); // events at 10, 20 and 30
    QCOMPARE(first.allocated, std::int64_t(5396));
    QCOMPARE(first.allocatedMax, std::int64_t(5396));
    QCOMPARE(of(first.bytes, C::Weights), std::int64_t(1000));
    QCOMPARE(of(first.bytes, C::Activations), std::int64_t(300));
    // Freed inside the recording, so a step temporary (not a state that lives between steps).
    QCOMPARE(of(first.bytes, C::Temporaries), std::int64_t(4096));
    const TimelineBucket& second = run.buckets[1];
    QCOMPARE(second.first, std::size_t(2)); // the state holding at its start: after event 2
    QCOMPARE(second.last, std::size_t(4));
    QCOMPARE(second.allocated, std::int64_t(1000));
    QCOMPARE(second.allocatedMax, std::int64_t(5396));
    QCOMPARE(second.maxEvent, std::size_t(2));
    QCOMPARE(of(second.bytes, C::Weights), std::int64_t(1000));
    QCOMPARE(of(second.bytes, C::Activations), std::int64_t(0));
    QCOMPARE(of(second.bytesAtMax, C::Temporaries), std::int64_t(4096));
    QCOMPARE(run.peakEvent, std::size_t(2));
    QCOMPARE(run.peakAllocated, std::int64_t(5396));

    // Memory by region, by hand on the same events. "forward" [15, 22] holds event 1 (A): it starts at
    // 1000, peaks at 1300, allocates 300 that are still live at its end. "step" [25, 45] holds events 2
    // and 3 (T allocated and freed): starts at 1300, peaks at 5396 (+4096), allocates 4096, leaves nothing.
    // An instant at 35 holds no event: the state then (after event 2). A region past the run holds none.
    t.annotations = {
        {"", 15, 22, "forward"}, {"", 25, 45, "step"}, {"", 35, 35, "mark"}, {"7", 0, 99, "other device"}};
    const std::vector<RegionMemory> regions = regionMemory(t, index);
    QCOMPARE(regions.size(), std::size_t(3));
    const RegionMemory& fwd = regions[0];
    QVERIFY(!fwd.empty);
    QCOMPARE(fwd.first, std::size_t(1));
    QCOMPARE(fwd.last, std::size_t(1));
    QCOMPARE(fwd.allocatedAtStart, std::int64_t(1000));
    QCOMPARE(fwd.peakAllocated, std::int64_t(1300));
    QCOMPARE(fwd.allocatedBytes, std::int64_t(300));
    QCOMPARE(fwd.allocations, std::size_t(1));
    QCOMPARE(fwd.stillLiveBytes, std::int64_t(300));
    const RegionMemory& step = regions[1];
    QCOMPARE(step.first, std::size_t(2));
    QCOMPARE(step.last, std::size_t(3));
    QCOMPARE(step.peakEvent, std::size_t(2));
    QCOMPARE(step.peakOverStart(), std::int64_t(4096));
    QCOMPARE(step.allocatedBytes, std::int64_t(4096));
    QCOMPARE(step.stillLiveBytes, std::int64_t(0));
    const RegionMemory& mark = regions[2];
    QVERIFY(mark.empty);
    QCOMPARE(mark.peakAllocated, std::int64_t(5396));
    QCOMPARE(mark.allocatedBytes, std::int64_t(0));
    QCOMPARE(runTimeline(t, index, AttributionRules::pytorchDefaults(), nullptr, 2).regions.size(),
             std::size_t(3));
}

void TestTimeline::planOverTheRun() {
    // The CS336 1024-token run records its optimizer step (Optimizer.step#AdamW.step): the plan's forward
    // ends at the run's allocated peak, its backward at the step's start, its optimizer phase spans the step.
    const auto loaded = loadTrace(
        (traces() + "/snapshots/cs336_Wedsonlin_medium_1024_training_memory_snapshot.pickle").toStdString());
    const TraceIndex& index = *loaded->indexes.at(0);
    const Scenario sc = loadScenarioFile(
        HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-1024-training-bf16-autocast.headroom.json");
    const PlanOverlay plan = planOverlay(sc, loaded->trace, index);
    QCOMPARE(plan.alignment, std::string("optimizer step"));
    const Annotation* step = nullptr;
    for (const Annotation& a : loaded->trace.annotations)
        if (a.name == "Optimizer.step#AdamW.step")
            step = &a;
    QVERIFY(step);
    const auto& time = index.device().time;
    const double stepStart =
        static_cast<double>(std::lower_bound(time.begin(), time.end(), step->start) - time.begin());
    std::int64_t highest = 0;
    for (const PlanOverlayPoint& q : plan.points) {
        highest = std::max(highest, q.total());
        if (q.phase == Phase::Forward && q.progress == 1.0)
            QCOMPARE(q.event, static_cast<double>(index.peakAfter()));
        if (q.phase == Phase::Optimizer && q.progress == 0.0)
            QCOMPARE(q.event, stepStart);
        if (q.phase == Phase::Optimizer)
            QVERIFY(q.time >= static_cast<double>(step->start) && q.time <= static_cast<double>(step->end));
    }
    // Its peak is the estimate compare puts beside the measured peak.
    const Comparison c =
        compareAtPeak(sc, estimate(sc), loaded->trace, index, AttributionRules::pytorchDefaults());
    QCOMPARE(highest, c.estimatedTotal);
    // Between two points the plan is linear: halfway between the first two, the mean of their bytes.
    std::array<std::int64_t, kMeasuredCategories> mid{};
    const PlanOverlayPoint &a = plan.points[0], &b = plan.points[1];
    QVERIFY(plan.at((a.event + b.event) / 2, &mid));
    QVERIFY(std::abs(mid[std::size_t(MeasuredCategory::Activations)] -
                     (a.bytes[std::size_t(MeasuredCategory::Activations)] +
                      b.bytes[std::size_t(MeasuredCategory::Activations)]) /
                         2) <= 1);
    QVERIFY(!plan.at(-1, &mid));

    // Without a step mark (an inference run): placed by the allocated peak, no optimizer phase.
    const auto inference = loadTrace(
        (traces() + "/snapshots/cs336_Wedsonlin_medium_1024_inference_memory_snapshot.pickle").toStdString());
    const Scenario inf =
        loadScenarioFile(HEADROOM_SOURCE_DIR "/examples/measured/cs336-medium-1024-inference.headroom.json");
    const PlanOverlay byPeak = planOverlay(inf, inference->trace, *inference->indexes.at(0));
    QCOMPARE(byPeak.alignment, std::string("allocated peak"));
    QVERIFY(!byPeak.points.empty());
    for (const PlanOverlayPoint& q : byPeak.points)
        QVERIFY(q.phase != Phase::Optimizer);
}

void TestTimeline::allocationStackMatchesASimulation_data() {
    QTest::addColumn<QString>("file");
    QTest::newRow("DeComFL") << "snapshots/DeComFL_memory.pickle";
    QTest::newRow("bcrafton") << "snapshots/cs336_bcrafton_memory_snapshot.pickle";
}

void TestTimeline::allocationStackMatchesASimulation() {
    // "Every allocation in its place" against a brute force that replays the run as PyTorch's viewer does:
    // a list of the shown allocations, appended when one is made and removed when it is freed, so that those
    // above a freed one move down; at each column's moment the layout must be that list stacked on the rest.
    QFETCH(QString, file);
    const auto loaded = loadTrace((traces() + "/" + file).toStdString());
    const TraceIndex& index = *loaded->indexes.at(0);
    const auto& all = index.allocations();
    const auto& allocated = index.allocatedSeries();
    Timeline timeline(index, 0);
    timeline.setAllocationStack(std::make_shared<const AllocationStack>(index));
    const auto [d0, d1] = timeline.domain(TimelineAxis::Event);
    const std::size_t n = index.events();
    for (double fraction : {1.0, 0.1, 0.004}) {
        const double w = (d1 - d0) * fraction, x0 = d0 + (d1 - d0 - w) / 3;
        const TimelineFrame f =
            timeline.frame(TimelineAxis::Event, x0, x0 + w, 240, TimelineDetail::Allocations, 60);
        const AllocationStack::Layout& layout = f.stack;
        QCOMPARE(layout.columnStart.size(), f.columns.size() + 1);
        QVERIFY(!layout.shown.empty() && layout.shown.size() <= 60);
        // The shown are the largest live in the view: none left out is larger than the smallest shown.
        std::size_t from = SIZE_MAX, to = 0;
        for (const TimelineColumn& c : f.columns)
            if (c.valid)
                from = std::min(from, c.first), to = std::max(to, c.last);
        auto overlaps = [&](const Allocation& a) {
            return (a.start == kBeforeFirstEvent || a.start <= to) && a.end > from;
        };
        std::int64_t smallestShown = INT64_MAX;
        std::vector<char> isShown(all.size(), 0);
        for (std::uint32_t id : layout.shown) {
            QVERIFY(overlaps(all[id]));
            smallestShown = std::min(smallestShown, all[id].size);
            isShown[id] = 1;
        }
        for (std::size_t id = 0; id < all.size(); ++id)
            if (!isShown[id] && overlaps(all[id]) && layout.shown.size() == 60)
                QVERIFY(all[id].size <= smallestShown);
        // The simulation, event by event; the columns' moments in order.
        std::vector<std::pair<std::size_t, std::size_t>> moments; // (event, column)
        for (std::size_t c = 0; c < f.columns.size(); ++c)
            if (f.columns[c].valid)
                moments.push_back({layout.events[c], c});
        std::sort(moments.begin(), moments.end());
        std::vector<std::uint32_t> list; // shown and live, bottom first
        std::vector<std::vector<std::uint32_t>> startsAt(n), endsAt(n);
        for (std::uint32_t s = 0; s < layout.shown.size(); ++s) {
            const Allocation& a = all[layout.shown[s]];
            if (a.start == kBeforeFirstEvent)
                list.push_back(s);
            else
                startsAt[a.start].push_back(s);
            if (a.end < n)
                endsAt[a.end].push_back(s);
        }
        std::size_t next = 0;
        for (std::size_t e = 0; e < n && next < moments.size(); ++e) {
            for (std::uint32_t s : startsAt[e])
                list.push_back(s);
            for (std::uint32_t s : endsAt[e])
                list.erase(std::remove(list.begin(), list.end(), s), list.end());
            for (; next < moments.size() && moments[next].first == e; ++next) {
                const std::size_t c = moments[next].second;
                std::int64_t shownBytes = 0;
                for (std::uint32_t s : list)
                    shownBytes += all[layout.shown[s]].size;
                const std::int64_t rest = std::max<std::int64_t>(0, allocated[e] - shownBytes);
                QCOMPARE(layout.rest[c], rest);
                QCOMPARE(std::size_t(layout.columnStart[c + 1] - layout.columnStart[c]), list.size());
                std::int64_t y = rest;
                for (std::size_t k = 0; k < list.size(); ++k) {
                    const AllocationStack::Piece& piece = layout.pieces[layout.columnStart[c] + k];
                    QCOMPARE(piece.shown, list[k]);
                    QCOMPARE(piece.bottom, y);
                    y += all[layout.shown[list[k]]].size;
                    QCOMPARE(piece.top, y);
                }
                QCOMPARE(y, std::max(allocated[e], shownBytes)); // the stack's top is the column's peak
                QCOMPARE(allocated[e], f.columns[c].allocatedMax);
            }
        }
        QCOMPARE(next, moments.size());
    }
}

QTEST_GUILESS_MAIN(TestTimeline)
#include "tst_timeline.moc"
