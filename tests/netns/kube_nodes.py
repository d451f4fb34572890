# SPDX-License-Identifier: Apache-2.0
"""collbench-kube in the namespace lab: a test Kubernetes API server
(tests/kube/kube_apiserver.py) holding one Node per namespace host, the
controller run against it with the coordinator's read token and the
ClusterRole the component ships (deploy/kubernetes/components/
kube-controller/rbac.yaml, read here: a request it does not grant is
refused, so the test proves the shipped role is enough), and the nodes
read back with kubectl as an independent client.

Used by hunt_test.py, whose hunts make the verdicts."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "kube"))
from kube_apiserver import CONTROLLER_USER, KubeApiServer  # noqa: E402

from netns_hosts import Failure, log  # noqa: E402

RBAC = os.path.join(HERE, "..", "..", "deploy", "kubernetes", "components", "kube-controller",
                    "rbac.yaml")
CONDITION = "CollectivePerformanceDegraded"
HEALTH = "collbench.io/health"
TAINT = "collbench.io/degraded"


def shipped_rules():
    """The ClusterRole and the Role of the component, as the test server's
    rules (which know no namespaces: the Role's are granted everywhere)."""
    import yaml
    rules = []
    with open(RBAC) as f:
        for doc in yaml.safe_load_all(f):
            if doc and doc.get("kind") in ("ClusterRole", "Role"):
                rules += [{k: rule[k] for k in ("apiGroups", "resources", "verbs")}
                          for rule in doc["rules"]]
    if not rules:
        raise Failure(f"{RBAC}: no ClusterRole or Role")
    return rules


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric(port, name):
    """A metric's value from the controller's /metrics, or None."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


class KubeLab:
    """The API server, its Nodes, and collbench-kube runs against it."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.dir = tempfile.mkdtemp(prefix="collbench-kube-", dir=cluster.workdir)
        self.server = KubeApiServer(self.dir, rbac={CONTROLLER_USER: shipped_rules()})
        self.server.start()
        self.controller = None
        self.read_token_file = os.path.join(cluster.workdir, "read-token")
        with open(os.open(self.read_token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
                  "w") as f:
            f.write(cluster.tokens["read"] + "\n")
        for ns, address in cluster.net.hosts:
            self.server.create({"apiVersion": "v1", "kind": "Node",
                                "metadata": {"name": ns,
                                             "labels": {"kubernetes.io/hostname": ns}},
                                "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
            # The worker's pod on it, with the worker's address: what vouches
            # for the worker's node (kube/worker_nodes.h).
            pod = f"collbench-worker-{ns}"
            self.server.create({"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": pod, "namespace": "collbench",
                                             "labels": {"app.kubernetes.io/component": "worker"}},
                                "spec": {"nodeName": ns, "containers": [
                                    {"name": "worker", "image": "collbench-worker"}]}})
            code, answer = self.server.request(
                "PATCH", f"/api/v1/namespaces/collbench/pods/{pod}/status",
                {"status": {"phase": "Running", "podIP": address, "podIPs": [{"ip": address}]}})
            if code != 200:
                raise Failure(f"the pod of {ns}: {code} {answer}")
        log(f"test API server at {self.server.url} with {len(cluster.net.host_names())} nodes")

    def stop(self):
        self.stop_controller()
        self.server.stop()

    def argv(self, *flags):
        return [os.path.join(self.cluster.bin, "collbench-kube"), "--coordinator",
                self.cluster.address, "--token-file", self.read_token_file, "--kubeconfig",
                os.path.join(self.dir, "kubeconfig-token"), *flags]

    def once(self, *flags):
        """One pass; fails the test when it fails."""
        result = subprocess.run(self.argv("--once", *flags), capture_output=True, text=True,
                                timeout=60)
        if result.returncode != 0:
            raise Failure(f"collbench-kube --once {' '.join(flags)} exited {result.returncode}:\n"
                          f"{result.stdout}{result.stderr}")
        return result.stdout + result.stderr

    def start_controller(self, *flags):
        self.controller = self.cluster.processes.start(
            "collbench-kube", self.argv("--interval", "1s", *flags),
            os.path.join(self.cluster.workdir, "collbench-kube.log"))

    def stop_controller(self):
        if self.controller is not None:
            self.controller.terminate()
            self.controller.wait(timeout=10)
            self.cluster.processes.forget(self.controller)
            self.controller = None

    def kubectl(self, *argv):
        if shutil.which("kubectl") is None:
            raise Failure("kubectl is not installed")
        result = subprocess.run(["kubectl", "--kubeconfig", os.path.join(self.dir, "kubeconfig-admin"),
                                 *argv], capture_output=True, text=True, timeout=30)
        if result.returncode != 0:
            raise Failure(f"kubectl {' '.join(argv)}: {result.stderr.strip()}")
        return result.stdout

    def node(self, name):
        """The node as kubectl reads it: (condition or None, health label, our taint)."""
        node = json.loads(self.kubectl("get", "node", name, "-o", "json"))
        condition = next((c for c in node.get("status", {}).get("conditions", [])
                          if c["type"] == CONDITION), None)
        label = node["metadata"].get("labels", {}).get(HEALTH)
        taint = any(t["key"] == TAINT and t["effect"] == "NoSchedule"
                    for t in node.get("spec", {}).get("taints", []))
        return condition, label, taint

    def events(self, reason):
        events = json.loads(self.kubectl("get", "events", "-A", "-o", "json"))["items"]
        return [e for e in events if e.get("reason") == reason]

    def writes(self, since):
        """The controller's writes since `since` (patches and creates)."""
        return [r for r in self.server.audit(user=CONTROLLER_USER, since=since)
                if r["verb"] in ("patch", "create", "update", "delete")]

    def wait_for(self, what, check, timeout=30):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            last = check()
            if last is True:
                return
            time.sleep(0.5)
        raise Failure(f"{what}: not after {timeout}s ({last})")


def check_degraded_node(lab, bad, names):
    """After a hunt confirmed `bad`: --dry-run changes nothing; a breaker
    with a share below one node withholds the quarantine and says so (the
    condition, an Event, the log, the metric); the
    controller (watching, --taint) sets exactly that node's condition,
    label and taint, and the others healthy. (Its relist after a 410 is
    tests/unit/kube's.)"""
    start = time.time()
    out = lab.once("--dry-run", "--taint")
    if lab.writes(start):
        raise Failure(f"--dry-run wrote: {lab.writes(start)}")
    if "would change node " + bad not in out:
        raise Failure(f"--dry-run did not log the change of {bad}:\n{out}")
    for name in names:
        if lab.node(name) != (None, None, False):
            raise Failure(f"--dry-run changed node {name}: {lab.node(name)}")
    log(f"--dry-run: no write, the change of {bad} logged")

    # A breaker whose share is below one node: the quarantine is withheld,
    # and the condition, an Event, the log and the metric say so.
    port = free_port()
    lab.start_controller("--taint", "--breaker-fraction", "0.1", "--metrics-listen",
                         f"127.0.0.1:{port}")

    def withheld():
        condition, label, taint = lab.node(bad)
        ok = condition and condition["status"] == "True" and \
            "circuit breaker" in condition["message"] and not label and not taint
        return True if ok else (condition, label, taint)
    lab.wait_for(f"the breaker withholding {bad}'s quarantine", withheld)
    lab.wait_for("collbench_kube_circuit_breaker_open 1",
                 lambda: metric(port, "collbench_kube_circuit_breaker_open") == 1 or
                 metric(port, "collbench_kube_circuit_breaker_open"))
    if not lab.events("QuarantineWithheld"):
        raise Failure("no QuarantineWithheld Event")
    lab.stop_controller()
    with open(os.path.join(lab.cluster.workdir, "collbench-kube.log")) as f:
        if "circuit breaker open" not in f.read():
            raise Failure("the controller's log does not say the breaker is open")
    log(f"the circuit breaker withheld the quarantine of {bad} (metric, Event, log): "
        f"{lab.node(bad)[0]['message']}")

    lab.start_controller("--taint", "--metrics-listen", f"127.0.0.1:{port}")

    def degraded():
        seen = {name: lab.node(name) for name in names}
        condition, label, taint = seen[bad]
        ok = condition and condition["status"] == "True" and condition["reason"] == "ConfirmedBad" \
            and label == "degraded" and taint
        others = all(c and c["status"] == "False" and l == "healthy" and not t
                     for name, (c, l, t) in seen.items() if name != bad)
        return True if ok and others else seen
    lab.wait_for(f"{bad} degraded and the others healthy", degraded)
    condition = lab.node(bad)[0]
    if "of the fleet median" not in condition["message"] or "hunt-" not in condition["message"]:
        raise Failure(f"the condition does not say the ratio and the hunt: {condition}")
    if not lab.events("ConfirmedBad"):
        raise Failure("no ConfirmedBad Event")
    log(f"kubectl: {bad} CollectivePerformanceDegraded=True ({condition['message']}), "
        f"{HEALTH}=degraded, tainted; the others healthy")
    if metric(port, "collbench_kube_circuit_breaker_open") != 0 or \
            not metric(port, "collbench_kube_node_patches"):
        raise Failure(f"metrics: breaker {metric(port, 'collbench_kube_circuit_breaker_open')}, "
                      f"patches {metric(port, 'collbench_kube_node_patches')}")
    watches = lab.server.audit(user=CONTROLLER_USER, verb="watch", resource="nodes")
    if not watches:
        raise Failure("the controller did not watch the nodes")


def check_cleared_node(lab, bad):
    """After a hunt measured `bad` healthy: condition False, label healthy,
    no taint."""
    def cleared():
        condition, label, taint = lab.node(bad)
        ok = condition and condition["status"] == "False" and label == "healthy" and not taint
        return True if ok else (condition, label, taint)
    lab.wait_for(f"{bad} cleared", cleared)
    lab.stop_controller()
    log(f"kubectl: {bad} CollectivePerformanceDegraded=False ({lab.node(bad)[0]['reason']}), "
        f"{HEALTH}=healthy, no taint")
