// SPDX-License-Identifier: GPL-3.0-or-later
// fleet_bench DIR: how soon the first rank of a fleet is known and how long the whole job takes to read
// (the window's Fleet tab fills its table as ranks arrive). Run by bench/trace_bench.py on a generated
// fleet; one JSON line per figure.
#include "core/io/fleetjson.h"

#include <chrono>
#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: fleet_bench DIR\n");
        return 2;
    }
    try {
        using Clock = std::chrono::steady_clock;
        const auto start = Clock::now();
        double first = -1;
        headroom::FleetOptions options;
        options.onRank = [&](const headroom::FleetRank&, std::size_t, std::size_t) {
            if (first < 0)
                first = std::chrono::duration<double>(Clock::now() - start).count();
        };
        const auto files = headroom::fleetFiles({argv[1]});
        const headroom::Fleet fleet = headroom::readFleetFiles(files, options);
        const double total = std::chrono::duration<double>(Clock::now() - start).count();
        std::printf(
            "{\"metric\": \"fleet_first_row_s\", \"value\": %.3f, \"unit\": \"s\", \"detail\": \"the first "
            "of %zu ranks known after %.3f s of %.3f s (the last file read at the end); target: before the "
            "last file\"}\n",
            first, fleet.ranks.size(), first, total);
        return fleet.job.readErrors ? 1 : 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
