# SPDX-License-Identifier: Apache-2.0
"""Namespace "hosts" on a bridge, shared by the tests in tests/netns/.

A Network names a bridge, a coordinator address on it and three hosts; each
host is a network namespace with its own UTS namespace (host name), its own
address on "eth0" (a veth whose outside end is named after the namespace and
sits on the bridge) and its own host id. Every name starts with the
network's prefix, so a test removes exactly what it (or a killed earlier
instance of it) created. A Cluster starts the coordinator on the bridge,
one collbench-worker in each host and the launcher on the bridge beside the
coordinator (runs across hosts are started by it, as in a deployment:
docs/design/security.md#the-launcher), each process the leader of a process
group of its own, and stops only those. A network may shape hosts' links
with a tc tbf qdisc (1 Gbit/s, on both ends of the veth, so both directions
are limited) and start each worker with labels saying how it is linked
(hosts=netns, link=veth or link=tbf-1gbit: what suites match). run_test() is
the common main:
root check (exit 77 otherwise), one instance at a time (a lock file shared
by every test here), cleanup also on failure, net.ipv4.ip_forward put back,
the logs on failure and a line of timings.
"""

import fcntl
import glob
import json
import os
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback

SKIP = 77
LOCK_FILE = "/tmp/collbench-netns-test.lock"  # every netns test, whatever its prefix
AGENT_PORT = 7070  # each namespace has its own port space
IP_FORWARD = "/proc/sys/net/ipv4/ip_forward"

# The rate-limited link (tc-tbf(8)). The burst is what a message may send at
# the veth's own speed after the link was idle (in a ping-pong, while the
# other direction ran), so it must stay small against the messages measured;
# but each time the bucket runs dry tbf waits for a timer, and small bursts
# cost more than the rate: 1 MiB TCP ping-pongs between two such hosts on a
# 2-core VM ran at 56, 67, 88 and 100 MB/s one way with bursts of 16, 32, 64
# and 256 KiB (210 MB/s with 1 MiB). 64 KiB keeps a 1 MiB message under
# ~127 MB/s even where timers cost nothing (the rest of it at 1 Gbit/s, frame
# headers included). `latency` bounds the queue (2.5 MB at 1 Gbit/s).
TBF_RATE = "1gbit"
TBF_BURST = "64kb"
TBF_LATENCY = "20ms"
TBF_LINK_LABEL = "tbf-1gbit"  # the link=... label of a worker behind it

RUN_STATES = {0: "unspecified", 1: "queued", 2: "scheduled", 3: "running", 4: "succeeded",
              5: "failed", 6: "cancelled"}
FINAL_STATES = {"succeeded", "failed", "cancelled"}


class Skip(Exception):
    pass


class Failure(Exception):
    pass


class Network:
    """The names and addresses one test uses; nothing else is touched."""

    def __init__(self, prefix, subnet, decoy_prefix=None, host_count=3, shaped=()):
        # subnet: the first three octets, e.g. "198.18.0"; hosts are .11-.19.
        # shaped: the numbers (1-based) of the hosts whose link is a tbf.
        assert 1 <= host_count <= 9
        self.prefix = prefix
        self.bridge = f"{prefix}br0"
        self.coordinator_ip = f"{subnet}.1"
        self.prefix_len = 24
        self.cidr = f"{subnet}.0/24"
        self.hosts = [(f"{prefix}h{i}", f"{subnet}.1{i}") for i in range(1, host_count + 1)]
        self.decoy_prefix = decoy_prefix  # e.g. "198.19.0": a second network leading nowhere
        self.shaped = {f"{prefix}h{i}" for i in shaped}

    def host_names(self):
        return [ns for ns, _ in self.hosts]

    def link_labels(self, ns):
        """The labels a worker in `ns` carries: it is a namespace host, its
        link unshaped or behind the tbf."""
        return {"hosts": "netns", "link": TBF_LINK_LABEL if ns in self.shaped else "veth"}


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


# --- namespaces and links ---------------------------------------------------

