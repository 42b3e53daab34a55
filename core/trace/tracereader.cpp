// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/tracereader.h"

#include "core/checkednumbers.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/trace/datatree.h"
#include "core/trace/gzip.h"
#include "core/trace/jsontree.h"
#include "core/trace/nvidiasmi.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <streambuf>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

namespace headroom {

namespace {

using Value = DataTree::Value;

std::string idx(const std::string& path, std::size_t i) {
    return path + "[" + std::to_string(i) + "]";
}

// Turns the tree of a PyTorch snapshot into a Trace: interned strings, deduplicated stacks, columns.
class SnapshotExtractor {
public:
    SnapshotExtractor(DataTree& tree, Trace& trace) : m_tree(tree), m_trace(trace) {}

    void run(Value root) {
        Value segments = root, traces = DataTree::kNone;
        if (m_tree.isDict(root)) {
            bool found = false;
            segments = m_tree.get(root, "segments", &found);
            if (!found)
                throw Error("segments", "missing: not a PyTorch memory snapshot");
            traces = m_tree.get(root, "device_traces");
        }
        if (!m_tree.isList(segments))
            throw Error("segments", "must be a list");
        for (std::size_t i = 0; i < m_tree.size(segments); ++i)
            segment(m_tree.at(segments, i), idx("segments", i));
        if (traces != DataTree::kNone) {
            if (!m_tree.isList(traces))
                throw Error("device_traces", "must be a list (one per device)");
            for (std::size_t d = 0; d < m_tree.size(traces); ++d)
                deviceTrace(std::to_string(d), m_tree.at(traces, d), idx("device_traces", d),
                            m_tree.size(traces) == 1);
        }
        if (m_tree.isDict(root)) {
            annotations(m_tree.get(root, "external_annotations"));
            allocatorSettings(m_tree.get(root, "allocator_settings"));
        }
    }

private:
    long long integer(Value dict, std::string_view key, const std::string& path, bool required,
                      long long fallback = 0) {
        bool found = false;
        const Value v = m_tree.get(dict, key, &found);
        long long n = fallback;
        if (!found || v == DataTree::kNone) {
            if (required)
                throw Error(path + "." + std::string(key), "missing");
            return fallback;
        }
        if (!m_tree.toInt(v, &n)) {
            double d = 0;
            if (m_tree.toDouble(v, &d) && doubleToInt64(d, &n) && static_cast<double>(n) == d)
                return n; // a float with an integral value (JSON writers do this)
            throw Error(path + "." + std::string(key), "must be an integer that fits 64 bits");
        }
        return n;
    }
    std::uint32_t string(std::string_view s) {
        auto it = m_strings.find(s);
        if (it != m_strings.end())
            return it->second;
        m_trace.strings.emplace_back(s);
        const auto id = static_cast<std::uint32_t>(m_trace.strings.size() - 1);
        m_strings.emplace(s, id);
        return id;
    }
    // One frame dict, read once: real snapshots share a few hundred frame dicts through the pickle memo
    // among millions of references, so a dict is recognised by identity, and equal contents map to one
    // canonical frame id. `path` builds the field's path for an error message only when there is one.
    template <typename Path> std::uint32_t frame(Value f, std::size_t i, const Path& path) {
        if (!m_tree.isDict(f))
            throw Error(idx(path(), i), "a frame must be a dict of name, filename and line");
        const auto identity = static_cast<std::uint32_t>(DataTree::payload(f));
        if (const auto known = m_frameByIdentity.find(identity); known != m_frameByIdentity.end())
            return known->second;
        Frame fr;
        fr.name = string(m_tree.str(m_tree.get(f, "name")));
        fr.filename = string(m_tree.str(m_tree.get(f, "filename")));
        fr.line = integer(f, "line", idx(path(), i), false);
        const std::string key(reinterpret_cast<const char*>(&fr), sizeof fr);
        auto [it, inserted] = m_frameByContent.emplace(key, static_cast<std::uint32_t>(m_frames.size()));
        if (inserted)
            m_frames.push_back(fr);
        m_frameByIdentity.emplace(identity, it->second);
        return it->second;
    }
    template <typename Path> std::uint32_t stack(Value frames, const Path& path) {
        if (!m_tree.isList(frames) || m_tree.size(frames) == 0)
            return 0;
        // A list shared through the pickle memo, or one whose items the tree stores once with an equal
        // list's, has the same storage key: it is read once. The table stays as small as the distinct stacks.
        const auto [shared, isNew] = m_stackByStorage.try_emplace(m_tree.storageKey(frames), 0);
        if (!isNew)
            return shared->second;
        const std::size_t n = m_tree.size(frames);
        m_key.resize(n);
        for (std::size_t i = 0; i < n; ++i)
            m_key[i] = frame(m_tree.at(frames, i), i, path);
        const std::string_view key(reinterpret_cast<const char*>(m_key.data()), n * sizeof(std::uint32_t));
        auto it = m_stackByContent.find(key);
        if (it == m_stackByContent.end()) {
            std::vector<Frame> out;
            out.reserve(n);
            for (const std::uint32_t id : m_key)
                out.push_back(m_frames[id]);
            m_trace.stacks.push_back(std::move(out));
            it = m_stackByContent
                     .emplace(std::string(key), static_cast<std::uint32_t>(m_trace.stacks.size() - 1))
                     .first;
        }
        shared->second = it->second;
        return it->second;
    }
    void segment(Value s, const std::string& path) {
        if (!m_tree.isDict(s))
            throw Error(path, "a segment must be a dict");
        SnapshotSegment seg;
        const long long device = integer(s, "device", path, false, 0);
        if (device < 0 || device > 1 << 20)
            throw Error(path + ".device", "out of range");
        seg.address = static_cast<std::uint64_t>(integer(s, "address", path, false, 0));
        seg.totalSize = integer(s, "total_size", path, true);
        seg.stream = integer(s, "stream", path, false, 0);
        const std::string_view type = m_tree.str(m_tree.get(s, "segment_type"));
        // Without segment_type (older snapshots), a 2 MiB segment is a small-pool one: large-pool segments
        // are at least 10 MiB (CUDACachingAllocator's get_allocation_size).
        seg.small = type.empty() ? seg.totalSize == 2 * 1024 * 1024 : type == "small";
        long long expandable = 0;
        seg.expandable = m_tree.toInt(m_tree.get(s, "is_expandable"), &expandable) && expandable != 0;
        const Value blocks = m_tree.get(s, "blocks");
        std::uint64_t offset = seg.address; // legacy blocks carry no address: they tile the segment in order
        for (std::size_t i = 0; i < m_tree.size(blocks); ++i) {
            const Value b = m_tree.at(blocks, i);
            const std::string bp = idx(path + ".blocks", i);
            if (!m_tree.isDict(b))
                throw Error(bp, "a block must be a dict");
            SnapshotBlock blk;
            blk.size = integer(b, "size", bp, true);
            blk.address =
                static_cast<std::uint64_t>(integer(b, "address", bp, false, static_cast<long long>(offset)));
            offset = blk.address + static_cast<std::uint64_t>(blk.size);
            const std::string_view state = m_tree.str(m_tree.get(b, "state"));
            blk.state = state == "active_allocated" ? SnapshotBlock::State::ActiveAllocated
                        : (state == "active_pending_free" || state == "active_awaiting_free")
                            ? SnapshotBlock::State::ActivePendingFree
                            : SnapshotBlock::State::Inactive;
            bool hasRequested = false;
            m_tree.get(b, "requested_size", &hasRequested);
            const Value history = m_tree.get(b, "history");
            Value frames = m_tree.get(b, "frames");
            if (hasRequested) {
                blk.requestedSize = integer(b, "requested_size", bp, true);
            } else if (m_tree.isList(history) && m_tree.size(history) > 0 &&
                       m_tree.isDict(m_tree.at(history, 0))) {
                blk.requestedSize =
                    integer(m_tree.at(history, 0), "real_size", bp + ".history[0]", false, blk.size);
            } else {
                blk.requestedSize = blk.size;
            }
            if (!m_tree.isList(frames) && m_tree.isList(history) && m_tree.size(history) > 0)
                frames = m_tree.get(m_tree.at(history, 0), "frames");
            blk.stack = stack(frames, [&] { return bp + ".frames"; });
            seg.blocks.push_back(blk);
        }
        m_trace.device(std::to_string(device)).segments.push_back(std::move(seg));
    }
    // Notes of the event just appended ("" and "N/A" are what PyTorch writes when there is nothing).
    void addNotes(DeviceTrace& dev, std::string_view metadata, std::string_view context) {
        const auto event = static_cast<std::uint32_t>(dev.entries() - 1);
        if (!metadata.empty() && metadata != "N/A")
            dev.userMetadata.push_back({event, string(metadata)});
        if (!context.empty() && context != "N/A")
            dev.compileContext.push_back({event, string(context)});
    }

