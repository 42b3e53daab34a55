#pragma once
#include "core/trace/datatree.h"

#include <atomic>
#include <functional>
#include <string_view>

namespace headroom {

struct ReadLimits {
    std::size_t maxDepth = 512;      // nested containers
    std::size_t maxStack = 1u << 26; // values waiting on the stack
    std::size_t maxMarks = 1u << 16;
    bool copyStrings = false; // true: strings do not point into the input, which may then be freed
};

// Progress in bytes consumed; return false to cancel (the reader then throws Error "cancelled").
using ReadProgress = std::function<bool(std::size_t done, std::size_t total)>;

// A reader for pickles of plain data, written for allocator snapshots: protocols 2 to 5, and only the
// opcodes that build None, bools, ints of any width, floats, str, bytes, lists, tuples and dicts, with
// marks, memo and frames. Every opcode that could import, call or build an object (GLOBAL,
// STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, PERSID, EXT*, buffers, ...) is rejected with an Error
// naming the opcode and its byte offset, and so are truncation, bad lengths, out-of-range memo
// references and nesting beyond `limits`. Strings are views into `data` (which must then outlive the
// tree) unless limits.copyStrings.
DataTree::Value readPickle(std::string_view data, DataTree& tree, const ReadLimits& limits = {},
                           const ReadProgress& progress = {});

} // namespace headroom
