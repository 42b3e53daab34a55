#pragma once

namespace headroom {

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
    {"Qt Charts 6", "GPL-3.0", "the planner's charts"},
    {"nlohmann/json", "MIT", "scenario, estimate and trace JSON"},
    {"zlib", "Zlib", "gzip-compressed traces"},
};

} // namespace headroom
