// SPDX-License-Identifier: GPL-3.0-or-later
// Reading recorded traces: every real file in tests/data/traces against an independent replay written
// here, protocol 2-5 / JSON / gzip variants of one snapshot, hostile and truncated pickles, the other
// formats, the live-set index and the background job.
#include "core/bigvector.h" // HEADROOM_ASAN
#include "core/error.h"
#include "core/fileio.h"
#include "core/prefaulter.h"
#include "core/trace/formats/datatree.h"
#include "core/trace/formats/gzip.h"
#include "core/trace/formats/picklereader.h"
#include "core/trace/formats/tracereader.h"
#include "core/trace/frames.h"
#include "core/trace/traceindex.h"
#include "core/trace/traceloadjob.h"
#include "core/trace/tracesummary.h"
#include "tests/picklewriter.h"
#include "tests/testutil.h"

#include <QDir>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <condition_variable>
#include <cstring>
#include <future>
#include <limits>
#include <mutex>
#include <random>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

using namespace headroom;
using headroom::test::PickleWriter;
using nlohmann::json;

namespace {

struct Expected {
    long long entries = 0, finalAlloc = 0, finalActive = 0, finalReserved = 0, peakAlloc = 0, peakActive = 0,
              peakReserved = 0;
};

// The test's own replay of a snapshot: a forward pass from zero, then shifted so that its end matches
// the final state read from the segments (the production code walks backwards instead).
Expected replaySnapshot(const DataTree& t, DataTree::Value root) {
    Expected x;
    const auto segs = t.get(root, "segments");
    for (std::size_t i = 0; i < t.size(segs); ++i) {
        const auto s = t.at(segs, i);
        long long v = 0;
        t.toInt(t.get(s, "total_size"), &v);
        x.finalReserved += v;
        const auto blocks = t.get(s, "blocks");
        for (std::size_t j = 0; j < t.size(blocks); ++j) {
            const auto b = t.at(blocks, j);
            long long size = 0;
            bool has = false;
            const auto req = t.get(b, "requested_size", &has);
            if (!has || !t.toInt(req, &size)) {
                const auto h = t.get(b, "history");
                if (!(t.size(h) && t.toInt(t.get(t.at(h, 0), "real_size"), &size)))
                    t.toInt(t.get(b, "size"), &size);
            }
            const auto state = t.str(t.get(b, "state"));
            if (state == "active_allocated")
                x.finalAlloc += size, x.finalActive += size;
            else if (state == "active_pending_free")
                x.finalActive += size;
        }
    }
    long long a = 0, ac = 0, r = 0, maxA = 0, maxAc = 0, maxR = 0;
    const auto traces = t.get(root, "device_traces");
    const auto entries = t.at(traces, 0);
    x.entries = static_cast<long long>(t.size(entries));
    for (std::size_t i = 0; i < t.size(entries); ++i) {
        const auto e = t.at(entries, i);
        std::string action;
        long long size = 0;
        if (t.isRecord(e)) {
            action = t.actionNames()[t.record(e).action];
            size = t.record(e).size;
        } else {
            action = std::string(t.str(t.get(e, "action")));
            t.toInt(t.get(e, "size"), &size);
        }
        if (action == "alloc")
            a += size, ac += size;
        else if (action == "free_requested")
            a -= size;
        else if (action == "free_completed")
            ac -= size;
        else if (action == "free")
            a -= size, ac -= size;
        else if (action == "segment_alloc" || action == "segment_map")
            r += size;
        else if (action == "segment_free" || action == "segment_unmap")
            r -= size;
        maxA = std::max(maxA, a), maxAc = std::max(maxAc, ac), maxR = std::max(maxR, r);
    }
    // Shift: the trace may start mid-run, so the true start is final - (net change).
    x.peakAlloc = std::max(x.finalAlloc, x.finalAlloc - a + maxA);
    x.peakActive = std::max(x.finalActive, x.finalActive - ac + maxAc);
    x.peakReserved = std::max(x.finalReserved, x.finalReserved - r + maxR);
    return x;
}

void checkAgainst(const DeviceSummary& d, const Expected& x) {
    QCOMPARE(static_cast<long long>(d.entries), x.entries);
    QCOMPARE(d.finalAllocated, x.finalAlloc);
    QCOMPARE(d.finalActive, x.finalActive);
    QCOMPARE(d.finalReserved, x.finalReserved);
    QCOMPARE(d.peakAllocated, x.peakAlloc);
    QCOMPARE(d.peakActive, x.peakActive);
    QCOMPARE(d.peakReserved, x.peakReserved);
}

QString traces() {
    return test::dataDir() + "/traces";
}

// `line`: the frame's line as raw pickle opcodes (empty: the integer 54).
std::string smallSnapshot(int protocolByte = 4, const std::string& line = {}) {
    PickleWriter w(protocolByte);
    w.beginDict();
    w.str("segments");
    w.beginList();
    w.beginDict();
    w.str("device"), w.integer(0), w.str("address"), w.integer(1 << 20), w.str("total_size"), w.integer(4096);
    w.str("stream"), w.integer(0), w.str("blocks");
    w.beginList();
    w.beginDict();
    w.str("address"), w.integer(1 << 20), w.str("size"), w.integer(1024), w.str("requested_size"),
        w.integer(1000);
    w.str("state"), w.str("active_allocated");
    w.endDict();
    w.endList();
    w.endDict();
    w.endList();
    w.str("device_traces");
    w.beginList();
    w.beginList();
    const auto frames = w.beginList();
    w.beginDict();
    w.str("name"), w.str("forward"), w.str("filename"), w.str("model.py"), w.str("line");
    if (line.empty())
        w.integer(54);
    else
        w.raw(line);
    w.endDict();
    w.endList();
    w.raw("0"); // pop the frames list: it is referenced through the memo below
    const char* actions[] = {"segment_alloc", "alloc", "alloc", "free_requested", "free_completed"};
    const long long sizes[] = {4096, 1000, 2000, 2000, 2000};
    const long long addrs[] = {1 << 20, 1 << 20, (1 << 20) + 1024, (1 << 20) + 1024, (1 << 20) + 1024};
    for (int i = 0; i < 5; ++i) {
        w.beginDict();
        w.str("action"), w.str(actions[i]), w.str("addr"), w.integer(addrs[i]), w.str("size"),
            w.integer(sizes[i]);
        w.str("stream"), w.integer(0), w.str("time_us"), w.integer(1700000000000000LL + i), w.str("frames"),
            w.get(frames);
        w.endDict();
    }
    w.endList();
    w.endList();
    w.endDict();
    return w.finish();
}

void expectError(const std::string& bytes, const QString& mustContain) {
    try {
        readTrace(bytes);
        QFAIL(qPrintable("no error; expected " + mustContain));
    } catch (const Error& e) {
        QVERIFY2(QString(e.what()).contains(mustContain), e.what());
    } catch (const std::exception& e) {
        QFAIL(
            qPrintable(QStringLiteral("not a headroom::Error (%1); expected %2").arg(e.what(), mustContain)));
    }
}

bool havePython() {
    return !QStandardPaths::findExecutable("python3").isEmpty();
}

} // namespace

