#include "core/trace/datatree.h"

#include <cstring>
#include <limits>

namespace headroom {

DataTree::DataTree(std::size_t inputBytes) {
    // Every item costs the reader at least one input byte, a container at least two (opcode and the
    // MEMOIZE or mark that makes it useful) and a trace record well over sixteen.
    m_items.reserve(inputBytes);
    m_containers.reserve(inputBytes / 2);
    m_records.reserve(inputBytes / 16);
}

DataTree::Value DataTree::makeInt(long long n) {
    if (fitsInline(n))
        return make(Tag::Int, static_cast<std::uint64_t>(n) & ((std::uint64_t(1) << 61) - 1));
    char bytes[8];
    std::memcpy(bytes, &n, 8); // little-endian two's complement on the platforms Headroom builds for
    return makeBigInt(std::string_view(bytes, 8), true);
}

DataTree::Value DataTree::makeBigInt(std::string_view le, bool copy) {
    if (copy) {
        m_ownedStrings.emplace_back(le);
        le = m_ownedStrings.back();
    }
    m_boxed.push_back({0, le.empty() ? std::string_view("\0", 1) : le});
    return make(Tag::Boxed, m_boxed.size() - 1);
}

DataTree::Value DataTree::makeFloat(double d) {
    m_boxed.push_back({d, {}});
    return make(Tag::Boxed, m_boxed.size() - 1);
}

DataTree::Value DataTree::makeStr(std::string_view s, bool copy) {
    if (copy) {
        m_ownedStrings.emplace_back(s);
        s = m_ownedStrings.back();
    }
    m_strings.push_back(s);
    return make(Tag::Str, m_strings.size() - 1);
}

DataTree::Value DataTree::makeBytes(std::string_view s, bool copy) {
    const Value v = makeStr(s, copy);
    return make(Tag::Bytes, payload(v));
}

DataTree::Value DataTree::makeContainer(Tag kind, const Value* items, std::size_t count) {
    Container c;
    c.kind = static_cast<std::uint8_t>(kind);
    c.start = static_cast<std::uint32_t>(m_items.size());
    c.count = static_cast<std::uint32_t>(count);
    m_items.insert(m_items.end(), items, items + count);
    m_containers.push_back(c);
    const auto index = static_cast<std::uint32_t>(m_containers.size() - 1);
    if (kind == Tag::Dict && count > 0)
        tryMakeRecord(index);
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
    const auto start = static_cast<std::uint32_t>(m_items.size());
    if (c.more == 0 && c.start + c.count == start) {
        c.count += static_cast<std::uint32_t>(count); // still contiguous: grow in place
    } else if (c.count == 0 && c.more == 0) {
        c.start = start;
        c.count = static_cast<std::uint32_t>(count);
    } else {
        if (c.more == 0) {
            if (m_overflow.size() >= (1u << 24) - 1)
                return false; // more separately extended containers than the tree can track
            m_overflow.emplace_back();
            c.more = static_cast<std::uint32_t>(m_overflow.size()) & 0xffffffu;
        }
        m_overflow[c.more - 1].push_back({start, static_cast<std::uint32_t>(count)});
    }
    m_items.insert(m_items.end(), items, items + count);
    if (t == Tag::Dict)
        tryMakeRecord(index);
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
    kIgnored
};
Field classifyKey(std::string_view key) {
    if (key == "action")
        return kAction;
    if (key == "addr")
        return kAddr;
    if (key == "size")
        return kSize;
    if (key == "stream")
        return kStream;
    if (key == "time_us")
        return kTime;
    if (key == "frames")
        return kFrames;
    if (key == "compile_context" || key == "user_metadata" || key == "forward_frames")
        return kIgnored;
    return kOtherKey;
}
} // namespace

bool DataTree::tryMakeRecord(std::uint32_t index) {
    Container& c = m_containers[index];
    if (c.more != 0 || c.start + c.count != m_items.size() || c.count % 2 != 0 || c.count > 2 * 12)
        return false;
    TraceRecord r;
    bool haveAction = false, haveSize = false;
    for (std::uint32_t i = 0; i < c.count; i += 2) {
        const Value k = m_items[c.start + i], v = m_items[c.start + i + 1];
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
        case kIgnored:
            break;
        default:
            return false; // not a trace entry we understand: stays a plain dict
        }
    }
    if (!haveAction || !haveSize || m_records.size() >= 0xfffffffeu)
        return false;
    m_items.resize(c.start);
    m_records.push_back(r);
    c.kind = kRecordKind;
    c.start = static_cast<std::uint32_t>(m_records.size() - 1);
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

const DataTree::TraceRecord& DataTree::record(Value v) const {
    return m_records[m_containers[payload(v)].start];
}

std::size_t DataTree::size(Value v) const {
    const Tag t = tag(v);
    if (t != Tag::List && t != Tag::Tuple && t != Tag::Dict)
        return 0;
    const Container& c = m_containers[payload(v)];
    if (c.kind == kRecordKind)
        return 0;
    std::size_t n = c.count;
    if (c.more)
        for (const Segment& s : m_overflow[c.more - 1])
            n += s.count;
    return t == Tag::Dict ? n / 2 : n;
}

const DataTree::Value* DataTree::locate(Value v, std::size_t i) const {
    const Container& c = m_containers[payload(v)];
    if (i < c.count)
        return &m_items[c.start + i];
    i -= c.count;
    if (c.more)
        for (const Segment& s : m_overflow[c.more - 1]) {
            if (i < s.count)
                return &m_items[s.start + i];
            i -= s.count;
        }
    return nullptr;
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
