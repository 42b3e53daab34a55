// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include "core/trace/formats/picklereader.h"

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace headroom {

bool isGzip(std::string_view data);

// Inflates a gzip stream (all members) on demand, so that a reader can fail on the first bad decoded byte
// without the rest ever being decompressed, and memory follows what was decoded. Throws Error naming the
// compressed byte offset on corrupt or truncated input, and refuses to produce more than maxOutput bytes
// (a decompression bomb). `data` must outlive the reader. A pickle reads straight from it.
class GzipReader : public PickleSource {
public:
    GzipReader(std::string_view data, std::size_t maxOutput);
    // A gzip inside another stream (a .gz of a .gz): reads `input` as it needs it, so nesting streams too.
    // Progress (consumed, total) is the outermost file's; offsets in errors are `input`'s decoded bytes.
    GzipReader(PickleSource& input, std::size_t maxOutput);
    ~GzipReader() override;
    GzipReader(const GzipReader&) = delete;
    GzipReader& operator=(const GzipReader&) = delete;

    // Writes up to `max` decoded bytes to `out`; returns how many, 0 only at the end of the data.
    std::size_t read(char* out, std::size_t max) override;
    // The first up to `n` decoded bytes, without consuming them (only before the first read).
    std::string_view peek(std::size_t n);
    std::size_t consumed() const override { return m_input ? m_input->consumed() : m_consumed; }
    std::size_t total() const override { return m_input ? m_input->total() : m_data.size(); }
    std::size_t produced() const { return m_produced; } // decoded bytes handed out or peeked

private:
    std::size_t inflateInto(char* out, std::size_t max);
    bool refill(); // a streamed input: the next chunk into m_data; false at its end

    struct State;
    std::unique_ptr<State> m_z;
    std::string_view m_data;
    PickleSource* m_input = nullptr;
    std::string m_inBuffer;
    std::size_t m_inBase = 0; // input bytes before m_data (a streamed input)
    std::size_t m_maxOutput;
    std::size_t m_consumed = 0, m_produced = 0;
    bool m_done = false;
    std::string m_peeked;
    std::size_t m_peekPos = 0;
};

// Inflates all of it (for small text formats); same errors and limit as GzipReader.
std::string gunzip(std::string_view data, std::size_t maxOutput);

} // namespace headroom
