#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The house's rooms and the arrows between them (README's layout section, DESIGN.md). Each room may include
# only the rooms listed for it; a new room that is not declared here fails the check, and so does any
# include that reaches up or sideways. No Qt header anywhere in core/. Prints each offending include.
set -euo pipefail
set -f # the room lists hold patterns (core/*), not file names
root=${1:-$(dirname "$0")/../..}
cd "$root"
# Room: the rooms it may include (besides itself and core's ground: core/*.h).
declare -A allowed=(
  [core/model]=""
  [core/plan]="core/model core/allocator:model"
  [core/serve]="core/model core/plan core/allocator:model"
  [core/trace/formats]="core/trace:event-store"
  [core/trace]="core/trace/formats"
  [core/compare]="core/model core/plan core/serve core/trace core/trace/formats"
  [core/allocator]="core/trace core/trace/formats"
  [core/io]="core/model core/plan core/serve core/trace core/trace/formats core/compare core/allocator"
  [ui/common]="core/*"
  [ui/planner]="core/* ui/common"
  [ui/traceview]="core/* ui/common"
  [ui/compare]="core/* ui/common ui/planner ui/traceview"
  [ui]="core/* ui/common ui/planner ui/traceview ui/compare"
)
# The event store (core/trace/trace.h) is what the readers fill: the one file of trace/ that formats/ uses.
# The caching allocator's model (core/allocator/cachingallocator.h, standard library only) is the one file of
# allocator/ that plan/ and serve/ use: the estimate replays FSDP1's wrap (core/plan/fsdp1pools), Unsloth's
# checkpointed layers (core/plan/unslothreplay) and a serving engine's load (core/serve/loadreserve) through it.
room_of() { # the room of a file (or an include's path), in $room; no subshell, it runs per include
  room=${1%/*}
}
bad=0
# Every folder that holds code must be a declared room.
while read -r dir; do
  dir=${dir#./}
  [[ $dir == core || -n ${allowed[$dir]+x} ]] || { echo "$dir/: a room no one declared (tests/checks/layers.sh)"; bad=1; }
done < <(find core ui \( -name '*.cpp' -o -name '*.h' \) -printf '%h\n' | sort -u)
while IFS=: read -r file line target; do
  room_of "$file"
  from=$room
  room_of "$target"
  to=$room
  [[ $to == core || $to == "$from" ]] && continue # the ground, or the room itself
  ok=0
  for a in ${allowed[$from]:-}; do
    case $a in
    core/\*) [[ $to == core* ]] && ok=1 ;;
    core/trace:event-store) [[ $target == core/trace/trace.h ]] && ok=1 ;;
    core/allocator:model) [[ $target == core/allocator/cachingallocator.h ]] && ok=1 ;;
    *) [[ $to == "$a" ]] && ok=1 ;;
    esac
  done
  if ((ok == 0)); then
    echo "$file:$line: $from may not include $to: $target"
    bad=1
  fi
done < <(grep -rn '#include "\(core\|ui\)/' core ui | sed -E 's/^([^:]+):([0-9]+):.*#include "([^"]+)".*/\1:\2:\3/')
if grep -rnE '#include <Q[A-Za-z]*>|#include <Qt' core ; then
  echo "core/ must not include Qt headers (above)"
  bad=1
fi
((bad == 0)) && echo "every include runs down the house's arrows"
exit $bad
