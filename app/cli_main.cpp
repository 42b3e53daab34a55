// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/clicommands.h"

#include <iostream>

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    return headroom::runCli(args, std::cout, std::cerr);
}
