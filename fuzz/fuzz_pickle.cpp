// SPDX-License-Identifier: GPL-3.0-or-later
// The plain-data pickle reader on arbitrary bytes: it must return a tree or throw headroom::Error.
#include "core/error.h"
#include "core/trace/formats/picklereader.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    headroom::DataTree tree(size);
    try {
        const auto root = headroom::readPickle(bytes, tree);
        // Walk the top level the way the loaders do; shared and cyclic containers must stay safe.
        for (std::size_t i = 0; i < tree.size(root) && i < 64; ++i) {
            (void)tree.at(root, i);
            (void)tree.keyAt(root, i);
        }
    } catch (const headroom::Error&) {
    }
    return 0;
}
