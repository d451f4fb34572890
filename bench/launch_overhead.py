#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What `collbench run --wait` adds to a bare mpirun of the same run.

    bench/launch_overhead.py --bin-dir build/bin [--pairs 10]

Starts, on 127.0.0.1, a coordinator, two one-slot workers, a two-slot
worker and a launcher (collbench-launcher), then times whole commands in
alternating pairs (A B A B ...), so a drift of the machine's speed hits
both sides alike:

  one worker    `collbench run --wait` of a 2-rank allreduce on the
                two-slot worker (it launches its own ranks) against
                `mpirun -np 2` of the same engine command
  two workers   the same run across the two one-slot workers (the
                launcher starts it, reaching both through the launch
                shim) against mpirun with two daemons started through a
                trivial remote-shell agent (two "hosts" on this machine),
                and against `mpirun -np 2` with local ranks

Prints each side's median wall time, the median of the pairs' differences
and the range of the pairs' ratios. Needs an idle machine: it measures
tens of milliseconds.
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ENGINE = ["allreduce", "--sizes", "8", "-n", "10"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(argv, env):
    """Wall seconds of one run, or None when it hung (killed after 30 s)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    if proc.returncode != 0:
        sys.exit("launch_overhead: %s exited %d: %s" % (argv[0], proc.returncode, err[-500:]))
    return time.monotonic() - start


def compare(title, a, b, pairs, env):
    timed(a, env), timed(b, env)  # warm-up, not counted
    a_s, b_s, hung = [], [], {"A": 0, "B": 0}
    for _ in range(pairs):
        x, y = timed(a, env), timed(b, env)
        hung["A"] += x is None
        hung["B"] += y is None
        if x is None or y is None:
            continue  # the pair is left out, and said
        a_s.append(x)
        b_s.append(y)
    if not a_s:
        print("%-46s every pair hung" % title, flush=True)
        return
    diffs = [x - y for x, y in zip(a_s, b_s)]
    ratios = sorted(x / y for x, y in zip(a_s, b_s))
    print("%-46s A %.3f s  B %.3f s  A-B %+.0f ms (median of pairs)  A/B %.2f..%.2f%s" % (
        title, statistics.median(a_s), statistics.median(b_s),
        statistics.median(diffs) * 1e3, ratios[0], ratios[-1],
        "".join("  (%s hung 30 s in %d pair%s, left out)" % (side, n, "" if n == 1 else "s")
                for side, n in hung.items() if n)), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--pairs", type=int, default=10)
    args = parser.parse_args()
    bins = os.path.abspath(args.bin_dir)
    mpirun = shutil.which("mpirun.openmpi") or "mpirun"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    work = tempfile.mkdtemp(prefix="collbench-launch-overhead-")
    port = free_port()
    address = "127.0.0.1:%d" % port
    procs = []

    def spawn(argv, name):
        log = open(os.path.join(work, name + ".log"), "wb")
        procs.append(subprocess.Popen(argv, stdout=log, stderr=log, env=env,
                                      start_new_session=True))

    try:
        spawn([bins + "/collbench-coordinator", "--grpc-listen", address, "--store",
               os.path.join(work, "store.db"), "--worker-launch", "off"], "coordinator")
        time.sleep(1)
        common = ["--coordinator", address, "--listen", "127.0.0.1:0", "--mpi-interface",
                  "127.0.0.0/8"]
        for name, slots in (("a", 1), ("b", 1), ("c", 2)):
            spawn([bins + "/collbench-worker", "--name", name, "--slots", str(slots),
                   "--work-dir", os.path.join(work, name), "--no-memory-probe"] + common, name)
        spawn([bins + "/collbench-launcher", "--name", "l", "--work-dir",
               os.path.join(work, "l")] + common, "launcher")
        time.sleep(3)
        cli = [bins + "/collbench", "--coordinator", address, "run"] + ENGINE + ["--wait"]
        local = [mpirun, "--oversubscribe", "--bind-to", "none", "-np", "2",
                 bins + "/collbench-rank"] + ENGINE
        agent = os.path.join(work, "rsh-agent")
        with open(agent, "w") as f:  # runs the daemon's command line here
            f.write('#!/bin/sh\nshift\nexec sh -c "$*"\n')
        os.chmod(agent, 0o700)
        two_daemons = [mpirun, "--noprefix", "--host", "w0:1,w1:1", "-np", "2", "--mca",
                       "plm_rsh_agent", agent, "--mca", "plm_rsh_no_tree_spawn", "1",
                       "--mca", "oob_tcp_if_include", "127.0.0.0/8", "--mca",
                       "btl_tcp_if_include", "127.0.0.0/8", "--bind-to", "none",
                       bins + "/collbench-rank"] + ENGINE
        print("%d pairs each, A = collbench run --wait, B = bare mpirun" % args.pairs)
        compare("one worker, 2 ranks  vs  mpirun -np 2",
                cli + ["--ranks", "2", "--workers", "c", "--ranks-per-worker", "2"], local,
                args.pairs, env)
        spread = cli + ["--ranks", "2", "--workers", "a,b", "--ranks-per-worker", "1"]
        compare("two workers (launcher)  vs  mpirun, 2 daemons", spread, two_daemons,
                args.pairs, env)
        compare("two workers (launcher)  vs  mpirun -np 2", spread, local, args.pairs, env)
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
