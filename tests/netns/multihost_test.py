#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Multi-host launch through network namespaces
(docs/design/run-lifecycle.md#launch).

Three "hosts" are network namespaces on one bridge, each with its own host
name (a UTS namespace), its own address 198.18.0.1x/24 on "eth0" and its own
host id. Each also has a decoy network, 198.19.0.1x/24 on a link that leads
nowhere, as a container host with a second network has: MPI must be kept
off it, which is what the workers' --mpi-interface is for (without it Open
MPI's daemons try to call mpirun back there and the run hangs). One
collbench-worker runs in each host, listening on and advertising its 198.18
address; the coordinator runs in the root namespace on the bridge address
198.18.0.1. The test then, for one MPI library (--mpi):

  1. a 3-rank SPREAD allreduce with --check: the launcher (on the bridge
     beside the coordinator, hosting no ranks) runs mpirun / mpiexec, the
     daemons on all three hosts start through the launch shim and their
     workers' Exec service; every size must report wrong = 0, the three
     ranks must have run on the three host names, and the run's launcher
     must be the launcher, not a worker;
  2. a 3-rank PACK allreduce with --check (all ranks on one worker, which
     launches it);
  3. `collbench compare` of the two: both runs and a ratio column.

Needs root and `ip netns`; exits 77 (skipped) without them. Every name it
creates starts with "cbnt-" and every address is in 198.18.0.0/24; whatever
an earlier, killed instance left behind is removed first, and everything is
removed at the end, also on failure. Only processes this test started (its
own process groups, and what is left in its own namespaces) are stopped.
Only one instance runs at a time (a lock file).

  multihost_test.py --bin-dir build/bin [--mpi openmpi|mpich] [--transport tcp]
                    [--mpi-interface CIDR|eth0|''] [--no-decoy] [--keep-logs]

MPICH: run it with --mpi-interface eth0 (UCX_NET_DEVICES). Note that UCX
sees the namespaces as one machine: with the default transport MPICH moves
the data between the "hosts" through shared memory (it passes even with
UCX_TLS=self,sm), not over the bridge. With --transport tcp (UCX_TLS=self,tcp)
the runs mostly hang in UCX's connection setup between namespaces, so that
is not what the ctest runs.
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netns_hosts import (Cluster, Failure, Network, check_reachable, checked_results,  # noqa: E402
                         log, run_test, stored_run)

NETWORK = Network("cbnt-", "198.18.0")
MPI_NETWORK = NETWORK.cidr
DECOY_PREFIX = "198.19.0"  # the decoy network, see --decoy
SIZES = "8,1K,64K,1M"


class Test(Cluster):
    def __init__(self, args, *cluster_args):
        super().__init__(*cluster_args)
        self.args = args

    def run(self, label, placement):
        mpi = self.args.mpi
        run = self.create_run("allreduce", "--ranks", "3", "--placement", placement, "--mpi", mpi,
                              "--transport", self.args.transport, "--check", "--sizes", SIZES,
                              "--iters", "20", "--warmup", "5",
                              *[f"--env={e}" for e in self.args.env],
                              "--timeout", self.args.run_timeout, "--label", f"test={label}")
        log(f"{label}: {run} created ({placement}, {mpi})")
        watched = self.cli("watch", run, timeout=240, check=False)
        shown = self.cli("show", run).stdout
        stored = stored_run(self.store, run)
        log(f"{label}: {run} {stored['state']}, launcher {stored['launcher']}, "
            f"placement {stored['placement']}, rank hosts {stored['rank_hosts']}\n{shown.rstrip()}")
        if watched.returncode != 0 or stored["state"] != "succeeded":
            raise Failure(f"{label} run {run} did not succeed (watch exit {watched.returncode}):\n"
                          f"{watched.stdout}{watched.stderr}\n{shown}")
        checked_results(self.cli, run, SIZES)
        hosts = stored["rank_hosts"]
        if len(hosts) != 3:
            raise Failure(f"{run}: rank hosts {hosts}, expected 3")
        if placement == "spread":
            if sorted(hosts) != sorted(self.net.host_names()):
                raise Failure(f"{run}: SPREAD ranks ran on {hosts}, not one per host")
            if sorted(h for _, h, _ in stored["placement"]) != sorted(self.net.host_names()):
                raise Failure(f"{run}: SPREAD placement {stored['placement']}")
            if not stored["launcher"].startswith("launchers/"):
                raise Failure(f"{run}: across hosts, launched by {stored['launcher']}, "
                              "not by the launcher")
        else:
            if len(set(hosts)) != 1 or len(stored["placement"]) != 1:
                raise Failure(f"{run}: PACK ranks ran on {hosts} ({stored['placement']})")
        return run

    def compare(self, first, second):
        out = self.cli("compare", first, second).stdout
        log(f"compare:\n{out.rstrip()}")
        lines = out.splitlines()
        if not any(l.startswith(f"# [0] {first}:") for l in lines) or \
           not any(l.startswith(f"# [1] {second}:") for l in lines):
            raise Failure(f"compare does not name both runs:\n{out}")
        header = next((l for l in lines if l.split()[:1] == ["operation"]), None)
        if header is None or "[1]/[0]" not in header.split():
            raise Failure(f"compare has no ratio column:\n{out}")
        column = header.split().index("[1]/[0]")
        rows = [l.split() for l in lines if l.split()[:1] == ["allreduce"]]
        if len(rows) != len(SIZES.split(",")):
            raise Failure(f"compare shows {len(rows)} sizes, expected {len(SIZES.split(','))}:\n{out}")
        for row in rows:
            if not re.fullmatch(r"\d+(\.\d+)?x", row[column]):
                raise Failure(f"compare row without a ratio: {row}")

    def main(self):
        port = self.timed("coordinator start", self.start_coordinator)
        self.timed("reachability", check_reachable, self.net, port)
        self.start_workers(mpi_interface=self.args.mpi_interface)
        self.timed("workers registered", self.wait_for_workers)
        log("workers ready:\n" + self.cli("workers").stdout.rstrip())
        spread = self.timed(f"SPREAD run ({self.args.mpi}, 3 hosts)", self.run, "spread", "spread")
        pack = self.timed(f"PACK run ({self.args.mpi}, 1 host)", self.run, "pack", "pack")
        self.timed("compare", self.compare, spread, pack)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True, help="folder with collbench, "
                        "collbench-coordinator, collbench-worker and the rank binaries")
    parser.add_argument("--mpi", choices=["openmpi", "mpich"], default="openmpi")
    parser.add_argument("--mpi-interface", default=MPI_NETWORK,
                        help=f"the workers' --mpi-interface: a CIDR (default {MPI_NETWORK}) or "
                        "'eth0' (each host's link to the bridge); '' for none")
    parser.add_argument("--transport", choices=["auto", "tcp"], default="auto",
                        help="the runs' --transport")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="passed to `collbench run --env` (UCX_, OMPI_MCA_, ... only)")
    parser.add_argument("--run-timeout", default="2m", help="each run's --timeout")
    parser.add_argument("--no-decoy", dest="decoy", action="store_false",
                        help="leave out the second, unreachable network in each host")
    parser.add_argument("--keep-logs", action="store_true", help="keep the logs also on success")
    args = parser.parse_args()
    net = Network(NETWORK.prefix, "198.18.0", DECOY_PREFIX if args.decoy else None)
    return run_test(net, f"multihost ({args.mpi})", args.bin_dir, Test.main,
                    make_cluster=lambda *a: Test(args, *a), keep_logs=args.keep_logs)


if __name__ == "__main__":
    sys.exit(main())