class TestTraceReader : public QObject {
    Q_OBJECT
private slots:
    void prefaulterStaysALeadAhead();
    void realSnapshots_data();
    void realSnapshots();
    void realChromeTraces();
    void realMemoryTimelineRaw();
    void liveSetAtPeakAddsUpToPeak();
    void liveSetMatchesBruteForce();
    void protocolJsonAndGzipVariantsAgree();
    void smallSnapshotReplay();
    void unknownFrameLine();
    void bareSegmentListAndLegacyFree();
    void hostileOpcodesAreRejected();
    void hostileStructure();
    void lastEventBeforeTheFirst();
    void truncationAtEveryByte();
    void sharedFramesAreNotCopied();
    void nvidiaSmiCsv();
    void memoryTimelineJson();
    void entriesBuiltKeyByKey();
    void memoKeepsEveryKindOfValue();
    void recordColumnsMovedOrCopied();
    void interleavedBatchesReadInOrder();
    void gzipFailsAtTheFirstBadByte();
    void gzipOfAnythingElseFailsAtOnce();
    void formatDetectedFromContent();
    void stagedLoadAndCancel();
};

void TestTraceReader::realSnapshots_data() {
    QTest::addColumn<QString>("file");
    for (const QString& f : QDir(traces() + "/snapshots").entryList({"*.pickle"}, QDir::Files, QDir::Name))
        QTest::newRow(qPrintable(f)) << traces() + "/snapshots/" + f;
}

void TestTraceReader::realSnapshots() {
    QFETCH(QString, file);
    const std::string bytes = readTextFile(file.toStdString(), 64u << 20);
    DataTree tree(bytes.size());
    const auto root = readPickle(bytes, tree);
    const Expected x = replaySnapshot(tree, root);
    const Trace trace = readTraceFile(file.toStdString());
    QCOMPARE(trace.format, TraceFormat::PytorchSnapshot);
    const TraceSummary s = summarize(trace);
    QCOMPARE(s.devices.size(), size_t(1));
    checkAgainst(s.devices[0], x);
    QVERIFY(s.devices[0].segments > 0);
    QVERIFY(trace.stacks.size() > 1 || s.devices[0].entries == 1);
}

void TestTraceReader::realChromeTraces() {
    for (const QString& f : QDir(traces() + "/chrome_traces").entryList({"*.json.gz"}, QDir::Files)) {
        const std::string path = (traces() + "/chrome_traces/" + f).toStdString();
        const json doc = json::parse(gunzip(readTextFile(path, 64u << 20), 1u << 30));
        // Independent: per device, the maximum and the last (by timestamp) of the totals, or of the running
        // sum.
        std::map<std::string, std::vector<std::pair<double, json>>> byDevice;
        for (const auto& e : doc.at("traceEvents"))
            if (e.value("name", "") == "[memory]") {
                const auto& a = e.at("args");
                const std::string key = a.at("Device Type").get<int>() == 0
                                            ? "cpu"
                                            : std::to_string(a.at("Device Id").get<int>());
                byDevice[key].push_back({e.at("ts").get<double>(), a});
            }
        const TraceSummary s = summarize(readTraceFile(path));
        QCOMPARE(s.format, TraceFormat::ChromeTrace);
        QCOMPARE(s.devices.size(), byDevice.size());
        for (const auto& d : s.devices) {
            auto events = byDevice.at(d.key);
            std::stable_sort(events.begin(), events.end(),
                             [](const auto& x, const auto& y) { return x.first < y.first; });
            long long sum = 0, peak = LLONG_MIN, last = 0, peakRes = 0;
            for (const auto& [ts, a] : events) {
                sum += a.at("Bytes").get<long long>();
                const long long total =
                    a.contains("Total Allocated") ? a.at("Total Allocated").get<long long>() : sum;
                peak = std::max(peak, total);
                last = total;
                if (a.contains("Total Reserved"))
                    peakRes = std::max(peakRes, a.at("Total Reserved").get<long long>());
            }
            QCOMPARE(static_cast<long long>(d.entries), static_cast<long long>(events.size()));
            QCOMPARE(d.peakAllocated, peak);
            QCOMPARE(d.finalAllocated, last);
            QCOMPARE(d.peakReserved, peakRes);
        }
    }
}

void TestTraceReader::realMemoryTimelineRaw() {
    const std::string path = (traces() + "/memory_timeline/HTA_memory_timeline.raw.gz").toStdString();
    const json doc = json::parse(gunzip(readTextFile(path, 64u << 20), 1u << 30));
    long long sum = 0, peak = LLONG_MIN;
    for (const auto& e : doc) {
        sum += e.at(2).get<long long>();
        peak = std::max(peak, sum);
    }
    const TraceSummary s = summarize(readTraceFile(path));
    QCOMPARE(s.format, TraceFormat::MemoryTimelineRaw);
    QCOMPARE(s.devices.at(0).peakAllocated, peak);
    QCOMPARE(s.devices.at(0).finalAllocated, sum);
    QCOMPARE(static_cast<long long>(s.devices.at(0).entries), static_cast<long long>(doc.size()));
}

void TestTraceReader::liveSetAtPeakAddsUpToPeak() {
    for (const char* f : {"cs336_MAGMA27_memory_snapshot.pickle", "DeComFL_memory.pickle",
                          "cs336_bcrafton_memory_snapshot.pickle"}) {
        const auto loaded = loadTrace((traces() + "/snapshots/" + f).toStdString());
        const TraceIndex& index = *loaded->indexes.at(0);
        long long sum = 0;
        for (const auto& a : index.liveAtPeak())
            sum += a.size;
        QCOMPARE(sum, loaded->summary.devices[0].peakAllocated);
        const MemoryState peak = index.stateAfter(index.peakAfter());
        QCOMPARE(peak.allocated, loaded->summary.devices[0].peakAllocated);
        QVERIFY(peak.reserved >= peak.allocated);
        QVERIFY(peak.largestFreeBlock >= 0 && peak.largestFreeBlock <= peak.fragmentation() + 4096);
    }
}

