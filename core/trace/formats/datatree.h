// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/bigvector.h"
#include "core/prefaulter.h"

#include <climits>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace headroom {

// A plain-data tree (None, bool, int, float, str, bytes, list, tuple, dict) as the pickle and JSON readers
// build it. Values are 8 bytes: a 3-bit tag and a 61-bit payload, so small ints are inline and every
// container or string is an index. Containers may be shared (pickle memo) and may even contain
// themselves; nothing here recurses over the tree.
//
// Trace entries (dicts of action/addr/size/...) are by far the most numerous objects in a snapshot, so a
// completed dict whose keys are all trace-entry keys is converted into a compact record (TraceRecord)
// and its items are released: the tree stays near the size of the file instead of several times it.
class DataTree {
public:
    enum class Tag : std::uint8_t {
        Int = 0,
        Special = 1,
        Boxed = 2,
        Str = 3,
        Bytes = 4,
        List = 5,
        Tuple = 6,
        Dict = 7
    };
    using Value = std::uint64_t;

    static constexpr Value kNone = (std::uint64_t(Tag::Special) << 61) | 0;
    static constexpr Value kFalse = (std::uint64_t(Tag::Special) << 61) | 1;
    static constexpr Value kTrue = (std::uint64_t(Tag::Special) << 61) | 2;

    static Tag tag(Value v) { return static_cast<Tag>(v >> 61); }
    static std::uint64_t payload(Value v) { return v & ((std::uint64_t(1) << 61) - 1); }
    static Value make(Tag t, std::uint64_t p) { return (std::uint64_t(t) << 61) | p; }
    static bool fitsInline(long long n) { return n >= -(1LL << 60) && n < (1LL << 60); }

    // One trace entry, as record() returns it.
    struct TraceRecord {
        std::int64_t addr = 0, size = 0, stream = 0, timeUs = 0;
        std::uint32_t framesList = kNoFrames; // container index of the frames list
        std::uint32_t action = 0;             // index into actionNames()
        bool hasTime = false;
        Value frames() const { return framesList == kNoFrames ? kNone : make(Tag::List, framesList); }
    };
    static constexpr std::uint32_t kNoFrames = 0xffffffffu;
    static constexpr std::int64_t kNoTime = INT64_MIN; // in RecordColumns::time: the entry had no time_us
    // All trace entries, by column and in the column types of DeviceTrace, in the order the file wrote them:
    // when a device's trace list is exactly these records in order (the usual case) the reader moves the
    // columns out instead of copying ten million records into equal columns.
    struct RecordColumns {
        BigVector<std::int64_t> time; // kNoTime when the entry had none
        BigVector<std::uint64_t> addr;
        BigVector<std::int64_t> size;
        BigVector<std::int64_t> stream;
        BigVector<std::uint32_t> frames; // container index of the frames list, or kNoFrames
        BigVector<std::uint16_t> action; // index into actionNames()
        // user_metadata / compile_context with something in them ("" and "N/A" are the usual filler),
        // by record index: sparse, because real snapshots fill almost none.
        struct Note {
            std::uint32_t record;
            std::uint32_t string; // DataTree string id
            bool compileContext;  // else user_metadata
        };
        std::vector<Note> notes;
        std::size_t count() const { return action.size(); }
    };

    // ---- building (used by the readers) ----
    // inputBytes sizes the first reservation (a fraction of the input); storage grows past it as needed.
    explicit DataTree(std::size_t inputBytes = 0);
    Value makeInt(long long n);
    Value makeBigInt(std::string_view littleEndianTwosComplement, bool copy = false);
    Value makeFloat(double d);
    Value makeStr(std::string_view s, bool copy); // copy: the bytes are not kept alive by the caller
    Value makeBytes(std::string_view s, bool copy);
    Value makeContainer(Tag kind, const Value* items, std::size_t count);
    // Appends to a list, or adds key/value pairs to a dict (count is the number of Values, pairs for dicts).
    // Returns false when the target is not a mutable container of that kind.
    bool extend(Value container, const Value* items, std::size_t count);
    std::size_t containerCount() const { return m_containers.size(); }

