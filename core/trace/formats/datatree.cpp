// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/formats/datatree.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>

namespace headroom {

DataTree::DataTree(std::size_t inputBytes) {
    // Sized for what real snapshots hold per input byte (an item per 8 bytes or fewer, a container per 16,
    // a trace record per 90 to 310), so that growth rarely copies; never for what a hostile file could
    // declare, which would reserve many times the input before a single byte is checked.
    if (inputBytes >= (std::size_t(1) << 32))
        inputBytes = 0; // a pickle that large is refused when read: reserve nothing for it
    m_items.reserve(inputBytes / 8);
    m_containers.reserve(inputBytes / 16);
    const std::size_t records = inputBytes / 64;
    m_records.time.reserve(records);
    m_records.addr.reserve(records);
    m_records.size.reserve(records);
    m_records.stream.reserve(records);
    m_records.frames.reserve(records);
    m_records.action.reserve(records);
}

std::vector<GrowingBlock> DataTree::growingBlocks() const {
    std::vector<GrowingBlock> out;
    auto add = [&](const auto& v) {
        using T = typename std::decay_t<decltype(v)>::value_type;
        out.push_back({v.data(), v.size() * sizeof(T), v.capacity() * sizeof(T)});
    };
    add(m_items);
    add(m_containers);
    add(m_records.time);
    add(m_records.addr);
    add(m_records.size);
    add(m_records.stream);
    add(m_records.frames);
    add(m_records.action);
    return out;
}

DataTree::Value DataTree::makeInt(long long n) {
    if (fitsInline(n))
        return make(Tag::Int, static_cast<std::uint64_t>(n) & ((std::uint64_t(1) << 61) - 1));
    char bytes[8];
    std::memcpy(bytes, &n, 8); // little-endian two's complement on the platforms Headroom builds for
    return makeBigInt(std::string_view(bytes, 8), true);
}

std::string_view DataTree::copyBytes(std::string_view s) {
    if (s.size() > m_chunkLeft) {
        const std::size_t size = std::max<std::size_t>(s.size(), std::size_t(1) << 20);
        m_chunks.push_back(std::make_unique<char[]>(size));
        m_chunkPos = m_chunks.back().get();
        m_chunkLeft = size;
    }
    if (!s.empty())
        std::memcpy(m_chunkPos, s.data(), s.size());
    const std::string_view copy(m_chunkPos, s.size());
    m_chunkPos += s.size();
    m_chunkLeft -= s.size();
    return copy;
}

DataTree::Value DataTree::makeBigInt(std::string_view le, bool copy) {
    if (copy)
        le = copyBytes(le);
    m_boxed.push_back({0, le.empty() ? std::string_view("\0", 1) : le});
    return make(Tag::Boxed, m_boxed.size() - 1);
}

DataTree::Value DataTree::makeFloat(double d) {
    m_boxed.push_back({d, {}});
    return make(Tag::Boxed, m_boxed.size() - 1);
}

DataTree::Value DataTree::makeStr(std::string_view s, bool copy) {
    const bool intern = s.size() <= 32;
    std::size_t slot = 0;
    if (intern) {
        // A direct-mapped cache before the hash map: the same few short strings ("N/A", action names)
        // arrive once per entry, and hashing them through std::unordered_map was 3% of reading.
        std::uint64_t h = s.size();
        for (const char c : s)
            h = h * 31 + static_cast<unsigned char>(c);
        slot = (h * 0x9e3779b97f4a7c15ull) >> (64 - kStringCacheBits);
        const Value cached = m_stringCache[slot];
        if (cached != 0 && m_strings[payload(cached)] == s)
            return cached;
        const auto it = m_shortStrings.find(s);
        if (it != m_shortStrings.end()) {
            m_stringCache[slot] = it->second;
            return it->second;
        }
    }
    if (copy)
        s = copyBytes(s);
    m_strings.push_back(s);
    const Value v = make(Tag::Str, m_strings.size() - 1);
    if (intern) {
        m_shortStrings.emplace(s, v);
        m_stringCache[slot] = v;
    }
    return v;
}

DataTree::Value DataTree::makeBytes(std::string_view s, bool copy) {
    if (copy)
        s = copyBytes(s);
    m_strings.push_back(s);
    return make(Tag::Bytes, m_strings.size() - 1);
}

void DataTree::shareIfSeen(std::uint32_t index) {
    Container& c = m_containers[index];
    if (c.more != 0 || c.count < 2 || c.count > 256 || c.start + c.count != m_items.size())
        return;
    const Value* items = m_items.data() + c.start;
    // Rotate-xor per item (one cycle each; a multiply per item was most of this function), then one mix.
    std::uint64_t h = c.count;
    for (std::uint32_t i = 0; i < c.count; ++i)
        h = ((h << 7) | (h >> 57)) ^ items[i];
    h ^= h >> 29; // spread the high bits down before masking
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    // A direct-mapped cache of recent lists by hash: a collision only means a list is stored again.
    std::uint32_t& slot = m_listCache[h & (kListCacheSize - 1)];
    if (slot != 0 && slot - 1 != index) {
        const Container& other = m_containers[slot - 1];
        if (other.kind == c.kind && other.more == 0 && other.count == c.count &&
            std::equal(items, items + c.count, m_items.data() + other.start)) {
            const std::uint32_t start = c.start;
            c.start = other.start; // nothing writes items in place, so the range can be shared
            m_items.resize(start);
            return;
        }
    }
    slot = index + 1;
}

DataTree::Value DataTree::makeContainer(Tag kind, const Value* items, std::size_t count) {
    Container c;
    c.kind = static_cast<std::uint8_t>(kind);
    c.start = static_cast<std::uint32_t>(m_items.size());
    c.count = static_cast<std::uint32_t>(count);
    m_containers.push_back(c);
    const auto index = static_cast<std::uint32_t>(m_containers.size() - 1);
    // A trace entry becomes a record straight from the reader's stack, its items never stored.
    if (kind == Tag::Dict && recordFrom(index, items, count))
        return make(kind, index);
    m_items.insert(m_items.end(), items, items + count);
    if (kind == Tag::List)
        shareIfSeen(index);
    return make(kind, index);
}

bool DataTree::extend(Value container, const Value* items, std::size_t count) {
    const Tag t = tag(container);
    if (t != Tag::List && t != Tag::Dict)
        return false;
    const auto index = static_cast<std::uint32_t>(payload(container));
    Container& c = m_containers[index];
    if (c.kind != static_cast<std::uint8_t>(t))
        return false; // a record (or tuple) is not extended
    if (count == 0)
        return true;
    if (t == Tag::Dict && c.count == 0 && c.more == 0 && recordFrom(index, items, count))
        return true; // a trace entry in one SETITEMS, the usual form: its items are never stored
    const auto start = static_cast<std::uint32_t>(m_items.size());
    bool first = false;
    if (c.more == 0 && c.start + c.count == start) {
        first = c.count == 0;
        c.count += static_cast<std::uint32_t>(count); // still contiguous: grow in place
    } else if (c.count == 0 && c.more == 0) {
        first = true;
        c.start = start;
        c.count = static_cast<std::uint32_t>(count);
    } else {
        if (c.more == 0) {
            if (m_overflow.size() >= (1u << 24) - 1)
                return false; // more separately extended containers than the tree can track
            m_overflow.emplace_back();
            c.more = static_cast<std::uint32_t>(m_overflow.size()) & 0xffffffu;
        }
        auto& runs = m_overflow[c.more - 1];
        const std::uint64_t end = (runs.empty() ? c.count : runs.back().end) + std::uint64_t(count);
        if (end > 0xffffffffu)
            return false; // more items than a container can index
        runs.push_back({start, static_cast<std::uint32_t>(end)});
    }
    // A dict filled piece by piece stays a plain dict: made a record as soon as it had an action and a size,
    // its next SETITEM would have failed. (CPython writes a trace entry in one SETITEMS, handled above.)
    m_items.insert(m_items.end(), items, items + count);
    if (t == Tag::List && first)
        shareIfSeen(index);
    return true;
}

std::uint32_t DataTree::internAction(std::string_view name) {
    for (std::size_t i = 0; i < m_actionNames.size(); ++i)
        if (m_actionNames[i] == name)
            return static_cast<std::uint32_t>(i);
    m_actionNames.emplace_back(name);
    return static_cast<std::uint32_t>(m_actionNames.size() - 1);
}

namespace {
enum Field : std::int8_t {
    kUnknownKey = -2,
    kOtherKey = -1,
    kAction,
    kAddr,
    kSize,
    kStream,
    kTime,
    kFrames,
    kUserMetadata,
    kCompileContext,
    kIgnored
};
Field classifyKey(std::string_view key) {
    if (key == "action")
        return kAction;
    // An OOM entry writes the device's free bytes where others write the address (PyTorch's
    // torch/csrc/cuda/Module.cpp: `trace_entry[OOM == action ? device_free_s : addr_s] = te.addr_`).
    if (key == "addr" || key == "device_free")
        return kAddr;
    if (key == "size")
        return kSize;
    if (key == "stream")
        return kStream;
    if (key == "time_us")
        return kTime;
    if (key == "frames")
        return kFrames;
    if (key == "user_metadata")
        return kUserMetadata;
    if (key == "compile_context")
        return kCompileContext;
    if (key == "forward_frames")
        return kIgnored;
    return kOtherKey;
}
} // namespace

bool DataTree::recordFrom(std::uint32_t index, const Value* kv, std::size_t count) {
    if (count == 0 || count % 2 != 0 || count > 2 * 12)
        return false;
    TraceRecord r;
    bool haveAction = false, haveSize = false;
    Value notes[2] = {kNone, kNone}; // user_metadata, compile_context
    for (std::size_t i = 0; i < count; i += 2) {
        const Value k = kv[i], v = kv[i + 1];
        if (tag(k) != Tag::Str)
            return false;
        const std::size_t id = payload(k);
        if (id >= m_keyField.size())
            m_keyField.resize(m_strings.size(), kUnknownKey);
        if (m_keyField[id] == kUnknownKey)
            m_keyField[id] = classifyKey(m_strings[id]);
        long long n = 0;
        switch (m_keyField[id]) {
        case kAction: {
            if (tag(v) != Tag::Str)
                return false;
            const std::size_t sid = payload(v);
            if (sid >= m_actionOfString.size())
                m_actionOfString.resize(m_strings.size(), -1);
            if (m_actionOfString[sid] < 0) {
                if (m_actionNames.size() >= 1024)
                    return false;
                m_actionOfString[sid] = static_cast<std::int32_t>(internAction(m_strings[sid]));
            }
            r.action = static_cast<std::uint32_t>(m_actionOfString[sid]) & 0x7fffffffu;
            haveAction = true;
            break;
        }
        case kAddr:
            if (!toInt(v, &n))
                return false;
            r.addr = n;
            break;
        case kSize:
            if (!toInt(v, &n))
                return false;
            r.size = n;
            haveSize = true;
            break;
        case kStream:
            if (!toInt(v, &n))
                return false;
            r.stream = n;
            break;
        case kTime:
            if (!toInt(v, &n))
                return false;
            r.timeUs = n;
            r.hasTime = 1;
            break;
        case kFrames:
            if (tag(v) != Tag::List)
                return false;
            r.framesList = static_cast<std::uint32_t>(payload(v));
            break;
        case kUserMetadata:
        case kCompileContext:
            if (tag(v) == Tag::Str && !m_strings[payload(v)].empty() && m_strings[payload(v)] != "N/A")
                notes[m_keyField[id] == kCompileContext] = v;
            break;
        case kIgnored:
            break;
        default:
            return false; // not a trace entry we understand: stays a plain dict
        }
    }
    if (!haveAction || !haveSize || m_records.count() >= 0xfffffffeu)
        return false;
    // INT64_MIN marks "no time": a file that writes exactly that gets the next value instead.
    m_records.time.push_back(r.hasTime ? std::max(r.timeUs, kNoTime + 1) : kNoTime);
    m_records.addr.push_back(static_cast<std::uint64_t>(r.addr));
    m_records.size.push_back(r.size);
    m_records.stream.push_back(r.stream);
    m_records.frames.push_back(r.framesList);
    m_records.action.push_back(static_cast<std::uint16_t>(r.action));
    for (int k = 0; k < 2; ++k)
        if (notes[k] != kNone)
            m_records.notes.push_back({static_cast<std::uint32_t>(m_records.count() - 1),
                                       static_cast<std::uint32_t>(payload(notes[k])), k == 1});
    Container& c = m_containers[index];
    c.kind = kRecordKind;
    c.start = static_cast<std::uint32_t>(m_records.count() - 1);
    c.count = 0;
    return true;
}

bool DataTree::isInt(Value v) const {
    return tag(v) == Tag::Int || (tag(v) == Tag::Boxed && !m_boxed[payload(v)].bigInt.empty());
}

bool DataTree::toInt(Value v, long long* out) const {
    if (tag(v) == Tag::Int) {
        std::uint64_t p = payload(v);
        if (p & (std::uint64_t(1) << 60))
            p |= ~((std::uint64_t(1) << 61) - 1); // sign-extend the 61-bit payload
        *out = static_cast<long long>(p);
        return true;
    }
    if (v == kTrue || v == kFalse) {
        *out = v == kTrue ? 1 : 0;
        return true;
    }
    if (tag(v) != Tag::Boxed || m_boxed[payload(v)].bigInt.empty())
        return false;
    const std::string_view b = m_boxed[payload(v)].bigInt;
    const bool negative = (static_cast<unsigned char>(b.back()) & 0x80) != 0;
    // Wider than 8 bytes only when the extra bytes are pure sign extension.
    for (std::size_t i = 8; i < b.size(); ++i)
        if (static_cast<unsigned char>(b[i]) != (negative ? 0xff : 0x00))
            return false;
    std::uint64_t u = negative ? ~std::uint64_t(0) : 0;
    for (std::size_t i = 0; i < b.size() && i < 8; ++i) {
        u &= ~(std::uint64_t(0xff) << (8 * i));
        u |= std::uint64_t(static_cast<unsigned char>(b[i])) << (8 * i);
    }
    if (b.size() >= 8 && (static_cast<long long>(u) < 0) != negative)
        return false;
    *out = static_cast<long long>(u);
    return true;
}

bool DataTree::toDouble(Value v, double* out) const {
    long long n = 0;
    if (toInt(v, &n)) {
        *out = static_cast<double>(n);
        return true;
    }
    if (tag(v) == Tag::Boxed && m_boxed[payload(v)].bigInt.empty()) {
        *out = m_boxed[payload(v)].number;
        return true;
    }
    return false;
}

std::string_view DataTree::str(Value v) const {
    return tag(v) == Tag::Str ? m_strings[payload(v)] : std::string_view();
}

bool DataTree::isRecord(Value v) const {
    return tag(v) == Tag::Dict && m_containers[payload(v)].kind == kRecordKind;
}

std::size_t DataTree::recordIndex(Value v) const {
    return m_containers[payload(v)].start;
}

DataTree::TraceRecord DataTree::record(Value v) const {
    const std::size_t i = recordIndex(v);
    TraceRecord r;
    r.addr = static_cast<std::int64_t>(m_records.addr[i]);
    r.size = m_records.size[i];
    r.stream = m_records.stream[i];
    r.hasTime = m_records.time[i] != kNoTime;
    r.timeUs = r.hasTime ? m_records.time[i] : 0;
    r.framesList = m_records.frames[i];
    r.action = m_records.action[i];
    return r;
}

std::pair<std::string_view, std::string_view> DataTree::recordNotes(std::size_t record) const {
    std::pair<std::string_view, std::string_view> out;
    auto it = std::lower_bound(m_records.notes.begin(), m_records.notes.end(), record,
                               [](const RecordColumns::Note& n, std::size_t r) { return n.record < r; });
    for (; it != m_records.notes.end() && it->record == record; ++it)
        (it->compileContext ? out.second : out.first) = m_strings[it->string];
    return out;
}

std::size_t DataTree::size(Value v) const {
    const Tag t = tag(v);
    if (t != Tag::List && t != Tag::Tuple && t != Tag::Dict)
        return 0;
    const Container& c = m_containers[payload(v)];
    if (c.kind == kRecordKind)
        return 0;
    const std::size_t n =
        c.more && !m_overflow[c.more - 1].empty() ? m_overflow[c.more - 1].back().end : c.count;
    return t == Tag::Dict ? n / 2 : n;
}

std::uint64_t DataTree::storageKey(Value v) const {
    const Container& c = m_containers[payload(v)];
    if (c.more != 0)
        return (std::uint64_t(1) << 63) | payload(v); // spread over runs: only itself
    return (std::uint64_t(c.start) << 32) | c.count;
}

const DataTree::Value* DataTree::locate(Value v, std::size_t i) const {
    const Container& c = m_containers[payload(v)];
    if (i < c.count)
        return &m_items[c.start + i];
    if (!c.more)
        return nullptr;
    const std::vector<Segment>& runs = m_overflow[c.more - 1];
    const auto it = std::upper_bound(runs.begin(), runs.end(), i,
                                     [](std::size_t index, const Segment& s) { return index < s.end; });
    if (it == runs.end())
        return nullptr;
    const std::size_t first = it == runs.begin() ? c.count : std::prev(it)->end;
    return &m_items[it->start + (i - first)];
}

std::size_t DataTree::runCount(Value v) const {
    if (!isList(v) && !isDict(v))
        return 0;
    const Container& c = m_containers[payload(v)];
    return 1 + (c.more ? m_overflow[c.more - 1].size() : 0);
}

std::span<const DataTree::Value> DataTree::run(Value v, std::size_t r) const {
    const Container& c = m_containers[payload(v)];
    if (r == 0)
        return {m_items.data() + c.start, c.count};
    const std::vector<Segment>& runs = m_overflow[c.more - 1];
    const std::size_t first = r == 1 ? c.count : runs[r - 2].end;
    return {m_items.data() + runs[r - 1].start, runs[r - 1].end - first};
}

DataTree::Value DataTree::at(Value list, std::size_t i) const {
    if (!isList(list))
        return kNone;
    const Value* p = locate(list, i);
    return p ? *p : kNone;
}

DataTree::Value DataTree::keyAt(Value dict, std::size_t i) const {
    const Value* p = isDict(dict) ? locate(dict, 2 * i) : nullptr;
    return p ? *p : kNone;
}

DataTree::Value DataTree::valueAt(Value dict, std::size_t i) const {
    const Value* p = isDict(dict) ? locate(dict, 2 * i + 1) : nullptr;
    return p ? *p : kNone;
}

DataTree::Value DataTree::get(Value dict, std::string_view key, bool* found) const {
    if (found)
        *found = false;
    if (!isDict(dict))
        return kNone;
    // Pickle dicts keep the last value written for a key, so search from the end.
    for (std::size_t i = size(dict); i-- > 0;) {
        const Value k = keyAt(dict, i);
        if (tag(k) == Tag::Str && m_strings[payload(k)] == key) {
            if (found)
                *found = true;
            return valueAt(dict, i);
        }
    }
    return kNone;
}

} // namespace headroom