void TestTraceReader::liveSetMatchesBruteForce() {
    const auto loaded = loadTrace((traces() + "/snapshots/DeComFL_memory.pickle").toStdString());
    const TraceIndex& index = *loaded->indexes.at(0);
    std::mt19937 rng(7);
    for (int q = 0; q < 40; ++q) {
        const std::size_t k = std::uniform_int_distribution<std::size_t>(0, index.events() - 1)(rng);
        long long brute = 0;
        for (const auto& a : index.allocations())
            if ((a.start == kBeforeFirstEvent || a.start <= k) && a.end > k)
                brute += a.size;
        long long fast = 0;
        for (const auto& a : index.liveAfter(k))
            fast += a.size;
        QCOMPARE(fast, brute);
        QCOMPARE(fast, index.stateAfter(k).allocated);
    }
}

void TestTraceReader::protocolJsonAndGzipVariantsAgree() {
    // python3 is a test dependency (scripts/install-deps --test): its absence is a failure, not a skip.
    QVERIFY2(havePython(), "python3 is not installed: pickle.dump variants cannot be generated");
    QTemporaryDir dir;
    const QString src = traces() + "/snapshots/cs336_MAGMA27_memory_snapshot.pickle";
    // CPython writes the variants; loading this known plain-data file in Python is safe.
    const QString script =
        QStringLiteral("import pickle, json, gzip, sys\n"
                       "d = pickle.load(open(sys.argv[1], 'rb'))\n"
                       "for p in (2, 3, 4, 5):\n"
                       "    pickle.dump(d, open(sys.argv[2] + '/p%d.pickle' % p, 'wb'), protocol=p)\n"
                       "json.dump(d, open(sys.argv[2] + '/s.json', 'w'))\n"
                       "gzip.open(sys.argv[2] + '/p4.pickle.gz', 'wb').write(pickle.dumps(d, protocol=4))\n");
    QProcess py;
    py.start("python3", {"-c", script, src, dir.path()});
    QVERIFY(py.waitForFinished(60000));
    QCOMPARE(py.exitCode(), 0);
    const TraceSummary reference = summarize(readTraceFile(src.toStdString()));
    for (const char* name : {"p2.pickle", "p3.pickle", "p4.pickle", "p5.pickle", "s.json", "p4.pickle.gz"}) {
        const Trace t = readTraceFile(dir.filePath(name).toStdString());
        QCOMPARE(t.format, QByteArray(name).endsWith(".json") ? TraceFormat::PytorchSnapshotJson
                                                              : TraceFormat::PytorchSnapshot);
        const TraceSummary s = summarize(t);
        const DeviceSummary &a = s.devices.at(0), &b = reference.devices.at(0);
        QCOMPARE(a.entries, b.entries);
        QVERIFY(a.actions == b.actions);
        QCOMPARE(a.peakAllocated, b.peakAllocated);
        QCOMPARE(a.peakActive, b.peakActive);
        QCOMPARE(a.peakReserved, b.peakReserved);
        QCOMPARE(a.finalAllocated, b.finalAllocated);
        QCOMPARE(a.segments, b.segments);
    }
}

void TestTraceReader::smallSnapshotReplay() {
    const Trace t = readTrace(smallSnapshot());
    const DeviceSummary d = summarize(t).devices.at(0);
    QCOMPARE(d.finalAllocated, 1000LL);
    QCOMPARE(d.finalReserved, 4096LL);
    QCOMPARE(d.peakAllocated, 3000LL);
    QCOMPARE(d.peakReserved, 4096LL);
    QCOMPARE(d.entries, size_t(5));
    QCOMPARE(t.stacks.size(), size_t(2)); // "no stack" + the one shared stack
    QCOMPARE(t.strings[t.stacks[1][0].filename], std::string("model.py"));
}

// PyTorch writes a frame whose line it could not read as size_t(-1): kkaitlyn111/cs336-a2-systems'
// memory_small_forward.pickle (commit 46eae3f, torch 2.7 with stacks='all') has
// torch/_subclasses/fake_tensor.py's init_gpu_context at line 18446744073709551615, pickled as LONG1 of nine
// bytes (eight 0xff, then 0x00 for the sign). That is an unknown line, not a broken file; a line that is not
// an integer still is.
void TestTraceReader::unknownFrameLine() {
    const std::string unknown = std::string("\x8a\x09", 2) + std::string(8, '\xff') + std::string(1, '\0');
    const Trace t = readTrace(smallSnapshot(4, unknown));
    bool found = false;
    for (const auto& st : t.stacks)
        for (const Frame& f : st)
            if (t.strings.at(f.filename) == "model.py") {
                QCOMPARE(f.line, std::int64_t(0)); // shown without a line, as C++ frames are
                QCOMPARE(frameText(t, f), std::string("forward (model.py)"));
                found = true;
            }
    QVERIFY(found);
    // A line that is not an integer is refused, naming the field.
    expectError(smallSnapshot(4, std::string("\x8c\x02") + "54"), "frames[0].line: must be an integer");
}

void TestTraceReader::bareSegmentListAndLegacyFree() {
    // The oldest snapshots are a bare list of segments, with blocks tiling the segment in order.
    PickleWriter w(2);
    w.beginList();
    w.beginDict();
    w.str("device"), w.integer(1), w.str("address"), w.integer(4096), w.str("total_size"), w.integer(8192);
    w.str("blocks");
    w.beginList();
    for (const auto& [size, state] :
         {std::pair{1024, "active_allocated"}, {2048, "inactive"}, {5120, "active_pending_free"}}) {
        w.beginDict();
        w.str("size"), w.integer(size), w.str("state"), w.str(state);
        w.endDict();
    }
    w.endList();
    w.endDict();
    w.endList();
    const Trace t = readTrace(w.finish());
    QCOMPARE(t.devices.size(), size_t(1));
    QCOMPARE(t.devices[0].key, std::string("1"));
    QCOMPARE(t.devices[0].segments[0].blocks[2].address, std::uint64_t(4096 + 1024 + 2048));
    const DeviceSummary d = summarize(t).devices[0];
    QCOMPARE(d.finalAllocated, 1024LL);
    QCOMPARE(d.finalActive, 1024LL + 5120);
    QCOMPARE(d.finalReserved, 8192LL);
    QCOMPARE(d.entries, size_t(0));
    // A legacy "free" is requested and completed at once.
    const Trace legacy = readTrace(std::string(
        R"({"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": 100}, {"action": "free", "addr": 1, "size": 100}]]})"));
    const DeviceSummary l = summarize(legacy).devices[0];
    QCOMPARE(l.peakAllocated, 100LL);
    QCOMPARE(l.peakActive, 100LL);
    QCOMPARE(l.finalActive, 0LL);
    QCOMPARE(legacy.format, TraceFormat::PytorchSnapshotJson);
}

