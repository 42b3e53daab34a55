// SPDX-License-Identifier: GPL-3.0-or-later
// A PyTorch memory snapshot (torch.cuda.memory._dump_snapshot), read from a pickle or JSON into the
// plain-data tree, turned into the event store: interned strings, deduplicated stacks, columns.
#include "core/checkednumbers.h"
#include "core/error.h"
#include "core/trace/formats/treereaders.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

namespace headroom {

namespace {

using Value = DataTree::Value;

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
    // A frame's line: an integer, or none. PyTorch writes a frame whose line it could not read (a Python
    // frame inside torch's fake-tensor code, recorded with stacks='all') as size_t(-1), 2^64 - 1, which no
    // signed 64-bit line holds: any integer beyond 64 bits is such an unknown line (0, as C++ frames carry),
    // not a reason to refuse the file. Anything but an integer still is.
    template <typename Path> std::int64_t lineNumber(Value f, const Path& path) {
        bool found = false;
        const Value v = m_tree.get(f, "line", &found);
        long long n = 0;
        if (found && v != DataTree::kNone && m_tree.isInt(v) && !m_tree.toInt(v, &n))
            return 0;
        return integer(f, "line", path(), false);
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
        fr.line = lineNumber(f, [&] { return idx(path(), i); });
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
        // list's, has the same storage key: it is read once. The table stays as small as the distinct stacks;
        // a direct-mapped cache in front of it answers the millions of entries that repeat a few hundred.
        const std::uint64_t storage = m_tree.storageKey(frames);
        StorageSlot& slot = m_storageCache[(storage * 0x9E3779B97F4A7C15ull) >> (64 - kStorageCacheBits)];
        if (slot.key == storage)
            return slot.stack;
        const auto [shared, isNew] = m_stackByStorage.try_emplace(storage, 0);
        if (!isNew) {
            slot = {storage, shared->second};
            return shared->second;
        }
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
        slot = {storage, it->second};
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
        std::size_t seen = 0;
        for (std::size_t r = 0; r < m_tree.runCount(entries); ++r)
            for (const Value e : m_tree.run(entries, r)) {
                if (!m_tree.isRecord(e) || m_tree.recordIndex(e) != seen)
                    return false;
                ++seen;
            }
        if (seen != n)
            return false;
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
    struct StorageSlot {
        std::uint64_t key = ~std::uint64_t(0); // no storage key: those have a payload under 2^61
        std::uint32_t stack = 0;
    };
    static constexpr int kStorageCacheBits = 12;
    std::vector<StorageSlot> m_storageCache = std::vector<StorageSlot>(std::size_t(1) << kStorageCacheBits);
    std::vector<Frame> m_frames; // distinct frames, by canonical id
    std::unordered_map<std::string, std::uint32_t> m_frameByContent;
    // Stacks by their canonical frame ids (heterogeneous lookup: no string built for a stack seen before).
    struct KeyHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view k) const { return std::hash<std::string_view>()(k); }
    };
    std::unordered_map<std::string, std::uint32_t, KeyHash, std::equal_to<>> m_stackByContent;
    std::vector<std::uint32_t> m_key;
};

} // namespace

Trace snapshotFromTree(DataTree& t, DataTree::Value root, TraceFormat format) {
    Trace trace;
    trace.format = format;
    SnapshotExtractor(t, trace).run(root);
    return trace;
}

} // namespace headroom
