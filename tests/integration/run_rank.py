#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs collbench-rank under an MPI launcher and checks its JSON lines.

Used by ctest (tests/integration/CMakeLists.txt). Fails unless the run
exits with the expected code, prints a start record, exactly the expected
number of size records (so a run that measured nothing cannot pass), each
checked, with the expected total of wrong elements, the iteration
synchronization the operation runs with, and every rank's statistics and
host. With --expect-slowest R every size must name rank R as the slowest
and flag it as a straggler, in the JSON lines and in the table (a second
run with --format table). The end record must carry the mean busbw of the
size records (nccl-tests' "Avg bus bandwidth"), every size record must say
whether it ran in place (--in-place), and stderr must warn about
oversubscription exactly when the ranks outnumber this machine's CPUs.
"""
import argparse
import json
import os
import subprocess
import sys

REDUCING = {"allreduce", "reduce", "reduce_scatter"}
POINT_TO_POINT = {"latency", "bw", "bibw"}
COPIES = {"h2d", "d2h", "d2d", "h2h"}  # their own loop, every dtype
# Timed iterations of each cell (after one warm-up): the checks validate
# every iteration's result, and three are as many as the histogram and the
# straggler need. Each is a full collective on ranks that oversubscribe the
# cores, so the count is most of these tests' time.
ITERS = 3
COMPUTE = {"gemm"}  # a rank's own work, like the copies: no barrier between calls
MPI_DTYPES = 5  # int8 int32 int64 float32 float64
ALL_DTYPES = 7  # and float16 bfloat16, which copies and NCCL carry
REDOPS = 4


def launcher_command(flavor, launcher, nranks):
    if flavor == "openmpi":
        return [launcher, "--oversubscribe", "--bind-to", "none", "-np", str(nranks)]
    return [launcher, "-n", str(nranks)]


def expected_sizes(operation, sizes, all_combinations):
    if not all_combinations:
        return len(sizes)
    if operation in COPIES:
        return ALL_DTYPES * len(sizes)
    combos = MPI_DTYPES * (REDOPS if operation in REDUCING else 1)
    return combos * len(sizes)


def expected_sync(operation, extra):
    if "--sync" in extra:
        return extra[extra.index("--sync") + 1]
    return "none" if operation in POINT_TO_POINT | COPIES | COMPUTE else "barrier"


def check_ranks(args, records, sizes):
    """The synchronization and the per-rank view of every size record."""
    failures = []
    sync = expected_sync(args.operation, args.extra)
    starts = [r for r in records if r.get("kind") == "start"]
    if starts and starts[0]["spec"].get("sync") != sync:
        failures.append(f"start record says sync {starts[0]['spec'].get('sync')}, expected {sync}")
    hosts = starts[0].get("hosts", []) if starts else []
    for r in sizes:
        label = f"size {r['bytes']} {r['dtype']}"
        if r.get("sync") != sync:
            failures.append(f"{label}: sync {r.get('sync')!r}, expected {sync!r}")
        ranks = r.get("ranks", [])
        if [t["rank"] for t in ranks] != list(range(args.np)):
            failures.append(f"{label}: ranks {[t['rank'] for t in ranks]}, expected 0..{args.np - 1}")
            continue
        if [t["host"] for t in ranks] != hosts:
            failures.append(f"{label}: rank hosts {[t['host'] for t in ranks]} != start {hosts}")
        if any(not (t["mean_s"] > 0 and t["p50_s"] > 0 and t["p99_s"] >= t["p50_s"]) for t in ranks):
            failures.append(f"{label}: a rank has no mean, p50 or p99: {ranks}")
        slowest = max(ranks, key=lambda t: t["mean_s"])["rank"]
        if r.get("slowest_rank") != slowest:
            failures.append(f"{label}: slowest_rank {r.get('slowest_rank')}, means say {slowest}")
        if args.expect_slowest is not None:
            flagged = [t["rank"] for t in ranks if t["straggler"]]
            if slowest != args.expect_slowest or flagged != [args.expect_slowest]:
                failures.append(f"{label}: slowest {slowest}, stragglers {flagged}, expected "
                                f"rank {args.expect_slowest} alone ({ranks})")
    return failures


def check_summary(args, records, sizes, stderr):
    """The end record's average busbw, the in-place flag and the warning."""
    failures = []
    ends = [r for r in records if r.get("kind") == "end"]
    busbw = [r["busbw_Bps"] for r in sizes]
    if ends and busbw and sum(busbw) > 0:
        mean = sum(busbw) / len(busbw)
        got = ends[0].get("avg_busbw_Bps", 0)
        if abs(got - mean) > 1e-9 * mean:
            failures.append(f"end record avg_busbw_Bps {got}, the sizes' mean busbw is {mean}")
    in_place = "--in-place" in args.extra
    if any(r.get("in_place", False) != in_place for r in sizes):
        failures.append(f"a size record does not say in_place {in_place}")
    crowded = args.np > len(os.sched_getaffinity(0))
    warned = "dominated by scheduling" in stderr
    if warned != crowded:
        failures.append(f"{args.np} ranks on {len(os.sched_getaffinity(0))} CPUs: "
                        f"oversubscription warning {'printed' if warned else 'missing'}")
    return failures


def check_table(command, env, rank):
    """The human table names the slow rank (rank@host) and marks it with !."""
    table = [a if a != "jsonl" else "table" for a in command]
    result = subprocess.run(table, env=env, capture_output=True, text=True, timeout=300)
    rows = [l for l in result.stdout.splitlines() if l and not l.startswith("#")][1:]
    bad = [l for l in rows if f" {rank}@" not in l or "x!" not in l]
    if result.returncode != 0 or not rows or bad:
        return [f"table does not name rank {rank} as a straggler in every row:\n{result.stdout}"]
    return []


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--flavor", choices=["openmpi", "mpich"], required=True)
    parser.add_argument("--launcher", required=True)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--operation", required=True)
    parser.add_argument("--sizes", default="8,1K,64K,256K")
    parser.add_argument("--all", action="store_true", help="--dtype all --redop all")
    parser.add_argument("--expect-exit", type=int, default=0)
    parser.add_argument("--expect-wrong", type=int, default=0)
    parser.add_argument("--expect-error", default=None,
                        help="text stderr must contain; the run must measure nothing")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the run")
    parser.add_argument("--expect-slowest", type=int, default=None,
                        help="the rank every size must name as the slowest straggler")
    parser.add_argument("extra", nargs=argparse.REMAINDER)
    args = parser.parse_args()

    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    for assignment in args.env:
        name, _, value = assignment.partition("=")
        env[name] = value
    command = launcher_command(args.flavor, args.launcher, args.np) + [
        args.binary, args.operation, "--sizes", args.sizes, "-n", str(ITERS), "-w", "1",
        "--check", "--format", "jsonl"]
    if args.all:
        command += ["--dtype", "all", "--redop", "all"]
    command += [a for a in args.extra if a != "--"]
    print("+", " ".join(command), flush=True)
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    sys.stderr.write(result.stderr)

    failures = []
    records = []
    for line in result.stdout.splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            failures.append(f"not a JSON line: {line!r}")
    kinds = [r.get("kind") for r in records]
    sizes = [r for r in records if r.get("kind") == "size"]
    want = expected_sizes(args.operation, args.sizes.split(","), args.all)
    if args.expect_error is not None:
        want = 0
        errors = [l for l in result.stderr.splitlines() if l.startswith("collbench-rank")]
        if len(errors) != 1 or args.expect_error not in errors[0]:
            failures.append(f"expected one stderr line with {args.expect_error!r}, got {errors}")
    if result.returncode != args.expect_exit:
        failures.append(f"exit code {result.returncode}, expected {args.expect_exit}")
    if args.expect_error is not None:
        pass  # failed before the start record, by design
    elif kinds[:1] != ["start"]:
        failures.append(f"first record is {kinds[:1]}, expected a start record")
    elif records[0].get("nranks") != args.np:
        failures.append(f"start record says {records[0].get('nranks')} ranks")
    elif records[0].get("sizes_total") != want:
        # The announced total is what progress counts against.
        failures.append(f"start record announces {records[0].get('sizes_total')} size records, "
                        f"expected {want}")
    if len(sizes) != want:
        failures.append(f"{len(sizes)} size records, expected {want}")
    if any(not r.get("checked") for r in sizes):
        failures.append("a size record was not validated")
    wrong = sum(r.get("wrong", 0) for r in sizes)
    if wrong != args.expect_wrong:
        failures.append(f"{wrong} wrong elements in total, expected {args.expect_wrong}")
    if any(r.get("iters") != ITERS for r in sizes):
        failures.append(f"a size ran a different number of iterations than -n {ITERS}")
    for r in sizes:
        if not r["avg_s"] > 0 or sum(r["histogram"]["counts"].values()) != ITERS * args.np:
            failures.append(f"size {r['bytes']} {r['dtype']}: bad timing or histogram")
            break
    failures += check_ranks(args, records, sizes)
    if args.expect_error is None:
        failures += check_summary(args, records, sizes, result.stderr)
    if args.expect_slowest is not None and not failures:
        failures += check_table(command, env, args.expect_slowest)
    print(f"{len(sizes)} sizes checked, {wrong} wrong, exit {result.returncode}")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        print(result.stdout[-4000:])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
