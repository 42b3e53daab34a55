#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Runs one Qt Test executable for CTest: qtest.sh EXE LOG [ARGS...].
# Qt Test passes a test function that checked nothing, so this runs it with -v2 (every QVERIFY/QCOMPARE is
# logged), counts the checks of each function (and of each data row), and fails the run when a function
# passed without one; initTestCase/cleanupTestCase/init/cleanup are exempt. The per-check lines are counted,
# not kept: LOG (read by scripts/test for its totals, skips and known misses) and the console get the rest.
set -uo pipefail
exe=$1 log=$2
shift 2
"$exe" -v2 -o -,txt "$@" 2>&1 | awk -v logfile="$log" '
  function key(s) { sub(/^[A-Z]+ *: /, "", s); i = index(s, ") "); return i ? substr(s, 1, i) : s }
  /^INFO   : .* entering$/ { next }
  /^INFO   : / && /\) Q(VERIFY|COMPARE|TRY_VERIFY|TRY_COMPARE)[A-Z0-9_]*\(/ {
    s = substr($0, 10); sub(/\) Q(VERIFY|COMPARE|TRY).*/, ")", s); checks[s]++; skipLoc = 1; next }
  /^   Loc: / && skipLoc { skipLoc = 0; next }
  { skipLoc = 0 }
  /^XFAIL / { checks[key($0)]++ }
  /^PASS / {
    s = key($0)
    if (!(s in checks) && s !~ /::(initTestCase|cleanupTestCase|init|cleanup)\(\)$/) {
      line = "NOCHECK: " s " passed without a single QVERIFY or QCOMPARE"
      print line; print line > logfile; bad = 1
    }
  }
  { print; print > logfile }
  END { exit bad }'
codes=("${PIPESTATUS[@]}")
((codes[0] == 0)) || exit "${codes[0]}"
exit "${codes[1]}"
