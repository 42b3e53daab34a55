#pragma once
#include <string>
#include <string_view>

namespace headroom {

bool isGzip(std::string_view data);
// Inflates a gzip stream (all members). Throws Error naming the compressed byte offset on corrupt or
// truncated input, and refuses to produce more than maxOutput bytes (a decompression bomb).
std::string gunzip(std::string_view data, std::size_t maxOutput);

} // namespace headroom
