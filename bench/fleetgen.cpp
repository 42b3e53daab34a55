// SPDX-License-Identifier: GPL-3.0-or-later
#include "bench/fleetgen.h"

#include "core/error.h"
#include "tests/picklewriter.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

namespace headroom::bench {

namespace {

const char* stateName(SnapshotBlock::State s) {
    switch (s) {
    case SnapshotBlock::State::ActiveAllocated:
        return "active_allocated";
    case SnapshotBlock::State::ActivePendingFree:
        return "active_pending_free";
    case SnapshotBlock::State::Inactive:
        break;
    }
    return "inactive";
}

class RankWriter {
public:
    RankWriter(const Trace& base, const DeviceTrace& d) : m_base(base), m_d(d) {}

    std::string write(std::int64_t extra, std::int64_t skew) {
        test::PickleWriter w;
        w.beginDict();
        // The planted allocation lives in its own segment, below every address the base uses.
        const std::uint64_t extraAddr = 0x100000000ull;
        w.str("segments");
        w.beginList();
        if (extra > 0)
            segment(w, extraAddr, extra, 0,
                    {{extraAddr, extra, extra, SnapshotBlock::State::ActiveAllocated, 0}});
        for (const SnapshotSegment& s : m_d.segments)
            segment(w, s.address, s.totalSize, s.stream, s.blocks);
        w.endList();
        w.str("device_traces");
        w.beginList();
        w.beginList();
        const std::int64_t t0 = (m_d.entries() ? m_d.time[0] : 0) + skew;
        if (extra > 0) {
            entry(w, "segment_alloc", extraAddr, extra, 0, t0 - 2, 0);
            entry(w, "alloc", extraAddr, extra, 0, t0 - 1, 0);
        }
        for (std::size_t i = 0; i < m_d.entries(); ++i)
            entry(w, traceActionName(m_d.action[i]), m_d.addr[i], m_d.size[i], m_d.stream[i],
                  m_d.time[i] + skew, m_d.stack[i]);
        w.endList();
        w.endList();
        w.str("external_annotations");
        w.beginList();
        for (const Annotation& a : m_base.annotations) {
            if (!a.device.empty() && a.device != m_d.key)
                continue;
            annotation(w, "START", a.name, a.start + skew);
            if (a.end != INT64_MAX && a.end != a.start)
                annotation(w, "END", a.name, a.end + skew);
        }
        w.endList();
        w.endDict();
        return w.finish();
    }

private:
    void segment(test::PickleWriter& w, std::uint64_t address, std::int64_t total, std::int64_t stream,
                 const std::vector<SnapshotBlock>& blocks) {
        w.beginDict();
        w.str("device");
        w.integer(0);
        w.str("address");
        w.integer(static_cast<long long>(address));
        w.str("total_size");
        w.integer(total);
        w.str("stream");
        w.integer(stream);
        w.str("segment_type");
        w.str(total <= (std::int64_t(1) << 20) ? "small" : "large");
        w.str("blocks");
        w.beginList();
        for (const SnapshotBlock& b : blocks) {
            w.beginDict();
            w.str("address");
            w.integer(static_cast<long long>(b.address));
            w.str("size");
            w.integer(b.size);
            w.str("requested_size");
            w.integer(b.requestedSize);
            w.str("state");
            w.str(stateName(b.state));
            w.endDict();
        }
        w.endList();
        w.endDict();
    }
    void entry(test::PickleWriter& w, const char* action, std::uint64_t addr, std::int64_t size,
               std::int64_t stream, std::int64_t time, std::uint32_t stack) {
        w.beginDict();
        w.str("action");
        w.str(action);
        w.str("addr");
        w.integer(static_cast<long long>(addr));
        w.str("size");
        w.integer(size);
        w.str("stream");
        w.integer(stream);
        w.str("time_us");
        w.integer(time);
        w.str("frames");
        // As PyTorch's snapshots are: a new frames list for each entry, whose frame dicts the pickle shares
        // through its memo (a run has a few hundred distinct frames).
        w.beginList();
        if (stack < m_base.stacks.size())
            for (const Frame& f : m_base.stacks[stack]) {
                const auto key = std::make_tuple(f.name, f.filename, f.line);
                if (const auto it = m_frames.find(key); it != m_frames.end()) {
                    w.get(it->second);
                    continue;
                }
                m_frames[key] = w.beginDict();
                w.str("name");
                w.str(m_base.strings[f.name]);
                w.str("filename");
                w.str(m_base.strings[f.filename]);
                w.str("line");
                w.integer(f.line);
                w.endDict();
            }
        w.endList();
        w.endDict();
    }
    void annotation(test::PickleWriter& w, const char* stage, const std::string& name, std::int64_t time) {
        w.beginDict();
        w.str("device");
        w.integer(m_d.key == "cpu" ? -1 : std::stoll(m_d.key));
        w.str("stage");
        w.str(stage);
        w.str("name");
        w.str(name);
        w.str("time_us");
        w.integer(time);
        w.endDict();
    }

    const Trace& m_base;
    const DeviceTrace& m_d;
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::int64_t>, std::uint32_t> m_frames;
};

} // namespace

std::int64_t extraBytes(const FleetPlan& plan, int rank) {
    const int perStage = std::max(1, plan.ranks / std::max(1, plan.stages));
    const int stage = std::min(rank / perStage, plan.stages - 1);
    std::int64_t extra = (plan.stages - 1 - stage) * plan.stageBytes + (rank % 5) * plan.rankBytes;
    if (rank == plan.outlier)
        extra += plan.outlierBytes;
    const std::int64_t twoMiB = std::int64_t(2) << 20;
    return (extra + twoMiB - 1) / twoMiB * twoMiB;
}

std::vector<std::string> writeFleet(const Trace& base, const std::string& device, const FleetPlan& plan,
                                    const std::string& dir) {
    const DeviceTrace* d = base.findDevice(device);
    if (!d)
        throw Error(device, "the base snapshot has no such device");
    std::filesystem::create_directories(dir);
    std::vector<std::string> files;
    for (int r = 0; r < plan.ranks; ++r) {
        char name[32];
        std::snprintf(name, sizeof name, "rank_%02d.pickle", r);
        const std::string path = (std::filesystem::path(dir) / name).string();
        const std::string bytes = RankWriter(base, *d).write(extraBytes(plan, r), r * plan.clockSkewUs);
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        if (!out)
            throw Error(path, "could not write");
        files.push_back(path);
    }
    return files;
}

} // namespace headroom::bench