    // allocator_settings: {PYTORCH_CUDA_ALLOC_CONF, max_split_size, garbage_collection_threshold,
    // expandable_segments, roundup_power2_divisions: {"1": n, "2": n, ...}}. Absent from older snapshots.
    void allocatorSettings(Value d) {
        if (!m_tree.isDict(d))
            return;
        RecordedAllocatorSettings& a = m_trace.allocatorSettings;
        a.recorded = true;
        a.conf = std::string(m_tree.str(m_tree.get(d, "PYTORCH_CUDA_ALLOC_CONF")));
        a.maxSplitSize = integer(d, "max_split_size", "allocator_settings", false, -1);
        double gc = 0;
        if (m_tree.toDouble(m_tree.get(d, "garbage_collection_threshold"), &gc) && gc >= 0 && gc <= 1)
            a.garbageCollectionThreshold = gc;
        long long expandable = 0;
        const Value e = m_tree.get(d, "expandable_segments");
        a.expandableSegments = m_tree.toInt(e, &expandable) && expandable != 0;
        const Value r = m_tree.get(d, "roundup_power2_divisions");
        if (m_tree.isDict(r))
            for (std::size_t i = 0; i < m_tree.size(r) && i < 64; ++i) {
                long long start = 0, divisions = 0;
                const std::string_view k = m_tree.str(m_tree.keyAt(r, i));
                for (char c : k)
                    if (c >= '0' && c <= '9' && start < (1LL << 40))
                        start = start * 10 + (c - '0');
                if (m_tree.toInt(m_tree.valueAt(r, i), &divisions) && divisions > 0 && divisions <= 1 << 16 &&
                    start > 0)
                    a.roundupPower2Divisions.push_back(
                        {static_cast<std::uint64_t>(start), static_cast<int>(divisions)});
            }
    }

