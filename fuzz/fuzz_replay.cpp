// SPDX-License-Identifier: GPL-3.0-or-later
// The allocator replay (headroom-cli allocator-whatif) under settings taken from the input's last bytes:
// expandable segments, max_split_size, roundup_power2_divisions, garbage collection under a memory
// fraction, a device memory that forces OOM retries and releases. Sizes and addresses from the file drive
// the model's arithmetic (rounding, splitting, merging, page mapping); anything but a clean Error, a hang
// or a blow-up in memory is a finding.
#include "core/allocator/replay.h"
#include "core/error.h"
#include "core/io/allocatorwhatifjson.h"
#include "core/io/jsontext.h"
#include "core/trace/formats/tracereader.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    // The last byte picks the settings; the rest is the trace.
    const unsigned char knobs = size > 0 ? data[size - 1] : 0;
    try {
        headroom::TraceReadOptions options;
        options.maxDecompressed = 64u << 20;
        const headroom::Trace trace = headroom::readTrace(
            std::string_view(reinterpret_cast<const char*>(data), size > 0 ? size - 1 : 0), options);
        headroom::AllocatorSettings s = headroom::settingsFromRecording(trace.allocatorSettings);
        s.expandableSegments = knobs & 1;
        if (knobs & 2)
            s.maxSplitSize = std::uint64_t(20 + (knobs >> 4)) << 20;
        if (knobs & 4)
            std::fill(s.roundupPower2Divisions.begin(), s.roundupPower2Divisions.end(),
                      1 << ((knobs >> 4) & 3));
        if (knobs & 8) {
            s.deviceMemory = std::uint64_t(16 + (knobs >> 4)) << 20;
            s.memoryFraction = 0.8;
            s.garbageCollectionThreshold = 0.6;
        }
        for (std::size_t i = 0; i < trace.devices.size(); ++i) {
            const headroom::DeviceWhatIf w = headroom::whatIfDevice(trace, i, s);
            (void)headroom::jsonText(headroom::allocatorWhatIfToJson({w}, s));
        }
    } catch (const headroom::Error&) {
    }
    return 0;
}
