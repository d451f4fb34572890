#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Service integration tests: a real collbench-coordinator, real
collbench-worker processes and the collbench CLI, each case on its own port,
store and temporary folders.

    service_test.py --bin-dir build/bin --case lifecycle [--case cancel ...]
    service_test.py --bin-dir build/bin            # every case
    service_test.py --list

Each case prints one line (PASS/FAIL, seconds). The test process makes itself
a child subreaper, so any process a worker (or `collbench local`) leaves
behind is re-parented here instead of to init: the leak checks see it, and the
teardown kills it. Everything started is stopped in `finally`, also on
failure. Exit code: 0 when every case passed, 1 otherwise, 2 on bad usage.
"""

import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

PR_SET_CHILD_SUBREAPER = 36
VERBOSE = False

class Failure(Exception):
    """A failed expectation."""


def log(message):
    if VERBOSE:
        sys.stderr.write("  [%s] %s\n" % (time.strftime("%H:%M:%S"), message))
        sys.stderr.flush()


def expect(condition, message):
    if not condition:
        raise Failure(message)


def poll(what, predicate, timeout, interval=0.2):
    """Calls `predicate` until it returns something truthy; returns that, or
    raises Failure naming `what` once `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise Failure("timed out after %.0fs waiting for %s" % (timeout, what))
        time.sleep(interval)


# ---------------------------------------------------------------------------
# /proc


class ProcInfo:
    __slots__ = ("pid", "comm", "state", "ppid", "start", "cmdline")

    def __init__(self, pid, comm, state, ppid, start):
        self.pid, self.comm, self.state, self.ppid, self.start = pid, comm, state, ppid, start
        self.cmdline = None

    def describe(self):
        if self.cmdline is None:
            try:
                with open("/proc/%d/cmdline" % self.pid, "rb") as f:
                    self.cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                self.cmdline = ""
        return "%d %s (%s) %s" % (self.pid, self.comm, self.state, self.cmdline[:160])


def read_proc(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read().decode(errors="replace")
    except OSError:
        return None
    open_paren, close_paren = data.find("("), data.rfind(")")
    fields = data[close_paren + 2:].split()
    return ProcInfo(pid, data[open_paren + 1:close_paren], fields[0], int(fields[1]),
                    int(fields[19]))


def all_procs():
    procs = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = read_proc(int(entry))
            if info is not None:
                procs[info.pid] = info
    return procs


def descendants(roots, procs=None):
    """Live (non-zombie) processes below any pid in `roots`, roots excluded."""
    procs = all_procs() if procs is None else procs
    children = {}
    for info in procs.values():
        children.setdefault(info.ppid, []).append(info)
    out, stack = [], list(roots)
    while stack:
        for child in children.get(stack.pop(), []):
            stack.append(child.pid)
            if child.state != "Z":
                out.append(child)
    return out


def still_alive(snapshot):
    """Those of `snapshot` (ProcInfo list) that still run (same pid and start
    time, not a zombie)."""
    alive = []
    for old in snapshot:
        now = read_proc(old.pid)
        if now is not None and now.start == old.start and now.state != "Z":
            alive.append(now)
    return alive


def describe_all(procs):
    return "; ".join(p.describe() for p in procs) or "none"


# ---------------------------------------------------------------------------
# Processes this test starts


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env():
    env = dict(os.environ)
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


class Cluster:
    """A coordinator and workers for one case, in a temporary folder."""

    def __init__(self, bin_dir, case):
        self.bin_dir = bin_dir
        self.dir = tempfile.mkdtemp(prefix="collbench-service-%s-" % case)
        self.store = os.path.join(self.dir, "store.db")
        self.port = None
        self.coordinator = None
        self.coordinator_starts = 0
        self.workers = {}  # name -> Popen
        self.launchers = {}  # name -> Popen (collbench-launcher)
        self.popens = []   # everything started, for the teardown

    def binary(self, name):
        return os.path.join(self.bin_dir, name)

    def _spawn(self, argv, log_name, env=None):
        log_path = os.path.join(self.dir, log_name)
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env={**child_env(), **(env or {})},
                                    start_new_session=True)  # its own group
        proc.log_path = log_path
        self.popens.append(proc)
        log("started %s (pid %d)" % (" ".join(argv), proc.pid))
        return proc

    # coordinator

    def start_coordinator(self, heartbeat_timeout=6, args=()):
        """Starts the coordinator; the first start picks a free port (and
        tries again if another process took it meanwhile), later starts reuse
        it, like a restarted service."""
        attempts = 5 if self.port is None else 1
        for _ in range(attempts):
            if self.coordinator_starts == 0 and self.port is None:
                port = free_port()
            else:
                port = self.port
            self.coordinator_starts += 1
            # These cases start no launcher (unless one asks): a run across
            # workers is launched by its rank-0 worker.
            launch = [] if "--worker-launch" in args else ["--worker-launch", "fallback"]
            proc = self._spawn([self.binary("collbench-coordinator"), "--grpc-listen",
                                "127.0.0.1:%d" % port, "--store", self.store,
                                "--heartbeat-timeout", str(heartbeat_timeout)] + launch
                               + list(args),
                               "coordinator-%d.log" % self.coordinator_starts)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and proc.poll() is None:
                if self._port_open(port):
                    self.port, self.coordinator = port, proc
                    return proc
                time.sleep(0.05)
            if proc.poll() is None:
                self.stop(proc)
            log("coordinator on port %d did not come up: %s" % (port, self.tail(proc)))
            if self.port is not None:
                break
        raise Failure("the coordinator did not start: %s" % self.tail(proc))

    @staticmethod
    def _port_open(port):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", port)) == 0

    def kill_coordinator(self):
        """kill -9, no chance to clean up."""
        os.killpg(self.coordinator.pid, signal.SIGKILL)
        self.coordinator.wait(timeout=10)
        self.coordinator = None

    def stop_coordinator(self):
        """SIGTERM, as an operator stops it."""
        proc, self.coordinator = self.coordinator, None
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            raise Failure("the coordinator did not stop within 20s of SIGTERM")
        expect(code == 0, "the coordinator exited with %s on SIGTERM: %s" % (code, self.tail(proc)))

    # workers

    def start_worker(self, name, slots, env=None, args=()):
        work_dir = os.path.join(self.dir, name)
        os.makedirs(work_dir, exist_ok=True)
        self.workers[name] = self._spawn(
            [self.binary("collbench-worker"), "--coordinator", "127.0.0.1:%d" % self.port,
             "--listen", "127.0.0.1:0", "--name", name, "--slots", str(slots),
             "--work-dir", work_dir,
             # MPI's own TCP between daemons stays on loopback, as in
             # `collbench local`; otherwise Open MPI picks the host's network
             # address and a daemon sometimes cannot call mpirun back.
             "--mpi-interface", "127.0.0.0/8"] + list(args), "%s.log" % name, env)
        return self.workers[name]

    def start_launcher(self, name="launcher"):
        """collbench-launcher (docs/design/security.md#the-launcher), which
        starts the runs that span workers; it hosts no ranks."""
        work_dir = os.path.join(self.dir, name)
        os.makedirs(work_dir, exist_ok=True)
        self.launchers[name] = self._spawn(
            [self.binary("collbench-launcher"), "--coordinator", "127.0.0.1:%d" % self.port,
             "--listen", "127.0.0.1:0", "--name", name, "--work-dir", work_dir,
             "--mpi-interface", "127.0.0.0/8"], "%s.log" % name)
        return self.launchers[name]

    def start_workers(self, count, slots, prefix="w"):
        names = ["%s%d" % (prefix, i + 1) for i in range(count)]
        for name in names:
            self.start_worker(name, slots)
        self.wait_workers_ready(names)
        return names

    def worker_pids(self):
        return [p.pid for p in self.workers.values() if p.poll() is None]

    def wait_workers_ready(self, names, timeout=30):
        def ready():
            for name, proc in self.workers.items():
                expect(proc.poll() is None,
                       "worker %s exited with %s: %s" % (name, proc.returncode, self.tail(proc)))
            rows = {w["name"]: w for w in self.list_workers()}
            return all(rows.get("workers/" + n, {}).get("state") == "ready" for n in names)
        poll("workers %s to be ready" % ", ".join(names), ready, timeout, 0.25)

    # the CLI

    def cli(self, *args, timeout=60, expect_code=0):
        argv = [self.binary("collbench"), "--coordinator", "127.0.0.1:%d" % self.port]
        argv += [str(a) for a in args]
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=timeout, env=child_env())
        except subprocess.TimeoutExpired:
            raise Failure("`%s` did not finish within %ss" % (" ".join(argv[3:]), timeout))
        log("collbench %s -> %d" % (" ".join(argv[3:]), done.returncode))
        if expect_code is not None and done.returncode != expect_code:
            raise Failure("`collbench %s` exited %d, expected %d\nstdout: %s\nstderr: %s" % (
                " ".join(argv[3:]), done.returncode, expect_code, done.stdout[-2000:],
                done.stderr[-2000:]))
        return done

    def list_workers(self):
        return parse_workers(self.cli("workers").stdout)

    def list_runs(self):
        return parse_runs(self.cli("runs", "--limit", "1000").stdout)

    def run_state(self, run):
        """(state, error) from `collbench show RUN`'s header."""
        return parse_show_header(self.cli("show", run).stdout)

    def results(self, run):
        out = self.cli("show", run, "--output", "jsonl").stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def create_run(self, *args):
        out = self.cli("run", *args).stdout
        match = re.match(r"^(runs/\S+): (\w+)", out)
        expect(match, "unexpected `collbench run` output: %r" % out)
        return match.group(1)

    def wait_state(self, run, states, timeout):
        def reached():
            state, _ = self.run_state(run)
            return state if state in states else None
        return poll("%s to be %s" % (run, "/".join(states)), reached, timeout, 0.25)

    # teardown

    def tail(self, proc, lines=15):
        try:
            with open(proc.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:]).strip() or "(empty log)"
        except (OSError, AttributeError):
            return "(no log)"

    def stop(self, proc, grace=10):
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left in its group
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()

    def teardown(self, keep_dir=False):
        # Below the workers first (what they started may sit in groups of its
        # own), then the workers and the coordinator, then anything that was
        # re-parented to this test meanwhile.
        below = descendants([p.pid for p in self.popens if p.poll() is None])
        for proc in reversed(self.popens):
            self.stop(proc)
        leftovers = still_alive(below) + descendants([os.getpid()])
        for info in leftovers:
            try:
                os.kill(info.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        reap_orphans()
        if keep_dir:
            sys.stderr.write("  logs kept in %s\n" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def reap_orphans():
    """Waits for the dead processes re-parented to this test (subreaper)."""
    for info in all_procs().values():
        if info.ppid == os.getpid() and info.state == "Z":
            try:
                os.waitpid(info.pid, os.WNOHANG)
            except ChildProcessError:
                pass


# ---------------------------------------------------------------------------
# CLI output


WORKER_ROW = re.compile(r"^(workers/\S+)\s+(\S+)\s+(\S+)\s+(\S*)\s+(\d+)\s+(\d+)\s+"
                        r"([\d.]+)G\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")
RUN_ROW = re.compile(r"^(runs/\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(\d+)/(\d+)\s+"
                     r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|-)\s+(.*)$")


def parse_workers(text):
    lines = text.splitlines()
    expect(lines and lines[0].split()[:2] == ["WORKER", "STATE"],
           "`collbench workers` has no header: %r" % text)
    rows = []
    for line in lines[1:]:
        match = WORKER_ROW.match(line)
        expect(match, "unparsable `collbench workers` row: %r" % line)
        g = match.groups()
        rows.append({"name": g[0], "state": g[1], "hostname": g[2], "host_id": g[3],
                     "slots": int(g[4]), "cpus": int(g[5]), "memory_gib": float(g[6]),
                     "gpus": int(g[7]), "container": g[8], "ipc": g[9], "run": g[10]})
    return rows


def parse_runs(text):
    lines = text.splitlines()
    expect(lines and lines[0].split()[:2] == ["RUN", "STATE"],
           "`collbench runs` has no header: %r" % text)
    rows = {}
    for line in lines[1:]:
        match = RUN_ROW.match(line)
        expect(match, "unparsable `collbench runs` row: %r" % line)
        g = match.groups()
        rows[g[0]] = {"name": g[0], "state": g[1], "operation": g[2], "ranks": int(g[4]),
                      "placement": g[5], "sizes_done": int(g[6]), "sizes_total": int(g[7]),
                      "error": g[9].strip()}
    return rows


def parse_show_header(text):
    lines = text.splitlines()
    match = re.match(r"^# (runs/\S+): .*, (\w+)$", lines[0] if lines else "")
    expect(match, "unexpected `collbench show` header: %r" % text[:300])
    error = ""
    for line in lines[1:]:
        if line.startswith("# error: "):
            error = line[len("# error: "):]
    return match.group(2), error


def parse_jsonl(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def check_results(results, sizes, what):
    """Every size once, in sequence, checked, wrong == 0."""
    expect(len(results) == len(sizes),
           "%s: %d results, expected %d: %s" % (what, len(results), len(sizes), results))
    got = sorted(int(r["bytes"]) for r in results)
    expect(got == sorted(sizes), "%s: sizes %s, expected %s" % (what, got, sorted(sizes)))
    for r in results:
        expect(r.get("checked") is True, "%s: a result was not checked: %s" % (what, r))
        expect(int(r.get("wrong", 0)) == 0, "%s: wrong elements: %s" % (what, r))
        expect(float(r.get("avg_s", 0)) > 0, "%s: no time measured: %s" % (what, r))
    sequences = sorted(int(r.get("sequence", 0)) for r in results)
    expect(sequences == list(range(len(results))),
           "%s: sequences %s, expected 0..%d" % (what, sequences, len(results) - 1))


def run_processes(cluster):
    """What runs below the workers (ranks, daemons, launchers, shims)."""
    return descendants(cluster.worker_pids())


def ranks_running(cluster, count):
    ranks = [p for p in run_processes(cluster) if p.comm.startswith("collbench-rank")]
    return len(ranks) >= count


def expect_no_run_processes(cluster, timeout, extra=()):
    """No process below any worker (nor any of `extra` still alive) within
    `timeout` seconds."""
    def clean():
        return not run_processes(cluster) and not still_alive(extra)
    try:
        poll("the run's processes to end", clean, timeout, 0.2)
    except Failure:
        raise Failure("processes of the run are left %ss later: below the workers: %s; "
                      "others: %s" % (timeout, describe_all(run_processes(cluster)),
                                      describe_all(still_alive(extra))))


# Sizes 8 B .. 4 KiB, 10 of them.
SIZES_10 = [8 << i for i in range(10)]


def sizes_flag(sizes):
    return ",".join(str(s) for s in sizes)


# ---------------------------------------------------------------------------
# Cases


def case_lifecycle(c):
    c.start_coordinator()
    # `collbench health`: the coordinator's gRPC health service answers
    # SERVING (exit 0); nothing listening is an error naming the address
    # (exit 1); a bad flag names the flag (exit 2).
    health = c.cli("health")
    expect(health.stdout.strip() == "SERVING", "collbench health: %r" % health.stdout)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = "127.0.0.1:%d" % s.getsockname()[1]
    down = c.cli("health", closed, "--timeout", "2s", expect_code=1)
    expect(closed in down.stderr, "health of a closed port: %r" % down.stderr)
    bad = c.cli("health", "--timeout", "soon", expect_code=2)
    expect("--timeout" in bad.stderr, "health --timeout soon: %r" % bad.stderr)
    # Three slots each: the pack run's 3 ranks fill one worker (see
    # case_pack_across_workers for ranks packed over several).
    names = c.start_workers(3, slots=3)
    workers = c.list_workers()
    expect(sorted(w["name"] for w in workers) == ["workers/" + n for n in names],
           "`collbench workers` lists %s" % [w["name"] for w in workers])
    for w in workers:
        expect(w["state"] == "ready", "%s is %s, not ready" % (w["name"], w["state"]))
        expect(w["hostname"] and w["hostname"] != "-", "%s has no hostname" % w["name"])
        expect(w["cpus"] >= 1, "%s reports %d cpus" % (w["name"], w["cpus"]))
        expect(w["memory_gib"] > 0, "%s reports no memory" % w["name"])
        expect(w["slots"] == 3, "%s has %d slots, expected 3" % (w["name"], w["slots"]))
        expect(w["run"] == "-", "%s is busy with %s" % (w["name"], w["run"]))
    expect(workers[0]["hostname"] == socket.gethostname(),
           "hostname %r, expected %r" % (workers[0]["hostname"], socket.gethostname()))

    sizes = [8, 1024, 65536]
    for placement in ("pack", "spread"):
        done = c.cli("run", "allreduce", "--ranks", 3, "--placement", placement, "--sizes",
                     sizes_flag(sizes), "-n", 20, "--check", "--wait", "--output", "jsonl",
                     timeout=90)
        check_results(parse_jsonl(done.stdout), sizes, "%s run" % placement)
        runs = c.list_runs()
        expect(all(r["state"] == "succeeded" for r in runs.values()),
               "runs not all succeeded: %s" % runs)
    expect(sorted(r["placement"] for r in runs.values()) == ["pack", "spread"],
           "placements listed: %s" % runs)

    # A long run holds every worker of this host; a second one must queue.
    first = c.create_run("allreduce", "--ranks", 3, "--placement", "spread", "--sizes", "1M",
                         "-n", 250, "-w", 2, "--check")
    second = c.create_run("allreduce", "--ranks", 2, "--placement", "pack", "--sizes", "8,1K",
                          "-n", 20, "--check")
    seen_running = False
    while True:
        runs = c.list_runs()
        a, b = runs[first]["state"], runs[second]["state"]
        if a in ("succeeded", "failed", "cancelled"):
            break
        expect(b == "queued", "%s is %s while %s is %s" % (second, b, first, a))
        seen_running |= a in ("scheduled", "running")
        if seen_running and a == "running":
            break
        time.sleep(0.2)
    expect(seen_running, "%s ended (%s) before it was seen running" % (first, a))
    # Both busy workers name the first run meanwhile.
    busy = [w for w in c.list_workers() if w["run"] == first]
    expect(len(busy) == 3, "workers holding %s: %s" % (first, busy))
    state = c.wait_state(first, ("succeeded", "failed", "cancelled"), 60)
    expect(state == "succeeded", "%s ended %s: %s" % (first, state, c.run_state(first)))
    check_results(c.results(first), [1 << 20], first)
    state = c.wait_state(second, ("succeeded", "failed", "cancelled"), 60)
    expect(state == "succeeded", "%s ended %s: %s" % (second, state, c.run_state(second)))
    check_results(c.results(second), [8, 1024], second)
    expect(all(w["run"] == "-" and w["state"] == "ready" for w in c.list_workers()),
           "workers not free after the runs: %s" % c.list_workers())
    expect_no_run_processes(c, 10)


def case_cancel(c):
    c.start_coordinator()
    c.start_workers(3, slots=1)
    run = c.create_run("allreduce", "--ranks", 3, "--placement", "spread", "--sizes", "1M",
                       "-n", 100000, "-w", 1)
    c.wait_state(run, ("running",), 30)
    poll("3 ranks of %s to run" % run, lambda: ranks_running(c, 3), 30)
    snapshot = run_processes(c)
    log("below the workers: %s" % describe_all(snapshot))
    done = c.cli("cancel", run)
    expect(run in done.stdout, "cancel printed %r" % done.stdout)
    state = c.wait_state(run, ("cancelled", "failed", "succeeded"), 20)
    expect(state == "cancelled", "%s ended %s, not cancelled" % (run, state))
    # The worker gives MPI 3 s after SIGTERM before SIGKILL.
    expect_no_run_processes(c, 10, extra=snapshot)
    # The workers are free again and take the next run.
    for name, proc in c.workers.items():
        expect(proc.poll() is None, "worker %s exited: %s" % (name, c.tail(proc)))
    c.wait_workers_ready(list(c.workers))
    done = c.cli("run", "allreduce", "--ranks", 3, "--placement", "spread", "--sizes", "8",
                 "-n", 10, "--check", "--wait", "--output", "jsonl", timeout=60)
    check_results(parse_jsonl(done.stdout), [8], "the run after the cancel")


def case_durability(c):
    c.start_coordinator()
    c.start_workers(2, slots=1)
    # About 1-2 s per size here: long enough to kill the coordinator in the
    # middle and to have results produced while it is away.
    run = c.create_run("allreduce", "--ranks", 2, "--placement", "spread", "--sizes",
                       sizes_flag(SIZES_10), "-n", 6000, "-w", 10, "--check")
    seen = poll("2 results of %s" % run,
                lambda: (lambda r: r if r["sizes_done"] >= 2 else None)(c.list_runs()[run]),
                60, 0.2)
    expect(seen["sizes_done"] < seen["sizes_total"] - 2,
           "%s went too fast to test a restart in its middle: %s" % (run, seen))
    log("killing the coordinator at %d/%d sizes" % (seen["sizes_done"], seen["sizes_total"]))
    c.kill_coordinator()
    time.sleep(1.0)  # results pile up in the launcher's spool meanwhile
    c.start_coordinator()
    state = c.wait_state(run, ("succeeded", "failed", "cancelled"), 60)
    expect(state == "succeeded", "%s ended %s after the restart: %s" % (run, state,
                                                                      c.run_state(run)))
    results = c.results(run)
    keys = [(int(r["bytes"]), r["dtype"]) for r in results]
    expect(len(keys) == len(set(keys)), "duplicate results: %s" % sorted(keys))
    check_results(results, SIZES_10, run)
    expect(c.list_runs()[run]["sizes_done"] == len(SIZES_10),
           "sizes_done after the restart: %s" % c.list_runs()[run])
    c.wait_workers_ready(list(c.workers))


def case_fault(c):
    c.start_coordinator()
    names = c.start_workers(3, slots=1)
    run = c.create_run("allreduce", "--ranks", 3, "--placement", "spread", "--sizes", "1M",
                       "-n", 100000, "-w", 1)
    c.wait_state(run, ("running",), 30)
    poll("3 ranks of %s to run" % run, lambda: ranks_running(c, 3), 30)
    # The launcher is the worker that runs mpirun; the peers run daemons.
    procs = all_procs()
    launchers = [n for n in names
                 if any(p.comm.startswith(("mpirun", "orterun"))
                        for p in descendants([c.workers[n].pid], procs))]
    expect(len(launchers) == 1, "launcher workers found: %s" % launchers)
    launcher = launchers[0]
    peer = sorted(n for n in names if n != launcher)[0]
    snapshot = descendants(c.worker_pids(), procs)
    log("launcher %s, killing peer %s; below the workers: %s" % (launcher, peer,
                                                                 describe_all(snapshot)))
    killed_at = time.monotonic()
    os.kill(c.workers[peer].pid, signal.SIGKILL)
    c.workers[peer].wait(timeout=10)
    del c.workers[peer]  # the rest of the checks are about the others

    def ended():
        state, error = c.run_state(run)
        return (state, error) if state in ("failed", "cancelled", "succeeded") else None
    state, error = poll("%s to fail" % run, ended, 10, 0.2)
    took = time.monotonic() - killed_at
    log("%s: %s after %.1fs: %s" % (run, state, took, error))
    expect(state == "failed", "%s ended %s, not failed: %s" % (run, state, error))
    expect(re.search(r"\b%s\b" % re.escape(peer), error),
           "the error does not name the lost worker %s: %r" % (peer, error))
    # Nothing of the run is left on the launcher or the surviving peer, and
    # the daemon and rank the killed worker had also go.
    expect_no_run_processes(c, 10, extra=snapshot)
    for name in (launcher,) + tuple(n for n in names if n not in (launcher, peer)):
        expect(c.workers[name].poll() is None, "worker %s exited" % name)
    rows = {w["name"]: w for w in c.list_workers()}
    expect(rows["workers/" + peer]["state"] in ("lost", "disconnected", "offline"),
           "the killed worker is listed as %s" % rows["workers/" + peer]["state"])


VALIDATION_CASES = [
    # (run arguments, what the message must name)
    (["-b", "4K", "-e", "1K"], r"max_bytes|min_bytes|--max-bytes|-e\b"),
    (["--sizes", "0"], r"sizes"),
    (["--sizes", "8,abc"], r"sizes"),
    (["--ranks", "64"], r"spec\.ranks|--ranks|ranks"),
    (["--ranks", "0"], r"--ranks"),
    (["--placement", "diagonal"], r"--placement"),
    (["--transport", "ib"], r"--transport"),
    (["--mpi", "lam"], r"--mpi"),
    (["--env", "LD_PRELOAD=x"], r"spec\.env"),
    (["--env", "NCCL_DEBUG"], r"--env"),
    (["-n", "-5"], r"iters|-n\b"),
    (["-w", "-7"], r"warmup|-w\b"),
    (["--operation-is", "x"], r"operation-is"),
    (["bcast", "--root", "9", "--ranks", "3"], r"root"),
    (["frobnicate"], r"operation|frobnicate"),
    (["--dtype", "float16"], r"dtype"),
    (["--dtype", "int7"], r"dtype"),
    (["--redop", "avg"], r"redop"),
    (["latency", "--ranks", "3"], r"ranks"),
    # w3 reports another host: its IPC namespace is not w1's, so SHM over
    # all three is refused, naming it.
    (["--transport", "shm", "--placement", "spread", "--ranks", "3"], r"transport.*workers/w3"),
    (["--label", "Team=x"], r"label"),
    (["--memory", "nowhere"], r"memory"),
    (["--backend", "smoke-signals"], r"backend"),
    (["-f", "1"], r"factor|-f\b"),
    (["--time-budget", "0s"], r"time.budget"),
]


def case_validation(c):
    c.start_coordinator()
    c.start_worker("w1", 1)
    c.start_worker("w2", 1)
    c.start_worker("w3", 1, env={"COLLBENCH_HOST_ID": "another-host"})
    c.wait_workers_ready(["w1", "w2", "w3"])
    # One run in the list first, so "unchanged" compares something.
    done = c.cli("run", "allreduce", "--ranks", 2, "--placement", "pack", "--sizes", "8",
                 "-n", 5, "--check", "--wait", "--output", "jsonl", timeout=60)
    check_results(parse_jsonl(done.stdout), [8], "the valid run")
    before = c.cli("runs", "--limit", "1000").stdout
    expect(len(parse_runs(before)) == 1, "runs before: %s" % before)
    problems = []
    for args, field in VALIDATION_CASES:
        argv = list(args)
        if not argv or argv[0].startswith("-"):
            argv = ["allreduce"] + argv
        if "--ranks" not in argv:
            argv += ["--ranks", "2"]
        if "--placement" not in argv:
            argv += ["--placement", "pack"]
        done = c.cli("run", *argv, expect_code=None)
        lines = done.stderr.strip().splitlines()
        if done.returncode != 2:
            problems.append("`run %s` exited %d (stdout %r, stderr %r)" % (
                " ".join(argv), done.returncode, done.stdout.strip(), done.stderr.strip()))
        elif len(lines) != 1 or not lines[0].startswith("collbench: "):
            problems.append("`run %s`: not one 'collbench: ' line on stderr: %r" % (
                " ".join(argv), done.stderr))
        elif not re.search(field, lines[0]):
            problems.append("`run %s`: message does not name %s: %r" % (
                " ".join(argv), field, lines[0]))
        elif done.stdout.strip():
            problems.append("`run %s` printed on stdout: %r" % (" ".join(argv), done.stdout))
        else:
            log("ok: run %s -> %s" % (" ".join(argv), lines[0]))
    expect(not problems, "%d of %d malformed requests misjudged:\n  %s" % (
        len(problems), len(VALIDATION_CASES), "\n  ".join(problems)))
    after = c.cli("runs", "--limit", "1000").stdout
    expect(after == before, "the run list changed:\nbefore:\n%s\nafter:\n%s" % (before, after))
    queued = c.cli("runs", "--state", "queued").stdout
    expect(parse_runs(queued) == {}, "queued runs: %s" % queued)
    expect(not run_processes(c), "processes below the workers: %s" %
           describe_all(run_processes(c)))


def case_restart_listing(c):
    c.start_coordinator()
    c.start_workers(2, slots=1)
    done = c.cli("run", "allreduce", "--ranks", 2, "--placement", "spread", "--sizes",
                 "8,1K,64K", "-n", 20, "--check", "--wait", "--output", "jsonl", timeout=60)
    ok_run_results = parse_jsonl(done.stdout)
    check_results(ok_run_results, [8, 1024, 65536], "the first run")
    ok_run = c.list_runs()
    expect(len(ok_run) == 1, "runs: %s" % ok_run)
    ok_run = next(iter(ok_run))
    bcast = c.cli("run", "bcast", "--ranks", 2, "--placement", "pack", "--sizes", "8,4K",
                  "-n", 20, "--check", "--root", 1, "--wait", timeout=60)
    expect("succeeded" in bcast.stdout.splitlines()[0], "bcast run: %s" % bcast.stdout)
    cancelled = c.create_run("allreduce", "--ranks", 2, "--placement", "spread", "--sizes",
                             "1M", "-n", 100000, "-w", 1)
    c.wait_state(cancelled, ("running",), 30)
    c.cli("cancel", cancelled)
    expect(c.wait_state(cancelled, ("cancelled", "failed", "succeeded"), 20) == "cancelled",
           "%s did not end cancelled" % cancelled)
    before = c.list_runs()
    expect(len(before) == 3, "runs before the restart: %s" % before)
    show_before = {name: c.cli("show", name).stdout for name in before}
    jsonl_before = {name: parse_jsonl(c.cli("show", name, "--output", "jsonl").stdout)
                    for name in before}

    c.stop_coordinator()
    c.start_coordinator()
    after = c.list_runs()  # right away, before the workers are back
    expect(set(after) == set(before), "runs after the restart: %s, before: %s" % (
        sorted(after), sorted(before)))
    for name, row in before.items():
        for key in ("state", "operation", "ranks", "placement", "sizes_done", "sizes_total"):
            expect(after[name][key] == row[key], "%s: %s was %r, now %r" % (
                name, key, row[key], after[name][key]))
    expect(after[ok_run]["state"] == "succeeded" and after[cancelled]["state"] == "cancelled",
           "states after the restart: %s" % after)
    for name in before:
        expect(c.cli("show", name).stdout == show_before[name],
               "`show %s` changed:\n%s\nnow:\n%s" % (name, show_before[name],
                                                    c.cli("show", name).stdout))
        expect(parse_jsonl(c.cli("show", name, "--output", "jsonl").stdout) == jsonl_before[name],
               "`show %s --output jsonl` changed" % name)
    check_results(c.results(ok_run), [8, 1024, 65536], ok_run + " after the restart")
    # The workers come back by themselves and the service goes on.
    c.wait_workers_ready(list(c.workers), timeout=30)
    done = c.cli("run", "allreduce", "--ranks", 2, "--placement", "spread", "--sizes", "8",
                 "-n", 10, "--check", "--wait", "--output", "jsonl", timeout=60)
    check_results(parse_jsonl(done.stdout), [8], "a run after the restart")
    expect(len(c.list_runs()) == 4, "runs: %s" % c.list_runs())


def case_local(c):
    reap_orphans()
    before = descendants([os.getpid()])
    expect(not before, "processes below this test before the case: %s" % describe_all(before))
    # As the README and docs/reference/cli.md give it: no --wait, yet the results are printed.
    argv = [c.binary("collbench"), "local", "--workers", "2", "run", "allreduce", "--ranks", "2",
            "--placement", "spread", "--check"]
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=child_env(),
                            start_new_session=True)
    c.popens.append(proc)
    seen = set()

    # While it runs, note every worker, rank and daemon it starts.
    def note():
        for p in descendants([proc.pid]):
            seen.add((p.pid, p.start, p.comm))
        return proc.poll() is not None
    try:
        poll("`collbench local` to finish", note, 240, 0.1)
    except Failure:
        raise Failure("`collbench local` did not finish within 240s")
    out, err = proc.communicate()
    log("collbench local took %.1fs" % (time.monotonic() - started))
    expect(proc.returncode == 0, "`collbench local` exited %d\nstdout: %s\nstderr: %s" % (
        proc.returncode, out[-2000:], err[-2000:]))
    header = out.splitlines()[0] if out else ""
    expect(re.match(r"^# runs/\S+: allreduce .*, succeeded$", header),
           "unexpected output: %s" % out[:500])
    header = next((line.split() for line in out.splitlines() if line.split()[:1] == ["bytes"]),
                  [])
    expect("wrong" in header, "no result header: %s" % out)
    rows = [line.split() for line in out.splitlines() if re.match(r"^\s*\d+\s", line)]
    expect(len(rows) >= 2, "result rows: %s" % out)
    expect(all(r[header.index("wrong")] == "0" for r in rows), "wrong elements reported: %s" % out)
    names = {comm for _, _, comm in seen}
    expect("collbench-worke" in names or "collbench-worker" in names,
           "no worker was seen under `collbench local`: %s" % sorted(names))

    # Nothing it started is left: below this (subreaper) test nothing runs
    # any more, and none of the processes seen meanwhile is alive.
    def clean():
        reap_orphans()
        left = descendants([os.getpid()])
        alive = [(pid, comm) for pid, start, comm in seen
                 if (lambda i: i is not None and i.start == start and i.state != "Z")(
                     read_proc(pid))]
        return None if left or alive else True
    try:
        poll("the processes of `collbench local` to end", clean, 10, 0.1)
    except Failure:
        raise Failure("left behind by `collbench local`: %s" % describe_all(
            descendants([os.getpid()])))


def case_pack_across_workers(c):
    """PACK over several workers of one host: 3 ranks on 2-slot workers put
    ranks 0-1 on one worker and rank 2 on the next. To Open MPI these are two
    nodes with one host name: without a segment folder per worker, rank 0 and
    rank 2 (each local rank 0 of its node) share one shared-memory segment
    name and crash."""
    c.start_coordinator()
    c.start_workers(3, slots=2)
    mpis = ["openmpi"]
    if os.access(c.binary("collbench-rank-mpich"), os.X_OK):
        mpis.insert(0, "mpich")
    for mpi in mpis:
        done = c.cli("run", "allreduce", "--ranks", 3, "--placement", "pack", "--mpi", mpi,
                     "--sizes", "8,1K", "-n", 20, "--check", "--wait", "--output", "jsonl",
                     timeout=90, expect_code=None)
        expect(done.returncode == 0, "pack run over 2 workers with %s exited %d: %s" % (
            mpi, done.returncode, done.stderr.strip()[-600:]))
        check_results(parse_jsonl(done.stdout), [8, 1024], "pack run with %s" % mpi)


def case_sync_modes(c):
    """The iteration synchronization through the gRPC API and the CLI: a run
    asked for back to back keeps it in its stored spec and every result,
    the default run says barrier, `show` says which, and `compare` of the
    two says loudly that they differ (on stderr too for CSV)."""
    c.start_coordinator()
    c.start_workers(2, slots=1)
    common = ["bcast", "--ranks", 2, "--placement", "spread", "--sizes", "8,1K", "-n", 50,
              "--check"]
    barrier = c.create_run(*common)
    none = c.create_run(*common, "--sync", "none")
    for run, mode in ((barrier, "barrier"), (none, "none")):
        c.wait_state(run, ["succeeded"], 60)
        results = c.results(run)
        check_results(results, [8, 1024], "%s run" % mode)
        synced = [r.get("sync") for r in results]
        expect(synced == [mode] * 2, "%s run results say %s" % (mode, synced))
        expect(all(len(r.get("ranks", [])) == 2 for r in results),
               "%s run results without both ranks: %s" % (mode, results))
        shown = c.cli("show", run).stdout
        expect("sync=%s" % mode in shown.splitlines()[0] and "# sync %s:" % mode in shown,
               "`show` of the %s run does not say so:\n%s" % (mode, shown))
        expect("slowest" in shown and "vs_med" in shown, "`show` has no slowest-rank column")
    compared = c.cli("compare", barrier, none).stdout
    expect("WARNING: these runs differ in iteration synchronization ([0] barrier, [1] none)"
           in compared, "`compare` of barrier and none runs does not say so:\n%s" % compared)
    csv = c.cli("compare", barrier, none, "--output", "csv")
    expect("differ in iteration synchronization" in csv.stderr,
           "`compare --output csv` says nothing on stderr: %r" % csv.stderr)
    same = c.cli("compare", barrier, barrier).stdout
    expect("WARNING" not in same, "`compare` warns about two runs of one mode:\n%s" % same)
    refused = c.cli("run", "latency", "--ranks", 2, "--placement", "spread", "--sync", "barrier",
                    expect_code=2)
    expect("spec.sync" in refused.stderr, "latency --sync barrier: %r" % refused.stderr)


def case_progress_all(c):
    """A run of every (dtype, redop) combination reports its progress against
    what the engine runs: sizes x combinations, and ends at exactly 100%."""
    c.start_coordinator()
    c.start_workers(1, slots=2)
    sizes = [8, 1024]
    run = c.create_run("allreduce", "--ranks", 2, "--sizes", sizes_flag(sizes), "-n", 20,
                       "--dtype", "all", "--redop", "all", "--check")
    state = c.wait_state(run, ("succeeded", "failed", "cancelled"), 90)
    expect(state == "succeeded", "%s ended %s: %s" % (run, state, c.run_state(run)))
    # mpi carries int8, int32, int64, float32, float64; four operators each.
    combinations = 5 * 4
    results = c.results(run)
    expect(len(results) == len(sizes) * combinations,
           "%d results, expected %d" % (len(results), len(sizes) * combinations))
    listed = c.list_runs()[run]
    expect(listed["sizes_total"] == len(sizes) * combinations,
           "sizes_total %d, expected sizes x combinations = %d" %
           (listed["sizes_total"], len(sizes) * combinations))
    expect(listed["sizes_done"] == listed["sizes_total"],
           "progress %d/%d, expected exactly 100%%" % (listed["sizes_done"],
                                                       listed["sizes_total"]))


def case_replaced_worker(c):
    """A worker's identity is its state folder (on Kubernetes, a hostPath on
    its node): a process that replaces a node's worker (a rollout, an
    eviction) with the same folder comes back under the node's name, also
    after the join token was rotated; one under that name with another
    node's folder is refused, and the real one keeps its entry. Every
    registration needs the current join token, a known name its own secret
    too."""
    def tokens(join):
        path = os.path.join(c.dir, "tokens")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write("worker %s\n" % join)
        return path

    def worker(name, node, join):
        state = os.path.join(c.dir, "nodes", node)  # the node's folder
        return c.start_worker(name, 1, env={"COLLBENCH_JOIN_TOKEN": join},
                              args=["--state-dir", state])

    def state_of(name):
        return {w["name"]: w["state"] for w in c.list_workers()}.get("workers/" + name)

    c.start_coordinator(args=["--tokens", tokens("join-one")])
    worker("node1", "node1", "join-one")
    worker("node2", "node2", "join-one")
    c.wait_workers_ready(["node1", "node2"])
    # The join token rotated as docs/operations/kubernetes.md says: the
    # coordinator restarted with the new one, then every worker replaced.
    c.stop_coordinator()
    c.start_coordinator(args=["--tokens", tokens("join-two")])
    for name in ("node1", "node2"):
        c.stop(c.workers.pop(name))
        worker(name, name, "join-two")
    c.wait_workers_ready(["node1", "node2"])
    # A replaced process still needs a current join token: its folder alone
    # does not admit it.
    c.stop(c.workers.pop("node1"))
    worker("node1", "node1", "join-one")
    time.sleep(2)
    expect(state_of("node1") == "lost", "node1 with the old join token: %s" % state_of("node1"))
    c.stop(c.workers.pop("node1"))
    worker("node1", "node1", "join-two")
    c.wait_workers_ready(["node1"])
    # node1's name from node2's folder, with the current join token: refused.
    impostor = c._spawn([c.binary("collbench-worker"), "--coordinator", "127.0.0.1:%d" % c.port,
                         "--listen", "127.0.0.1:0", "--name", "node1", "--slots", "1",
                         "--work-dir", os.path.join(c.dir, "impostor"), "--state-dir",
                         os.path.join(c.dir, "nodes", "node2")],
                        "impostor.log", {"COLLBENCH_JOIN_TOKEN": "join-two"})

    def refused():
        with open(impostor.log_path, errors="replace") as f:
            return "known worker" in f.read()
    poll("the impostor's refusal", refused, 30, 0.25)
    c.stop(impostor)
    expect(state_of("node1") == "ready", "node1 after the impostor: %s" % state_of("node1"))
    # A new node needs the current token.
    worker("node3", "node3", "join-one")
    time.sleep(2)
    expect(state_of("node3") is None, "node3 registered with the old join token")
    c.stop(c.workers.pop("node3"))
    worker("node3", "node3", "join-two")
    c.wait_workers_ready(["node3"])


CASES = {
    "lifecycle": case_lifecycle,
    "progress_all": case_progress_all,
    "sync_modes": case_sync_modes,
    "cancel": case_cancel,
    "durability": case_durability,
    "fault": case_fault,
    "validation": case_validation,
    "restart_listing": case_restart_listing,
    "local": case_local,
    "pack_across_workers": case_pack_across_workers,
    "replaced_worker": case_replaced_worker,
}
# Cases run only when named.
KNOWN_FAILING = set()


def run_case(name, bin_dir, keep_logs, cases=None, make_cluster=None):
    """Runs one case on a fresh cluster, prints PASS or FAIL (with the tail
    of every process's log) and tears the cluster down. Other test drivers
    pass their own cases and cluster class."""
    cases = CASES if cases is None else cases
    cluster = (make_cluster or Cluster)(bin_dir, name)
    started = time.monotonic()
    ok = False
    try:
        cases[name](cluster)
        ok = True
    except Failure as e:
        message = str(e)
    except Exception:  # a bug in the test itself, or an unexpected error
        message = traceback.format_exc()
    finally:
        failed_logs = []
        if not ok:
            for proc in cluster.popens:
                if hasattr(proc, "log_path"):
                    failed_logs.append("--- %s\n%s" % (os.path.basename(proc.log_path),
                                                       cluster.tail(proc, 25)))
        cluster.teardown(keep_dir=keep_logs and not ok)
    took = time.monotonic() - started
    if ok:
        print("PASS %-16s %6.1fs" % (name, took), flush=True)
    else:
        print("FAIL %-16s %6.1fs  %s" % (name, took, message), flush=True)
        for text in failed_logs:
            print(text, flush=True)
    return ok


def prepare_driver(prog, bin_dir, binaries):
    """What every driver of these clusters does before its cases: checks that
    `binaries` are in `bin_dir`, makes this process the subreaper of what it
    starts (so leak checks see re-parented processes) and lets ctest's
    timeout (SIGTERM) run the teardown. Returns an exit code to stop with,
    or None."""
    for binary in binaries:
        if not os.access(os.path.join(bin_dir, binary), os.X_OK):
            sys.stderr.write("%s: %s not found in %s\n" % (prog, binary, bin_dir))
            return 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.stderr.write("%s: cannot become a child subreaper; leak checks will miss "
                         "re-parented processes\n" % prog)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    return None


def case_main(description, cases, make_cluster=None, prog="service_test",
              binaries=("collbench", "collbench-coordinator", "collbench-worker",
                        "collbench-rank"), known_failing=(), skip=None):
    """The command line of a driver of cluster cases: --case, --repeat,
    --list, --keep-logs, -v. `skip` returns why the cases cannot run here
    (exit 77), or None."""
    global VERBOSE
    parser = argparse.ArgumentParser(description=description.split("\n\n")[0])
    parser.add_argument("--bin-dir", help="folder with %s, ..." % ", ".join(binaries[:2]))
    parser.add_argument("--case", action="append", choices=sorted(cases),
                        help="a case to run (repeatable; default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="run each case this many times")
    parser.add_argument("--list", action="store_true", help="print the case names")
    parser.add_argument("--keep-logs", action="store_true", help="keep a failed case's folder")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if args.list:
        print("\n".join(cases))
        return 0
    if not args.bin_dir:
        parser.error("--bin-dir is required")
    why = skip() if skip else None
    if why:
        sys.stderr.write("%s: %s; skipped\n" % (prog, why))
        return 77
    VERBOSE = args.verbose
    bin_dir = os.path.abspath(args.bin_dir)
    stop = prepare_driver(prog, bin_dir, binaries)
    if stop is not None:
        return stop
    failed = 0
    for _ in range(args.repeat):
        for name in args.case or [n for n in cases if n not in known_failing]:
            failed += not run_case(name, bin_dir, args.keep_logs, cases, make_cluster)
    return 1 if failed else 0


def main():
    return case_main(__doc__, CASES, known_failing=KNOWN_FAILING)


if __name__ == "__main__":
    sys.exit(main())