    // external_annotations: [{name, stage: START|END, device, time_us}], paired per name and device.
    void annotations(Value list) {
        if (!m_tree.isList(list))
            return;
        std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> open;
        for (std::size_t i = 0; i < m_tree.size(list); ++i) {
            const Value a = m_tree.at(list, i);
            if (!m_tree.isDict(a))
                continue;
            const std::string p = idx("external_annotations", i);
            const std::string name(m_tree.str(m_tree.get(a, "name")));
            const std::string stage(m_tree.str(m_tree.get(a, "stage")));
            const long long time = integer(a, "time_us", p, true);
            const std::string device = std::to_string(integer(a, "device", p, false, 0));
            auto& starts = open[{device, name}];
            if (stage == "START") {
                starts.push_back(m_trace.annotations.size());
                m_trace.annotations.push_back({device, time, INT64_MAX, name});
            } else if (stage == "END" && !starts.empty()) {
                m_trace.annotations[starts.back()].end = time;
                starts.pop_back();
            } else { // an END whose START the ring buffer dropped, or another stage: an instant
                m_trace.annotations.push_back(
                    {device, time, time, stage.empty() ? name : name + " " + stage});
            }
        }
        std::stable_sort(m_trace.annotations.begin(), m_trace.annotations.end(),
                         [](const Annotation& x, const Annotation& y) { return x.start < y.start; });
    }