    // ---- reading ----
    bool isInt(Value v) const;
    bool toInt(Value v, long long* out) const; // false if not an int or outside 64 bits
    bool toDouble(Value v, double* out) const; // ints and floats
    bool isStr(Value v) const { return tag(v) == Tag::Str; }
    std::string_view str(Value v) const; // "" unless a string
    bool isList(Value v) const { return tag(v) == Tag::List || tag(v) == Tag::Tuple; }
    bool isDict(Value v) const { return tag(v) == Tag::Dict && !isRecord(v); }
    bool isRecord(Value v) const;
    TraceRecord record(Value v) const;
    std::size_t recordIndex(Value v) const;                            // position in the record columns
    RecordColumns takeRecordColumns() { return std::move(m_records); } // leaves none behind
    std::size_t size(Value container) const;                           // items of a list, pairs of a dict
    // Equal for containers whose items are stored once (small lists with equal items share storage):
    // a cheap identity for "same contents" that never needs the items compared.
    std::uint64_t storageKey(Value container) const;
    Value at(Value list, std::size_t i) const;
    // The items of a list (or a dict's keys and values) as the contiguous runs the tree stores them in, in
    // order: walking them is linear, where at(i) for every i searches the runs each time (a trace list of
    // 10M entries is 10,000 runs).
    std::size_t runCount(Value container) const;
    std::span<const Value> run(Value container, std::size_t r) const;
    Value keyAt(Value dict, std::size_t i) const;
    Value valueAt(Value dict, std::size_t i) const;
    // Looks a string key up in a dict; kNone... check `found`.
    Value get(Value dict, std::string_view key, bool* found = nullptr) const;
    const std::vector<std::string>& actionNames() const { return m_actionNames; }
    std::size_t recordCount() const { return m_records.count(); }
    // The columns that grow while a file is read, for a Prefaulter to fault their next pages in ahead.
    std::vector<GrowingBlock> growingBlocks() const;
    // The notes of record i (user_metadata, compile_context); empty views when it has none.
    std::pair<std::string_view, std::string_view> recordNotes(std::size_t record) const;

private:
    // A further run of a container's items. `end` is the container's item count up to and including this
    // run, so finding item i is a binary search: CPython writes a list of more than 1,000 items in batches
    // with other objects between them, and a walk over the runs made reading a trace list quadratic.
    struct Segment {
        std::uint32_t start;
        std::uint32_t end;
    };
    // 12 bytes: there is one per list, dict and trace entry (17 million in a 10M-entry snapshot).
    struct Container {
        std::uint32_t start = 0; // first item in m_items (or record index when kind is Record)
        std::uint32_t count = 0; // items in the first segment
        std::uint32_t more : 24; // 1-based index into m_overflow for further segments
        std::uint32_t kind : 8;  // Tag, or kRecordKind
        Container() : more(0), kind(0) {}
    };
    static constexpr std::uint8_t kRecordKind = 255;
    struct Boxed {
        double number = 0;
        std::string_view bigInt; // non-empty for ints wider than 61 bits
    };

    const Value* locate(Value container, std::size_t i) const;
    bool recordFrom(std::uint32_t containerIndex, const Value* keysAndValues, std::size_t count);
    void shareIfSeen(std::uint32_t containerIndex);
    std::string_view copyBytes(std::string_view s);
    std::uint32_t internAction(std::string_view name);

    BigVector<Value> m_items;
    BigVector<Container> m_containers;
    std::vector<std::vector<Segment>> m_overflow;
    std::vector<std::string_view> m_strings;
    // Copied strings live in 1 MiB chunks (a std::string each cost 32 bytes more than its text), and short
    // ones are interned: a snapshot writes "N/A" anew for each of its millions of entries.
    std::vector<std::unique_ptr<char[]>> m_chunks;
    char* m_chunkPos = nullptr;
    std::size_t m_chunkLeft = 0;
    std::unordered_map<std::string_view, Value> m_shortStrings;
    static constexpr int kStringCacheBits = 10;
    std::vector<Value> m_stringCache = std::vector<Value>(std::size_t(1) << kStringCacheBits, 0); // 0: empty
    // Small lists with the same items share their storage: every trace entry carries a new frames list,
    // yet a run has only a few hundred distinct stacks. Found through a direct-mapped cache keyed by a hash
    // of the items (container index + 1, 0 = empty), and checked for equality.
    static constexpr std::size_t kListCacheSize = 1 << 14;
    std::vector<std::uint32_t> m_listCache = std::vector<std::uint32_t>(kListCacheSize, 0);
    std::vector<Boxed> m_boxed;
    RecordColumns m_records;
    std::vector<std::string> m_actionNames;
    // Per string id: which trace-entry field it names as a key (kUnknownKey until looked at), and which
    // action it names as a value. Keys and actions are memoized strings, so each is classified once.
    std::vector<std::int8_t> m_keyField;
    std::vector<std::int32_t> m_actionOfString;
};

} // namespace headroom