def our_namespaces(net):
    _, out = ip("netns", "list", check=False, quiet=True)
    names = [line.split()[0] for line in out.splitlines() if line.strip()]
    return [n for n in names if n.startswith(net.prefix)]


def our_links(net):
    _, out = ip("-o", "link", "show", check=False, quiet=True)
    links = []
    for line in out.splitlines():
        m = re.match(r"\d+:\s+([^:@\s]+)", line)
        if m and m.group(1).startswith(net.prefix):
            links.append(m.group(1))
    return links


def kill_pids(pids, why):
    """SIGCONT (a stopped process cannot act on SIGTERM), SIGTERM, then
    SIGKILL what is left, of pids this test started."""
    pids = [p for p in pids if p != os.getpid()]
    if not pids:
        return
    log(f"stopping {len(pids)} process(es) {why}: {pids}")
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.time() + 5
        while time.time() < deadline and any(os.path.exists(f"/proc/{p}") for p in pids):
            time.sleep(0.1)
        pids = [p for p in pids if os.path.exists(f"/proc/{p}")]
        if not pids:
            return


def remove_network(net):
    """Removes every namespace and link named with the network's prefix, and
    what still runs in those namespaces (only this test creates them)."""
    for ns in our_namespaces(net):
        _, out = ip("netns", "pids", ns, check=False, quiet=True)
        kill_pids([int(p) for p in out.split() if p.isdigit()], f"left in {ns}")
        ip("netns", "del", ns, check=False)
    for link in our_links(net):
        ip("link", "del", link, check=False, quiet=True)  # a veth's peer goes with it
    for path in glob.glob(f"/tmp/ompi.{net.prefix}*"):  # Open MPI session dirs of our host names
        shutil.rmtree(path, ignore_errors=True)


def shape_link(ns):
    """A tbf on both ends of host `ns`'s veth: the bridge side (traffic to
    the host) and eth0 inside (traffic from it)."""
    tbf = ["root", "tbf", "rate", TBF_RATE, "burst", TBF_BURST, "latency", TBF_LATENCY]
    sh(["tc", "qdisc", "replace", "dev", ns, *tbf])
    sh(["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", "eth0", *tbf])


def rate_limit_host(ns, rate):
    """A tbf of `rate` (e.g. "200mbit") on both ends of host `ns`'s veth,
    replacing what was there; None removes it."""
    for where in (["tc"], ["ip", "netns", "exec", ns, "tc"]):
        dev = ns if len(where) == 1 else "eth0"
        if rate:
            sh([*where, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate, "burst",
                "64kb", "latency", "50ms"])
        else:
            sh([*where, "qdisc", "del", "dev", dev, "root"], check=False)
    log(f"link of {ns}: {'tbf ' + rate if rate else 'as it is'}")