    // `onlyList`: no other trace list exists that could share this one's records.
    void deviceTrace(const std::string& key, Value entries, const std::string& path, bool onlyList) {
        if (!m_tree.isList(entries))
            throw Error(path, "must be a list of trace entries");
        const std::size_t n = m_tree.size(entries);
        if (n == 0)
            return;
        DeviceTrace& dev = m_trace.device(key);
        std::vector<TraceAction> recordActions;
        for (const auto& name : m_tree.actionNames())
            recordActions.push_back(traceActionFromName(name));
        if (onlyList && takeAllRecords(entries, n, dev, recordActions, path))
            return;
        dev.time.reserve(n);
        dev.action.reserve(n);
        dev.addr.reserve(n);
        dev.size.reserve(n);
        dev.stream.reserve(n);
        dev.stack.reserve(n);
        std::vector<std::uint64_t> counts(m_tree.actionNames().size() + 1, 0);
        for (std::size_t i = 0; i < n; ++i) {
            const Value e = m_tree.at(entries, i);
            if (m_tree.isRecord(e)) {
                const DataTree::TraceRecord r = m_tree.record(e);
                ++counts[r.action];
                dev.append(r.hasTime ? r.timeUs : static_cast<std::int64_t>(i), recordActions[r.action],
                           static_cast<std::uint64_t>(r.addr), r.size, r.stream,
                           stack(r.frames(), [&] { return idx(path, i) + ".frames"; }));
                const auto [metadata, context] = m_tree.recordNotes(m_tree.recordIndex(e));
                addNotes(dev, metadata, context);
                continue;
            }
            // A dict the tree did not compact (extra keys, or read from a form we do not special-case).
            const std::string ep = idx(path, i);
            if (!m_tree.isDict(e))
                throw Error(ep, "a trace entry must be a dict");
            const std::string name(m_tree.str(m_tree.get(e, "action")));
            if (name.empty())
                throw Error(ep + ".action", "missing");
            ++dev.actionCounts[name];
            bool hasAddr = false;
            m_tree.get(e, "addr", &hasAddr);
            const auto addr =
                static_cast<std::uint64_t>(integer(e, hasAddr ? "addr" : "device_free", ep, false, 0));
            const long long size = integer(e, "size", ep, true);
            const long long stream = integer(e, "stream", ep, false, 0);
            const long long time = integer(e, "time_us", ep, false, static_cast<long long>(i));
            dev.append(time, traceActionFromName(name), addr, size, stream,
                       stack(m_tree.get(e, "frames"), [&] { return ep + ".frames"; }));
            addNotes(dev, m_tree.str(m_tree.get(e, "user_metadata")),
                     m_tree.str(m_tree.get(e, "compile_context")));
        }
        for (std::size_t a = 0; a < m_tree.actionNames().size(); ++a)
            if (counts[a])
                dev.actionCounts[m_tree.actionNames()[a]] += counts[a];
    }

    // The usual case, one device whose trace list is every record in file order: the tree's record columns
    // become the device's columns (frames turned into stack ids in place) instead of being copied.
    bool takeAllRecords(Value entries, std::size_t n, DeviceTrace& dev,
                        const std::vector<TraceAction>& actions, const std::string& path) {
        if (n != m_tree.recordCount())
            return false;
        for (std::size_t i = 0; i < n; ++i) {
            const Value e = m_tree.at(entries, i);
            if (!m_tree.isRecord(e) || m_tree.recordIndex(e) != i)
                return false;
        }
        DataTree::RecordColumns r = m_tree.takeRecordColumns();
        std::vector<std::uint64_t> counts(actions.size(), 0);
        dev.action.resize(n);
        for (std::size_t i = 0; i < n; ++i) {
            if (r.time[i] == DataTree::kNoTime)
                r.time[i] = static_cast<std::int64_t>(i);
            const std::uint32_t frames = r.frames[i];
            r.frames[i] = frames == DataTree::kNoFrames ? 0
                                                        : stack(DataTree::make(DataTree::Tag::List, frames),
                                                                [&] { return idx(path, i) + ".frames"; });
            dev.action[i] = actions[r.action[i]];
            ++counts[r.action[i]];
        }
        for (const auto& note : r.notes) {
            const std::uint32_t text = string(m_tree.str(DataTree::make(DataTree::Tag::Str, note.string)));
            (note.compileContext ? dev.compileContext : dev.userMetadata).push_back({note.record, text});
        }
        dev.time = std::move(r.time);
        dev.addr = std::move(r.addr);
        dev.size = std::move(r.size);
        dev.stream = std::move(r.stream);
        dev.stack = std::move(r.frames);
        for (std::size_t a = 0; a < actions.size(); ++a)
            if (counts[a])
                dev.actionCounts[m_tree.actionNames()[a]] += counts[a];
        return true;
    }

    DataTree& m_tree;
    Trace& m_trace;
    std::unordered_map<std::string_view, std::uint32_t> m_strings;
    std::unordered_map<std::uint32_t, std::uint32_t> m_frameByIdentity; // frame dicts shared via the memo
    std::unordered_map<std::uint64_t, std::uint32_t> m_stackByStorage;  // lists whose items the tree shares
    std::vector<Frame> m_frames;                                        // distinct frames, by canonical id
    std::unordered_map<std::string, std::uint32_t> m_frameByContent;
    // Stacks by their canonical frame ids (heterogeneous lookup: no string built for a stack seen before).
    struct KeyHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view k) const { return std::hash<std::string_view>()(k); }
    };
    std::unordered_map<std::string, std::uint32_t, KeyHash, std::equal_to<>> m_stackByContent;
    std::vector<std::uint32_t> m_key;
};

