#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Trace-reading benchmark (run by scripts/bench): headroom-cli trace-summary against CPython's
pickle.load on the same snapshot, both measured in this run. One JSON object per line.

The snapshots are written by CPython's own pickle.dump (bench/gen_snapshot.py) and shaped like the real
ones in tests/data/traces/snapshots: a new frames list per entry, so CPython puts other objects between the
1,000-item APPENDS batches of the trace list (what made reading quadratic before).
Set HEADROOM_BENCH_10M=0 to skip the 10M-entry file (about a minute and 10 GB to write once)."""
import json, os, subprocess, sys, time

build = sys.argv[1]
data = os.path.join(build, "bench-data")
os.makedirs(data, exist_ok=True)
here = os.path.dirname(os.path.abspath(__file__))
cli = os.path.join(build, "app", "headroom-cli")
GENERATOR_VERSION = 2  # bump when gen_snapshot.py changes what it writes


def snapshot(entries):
    path = os.path.join(data, "snapshot-v%d-%d.pickle" % (GENERATOR_VERSION, entries))
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(here, "gen_snapshot.py"), str(entries), path], check=True,
                       stderr=subprocess.DEVNULL)
    return path


def run(argv):
    """Wall time and peak RSS (bytes) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        raise SystemExit("failed: %s" % " ".join(argv))
    return elapsed, usage.ru_maxrss * 1024


def pickle_load_seconds(path):
    """pickle.load alone, timed inside the child (no interpreter start-up)."""
    timer = ("import pickle, sys, time\nf = open(sys.argv[1], 'rb')\nt = time.perf_counter()\n"
             "pickle.load(f)\nprint(time.perf_counter() - t)\n")
    return float(subprocess.run([sys.executable, "-c", timer, path], check=True, capture_output=True,
                                text=True).stdout)


def emit(metric, value, unit, detail):
    print(json.dumps({"metric": metric, "value": round(value, 3), "unit": unit, "detail": detail}), flush=True)


path = snapshot(1_000_000)
size = os.path.getsize(path)
ours = min(run([cli, "trace-summary", "--json", path]) for _ in range(3))
ref = min(pickle_load_seconds(path) for _ in range(3))
_, ref_rss = run([sys.executable, "-c", "import pickle, sys\npickle.load(open(sys.argv[1], 'rb'))\n", path])
emit("trace_summary_speedup_vs_pickle", ref / ours[0], "x",
     "CPython %s pickle.load %.3f s vs headroom-cli trace-summary %.3f s (whole process), 1M entries, %.1f MB "
     "written by pickle.dump; target >= 8" % (sys.version.split()[0], ref, ours[0], size / 1e6))
emit("trace_summary_mb_per_s", size / 1e6 / ours[0], "MB/s", "trace-summary throughput on the same file")
emit("trace_rss_over_file", ours[1] / size, "x",
     "peak RSS %.1f MB for a %.1f MB file (pickle.load: %.1f MB, %.2fx); target < 2"
     % (ours[1] / 1e6, size / 1e6, ref_rss / 1e6, ref_rss / size))
timeline = os.path.join(build, "bench", "timeline_bench")


def timeline_bench(path, label):
    """The trace viewer's figures (bench/timeline_bench.cpp), printed as they come."""
    if os.path.exists(timeline):
        subprocess.run([timeline, path, label, "--open"], check=True, stderr=subprocess.DEVNULL)


timeline_bench(path, "1m")
allocator = os.path.join(build, "bench", "allocator_bench")
if os.path.exists(allocator):  # the allocator what-if replay (issue target: 1M entries in under 1 s)
    subprocess.run([allocator, path, "1m"], check=True)
if os.environ.get("HEADROOM_BENCH_10M", "1") != "0":
    big = snapshot(10_000_000)
    timeline_bench(big, "10m")
    t, rss = min(run([cli, "trace-summary", "--json", big]) for _ in range(2))
    emit("trace_summary_10m_s", t, "s", "10M entries, %.0f MB file, peak RSS %.2f GB (%.2fx the file); target < 3 s"
         % (os.path.getsize(big) / 1e6, rss / 1e9, rss / os.path.getsize(big)))
    emit("trace_summary_10m_over_1m", t / ours[0], "x", "10M-entry time / 1M-entry time; linear is 10, target <= 11")
