#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hang attribution: a rank stopped or gone mid-run is named, live.

Two "hosts" are network namespaces on one bridge (198.18.5.0/24, names
cbhg-*), a worker with two slots in each; a 4-rank all-reduce over TCP runs
two ranks on each. The ranks publish their progress in slots under the
workers' --progress-dir, which the workers relay to the coordinator. The
test

  1. waits until every rank is measuring (REST shows four ranks in
     rank_progress), then stops rank 2 with SIGSTOP: the run fails within
     the default hang timeout (30 s) plus 5 s, its error names rank 2, its
     host (the second worker of the placement) and that it stopped, and
     where the other ranks wait; the run's rank_progress marks rank 2
     behind; no process of the run is left;
  2. runs it again and kills rank 2 (SIGKILL: it exits without finalising):
     the run fails within the hang timeout plus 5 s, its error names rank 2
     and its host and where every rank was; no process is left.

Needs root and `ip netns`; exits 77 (skipped) otherwise. Everything it
creates is named cbhg-* (or lives in its folder) and is removed at the end,
also on failure; one netns test at a time.

  hang_test.py --bin-dir build/bin [--keep-logs]
"""

import argparse
import json
import os
import signal
import struct
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netns_hosts import Cluster, Failure, Network, check_reachable, log, run_test  # noqa: E402

NETWORK = Network("cbhg-", "198.18.5", host_count=2)
HANG_TIMEOUT_S = 30  # the default: no --hang-timeout, no time budget
RUN = ["allreduce", "--ranks", "4", "--placement", "pack", "--transport", "tcp",
       "--sizes", "64K", "--iters", "1000000"]
# The slot's layout (common/progress_slot.cc): magic, version, generation,
# then rank and pid.
SLOT = struct.Struct("<IIQii")


def http_get(url, token, timeout=10):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read().decode()


def host_of_rank(run, rank):
    """The host name of the worker that held `rank` in `run` (REST JSON):
    the placement's order is the coordinator's (docs/design/run-lifecycle.md#placement-order),
    not the hosts' names, so it is read, not assumed."""
    for host in run.get("hosts", []):
        rank -= host.get("slots", 0)
        if rank < 0:
            return host["hostname"]
    raise Failure(f"{run['name']} places no rank {rank}: {run.get('hosts')}")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Test(Cluster):
    def progress_dir(self, run):
        return os.path.join(self.workdir, "progress", run.split("/", 1)[1])

    def rest_run(self, run):
        return json.loads(http_get(f"http://{self.http_address}/v1/{run}", self.tokens["read"]))

    def rank_pids(self, run):
        pids = {}
        folder = self.progress_dir(run)
        for name in os.listdir(folder) if os.path.isdir(folder) else []:
            with open(os.path.join(folder, name), "rb") as f:
                magic, _, _, rank, pid = SLOT.unpack(f.read(SLOT.size))
            if magic == 0x43425052:
                pids[rank] = pid
        return pids

    def start_measuring(self):
        run = self.create_run(*RUN)
        deadline = time.monotonic() + 90
        while True:
            stored = self.rest_run(run)
            ranks = stored.get("rankProgress", [])
            if stored["state"] in ("FAILED", "SUCCEEDED", "CANCELLED"):
                raise Failure(f"{run} ended before it was measured: {stored.get('error')}")
            if len(ranks) == 4 and all(int(r.get("iteration", "0")) > 0 for r in ranks) \
                    and len(self.rank_pids(run)) == 4:
                break
            if time.monotonic() > deadline:
                raise Failure(f"{run}: the ranks' progress did not arrive: {ranks}")
            time.sleep(0.5)
        log(f"{run}: every rank measuring: " +
            ", ".join(f"rank {r['rank']} on {r['host']} iteration {r['iteration']}"
                      for r in ranks))
        return run

    def wait_failed(self, run, since, limit_s):
        while True:
            stored = self.rest_run(run)
            if stored["state"] in ("FAILED", "SUCCEEDED", "CANCELLED"):
                took = time.monotonic() - since
                break
            if time.monotonic() - since > limit_s + 30:
                raise Failure(f"{run} still {stored['state']} {limit_s + 30:.0f}s after the fault")
            time.sleep(0.2)
        log(f"{run} {stored['state']} {took:.1f}s after the fault: {stored.get('error')}")
        if stored["state"] != "FAILED":
            raise Failure(f"{run} ended {stored['state']}, not FAILED")
        if took > limit_s:
            raise Failure(f"{run} failed {took:.1f}s after the fault, later than {limit_s}s")
        return stored

    def check_nothing_left(self, pids):
        deadline = time.monotonic() + 15
        while any(alive(p) for p in pids.values()):
            if time.monotonic() > deadline:
                left = [p for p in pids.values() if alive(p)]
                for p in left:
                    os.kill(p, signal.SIGKILL)  # ours: started by this test's workers
                raise Failure(f"rank processes left after the run ended: {left}")
            time.sleep(0.2)
        log("no process of the run is left")

    def stopped_rank(self):
        run = self.start_measuring()
        pids = self.rank_pids(run)
        os.kill(pids[2], signal.SIGSTOP)
        since = time.monotonic()
        log(f"rank 2 (pid {pids[2]}) stopped with SIGSTOP")
        try:
            stored = self.wait_failed(run, since, HANG_TIMEOUT_S + 5)
        finally:
            if alive(pids[2]):
                os.kill(pids[2], signal.SIGCONT)
        error = stored.get("error", "")
        host2 = host_of_rank(stored, 2)
        for needed in ("hang", f"rank 2 on {host2}", "stopped", "wait in allreduce 64K iteration"):
            if needed not in error:
                raise Failure(f"the diagnosis lacks '{needed}': {error}")
        behind = [r["rank"] for r in stored.get("rankProgress", []) if r.get("behind")]
        if behind != [2]:
            raise Failure(f"rank_progress marks {behind} behind, not [2]")
        self.check_nothing_left(pids)

    def exited_rank(self):
        run = self.start_measuring()
        pids = self.rank_pids(run)
        os.kill(pids[2], signal.SIGKILL)
        since = time.monotonic()
        log(f"rank 2 (pid {pids[2]}) killed: it exits without finalising")
        stored = self.wait_failed(run, since, HANG_TIMEOUT_S + 5)
        error = stored.get("error", "")
        host2 = host_of_rank(stored, 2)
        for needed in (f"rank 2 on {host2}", "rank 0 on", "rank 3 on", "allreduce 64K",
                       f"rank 2 with PID {pids[2]} on node w1 (workers/{host2})"):
            if needed not in error:
                raise Failure(f"the error lacks '{needed}': {error}")
        self.check_nothing_left(pids)

    def main(self):
        port = self.timed("coordinator start", self.start_coordinator, http=True)
        self.timed("reachability", check_reachable, self.net, port)
        self.start_workers(mpi_interface=self.net.cidr, slots=2,
                           extra=["--progress-dir", os.path.join(self.workdir, "progress")])
        self.timed("workers registered", self.wait_for_workers)
        self.timed("a stopped rank", self.stopped_rank)
        self.timed("a rank that exits", self.exited_rank)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True, help="folder with collbench, "
                        "collbench-coordinator, collbench-worker and the rank binaries")
    parser.add_argument("--keep-logs", action="store_true", help="keep the logs also on success")
    args = parser.parse_args()
    return run_test(NETWORK, "hang attribution: a stopped rank, a rank that exits",
                    args.bin_dir, Test.main, make_cluster=Test, keep_logs=args.keep_logs)


if __name__ == "__main__":
    sys.exit(main())
