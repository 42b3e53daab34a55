// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/formats/picklereader.h"

#include "core/error.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

// The interpreter's per-opcode helpers: GCC leaves them out of line in the large dispatch function,
// which cost a call per opcode on the hottest path of trace reading.
#define HEADROOM_HOT [[gnu::always_inline]] inline

namespace headroom {

static_assert(std::endian::native == std::endian::little, "the pickle reader decodes integers with memcpy");

namespace {

using Value = DataTree::Value;
using Tag = DataTree::Tag;

const char* opcodeName(unsigned char op) {
    switch (op) {
    case 'c':
        return "GLOBAL";
    case 0x93:
        return "STACK_GLOBAL";
    case 'R':
        return "REDUCE";
    case 'b':
        return "BUILD";
    case 'i':
        return "INST";
    case 'o':
        return "OBJ";
    case 0x81:
        return "NEWOBJ";
    case 0x92:
        return "NEWOBJ_EX";
    case 'P':
        return "PERSID";
    case 'Q':
        return "BINPERSID";
    case 0x82:
        return "EXT1";
    case 0x83:
        return "EXT2";
    case 0x84:
        return "EXT4";
    case 0x97:
        return "NEXT_BUFFER";
    case 0x98:
        return "READONLY_BUFFER";
    case 0x8f:
        return "EMPTY_SET";
    case 0x90:
        return "ADDITEMS";
    case 0x91:
        return "FROZENSET";
    case 0x96:
        return "BYTEARRAY8";
    case 'I':
        return "INT";
    case 'L':
        return "LONG";
    case 'F':
        return "FLOAT";
    case 'S':
        return "STRING";
    case 'T':
        return "BINSTRING";
    case 'U':
        return "SHORT_BINSTRING";
    case 'V':
        return "UNICODE";
    case 'p':
        return "PUT";
    case 'g':
        return "GET";
    default:
        return nullptr;
    }
}

class PickleMachine {
public:
    // Reads `data` in place, or (source != nullptr) a window over `data` that the source refills.
    PickleMachine(std::string_view data, PickleSource* source, DataTree& tree, const ReadLimits& limits,
                  const ReadProgress& progress)
        : m_data(data), m_source(source), m_tree(tree), m_limits(limits), m_progress(progress) {}