def create_network(net):
    ip("link", "add", net.bridge, "type", "bridge")
    ip("addr", "add", f"{net.coordinator_ip}/{net.prefix_len}", "dev", net.bridge)
    ip("link", "set", net.bridge, "up")
    for ns, address in net.hosts:
        outside, inside = ns, f"{ns}-p"
        ip("netns", "add", ns)
        ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        ip("link", "set", inside, "netns", ns)
        ip("link", "set", outside, "master", net.bridge)
        ip("link", "set", outside, "up")
        ip("-n", ns, "link", "set", "lo", "up")
        ip("-n", ns, "link", "set", inside, "name", "eth0")
        ip("-n", ns, "addr", "add", f"{address}/{net.prefix_len}", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        if net.decoy_prefix:  # a second network that leads nowhere, on a veth
            ip("-n", ns, "link", "add", "decoy0", "type", "veth", "peer", "name", "decoy1")
            ip("-n", ns, "link", "set", "decoy1", "up")
            ip("-n", ns, "addr", "add",
               f"{net.decoy_prefix}.{address.rsplit('.', 1)[1]}/{net.prefix_len}", "dev", "decoy0")
            ip("-n", ns, "link", "set", "decoy0", "up")
        if ns in net.shaped:  # removed with the veth
            shape_link(ns)


def check_reachable(net, port):
    """Every host reaches the coordinator's port."""
    probe = ("import socket,sys\n"
             "for a in sys.argv[2:]:\n"
             "  s=socket.create_connection((a,int(sys.argv[1])),timeout=5); s.close()\n")
    for ns, _ in net.hosts:
        deadline = time.time() + 10
        while True:
            rc, out = sh(["ip", "netns", "exec", ns, sys.executable, "-c", probe, str(port),
                          net.coordinator_ip], check=False, quiet=True)
            if rc == 0:
                break
            if time.time() > deadline:
                raise Failure(f"{ns} cannot reach the coordinator at {net.coordinator_ip}:{port}: "
                              f"{out.strip()}")
            time.sleep(0.2)


def precheck(net):
    if os.geteuid() != 0:
        raise Skip("needs root (network namespaces)")
    for tool in ("ip", "unshare") + (("tc",) if net.shaped else ()):
        if shutil.which(tool) is None:
            raise Skip(f"'{tool}' not found")
    probe = f"{net.prefix}probe"
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
        out = open(log_path, "a")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True)
        out.close()
        self.procs.append((name, proc, log_path))
        return proc

    def get(self, name):
        for n, proc, _ in self.procs:
            if n == name and proc.poll() is None:
                return proc
        raise Failure(f"{name} is not running")

    def check_alive(self):
        for name, proc, log_path in self.procs:
            if proc.poll() is not None:
                raise Failure(f"{name} exited with {proc.returncode}; see {log_path}")

    def forget(self, proc):
        """Drops a process that has ended (after a kill -9 the test made)."""
        proc.wait()
        self.procs = [p for p in self.procs if p[1] is not proc]

    def stop(self):
        # SIGTERM lets a worker end its runs (mpirun, daemons, ranks) first;
        # SIGCONT first, in case a test stopped one.
        for _, proc, _ in reversed(self.procs):
            if proc.poll() is None:
                for sig in (signal.SIGCONT, signal.SIGTERM):
                    try:
                        os.killpg(proc.pid, sig)
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


def query_store(store, sql, *params):
    """Rows of a read-only query on the coordinator's SQLite store."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def stored_run(store, run):
    """State, error, rank host names and placement (worker, host id, slots) of
    a run, read from the coordinator's store (collbench.v1.Run in runs.data)."""
    rows = query_store(store, "SELECT data FROM runs WHERE name = ?", run)
    if not rows:
        raise Failure(f"{run} is not in the store {store}")
    fields = proto_fields(rows[0][0])
    placement = []
    for raw in fields.get(8, []):
        host = proto_fields(raw)
        placement.append((host.get(1, [b""])[0].decode(), host.get(2, [b""])[0].decode(),
                          host.get(3, [0])[0]))
    return {
        "state": RUN_STATES.get(fields.get(3, [0])[0], "?"),
        "error": fields.get(4, [b""])[0].decode(),
        "rank_hosts": [h.decode() for h in fields.get(16, [])],
        "placement": placement,
        "launcher": fields.get(9, [b""])[0].decode(),
    }


# --- the cluster ----------------------------------------------------------------

