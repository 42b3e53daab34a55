// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string_view>

namespace headroom {

// Headroom's own licence (SPDX), its full text (LICENSE) and the third-party notices the binaries carry
// (packaging/copyright, installed as /usr/share/doc/headroom/copyright), embedded at build time.
inline constexpr const char* kLicence = "GPL-3.0-or-later";
std::string_view licenceText();
std::string_view thirdPartyNotices();

// The project version (CMake's project(... VERSION)), for --version, the About dialog and reports.
const char* version();

// What Headroom is built on, with each project's licence, for the About dialog and `--version`.
struct Dependency {
    const char* name;
    const char* licence;
    const char* why;
};
inline constexpr Dependency kDependencies[] = {
    {"Qt 6 (Core, Gui, Widgets, Svg)", "LGPL-3.0", "the window, drawing, PNG/SVG/PDF output"},
    {"Qt Charts 6", "GPL-3.0", "the planner's charts (the reason Headroom is GPL-3.0-or-later)"},
    {"nlohmann/json", "MIT", "scenario, estimate and trace JSON"},
    {"zlib", "Zlib", "gzip-compressed traces"},
};

} // namespace headroom