// Profiler Chrome trace: "[memory]" and "[OutOfMemory]" instant events.
Trace chromeTrace(const DataTree& t, Value root) {
    Trace trace;
    trace.format = TraceFormat::ChromeTrace;
    const Value events = t.isDict(root) ? t.get(root, "traceEvents") : root;
    struct Ev {
        double ts;
        std::size_t order;
        long long bytes, total, reserved;
        bool hasTotal, hasReserved, oom;
        std::string device;
    };
    std::vector<Ev> evs;
    for (std::size_t i = 0; i < t.size(events); ++i) {
        const Value e = t.at(events, i);
        const std::string_view name = t.str(t.get(e, "name"));
        const bool oom = name == "[OutOfMemory]";
        if (name.substr(0, 13) == "ProfilerStep#" && t.str(t.get(e, "ph")) == "X") {
            double ts = 0, dur = 0;
            t.toDouble(t.get(e, "ts"), &ts);
            t.toDouble(t.get(e, "dur"), &dur);
            trace.annotations.push_back({"", clampToInt64(ts), clampToInt64(ts + dur), std::string(name)});
            continue;
        }
        if (name != "[memory]" && !oom)
            continue;
        const Value args = t.get(e, "args");
        Ev ev{0, i, 0, 0, 0, false, false, oom, {}};
        t.toDouble(t.get(e, "ts"), &ev.ts);
        long long type = 1, id = 0;
        t.toInt(t.get(args, "Device Type"), &type);
        t.toInt(t.get(args, "Device Id"), &id);
        ev.device = type == 0   ? "cpu"
                    : type == 1 ? std::to_string(id)
                                : "type" + std::to_string(type) + ":" + std::to_string(id);
        double d = 0;
        if (t.toDouble(t.get(args, "Bytes"), &d))
            ev.bytes = clampToInt64(d);
        bool found = false;
        const Value total = t.get(args, "Total Allocated", &found);
        ev.hasTotal = found && t.toDouble(total, &d);
        if (ev.hasTotal)
            ev.total = clampToInt64(d);
        const Value reserved = t.get(args, "Total Reserved", &found);
        ev.hasReserved = found && t.toDouble(reserved, &d);
        if (ev.hasReserved)
            ev.reserved = clampToInt64(d);
        evs.push_back(std::move(ev));
    }
    std::stable_sort(trace.annotations.begin(), trace.annotations.end(),
                     [](const Annotation& x, const Annotation& y) { return x.start < y.start; });
    // Events are written per thread; memory order is time order.
    std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });
    std::unordered_map<std::string, long long> running;
    for (const Ev& ev : evs) {
        DeviceTrace& dev = trace.device(ev.device);
        const TraceAction action = ev.oom          ? TraceAction::Oom
                                   : ev.bytes >= 0 ? TraceAction::Alloc
                                                   : TraceAction::Free;
        ++dev.actionCounts[ev.oom ? "oom" : ev.bytes >= 0 ? "alloc" : "free"];
        dev.append(clampToInt64(ev.ts), action, 0, ev.bytes);
        long long& sum = running[ev.device];
        if (!ev.oom)
            sum = saturatingAdd(sum, ev.bytes);
        // New traces carry the allocator's own totals; old ones only the size of each event.
        dev.allocatedTotal.push_back(ev.hasTotal ? ev.total : sum);
        dev.reservedTotal.push_back(
            ev.hasReserved ? ev.reserved : (dev.reservedTotal.empty() ? 0 : dev.reservedTotal.back()));
        dev.hasTotals = true;
        dev.hasReservedTotals = dev.hasReservedTotals || ev.hasReserved;
    }
    return trace;
}

// export_memory_timeline: [times, sizes], sizes[i] the bytes per category after times[i].
Trace memoryTimeline(const DataTree& t, Value root) {
    Trace trace;
    trace.format = TraceFormat::MemoryTimeline;
    const Value times = t.at(root, 0), sizes = t.at(root, 1);
    if (t.size(times) != t.size(sizes))
        throw Error("[1]", "has " + std::to_string(t.size(sizes)) + " rows for " +
                               std::to_string(t.size(times)) + " times");
    DeviceTrace& dev = trace.device("0");
    for (std::size_t i = 0; i < t.size(times); ++i) {
        double ts = 0;
        if (!t.toDouble(t.at(times, i), &ts))
            throw Error(idx("[0]", i), "must be a number");
        const Value row = t.at(sizes, i);
        long long total = 0;
        for (std::size_t c = 0; c < t.size(row); ++c) {
            double v = 0;
            if (!t.toDouble(t.at(row, c), &v))
                throw Error(idx(idx("[1]", i), c), "must be a number");
            total = saturatingAdd(total, clampToInt64(v));
        }
        const long long prev = dev.allocatedTotal.empty() ? 0 : dev.allocatedTotal.back();
        dev.append(clampToInt64(ts), total >= prev ? TraceAction::Alloc : TraceAction::Free, 0,
                   saturatingSub(total, prev));
        dev.allocatedTotal.push_back(total);
        dev.reservedTotal.push_back(0);
        ++dev.actionCounts["sample"];
    }
    dev.hasTotals = true;
    return trace;
}