void TestTraceReader::hostileOpcodesAreRejected() {
    struct Case {
        const char* bytes;
        std::size_t length;
        const char* message;
    };
    const Case cases[] = {
        {"\x80\x02"
         "cos\nsystem\n"
         "\x8c\x02ls\x85R.",
         20, "GLOBAL (0x63) is not allowed"},
        {"\x80\x04\x8c\x02os\x8c\x06system\x93.", 16, "STACK_GLOBAL"},
        {"\x80\x02N)R.", 6, "REDUCE"},
        {"\x80\x02}}b.", 6, "BUILD"},
        {"\x80\x02(ios\nsystem\n.", 15, "INST"},
        {"\x80\x02(N)o.", 7, "OBJ"},
        {"\x80\x02N)\x81.", 6, "NEWOBJ"},
        {"\x80\x02N)}\x92.", 7, "NEWOBJ_EX"},
        {"\x80\x02Pid\n.", 7, "PERSID"},
        {"\x80\x02NQ.", 5, "BINPERSID"},
        {"\x80\x02\x82\x01.", 5, "EXT1"},
        {"\x80\x05\x97.", 4, "NEXT_BUFFER"},
        {"\x80\x05N\x98.", 5, "READONLY_BUFFER"},
        {"\x80\x04\x8f.", 4, "EMPTY_SET"},
        {"\x80\x02S'x'\n.", 8, "STRING"},
        {"\x80\x02\xff.", 4, "unknown opcode 0xff"},
    };
    for (const Case& c : cases) {
        const std::string bytes(c.bytes, c.length);
        try {
            DataTree t(bytes.size());
            readPickle(bytes, t);
            QFAIL(c.message);
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains(c.message), e.what());
            QVERIFY2(QString::fromStdString(e.where()).startsWith("byte "), e.what());
        }
    }
    // The offset is the opcode's: GLOBAL sits at byte 2.
    expectError(std::string("\x80\x02"
                            "cos\nsystem\n.",
                            14),
                "byte 2: opcode GLOBAL");
}

void TestTraceReader::lastEventBeforeTheFirst() {
    // A snapshot whose last event is a microsecond before its first: the profile's span is zero, which
    // once made a bucket from NaN (a finding of fuzz_json; undefined behaviour, caught by the sanitizer
    // build). Every event lands in the first bucket.
    const TraceSummary s = summarize(readTrace(
        R"({"segments": [], "device_traces": [[{"action": "segment_alloc", "addr": 1048576, "size": 4096,)"
        R"( "stream": 0, "time_us": 1}, {"action": "alloc", "addr": 1048576, "size": 1000, "stream": 0,)"
        R"( "time_us": 0, "frames": []}]]})"));
    QCOMPARE(s.devices.size(), std::size_t(1));
    const DeviceSummary& d = s.devices.front();
    QVERIFY(!d.profile.empty());
    for (std::int64_t v : d.profile) // one bucket holds both events, every later one what they left
        QCOMPARE(v, d.profile.front());
}

void TestTraceReader::hostileStructure() {
    expectError(std::string("\x80\x04h\x05.", 5), "memo index 5 is out of range");
    expectError(std::string("\x80\x04N\x94h\x07.", 7), "memo index 7 is out of range");
    expectError(std::string("\x80\x04Nr\x10\x00\x00\x00.", 9), "out of order");
    expectError(std::string("\x80\x04X\xff\xff\xff\xff"
                            "abc.",
                            11),
                "exceeds");
    expectError(std::string("\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f.", 12), "exceeds");
    expectError(std::string("\x80\x04\x8b\xff\xff\xff\x7f.", 8), "exceeds");
    expectError(std::string("\x80\x04\x8c\x09"
                            "abc",
                            7),
                "runs past the end");
    expectError(std::string("\x80\x01N.", 4), "protocol 1 is not supported");
    expectError(std::string("\x80\x04N"
                            "N.",
                            5),
                "STOP with 2 values");
    expectError(std::string("\x80\x04"
                            "e.",
                            4),
                "no MARK");
    expectError(std::string("\x80\x04Na.", 5), "APPEND");
    expectError(std::string("\x80\x04NN"
                            "(NNu.",
                            9),
                "SETITEMS");
    // Deep nesting: 100,000 marks, and lists nested 10,000 deep through APPEND.
    expectError(std::string("\x80\x04") + std::string(100000, '('), "nested marks");
    std::string chain("\x80\x04");
    chain += std::string(10000, ']');
    chain += std::string(9999, 'a');
    chain += '.';
    expectError(chain, "nested deeper than");
    // A list containing itself is refused: no reader of the tree can then loop or recurse forever.
    expectError(std::string("\x80\x04]\x94h\x00"
                            "a.",
                            8),
                "cyclic");
    // The memo cannot bypass the nesting limit: X = [] (memo 0), Y = [X], then GET X and APPEND a list to
    // it would make Y deeper than the depth recorded for it. Repeated, that nested without bound.
    expectError(std::string("\x80\x04]\x94]h\x00"
                            "ah\x00]a0.",
                            13),
                "already inside another");
    // The closing edge of a two-list cycle (Y = [X], then X.append(Y)) is refused the same way.
    expectError(std::string("\x80\x04]\x94]\x94h\x00"
                            "ah\x00h\x01"
                            "a0.",
                            16),
                "already inside another");
    // Extending a placed container without deepening it stays legal (a list filled after being shared).
    const std::string shallow("\x80\x04]\x94"
                              "0]h\x00"
                              "ah\x00K\x07"
                              "a0.",
                              16);
    DataTree t(shallow.size());
    const auto root = readPickle(shallow, t);
    QCOMPARE(t.size(root), size_t(1));
    QCOMPARE(t.size(t.at(root, 0)), size_t(1));
    // Snapshot-level errors name the field.
    PickleWriter w;
    w.beginDict();
    w.str("segments");
    w.integer(3);
    w.endDict();
    expectError(w.finish(), "segments: must be a list");
}

