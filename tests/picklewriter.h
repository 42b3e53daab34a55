// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A minimal pickle writer (protocol 2-5 opcodes) for building test inputs and synthetic benchmark
// snapshots in C++. Header-only; shared by tests/ and bench/.
#include <cstdint>
#include <string>
#include <string_view>

namespace headroom::test {

class PickleWriter {
public:
    explicit PickleWriter(int protocol = 4) {
        m_out += '\x80';
        m_out += static_cast<char>(protocol);
    }
    void none() { m_out += 'N'; }
    void boolean(bool b) { m_out += b ? '\x88' : '\x89'; }
    void integer(long long n) {
        if (n >= 0 && n < 256) {
            m_out += 'K';
            m_out += static_cast<char>(n);
        } else if (n >= 0 && n < 65536) {
            m_out += 'M';
            le(static_cast<std::uint64_t>(n), 2);
        } else if (n >= INT32_MIN && n <= INT32_MAX) {
            m_out += 'J';
            le(static_cast<std::uint64_t>(n), 4);
        } else {
            m_out += '\x8a';
            m_out += '\x08';
            le(static_cast<std::uint64_t>(n), 8);
        }
    }
    void str(std::string_view s) {
        if (s.size() < 256) {
            m_out += '\x8c';
            m_out += static_cast<char>(s.size());
        } else {
            m_out += 'X';
            le(s.size(), 4);
        }
        m_out += s;
    }
    // Memoizes the value on top of the stack; returns its memo index.
    std::uint32_t memoize() {
        m_out += '\x94';
        return m_memo++;
    }
    void get(std::uint32_t index) {
        if (index < 256) {
            m_out += 'h';
            m_out += static_cast<char>(index);
        } else {
            m_out += 'j';
            le(index, 4);
        }
    }
    // Containers: begin pushes the empty container (memoized) and a mark; end adds what came after.
    std::uint32_t beginList() {
        m_out += ']';
        const auto id = memoize();
        m_out += '(';
        return id;
    }
    void endList() { m_out += 'e'; }
    std::uint32_t beginDict() {
        m_out += '}';
        const auto id = memoize();
        m_out += '(';
        return id;
    }
    void endDict() { m_out += 'u'; }
    void raw(std::string_view bytes) { m_out += bytes; }
    std::string finish() {
        m_out += '.';
        return m_out;
    }
    std::size_t size() const { return m_out.size(); }

private:
    void le(std::uint64_t v, int n) {
        for (int i = 0; i < n; ++i)
            m_out += static_cast<char>((v >> (8 * i)) & 0xff);
    }
    std::string m_out;
    std::uint32_t m_memo = 0;
};

} // namespace headroom::test
