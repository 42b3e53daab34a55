// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/formats/datatree.h"
#include "core/trace/trace.h"

#include <string>

namespace headroom {

// "path[i]": how the tree readers name an item in their errors.
inline std::string idx(const std::string& path, std::size_t i) {
    return path + "[" + std::to_string(i) + "]";
}

// From the plain-data tree a pickle or JSON file was read into, to the event store; each reader names the
// tree path of what it cannot use (`device_traces[0][12].size`).

// A PyTorch memory snapshot (formats/snapshot.cpp): the final segments and blocks, the device traces, the
// allocator settings and annotations. `format` says how the file stored it (pickle or JSON).
Trace snapshotFromTree(DataTree& t, DataTree::Value root, TraceFormat format);
// The profiler's Chrome trace with [memory] and [OutOfMemory] events (formats/profilertrace.cpp).
Trace chromeTraceFromTree(const DataTree& t, DataTree::Value root);
// export_memory_timeline's JSON: [times, sizes by category].
Trace memoryTimelineFromTree(const DataTree& t, DataTree::Value root);
// The raw memory timeline: [t, action, bytes, category] rows.
Trace memoryTimelineRawFromTree(const DataTree& t, DataTree::Value root);

} // namespace headroom
