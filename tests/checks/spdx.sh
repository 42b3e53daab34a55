#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Every source file, script and build file of Headroom names its licence in an SPDX line (the real traces
# in tests/data keep their own licences: tests/data/traces/NOTICES.txt).
set -euo pipefail
cd "$1"
missing=$(find core ui app bench fuzz tests scripts packaging resources .ci CMakeLists.txt -path tests/data -prune -o \
  -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.sh' -o -name '*.py' -o -name '*.cmake' -o -name CMakeLists.txt \
  -o -path 'scripts/*' -o -path '.ci/*' -o -name '*.1' \) -print |
  xargs grep -L 'SPDX-License-Identifier: GPL-3.0-or-later' || true)
[[ -z $missing ]] || { echo "no SPDX line in:"; echo "$missing"; exit 1; }
grep -q "GNU GENERAL PUBLIC LICENSE" LICENSE && grep -q "Version 3" LICENSE
echo "spdx: every source file says GPL-3.0-or-later; LICENSE is the GPL version 3"