    Value run() {
        m_stack.reserve(1024);
        // Real snapshots memoize about one object per 16 bytes; vectors grow past that if they must, and
        // nothing is reserved for what a file merely could hold.
        const std::size_t expected = m_source ? m_source->total() * 4 : m_data.size();
        m_memo.reserve(std::min<std::size_t>(expected, std::size_t(1) << 32) / 16);
        m_depth.reserve(std::min<std::size_t>(expected, std::size_t(1) << 32) / 16);
        while (true) {
            if ((++m_ops & 0xffff) == 0 && m_progress && !reportProgress())
                throw Error(where(pos()), "cancelled");
            const std::size_t at = pos();
            const unsigned char op = byte();
            // Memo references and MEMOIZE are most of a snapshot's opcodes (every frame of every entry is
            // a BINGET or LONG_BINGET): they are handled here, before the switch's indirect jump.
            if (op == 'h') {
                get(at, le<1>());
                continue;
            }
            if (op == 'j') {
                get(at, le<4>());
                continue;
            }
            if (op == 0x94) {
                put(at, m_memo.size());
                continue;
            }
            switch (op) {
            case 0x80: { // PROTO
                const unsigned proto = byte();
                if (proto < 2 || proto > 5)
                    fail(at, "pickle protocol " + std::to_string(proto) + " is not supported (2 to 5 are)");
                break;
            }
            case 0x95: // FRAME: a length hint for buffered reading; the payload simply follows
                if (read(8).size() != 8)
                    fail(at, "truncated FRAME");
                break;
            case '.': // STOP
                if (m_stack.size() != 1 || !m_marks.empty())
                    fail(at, "STOP with " + std::to_string(m_stack.size()) + " values on the stack");
                return m_stack.back();
            case 'N':
                push(DataTree::kNone);
                break;
            case 0x88:
                push(DataTree::kTrue);
                break;
            case 0x89:
                push(DataTree::kFalse);
                break;
            case 'J':
                push(m_tree.makeInt(static_cast<std::int32_t>(le<4>())));
                break; // BININT
            case 'K':
                push(m_tree.makeInt(static_cast<long long>(le<1>())));
                break; // BININT1
            case 'M':
                push(m_tree.makeInt(static_cast<long long>(le<2>())));
                break; // BININT2
            case 0x8a:
                longInt(at, le<1>());
                break; // LONG1
            case 0x8b:
                longInt(at, checkedLength(at, le<4>()));
                break;  // LONG4
            case 'G': { // BINFLOAT, big-endian IEEE 754
                const std::string_view b = need(at, 8);
                std::uint64_t u = 0;
                for (int i = 0; i < 8; ++i)
                    u = (u << 8) | static_cast<unsigned char>(b[static_cast<std::size_t>(i)]);
                double d;
                std::memcpy(&d, &u, 8);
                push(m_tree.makeFloat(d));
                break;
            }
            case 0x8c:
                push(m_tree.makeStr(need(at, le<1>()), m_limits.copyStrings));
                break; // SHORT_BINUNICODE
            case 'X':
                push(m_tree.makeStr(need(at, checkedLength(at, le<4>())), m_limits.copyStrings));
                break; // BINUNICODE
            case 0x8d:
                push(m_tree.makeStr(need(at, checkedLength(at, le<8>())), m_limits.copyStrings));
                break; // BINUNICODE8
            case 'C':
                push(m_tree.makeBytes(need(at, le<1>()), m_limits.copyStrings));
                break; // SHORT_BINBYTES
            case 'B':
                push(m_tree.makeBytes(need(at, checkedLength(at, le<4>())), m_limits.copyStrings));
                break; // BINBYTES
            case 0x8e:
                push(m_tree.makeBytes(need(at, checkedLength(at, le<8>())), m_limits.copyStrings));
                break; // BINBYTES8
            case ']':
                push(container(at, Tag::List, nullptr, 0));
                break; // EMPTY_LIST
            case ')':
                push(container(at, Tag::Tuple, nullptr, 0));
                break; // EMPTY_TUPLE
            case '}':
                push(container(at, Tag::Dict, nullptr, 0));
                break; // EMPTY_DICT
            case 0x85:
                tupleOf(at, 1);
                break;
            case 0x86:
                tupleOf(at, 2);
                break;
            case 0x87:
                tupleOf(at, 3);
                break;
            case 't': { // TUPLE
                const std::size_t m = popMark(at);
                const Value v = container(at, Tag::Tuple, m_stack.data() + m, m_stack.size() - m);
                m_stack.resize(m);
                push(v);
                break;
            }
            case 'l': { // LIST
                const std::size_t m = popMark(at);
                const Value v = container(at, Tag::List, m_stack.data() + m, m_stack.size() - m);
                m_stack.resize(m);
                push(v);
                break;
            }
            case 'd': { // DICT
                const std::size_t m = popMark(at);
                if ((m_stack.size() - m) % 2 != 0)
                    fail(at, "DICT with an odd number of items");
                const Value v = container(at, Tag::Dict, m_stack.data() + m, m_stack.size() - m);
                m_stack.resize(m);
                push(v);
                break;
            }
            case 'a': // APPEND
                if (m_stack.size() < 2 + markFloor())
                    fail(at, "APPEND on an empty stack");
                addTo(at, m_stack[m_stack.size() - 2], &m_stack.back(), 1, "APPEND");
                m_stack.pop_back();
                break;
            case 'e': { // APPENDS
                const std::size_t m = popMark(at);
                if (m == 0 || m <= markFloor())
                    fail(at, "APPENDS without a list");
                addTo(at, m_stack[m - 1], m_stack.data() + m, m_stack.size() - m, "APPENDS");
                m_stack.resize(m);
                break;
            }
            case 's': // SETITEM
                if (m_stack.size() < 3 + markFloor())
                    fail(at, "SETITEM on a short stack");
                addTo(at, m_stack[m_stack.size() - 3], &m_stack[m_stack.size() - 2], 2, "SETITEM");
                m_stack.resize(m_stack.size() - 2);
                break;
            case 'u': { // SETITEMS
                const std::size_t m = popMark(at);
                if (m == 0 || m <= markFloor() || (m_stack.size() - m) % 2 != 0)
                    fail(at, "SETITEMS without a dict or with an odd number of items");
                addTo(at, m_stack[m - 1], m_stack.data() + m, m_stack.size() - m, "SETITEMS");
                m_stack.resize(m);
                break;
            }
            case '(': // MARK
                if (m_marks.size() >= m_limits.maxMarks)
                    fail(at, "more than " + std::to_string(m_limits.maxMarks) + " nested marks");
                m_marks.push_back(m_stack.size());
                break;
            case '0': // POP
                if (m_stack.size() <= markFloor()) {
                    if (m_marks.empty())
                        fail(at, "POP on an empty stack");
                    m_marks.pop_back(); // POP of a mark, as CPython allows
                } else {
                    m_stack.pop_back();
                }
                break;
            case '1': // POP_MARK
                m_stack.resize(popMark(at));
                break;
            case '2': // DUP
                if (m_stack.size() <= markFloor())
                    fail(at, "DUP on an empty stack");
                push(m_stack.back());
                break;
            case 'q':
                put(at, le<1>());
                break; // BINPUT
            case 'r':
                put(at, le<4>());
                break; // LONG_BINPUT
            default: {
                const char* name = opcodeName(op);
                char hex[8];
                std::snprintf(hex, sizeof hex, "0x%02x", op);
                if (name)
                    fail(at, std::string("opcode ") + name + " (" + hex +
                                 ") is not allowed: Headroom reads plain data only");
                fail(at, std::string("unknown opcode ") + hex);
            }
            }
        }
    }

private:
    std::string where(std::size_t at) const { // "byte N", or "decompressed byte N" in a gzip file
        return (m_source ? m_source->offsetName() : "byte ") + std::to_string(at);
    }
    [[noreturn]] void fail(std::size_t at, const std::string& why) { throw Error(where(at), why); }
    std::size_t pos() const { return m_base + m_pos; }
    bool reportProgress() {
        return m_source ? m_progress(m_source->consumed(), m_source->total())
                        : m_progress(m_pos, m_data.size());
    }
    // True when n more bytes can be read; a source decodes more into the window (as it arrives, so memory
    // follows what the data holds, not what a length field declares).
    bool available(std::uint64_t n) {
        if (n <= m_data.size() - m_pos)
            return true;
        return m_source && refill(n);
    }
    bool refill(std::uint64_t n) {
        // Everything before m_pos has been consumed (strings are copied in this mode): drop it.
        const std::size_t keep = m_len - m_pos;
        if (keep > 0) // (and the buffer exists)
            std::memmove(m_buffer.get(), m_buffer.get() + m_pos, keep);
        m_base += m_pos;
        m_pos = 0;
        m_len = keep;
        while (m_len < n) {
            // Grow by doubling, never to a declared length at once: memory follows the bytes that came.
            if (m_len == m_capacity)
                grow(std::max<std::size_t>(kChunk, static_cast<std::size_t>(std::min<std::uint64_t>(
                                                       n, 2 * std::uint64_t(m_capacity)))));
            const std::size_t got = m_source->read(m_buffer.get() + m_len, m_capacity - m_len);
            if (got == 0)
                break;
            m_len += got;
            if (m_base + m_len >= (std::size_t(1) << 32)) // the tree indexes items with 32 bits
                fail(m_base + m_len, "pickles of 4 GiB or more are not supported");
        }
        m_data = std::string_view(m_buffer.get(), m_len);
        return n <= m_len;
    }
    void grow(std::size_t capacity) {
        auto bigger = std::make_unique_for_overwrite<char[]>(capacity); // no zero-fill: read() writes it
        if (m_len > 0)
            std::memcpy(bigger.get(), m_buffer.get(), m_len);
        m_buffer = std::move(bigger);
        m_capacity = capacity;
    }
    HEADROOM_HOT unsigned char byte() {
        if (m_pos >= m_data.size() && !available(1))
            fail(pos(), "truncated: the pickle ends before STOP");
        return static_cast<unsigned char>(m_data[m_pos++]);
    }
    std::string_view read(std::size_t n) {
        available(n);
        const std::size_t take = std::min(n, m_data.size() - m_pos);
        const std::string_view s = m_data.substr(m_pos, take);
        m_pos += take;
        return s;
    }
    std::string_view need(std::size_t at, std::uint64_t n) {
        if (!available(n))
            fail(at,
                 "length " + std::to_string(n) + " runs past the end of the " + (m_source ? "data" : "file"));
        return read(static_cast<std::size_t>(n));
    }
    // The width is a template argument so that each opcode's argument is one fixed-size load.
    template <std::size_t N> HEADROOM_HOT std::uint64_t le() {
        if (N > m_data.size() - m_pos && !available(N))
            fail(pos(), "truncated argument");
        std::uint64_t v = 0;
        std::memcpy(&v, m_data.data() + m_pos, N); // little-endian hosts only
        m_pos += N;
        return v;
    }
    std::uint64_t checkedLength(std::size_t at, std::uint64_t n) {
        if (!available(n))
            fail(at, "declared length " + std::to_string(n) + " exceeds the " +
                         std::to_string(m_data.size() - m_pos) + " bytes left");
        return n;
    }
    void longInt(std::size_t at, std::uint64_t n) {
        const std::string_view b = need(at, n);
        if (b.size() <= 8) {
            // Sign-extend into 64 bits.
            std::uint64_t u = 0;
            for (std::size_t i = 0; i < b.size(); ++i)
                u |= std::uint64_t(static_cast<unsigned char>(b[i])) << (8 * i);
            if (!b.empty() && b.size() < 8 && (static_cast<unsigned char>(b.back()) & 0x80))
                u |= ~std::uint64_t(0) << (8 * b.size());
            push(m_tree.makeInt(static_cast<long long>(u)));
        } else {
            push(m_tree.makeBigInt(b, m_limits.copyStrings));
        }
    }
    std::size_t markFloor() const { return m_marks.empty() ? 0 : m_marks.back(); }
    std::size_t popMark(std::size_t at) {
        if (m_marks.empty())
            fail(at, "no MARK to pop");
        const std::size_t m = m_marks.back();
        m_marks.pop_back();
        return m;
    }
    HEADROOM_HOT void push(Value v) {
        if (m_stack.size() >= m_limits.maxStack)
            fail(pos(), "more than " + std::to_string(m_limits.maxStack) + " values on the stack");
        m_stack.push_back(v);
    }
    void tupleOf(std::size_t at, std::size_t n) {
        if (m_stack.size() < n + markFloor())
            fail(at, "TUPLE" + std::to_string(n) + " on a short stack");
        const Value v = container(at, Tag::Tuple, m_stack.data() + m_stack.size() - n, n);
        m_stack.resize(m_stack.size() - n);
        push(v);
    }
    // Nesting depth is tracked per container as 1 + the deepest item put into it, in the low 15 bits;
    // the top bit marks a container that has been put inside another. The memo lets a file extend such a
    // container later (GET, then APPEND): allowed only when its depth does not grow, since the depths
    // recorded for the containers holding it would then be wrong. That also refuses every cycle, whose
    // closing edge always deepens a container already placed (or places a container inside itself).
    static constexpr std::uint16_t kPlaced = 0x8000;
    // The deepest of `items`, each marked as placed. `target`: the container they go into, which may not
    // be among them (on failure the whole read is abandoned, so marking early changes nothing).
    std::uint32_t place(std::size_t at, const Value* items, std::size_t n, Value target, const char* op) {
        std::uint32_t d = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const Tag t = DataTree::tag(items[i]);
            if (t != Tag::List && t != Tag::Tuple && t != Tag::Dict)
                continue;
            if (items[i] == target)
                fail(at, std::string(op) + " puts a container inside itself: cyclic data is not supported");
            std::uint16_t& slot = m_depth[DataTree::payload(items[i])];
            d = std::max<std::uint32_t>(d, slot & ~kPlaced);
            slot |= kPlaced;
        }
        return d;
    }
    Value container(std::size_t at, Tag kind, const Value* items, std::size_t n) {
        const std::uint32_t d = place(at, items, n, DataTree::kNone, "") + 1; // a new container: no cycle
        if (d > m_limits.maxDepth)
            fail(at, "containers nested deeper than " + std::to_string(m_limits.maxDepth));
        const Value v = m_tree.makeContainer(kind, items, n);
        m_depth.push_back(static_cast<std::uint16_t>(d));
        return v;
    }
    void addTo(std::size_t at, Value target, const Value* items, std::size_t n, const char* op) {
        const Tag t = DataTree::tag(target);
        if (t != Tag::List && t != Tag::Dict)
            fail(at, std::string(op) + " on something that is not a list or dict being built");
        const auto idx = DataTree::payload(target);
        const std::uint32_t d = place(at, items, n, target, op) + 1;
        if (d > m_limits.maxDepth)
            fail(at, "containers nested deeper than " + std::to_string(m_limits.maxDepth));
        const std::uint16_t current = m_depth[idx];
        if ((current & kPlaced) && d > (current & ~kPlaced))
            fail(at, std::string(op) + " deepens a container that is already inside another (via the memo): "
                                       "cyclic or re-entrant data is not supported");
        if (!m_tree.extend(target, items, n))
            fail(at, std::string(op) + " on something that is not a list or dict being built");
        m_depth[idx] =
            static_cast<std::uint16_t>(std::max<std::uint32_t>(current & ~kPlaced, d) | (current & kPlaced));
    }
    HEADROOM_HOT void put(std::size_t at, std::uint64_t index) {
        if (m_stack.size() <= markFloor())
            fail(at, "memo PUT with an empty stack");
        // Pickle writers number the memo in order; a gap or a far index means a corrupt file.
        if (index > m_memo.size())
            fail(at, "memo index " + std::to_string(index) + " is out of order (next is " +
                         std::to_string(m_memo.size()) + ")");
        const std::uint32_t packed = pack(static_cast<std::uint32_t>(index), m_stack.back());
        if (index == m_memo.size())
            m_memo.push_back(packed);
        else
            m_memo[index] = packed;
    }
    HEADROOM_HOT void get(std::size_t at, std::uint64_t index) {
        if (index >= m_memo.size())
            fail(at, "memo index " + std::to_string(index) + " is out of range (" +
                         std::to_string(m_memo.size()) + " entries)");
        const std::uint32_t packed = m_memo[index];
        // A shared reference: the container is not copied.
        push(packed == kWide ? m_memoWide.at(static_cast<std::uint32_t>(index))
                             : DataTree::make(static_cast<Tag>(packed >> 29), packed & kPayload29));
    }
    // A snapshot memoizes tens of millions of values, nearly all containers and strings whose index fits
    // 29 bits: those take 4 bytes (tag and index); the rest (large or negative ints, ...) sit beside.
    static constexpr std::uint32_t kWide = 0xffffffffu, kPayload29 = (1u << 29) - 1;
    std::uint32_t pack(std::uint32_t index, Value v) {
        const std::uint64_t payload = DataTree::payload(v);
        const auto packed = static_cast<std::uint32_t>((std::uint64_t(DataTree::tag(v)) << 29) | payload);
        if (payload < kPayload29 && packed != kWide) {
            if (!m_memoWide.empty()) // only overwritten entries can be stale
                m_memoWide.erase(index);
            return packed;
        }
        m_memoWide[index] = v;
        return kWide;
    }