// export_memory_timeline_raw: [t_ns, action, signed bytes, category] per event.
Trace memoryTimelineRaw(const DataTree& t, Value root) {
    Trace trace;
    trace.format = TraceFormat::MemoryTimelineRaw;
    static const char* names[] = {"unknown", "preexisting", "create", "increment_version", "destroy"};
    DeviceTrace& dev = trace.device("0");
    long long sum = 0;
    for (std::size_t i = 0; i < t.size(root); ++i) {
        const Value e = t.at(root, i);
        long long ts = 0, action = 0, bytes = 0;
        double d = 0;
        if (t.size(e) < 3 || !t.toDouble(t.at(e, 0), &d) || !t.toInt(t.at(e, 1), &action) ||
            !t.toInt(t.at(e, 2), &bytes))
            throw Error(idx("", i), "must be [time, action, bytes, category]");
        ts = clampToInt64(d);
        sum = saturatingAdd(sum, bytes);
        ++dev.actionCounts[action >= 1 && action <= 4 ? names[action] : names[0]];
        dev.append(ts, bytes >= 0 ? TraceAction::Alloc : TraceAction::Free, 0, bytes);
        dev.allocatedTotal.push_back(sum);
        dev.reservedTotal.push_back(0);
    }
    dev.hasTotals = true;
    return trace;
}

bool looksLikeJson(std::string_view s) {
    for (char c : s) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        return c == '{' || c == '[';
    }
    return false;
}

Trace snapshot(DataTree& t, Value root, TraceFormat format) {
    Trace trace;
    trace.format = format;
    SnapshotExtractor(t, trace).run(root);
    return trace;
}

Trace fromJsonTree(DataTree& t, Value root) {
    if (t.isDict(root)) {
        bool found = false;
        t.get(root, "traceEvents", &found);
        if (found)
            return chromeTrace(t, root);
        t.get(root, "segments", &found);
        if (found)
            return snapshot(t, root, TraceFormat::PytorchSnapshotJson);
        throw Error(
            "",
            "a JSON object that is neither a profiler trace (traceEvents) nor a memory snapshot (segments)");
    }
    if (!t.isList(root))
        throw Error("", "unrecognised JSON document");
    const Value first = t.at(root, 0);
    if (t.size(root) == 0)
        throw Error("", "an empty JSON list: nothing to read");
    if (t.size(root) == 2 && t.isList(first) && t.isList(t.at(root, 1)) &&
        (t.size(first) == 0 || !t.isList(t.at(first, 0))))
        return memoryTimeline(t, root);
    if (t.isList(first) && t.size(first) >= 3)
        return memoryTimelineRaw(t, root);
    if (t.isDict(first)) {
        bool blocks = false, ph = false;
        t.get(first, "blocks", &blocks);
        t.get(first, "ph", &ph);
        if (blocks)
            return snapshot(t, root, TraceFormat::PytorchSnapshotJson);
        if (ph)
            return chromeTrace(t, root);
    }
    throw Error("", "a JSON list of a kind Headroom does not know");
}

} // namespace