void TestTraceReader::truncationAtEveryByte() {
    const std::string full = smallSnapshot();
    QVERIFY(full.size() > 300);
    for (std::size_t n = 0; n < full.size(); ++n) {
        try {
            readTrace(std::string_view(full.data(), n));
            QFAIL(qPrintable(QStringLiteral("a prefix of %1 bytes was accepted").arg(n)));
        } catch (const Error& e) {
            QVERIFY(e.what()[0] != '\0');
        }
    }
    QCOMPARE(summarize(readTrace(full)).devices.at(0).entries, size_t(5));
    // A corrupt byte anywhere never crashes: every single-byte change is either read or an Error.
    for (std::size_t i = 2; i < full.size(); ++i) {
        std::string bad = full;
        bad[i] = static_cast<char>(bad[i] ^ 0x5a);
        try {
            readTrace(bad);
        } catch (const Error&) {
        }
    }
}

void TestTraceReader::sharedFramesAreNotCopied() {
    // 200,000 entries referencing one memoized 50-frame stack: read without copying it 200,000 times.
    PickleWriter w;
    w.beginDict();
    w.str("segments");
    w.beginList();
    w.endList();
    w.str("device_traces");
    w.beginList();
    w.beginList();
    const auto frames = w.beginList();
    for (int f = 0; f < 50; ++f) {
        w.beginDict();
        w.str("name"), w.str("fn" + std::to_string(f)), w.str("filename"), w.str("x.py"), w.str("line"),
            w.integer(f);
        w.endDict();
    }
    w.endList();
    w.raw("0");
    for (int i = 0; i < 200000; ++i) {
        w.beginDict();
        w.str("action"), w.str(i % 2 ? "free_requested" : "alloc"), w.str("addr"), w.integer(4096 * (i / 2));
        w.str("size"), w.integer(512), w.str("stream"), w.integer(0), w.str("frames"), w.get(frames);
        w.endDict();
    }
    w.endList();
    w.endList();
    w.endDict();
    const std::string bytes = w.finish();
    const Trace t = readTrace(bytes);
    QCOMPARE(t.stacks.size(), size_t(2));
    QCOMPARE(t.devices.at(0).entries(), size_t(200000));
    QCOMPARE(summarize(t).devices.at(0).peakAllocated, 512LL);
}

void TestTraceReader::nvidiaSmiCsv() {
    const std::string withUnits = "timestamp, index, memory.used [MiB], memory.total [MiB]\n"
                                  "2024/01/15 10:20:30.123, 0, 1024 MiB, 81559 MiB\n"
                                  "2024/01/15 10:20:30.123, 1, 2048 MiB, 81559 MiB\n"
                                  "2024/01/15 10:20:31.123, 0, 40960 MiB, 81559 MiB\n"
                                  "2024/01/15 10:20:31.123, 1, 512 MiB, 81559 MiB\n";
    const std::string noUnits =
        "2024/01/15 10:20:30.123, 0, 1024, 81559\n2024/01/15 10:20:30.123, 1, 2048, 81559\n"
        "2024/01/15 10:20:31.123, 0, 40960, 81559\n2024/01/15 10:20:31.123, 1, 512, 81559\n";
    for (const std::string& text : {withUnits, noUnits}) {
        const Trace t = readTrace(text);
        QCOMPARE(t.format, TraceFormat::NvidiaSmiCsv);
        const TraceSummary s = summarize(t);
        QCOMPARE(s.devices.size(), size_t(2));
        QCOMPARE(s.devices[0].peakReserved, 40960LL << 20);
        QCOMPARE(s.devices[1].peakReserved, 2048LL << 20);
        QCOMPARE(s.devices[1].finalReserved, 512LL << 20);
        QCOMPARE(t.devices[0].time[1] - t.devices[0].time[0], 1000000LL);
        // Used memory alone: no allocated bytes are recorded (not a peak of 0), and the peak the views
        // mark is reserved's, after device 0's second sample and device 1's first.
        QVERIFY(!s.devices[0].allocatedRecorded && !s.devices[1].allocatedRecorded);
        QCOMPARE(s.devices[0].peakReservedAfter, size_t(1));
        QCOMPARE(s.devices[1].peakReservedAfter, size_t(0));
        QCOMPARE(s.devices[0].peakReservedUs - s.devices[0].firstUs, std::int64_t(1'000'000));
        QCOMPARE(s.devices[0].profile.back(), 40960LL << 20); // reserved drawn, where allocated is not
        QCOMPARE(busiestDevice(s), size_t(0));
    }
    // The busiest of a node's GPUs is the one that used the most (device 1 here): compared by allocated,
    // which such a log does not record, every device tied at 0 and the first was taken.
    QCOMPARE(busiestDevice(summarize(readTrace("2024/01/15 10:20:30.123, 0, 1024, 81559\n"
                                               "2024/01/15 10:20:30.123, 1, 30000, 81559\n"))),
             size_t(1));
    // Files that record allocations do record allocated bytes.
    QVERIFY(summarize(readTrace(R"([[1000, 2000, 3000], [[0, 10, 5], [0, 100, 5], [0, 20, 0]]])"))
                .devices.at(0)
                .allocatedRecorded);
    expectError("timestamp, index, memory.used [MiB], memory.total [MiB]\n2024/01/15 10:20:30.123, 0, lots "
                "MiB, 1 MiB\n",
                "line 2 (byte 56), memory.used");
}

void TestTraceReader::memoryTimelineJson() {
    const Trace t = readTrace(R"([[1000, 2000, 3000], [[0, 10, 5], [0, 100, 5], [0, 20, 0]]])");
    QCOMPARE(t.format, TraceFormat::MemoryTimeline);
    const DeviceSummary d = summarize(t).devices.at(0);
    QCOMPARE(d.peakAllocated, 105LL);
    QCOMPARE(d.finalAllocated, 20LL);
    QCOMPARE(d.entries, size_t(3));
    expectError(R"([[1, 2], [[1]]])", "rows");
    expectError(R"({"x": 1})", "neither a profiler trace");
    expectError("[[1], 2, ", "byte");
    // A list of numbers is no trace: refused at its first item, not after reading it all.
    expectError("[1, 2, 3]", "a JSON list of a kind Headroom does not know");
}

