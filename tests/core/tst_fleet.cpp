// SPDX-License-Identifier: GPL-3.0-or-later
// A whole job's rank files: a fleet generated from a real snapshot with a planted outlier and a 4-stage
// layout (bench/fleetgen), read as snapshots and as the trace-summary documents the nodes would make.
#include "bench/fleetgen.h"
#include "core/compare/fleet.h"
#include "core/error.h"
#include "core/io/fleetjson.h"
#include "core/io/scenariojson.h"
#include "core/io/tracesummaryjson.h"
#include "core/serve/estimate.h"
#include "core/trace/formats/tracereader.h"
#include "core/trace/traceindex.h"
#include "tests/testutil.h"

#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

using namespace headroom;

namespace {

// MEASURED.md: the CS336 medium model's 128-token training step, its requested-byte allocated peak.
constexpr std::int64_t kBasePeak = 7'013'335'044;
const char* kBase = "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle";

std::string basePath() {
    return (test::dataDir() + "/traces/snapshots/" + kBase).toStdString();
}

// One generated fleet for the whole test: 32 ranks, 4 stages, rank 13 planted 3 GiB above its stage.
struct Generated {
    QTemporaryDir dir;
    bench::FleetPlan plan;
    std::vector<std::string> files;
    Generated() { files = bench::writeFleet(readTraceFile(basePath()), "0", plan, dir.path().toStdString()); }
};
Generated& generated() {
    static Generated g;
    return g;
}

nlohmann::json withoutSource(nlohmann::json doc) {
    for (auto& r : doc["ranks"]) {
        r.erase("file");
        r.erase("source");
        r.erase("by_category");
    }
    return doc;
}

} // namespace

class TestFleet : public QObject {
    Q_OBJECT
private slots:
    void rankNames_data();
    void rankNames();
    void layoutErrors();
    void liveSetWithoutAnIndex();
    void generatedFleetIsAnswered();
    void summariesGiveTheSameDocument();
    void badFileDoesNotStopTheRest();
    void planBesideEachStage();
    void nvidiaSmiLogsAreComparedByReserved();
    void cancelStops();
};

void TestFleet::rankNames_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("rank");
    QTest::newRow("rank_12") << "job/rank_12.pickle" << 12;
    QTest::newRow("rank12") << "snapshot_rank12.pickle" << 12;
    QTest::newRow("RANK-3") << "RANK-3.pickle.gz" << 3;
    QTest::newRow("_r12_") << "mem_r12_step5.pickle" << 12;
    QTest::newRow("-12.pickle") << "snapshot-12.pickle" << 12;
    QTest::newRow("_7.json.gz") << "memory_7.json.gz" << 7;
    QTest::newRow("none") << "cs336_Wedsonlin_medium_128_training_memory_snapshot.pickle" << -1;
    QTest::newRow("a word with r") << "trace.pickle" << -1;
}

void TestFleet::rankNames() {
    QFETCH(QString, name);
    QFETCH(int, rank);
    QCOMPARE(rankFromFileName(name.toStdString()), rank);
}

void TestFleet::layoutErrors() {
    const FleetLayout l = parseFleetLayout("pp=4,tp=8");
    QCOMPARE(l.tp, 8);
    QCOMPARE(l.pp, 4);
    QCOMPARE(l.cp, 1);
    for (const char* bad : {"tp=0", "xx=2", "pp=", "tp=two"}) {
        try {
            parseFleetLayout(bad);
            QFAIL(bad);
        } catch (const Error& e) {
            QCOMPARE(QString::fromStdString(e.where()), QStringLiteral("--layout"));
            QVERIFY2(std::string(e.what()).find(bad) != std::string::npos, e.what());
        }
    }
}

void TestFleet::liveSetWithoutAnIndex() {
    // The one-pass live set a fleet uses is the index's, allocation for allocation, on real traces.
    for (const char* f : {kBase, "DeComFL_memory.pickle", "LLM-inference_oom_snapshot_legacy_history.pickle",
                          "cs336_MAGMA27_memory_snapshot.pickle"}) {
        const Trace t = readTraceFile((test::dataDir() + "/traces/snapshots/" + f).toStdString());
        const TraceSummary s = summarize(t);
        const DeviceTrace& d = t.devices[busiestDevice(s)];
        const TraceIndex index(d, s.devices[busiestDevice(s)]);
        for (std::size_t k : {index.peakAfter(), d.entries() / 3, d.entries() - 1, kBeforeFirstEvent}) {
            auto key = [](const std::vector<Allocation>& v) {
                std::multiset<std::tuple<std::uint64_t, std::int64_t, std::size_t, std::size_t>> out;
                for (const Allocation& a : v)
                    out.insert({a.addr, a.size, a.start, a.end});
                return out;
            };
            QVERIFY2(key(liveAfterEvent(d, k)) == key(index.liveAfter(k)), f);
        }
    }
}

