// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/formats/datatree.h"
#include "core/trace/formats/picklereader.h"

#include <functional>
#include <streambuf>
#include <string_view>

namespace headroom {

// Reads JSON text into a DataTree with nlohmann/json's SAX parser (no intermediate DOM), so a snapshot
// saved as JSON and a profiler trace land in the same compact form as a pickle. Strings are copied
// (short ones interned). Syntax errors and nesting beyond limits.maxDepth are Errors naming the byte, and
// a document that cannot be a trace is refused after its first item (a list) or the first values of an
// object without a trace's keys, not after all of it.
DataTree::Value readJsonTree(std::string_view text, DataTree& tree, const ReadLimits& limits = {},
                             const ReadProgress& progress = {});
// The same from a stream (a gzip file being inflated); errors name the byte offset in the stream
// ("decompressed byte N"), which `position` tells for errors the parser itself does not place.
DataTree::Value readJsonTree(std::streambuf& text, DataTree& tree, const ReadLimits& limits = {},
                             std::function<std::size_t()> position = {});

} // namespace headroom