    std::string_view m_data; // the input, or the window over the source's bytes
    PickleSource* m_source;
    static constexpr std::size_t kChunk = std::size_t(4) << 20; // read 4 MiB at a time
    std::unique_ptr<char[]> m_buffer;                           // the window's bytes
    std::size_t m_capacity = 0, m_len = 0;
    std::size_t m_base = 0; // offset of m_data[0] in the whole input
    DataTree& m_tree;
    const ReadLimits& m_limits;
    const ReadProgress& m_progress;
    std::size_t m_pos = 0;
    std::size_t m_ops = 0;
    std::vector<Value> m_stack;
    std::vector<std::size_t> m_marks;
    BigVector<std::uint32_t> m_memo; // packed; kWide: the value is in m_memoWide
    std::unordered_map<std::uint32_t, Value> m_memoWide;
    BigVector<std::uint16_t> m_depth; // per container, same index as the tree's: depth | kPlaced
};

void checkLimits(const ReadLimits& limits) {
    if (limits.maxDepth >= 0x8000) // depths share 16 bits with the placed mark
        throw Error("", "the nesting limit must be below 32768");
}

} // namespace

DataTree::Value readPickle(std::string_view data, DataTree& tree, const ReadLimits& limits,
                           const ReadProgress& progress) {
    if (data.size() >= (std::size_t(1) << 32))
        throw Error("", "pickles of 4 GiB or more are not supported");
    if (data.size() < 2 || static_cast<unsigned char>(data[0]) != 0x80)
        throw Error("byte 0", "not a pickle of protocol 2 or later (it must start with PROTO, 0x80)");
    checkLimits(limits);
    PickleMachine machine(data, nullptr, tree, limits, progress);
    return machine.run();
}

DataTree::Value readPickle(PickleSource& source, DataTree& tree, const ReadLimits& limits,
                           const ReadProgress& progress) {
    if (!limits.copyStrings)
        throw Error("", "a streamed pickle must copy its strings");
    checkLimits(limits);
    PickleMachine machine({}, &source, tree, limits, progress);
    return machine.run();
}

} // namespace headroom
