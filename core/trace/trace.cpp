// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/trace.h"

#include <algorithm>

namespace headroom {

std::uint32_t noteAt(const std::vector<EventNote>& notes, std::size_t event) {
    auto it = std::lower_bound(notes.begin(), notes.end(), event,
                               [](const EventNote& n, std::size_t e) { return n.event < e; });
    return it != notes.end() && it->event == event ? it->text : 0;
}

const char* traceFormatName(TraceFormat f) {
    switch (f) {
    case TraceFormat::PytorchSnapshot:
        return "pytorch-snapshot";
    case TraceFormat::PytorchSnapshotJson:
        return "pytorch-snapshot-json";
    case TraceFormat::ChromeTrace:
        return "chrome-trace";
    case TraceFormat::MemoryTimeline:
        return "memory-timeline";
    case TraceFormat::MemoryTimelineRaw:
        return "memory-timeline-raw";
    case TraceFormat::NvidiaSmiCsv:
        return "nvidia-smi-csv";
    }
    return "";
}

namespace {
// The names PyTorch's snapshots give the actions (torch/cuda/memory.py, _dump_snapshot's trace entries).
const std::pair<const char*, TraceAction> kActionNames[] = {{"alloc", TraceAction::Alloc},
                                                            {"free_requested", TraceAction::FreeRequested},
                                                            {"free_completed", TraceAction::FreeCompleted},
                                                            {"free", TraceAction::Free},
                                                            {"segment_alloc", TraceAction::SegmentAlloc},
                                                            {"segment_free", TraceAction::SegmentFree},
                                                            {"segment_map", TraceAction::SegmentMap},
                                                            {"segment_unmap", TraceAction::SegmentUnmap},
                                                            {"oom", TraceAction::Oom},
                                                            {"snapshot", TraceAction::Snapshot}};
} // namespace

const char* traceActionName(TraceAction a) {
    for (const auto& [name, action] : kActionNames)
        if (action == a)
            return name;
    return "other";
}

TraceAction traceActionFromName(const std::string& n) {
    for (const auto& [name, action] : kActionNames)
        if (n == name)
            return action;
    return TraceAction::Other;
}

// Numeric device keys in numeric order, then named ones ("cpu") alphabetically.
static bool deviceBefore(const std::string& a, const std::string& b) {
    const bool na = !a.empty() && std::all_of(a.begin(), a.end(), ::isdigit);
    const bool nb = !b.empty() && std::all_of(b.begin(), b.end(), ::isdigit);
    if (na != nb)
        return na;
    if (na && a.size() != b.size())
        return a.size() < b.size();
    return a < b;
}

DeviceTrace& Trace::device(const std::string& key) {
    auto it =
        std::lower_bound(devices.begin(), devices.end(), key,
                         [](const DeviceTrace& d, const std::string& k) { return deviceBefore(d.key, k); });
    if (it != devices.end() && it->key == key)
        return *it;
    it = devices.insert(it, DeviceTrace{});
    it->key = key;
    return *it;
}

const DeviceTrace* Trace::findDevice(const std::string& key) const {
    for (const auto& d : devices)
        if (d.key == key)
            return &d;
    return nullptr;
}

double timeUnitSeconds(TraceFormat format) {
    return format == TraceFormat::MemoryTimeline || format == TraceFormat::MemoryTimelineRaw ? 1e-9 : 1e-6;
}

} // namespace headroom
