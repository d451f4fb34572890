#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Does collbench-rank report what a minimal MPI loop measures?

For each MPI library (Open MPI, MPICH), iteration synchronization (barrier:
an untimed barrier after each timed call, as OSU; none: back to back, as
nccl-tests), operation and size, runs collbench-rank with that --sync and
minimal_mpi_loop (bench/minimal_mpi_loop.cc) with the same --sync under the
same launcher settings, with the same library, float32 buffers, element
counts, warmup and iteration counts, interleaved over several rounds (the
order rotates each round), and compares the reported averages (mean over
ranks of per-rank means, docs/concepts/measurement.md) round by round: each
ratio is the median over rounds of collbench-rank's average divided by the
reference's of the same round, shown with a distribution-free 95% confidence
interval for that median.

The minimal loop runs three ways, which differ only in how a call is timed:
  tsc    each call bracketed by the same time-stamp-counter reads
         collbench-rank uses: the reference `ratio` (and the pass count) is
         taken against. With the clock equal, any difference is what
         collbench-rank's own code (dispatch, buffers, histogram) adds.
  wtime  each call bracketed by MPI_Wtime(), as osu_allreduce does
         (`osu_rat`). MPI_Wtime costs more per interval (timer_bias_bench
         prints both), so at a few hundred nanoseconds it reads higher.
  loop   one MPI_Wtime() around all calls, as nccl-tests does (`loop_rat`):
         no per-call clock cost at all, so it reads lowest at 8 bytes
         (sync none only: its one interval would include the barriers).
The reference is always measured; --clocks adds the others as columns.
On a machine without a time-stamp counter (not x86-64) the wtime loop is the
reference. The per-iteration medians (p50) are compared too: on a busy
machine the average swings with every descheduled iteration, the median much
less. A benchmark, not a test: it prints a table and exits 0 unless a program
fails to run.

Example:
  python3 bench/fidelity.py --bin-dir build/bin --rounds 3
  python3 bench/fidelity.py --libs openmpi --modes barrier --clocks wtime --rounds 3
