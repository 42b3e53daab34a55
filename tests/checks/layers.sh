#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The core's layers are one-way (DESIGN.md): the base files (core/*.h) under everything; model <- plan <-
# compare; trace <- allocator; io on top of all. No Qt header anywhere in core/. Fails naming each
# include that reaches up or sideways.
set -euo pipefail
root=${1:-$(dirname "$0")/../..}
cd "$root/core"
declare -A allowed=(
  [model]="model"
  [plan]="model plan"
  [compare]="model plan trace compare"
  [trace]="trace"
  [allocator]="trace allocator"
  [io]="model plan trace compare allocator io"
)
bad=0
for dir in "${!allowed[@]}"; do
  [[ -d $dir ]] || continue
  while IFS=: read -r file line include; do
    target=$(sed -E 's/.*"core\/([^/"]+)\/.*/\1/' <<<"$include")
    [[ $include == *'"core/'*/* ]] || continue # core/error.h, core/fileio.h: the base, usable by all
    if [[ " ${allowed[$dir]} " != *" $target "* ]]; then
      echo "core/$file:$line: $dir/ may not include $target/: $include"
      bad=1
    fi
  done < <(grep -rn '#include "core/' "$dir" | sed -E 's/^([^:]+):([0-9]+):/\1:\2:/')
done
if grep -rnE '#include <Q[A-Za-z]*>|#include <Qt' . ; then
  echo "core/ must not include Qt headers (above)"
  bad=1
fi
((bad == 0)) && echo "core layers are one-way"
exit $bad
