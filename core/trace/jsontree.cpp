// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/jsontree.h"

#include "core/error.h"

#include <istream>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace headroom {

namespace {

using Value = DataTree::Value;
using Tag = DataTree::Tag;

class TreeSax {
public:
    TreeSax(DataTree& tree, const ReadLimits& limits, const char* offsetName = "byte ")
        : m_tree(tree), m_limits(limits), m_offsetName(offsetName) {}

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
    bool key(std::string& s) { return push(intern(s)); }
    bool start_object(std::size_t) { return open(); }
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
        return true;
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

DataTree::Value readJsonTree(std::streambuf& text, DataTree& tree, const ReadLimits& limits) {
    TreeSax sax(tree, limits, "decompressed byte ");
    std::istream in(&text);
    nlohmann::json::sax_parse(in, &sax);
    return sax.result();
}

} // namespace headroom
