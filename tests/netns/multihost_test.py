#!/usr/bin/env python3
"""Multi-host launch through network namespaces (DESIGN §3, Launch).

Three "hosts" are network namespaces on one bridge, each with its own host
name (a UTS namespace), its own address 198.18.0.1x/24 on "eth0" and its own
host id. Each also has a decoy network, 198.19.0.1x/24 on a link that leads
nowhere, as a container host with a second network has: MPI must be kept
off it, which is what the workers' --mpi-interface is for (without it Open
MPI's daemons try to call mpirun back there and the run hangs). One
collbench-worker runs in each host, listening on and advertising its 198.18
address; the coordinator runs in the root namespace on the bridge address
198.18.0.1. The test then, for one MPI library (--mpi):

  1. a 3-rank SPREAD allreduce with --check: rank 0's worker runs mpirun /
     mpiexec, the daemons on the other two hosts start through the launch
     shim and their workers' Exec service; every size must report wrong = 0
     and the three ranks must have run on the three host names;
  2. a 3-rank PACK allreduce with --check (all ranks on one worker);
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
import fcntl
import glob
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

SKIP = 77
PREFIX = "cbnt-"
BRIDGE = "cbnt-br0"
COORDINATOR_IP = "198.18.0.1"
PREFIX_LEN = 24
HOSTS = [("cbnt-h1", "198.18.0.11"), ("cbnt-h2", "198.18.0.12"), ("cbnt-h3", "198.18.0.13")]
AGENT_PORT = 7070          # each namespace has its own port space
MPI_NETWORK = "198.18.0.0/24"
DECOY_PREFIX = "198.19.0"  # the decoy network, see --decoy
LOCK_FILE = "/tmp/collbench-netns-test.lock"
SIZES = "8,1K,64K,1M"

RUN_STATES = {0: "unspecified", 1: "queued", 2: "scheduled", 3: "running", 4: "succeeded",
              5: "failed", 6: "cancelled"}


class Skip(Exception):
    pass


class Failure(Exception):
    pass


def log(message):
    print(f"[netns {time.strftime('%H:%M:%S')}] {message}", flush=True)


def sh(argv, check=True, timeout=30, quiet=False):
    """Runs a short command; returns (rc, stdout+stderr)."""
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            timeout=timeout)
    if check and result.returncode != 0:
        raise Failure(f"{' '.join(argv)} exited {result.returncode}: {result.stdout.strip()}")
    if not quiet and result.returncode != 0:
        log(f"(ignored) {' '.join(argv)}: {result.stdout.strip()}")
    return result.returncode, result.stdout


def ip(*args, check=True, quiet=False):
    return sh(["ip", *args], check=check, quiet=quiet)


def in_ns(ns, *argv, check=True):
    return sh(["ip", "netns", "exec", ns, *argv], check=check)


# --- namespaces and links ---------------------------------------------------

def our_namespaces():
    _, out = ip("netns", "list", check=False, quiet=True)
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    return [n for n in names if n.startswith(PREFIX)]


def our_links():
    _, out = ip("-o", "link", "show", check=False, quiet=True)
    links = []
    for line in out.splitlines():
        m = re.match(r"\d+:\s+([^:@\s]+)", line)
        if m and m.group(1).startswith(PREFIX):
            links.append(m.group(1))
    return links


def kill_pids(pids, why):
    """SIGTERM, then SIGKILL what is left, of pids this test started."""
    pids = [p for p in pids if p != os.getpid()]
    if not pids:
        return
    log(f"stopping {len(pids)} process(es) {why}: {pids}")
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.time() + 5
        while time.time() < deadline and any(os.path.exists(f"/proc/{p}") for p in pids):
            time.sleep(0.1)
        pids = [p for p in pids if os.path.exists(f"/proc/{p}")]
        if not pids:
            return


def remove_network():
    """Removes every namespace and link named with PREFIX, and what still runs
    in those namespaces (only this test creates them)."""
    for ns in our_namespaces():
        _, out = ip("netns", "pids", ns, check=False, quiet=True)
        kill_pids([int(p) for p in out.split() if p.isdigit()], f"left in {ns}")
        ip("netns", "del", ns, check=False)
    for link in our_links():
        ip("link", "del", link, check=False, quiet=True)  # a veth's peer goes with it
    for path in glob.glob(f"/tmp/ompi.{PREFIX}*"):   # Open MPI session dirs of our host names
        shutil.rmtree(path, ignore_errors=True)


def create_network(decoy):
    ip("link", "add", BRIDGE, "type", "bridge")
    ip("addr", "add", f"{COORDINATOR_IP}/{PREFIX_LEN}", "dev", BRIDGE)
    ip("link", "set", BRIDGE, "up")
    for ns, address in HOSTS:
        outside, inside = ns, f"{ns}-p"
        ip("netns", "add", ns)
        ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        ip("link", "set", inside, "netns", ns)
        ip("link", "set", outside, "master", BRIDGE)
        ip("link", "set", outside, "up")
        ip("-n", ns, "link", "set", "lo", "up")
        ip("-n", ns, "link", "set", inside, "name", "eth0")
        ip("-n", ns, "addr", "add", f"{address}/{PREFIX_LEN}", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        if decoy:  # a second network that leads nowhere: 198.19.0.x/24 on a veth
            ip("-n", ns, "link", "add", "decoy0", "type", "veth", "peer", "name", "decoy1")
            ip("-n", ns, "link", "set", "decoy1", "up")
            ip("-n", ns, "addr", "add", f"{DECOY_PREFIX}.{address.rsplit('.', 1)[1]}/{PREFIX_LEN}",
               "dev", "decoy0")
            ip("-n", ns, "link", "set", "decoy0", "up")


def check_reachable(port):
    """Every host reaches the coordinator's port and every other host's address."""
    probe = ("import socket,sys\n"
             "for a in sys.argv[2:]:\n"
             "  s=socket.create_connection((a,int(sys.argv[1])),timeout=5); s.close()\n")
    for ns, _ in HOSTS:
        deadline = time.time() + 10
        while True:
            rc, out = sh(["ip", "netns", "exec", ns, sys.executable, "-c", probe, str(port),
                          COORDINATOR_IP], check=False, quiet=True)
            if rc == 0:
                break
            if time.time() > deadline:
                raise Failure(f"{ns} cannot reach the coordinator at {COORDINATOR_IP}:{port}: "
                              f"{out.strip()}")
            time.sleep(0.2)


def precheck():
    if os.geteuid() != 0:
        raise Skip("needs root (network namespaces)")
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            raise Skip(f"'{tool}' not found")
    probe = f"{PREFIX}probe"
    rc, out = ip("netns", "add", probe, check=False, quiet=True)
    if rc != 0:
        raise Skip(f"'ip netns add' is not permitted here: {out.strip()}")
    try:
        rc, out = sh(["ip", "netns", "exec", probe, "unshare", "--uts", "true"], check=False,
                     quiet=True)
        if rc != 0:
            raise Skip(f"'unshare --uts' is not permitted here: {out.strip()}")
    finally:
        ip("netns", "del", probe, check=False, quiet=True)


# --- processes ----------------------------------------------------------------

class Processes:
    """Long-running processes, each the leader of a process group of its own."""

    def __init__(self):
        self.procs = []  # (name, Popen, log path)

    def start(self, name, argv, log_path, env=None):
        out = open(log_path, "w")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True)
        out.close()
        self.procs.append((name, proc, log_path))
        return proc

    def check_alive(self):
        for name, proc, log_path in self.procs:
            if proc.poll() is not None:
                raise Failure(f"{name} exited with {proc.returncode}; see {log_path}")

    def stop(self):
        # SIGTERM lets a worker end its runs (mpirun, daemons, ranks) first.
        for _, proc, _ in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.time() + 15
        for name, proc, _ in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                log(f"{name} ignored SIGTERM; killing its process group")
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # whatever of its group is left
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        self.procs = []


# --- the store ------------------------------------------------------------------

def proto_fields(data):
    """The top-level fields of a serialized protobuf message: {number: [values]}
    (varints as int, length-delimited as bytes)."""
    fields, i = {}, 0

    def varint():
        nonlocal i
        value = shift = 0
        while True:
            b = data[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return value

    while i < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            value = varint()
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 2:
            n = varint()
            value, i = data[i:i + n], i + n
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        fields.setdefault(number, []).append(value)
    return fields


def stored_run(store, run):
    """State, rank host names and placement (worker, host id, slots) of a run,
    read from the coordinator's SQLite store (collbench.v1.Run in runs.data)."""
    db = sqlite3.connect(store, timeout=10)
    try:
        row = db.execute("SELECT data FROM runs WHERE name = ?", (run,)).fetchone()
    finally:
        db.close()
    if row is None:
        raise Failure(f"{run} is not in the store {store}")
    fields = proto_fields(row[0])
    placement = []
    for raw in fields.get(8, []):
        host = proto_fields(raw)
        placement.append((host.get(1, [b""])[0].decode(), host.get(2, [b""])[0].decode(),
                          host.get(3, [0])[0]))
    return {
        "state": RUN_STATES.get(fields.get(3, [0])[0], "?"),
        "rank_hosts": [h.decode() for h in fields.get(16, [])],
        "placement": placement,
        "launcher": fields.get(9, [b""])[0].decode(),
    }


