// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/formats/jsontree.h"

#include "core/error.h"

#include <functional>
#include <istream>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace headroom {

namespace {

using Value = DataTree::Value;
using Tag = DataTree::Tag;

// Builds the tree, and refuses as early as it can a document that cannot be a trace, so that a large JSON
// file of another kind fails after its first item rather than after all of it: a top-level list must hold
// lists or dicts (a dict with "blocks" or "ph"), a top-level object must name "traceEvents", "segments" or
// "device_traces" within its first kTopLevelValues values.
class TreeSax {
public:
    static constexpr std::size_t kTopLevelValues = std::size_t(1) << 18;

    TreeSax(DataTree& tree, const ReadLimits& limits, const char* offsetName = "byte ",
            std::function<std::size_t()> position = {})
        : m_tree(tree), m_limits(limits), m_offsetName(offsetName), m_position(std::move(position)) {}

    bool null() { return push(DataTree::kNone); }
    bool boolean(bool b) { return push(b ? DataTree::kTrue : DataTree::kFalse); }
    bool number_integer(std::int64_t n) { return push(m_tree.makeInt(n)); }
    bool number_unsigned(std::uint64_t n) {
        if (n <= static_cast<std::uint64_t>(INT64_MAX))
            return push(m_tree.makeInt(static_cast<long long>(n)));
        char bytes[9] = {};
        for (int i = 0; i < 8; ++i)
            bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
        return push(m_tree.makeBigInt(std::string_view(bytes, 9), true)); // a zero top byte keeps it positive
    }
    bool number_float(double d, const std::string&) { return push(m_tree.makeFloat(d)); }
    bool string(std::string& s) { return push(intern(s)); }
    bool binary(nlohmann::json::binary_t&) { return push(DataTree::kNone); }
    bool key(std::string& s) {
        if (m_marks.size() == 1 && m_topIsObject &&
            (s == "traceEvents" || s == "segments" || s == "device_traces"))
            m_knownKey = true;
        return push(intern(s));
    }
    bool start_object(std::size_t) {
        if (m_marks.empty())
            m_topIsObject = true;
        return open();
    }
    bool start_array(std::size_t) { return open(); }
    bool end_object() { return close(Tag::Dict); }
    bool end_array() { return close(Tag::List); }
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
        throw Error(m_offsetName + std::to_string(position), "invalid JSON: " + jsonExceptionText(ex));
    }

    Value result() const { return m_stack.empty() ? DataTree::kNone : m_stack.back(); }

private:
    Value intern(const std::string& s) {
        if (s.size() > 128)
            return m_tree.makeStr(s, true);
        auto it = m_interned.find(s);
        if (it != m_interned.end())
            return it->second;
        const Value v = m_tree.makeStr(s, true);
        m_interned.emplace(s, v);
        return v;
    }
    bool push(Value v) {
        if (m_stack.size() >= m_limits.maxStack)
            throw Error("", "more than " + std::to_string(m_limits.maxStack) + " values pending");
        m_stack.push_back(v);
        if (m_topIsObject && !m_knownKey && ++m_valuesBeforeKey > kTopLevelValues)
            throw Error(here(), "a JSON object that is neither a profiler trace (traceEvents) nor a memory "
                                "snapshot (segments, device_traces) in its first " +
                                    std::to_string(kTopLevelValues) + " values");
        if (m_marks.size() == 1 && !m_topIsObject)
            checkTopLevel(v);
        return true;
    }
    std::string here() const { return m_position ? m_offsetName + std::to_string(m_position()) : ""; }
    // Called for each value completed directly inside a top-level list: its first decides.
    void checkTopLevel(Value v) {
        if (++m_topLevelValues > 1)
            return;
        bool known = m_tree.isList(v);
        if (m_tree.isDict(v)) {
            bool blocks = false, ph = false;
            m_tree.get(v, "blocks", &blocks);
            m_tree.get(v, "ph", &ph);
            known = blocks || ph;
        }
        if (!known)
            throw Error(here(), "a JSON list of a kind Headroom does not know (its first item is neither a "
                                "list, a snapshot segment nor a profiler event)");
    }
    bool open() {
        if (m_marks.size() >= m_limits.maxDepth)
            throw Error("", "JSON nested deeper than " + std::to_string(m_limits.maxDepth));
        m_marks.push_back(m_stack.size());
        return true;
    }
    bool close(Tag kind) {
        const std::size_t m = m_marks.back();
        m_marks.pop_back();
        const Value v = m_tree.makeContainer(kind, m_stack.data() + m, m_stack.size() - m);
        m_stack.resize(m);
        return push(v);
    }

    DataTree& m_tree;
    const ReadLimits& m_limits;
    std::string m_offsetName;
    std::function<std::size_t()> m_position;
    bool m_topIsObject = false, m_knownKey = false;
    std::size_t m_topLevelValues = 0, m_valuesBeforeKey = 0;
    std::vector<Value> m_stack;
    std::vector<std::size_t> m_marks;
    std::unordered_map<std::string, Value> m_interned;
};

} // namespace

DataTree::Value readJsonTree(std::string_view text, DataTree& tree, const ReadLimits& limits,
                             const ReadProgress& progress) {
    if (progress && !progress(0, text.size()))
        throw Error("", "cancelled");
    TreeSax sax(tree, limits);
    nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
    if (progress && !progress(text.size(), text.size()))
        throw Error("", "cancelled");
    return sax.result();
}

DataTree::Value readJsonTree(std::streambuf& text, DataTree& tree, const ReadLimits& limits,
                             std::function<std::size_t()> position) {
    TreeSax sax(tree, limits, "decompressed byte ", std::move(position));
    std::istream in(&text);
    nlohmann::json::sax_parse(in, &sax);
    return sax.result();
}

} // namespace headroom
