// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <ostream>
#include <string>
#include <vector>

namespace headroom {

// headroom-cli, callable from tests: returns the process exit code (0 ok, 1 bad input, 2 usage) and
// writes to the given streams. `args` excludes the program name.
int runCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace headroom
