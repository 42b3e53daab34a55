// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/allocator/replay.h"

#include "core/error.h"

#include <algorithm>
#include <deque>
#include <map>
#include <unordered_map>

namespace headroom {

AllocatorSettings settingsFromRecording(const RecordedAllocatorSettings& r) {
    AllocatorSettings s;
    if (!r.recorded)
        return s;
    s.expandableSegments = r.expandableSegments;
    if (r.maxSplitSize > 0)
        s.maxSplitSize = static_cast<std::uint64_t>(r.maxSplitSize);
    s.garbageCollectionThreshold = r.garbageCollectionThreshold;
    for (const auto& [startMiB, divisions] : r.roundupPower2Divisions) {
        // Interval starts are powers of two in MiB: 1 -> index 0, 2 -> 1, ...
        int index = 0;
        for (std::uint64_t v = startMiB; v > 1; v >>= 1)
            ++index;
        if (index < static_cast<int>(s.roundupPower2Divisions.size()))
            s.roundupPower2Divisions[static_cast<std::size_t>(index)] = divisions;
    }
    return s;
}

namespace {

// The segments present before the first event: the final ones, less those the trace allocated, plus
// those it freed (walking the events backwards).
std::map<std::uint64_t, std::pair<std::uint64_t, bool>> startingSegments(const DeviceTrace& d) {
    std::map<std::uint64_t, std::pair<std::uint64_t, bool>> segs; // address -> size, small
    for (const SnapshotSegment& s : d.segments)
        if (s.totalSize > 0)
            segs[s.address] = {static_cast<std::uint64_t>(s.totalSize), s.small};
    for (std::size_t i = d.entries(); i-- > 0;) {
        const TraceAction a = d.action[i];
        if (a == TraceAction::SegmentAlloc)
            segs.erase(d.addr[i]);
        else if (a == TraceAction::SegmentFree && d.size[i] > 0)
            segs[d.addr[i]] = {static_cast<std::uint64_t>(d.size[i]),
                               static_cast<std::uint64_t>(d.size[i]) == alloc::kSmallBuffer};
    }
    return segs;
}

// Blocks allocated before the first event: the final live blocks, less those the trace allocated, plus
// those it freed without allocating them (a trace that starts mid-run). Sizes are block sizes.
std::map<std::uint64_t, std::uint64_t> startingBlocks(const DeviceTrace& d, const AllocatorSettings& s) {
    std::map<std::uint64_t, std::uint64_t> live;
    for (const SnapshotSegment& seg : d.segments)
        for (const SnapshotBlock& b : seg.blocks)
            if (b.state != SnapshotBlock::State::Inactive && b.size > 0)
                live[b.address] = static_cast<std::uint64_t>(b.size);
    for (std::size_t i = d.entries(); i-- > 0;) {
        const TraceAction a = d.action[i];
        if (a == TraceAction::Alloc)
            live.erase(d.addr[i]);
        else if ((a == TraceAction::FreeCompleted || a == TraceAction::Free) && d.size[i] >= 0)
            live[d.addr[i]] = alloc::roundSize(static_cast<std::uint64_t>(d.size[i]), s);
    }
    return live;
}

const char* kindName(AllocatorEvent::Kind k) {
    switch (k) {
    case AllocatorEvent::Kind::SegmentAlloc:
        return "segment_alloc";
    case AllocatorEvent::Kind::SegmentFree:
        return "segment_free";
    case AllocatorEvent::Kind::SegmentMap:
        return "segment_map";
    case AllocatorEvent::Kind::SegmentUnmap:
        return "segment_unmap";
    case AllocatorEvent::Kind::Oom:
        return "oom";
    }
    return "";
}

bool isSegmentEvent(TraceAction a) {
    return a == TraceAction::SegmentAlloc || a == TraceAction::SegmentFree || a == TraceAction::SegmentMap ||
           a == TraceAction::SegmentUnmap;
}

} // namespace

RecordedSegments recordedSegments(const DeviceTrace& d) {
    RecordedSegments r;
    for (const auto& [address, seg] : startingSegments(d))
        r.startReserved += seg.first;
    std::int64_t reserved = static_cast<std::int64_t>(r.startReserved);
    r.peakReserved = r.startReserved;
    for (std::size_t i = 0; i < d.entries(); ++i) {
        const TraceAction a = d.action[i];
        if (a == TraceAction::SegmentAlloc || a == TraceAction::SegmentMap) {
            reserved += d.size[i];
            if (a == TraceAction::SegmentAlloc)
                ++r.segmentAllocs;
        } else if (a == TraceAction::SegmentFree || a == TraceAction::SegmentUnmap) {
            reserved -= d.size[i];
            if (a == TraceAction::SegmentFree)
                ++r.segmentFrees;
        } else if (a == TraceAction::Oom) {
            ++r.ooms;
        }
        r.hasSegmentEvents = r.hasSegmentEvents || isSegmentEvent(a);
        r.peakReserved = std::max<std::uint64_t>(
            r.peakReserved, static_cast<std::uint64_t>(std::max<std::int64_t>(0, reserved)));
    }
    return r;
}

ReplayResult replayDevice(const DeviceTrace& d, const ReplayOptions& o) {
    ReplayResult r;
    CachingAllocatorModel model(o.settings);
    model.setAddressRule(o.rule);
    const auto segs = startingSegments(d);
    std::map<std::int64_t, std::int64_t> segmentStream;
    for (const SnapshotSegment& s : d.segments)
        segmentStream[static_cast<std::int64_t>(s.address)] = s.stream;
    auto streamAt = [&](std::uint64_t address) -> std::int64_t {
        auto it = segs.upper_bound(address);
        if (it == segs.begin())
            return 0;
        const auto st = segmentStream.find(static_cast<std::int64_t>(std::prev(it)->first));
        return st == segmentStream.end() ? 0 : st->second;
    };
    const auto blocks = startingBlocks(d, o.settings);
    // Live blocks: recorded address -> the model's address for the same allocation.
    std::unordered_map<std::uint64_t, std::uint64_t> live;
    if (o.startingSegments) {
        // Replaying the recording: its segments as they were, the live blocks where it has them.
        for (const auto& [address, seg] : segs)
            model.addSegment(address, seg.first, streamAt(address), seg.second);
        for (const auto& [address, size] : blocks) {
            model.markAllocated(address, size);
            live[address] = address;
        }
    } else {
        // A what-if: the segments cached before the trace began came from a history the trace does not
        // show, under the recorded settings; only the blocks live at its start are given, placed by the
        // model under the settings being tried.
        for (const auto& [address, size] : blocks)
            if (const auto got = model.malloc(size, streamAt(address), 0))
                live[address] = *got;
    }
    r.startReserved = model.reserved();
    r.peakReserved = model.reserved();
    r.allocatedAtPeak = model.allocated();
    r.largestFreeAtPeak = model.largestFreeBlock();
    if (o.keepSeries)
        r.reserved.reserve(d.entries());
    std::deque<std::uint64_t> recordedSegmentAddresses; // segment_alloc seen, not yet used by an alloc
    std::vector<std::pair<AllocatorEvent::Kind, std::uint64_t>> recorded;
    bool inFreeRun = false;
    for (std::size_t i = 0; i < d.entries(); ++i) {
        if ((i & 4095) == 0)
            o.cancel.check();
        const TraceAction a = d.action[i];
        if (a != TraceAction::SegmentFree)
            inFreeRun = false;
        switch (a) {
        case TraceAction::SegmentAlloc:
            recorded.push_back({AllocatorEvent::Kind::SegmentAlloc, static_cast<std::uint64_t>(d.size[i])});
            recordedSegmentAddresses.push_back(d.addr[i]);
            break;
        case TraceAction::SegmentFree:
            recorded.push_back({AllocatorEvent::Kind::SegmentFree, static_cast<std::uint64_t>(d.size[i])});
            if (!inFreeRun) // a run of releases: empty_cache (or an OOM retry's release) at this point
                model.emptyCache(i);
            inFreeRun = true;
            break;
        case TraceAction::Alloc: {
            if (o.recordedAddresses && !recordedSegmentAddresses.empty()) {
                model.setNextSegmentAddress(recordedSegmentAddresses.front());
            }
            // Replaying the recording: where it put this block may show a starting block's remainder
            // that the trace could not (its sizes are the requested ones).
            if (o.startingSegments)
                model.claimHiddenRemainder(d.addr[i]);
            const std::size_t before = model.events().size();
            const auto got = model.malloc(static_cast<std::uint64_t>(std::max<std::int64_t>(0, d.size[i])),
                                          d.stream[i], i);
            bool madeSegment = false;
            for (std::size_t e = before; e < model.events().size(); ++e)
                madeSegment = madeSegment || model.events()[e].kind == AllocatorEvent::Kind::SegmentAlloc;
            if (madeSegment && !recordedSegmentAddresses.empty())
                recordedSegmentAddresses.pop_front();
            model.setNextSegmentAddress(std::nullopt);
            if (got) {
                live[d.addr[i]] = *got;
                ++r.allocations;
                if (*got == d.addr[i])
                    ++r.addressMatches;
            }
            break;
        }
        case TraceAction::FreeCompleted:
        case TraceAction::Free: {
            auto it = live.find(d.addr[i]);
            if (it == live.end() || !model.free(it->second, i))
                ++r.unknownFrees;
            if (it != live.end())
                live.erase(it);
            break;
        }
        default:
            break;
        }
        const std::uint64_t reserved = model.reserved();
        if (o.keepSeries)
            r.reserved.push_back(reserved);
        // The peak is the highest reserved; on a plateau at that height, the moment the most is allocated
        // (what fragmentation then costs is reserved minus that).
        if (reserved > r.peakReserved ||
            (reserved == r.peakReserved && model.allocated() > r.allocatedAtPeak)) {
            r.peakReserved = reserved;
            r.peakAt = i;
            r.allocatedAtPeak = model.allocated();
            r.largestFreeAtPeak = model.largestFreeBlock();
        }
    }
    r.events = model.events();
    std::vector<std::pair<AllocatorEvent::Kind, std::uint64_t>> produced;
    for (const AllocatorEvent& e : r.events) {
        switch (e.kind) {
        case AllocatorEvent::Kind::SegmentAlloc:
        case AllocatorEvent::Kind::SegmentMap:
            ++r.segmentAllocs;
            break;
        case AllocatorEvent::Kind::SegmentFree:
        case AllocatorEvent::Kind::SegmentUnmap:
            ++r.segmentFrees;
            break;
        case AllocatorEvent::Kind::Oom:
            ++r.ooms;
            break;
        }
        if (e.kind == AllocatorEvent::Kind::SegmentAlloc || e.kind == AllocatorEvent::Kind::SegmentFree)
            produced.push_back({e.kind, e.size});
    }
    r.matchesRecording = produced == recorded;
    if (!r.matchesRecording) {
        std::size_t k = 0;
        while (k < produced.size() && k < recorded.size() && produced[k] == recorded[k])
            ++k;
        auto describe = [](const std::vector<std::pair<AllocatorEvent::Kind, std::uint64_t>>& v,
                           std::size_t at) {
            return at < v.size()
                       ? std::string(kindName(v[at].first)) + " of " + std::to_string(v[at].second) + " B"
                       : std::string("nothing");
        };
        r.firstDifference = "segment event " + std::to_string(k + 1) + ": recorded " + describe(recorded, k) +
                            ", replayed " + describe(produced, k);
    }
    return r;
}

DeviceWhatIf whatIfDevice(const Trace& trace, std::size_t device, const AllocatorSettings& whatif,
                          const Cancellation& cancel) {
    if (device >= trace.devices.size())
        throw Error("device", "the trace has " + std::to_string(trace.devices.size()) + " devices, not " +
                                  std::to_string(device + 1));
    const DeviceTrace& d = trace.devices[device];
    DeviceWhatIf w;
    w.device = d.key;
    w.recordedSettings = settingsFromRecording(trace.allocatorSettings);
    w.recorded = recordedSegments(d);
    ReplayOptions replay;
    replay.settings = w.recordedSettings;
    // The recording ran, so its device held at least what it reserved: a smaller capacity given for the
    // what-if does not apply to replaying it.
    replay.settings.deviceMemory = whatif.deviceMemory >= w.recorded.peakReserved ? whatif.deviceMemory : 0;
    replay.recordedAddresses = true;
    replay.cancel = cancel;
    w.replayed = replayDevice(d, replay);
    // The recorded settings replayed from the same start as the what-if: what it is compared with.
    ReplayOptions base;
    base.settings = w.recordedSettings;
    base.settings.deviceMemory = whatif.deviceMemory;
    base.settings.memoryFraction = whatif.memoryFraction;
    base.startingSegments = false;
    base.keepSeries = false; // compared by its figures; the panel draws the replay and the what-if
    base.cancel = cancel;
    w.baseline = replayDevice(d, base);
    ReplayOptions other;
    other.settings = whatif;
    other.startingSegments = false;
    other.cancel = cancel;
    w.whatif = replayDevice(d, other);
    other.rule = CachingAllocatorModel::AddressRule::Descending;
    other.keepSeries = false; // only its peak bounds the band
    w.whatifDescending = replayDevice(d, other);
    w.bandLow = std::min(w.whatif.peakReserved, w.whatifDescending.peakReserved);
    w.bandHigh = std::max(w.whatif.peakReserved, w.whatifDescending.peakReserved);
    return w;
}

std::vector<DeviceWhatIf> allocatorWhatIf(const Trace& trace, const AllocatorSettings& whatif) {
    if (trace.format != TraceFormat::PytorchSnapshot && trace.format != TraceFormat::PytorchSnapshotJson)
        throw Error("format",
                    std::string("the file is ") + traceFormatName(trace.format) +
                        "; the allocator what-if replays the alloc and free events of a PyTorch memory "
                        "snapshot (torch.cuda.memory._dump_snapshot)");
    std::vector<DeviceWhatIf> out;
    for (std::size_t i = 0; i < trace.devices.size(); ++i) {
        const DeviceTrace& d = trace.devices[i];
        bool events = false;
        for (std::size_t e = 0; e < d.entries() && !events; ++e)
            events = d.action[e] == TraceAction::Alloc;
        if (events)
            out.push_back(whatIfDevice(trace, i, whatif));
    }
    if (out.empty())
        throw Error("device_traces", "no alloc events recorded: record the snapshot with "
                                     "torch.cuda.memory._record_memory_history() before the run");
    return out;
}

} // namespace headroom
