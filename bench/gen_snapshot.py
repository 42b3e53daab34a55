#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Writes a synthetic PyTorch memory snapshot for benchmarks with CPython's own pickle.dump (protocol 4,
as torch.cuda.memory._dump_snapshot does), shaped like the real snapshots in tests/data/traces/snapshots.

    gen_snapshot.py ENTRIES OUT.pickle [SEED]

What was measured on the real files (DeComFL, cs336 x6) and is reproduced here, because it decides how a
reader performs:
- every trace entry is a dict of action, addr, size, stream, time_us, compile_context, user_metadata and
  frames (the newest key set; DeComFL lacks user_metadata);
- frames: 8 to 59 per entry by median across the files (mean 11 to 63); only 55 to 205 distinct stacks,
  built from 83 to 677 distinct frame dicts that the pickle shares through its memo;
- every alloc and every free_requested carries a new frames list object (15,495 lists for 23,105 DeComFL
  entries); free_completed shares the list of its free_requested, and the alloc that follows a
  segment_alloc shares the segment_alloc's list. So CPython writes a fresh list between the 1,000-item
  APPENDS batches of the trace list;
- compile_context is a new 'N/A' string per entry (written out each time), addresses and timestamps
  are LONG1 integers; 90 to 310 bytes per entry.
The allocation pattern (sizes, lifetimes, 20 MiB segments) and the final segments and blocks are consistent
with the trace, so a reader's replay ends where the snapshot's segments say.
"""
import pickle
import random
import sys


def main():
    if len(sys.argv) < 3:
        sys.stderr.write("usage: gen_snapshot.py ENTRIES OUT.pickle [SEED]\n")
        return 2
    entries = int(sys.argv[1])
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)

    files = ["/home/user/.venv/lib/python3.11/site-packages/torch/nn/modules/module_%d.py" % f for f in range(40)]
    files += ["/home/user/project/train_%d.py" % f for f in range(8)]
    # 600 distinct frame dicts, shared by reference as in real snapshots.
    frame_pool = [{"name": "function_%d" % n, "filename": rng.choice(files), "line": rng.randrange(1, 4000)}
                  for n in range(600)]
    # 200 distinct stacks, 4 to 40 frames (mean about 16).
    stacks = [[rng.choice(frame_pool) for _ in range(rng.randrange(4, 29) + rng.randrange(0, 13))]
              for _ in range(200)]

    def entry(action, addr, size, frames, time):
        return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": time,
                "compile_context": "".join(("N/", "A")), "user_metadata": "", "frames": frames}

    trace, live, segments = [], [], []
    segment_size = 20 << 20
    cursor = seg_end = 0
    next_segment = 0x7F0000000000
    time = 1_700_000_000_000_000
    while len(trace) < entries:
        time += 1 + rng.randrange(50)
        if len(live) < 64 or (rng.random() < 0.5 and len(live) < 4096):
            size = 512 << rng.randrange(12)
            stack = rng.randrange(len(stacks))
            frames = list(stacks[stack])
            if cursor + size > seg_end:
                cursor = next_segment
                seg_end = cursor + segment_size
                segments.append((cursor, segment_size))
                next_segment += 2 * segment_size
                trace.append(entry("segment_alloc", cursor, segment_size, frames, time))
            trace.append(entry("alloc", cursor, size, frames, time))
            live.append((cursor, size, stack))
            cursor += size
        else:
            addr, size, stack = live.pop(len(live) - 1 - rng.randrange(min(len(live), 8)))
            frames = list(stacks[stack])
            trace.append(entry("free_requested", addr, size, frames, time))
            trace.append(entry("free_completed", addr, size, frames, time + 1))

    live.sort()
    segment_dicts = []
    for addr, size in segments:
        blocks, at = [], addr
        for laddr, lsize, stack in live:
            if addr <= laddr < addr + size:
                if laddr > at:
                    blocks.append({"address": at, "size": laddr - at, "requested_size": laddr - at,
                                   "state": "inactive", "frames": []})
                blocks.append({"address": laddr, "size": lsize, "requested_size": lsize,
                               "state": "active_allocated", "frames": list(stacks[stack])})
                at = laddr + lsize
        if at < addr + size:
            blocks.append({"address": at, "size": addr + size - at, "requested_size": addr + size - at,
                           "state": "inactive", "frames": []})
        allocated = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
        segment_dicts.append({"device": 0, "address": addr, "total_size": size, "allocated_size": allocated,
                              "active_size": allocated, "requested_size": allocated, "stream": 0,
                              "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
                              "frames": [], "blocks": blocks})
    snapshot = {"segments": segment_dicts, "device_traces": [trace],
                "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": None, "max_split_size": -1,
                                       "garbage_collection_threshold": 0.0, "expandable_segments": False,
                                       "pinned_num_register_threads": 1, "release_lock_on_malloc": False,
                                       "pinned_use_host_register": False, "roundup_power2_divisions": {}},
                "external_annotations": []}
    with open(sys.argv[2] + ".tmp", "wb") as f:
        pickle.dump(snapshot, f, protocol=4)
    import os
    os.replace(sys.argv[2] + ".tmp", sys.argv[2])
    sys.stderr.write("wrote %s: %d entries\n" % (sys.argv[2], len(trace)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