def collbench_cli(bin_dir, coordinator, argv, timeout=60, check=True, token=None):
    """`collbench --coordinator COORDINATOR ARGV...` (with COLLBENCH_TOKEN=T
    when `token` is given); Failure when
    it does not finish within `timeout` or, with `check`, exits non-zero.
    Also used by tests/containers."""
    cmd = [os.path.join(bin_dir, "collbench"), "--coordinator", coordinator]
    # The token goes by environment, never on a command line (docs/design/security.md#credentials).
    env = dict(os.environ)
    env.pop("COLLBENCH_TOKEN", None)
    if token:
        env["COLLBENCH_TOKEN"] = token
    try:
        result = subprocess.run(cmd + list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise Failure(f"collbench {' '.join(argv)} did not finish within {timeout}s")
    if check and result.returncode != 0:
        raise Failure(f"collbench {' '.join(argv)} exited {result.returncode}:\n"
                      f"{result.stdout}{result.stderr}")
    return result


def checked_results(cli, run, sizes):
    """The JSON results of `run` (via `cli`, a Cluster.cli-like callable):
    one per size of the comma-separated `sizes`, each checked with wrong = 0."""
    results = [json.loads(line) for line in
               cli("show", run, "--output", "jsonl").stdout.splitlines() if line.strip()]
    if len(results) != len(sizes.split(",")):
        raise Failure(f"{run}: {len(results)} size results, expected {len(sizes.split(','))}")
    for r in results:
        if not r.get("checked") or int(r.get("wrong", 0)) != 0:
            raise Failure(f"{run}: size {r.get('bytes')} not checked or wrong: {r}")
    return results


class Cluster:
    """The coordinator on the bridge and a worker in each host of `net`."""

    def __init__(self, net, bin_dir, workdir):
        self.net = net
        self.bin = os.path.abspath(bin_dir)
        self.workdir = workdir
        self.store = os.path.join(workdir, "store.db")
        self.processes = Processes()
        self.address = None
        self.http_address = None
        self.timings = []
        # The lab's coordinator serves the 198.18 network, beyond loopback:
        # it runs with tokens, as a deployment must (docs/design/security.md#fail-closed).
        self.tokens = {role: f"{role}-{secrets.token_hex(16)}"
                       for role in ("read", "operator", "worker", "launcher")}
        self.tokens_file = os.path.join(workdir, "tokens")
        self.join_token_file = os.path.join(workdir, "join-token")
        self.launcher_token_file = os.path.join(workdir, "launcher-token")
        for path, lines in ((self.tokens_file, [f"{role} {token}\n"
                                                for role, token in self.tokens.items()]),
                            (self.join_token_file, [self.tokens["worker"] + "\n"]),
                            (self.launcher_token_file, [self.tokens["launcher"] + "\n"])):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                f.writelines(lines)

    def cli(self, *argv, timeout=60, check=True):
        return collbench_cli(self.bin, self.address, argv, timeout=timeout, check=check,
                             token=self.tokens["operator"])

    def timed(self, what, fn, *a, **kw):
        start = time.monotonic()
        value = fn(*a, **kw)
        self.timings.append((what, time.monotonic() - start))
        log(f"{what}: {self.timings[-1][1]:.2f}s")
        return value

    def record(self, what, seconds):
        """A timing measured by the caller."""
        self.timings.append((what, seconds))
        log(f"{what}: {seconds:.2f}s")

    def start_coordinator(self, *extra, grpc_port=0, ip_address=None, http=False):
        """Starts collbench-coordinator on the store; returns its gRPC port.
        The log is appended to, so a restart keeps the first one's lines."""
        log_path = os.path.join(self.workdir, "coordinator.log")
        host = ip_address or self.net.coordinator_ip
        with open(log_path, "a") as f:
            start_offset = f.tell()
        # No worker launches a run across hosts (--worker-launch off, the
        # default): start_workers starts the launcher that does.
        argv = [os.path.join(self.bin, "collbench-coordinator"), "--grpc-listen",
                f"{host}:{grpc_port}", "--store", self.store, "--tokens", self.tokens_file,
                *extra]
        if http:
            argv += ["--http-listen", f"{host}:0"]
        self.processes.start("coordinator", argv, log_path)
        deadline = time.time() + 30
        while time.time() < deadline:
            self.processes.check_alive()
            with open(log_path) as f:
                f.seek(start_offset)
                text = f.read()
            grpc = re.search(r"serving gRPC on port (\d+)", text)
            rest = re.search(r"serving HTTP \(REST, /metrics\) on port (\d+)", text)
            if grpc and (rest or not http):
                self.address = f"{host}:{grpc.group(1)}"
                self.http_address = f"{host}:{rest.group(1)}" if rest else None
                log(f"coordinator on {self.address}" +
                    (f", HTTP on {self.http_address}" if rest else ""))
                return int(grpc.group(1))
            time.sleep(0.1)
        raise Failure(f"the coordinator did not start; see {log_path}")

    def start_workers(self, mpi_interface=None, path_prefix=None, slots=3, labels=None,
                      extra=()):
        """One worker per host; `path_prefix` goes before PATH (for wrappers
        of mpirun / mpiexec); `labels(ns)`, when given, the worker's
        --label KEY=VALUE flags."""
        for ns, address in self.net.hosts:
            # Its host id and its Kubernetes node (collbench-kube's) are the
            # namespace's name.
            env = dict(os.environ, COLLBENCH_HOST_ID=ns, NODE_NAME=ns)
            if path_prefix:
                env["PATH"] = f"{path_prefix}:{env.get('PATH', '/usr/bin:/bin')}"
            # ip netns exec and unshare exec in place, and so does sh: the
            # Popen pid is the worker's and leads its process group.
            argv = ["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c",
                    'hostname "$0" && exec "$@"', ns,
                    os.path.join(self.bin, "collbench-worker"),
                    "--coordinator", self.address, "--name", ns,
                    "--listen", f"{address}:{AGENT_PORT}", "--advertise", f"{address}:{AGENT_PORT}",
                    "--slots", str(slots), "--work-dir", os.path.join(self.workdir, ns),
                    "--join-token-file", self.join_token_file]
            if mpi_interface:
                argv += ["--mpi-interface", mpi_interface]
            for key, value in sorted((labels(ns) if labels else {}).items()):
                argv += ["--label", f"{key}={value}"]
            argv += list(extra)
            self.processes.start(ns, argv, os.path.join(self.workdir, f"{ns}.log"), env=env)
        # What the launcher must share with the workers: the ranks' progress
        # folder, which it tells them, and the tuning files it names.
        extra = list(extra)
        shared = []
        for i, flag in enumerate(extra[:-1]):
            if flag in ("--progress-dir", "--tuning-dir"):
                shared += [flag, extra[i + 1]]
        self.start_launcher(path_prefix, shared)

    def start_launcher(self, path_prefix=None, extra=()):
        """collbench-launcher on the bridge beside the coordinator, with its
        own token: the launcher of every run across hosts. Its mpirun reaches
        the hosts' daemons over the lab's CIDR, never another network of this
        machine (the hosts' own --mpi-interface may name their eth0)."""
        argv = [os.path.join(self.bin, "collbench-launcher"), "--coordinator", self.address,
                "--name", "lab", "--listen", f"{self.net.coordinator_ip}:0",
                "--advertise", f"{self.net.coordinator_ip}:0",
                "--work-dir", os.path.join(self.workdir, "launcher"),
                "--join-token-file", self.launcher_token_file,
                "--mpi-interface", self.net.cidr, *extra]
        env = dict(os.environ)
        if path_prefix:  # the launcher runs mpirun / mpiexec
            env["PATH"] = f"{path_prefix}:{env.get('PATH', '/usr/bin:/bin')}"
        self.processes.start("launcher", argv, os.path.join(self.workdir, "launcher.log"),
                             env=env)

    def worker_states(self):
        """{worker name: (state, hostname, host id)} from `collbench workers`."""
        out = self.cli("workers", check=False, timeout=20).stdout
        states = {}
        for line in out.splitlines()[1:]:
            cols = line.split()
            # WORKER STATE HOSTNAME HOST-ID ...
            if len(cols) >= 4:
                states[cols[0].split("/")[-1]] = (cols[1], cols[2], cols[3])
        return states

    def wait_for_workers(self, names=None, states=("ready",), timeout=60):
        """Waits until each of `names` (default: every host) shows one of
        `states`, each with its own host name and host id; returns the seconds
        waited."""
        start = time.monotonic()
        names = set(names or self.net.host_names())
        shown = {}
        while time.monotonic() - start < timeout:
            self.processes.check_alive()
            shown = self.worker_states()
            if all(shown.get(n, ("",))[0] in states and shown[n][1:] == (n, n) for n in names):
                return time.monotonic() - start
            time.sleep(0.3)
        raise Failure(f"workers {sorted(names)} did not all become {'/'.join(states)} within "
                      f"{timeout}s: {shown}")

    def create_run(self, *argv):
        """`collbench run ARGV` without waiting; returns the run's name."""
        out = self.cli("run", *argv).stdout
        m = re.match(r"(runs/\S+):", out.strip())
        if not m:
            raise Failure(f"unexpected output from collbench run: {out!r}")
        return m.group(1)

    def wait_for_run(self, run, states, timeout):
        """Polls the store until the run is in one of `states`; returns it."""
        deadline = time.monotonic() + timeout
        while True:
            stored = stored_run(self.store, run)
            if stored["state"] in states:
                return stored
            if time.monotonic() > deadline:
                raise Failure(f"{run} is {stored['state']}, not {'/'.join(states)}, after "
                              f"{timeout}s ({stored['error']})")
            time.sleep(0.1)


# --- the common main ----------------------------------------------------------------

def tail(path, lines=40):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def run_test(net, name, bin_dir, body, make_cluster=Cluster, keep_logs=False, needs_network=True,
             cleanups=()):
    """The common main. `body(cluster)` does the test and raises Failure;
    `make_cluster(net, bin_dir, workdir)` makes the cluster (a Cluster or a
    subclass); each of `cleanups` is called with the cluster at the end,
    whatever happened (after the processes stop, before the network goes).
    Returns the exit code."""

    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    try:
        precheck(net)
    except Skip as e:
        print(f"SKIP: {e}", flush=True)
        return SKIP
    for binary in ("collbench", "collbench-coordinator", "collbench-worker"):
        if not os.access(os.path.join(bin_dir, binary), os.X_OK):
            print(f"FAIL: {binary} not found in {bin_dir}", flush=True)
            return 1

    lock = open(LOCK_FILE, "w")
    log("waiting for the netns lock")
    fcntl.flock(lock, fcntl.LOCK_EX)  # one instance at a time
    with open(IP_FORWARD) as f:
        ip_forward = f.read().strip()
    workdir = tempfile.mkdtemp(prefix=f"collbench-{net.prefix}")
    cluster = make_cluster(net, bin_dir, workdir)
    ok = False
    started = time.monotonic()
    try:
        remove_network(net)  # whatever a killed earlier instance left
        if needs_network:
            cluster.timed("network setup", create_network, net)
        body(cluster)
        cluster.processes.check_alive()
        ok = True
    except Failure as e:
        print(f"FAIL: {e}", flush=True)
    except KeyboardInterrupt as e:
        print(f"FAIL: interrupted ({e})", flush=True)
    except Exception:  # a bug in the test: still clean up and show the logs
        print(f"FAIL: {traceback.format_exc()}", flush=True)
    finally:
        cluster.processes.stop()
        for cleanup in cleanups:
            try:
                cleanup(cluster)
            except Exception as e:  # report, and go on cleaning up
                print(f"FAIL: cleanup {getattr(cleanup, '__name__', cleanup)}: {e}", flush=True)
                ok = False
        remove_network(net)
        leftovers = our_namespaces(net) + our_links(net)
        if leftovers:
            print(f"FAIL: left behind: {leftovers}", flush=True)
            ok = False
        with open(IP_FORWARD) as f:
            if f.read().strip() != ip_forward:
                with open(IP_FORWARD, "w") as w:
                    w.write(ip_forward)
                log(f"net.ipv4.ip_forward put back to {ip_forward}")
        if not ok:
            for log_name in sorted(os.listdir(workdir)):
                if log_name.endswith(".log"):
                    print(f"---- {log_name} (last lines)\n{tail(os.path.join(workdir, log_name))}",
                          flush=True)
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
    summary = ", ".join(f"{what} {seconds:.2f}s" for what, seconds in cluster.timings)
    log(f"{'PASS' if ok else 'FAIL'} {name} in {time.monotonic() - started:.1f}s: {summary}")
    if ok and not keep_logs:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        log(f"logs in {workdir}")
    return 0 if ok else 1