void TestFleet::generatedFleetIsAnswered() {
    Generated& g = generated();
    FleetOptions options;
    options.layout = parseFleetLayout("tp=2,pp=4");
    std::size_t seen = 0;
    options.onRank = [&](const FleetRank&, std::size_t done, std::size_t total) {
        QCOMPARE(done, ++seen);
        QCOMPARE(total, std::size_t(32));
    };
    const Fleet fleet = readFleetFiles(fleetFiles({g.dir.path().toStdString()}), options);
    QCOMPARE(seen, std::size_t(32));
    QCOMPARE(fleet.ranks.size(), std::size_t(32));
    // Each rank: the base's peak plus what was planted, to the byte; its categories add up to it.
    std::vector<std::int64_t> peaks;
    for (int r = 0; r < 32; ++r) {
        const FleetRank& rank = fleet.ranks[static_cast<std::size_t>(r)];
        QCOMPARE(rank.rank, r);
        QVERIFY2(rank.error.empty(), rank.error.c_str());
        QCOMPARE(rank.summary.peakAllocated, kBasePeak + bench::extraBytes(g.plan, r));
        std::int64_t sum = 0;
        for (std::int64_t b : rank.byCategory)
            sum += b;
        QCOMPARE(sum, rank.summary.peakAllocated);
        // Megatron's order: tp fastest (2), then dp (4), pipeline stages in blocks of 8.
        QCOMPARE(rank.stage, r / 8);
        QCOMPARE(rank.tpRank, r % 2);
        QCOMPARE(rank.dpRank, (r / 2) % 4);
        // The clock skew is gone once the time is taken from each rank's first step mark.
        QCOMPARE(rank.peakTimeUs(), fleet.ranks[0].peakTimeUs());
        peaks.push_back(rank.summary.peakAllocated);
    }
    // By hand: stage s holds (3 - s) x 512 MiB, rank r (r % 5) x 8 MiB more, rank 13 3 GiB more.
    QCOMPARE(fleet.job.worstRank, 13);
    QCOMPARE(fleet.job.outliers, std::vector<int>{13});
    QVERIFY2(fleet.ranks[13].outlierWhy.find("MADs above its stage's median") != std::string::npos,
             fleet.ranks[13].outlierWhy.c_str());
    const std::int64_t MiB = 1 << 20;
    const std::int64_t stageMax[4] = {kBasePeak + 3 * 512 * MiB + 4 * 8 * MiB,
                                      kBasePeak + 2 * 512 * MiB + 3 * 8 * MiB + 3072 * MiB,
                                      kBasePeak + 512 * MiB + 4 * 8 * MiB, kBasePeak + 4 * 8 * MiB};
    const int stageWorst[4] = {4, 13, 19, 24}; // 24 and 29 tie: the first is named
    QCOMPARE(fleet.job.stages.size(), std::size_t(4));
    for (int s = 0; s < 4; ++s) {
        const FleetStage& st = fleet.job.stages[static_cast<std::size_t>(s)];
        QCOMPARE(st.ranks, 8);
        QCOMPARE(st.maxPeakAllocated, stageMax[s]);
        QCOMPARE(st.worstRank, stageWorst[s]);
    }
    // The median of 32 peaks: the mean of the 16th and 17th, both in stage 1 or 2's plateau.
    std::sort(peaks.begin(), peaks.end());
    QCOMPARE(fleet.job.medianPeakAllocated, peaks[15] + (peaks[16] - peaks[15]) / 2);
    QCOMPARE(fleet.job.spreadBytes, peaks.back() - peaks.front());
    // Without the layout, the job's own median and MAD (1.1 GiB: the stages differ by 512 MiB each) put
    // the fence at median + 3.3 GiB, and rank 13 (3.3 GiB above the median) stays inside it: the stages
    // are what make it stand out.
    const Fleet flat = readFleetFiles(g.files, FleetOptions{});
    QCOMPARE(flat.job.worstRank, 13);
    QVERIFY(flat.job.outliers.empty());
}

