#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Faults in network-namespace hosts (issue 12, scope 5).

The hosts are those of multihost_test.py (netns_hosts.py), on a network of
their own: names "cbft-*", addresses 198.18.1.0/24, the coordinator on the
bridge at 198.18.1.1 with --heartbeat-timeout 3. One fault per invocation
(--fault), each a ctest of its own:

  link-down         a 3-rank SPREAD allreduce (Open MPI, many iterations) runs
                    across the three hosts; the link of a host that is not the
                    launcher goes down (`ip link set cbft-hN down`, the bridge
                    end of its veth): the run must fail naming that worker
                    within 10 s; when the link is back up the worker must be
                    ready again, and a new SPREAD run over all three succeed.
  sigstop           the same run; the worker process of a non-launcher host
                    is stopped (SIGSTOP, by pid): it must be LOST (within the
                    heartbeat timeout + 2 s) and the run fail naming it within
                    10 s; after SIGCONT it must be ready again, and a new
                    SPREAD run succeed.
  coordinator-kill  100 small runs are queued through REST (three workers take
                    one at a time each), the coordinator is killed with
                    SIGKILL and restarted on the same store and port: all 100
                    runs must be listed, all must succeed
                    (docs/design/run-lifecycle.md#cancel-timeouts-and-restarts:
                    queued runs are re-queued, a run whose
                    launcher is alive is re-adopted), each must have been
                    launched exactly once (a wrapper of mpirun.openmpi in the
                    workers' PATH logs every launch) and have exactly its one
                    result, and a run finished before the kill keeps exactly
                    the result it had.
  disk-full         no hosts: the coordinator on 127.0.0.1 with its --store on
                    a 2 MiB tmpfs; a file takes the free space: CreateRun over
                    REST and gRPC must fail within 5 s with RESOURCE_EXHAUSTED
                    (HTTP 429) naming the store and the full disk, and so must
                    CancelRun of a queued run, which stays queued; reads must
                    still work, the coordinator must stay up, the store must
                    pass `PRAGMA integrity_check` while full and after, and
                    once the file is gone creates and the cancel must work.
                    The tmpfs is unmounted at the end, also on failure.

Every test prints its timings. Needs root and `ip netns` (exit 77 without);
everything it creates is removed at the end, also on failure, and
net.ipv4.ip_forward is put back. Only processes this test started are
stopped. One netns test at a time (the lock file of netns_hosts.py).

  fault_test.py --bin-dir build/bin --fault link-down|sigstop|coordinator-kill|disk-full
                [--keep-logs]
"""

import argparse
import collections
import errno
import http.client
import json
import os
import shutil
import signal
import sqlite3
import sys
import subprocess
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netns_hosts import (FINAL_STATES, RUN_STATES, Cluster, Failure, Network,  # noqa: E402
                         check_reachable, ip, log, query_store, run_test, sh, stored_run)

NETWORK = Network("cbft-", "198.18.1")
HEARTBEAT_TIMEOUT_S = 3
COORDINATOR_ARGS = ["--heartbeat-timeout", str(HEARTBEAT_TIMEOUT_S), "--create-rate", "off"]
FAIL_WITHIN_S = 10       # the bound for a run to fail naming the worker
LOST_WITHIN_S = HEARTBEAT_TIMEOUT_S + 2
REJOIN_WITHIN_S = 90
QUEUED_RUNS = 100
STORE_FS_BYTES = 2 * 1024 * 1024
# Long enough to be running when the fault comes (an 8-byte allreduce
# across the namespaces takes ~1-10 ms an iteration on a busy machine).
LONG_RUN = ["allreduce", "--ranks", "3", "--placement", "spread", "--mpi", "openmpi",
            "--sizes", "8,16,32,64", "--iters", "20000", "--warmup", "5", "--timeout", "10m"]
SHORT_RUN = ["allreduce", "--ranks", "3", "--placement", "spread", "--mpi", "openmpi",
             "--sizes", "8", "--iters", "5", "--warmup", "1", "--check", "--timeout", "2m"]


class FaultCluster(Cluster):

    # --- shared steps -----------------------------------------------------------

    def start(self, http=False, path_prefix=None):
        port = self.timed("coordinator start", self.start_coordinator, *COORDINATOR_ARGS,
                          http=http)
        self.timed("reachability", check_reachable, self.net, port)
        self.start_workers(mpi_interface=self.net.cidr, path_prefix=path_prefix)
        self.timed("workers registered", self.wait_for_workers)
        return port

    def start_long_run(self):
        """A SPREAD run across the three hosts, running; returns (run, a host
        that holds a rank but is not the launcher)."""
        run = self.create_run(*LONG_RUN, "--label", "fault=long")
        start = time.monotonic()
        stored = self.wait_for_run(run, {"running"} | FINAL_STATES, 90)
        if stored["state"] != "running":
            raise Failure(f"{run} is {stored['state']} before the fault: {stored['error']}")
        self.wait_for_ranks(60)
        time.sleep(1)  # the ranks are connected and iterating
        stored = stored_run(self.store, run)
        if stored["state"] != "running":
            raise Failure(f"{run} is {stored['state']} before the fault: {stored['error']}")
        self.record("long run started", time.monotonic() - start)
        workers = [w for w, _, _ in stored["placement"]]
        if sorted(workers) != sorted(f"workers/{h}" for h in self.net.host_names()):
            raise Failure(f"{run} placed on {workers}, not on the three hosts")
        victim = next(w for w in workers if w != stored["launcher"]).split("/")[-1]
        log(f"{run} running, launcher {stored['launcher']}; the fault hits {victim}")
        return run, victim

    def wait_for_ranks(self, timeout):
        """Waits until a collbench-rank process runs in each host."""
        deadline = time.monotonic() + timeout
        while True:
            missing = [ns for ns in self.net.host_names() if not ranks_in(ns)]
            if not missing:
                return
            if time.monotonic() > deadline:
                raise Failure(f"no collbench-rank running in {missing} after {timeout}s")
            time.sleep(0.2)

    def wait_for_no_ranks(self, timeout):
        """Seconds until no collbench-rank of the failed run is left in any
        host (the launcher's cancel and the Exec streams' ends kill them)."""
        start = time.monotonic()
        while True:
            left = [ns for ns in self.net.host_names() if ranks_in(ns)]
            if not left:
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise Failure(f"collbench-rank still running in {left} {timeout}s after the "
                              "worker came back")
            time.sleep(0.2)

    def expect_failed_naming(self, run, victim, since):
        """Waits for the run to end; it must be FAILED naming `victim` within
        FAIL_WITHIN_S of `since`. Returns the seconds it took."""
        stored = self.wait_for_run(run, FINAL_STATES, 60)
        took = time.monotonic() - since
        log(f"{run} {stored['state']} after {took:.1f}s: {stored['error']}")
        if stored["state"] != "failed":
            raise Failure(f"{run} ended {stored['state']}, not failed: {stored['error']}")
        if f"workers/{victim}" not in stored["error"]:
            raise Failure(f"{run} failed without naming workers/{victim}: {stored['error']!r}")
        if took > FAIL_WITHIN_S:
            raise Failure(f"{run} failed {took:.1f}s after the fault, more than {FAIL_WITHIN_S}s")
        return took

    def wait_for_worker_state(self, victim, state, since, timeout):
        """Seconds from `since` until `collbench workers` shows `state` for
        the victim."""
        while time.monotonic() - since < timeout:
            if self.worker_states().get(victim, ("",))[0] == state:
                return time.monotonic() - since
            time.sleep(0.2)
        raise Failure(f"{victim} not {state} within {timeout}s: {self.worker_states()}")

    def check_spread_run(self):
        """A short SPREAD run over the three hosts succeeds (all are back)."""
        run = self.create_run(*SHORT_RUN, "--label", "fault=after")
        stored = self.wait_for_run(run, FINAL_STATES, 180)
        if stored["state"] != "succeeded":
            raise Failure(f"the SPREAD run after the fault, {run}, {stored['state']}: "
                          f"{stored['error']}")
        log(f"{run} after the fault: succeeded on {stored['rank_hosts']}")

    # --- 1. link down -------------------------------------------------------------

    def link_down(self):
        self.start()
        run, victim = self.start_long_run()
        ip("link", "set", victim, "down")  # the bridge end of the victim's veth
        down_at = time.monotonic()
        try:
            self.record("run failed naming the worker", self.expect_failed_naming(run, victim,
                                                                                  down_at))
            self.record("worker lost", self.wait_for_worker_state(victim, "lost", down_at, 30))
        finally:
            ip("link", "set", victim, "up")
        up_at = time.monotonic()
        self.record("worker ready again after link up",
                    self.wait_for_worker_state(victim, "ready", up_at, REJOIN_WITHIN_S))
        self.wait_for_workers()
        self.record("no rank left after the worker came back", self.wait_for_no_ranks(30))
        self.timed("SPREAD run after the fault", self.check_spread_run)

    # --- 2. hung worker -------------------------------------------------------------

    def sigstop(self):
        self.start()
        run, victim = self.start_long_run()
        pid = self.processes.get(victim).pid
        os.kill(pid, signal.SIGSTOP)
        stopped_at = time.monotonic()
        log(f"SIGSTOP to {victim} (pid {pid})")
        try:
            lost = self.wait_for_worker_state(victim, "lost", stopped_at, 30)
            self.record("worker lost", lost)
            if lost > LOST_WITHIN_S:
                raise Failure(f"{victim} lost {lost:.1f}s after SIGSTOP, more than the heartbeat "
                              f"timeout + 2 s ({LOST_WITHIN_S}s)")
            self.record("run failed naming the worker",
                        self.expect_failed_naming(run, victim, stopped_at))
        finally:
            os.kill(pid, signal.SIGCONT)
        continued_at = time.monotonic()
        self.record("worker ready again after SIGCONT",
                    self.wait_for_worker_state(victim, "ready", continued_at, REJOIN_WITHIN_S))
        self.wait_for_workers()
        self.record("no rank left after the worker came back", self.wait_for_no_ranks(30))
        self.timed("SPREAD run after the fault", self.check_spread_run)

    # --- 3. coordinator killed with runs queued -------------------------------------

    def rest(self, method, path, body=None, timeout=15):
        """(HTTP status, parsed JSON or text) of one REST call."""
        host, port = self.http_address.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
        try:
            conn.request(method, path, body=None if body is None else json.dumps(body),
                         headers={"Content-Type": "application/json",
                                  "Authorization": "Bearer " + self.tokens["operator"]})
            response = conn.getresponse()
            text = response.read().decode()
            self.last_headers = {k.lower(): v for k, v in response.getheaders()}
        except OSError as e:
            raise Failure(f"{method} {path}: {e}")
        finally:
            conn.close()
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text

    def launch_wrapper(self):
        """A folder with an mpirun.openmpi that logs each launch's run (the
        launcher's COLLBENCH_RUN) and then execs the real one."""
        real = shutil.which("mpirun.openmpi")
        if real is None:
            raise Failure("mpirun.openmpi not found")
        folder = os.path.join(self.workdir, "wrap")
        os.makedirs(folder)
        self.launch_log = os.path.join(self.workdir, "launches.txt")
        wrapper = os.path.join(folder, "mpirun.openmpi")
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\necho "$COLLBENCH_RUN $(hostname)" >> {self.launch_log}\n'
                    f'exec {real} "$@"\n')
        os.chmod(wrapper, 0o755)
        return folder

    def queue_runs(self, count):
        names = []
        for i in range(count):
            spec = {"operation": "allreduce", "ranks": 1, "sizesBytes": ["8"], "iters": 5,
                    "warmup": 1, "labels": {"fault": "coordinator-kill", "i": str(i)}}
            status, body = self.rest("POST", "/v1/runs",
                                     {"spec": spec, "requestId": f"cbft-queued-{i}"})
            if status != 200:
                raise Failure(f"CreateRun {i}: HTTP {status}: {body}")
            names.append(body["name"])
        return names

    def states(self):
        return collections.Counter(
            {state: n for state, n in query_store(
                self.store, "SELECT state, COUNT(*) FROM runs GROUP BY state")})

    def results_by_run(self):
        """{run: [(sequence, data)]} of every stored result."""
        out = collections.defaultdict(list)
        for run, sequence, data in query_store(
                self.store, "SELECT run, sequence, data FROM results ORDER BY run, sequence"):
            out[run].append((sequence, data))
        return out

    def listed_runs(self):
        """Every run name GET /v1/runs lists, following the pages."""
        names, token = [], ""
        while True:
            status, body = self.rest("GET", f"/v1/runs?page_size=1000&page_token={token}")
            if status != 200:
                raise Failure(f"GET /v1/runs: HTTP {status}: {body}")
            names += [r["name"] for r in body.get("runs", [])]
            token = body.get("nextPageToken", "")
            if not token:
                return names

    def coordinator_kill(self):
        port = self.start(http=True, path_prefix=self.launch_wrapper())
        runs = self.timed(f"{QUEUED_RUNS} runs queued over REST", self.queue_runs, QUEUED_RUNS)
        # Kill when some runs have finished and others are in flight, so each
        # kind is there: finished, running (re-adopted), queued (re-queued).
        deadline = time.monotonic() + 120
        while True:
            counts = self.states()
            if counts[4] >= 3 and counts[2] + counts[3] >= 1:
                break
            if time.monotonic() > deadline:
                raise Failure(f"no runs finished and in flight at once: {dict(counts)}")
            time.sleep(0.05)
        coordinator = self.processes.get("coordinator")
        os.kill(coordinator.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        self.processes.forget(coordinator)
        by_state = self.states()  # the truth after kill -9: every commit was fsynced
        log(f"coordinator killed; the store holds runs by state "
            f"{ {RUN_STATES[s]: n for s, n in by_state.items()} }")
        finished_before = {
            name for (name,) in query_store(self.store, "SELECT name FROM runs WHERE state = 4")}
        results_before = self.results_by_run()
        if by_state[1] < QUEUED_RUNS // 2 or by_state[2] + by_state[3] < 1 or by_state[4] < 1:
            raise Failure(f"at the kill: {by_state[1]} runs queued (want {QUEUED_RUNS // 2} or "
                          f"more), {by_state[2] + by_state[3]} in flight and {by_state[4]} "
                          "succeeded (want 1 or more each)")

        self.start_coordinator(*COORDINATOR_ARGS, grpc_port=port, http=True)
        self.record("coordinator restarted", time.monotonic() - killed_at)
        self.record("workers back", self.wait_for_workers(states=("ready", "busy")))
        drain_start = time.monotonic()
        deadline = drain_start + 600
        while True:
            self.processes.check_alive()
            counts = self.states()
            if sum(n for s, n in counts.items() if s in (4, 5, 6)) == QUEUED_RUNS:
                break
            if time.monotonic() > deadline:
                raise Failure(f"the queue did not drain: runs by state {dict(counts)}")
            time.sleep(1)
        self.record("queue drained after the restart", time.monotonic() - drain_start)

        listed = self.listed_runs()
        if sorted(listed) != sorted(runs):
            missing = sorted(set(runs) - set(listed))
            raise Failure(f"GET /v1/runs lists {len(listed)} runs, not the {len(runs)} queued "
                          f"(missing {missing[:5]})")
        failed = query_store(self.store, "SELECT name, state, error FROM runs WHERE state != 4")
        if failed:
            raise Failure(f"{len(failed)} runs did not succeed, e.g. {failed[:3]}")
        launches = collections.Counter()
        with open(self.launch_log) as f:
            for line in f:
                launches[line.split()[0]] += 1
        twice = {run: n for run, n in launches.items() if n > 1}
        never = [run for run in runs if launches[run] == 0]
        if twice or never:
            raise Failure(f"runs launched more than once: {twice}; never launched: {never}")
        results = self.results_by_run()
        for run in runs:
            if [seq for seq, _ in results[run]] != [0]:
                raise Failure(f"{run} has results {[seq for seq, _ in results[run]]}, not [0]")
        for run in finished_before:
            if results[run] != results_before[run]:
                raise Failure(f"{run} finished before the kill, but its results changed")
        log(f"{len(runs)} runs listed, all succeeded, each launched once with one result; "
            f"{len(finished_before)} had finished before the kill and kept their results")

    # --- 4. the store's disk full -----------------------------------------------------

    def disk_full(self):
        mount = os.path.join(self.workdir, "store-fs")
        os.makedirs(mount)
        sh(["mount", "-t", "tmpfs", "-o", f"size={STORE_FS_BYTES}", "tmpfs", mount])
        self.store = os.path.join(mount, "store.db")
        self.start_coordinator("--create-rate", "off", ip_address="127.0.0.1", http=True)
        spec = {"operation": "allreduce", "ranks": 1, "sizesBytes": ["8"], "iters": 5}
        status, body = self.rest("POST", "/v1/runs", {"spec": spec})
        if status != 200:
            raise Failure(f"CreateRun before the disk is full: HTTP {status}: {body}")
        before = body["name"]
        self.create_run("allreduce", "--ranks", "1", "--sizes", "8")

        filler = os.path.join(mount, "filler")
        self.timed("disk filled", fill, filler)
        log(f"free on the store's file system: {shutil.disk_usage(mount).free} bytes")

        start = time.monotonic()
        status, body = self.rest("POST", "/v1/runs", {"spec": spec})
        self.record("REST CreateRun answered on a full disk", time.monotonic() - start)
        log(f"REST CreateRun on a full disk: HTTP {status}: {body}")
        message = body.get("message", "") if isinstance(body, dict) else str(body)
        if status != 429 or body.get("status") != "RESOURCE_EXHAUSTED":
            raise Failure(f"REST CreateRun on a full disk: HTTP {status} {body}, not 429 "
                          "RESOURCE_EXHAUSTED")
        expect_names_full_store(message, self.store, "REST CreateRun")
        if "retry-after" in self.last_headers:  # a full disk is no rate limit with a known end
            raise Failure(f"REST CreateRun on a full disk has Retry-After: {self.last_headers}")
        start = time.monotonic()
        code, message = grpc_create_run(self.address, self.tokens["operator"])
        self.record("gRPC CreateRun answered on a full disk", time.monotonic() - start)
        log(f"gRPC CreateRun on a full disk: grpc-status {code}: {message}")
        if code != GRPC_RESOURCE_EXHAUSTED:
            raise Failure(f"gRPC CreateRun on a full disk: grpc-status {code} ({message!r}), not "
                          f"{GRPC_RESOURCE_EXHAUSTED} (RESOURCE_EXHAUSTED)")
        expect_names_full_store(message, self.store, "gRPC CreateRun")
        result = self.cli("run", "allreduce", "--ranks", "1", "--sizes", "8", check=False,
                          timeout=15)
        answer = (result.stdout + result.stderr).strip()
        log(f"collbench run on a full disk: exit {result.returncode}: {answer}")
        if result.returncode != 1:
            raise Failure(f"collbench run on a full disk: exit {result.returncode}, not 1")
        expect_names_full_store(answer, self.store, "collbench run")
        if time.monotonic() - start > 5:
            raise Failure("CreateRun took more than 5 s to answer on a full disk")

        status, body = self.rest("POST", f"/v1/{before}:cancel")
        log(f"REST CancelRun of a queued run on a full disk: HTTP {status}: {body}")
        if status != 429 or body.get("status") != "RESOURCE_EXHAUSTED":
            raise Failure(f"REST CancelRun on a full disk: HTTP {status} {body}, not 429 "
                          "RESOURCE_EXHAUSTED")
        expect_names_full_store(body.get("message", ""), self.store, "REST CancelRun")

        status, body = self.rest("GET", "/v1/runs")
        listed = [r["name"] for r in body.get("runs", [])] if status == 200 else []
        if before not in listed or len(listed) != 2:
            raise Failure(f"GET /v1/runs on a full disk: HTTP {status}: {body}")
        status, body = self.rest("GET", f"/v1/{before}")
        if status != 200 or body.get("name") != before or body.get("state") != "QUEUED":
            raise Failure(f"GET /v1/{before} on a full disk (the refused cancel leaves it "
                          f"queued): HTTP {status}: {body}")
        for path in ("/healthz", "/metrics"):
            status, _ = self.rest("GET", path)
            if status != 200:
                raise Failure(f"{path} on a full disk: HTTP {status}")
        self.cli("runs")
        self.processes.check_alive()
        log("reads work on a full disk (GET /v1/runs, GET a run, /healthz, /metrics, "
            "collbench runs)")
        expect_intact(self.store, "while the disk is full")

        os.unlink(filler)
        start = time.monotonic()
        status, body = self.rest("POST", "/v1/runs", {"spec": spec})
        if status != 200:
            raise Failure(f"CreateRun after the space returned: HTTP {status}: {body}")
        self.create_run("allreduce", "--ranks", "1", "--sizes", "8")
        status, body = self.rest("POST", f"/v1/{before}:cancel")
        if status != 200 or body.get("state") != "CANCELLED":
            raise Failure(f"CancelRun after the space returned: HTTP {status}: {body}")
        self.record("creates and a cancel after the space returned", time.monotonic() - start)
        self.processes.stop()
        expect_intact(self.store, "after the coordinator stopped")
        stored = query_store(self.store, "SELECT COUNT(*) FROM runs")[0][0]
        if stored != 4:
            raise Failure(f"the store holds {stored} runs, not the 4 created (2 before and 2 "
                          "after the disk was full); a refused create left something behind")
        log("4 runs stored: the refused creates left nothing")


GRPC_RESOURCE_EXHAUSTED = 8


def grpc_create_run(address, token):
    """(grpc-status, grpc-message) of a Coordinator.CreateRun call for a
    1-rank allreduce of 8 bytes, made with curl over HTTP/2 (the gRPC wire
    form by hand: no gRPC module for Python here)."""
    spec = (b"\x0a\x09allreduce"   # operation = 1
            b"\x22\x01\x08"        # sizes_bytes = 4, packed: [8]
            b"\xf0\x01\x01")       # ranks = 30: 1
    request = b"\x0a" + bytes([len(spec)]) + spec  # CreateRunRequest.spec = 1
    frame = b"\x00" + len(request).to_bytes(4, "big") + request
    # The bearer token from a private file, not on curl's command line.
    fd, header_file = tempfile.mkstemp(prefix="collbench-auth-")
    with os.fdopen(fd, "w") as f:
        f.write(f"authorization: Bearer {token}\n")
    result = subprocess.run(
        ["curl", "-sS", "--max-time", "15", "--http2-prior-knowledge", "-X", "POST",
         "-H", "content-type: application/grpc", "-H", "te: trailers",
         "-H", f"@{header_file}", "--data-binary", "@-",
         "-D", "-", "-o", "/dev/null", f"http://{address}/collbench.v1.Coordinator/CreateRun"],
        input=frame, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.unlink(header_file)
    headers = {}
    for line in result.stdout.decode(errors="replace").splitlines():
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if result.returncode != 0 or "grpc-status" not in headers:
        raise Failure(f"gRPC CreateRun with curl: exit {result.returncode}, "
                      f"{result.stdout!r} {result.stderr!r}")
    return int(headers["grpc-status"]), urllib.parse.unquote(headers.get("grpc-message", ""))


def ranks_in(ns):
    """Whether a collbench-rank process runs in namespace `ns`."""
    _, out = ip("netns", "pids", ns, check=False, quiet=True)
    for pid in out.split():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"collbench-rank" in f.read().split(b"\0")[0]:
                    return True
        except OSError:
            pass
    return False


def fill(path):
    """Writes `path` until the file system is full."""
    chunk = b"\0" * 65536
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                f.write(chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                break
        for size in (4096, 512, 1):  # the last partial pages
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise


def expect_names_full_store(message, store, what):
    if store not in message or "full" not in message:
        raise Failure(f"{what} on a full disk does not name the store {store} and the full disk: "
                      f"{message!r}")


def expect_intact(store, when):
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        check = db.execute("PRAGMA integrity_check").fetchall()
    finally:
        db.close()
    if check != [("ok",)]:
        raise Failure(f"PRAGMA integrity_check {when}: {check}")
    log(f"PRAGMA integrity_check {when}: ok")


def unmount_store(cluster):
    mount = os.path.join(cluster.workdir, "store-fs")
    if os.path.ismount(mount):
        sh(["umount", mount])
        log(f"unmounted {mount}")


FAULTS = {
    "link-down": FaultCluster.link_down,
    "sigstop": FaultCluster.sigstop,
    "coordinator-kill": FaultCluster.coordinator_kill,
    "disk-full": FaultCluster.disk_full,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True, help="folder with collbench, "
                        "collbench-coordinator, collbench-worker and collbench-rank")
    parser.add_argument("--fault", required=True, choices=sorted(FAULTS))
    parser.add_argument("--keep-logs", action="store_true", help="keep the logs also on success")
    args = parser.parse_args()
    return run_test(NETWORK, f"fault {args.fault}", args.bin_dir, FAULTS[args.fault],
                    make_cluster=FaultCluster, keep_logs=args.keep_logs,
                    needs_network=args.fault != "disk-full", cleanups=[unmount_store])


if __name__ == "__main__":
    sys.exit(main())