namespace {

// Feeds a pickle machine from an open file with read(): the machine keeps a small window, so the file is
// never resident as a whole (a mapping of it counted in full in peak memory) and progress is real.
class FilePickleSource : public PickleSource {
public:
    FilePickleSource(int fd, std::size_t size) : m_fd(fd), m_size(size) {}
    std::size_t read(char* out, std::size_t max) override {
        while (true) {
            const ssize_t got = ::read(m_fd, out, max);
            if (got >= 0) {
                m_consumed += static_cast<std::size_t>(got);
                return static_cast<std::size_t>(got);
            }
            if (errno != EINTR)
                throw Error("byte " + std::to_string(m_consumed),
                            std::string("cannot read: ") + std::strerror(errno));
        }
    }
    std::size_t consumed() const override { return m_consumed; }
    std::size_t total() const override { return m_size; }
    const char* offsetName() const override { return "byte "; }

private:
    int m_fd;
    std::size_t m_size, m_consumed = 0;
};

// Feeds the JSON parser from a gzip stream, reporting progress (and honouring cancellation) per chunk.
class GzipStreamBuf : public std::streambuf {
public:
    GzipStreamBuf(GzipReader& gz, const ReadProgress& progress) : m_gz(gz), m_progress(progress) {}
    // The decoded offset of the next byte the parser will take.
    std::size_t position() const { return m_gz.produced() - static_cast<std::size_t>(egptr() - gptr()); }

protected:
    int_type underflow() override {
        if (m_progress && !m_progress(m_gz.consumed(), m_gz.total()))
            throw Error("decompressed byte " + std::to_string(m_gz.produced()), "cancelled");
        const std::size_t got = m_gz.read(m_buffer, sizeof m_buffer);
        if (got == 0)
            return traits_type::eof();
        setg(m_buffer, m_buffer, m_buffer + got);
        return traits_type::to_int_type(m_buffer[0]);
    }

private:
    GzipReader& m_gz;
    const ReadProgress& m_progress;
    char m_buffer[1 << 16];
};

std::string hexByte(unsigned char c) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", c);
    return hex;
}

[[noreturn]] void unrecognised(unsigned char first) {
    throw Error("byte 0", "unrecognised format (starts with " + hexByte(first) +
                              "): expected a PyTorch snapshot pickle, JSON, gzip or nvidia-smi CSV");
}

Trace readTraceImpl(std::string_view bytes, const std::function<void()>& release,
                    const TraceReadOptions& options);

// A snapshot pickle from bytes in memory or from a source. Strings are copied into the tree, so that the
// input can be released (`release`) before the columns are built.
template <typename Input>
Trace pickleSnapshot(Input& input, std::size_t expectedBytes, const std::function<void()>& release,
                     const TraceReadOptions& options) {
    DataTree tree(expectedBytes);
    ReadLimits limits = options.limits;
    limits.copyStrings = true;
    const Value root = readPickle(input, tree, limits, options.progress);
    release();
    return snapshot(tree, root, TraceFormat::PytorchSnapshot);
}

// nvidia-smi CSV from a decoded stream, a line at a time: a log fails at its first bad line, and a "line"
// longer than any nvidia-smi writes fails when it gets that long.
Trace csvFromStream(PickleSource& in, const TraceReadOptions& options) {
    constexpr std::size_t kMaxLine = 64 * 1024;
    NvidiaSmiCsvReader reader("decompressed byte ");
    std::string line;
    std::size_t offset = 0, lineStart = 0;
    std::vector<char> chunk(1 << 16);
    while (const std::size_t got = in.read(chunk.data(), chunk.size())) {
        if (options.progress && !options.progress(in.consumed(), in.total()))
            throw Error("decompressed byte " + std::to_string(offset), "cancelled");
        for (std::size_t i = 0; i < got; ++i, ++offset) {
            if (chunk[i] == '\n') {
                reader.line(line, lineStart);
                line.clear();
                lineStart = offset + 1;
            } else if (line.size() == kMaxLine) {
                throw Error("decompressed byte " + std::to_string(lineStart),
                            "a line longer than " + std::to_string(kMaxLine) + " bytes: not nvidia-smi CSV");
            } else {
                line.push_back(chunk[i]);
            }
        }
    }
    if (!line.empty())
        reader.line(line, lineStart);
    return reader.finish();
}

