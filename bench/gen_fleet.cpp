// SPDX-License-Identifier: GPL-3.0-or-later
// gen_fleet BASE_SNAPSHOT DIR [RANKS] [STAGES]: a test fleet (bench/fleetgen.h) of RANKS (32) ranks in
// STAGES (4) pipeline stages derived from a real snapshot, rank 13 (or the middle rank) planted 3 GiB high.
#include "bench/fleetgen.h"
#include "core/error.h"
#include "core/trace/formats/tracereader.h"

#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: gen_fleet BASE_SNAPSHOT DIR [RANKS] [STAGES]\n");
        return 2;
    }
    try {
        headroom::bench::FleetPlan plan;
        if (argc > 3)
            plan.ranks = std::stoi(argv[3]);
        if (argc > 4)
            plan.stages = std::stoi(argv[4]);
        if (plan.outlier >= plan.ranks)
            plan.outlier = plan.ranks / 2;
        const headroom::Trace base = headroom::readTraceFile(argv[1]);
        const auto files = headroom::bench::writeFleet(base, base.devices.at(0).key, plan, argv[2]);
        std::printf("%zu ranks in %s, outlier rank %d\n", files.size(), argv[2], plan.outlier);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
