// SPDX-License-Identifier: GPL-3.0-or-later
// JSON text into the tree, then every JSON-shaped format's loader.
#include "core/error.h"
#include "core/trace/formats/tracereader.h"
#include "core/trace/tracesummary.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    std::string text(reinterpret_cast<const char*>(data), size);
    if (text.empty() || (text[0] != '{' && text[0] != '['))
        text.insert(0, 1, '[');
    try {
        (void)headroom::summarize(headroom::readTrace(text));
    } catch (const headroom::Error&) {
    }
    return 0;
}