void TestFleet::summariesGiveTheSameDocument() {
    // Map on the nodes: each rank's `trace-summary --json`, then the fleet over those documents.
    Generated& g = generated();
    QTemporaryDir summaries;
    for (const std::string& f : g.files) {
        const std::string out =
            summaries.path().toStdString() + "/" + std::filesystem::path(f).stem().string() + ".summary.json";
        std::ofstream(out) << traceSummaryToJson(summarize(readTraceFile(f))).dump(2);
    }
    FleetOptions options;
    options.layout = parseFleetLayout("tp=2,pp=4");
    const nlohmann::json fromTraces =
        fleetToJson(readFleetFiles(fleetFiles({g.dir.path().toStdString()}), options));
    const Fleet fromSummaries = readFleetFiles(fleetFiles({summaries.path().toStdString()}), options);
    QVERIFY(fromSummaries.ranks.at(0).fromSummary);
    QVERIFY(!fromSummaries.ranks.at(0).hasCategories);
    const nlohmann::json a = withoutSource(fromTraces), b = withoutSource(fleetToJson(fromSummaries));
    QVERIFY2(a == b, nlohmann::json::diff(a, b).dump().substr(0, 600).c_str());
    QCOMPARE(fromTraces["schema"].get<std::string>(), std::string("headroom.fleet/1"));
}

void TestFleet::badFileDoesNotStopTheRest() {
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    Generated& g = generated();
    for (int r : {0, 1, 2})
        std::filesystem::copy_file(g.files[static_cast<std::size_t>(r)],
                                   d + "/rank_0" + std::to_string(r) + ".pickle");
    std::filesystem::copy_file((test::dataDir() + "/truncated.pickle").toStdString(), d + "/rank_03.pickle");
    std::ofstream(d + "/rank_04.json")
        << R"({"schema": "headroom.trace-summary/1", "format": "pytorch-snapshot",
        "devices": {"0": {"trace_entries": -5}}})";
    std::ofstream(d + "/notes.headroom.json") << "{}"; // a scenario beside the ranks is not a rank
    const Fleet fleet = readFleetFiles(fleetFiles({d}), FleetOptions{});
    QCOMPARE(fleet.ranks.size(), std::size_t(5));
    QCOMPARE(fleet.job.readErrors, 2);
    QVERIFY2(fleet.ranks[3].error.find("rank_03.pickle") != std::string::npos, fleet.ranks[3].error.c_str());
    QVERIFY2(fleet.ranks[4].error.find("rank_04.json: devices.0.trace_entries") != std::string::npos,
             fleet.ranks[4].error.c_str());
    QCOMPARE(fleet.job.worstRank, 2); // the others still read: rank 2 holds the most (r % 5 = 2)
    const nlohmann::json doc = fleetToJson(fleet);
    QVERIFY(doc["ranks"][3]["error"].is_string());
    QVERIFY(doc["ranks"][0]["error"].is_null());
}

void TestFleet::planBesideEachStage() {
    // Without --layout the scenario's parallelism is the layout; each stage gets the plan's allocated peak.
    const Scenario sc = loadScenarioFile(std::string(HEADROOM_SOURCE_DIR) +
                                         "/examples/measured/cs336-medium-128-training.headroom.json");
    FleetOptions options;
    options.scenario = &sc;
    const Fleet fleet = readFleetFiles({basePath()}, options);
    QVERIFY(fleet.layout.given);
    QCOMPARE(fleet.job.stages.size(), std::size_t(1));
    QVERIFY(fleet.job.stages[0].estimateBytes.has_value());
    QCOMPARE(*fleet.job.stages[0].estimateBytes,
             static_cast<std::int64_t>(std::llround(estimate(sc).ranks[0].allocatedBytes)));
    // The plan of this run is the one tst_attribution checks against its trace: within 10% of the stage.
    QVERIFY(std::abs(static_cast<double>(*fleet.job.stages[0].estimateBytes - kBasePeak)) < 0.10 * kBasePeak);
}

// nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total --format=csv -lms 1000, one log a node:
// `used` at 2,000 MiB and 300 MiB more each second for 20 s, and `extra` MiB more throughout.
void writeSmiLog(const std::string& path, int extra) {
    std::ofstream out(path);
    out << "timestamp, index, memory.used [MiB], memory.total [MiB]\n";
    for (int t = 0; t < 20; ++t)
        out << "2024/01/15 10:20:" << (t < 10 ? "0" : "") << t << ".000, 0, " << 2000 + 300 * t + extra
            << " MiB, 81559 MiB\n";
}