"""

import argparse
import functools
import json
import math
import os
import platform
import statistics
import subprocess
import sys

# Iterations per size for the calibration pass (warmup is a tenth). The
# measured rounds then run each cell (library, mode, operation, size) for
# about --seconds: with OSU's counts (10^4 for small messages) an 8-byte
# measurement lasts a few milliseconds, and one timer interrupt or
# descheduling moves its average by tens of percent in either program; a
# gather of 64 KiB is ten times faster than an allreduce of the same size, so
# one count per size leaves some cells far shorter than others.
DEFAULT_ITERS = {8: 400000, 1024: 200000, 65536: 10000, 1 << 20: 500, 16 << 20: 30}
SUFFIXES = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
# Cells from this size up are memory-bound: on a shared VM their times swing
# by 10-20% from one 0.3 s measurement to the next (21 rounds at 16 MiB gave
# paired ratios with an interquartile range of 0.82-1.14), so they run for
# --large-seconds, long enough to average over the swings.
LARGE_BYTES = 4 << 20


def parse_bytes(text):
    text = text.strip().upper()
    if text and text[-1] in SUFFIXES:
        return int(text[:-1]) * SUFFIXES[text[-1]]
    return int(text)


def iters_for(size_bytes, override=None):
    if override:
        return override
    if size_bytes in DEFAULT_ITERS:
        return DEFAULT_ITERS[size_bytes]
    # Roughly constant bytes moved per measurement for other sizes.
    return max(30, min(400000, (512 << 20) // max(size_bytes, 1)))


def mpirun_prefix(args, lib="openmpi", ranks=None):
    ranks = ranks or args.ranks
    cmd = ["nice", "-n", str(args.nice)] if args.nice else []
    if lib == "mpich":
        return cmd + [args.mpiexec, "-n", str(ranks), "-bind-to", args.bind_to] + args.mpirun_arg
    cmd += [args.mpirun, "-np", str(ranks), "--bind-to", args.bind_to]
    if ranks > os.cpu_count():
        cmd.append("--oversubscribe")
    return cmd + args.mpirun_arg


LOOP_BINARY = {"openmpi": "minimal_mpi_loop", "mpich": "minimal_mpi_loop_mpich"}
ENGINE_BINARY = {"openmpi": "collbench-rank", "mpich": "collbench-rank-mpich"}


def mpi_env():
    env = dict(os.environ)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def run(cmd):
    done = subprocess.run(cmd, env=mpi_env(), capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        sys.stderr.write("command failed (exit %d): %s\n%s%s" % (
            done.returncode, " ".join(cmd), done.stdout[-2000:], done.stderr[-2000:]))
        sys.exit(1)
    return done.stdout


def minimal_times_s(args, clock, lib, sync, op, size_bytes, iters, warmup):
    """(avg_s, p50_s) from minimal_mpi_loop timing with `clock`."""
    cmd = mpirun_prefix(args, lib) + [
        os.path.join(args.bin_dir, LOOP_BINARY[lib]), "--clock", clock, "--sync", sync, op,
        str(iters), str(warmup), str(size_bytes)]
    for line in run(cmd).splitlines():
        fields = line.split()
        if len(fields) == 6 and fields[0] == op and int(fields[1]) == size_bytes:
            return float(fields[4]), float(fields[5])
    sys.exit("minimal_mpi_loop printed no result for %s %d" % (op, size_bytes))


def collbench_times_s(args, lib, sync, op, size_bytes, iters, warmup):
    """(avg_s, p50_s) from collbench-rank's JSON lines."""
    cmd = mpirun_prefix(args, lib) + [
        os.path.join(args.bin_dir, ENGINE_BINARY[lib]), op,
        "--sizes", str(size_bytes), "-n", str(iters), "-w", str(warmup), "--sync", sync,
        "--dtype", "float32", "--backend", "mpi", "--format", "jsonl"]
    if op == "allreduce":
        cmd += ["--redop", "sum"]
    for line in run(cmd).splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        if record.get("kind") == "error":
            sys.exit("collbench-rank: %s" % record.get("message"))
        if record.get("kind") == "size" and record.get("bytes") == size_bytes:
            if record.get("iters") != iters or record.get("sync") != sync:
                sys.exit("collbench-rank ran %s iterations with sync %s, asked for %d, %s"
                         % (record.get("iters"), record.get("sync"), iters, sync))
            return float(record["avg_s"]), float(record["p50_s"])
    sys.exit("collbench-rank printed no size record for %s %d" % (op, size_bytes))


def timer_bias_s(args):
    """What each program's clock adds to every interval it measures
    (bench/timer_bias_bench.cc): (minimal loop, collbench), in seconds."""
    out = run(mpirun_prefix_np1(args) + [os.path.join(args.bin_dir, "timer_bias_bench")])
    values = {}
    for line in out.splitlines():
        if "ns" in line and ("MPI_Wtime" in line or "tick clock" in line):
            values["minimal" if "MPI_Wtime" in line else "collbench"] = float(
                line.split()[-2]) * 1e-9
    if len(values) != 2:
        sys.exit("timer_bias_bench printed no biases:\n" + out)
    return values["minimal"], values["collbench"]


def mpirun_prefix_np1(args):
    return mpirun_prefix(args, "openmpi", ranks=1)


def median_ci(values, confidence=0.95):
    """(median, low, high): the sample median and a distribution-free
    confidence interval for the true median, from the order statistics the
    binomial distribution puts around it. With 5 or fewer values the interval
    is the whole range."""
    ordered = sorted(values)
    n = len(ordered)
    # Largest k with P(Binomial(n, 1/2) < k) <= (1 - confidence) / 2: the
    # k-th smallest and k-th largest values bound the median.
    k, tail = 0, 0.0
    while k < n // 2:
        next_tail = tail + math.comb(n, k) / 2.0 ** n
        if next_tail > (1 - confidence) / 2:
            break
        tail = next_tail
        k += 1
    k = max(k, 1)
    return statistics.median(ordered), ordered[k - 1], ordered[n - k]


