// SPDX-License-Identifier: GPL-3.0-or-later
// Replay speed of the allocator what-if (issue target: a 1M-entry trace replayed in under 1 s), on a
// synthetic snapshot shaped like the real ones (bench/gen_snapshot.py). Reading the file is not timed.
//     allocator_bench SNAPSHOT LABEL
#include "core/allocator/replay.h"
#include "core/trace/formats/tracereader.h"

#include <chrono>
#include <cstdio>
#include <string>

using namespace headroom;

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: allocator_bench SNAPSHOT LABEL\n");
        return 2;
    }
    const Trace trace = readTraceFile(argv[1]);
    const std::string label = argv[2];
    std::size_t entries = 0;
    for (const DeviceTrace& d : trace.devices)
        entries += d.entries();
    auto timed = [&](const char* metric, const AllocatorSettings& s, const char* what) {
        double best = 1e9;
        for (int run = 0; run < 3; ++run) { // best of three: the VM is noisy
            const auto t0 = std::chrono::steady_clock::now();
            ReplayOptions o;
            o.settings = s;
            for (const DeviceTrace& d : trace.devices)
                (void)replayDevice(d, o);
            best =
                std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        std::printf(
            "{\"metric\": \"%s_%s_s\", \"value\": %.3f, \"unit\": \"s\", \"detail\": \"%s; %zu entries; "
            "target < 1 s per 1M entries\"}\n",
            metric, label.c_str(), best, what, entries);
        std::fflush(stdout);
    };
    timed("allocator_replay", settingsFromRecording(trace.allocatorSettings),
          "one replay through the caching-allocator model, recorded settings");
    AllocatorSettings expandable;
    expandable.expandableSegments = true;
    timed("allocator_replay_expandable", expandable, "one replay with expandable segments");
    // What the CLI and the panel run per device: the recorded replay, the baseline and the what-if under
    // both address orders.
    double best = 1e9;
    for (int run = 0; run < 3; ++run) {
        const auto t0 = std::chrono::steady_clock::now();
        for (std::size_t d = 0; d < trace.devices.size(); ++d)
            (void)whatIfDevice(trace, d, expandable);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf(
        "{\"metric\": \"allocator_whatif_%s_s\", \"value\": %.3f, \"unit\": \"s\", \"detail\": \"a whole "
        "what-if (four replays: recorded, baseline, two address orders); %zu entries\"}\n",
        label.c_str(), best, entries);
    return 0;
}