void TestTraceReader::formatDetectedFromContent() {
    QTemporaryDir dir;
    // A pickle named .json and a JSON trace named .pickle are read by what they are.
    const QString a = dir.filePath("snapshot.json"), b = dir.filePath("trace.pickle");
    QFile fa(a), fb(b);
    QVERIFY(fa.open(QIODevice::WriteOnly) && fb.open(QIODevice::WriteOnly));
    fa.write(QByteArray::fromStdString(smallSnapshot()));
    fb.write(
        R"({"traceEvents": [{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 64, "Total Allocated": 64, "Total Reserved": 2097152}}]})");
    fa.close();
    fb.close();
    QCOMPARE(readTraceFile(a.toStdString()).format, TraceFormat::PytorchSnapshot);
    QCOMPARE(readTraceFile(b.toStdString()).format, TraceFormat::ChromeTrace);
    // Profiler OOM events carry no address: the index must still build (a fuzzer found this).
    const Trace oom = readTrace(std::string(
        R"({"traceEvents": [{"ph": "i", "name": "[OutOfMemory]", "ts": 3, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 999}}]})"));
    const TraceSummary oomSummary = summarize(oom);
    const TraceIndex oomIndex(oom.devices.at(0), oomSummary.devices.at(0));
    QCOMPARE(oomIndex.ooms().size(), size_t(1));
    QCOMPARE(oomIndex.ooms()[0].requested, 999LL);
    try {
        readTraceFile(dir.filePath("missing").toStdString());
        QFAIL("missing file");
    } catch (const Error& e) {
        QVERIFY(QString(e.what()).startsWith(dir.filePath("missing")));
    }
    expectError(std::string("\x00\x01\x02", 3), "unrecognised format");
    // Numbers no real trace has (fuzzer findings): no overflow, no out-of-range conversion, no crash.
    const Trace huge = readTrace(std::string(
        R"({"traceEvents": [{"ph": "i", "name": "[memory]", "ts": 1e300, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 1e43}},)"
        R"({"ph": "i", "name": "[memory]", "ts": -1e300, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 9e18, "Total Allocated": 1e300}}]})"));
    QCOMPARE(summarize(huge).devices.size(), size_t(1));
    (void)readTrace(std::string(R"([[1e300, 2], [[1e300, 9e18, 9e18], [-1e300]]])"));
    (void)readTrace(std::string(R"([[0, 1, 9223372036854775807, 0], [0, 1, 9223372036854775807, 0]])"));
    expectError("2024/01/15 10:20:30.123, 0, 99999999999999999999999 MiB, 1\n", "memory.used");
    expectError("1e308/01/15 10:20:30.123, 0, 5 MiB, 1\n", "timestamp");
    expectError(std::string("\x1f\x8b\x08\x00garbage", 12), "gzip");
}

void TestTraceReader::stagedLoadAndCancel() {
    // loadTrace, which the window runs off the GUI thread: the summary arrives before the indexes are
    // built, and a progress report that says stop cancels it.
    QTemporaryDir dir;
    const QString path = dir.filePath("s.pickle");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(smallSnapshot()));
    f.close();
    std::vector<std::string> stages;
    auto loaded = loadTrace(
        path.toStdString(), [&](double) { return true; },
        [&](const TraceSummary& s) {
            stages.push_back("summary " + std::to_string(s.devices.at(0).peakAllocated) + " with " +
                             std::to_string(0) + " indexes");
        });
    stages.push_back("details " + std::to_string(loaded->indexes.size()));
    QCOMPARE(stages.size(), size_t(2));
    QCOMPARE(stages[0], std::string("summary 3000 with 0 indexes"));
    QCOMPARE(stages[1], std::string("details 1"));

    // Cancelling: the first progress report that returns false stops the read with "cancelled", naming the
    // file, before the 300,000 items are parsed.
    PickleWriter w;
    w.beginList();
    for (int i = 0; i < 300000; ++i)
        w.integer(i);
    w.endList();
    const QString big = dir.filePath("big.pickle");
    QFile g(big);
    QVERIFY(g.open(QIODevice::WriteOnly));
    g.write(QByteArray::fromStdString(w.finish()));
    g.close();
    int reports = 0;
    try {
        loadTrace(big.toStdString(), [&](double) { return ++reports < 2; });
        QFAIL("not cancelled");
    } catch (const Error& e) {
        QVERIFY2(QString(e.what()).endsWith(": cancelled"), e.what());
        QVERIFY2(QString(e.what()).startsWith(big), e.what());
    }
    QCOMPARE(reports, 2);
}

void TestTraceReader::entriesBuiltKeyByKey() {
    // A writer other than CPython may fill an entry one SETITEM at a time. It used to become a compact
    // record as soon as it had an action and a size, and the next SETITEM then failed; it now stays a dict
    // and is read the same. CPython's pickle.loads gives the same entry for these bytes.
    std::string p("\x80\x02}(\x8c\x08segments]\x8c\x0d"
                  "device_traces]]}",
                  33);
    auto setitem = [&](const char* key, const std::string& value) {
        p += '\x8c';
        p += static_cast<char>(std::strlen(key));
        p += key;
        p += value;
        p += 's';
    };
    setitem("action", std::string("\x8c\x05"
                                  "alloc",
                                  7));
    setitem("size", std::string("K\x40", 2));
    setitem("addr", std::string("M\x00\x10", 3));
    setitem("time_us", std::string("K\x07", 2));
    p += "aau.";
    const Trace t = readTrace(p);
    QCOMPARE(t.devices.at(0).entries(), std::size_t(1));
    QCOMPARE(t.devices.at(0).size[0], std::int64_t(64));
    QCOMPARE(t.devices.at(0).addr[0], std::uint64_t(4096));
    QCOMPARE(t.devices.at(0).time[0], std::int64_t(7));
}