def calibrate(args, libs, modes, ops, sizes, reference):
    """{(lib, sync, op, size): iterations} so that each measurement of the
    reference loop lasts about args.seconds; the same count for every
    program and round of the cell. With --iters, that count everywhere."""
    counts = {}
    for lib in libs:
        for sync in modes:
            for op in ops:
                for size_bytes in sizes:
                    if args.iters:
                        counts[(lib, sync, op, size_bytes)] = args.iters
                        continue
                    iters = iters_for(size_bytes)
                    avg_s, _ = minimal_times_s(args, reference, lib, sync, op, size_bytes,
                                               iters, max(1, iters // 10))
                    # The untimed barrier of sync barrier costs about as much
                    # as a small call: count it in the wall time.
                    per_call_s = avg_s * (2 if sync == "barrier" else 1)
                    seconds = (args.large_seconds if size_bytes >= LARGE_BYTES
                               else args.seconds)
                    counts[(lib, sync, op, size_bytes)] = max(
                        30, min(4000000, int(seconds / max(per_call_s, 1e-9))))
    return counts


def measure_all(args, libs, modes, ops, sizes, clocks, reference, counts):
    """Every round, every cell: {(lib, sync, op, size): {program: [(avg, p50), ...]}}."""
    results = {}
    for round_index in range(args.rounds):
        for lib in libs:
            for sync in modes:
                programs = [(c, functools.partial(minimal_times_s, args, c, lib, sync))
                            for c in clocks if not (c == "loop" and sync == "barrier")]
                programs.append(("collbench", functools.partial(collbench_times_s, args, lib,
                                                                sync)))
                shift = round_index % len(programs)
                order = programs[shift:] + programs[:shift]
                for op in ops:
                    for size_bytes in sizes:
                        iters = counts[(lib, sync, op, size_bytes)]
                        warmup = max(1, iters // 10)
                        entry = results.setdefault((lib, sync, op, size_bytes),
                                                   {name: [] for name, _ in programs})
                        for name, measure in order:
                            entry[name].append(measure(op, size_bytes, iters, warmup))
        print("round %d of %d done" % (round_index + 1, args.rounds),
              file=sys.stderr, flush=True)
    return results


def print_table(args, results, clocks, reference, counts):
    tolerance_label = "within_%d%%" % round(args.tolerance * 100)
    others = clocks[1:]
    print("%-8s %-7s %-10s %9s %7s %10s %12s %7s %15s %10s %7s" % (
        "library", "sync", "op", "bytes", "iters", "ref_avg_us", "cb_avg_us", "ratio",
        "ratio_95%_ci", tolerance_label, "p50_rat") +
        "".join(" %8s" % ("osu_rat" if c == "wtime" else c + "_rat") for c in others))
    within = {}
    for (lib, sync, op, size_bytes), entry in results.items():
        # Ratios are paired: collbench-rank against each loop of the same
        # round, run next to it, so slow swings of a shared machine cancel.
        def paired(name, field=0):
            return [cb[field] / ref[field]
                    for cb, ref in zip(entry["collbench"], entry[name])]
        ratio, low, high = median_ci(paired(reference))
        p50_ratio = median_ci(paired(reference, 1))[0]
        ok = abs(ratio - 1) <= args.tolerance
        cells, passed = within.get((lib, sync), (0, 0))
        within[(lib, sync)] = (cells + 1, passed + ok)
        extra = "".join(" %8.3f" % median_ci(paired(c))[0] if c in entry else " %8s" % "-"
                        for c in others)
        print("%-8s %-7s %-10s %9d %7d %10.3f %12.3f %7.3f %15s %10s %7.3f" % (
            lib, sync, op, size_bytes, counts[(lib, sync, op, size_bytes)],
            statistics.median(avg for avg, _ in entry[reference]) * 1e6,
            statistics.median(avg for avg, _ in entry["collbench"]) * 1e6, ratio,
            "[%.3f, %.3f]" % (low, high), "yes" if ok else "NO", p50_ratio) + extra)
    return within


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", default="build/bin")
    parser.add_argument("--mpirun", default="mpirun", help="Open MPI's launcher")
    parser.add_argument("--mpiexec", default="mpiexec.mpich", help="MPICH's launcher")
    parser.add_argument("--libs", default="openmpi,mpich")
    parser.add_argument("--modes", default="barrier,none",
                        help="iteration synchronizations to measure (collbench-rank --sync)")
    parser.add_argument("--clocks", default="",
                        help="minimal-loop clocks to show beside the reference: wtime "
                             "(as OSU), loop (as nccl-tests; sync none only)")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--bind-to", default="core",
                        help="--bind-to / -bind-to of the launcher, the same for both")
    parser.add_argument("--mpirun-arg", action="append", default=[],
                        help="extra launcher argument (repeatable), for both")
    parser.add_argument("--nice", type=int, default=0,
                        help="run both under nice -n N; a negative N (root "
                             "only) keeps other work on a shared machine "
                             "from descheduling the ranks")
    parser.add_argument("--ops", default="allreduce,bcast,gather")
    parser.add_argument("--sizes", default="8,1K,64K,1M,16M")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--seconds", type=float, default=0.3,
                        help="about how long each measurement lasts: a calibration "
                             "pass sets every cell's iteration count from it")
    parser.add_argument("--large-seconds", type=float, default=1.5,
                        help="the same for sizes of %d MiB and more, whose "
                             "memory-bound times swing most on a shared machine"
                             % (LARGE_BYTES >> 20))
    parser.add_argument("--iters", type=int,
                        help="iterations for every cell instead of calibrating (a "
                             "small count only checks that everything runs)")
    parser.add_argument("--raw", help="also write every measurement to this JSON file")
    args = parser.parse_args()

    libs = args.libs.split(",")
    modes = args.modes.split(",")
    for lib in libs:
        if lib not in LOOP_BINARY:
            sys.exit("unknown library %r in --libs (openmpi, mpich)" % lib)
        for binary in (LOOP_BINARY[lib], ENGINE_BINARY[lib]):
            if not os.access(os.path.join(args.bin_dir, binary), os.X_OK):
                sys.exit("%s is not built in %s" % (binary, args.bin_dir))
    if any(m not in ("barrier", "none") for m in modes):
        sys.exit("unknown mode in --modes %r (barrier, none)" % args.modes)
    ops = args.ops.split(",")
    sizes = [parse_bytes(s) for s in args.sizes.split(",")]
    reference = "tsc" if platform.machine() in ("x86_64", "AMD64") else "wtime"
    clocks = [reference] + [c for c in args.clocks.split(",") if c and c != reference]
    if any(c not in ("tsc", "wtime", "loop") for c in clocks):
        sys.exit("unknown clock in --clocks %r (wtime, loop)" % args.clocks)
    bias_minimal, bias_collbench = timer_bias_s(args)
    counts = calibrate(args, libs, modes, ops, sizes, reference)
    print("calibrated %d cells to about %.2f s per measurement (%.2f s from %d MiB)" % (
        len(counts), args.seconds, args.large_seconds, LARGE_BYTES >> 20),
          file=sys.stderr, flush=True)
    results = measure_all(args, libs, modes, ops, sizes, clocks, reference, counts)

    if args.raw:
        with open(args.raw, "w") as out:
            json.dump([{"library": lib, "sync": sync, "op": op, "bytes": size_bytes,
                        "iters": counts[(lib, sync, op, size_bytes)],
                        "programs": {name: [{"avg_s": a, "p50_s": p} for a, p in values]
                                     for name, values in entry.items()}}
                       for (lib, sync, op, size_bytes), entry in results.items()],
                      out, indent=1)

    print("fidelity: %d ranks, --bind-to %s %s, nice %d, %d rounds (rotating order); "
          "reference: the minimal loop with the same --sync, timed with %s" % (
              args.ranks, args.bind_to, " ".join(args.mpirun_arg), args.nice,
              args.rounds, reference))
    within = print_table(args, results, clocks, reference, counts)
    for (lib, sync), (cells, passed) in within.items():
        print("%s, sync %s: avg against the minimal loop timed with %s: %d of %d within "
              "%.0f%%" % (lib, sync, reference, passed, cells, args.tolerance * 100))
    print("clock cost per interval (timer_bias_bench): MPI_Wtime pair %.1f ns, "
          "collbench's tick clock %.1f ns" % (bias_minimal * 1e9, bias_collbench * 1e9))
    print("ratio: median over rounds of collbench avg / reference avg of the same "
          "round; ratio_95%_ci: where the true median ratio lies (the spread is the "
          "machine's noise); avg columns: medians, in us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
