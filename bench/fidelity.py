#!/usr/bin/env python3
"""Does collbench-rank report what a minimal MPI loop measures?

For each operation and size, runs collbench-rank and minimal_mpi_loop (an
OSU-style loop, bench/minimal_mpi_loop.cc) under the same mpirun settings,
with the same library, float32 buffers, element counts, warmup and iteration
counts, interleaved over several rounds (alternating which goes first), and
compares the medians of the reported averages (mean over ranks of per-rank
means, DESIGN §2). The per-iteration medians (p50) are compared too: on a busy
machine the average swings with every descheduled iteration, the median much
less. Each program's clock also adds its own cost to every interval
(bench/timer_bias_bench.cc measures both, in the same run): tb_ratio is the
avg ratio with those costs taken off, which matters only at a few hundred
nanoseconds. A benchmark, not a test: it prints a table and exits 0 unless a
program fails to run.

Example:
  python3 bench/fidelity.py --bin-dir build/bin --rounds 3
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

# Iterations per size (warmup is a tenth): enough that each measurement lasts
# about a quarter of a second on a laptop-class machine. With OSU's counts
# (10^4 for small messages) an 8-byte measurement lasts a few milliseconds,
# and one timer interrupt or descheduling moves its average by tens of
# percent in either program.
DEFAULT_ITERS = {8: 400000, 1024: 200000, 65536: 10000, 1 << 20: 500, 16 << 20: 30}
SUFFIXES = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_bytes(text):
    text = text.strip().upper()
    if text and text[-1] in SUFFIXES:
        return int(text[:-1]) * SUFFIXES[text[-1]]
    return int(text)


def iters_for(size_bytes):
    if size_bytes in DEFAULT_ITERS:
        return DEFAULT_ITERS[size_bytes]
    # Roughly constant bytes moved per measurement for other sizes.
    return max(30, min(400000, (512 << 20) // max(size_bytes, 1)))


def mpirun_prefix(args):
    cmd = ["nice", "-n", str(args.nice)] if args.nice else []
    cmd += [args.mpirun, "-np", str(args.ranks), "--bind-to", args.bind_to]
    if args.ranks > os.cpu_count():
        cmd.append("--oversubscribe")
    return cmd + args.mpirun_arg


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


def minimal_times_s(args, op, size_bytes, iters, warmup):
    """(avg_s, p50_s) from minimal_mpi_loop."""
    cmd = mpirun_prefix(args) + [
        os.path.join(args.bin_dir, "minimal_mpi_loop"), op, str(iters),
        str(warmup), str(size_bytes)]
    for line in run(cmd).splitlines():
        fields = line.split()
        if len(fields) == 6 and fields[0] == op and int(fields[1]) == size_bytes:
            return float(fields[4]), float(fields[5])
    sys.exit("minimal_mpi_loop printed no result for %s %d" % (op, size_bytes))


def collbench_times_s(args, op, size_bytes, iters, warmup):
    """(avg_s, p50_s) from collbench-rank's JSON lines."""
    cmd = mpirun_prefix(args) + [
        os.path.join(args.bin_dir, args.collbench), op,
        "--sizes", str(size_bytes), "-n", str(iters), "-w", str(warmup),
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
            if record.get("iters") != iters:
                sys.exit("collbench-rank ran %s iterations, asked for %d"
                         % (record.get("iters"), iters))
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
    prefix = mpirun_prefix(args)
    return prefix[:prefix.index("-np") + 1] + ["1"] + prefix[prefix.index("-np") + 2:]


def spread(values):
    """Relative range of repeated measurements: how noisy the machine was."""
    return (max(values) - min(values)) / statistics.median(values)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", default="build/bin")
    parser.add_argument("--collbench", default="collbench-rank",
                        help="binary name in --bin-dir")
    parser.add_argument("--mpirun", default="mpirun")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--bind-to", default="none",
                        help="mpirun --bind-to, the same for both programs")
    parser.add_argument("--mpirun-arg", action="append", default=[],
                        help="extra mpirun argument (repeatable), for both")
    parser.add_argument("--nice", type=int, default=0,
                        help="run both under nice -n N; a negative N (root "
                             "only) keeps other work on a shared machine "
                             "from descheduling the ranks")
    parser.add_argument("--ops", default="allreduce,bcast,gather")
    parser.add_argument("--sizes", default="8,1K,64K,1M,16M")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tolerance", type=float, default=0.05)
    args = parser.parse_args()

    ops = args.ops.split(",")
    sizes = [parse_bytes(s) for s in args.sizes.split(",")]
    bias_minimal, bias_collbench = timer_bias_s(args)
    results = {}  # (op, size) -> {"minimal": [(avg, p50)...], "collbench": ...}
    programs = [("minimal", minimal_times_s), ("collbench", collbench_times_s)]
    for round_index in range(args.rounds):
        order = programs if round_index % 2 == 0 else programs[::-1]
        for op in ops:
            for size_bytes in sizes:
                iters = iters_for(size_bytes)
                warmup = max(1, iters // 10)
                entry = results.setdefault((op, size_bytes),
                                           {"minimal": [], "collbench": []})
                for name, measure in order:
                    entry[name].append(measure(args, op, size_bytes, iters, warmup))
        print("round %d of %d done" % (round_index + 1, args.rounds),
              file=sys.stderr, flush=True)

    print("fidelity: %d ranks, mpirun --bind-to %s %s, nice %d, median of %d "
          "rounds (alternating order)" % (
              args.ranks, args.bind_to, " ".join(args.mpirun_arg), args.nice,
              args.rounds))
    tolerance_label = "within_%d%%" % round(args.tolerance * 100)
    print("%-10s %9s %6s %15s %17s %7s %10s %7s %8s %8s %7s %8s" % (
        "op", "bytes", "iters", "minimal_avg_us", "collbench_avg_us", "ratio",
        tolerance_label, "noise", "min_p50", "cb_p50", "p50_rat", "tb_ratio"))
    within = 0
    p50_within = 0
    corrected_within = 0
    for (op, size_bytes), entry in results.items():
        minimal = statistics.median(avg for avg, _ in entry["minimal"])
        collbench = statistics.median(avg for avg, _ in entry["collbench"])
        minimal_p50 = statistics.median(p50 for _, p50 in entry["minimal"])
        collbench_p50 = statistics.median(p50 for _, p50 in entry["collbench"])
        ratio = collbench / minimal
        p50_ratio = collbench_p50 / minimal_p50
        # The same, less what each program's own clock adds per interval.
        corrected = (collbench - bias_collbench) / (minimal - bias_minimal)
        corrected_within += abs(corrected - 1) <= args.tolerance
        ok = abs(ratio - 1) <= args.tolerance
        within += ok
        p50_within += abs(p50_ratio - 1) <= args.tolerance
        noise = max(spread([avg for avg, _ in entry["minimal"]]),
                    spread([avg for avg, _ in entry["collbench"]]))
        print("%-10s %9d %6d %15.3f %17.3f %7.3f %10s %6.0f%% %8.2f %8.2f %7.3f %8.3f" % (
            op, size_bytes, iters_for(size_bytes), minimal * 1e6,
            collbench * 1e6, ratio, "yes" if ok else "NO", noise * 100,
            minimal_p50 * 1e6, collbench_p50 * 1e6, p50_ratio, corrected))
    print("avg: %d of %d within %.0f%%; p50: %d of %d within %.0f%%" % (
        within, len(results), args.tolerance * 100, p50_within, len(results),
        args.tolerance * 100))
    print("timer bias per interval: minimal loop (MPI_Wtime) %.1f ns, collbench (tick "
          "clock) %.1f ns; tb_ratio: the avg ratio with each program's bias taken off; "
          "%d of %d within %.0f%%" % (bias_minimal * 1e9, bias_collbench * 1e9,
                                       corrected_within, len(results), args.tolerance * 100))
    print("noise: largest relative range of the avg over rounds, either program; "
          "min_p50/cb_p50 in us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
