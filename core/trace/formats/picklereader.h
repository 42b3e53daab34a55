// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/formats/datatree.h"

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

// Where a streamed pickle's bytes come from (a gzip file being inflated).
class PickleSource {
public:
    virtual ~PickleSource() = default;
    virtual std::size_t read(char* out, std::size_t max) = 0; // 0 only at the end
    virtual std::size_t consumed() const = 0;                 // for progress: input used so far
    virtual std::size_t total() const = 0;                    // and the input's size
    // How errors name an offset in the bytes read: a gzip file's are decoded bytes, not the file's.
    virtual const char* offsetName() const { return "decompressed byte "; }
};
// The same, decoding as it goes: a bad file fails as soon as its bytes are bad, without the rest being
// decoded. Requires limits.copyStrings. Errors name the offset as source.offsetName() says.
DataTree::Value readPickle(PickleSource& source, DataTree& tree, const ReadLimits& limits,
                           const ReadProgress& progress = {});

} // namespace headroom