void TestFleet::nvidiaSmiLogsAreComparedByReserved() {
    // Such a log records no allocated bytes: a job of them was compared by allocated peaks of 0, every rank
    // alike (worst rank 0, fragmentation 100%, no outlier) where rank 2 used 4,000 MiB more than the rest.
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    for (int r : {0, 1, 2, 3})
        writeSmiLog(d + "/rank_0" + std::to_string(r) + ".csv", r == 2 ? 4000 : 0);
    const Fleet fleet = readFleetFiles(fleetFiles({d}), FleetOptions{});
    constexpr std::int64_t MiB = 1 << 20;
    QVERIFY(fleet.job.byReserved);
    QCOMPARE(fleet.job.worstRank, 2);
    QCOMPARE(fleet.job.medianPeak, (2000 + 300 * 19) * MiB); // by hand: the last sample
    QCOMPARE(fleet.job.spreadBytes, 4000 * MiB);
    QCOMPARE(fleet.job.outliers, std::vector<int>{2});
    QVERIFY2(fleet.ranks[2].outlierWhy.find("reserved peak") == 0, fleet.ranks[2].outlierWhy.c_str());
    QCOMPARE(fleet.ranks[2].peakTimeUs(), std::int64_t(19'000'000)); // reserved's peak, from the first sample
    QVERIFY(!fleet.ranks[2].fragmentationAtPeak().has_value());
    // The timeline drawn of each is its reserved bytes (a profile of zeros said nothing).
    QCOMPARE(fleet.ranks[2].summary.profile.front(), 6000 * MiB);
    QCOMPARE(fleet.ranks[2].summary.profile.back(), (6000 + 300 * 19) * MiB);
    const nlohmann::json doc = fleetToJson(fleet);
    QCOMPARE(doc["job"]["compared_by"].get<std::string>(), std::string("reserved"));
    QCOMPARE(doc["job"]["median_peak_allocated_bytes"].get<std::int64_t>(), std::int64_t(0));
    QVERIFY(doc["ranks"][2]["fragmentation_at_peak"].is_null());
    QCOMPARE(doc["ranks"][2]["allocated_recorded"].get<bool>(), false);
    QVERIFY(fleet.warnings.empty());

    // Their trace-summary documents give the same, and an older one (no allocated_recorded) is known by its
    // format.
    QTemporaryDir summaries;
    for (int r : {0, 1, 2, 3}) {
        nlohmann::json s =
            traceSummaryToJson(summarize(readTraceFile(d + "/rank_0" + std::to_string(r) + ".csv")));
        QCOMPARE(s["devices"]["0"]["allocated_recorded"].get<bool>(), false);
        if (r == 1)
            s["devices"]["0"].erase("allocated_recorded");
        std::ofstream(summaries.path().toStdString() + "/rank_0" + std::to_string(r) + ".json") << s.dump();
    }
    const Fleet fromSummaries = readFleetFiles(fleetFiles({summaries.path().toStdString()}), FleetOptions{});
    const nlohmann::json a = withoutSource(doc), b = withoutSource(fleetToJson(fromSummaries));
    QVERIFY2(a == b, nlohmann::json::diff(a, b).dump().substr(0, 600).c_str());

    // Beside a snapshot, every rank is compared by reserved, and the job says why.
    std::filesystem::copy_file(basePath(), d + "/rank_04.pickle");
    const Fleet mixed = readFleetFiles(fleetFiles({d}), FleetOptions{});
    QVERIFY(mixed.job.byReserved);
    QCOMPARE(mixed.ranks[4].peak(), mixed.ranks[4].summary.peakReserved);
    QCOMPARE(mixed.job.worstRank, 2); // 11.4 GiB used against the snapshot's 8.2 GiB reserved
    QCOMPARE(mixed.warnings.size(), std::size_t(1));
    QVERIFY2(mixed.warnings[0].find("4 of the ranks' files record no allocated bytes") == 0,
             mixed.warnings[0].c_str());
}

void TestFleet::cancelStops() {
    FleetOptions options;
    options.cancel.cancel();
    try {
        readFleetFiles(generated().files, options);
        QFAIL("a cancelled fleet read finished");
    } catch (const Error& e) {
        QCOMPARE(QString::fromStdString(e.why()), QStringLiteral("cancelled"));
    }
}

QTEST_GUILESS_MAIN(TestFleet)
#include "tst_fleet.moc"
