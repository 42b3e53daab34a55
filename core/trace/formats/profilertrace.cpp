// SPDX-License-Identifier: GPL-3.0-or-later
// Profiler traces (Chrome trace JSON with [memory] events) and the profiler's memory timelines
// (export_memory_timeline's JSON and raw lists), from the plain-data tree into the event store.
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

using Value = DataTree::Value;

// Profiler Chrome trace: "[memory]" and "[OutOfMemory]" instant events.
Trace chromeTraceFromTree(const DataTree& t, Value root) {
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
Trace memoryTimelineFromTree(const DataTree& t, Value root) {
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
Trace memoryTimelineRawFromTree(const DataTree& t, Value root) {
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

} // namespace headroom
