#!/usr/bin/env python3
"""Runs collbench-rank under an MPI launcher and checks its JSON lines.

Used by ctest (tests/integration/CMakeLists.txt). Fails unless the run
exits with the expected code, prints a start record, exactly the expected
number of size records (so a run that measured nothing cannot pass), each
checked, and the expected total of wrong elements.
"""
import argparse
import json
import os
import subprocess
import sys

REDUCING = {"allreduce", "reduce", "reduce_scatter"}
MPI_DTYPES = 5  # int8 int32 int64 float32 float64
REDOPS = 4


def launcher_command(flavor, launcher, nranks):
    if flavor == "openmpi":
        return [launcher, "--oversubscribe", "--bind-to", "none", "-np", str(nranks)]
    return [launcher, "-n", str(nranks)]


def expected_sizes(operation, sizes, all_combinations):
    if not all_combinations:
        return len(sizes)
    combos = MPI_DTYPES * (REDOPS if operation in REDUCING else 1)
    return combos * len(sizes)


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
    parser.add_argument("extra", nargs=argparse.REMAINDER)
    args = parser.parse_args()

    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    for assignment in args.env:
        name, _, value = assignment.partition("=")
        env[name] = value
    command = launcher_command(args.flavor, args.launcher, args.np) + [
        args.binary, args.operation, "--sizes", args.sizes, "-n", "5", "-w", "2",
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
    if len(sizes) != want:
        failures.append(f"{len(sizes)} size records, expected {want}")
    if any(not r.get("checked") for r in sizes):
        failures.append("a size record was not validated")
    wrong = sum(r.get("wrong", 0) for r in sizes)
    if wrong != args.expect_wrong:
        failures.append(f"{wrong} wrong elements in total, expected {args.expect_wrong}")
    if any(r.get("iters") != 5 for r in sizes):
        failures.append("a size ran a different number of iterations than -n 5")
    for r in sizes:
        if not r["avg_s"] > 0 or sum(r["histogram"]["counts"].values()) != 5 * args.np:
            failures.append(f"size {r['bytes']} {r['dtype']}: bad timing or histogram")
            break
    print(f"{len(sizes)} sizes checked, {wrong} wrong, exit {result.returncode}")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        print(result.stdout[-4000:])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
