// Writes a synthetic PyTorch memory snapshot (pickle protocol 4, the current _dump_snapshot layout) for
// benchmarks: N trace entries on one device with alloc / free_requested / free_completed triples,
// segment_alloc events, a pool of call stacks shared through the memo as PyTorch's own files share them,
// and final segments/blocks consistent with the trace.
//   gen_snapshot ENTRIES OUT.pickle [SEED]
#include "tests/picklewriter.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using headroom::test::PickleWriter;

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: gen_snapshot ENTRIES OUT.pickle [SEED]\n");
        return 2;
    }
    const long long entries = std::atoll(argv[1]);
    std::mt19937_64 rng(argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1);
    PickleWriter w(4);
    // Keys and repeated strings are memoized once, as CPython's pickler does.
    auto key = [&](const char* s) {
        w.str(s);
        const auto id = w.memoize();
        w.raw("0"); // kept in the memo only
        return id;
    };
    w.raw("}"); // the root dict, filled with SETITEM at the end
    w.memoize();
    const auto kAction = key("action"), kAddr = key("addr"), kSize = key("size"), kStream = key("stream"),
               kTime = key("time_us"), kCompile = key("compile_context"), kMeta = key("user_metadata"),
               kFrames = key("frames"), kName = key("name"), kFile = key("filename"), kLine = key("line");
    const auto aAlloc = key("alloc"), aFreeReq = key("free_requested"), aFreeDone = key("free_completed"),
               aSegAlloc = key("segment_alloc"), na = key("N/A"), empty = key("");
    // A pool of 400 stacks of 12 frames over 900 distinct functions in 60 files.
    std::vector<std::uint32_t> files, names, stacks;
    for (int f = 0; f < 60; ++f) {
        w.str("/home/user/project/src/module_" + std::to_string(f) + ".py");
        files.push_back(w.memoize());
        w.raw("0");
    }
    for (int n = 0; n < 900; ++n) {
        w.str("function_" + std::to_string(n));
        names.push_back(w.memoize());
        w.raw("0");
    }
    for (int s = 0; s < 400; ++s) {
        stacks.push_back(w.beginList());
        for (int f = 0; f < 12; ++f) {
            w.beginDict();
            w.get(kName), w.get(names[rng() % names.size()]);
            w.get(kFile), w.get(files[rng() % files.size()]);
            w.get(kLine), w.integer(static_cast<long long>(rng() % 2000));
            w.endDict();
        }
        w.endList();
        w.raw("0");
    }

    struct Live {
        std::uint64_t addr;
        long long size;
        std::uint32_t stack;
    };
    std::vector<Live> live;
    std::vector<std::pair<std::uint64_t, long long>> segments; // address, size
    const long long segmentSize = 20 << 20;
    std::uint64_t cursor = 0, segEnd = 0, nextSegment = 0x7f0000000000ULL;
    long long time = 1700000000000000LL;
    auto entry = [&](std::uint32_t action, std::uint64_t addr, long long size, std::uint32_t stack) {
        w.beginDict();
        w.get(kAction), w.get(action);
        w.get(kAddr), w.integer(static_cast<long long>(addr));
        w.get(kSize), w.integer(size);
        w.get(kStream), w.integer(0);
        w.get(kTime), w.integer(time += 1 + static_cast<long long>(rng() % 50));
        w.get(kCompile), w.get(na);
        w.get(kMeta), w.get(empty);
        w.get(kFrames), w.get(stack);
        w.endDict();
    };

    w.str("device_traces");
    w.beginList();
    w.beginList();
    long long written = 0;
    int batch = 0;
    while (written < entries) {
        if (++batch % 500 == 0) { // APPENDS in batches, as CPython's pickler writes lists
            w.raw("e(");
        }
        const bool allocate = live.size() < 64 || (rng() % 100 < 50 && live.size() < 4096);
        if (allocate || live.empty()) {
            const long long size = 512LL << (rng() % 12);
            if (cursor + static_cast<std::uint64_t>(size) > segEnd) {
                cursor = nextSegment;
                segEnd = cursor + segmentSize;
                segments.push_back({cursor, segmentSize});
                nextSegment += segmentSize * 2;
                entry(aSegAlloc, cursor, segmentSize, stacks[rng() % stacks.size()]);
                ++written;
            }
            const std::uint32_t stack = stacks[rng() % stacks.size()];
            entry(aAlloc, cursor, size, stack);
            live.push_back({cursor, size, stack});
            cursor += static_cast<std::uint64_t>(size);
            ++written;
        } else {
            const std::size_t i = live.size() - 1 - (rng() % std::min<std::size_t>(live.size(), 8));
            const Live l = live[i];
            live.erase(live.begin() + static_cast<long>(i));
            entry(aFreeReq, l.addr, l.size, l.stack);
            entry(aFreeDone, l.addr, l.size, l.stack);
            written += 2;
        }
    }
    w.endList();
    w.endList();
    w.raw("s"); // root["device_traces"] = [...]

    w.str("segments");
    w.beginList();
    for (const auto& [addr, size] : segments) {
        w.beginDict();
        w.str("device"), w.integer(0), w.str("address"), w.integer(static_cast<long long>(addr));
        w.str("total_size"), w.integer(size), w.str("stream"), w.integer(0), w.str("segment_type"),
            w.str("large");
        w.str("blocks");
        w.beginList();
        std::uint64_t at = addr;
        for (const Live& l : live)
            if (l.addr >= addr && l.addr < addr + static_cast<std::uint64_t>(size)) {
                if (l.addr > at) {
                    w.beginDict();
                    w.str("address"), w.integer(static_cast<long long>(at)), w.str("size"),
                        w.integer(static_cast<long long>(l.addr - at));
                    w.str("requested_size"), w.integer(static_cast<long long>(l.addr - at)), w.str("state"),
                        w.str("inactive");
                    w.endDict();
                }
                w.beginDict();
                w.str("address"), w.integer(static_cast<long long>(l.addr)), w.str("size"), w.integer(l.size);
                w.str("requested_size"), w.integer(l.size), w.str("state"), w.str("active_allocated");
                w.str("frames"), w.get(l.stack);
                w.endDict();
                at = l.addr + static_cast<std::uint64_t>(l.size);
            }
        w.endList();
        w.endDict();
    }
    w.endList();
    w.raw("s"); // root["segments"] = [...]
    w.str("allocator_settings");
    w.beginDict();
    w.endDict();
    w.raw("s");
    w.str("external_annotations");
    w.beginList();
    w.endList();
    w.raw("s");
    const std::string bytes = w.finish();
    std::ofstream out(argv[2], std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
        std::fprintf(stderr, "error: cannot write %s\n", argv[2]);
        return 1;
    }
    std::fprintf(stderr, "wrote %s: %lld entries, %zu bytes\n", argv[2], written, bytes.size());
    return 0;
}