void TestTraceReader::memoKeepsEveryKindOfValue() {
    // The memo packs containers and strings into 4 bytes and keeps other values beside: a negative int
    // (memo 0, kept beside), a string (memo 1, packed), then memo 0 overwritten by a list (BINPUT 0).
    // CPython's pickle.loads gives [[-2, 'hi']] for these bytes.
    const std::string p("\x80\x04J\xfe\xff\xff\xff\x94" // -2 -> memo 0 (wide)
                        "0"                             // pop it
                        "\x8c\x02hi\x94"                // "hi" -> memo 1 (packed)
                        "0"
                        "]h\x00"
                        "ah\x01"
                        "a"     // [-2, "hi"]
                        "q\x00" // memo 0 := the list (wide entry replaced)
                        "0]h\x00"
                        "a.", // [[-2, "hi"]]
                        30);
    DataTree t(p.size());
    const auto root = readPickle(p, t);
    QCOMPARE(t.size(root), std::size_t(1));
    const auto inner = t.at(root, 0);
    QCOMPARE(t.size(inner), std::size_t(2));
    long long v = 0;
    QVERIFY(t.toInt(t.at(inner, 0), &v));
    QCOMPARE(v, -2LL);
    QCOMPARE(std::string(t.str(t.at(inner, 1))), std::string("hi"));
}

void TestTraceReader::recordColumnsMovedOrCopied() {
    // One device: the tree's record columns become the device's columns. Two devices: each list is
    // copied entry by entry. Both give the same events; an entry without time_us is timed by its index,
    // and one that writes INT64_MIN (the tree's "no time" mark) keeps a time of INT64_MIN + 1.
    auto snapshot = [](int devices) {
        PickleWriter w;
        w.beginDict();
        w.str("segments");
        w.beginList();
        w.endList();
        w.str("device_traces");
        w.beginList();
        for (int d = 0; d < devices; ++d) {
            w.beginList();
            for (int i = 0; i < 3; ++i) {
                w.beginDict();
                w.str("action"), w.str(i == 2 ? "free_requested" : "alloc");
                w.str("addr"), w.integer(4096 * (d * 10 + i));
                w.str("size"), w.integer(512 * (i + 1));
                if (i == 0)
                    w.str("time_us"), w.integer(std::numeric_limits<long long>::min());
                else if (i == 2)
                    w.str("time_us"), w.integer(77);
                w.endDict();
            }
            w.endList();
        }
        w.endList();
        w.endDict();
        return w.finish();
    };
    for (int devices : {1, 2}) {
        const Trace t = readTrace(snapshot(devices));
        QCOMPARE(t.devices.size(), std::size_t(devices));
        for (const DeviceTrace& dev : t.devices) {
            QCOMPARE(dev.entries(), std::size_t(3));
            QCOMPARE(dev.time[0], std::numeric_limits<std::int64_t>::min() + 1);
            QCOMPARE(dev.time[1], std::int64_t(1)); // no time_us: its index
            QCOMPARE(dev.time[2], std::int64_t(77));
            QCOMPARE(dev.action[2], TraceAction::FreeRequested);
            QCOMPARE(dev.size[2], std::int64_t(1536));
            QCOMPARE(dev.stack[0], std::uint32_t(0));
            QCOMPARE(dev.actionCounts.at("alloc"), std::uint64_t(2));
        }
        QCOMPARE(t.devices.back().addr[1], std::uint64_t(4096 * ((devices - 1) * 10 + 1)));
    }
}

void TestTraceReader::interleavedBatchesReadInOrder() {
    // CPython writes a list in APPENDS batches of 1,000 and a dict in SETITEMS batches, with the items'
    // own containers between the batches: the list's items then lie in many separate runs. Items must
    // come back in order (and in time linear in the count: bench/trace_bench.py measures that).
    PickleWriter w;
    w.beginDict(); // root {"l": [...], "d": {...}}
    w.str("l");
    w.raw("]");
    std::string list;
    const int n = 25'000;
    for (int i = 0; i < n; ++i) {
        if (i % 997 == 0)
            w.raw(i == 0 ? "(" : "e(");
        w.raw("]"); // a one-item list [i]: its item lands between the outer list's runs
        w.integer(i);
        w.raw("a");
    }
    w.raw("e");
    w.str("d");
    w.raw("}");
    for (int i = 0; i < 3000; ++i) {
        if (i % 100 == 0)
            w.raw(i == 0 ? "(" : "u(");
        w.str(std::string("k").append(std::to_string(i)));
        w.raw("]");
        w.integer(-i);
        w.raw("a");
    }
    w.raw("u");
    w.endDict();
    const std::string bytes = w.finish();
    DataTree t(bytes.size());
    const auto root = readPickle(bytes, t);
    const auto l = t.get(root, "l"), d = t.get(root, "d");
    QCOMPARE(t.size(l), size_t(n));
    for (int i = 0; i < n; ++i) {
        long long v = -1;
        QVERIFY(t.toInt(t.at(t.at(l, std::size_t(i)), 0), &v));
        QCOMPARE(v, static_cast<long long>(i));
    }
    QCOMPARE(t.at(l, std::size_t(n)), DataTree::kNone);
    QCOMPARE(t.size(d), size_t(3000));
    for (int i = 0; i < 3000; i += 7) {
        QCOMPARE(std::string(t.str(t.keyAt(d, std::size_t(i)))), std::string("k").append(std::to_string(i)));
        long long v = 1;
        QVERIFY(t.toInt(t.at(t.valueAt(d, std::size_t(i)), 0), &v));
        QCOMPARE(v, -static_cast<long long>(i));
    }
}

