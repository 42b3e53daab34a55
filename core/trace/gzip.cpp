#include "core/trace/gzip.h"

#include "core/error.h"

#include <zlib.h>

namespace headroom {

bool isGzip(std::string_view d) {
    return d.size() >= 2 && static_cast<unsigned char>(d[0]) == 0x1f &&
           static_cast<unsigned char>(d[1]) == 0x8b;
}

std::string gunzip(std::string_view data, std::size_t maxOutput) {
    z_stream z{};
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        throw Error("", "cannot start gzip decompression");
    std::string out;
    out.resize(std::min<std::size_t>(std::max<std::size_t>(data.size() * 4, 1 << 16), maxOutput + 1));
    std::size_t produced = 0, consumed = 0;
    int rc = Z_OK;
    while (true) {
        z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + consumed));
        const std::size_t inChunk = std::min<std::size_t>(data.size() - consumed, 1u << 30);
        z.avail_in = static_cast<uInt>(inChunk);
        if (produced == out.size()) {
            if (out.size() > maxOutput) {
                inflateEnd(&z);
                throw Error("", "decompresses to more than " + std::to_string(maxOutput) + " bytes");
            }
            out.resize(std::min(out.size() * 2, maxOutput + 1));
        }
        const std::size_t outChunk = std::min<std::size_t>(out.size() - produced, 1u << 30);
        z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
        z.avail_out = static_cast<uInt>(outChunk);
        rc = inflate(&z, Z_NO_FLUSH);
        consumed += inChunk - z.avail_in;
        produced += outChunk - z.avail_out;
        if (rc == Z_STREAM_END) {
            // Concatenated members (gzip allows them): continue with the next one.
            if (consumed < data.size() && isGzip(data.substr(consumed))) {
                inflateReset(&z);
                continue;
            }
            break;
        }
        if (rc == Z_BUF_ERROR && z.avail_in == 0 && consumed >= data.size()) {
            inflateEnd(&z);
            throw Error("byte " + std::to_string(consumed), "gzip data is truncated");
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            inflateEnd(&z);
            throw Error("byte " + std::to_string(consumed),
                        std::string("corrupt gzip data: ") + (z.msg ? z.msg : "error"));
        }
    }
    inflateEnd(&z);
    out.resize(produced);
    return out;
}

} // namespace headroom
