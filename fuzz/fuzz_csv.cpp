// SPDX-License-Identifier: GPL-3.0-or-later
// nvidia-smi CSV logs.
#include "core/error.h"
#include "core/trace/trace.h"
#include "core/trace/tracesummary.h"

#include <string_view>

namespace headroom {
Trace readNvidiaSmiCsv(std::string_view text);
}

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    try {
        (void)headroom::summarize(
            headroom::readNvidiaSmiCsv(std::string_view(reinterpret_cast<const char*>(data), size)));
    } catch (const headroom::Error&) {
    }
    return 0;
}