namespace {
std::string gzipOf(const std::string& data) {
    z_stream z{};
    deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
    std::string out(deflateBound(&z, data.size()), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}
} // namespace

void TestTraceReader::gzipFailsAtTheFirstBadByte() {
    // 1,002 good bytes, a bad opcode, then 2 GiB of zeros in 64 gzip members of 32 MiB each (2 MB
    // compressed). Decompressing it all first took 15.7 s and 4.2 GB before the error.
    const std::string zeros(std::size_t(32) << 20, '\0');
    std::string bad;
    bad.reserve(zeros.size() + 1003);
    bad.append("\x80\x04", 2);
    for (int i = 0; i < 500; ++i)
        bad.append("N0", 2);
    bad.push_back('\xff');
    bad.append(zeros);
    std::string file = gzipOf(bad);
    std::string().swap(bad);
    const std::string member = gzipOf(zeros);
    for (int i = 0; i < 63; ++i)
        file += member;
    QVERIFY(file.size() < std::size_t(3) << 20);
    GzipReader gz(file, std::size_t(16) << 30);
    DataTree tree(0);
    ReadLimits limits;
    limits.copyStrings = true;
    try {
        readPickle(gz, tree, limits);
        QFAIL("a bad opcode was accepted");
    } catch (const Error& e) {
        QCOMPARE(QString::fromStdString(e.where()), QString("decompressed byte 1002"));
        QVERIFY2(QString::fromStdString(e.why()).contains("unknown opcode 0xff"), e.what());
    }
    // Only what the reader asked for was decoded: at most a few MiB of the 2 GiB.
    QVERIFY2(gz.produced() <= std::size_t(8) << 20, std::to_string(gz.produced()).c_str());
    // The same through readTrace, as the CLI and the window open it.
    expectError(file, "decompressed byte 1002");
    // A gzip of a good snapshot streams to the same summary as the plain pickle.
    const std::string plain = smallSnapshot();
    const TraceSummary a = summarize(readTrace(plain)), b = summarize(readTrace(gzipOf(plain)));
    QCOMPARE(b.devices.at(0).peakAllocated, a.devices.at(0).peakAllocated);
    QCOMPARE(b.devices.at(0).entries, a.devices.at(0).entries);
    // A gzip inside a gzip is still read.
    QCOMPARE(summarize(readTrace(gzipOf(gzipOf(plain)))).devices.at(0).peakAllocated,
             a.devices.at(0).peakAllocated);
    // A truncated gzip names the compressed offset.
    const std::string gz2 = gzipOf(plain);
    expectError(gz2.substr(0, gz2.size() / 2), "truncated");
    // JSON streams through the same reader; a syntax error names its byte in the decoded stream.
    expectError(gzipOf("{\"traceEvents\": [1, 2,, 3]}"), "decompressed byte 23: invalid JSON");
}

// A gzip whose content is no trace fails on its first decoded bytes, whatever follows: 4 GiB of text in
// 256 members of 16 MiB (inflating it all first took 15.2 s and 4.4 GB to fail at "byte 0").
void TestTraceReader::gzipOfAnythingElseFailsAtOnce() {
    const std::size_t memberBytes = std::size_t(16) << 20;
    auto repeat = [&](const std::string& line) {
        std::string text;
        text.reserve(memberBytes + line.size());
        while (text.size() < memberBytes)
            text += line;
        text.resize(memberBytes);
        return gzipOf(text);
    };
    auto file = [&](const std::string& first, const std::string& rest) {
        std::string out = gzipOf(first);
        const std::string member = repeat(rest);
        for (int i = 0; i < 256; ++i)
            out += member;
        return out;
    };
    // Text: unrecognised at the first decoded byte, which the error names as such.
    const std::string text = file("lorem ipsum dolor sit amet\n", "lorem ipsum dolor sit amet\n");
    expectError(text, "decompressed byte 0: unrecognised format (starts with 0x6c)");
    GzipReader probe(text, std::size_t(16) << 30);
    (void)probe.peek(4096);
    QVERIFY2(probe.produced() <= 4096, std::to_string(probe.produced()).c_str()); // the peek decides
    // Nested: the inner gzip is read through its own decoder, not inflated whole; the error says where.
    expectError(gzipOf(text), "decompressed byte 0 of the gzip inside (level 2): unrecognised format");
    // Deeper than three levels is refused.
    expectError(gzipOf(gzipOf(gzipOf(gzipOf("x")))), "gzip nested more than 3 deep");
    // Comma-separated text is read a line at a time as nvidia-smi CSV and fails at its first bad line.
    expectError(file("2024/01/15 10:20:30.123, 0, 1024 MiB, 81920 MiB\nnot, a, log\n", "not, a, log\n"),
                "line 2 (decompressed byte 48), memory.used: expected MiB"); // 47 characters and a newline
    // A "line" longer than nvidia-smi writes is refused when it gets that long.
    expectError(file("a,b", std::string(1000, 'x')), "decompressed byte 0: a line longer than 65536 bytes");
    // JSON of another kind: a list of numbers at its first item, an object without a trace's keys after
    // its first 262,144 values (at their decoded offset), never after the 4 GiB.
    expectError(file("[1,", "1,"), "decompressed byte 3: a JSON list of a kind Headroom does not know");
    expectError(file("{\"a\": [", "1,"), "decompressed byte 524295: a JSON object that is neither");
    // A real trace inside two gzips still reads (the CSV test file, compressed twice).
    const std::string csv = "timestamp, index, memory.used [MiB], memory.total [MiB]\n"
                            "2024/01/15 10:20:30.123, 0, 1024 MiB, 81920 MiB\n";
    QCOMPARE(readTrace(gzipOf(gzipOf(csv))).format, TraceFormat::NvidiaSmiCsv);
}

void TestTraceReader::prefaulterStaysALeadAhead() {
    // A 64 MiB column, 2 MiB aligned as HugePageAllocator maps them, 11 MiB of it used: the prefaulter
    // makes present the whole 2 MiB steps from the one the filler is in (10 MiB) up to 4 MiB past what it
    // used (15 MiB): 10 to 14 MiB, and nothing else.
    constexpr std::size_t kMiB = std::size_t(1) << 20, kLength = 64 * kMiB;
    void* raw =
        ::mmap(nullptr, kLength + 2 * kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    QVERIFY(raw != MAP_FAILED);
    auto* base =
        reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(raw) + 2 * kMiB - 1) & ~(2 * kMiB - 1));
    ::madvise(base, kLength, MADV_NOHUGEPAGE); // page-granular residency, whatever the THP setting
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    auto resident = [&](std::size_t from, std::size_t to) { // pages of [from, to) in memory
        std::vector<unsigned char> v((to - from) / page);
        if (::mincore(base + from, to - from, v.data()) != 0)
            return std::size_t(0);
        return static_cast<std::size_t>(
            std::count_if(v.begin(), v.end(), [](unsigned char c) { return c & 1; }));
    };
    {
        Prefaulter prefaulter(4 * kMiB);
        prefaulter.advance({GrowingBlock{base, 11 * kMiB, kLength}});
#ifdef HEADROOM_ASAN
        // Under AddressSanitizer the columns are heap blocks and the prefaulter stands aside.
        QTest::qWait(200);
        QCOMPARE(resident(0, kLength), std::size_t(0));
#else
        QTRY_COMPARE_WITH_TIMEOUT(resident(10 * kMiB, 14 * kMiB), 4 * kMiB / page, 5000);
        QCOMPARE(resident(0, 10 * kMiB), std::size_t(0)); // what the filler has written itself is its own
        QCOMPARE(resident(14 * kMiB, kLength), std::size_t(0));
#endif
    }
    ::munmap(raw, kLength + 2 * kMiB);
}

QTEST_GUILESS_MAIN(TestTraceReader)
#include "tst_tracereader.moc"
