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


def run(argv, expect_failure=False):
    """Wall time and peak RSS (bytes) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL if expect_failure else None)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if (status != 0) != expect_failure:
        raise SystemExit("%s: %s" % ("succeeded" if expect_failure else "failed", " ".join(argv)))
    return elapsed, usage.ru_maxrss * 1024


HOSTILE = r"""
import gzip, os, sys
def member(data):
    return gzip.compress(data, 6, mtime=0)
def repeat(line):
    return (line * ((16 << 20) // len(line) + 1))[:16 << 20]
text = member(repeat(b"lorem ipsum dolor sit amet\n")) * 256
cases = {"text": text, "nested": gzip.compress(text, 1, mtime=0),
         "csv": member(b"2024/01/15 10:20:30.123, 0, 1024 MiB, 81920 MiB\n") + member(repeat(b"not, a, log\n")) * 256,
         "json": member(b'{"a": [') + member(repeat(b"1,")) * 256}
for name, data in cases.items():
    path = os.path.join(sys.argv[1], "hostile-%s.gz" % name)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)
"""


def hostile_gzips():
    """Gzip files whose content is not a trace, each inflating to 4 GiB (256 members of 16 MiB): text,
    the same nested in a second gzip, comma-separated text, and JSON of another kind. Written by a child
    process, so that this one stays small: a child's peak RSS counts its parent's at the fork."""
    names = ["text", "nested", "csv", "json"]
    paths = {n: os.path.join(data, "hostile-%s.gz" % n) for n in names}
    if not all(os.path.exists(p) for p in paths.values()):
        subprocess.run([sys.executable, "-c", HOSTILE, data], check=True)
    return paths


def pickle_load_seconds(path):
    """pickle.load alone, timed inside the child (no interpreter start-up)."""
    timer = ("import pickle, sys, time\nf = open(sys.argv[1], 'rb')\nt = time.perf_counter()\n"
             "pickle.load(f)\nprint(time.perf_counter() - t)\n")
    return float(subprocess.run([sys.executable, "-c", timer, path], check=True, capture_output=True,
                                text=True).stdout)


def emit(metric, value, unit, detail):
    print(json.dumps({"metric": metric, "value": round(value, 3), "unit": unit, "detail": detail}), flush=True)


# Hostile input first (small files): gzip of something that is no trace fails at once, in bounded memory.
worst = (0.0, 0, "")
for name, hostile in hostile_gzips().items():
    t, rss = min(run([cli, "trace-summary", hostile], expect_failure=True) for _ in range(3))
    if t > worst[0]:
        worst = (t, max(rss, worst[1]), name)
    else:
        worst = (worst[0], max(rss, worst[1]), worst[2])
emit("hostile_gzip_fail_s", worst[0], "s",
     "slowest failure of trace-summary on gzip files of text, nested gzip, CSV-like text and other JSON, each "
     "4 GiB inflated (%s slowest); target < 0.2 s" % worst[2])
emit("hostile_gzip_rss_mb", worst[1] / 1e6, "MB", "largest peak RSS of those runs (whole process); target < 64 MB")

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


def fleet_figures():
    """A job's rank files (issue: the fleet): 64 ranks of about 40 MB each, derived by bench/gen_fleet from a
    snapshot written like the real ones, read by `headroom-cli fleet` (one reader per core) against
    `trace-summary` of one of them, both measured here; and the peak RSS of 16 ranks against 64."""
    gen = os.path.join(build, "bench", "gen_fleet")
    if not os.path.exists(gen):
        return
    fleet = os.path.join(data, "fleet-v%d-64" % GENERATOR_VERSION)
    if not os.path.exists(os.path.join(fleet, "rank_63.pickle")):
        base = snapshot(200_000)  # a rank of about 40 MB, as a mid-sized job records a few steps
        subprocess.run([gen, base, fleet + ".tmp", "64", "4"], check=True, stdout=subprocess.DEVNULL)
        os.replace(fleet + ".tmp", fleet)
    files = sorted(os.path.join(fleet, f) for f in os.listdir(fleet))
    total = sum(os.path.getsize(f) for f in files)
    one = min(run([cli, "trace-summary", "--json", files[0]]) for _ in range(3))
    single = os.path.getsize(files[0]) / 1e6 / one[0]
    many = min(run([cli, "fleet", "--json", fleet]) for _ in range(2))
    rate = total / 1e6 / many[0]
    cores = os.cpu_count()
    emit("fleet_mb_per_s", rate, "MB/s",
         "headroom-cli fleet over 64 generated ranks, %.0f MB in all, %.2f s on %d cores: %.2fx the single-file "
         "trace-summary throughput measured here (%.0f MB/s; both whole processes); target >= 1.6x on 2 cores"
         % (total / 1e6, many[0], cores, rate / single, single))
    sixteen = os.path.join(data, "fleet-v%d-16" % GENERATOR_VERSION)
    if not os.path.isdir(sixteen):
        os.makedirs(sixteen + ".tmp", exist_ok=True)
        for f in files[:16]:
            os.symlink(os.path.abspath(f), os.path.join(sixteen + ".tmp", os.path.basename(f)))
        os.replace(sixteen + ".tmp", sixteen)
    rss16 = min(run([cli, "fleet", "--json", sixteen])[1] for _ in range(2))
    emit("fleet_rss_growth", many[1] / rss16 - 1, "x",
         "peak RSS reading 64 ranks %.0f MB against 16 ranks %.0f MB (one file per reader at a time, summaries "
         "kept); target < 0.10" % (many[1] / 1e6, rss16 / 1e6))
    first = os.path.join(build, "bench", "fleet_bench")
    if os.path.exists(first):
        subprocess.run([first, fleet], check=True)


fleet_figures()
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