# --- the test -------------------------------------------------------------------

class Test:
    def __init__(self, args, workdir):
        self.args = args
        self.bin = os.path.abspath(args.bin_dir)
        self.workdir = workdir
        self.store = os.path.join(workdir, "store.db")
        self.processes = Processes()
        self.address = None
        self.timings = []

    def cli(self, *argv, timeout=60, check=True):
        cmd = [os.path.join(self.bin, "collbench"), "--coordinator", self.address, *argv]
        try:
            result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Failure(f"collbench {' '.join(argv)} did not finish within {timeout}s")
        if check and result.returncode != 0:
            raise Failure(f"collbench {' '.join(argv)} exited {result.returncode}:\n"
                          f"{result.stdout}{result.stderr}")
        return result

    def timed(self, what, fn, *a):
        start = time.monotonic()
        value = fn(*a)
        self.timings.append((what, time.monotonic() - start))
        log(f"{what}: {self.timings[-1][1]:.1f}s")
        return value

    def start_coordinator(self):
        log_path = os.path.join(self.workdir, "coordinator.log")
        self.processes.start("coordinator", [
            os.path.join(self.bin, "collbench-coordinator"), "--grpc-listen", f"{COORDINATOR_IP}:0",
            "--store", self.store], log_path)
        deadline = time.time() + 30
        while time.time() < deadline:
            self.processes.check_alive()
            with open(log_path) as f:
                m = re.search(r"serving gRPC on port (\d+)", f.read())
            if m:
                self.address = f"{COORDINATOR_IP}:{m.group(1)}"
                log(f"coordinator on {self.address}")
                return int(m.group(1))
            time.sleep(0.1)
        raise Failure(f"the coordinator did not start; see {log_path}")

    def start_workers(self):
        for ns, address in HOSTS:
            env = dict(os.environ, COLLBENCH_HOST_ID=ns)
            # ip netns exec and unshare exec in place, and so does sh: the
            # Popen pid is the worker's and leads its process group.
            argv = ["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c",
                    'hostname "$0" && exec "$@"', ns,
                    os.path.join(self.bin, "collbench-worker"),
                    "--coordinator", self.address, "--name", ns,
                    "--listen", f"{address}:{AGENT_PORT}", "--advertise", f"{address}:{AGENT_PORT}",
                    "--slots", "3", "--work-dir", os.path.join(self.workdir, ns)]
            if self.args.mpi_interface:
                argv += ["--mpi-interface", self.args.mpi_interface]
            self.processes.start(ns, argv, os.path.join(self.workdir, f"{ns}.log"), env=env)

    def wait_for_workers(self):
        deadline = time.time() + 60
        names = {ns for ns, _ in HOSTS}
        out = ""
        while time.time() < deadline:
            self.processes.check_alive()
            out = self.cli("workers", check=False).stdout
            ready = set()
            for line in out.splitlines()[1:]:
                cols = line.split()
                # WORKER STATE HOSTNAME HOST-ID ...: each its own host name and host id
                if len(cols) >= 4 and cols[1] == "ready":
                    name = cols[0].split("/")[-1]
                    if name in names and cols[2] == name and cols[3] == name:
                        ready.add(name)
            if ready == names:
                log("workers ready:\n" + out.rstrip())
                return
            time.sleep(0.3)
        raise Failure(f"the three workers did not all become ready:\n{out}")

    def run(self, label, placement):
        mpi = self.args.mpi
        out = self.cli("run", "allreduce", "--ranks", "3", "--placement", placement, "--mpi", mpi,
                       "--transport", self.args.transport, "--check", "--sizes", SIZES, "--iters", "20", "--warmup", "5",
                       *[f"--env={e}" for e in self.args.env],
                       "--timeout", self.args.run_timeout, "--label", f"test={label}").stdout
        m = re.match(r"(runs/\S+):", out.strip())
        if not m:
            raise Failure(f"unexpected output from collbench run: {out!r}")
        run = m.group(1)
        log(f"{label}: {run} created ({placement}, {mpi})")
        watched = self.cli("watch", run, timeout=240, check=False)
        shown = self.cli("show", run).stdout
        stored = stored_run(self.store, run)
        log(f"{label}: {run} {stored['state']}, launcher {stored['launcher']}, "
            f"placement {stored['placement']}, rank hosts {stored['rank_hosts']}\n{shown.rstrip()}")
        if watched.returncode != 0 or stored["state"] != "succeeded":
            raise Failure(f"{label} run {run} did not succeed (watch exit {watched.returncode}):\n"
                          f"{watched.stdout}{watched.stderr}\n{shown}")
        results = [json.loads(line) for line in
                   self.cli("show", run, "--output", "jsonl").stdout.splitlines() if line.strip()]
        if len(results) != len(SIZES.split(",")):
            raise Failure(f"{run}: {len(results)} size results, expected {len(SIZES.split(','))}")
        for r in results:
            if not r.get("checked") or int(r.get("wrong", 0)) != 0:
                raise Failure(f"{run}: size {r.get('bytes')} not checked or wrong: {r}")
        hosts = stored["rank_hosts"]
        if len(hosts) != 3:
            raise Failure(f"{run}: rank hosts {hosts}, expected 3")
        if placement == "spread":
            if sorted(hosts) != sorted(ns for ns, _ in HOSTS):
                raise Failure(f"{run}: SPREAD ranks ran on {hosts}, not one per host")
            if sorted(h for _, h, _ in stored["placement"]) != sorted(ns for ns, _ in HOSTS):
                raise Failure(f"{run}: SPREAD placement {stored['placement']}")
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
        self.timed("network setup", create_network, self.args.decoy)
        port = self.timed("coordinator start", self.start_coordinator)
        self.timed("reachability", check_reachable, port)
        self.start_workers()
        self.timed("workers registered", self.wait_for_workers)
        spread = self.timed(f"SPREAD run ({self.args.mpi}, 3 hosts)", self.run, "spread", "spread")
        pack = self.timed(f"PACK run ({self.args.mpi}, 1 host)", self.run, "pack", "pack")
        self.timed("compare", self.compare, spread, pack)
        self.processes.check_alive()