// A gzip file is decoded as it is parsed, so a bad one fails at its first bad byte and memory follows
// what was decoded. The format is recognised from the first decoded bytes, so a file of another kind fails
// before the rest is inflated; a gzip inside the gzip is read through a second decoder, and so on, up to
// kMaxGzipLevels.
Trace readGzip(std::string_view bytes, const std::function<void()>& release,
               const TraceReadOptions& options) {
    constexpr std::size_t kMaxGzipLevels = 3;
    std::vector<std::unique_ptr<GzipReader>> levels;
    levels.push_back(std::make_unique<GzipReader>(bytes, options.maxDecompressed));
    while (true) {
        GzipReader& gz = *levels.back();
        const std::string_view head = gz.peek(4096);
        const std::string at = levels.size() == 1 ? std::string("decompressed byte 0")
                                                  : "decompressed byte 0 of the gzip inside (level " +
                                                        std::to_string(levels.size()) + ")";
        if (head.empty())
            throw Error(at, "the compressed file is empty");
        const auto first = static_cast<unsigned char>(head[0]);
        if (isGzip(head)) {
            if (levels.size() == kMaxGzipLevels)
                throw Error(at, "gzip nested more than " + std::to_string(kMaxGzipLevels) + " deep");
            levels.push_back(std::make_unique<GzipReader>(gz, options.maxDecompressed));
            continue;
        }
        if (first == 0x80)
            return pickleSnapshot(gz, bytes.size() * 4, release, options);
        if (looksLikeJson(head)) {
            DataTree tree(0);
            GzipStreamBuf buf(gz, options.progress);
            const Value root = readJsonTree(buf, tree, options.limits, [&] { return buf.position(); });
            release();
            return fromJsonTree(tree, root);
        }
        if (looksLikeCsvText(head))
            return csvFromStream(gz, options);
        throw Error(at, "unrecognised format (starts with " + hexByte(first) +
                            "): expected a PyTorch snapshot pickle, JSON, gzip or nvidia-smi CSV");
    }
}

// Reads `bytes` and calls `release` as soon as nothing points into them any more, so that the input's
// memory is not held while the columns are built.
Trace readTraceImpl(std::string_view bytes, const std::function<void()>& release,
                    const TraceReadOptions& options) {
    if (isGzip(bytes))
        return readGzip(bytes, release, options);
    if (bytes.empty())
        throw Error("byte 0", "the file is empty");
    const auto first = static_cast<unsigned char>(bytes[0]);
    if (first == 0x80)
        return pickleSnapshot(bytes, bytes.size(), release, options);
    if (looksLikeJson(bytes)) {
        DataTree tree(0);
        const Value root = readJsonTree(bytes, tree, options.limits, options.progress);
        release();
        return fromJsonTree(tree, root);
    }
    if (looksLikeCsvText(bytes.substr(0, 4096)))
        return readNvidiaSmiCsv(bytes);
    unrecognised(first);
}

} // namespace

Trace readTrace(std::string bytes, const TraceReadOptions& options) {
    return readTraceImpl(
        bytes, [&] { std::string().swap(bytes); }, options);
}

bool isTraceFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string head(64 * 1024, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    if (head.empty())
        return false;
    if (isGzip(head) || static_cast<unsigned char>(head[0]) == 0x80)
        return true;
    if (!looksLikeJson(head))
        return head.find(',') != std::string::npos; // nvidia-smi CSV
    const std::size_t open = head.find_first_of("{[");
    if (head[open] == '[')
        return true;
    for (const char* key : {"\"traceEvents\"", "\"device_traces\"", "\"segments\""})
        if (head.find(key) != std::string::npos)
            return head.find("\"headroom.scenario/") == std::string::npos;
    return false;
}

Trace readTraceFile(const std::string& path, const TraceReadOptions& options) {
    try {
        // A pickle is read through a small window; other formats are mapped rather than copied (no
        // zero-filled buffer, and the pages go back as soon as the parser is done with them).
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            throw Error("", std::string("cannot open the file: ") + std::strerror(errno));
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            ::close(fd);
            return readTrace(readTextFile(path, std::size_t(64) << 30), options); // not a regular file
        }
        const auto size = static_cast<std::size_t>(st.st_size);
        if (size == 0) {
            ::close(fd);
            throw Error("byte 0", "the file is empty");
        }
        unsigned char first = 0;
        if (::pread(fd, &first, 1, 0) == 1 && first == 0x80) {
            // A pickle streams through a window (its strings are copied into the tree anyway).
            struct Closer {
                int fd;
                ~Closer() { ::close(fd); }
            } closer{fd};
            if (size >= (std::size_t(1) << 32)) // known before reading: refused before anything is reserved
                throw Error("", "pickles of 4 GiB or more are not supported");
            ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
            FilePickleSource source(fd, size);
            return pickleSnapshot(
                source, size, [] {}, options);
        }
        void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        ::close(fd);
        if (map == MAP_FAILED)
            return readTrace(readTextFile(path, std::size_t(64) << 30), options);
        bool mapped = true;
        auto release = [&] {
            if (mapped)
                ::munmap(map, size);
            mapped = false;
        };
        try {
            Trace t = readTraceImpl(std::string_view(static_cast<const char*>(map), size), release, options);
            release();
            return t;
        } catch (...) {
            release();
            throw;
        }
    } catch (const Error& e) {
        throw Error(e.where().empty() ? path : path + ": " + e.where(), e.why());
    }
}

} // namespace headroom
