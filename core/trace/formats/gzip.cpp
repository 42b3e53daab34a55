// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/trace/formats/gzip.h"

#include "core/error.h"

#include <algorithm>
#include <cstring>
#include <zlib.h>

namespace headroom {

bool isGzip(std::string_view d) {
    return d.size() >= 2 && static_cast<unsigned char>(d[0]) == 0x1f &&
           static_cast<unsigned char>(d[1]) == 0x8b;
}

struct GzipReader::State {
    z_stream z{};
};

GzipReader::GzipReader(std::string_view data, std::size_t maxOutput)
    : m_z(std::make_unique<State>()), m_data(data), m_maxOutput(maxOutput) {
    if (inflateInit2(&m_z->z, 16 + MAX_WBITS) != Z_OK)
        throw Error("", "cannot start gzip decompression");
}

GzipReader::GzipReader(PickleSource& input, std::size_t maxOutput)
    : m_z(std::make_unique<State>()), m_maxOutput(maxOutput) {
    m_input = &input;
    m_inBuffer.resize(1 << 16);
    if (inflateInit2(&m_z->z, 16 + MAX_WBITS) != Z_OK)
        throw Error("", "cannot start gzip decompression");
}

bool GzipReader::refill() {
    if (!m_input)
        return false;
    // What is left of the chunk (a member's first byte, say) moves to the front; the rest is read after it.
    const std::size_t keep = m_data.size() - m_consumed;
    if (keep > 0)
        std::memmove(m_inBuffer.data(), m_data.data() + m_consumed, keep);
    m_inBase += m_consumed;
    const std::size_t got = m_input->read(m_inBuffer.data() + keep, m_inBuffer.size() - keep);
    m_data = std::string_view(m_inBuffer.data(), keep + got);
    m_consumed = 0;
    return got > 0;
}

GzipReader::~GzipReader() {
    inflateEnd(&m_z->z);
}

std::size_t GzipReader::inflateInto(char* out, std::size_t max) {
    std::size_t written = 0;
    z_stream& z = m_z->z;
    // Offsets name the input's bytes: the file's, or the enclosing stream's decoded bytes when nested.
    auto at = [&] {
        return (m_input ? m_input->offsetName() : "byte ") + std::to_string(m_inBase + m_consumed);
    };
    while (written < max && !m_done) {
        if (m_consumed == m_data.size() && m_input && !refill()) {
            if (z.total_in == 0 && m_inBase == 0)
                throw Error(at(), "the gzip data is empty");
            throw Error(at(), "gzip data is truncated");
        }
        const std::size_t inChunk = std::min<std::size_t>(m_data.size() - m_consumed, 1u << 30);
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(m_data.data() + m_consumed));
        z.avail_in = static_cast<uInt>(inChunk);
        const std::size_t outChunk = std::min<std::size_t>(max - written, 1u << 30);
        z.next_out = reinterpret_cast<Bytef*>(out + written);
        z.avail_out = static_cast<uInt>(outChunk);
        const int rc = inflate(&z, Z_NO_FLUSH);
        m_consumed += inChunk - z.avail_in;
        const std::size_t got = outChunk - z.avail_out;
        written += got;
        m_produced += got;
        if (m_produced > m_maxOutput)
            throw Error(at(), "decompresses to more than " + std::to_string(m_maxOutput) + " bytes");
        if (rc == Z_STREAM_END) {
            // Concatenated members (gzip allows them): continue with the next one.
            if (m_data.size() - m_consumed < 2)
                refill();
            if (m_consumed + 1 < m_data.size() && isGzip(m_data.substr(m_consumed)))
                inflateReset(&z);
            else
                m_done = true;
            continue;
        }
        if (rc == Z_BUF_ERROR && z.avail_in == 0 && m_consumed >= m_data.size() && !m_input)
            throw Error(at(), "gzip data is truncated");
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            throw Error(at(), std::string("corrupt gzip data: ") + (z.msg ? z.msg : "error"));
    }
    return written;
}

std::string_view GzipReader::peek(std::size_t n) {
    if (m_peeked.size() < n) {
        const std::size_t had = m_peeked.size();
        m_peeked.resize(n);
        m_peeked.resize(had + inflateInto(m_peeked.data() + had, n - had));
    }
    return std::string_view(m_peeked).substr(0, n);
}

std::size_t GzipReader::read(char* out, std::size_t max) {
    std::size_t written = 0;
    if (m_peekPos < m_peeked.size()) {
        written = std::min(max, m_peeked.size() - m_peekPos);
        std::memcpy(out, m_peeked.data() + m_peekPos, written);
        m_peekPos += written;
        if (m_peekPos == m_peeked.size())
            std::string().swap(m_peeked), m_peekPos = 0;
    }
    return written + inflateInto(out + written, max - written);
}

std::string gunzip(std::string_view data, std::size_t maxOutput) {
    GzipReader reader(data, maxOutput);
    std::string out;
    std::size_t size = 0;
    out.resize(std::min<std::size_t>(std::max<std::size_t>(data.size() * 4, 1 << 16), maxOutput + 1));
    while (true) {
        if (size == out.size())
            out.resize(std::min(out.size() * 2, maxOutput + 1));
        const std::size_t got = reader.read(out.data() + size, out.size() - size);
        if (got == 0)
            break;
        size += got;
    }
    out.resize(size);
    return out;
}

} // namespace headroom