def tail(path, lines=40):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


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

    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    try:
        precheck()
    except Skip as e:
        print(f"SKIP: {e}", flush=True)
        return SKIP
    for binary in ("collbench", "collbench-coordinator", "collbench-worker"):
        if not os.access(os.path.join(args.bin_dir, binary), os.X_OK):
            print(f"FAIL: {binary} not found in {args.bin_dir}", flush=True)
            return 1

    lock = open(LOCK_FILE, "w")
    log("waiting for the netns lock")
    fcntl.flock(lock, fcntl.LOCK_EX)  # one instance at a time: same names and addresses
    workdir = tempfile.mkdtemp(prefix="collbench-netns-")
    test = Test(args, workdir)
    ok = False
    started = time.monotonic()
    try:
        remove_network()  # whatever a killed earlier instance left
        test.main()
        ok = True
    except Failure as e:
        print(f"FAIL: {e}", flush=True)
    except KeyboardInterrupt as e:
        print(f"FAIL: interrupted ({e})", flush=True)
    finally:
        test.processes.stop()
        remove_network()
        leftovers = our_namespaces() + our_links()
        if leftovers:
            print(f"FAIL: left behind: {leftovers}", flush=True)
            ok = False
        if not ok:
            for name in sorted(os.listdir(workdir)):
                if name.endswith(".log"):
                    print(f"---- {name} (last lines)\n{tail(os.path.join(workdir, name))}", flush=True)
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
    summary = ", ".join(f"{what} {seconds:.1f}s" for what, seconds in test.timings)
    log(f"{'PASS' if ok else 'FAIL'} ({args.mpi}) in {time.monotonic() - started:.1f}s: {summary}")
    if ok and not args.keep_logs:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        log(f"logs in {workdir}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
