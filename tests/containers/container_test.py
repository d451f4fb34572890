#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""collbench in real containers, from the Kubernetes manifests
(docs/design/deployment.md#tested-not-only-rendered).

Builds the coordinator and worker images (scripts/images, from the programs
just built) in a storage of its own that starts empty, then starts, on an
internal podman network in 198.18.20.0/24 with DNS off:

  - the coordinator, as the pod the rendered StatefulSet describes;
  - four workers, as pods of the rendered DaemonSet on one node: a and b
    from tests/containers/pods/private (the base, private IPC), c and d
    from tests/containers/pods/shared (the shared-ipc component, hostIPC,
    plus hostPID); all four named after their pods (named-after-pod);
  - one worker directly on the host, on the network's bridge address.

A pod becomes a `podman run` mechanically (pod_to_podman): command and args
with $(VAR) expanded as the kubelet does, env (values, the downward API,
the ConfigMap and the Secret), volumes (the claim as a named volume with the
pod's fsGroup, emptyDirs as tmpfs, the Secret as files), the security
context (user, read-only root, dropped capabilities, no privilege gain),
resource limits, hostIPC and hostPID, the Service name as a host entry. Each
probe is then checked the way the kubelet would: HTTP GET of its path on its
(named) port, a TCP connect, or a gRPC health check (collbench health). A
wrong argument, port, env or probe path in the manifests fails the test.

Then, with --check (wrong = 0 on every size):
  1. 2 ranks in the host worker (Open MPI);
  2. 2 ranks in one container (Open MPI);
  3. 1 rank in each of two containers with private IPC, over TCP (Open MPI);
  4. 1 rank in each of two containers sharing IPC and PID namespaces, over
     shared memory (MPICH: Open MPI joins workers over the network only);
  5. `collbench compare` of the four: host, one container, two containers;
  6. kill -9 of a worker container in the middle of a two-container run: the
     run fails naming that worker within 10 s, and nothing of the run is
     left in the other container;
  7. the coordinator container removed and started again on its volume:
     every run and its results are still there;
  8. a Prometheus on the host scrapes the coordinator container's /metrics.

Needs root, podman, kubectl (kustomize) and prometheus; exits 77 (skipped)
without them. Everything it creates is named cbct-*; what an earlier, killed
instance left is removed first, everything is removed at the end, also on
failure, and net.ipv4.ip_forward (which netavark turns on) is put back. It
prints its timings.

  container_test.py --bin-dir build/bin [--keep-logs] [--keep-storage DIR]
"""

import argparse
import fcntl
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
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "netns"))
from netns_hosts import Failure, Skip, checked_results, collbench_cli, tail  # noqa: E402

SKIP = 77
PREFIX = "cbct-"
NETWORK = "cbct-net"
SUBNET = "198.18.20.0/24"
GATEWAY = "198.18.20.1"         # the bridge: the host worker and Prometheus
COORDINATOR_IP = "198.18.20.10"
WORKER_IPS = {"a": "198.18.20.11", "b": "198.18.20.12", "c": "198.18.20.13", "d": "198.18.20.14"}
LAUNCHER_IP = "198.18.20.20"      # collbench-launcher: starts the runs across worker pods
NODE_NAME = "cbct-node-1"       # the node the four worker pods run on
NAMESPACE = "collbench"
DATA_VOLUME = "cbct-coordinator-data"
HOST_WORKER = "cbct-host"
HOST_WORKER_PORT = 50062
TAG = "ctest"
# The lock of the tests in tests/netns as well: they also save and put back
# net.ipv4.ip_forward, which must not interleave with netavark's change.
LOCK_FILE = "/tmp/collbench-netns-test.lock"
SIZES = "8,1K,64K,1M"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PODS = os.path.join(ROOT, "tests", "containers", "pods")


def log(message):
    print(f"[containers {time.strftime('%H:%M:%S')}] {message}", flush=True)


def sh(argv, check=True, timeout=120, env=None, quiet=False):
    """Runs a command; returns (rc, stdout+stderr)."""
    try:
        result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise Failure(f"{' '.join(argv)} did not finish within {timeout}s")
    if check and result.returncode != 0:
        raise Failure(f"{' '.join(argv)} exited {result.returncode}: {result.stdout.strip()}")
    if not quiet and not check and result.returncode != 0:
        log(f"(ignored) {' '.join(argv[:4])}...: {result.stdout.strip()[-300:]}")
    return result.returncode, result.stdout


# --- podman, with the project's settings and a storage of the test's own --------

class Podman:
    def __init__(self, storage_dir):
        self.storage_dir = storage_dir
        self.env = dict(os.environ,
                        CONTAINERS_CONF=os.path.join(ROOT, "deploy/images/containers.conf"),
                        CONTAINERS_REGISTRIES_CONF=os.path.join(ROOT,
                                                                "deploy/images/registries.conf"),
                        CONTAINERS_STORAGE_CONF=os.path.join(storage_dir, "storage.conf"))

    def write_storage_conf(self):
        os.makedirs(self.storage_dir, exist_ok=True)
        with open(os.path.join(self.storage_dir, "storage.conf"), "w") as f:
            f.write('[storage]\ndriver = "overlay"\n'
                    f'graphroot = "{self.storage_dir}/graph"\n'
                    f'runroot = "{self.storage_dir}/run"\n')

    def __call__(self, *argv, check=True, timeout=120, quiet=False):
        return sh(["podman", *argv], check=check, timeout=timeout, env=self.env, quiet=quiet)

    def names(self, kind):
        """Names of our containers, networks or volumes."""
        fmt = {"container": ["ps", "-a", "--format", "{{.Names}}"],
               "network": ["network", "ls", "--format", "{{.Name}}"],
               "volume": ["volume", "ls", "--format", "{{.Name}}"]}[kind]
        rc, out = self(*fmt, check=False, quiet=True)
        return [n for n in out.split() if n.startswith(PREFIX)] if rc == 0 else []

    def remove_all(self):
        for name in self.names("container"):
            self("rm", "-f", "-t", "2", name, check=False, timeout=60)
        for name in self.names("volume"):
            self("volume", "rm", "-f", name, check=False)
        for name in self.names("network"):
            self("network", "rm", "-f", name, check=False)

    def remove_storage(self):
        if not os.path.isdir(self.storage_dir):
            return
        self("rmi", "-a", "-f", check=False, timeout=120, quiet=True)
        # Overlay mounts a killed instance may have left under the graph root.
        with open("/proc/mounts") as f:
            mounts = [line.split()[1] for line in f if self.storage_dir in line.split()[1]]
        for mount in sorted(mounts, key=len, reverse=True):
            sh(["umount", "-l", mount], check=False, quiet=True)
        shutil.rmtree(self.storage_dir, ignore_errors=True)


# --- manifests to podman ------------------------------------------------------------

def render(kustomization):
    import yaml
    _, out = sh(["kubectl", "kustomize", kustomization])
    return [d for d in yaml.safe_load_all(out) if d]


def find(objects, kind, name=None):
    for obj in objects:
        if obj["kind"] == kind and (name is None or obj["metadata"]["name"] == name):
            return obj
    raise Failure(f"the rendered manifests have no {kind} {name or ''}")


def expand(text, env):
    """$(VAR) as the kubelet expands it in command, args and env values: a
    defined variable is replaced, an undefined reference stays, $$ is $."""
    def replace(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", replace, text)


def quantity_bytes(text):
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "K": 1000, "M": 10 ** 6, "G": 10 ** 9}
    m = re.fullmatch(r"(\d+)([KMG]i?)?", str(text))
    if not m:
        raise Failure(f"cannot convert the quantity {text!r}")
    return int(m.group(1)) * units.get(m.group(2) or "", 1)


def quantity_cpus(text):
    text = str(text)
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


class Pod:
    """One pod made from a rendered workload's pod template."""

    def __init__(self, objects, kind, workload, pod_name, ip, secrets, workdir):
        self.objects = objects
        self.workload = find(objects, kind, workload)
        self.template = self.workload["spec"]["template"]
        self.spec = self.template["spec"]
        if len(self.spec["containers"]) != 1:
            raise Failure(f"{workload}: one container expected, found {len(self.spec['containers'])}")
        self.container = self.spec["containers"][0]
        self.pod_name = pod_name
        self.ip = ip
        self.secrets = secrets  # {secret name: {key: value}}
        self.workdir = workdir
        self.env = {}

    def config_map(self, name):
        return find(self.objects, "ConfigMap", name)["data"]

    def secret(self, name):
        if name not in self.secrets:
            raise Failure(f"the pod refers to Secret {name}, which the test does not make")
        return self.secrets[name]

    def resolve_env(self):
        """The container's environment as the kubelet makes it."""
        env = {}
        for source in self.container.get("envFrom", []):
            if "configMapRef" in source:
                env.update(self.config_map(source["configMapRef"]["name"]))
            elif "secretRef" in source:
                env.update(self.secret(source["secretRef"]["name"]))
        downward = {"spec.nodeName": NODE_NAME, "metadata.name": self.pod_name,
                    "metadata.namespace": NAMESPACE, "status.podIP": self.ip}
        for item in self.container.get("env", []):
            if "value" in item:
                env[item["name"]] = expand(str(item["value"]), env)
                continue
            source = item["valueFrom"]
            if "fieldRef" in source:
                path = source["fieldRef"]["fieldPath"]
                if path not in downward:
                    raise Failure(f"env {item['name']}: downward API field {path} is not emulated")
                env[item["name"]] = downward[path]
            elif "configMapKeyRef" in source:
                ref = source["configMapKeyRef"]
                env[item["name"]] = self.config_map(ref["name"])[ref["key"]]
            elif "secretKeyRef" in source:
                ref = source["secretKeyRef"]
                env[item["name"]] = self.secret(ref["name"])[ref["key"]]
            else:
                raise Failure(f"env {item['name']}: unsupported source {source}")
        self.env = env
        return env

    def port(self, name_or_number):
        for port in self.container.get("ports", []):
            if port.get("name") == name_or_number or port["containerPort"] == name_or_number:
                return port["containerPort"]
        if isinstance(name_or_number, int):
            return name_or_number
        raise Failure(f"{self.pod_name}: a probe names port {name_or_number!r}, "
                      "which the container does not declare")

    def node_folder(self, host_path):
        """A hostPath on this pod's node. The lab's pods stand for nodes of
        their own: each has its own folder, kept when the pod is replaced."""
        return os.path.join(self.workdir, "nodes", self.pod_name, host_path.lstrip("/"))

    def volume_args(self, podman_volume_for_claim, container=None):
        container = self.container if container is None else container
        volumes = {v["name"]: v for v in self.spec.get("volumes", [])}
        claims = {c["metadata"]["name"] for c in self.workload["spec"].get("volumeClaimTemplates", [])}
        fs_group = self.spec.get("securityContext", {}).get("fsGroup")
        args = []
        for mount in container.get("volumeMounts", []):
            name, path = mount["name"], mount["mountPath"]
            ro = ",ro" if mount.get("readOnly") else ""
            if name in claims:
                # The claim: a named volume, owned by the pod's user as fsGroup makes it.
                args += ["-v", f"{podman_volume_for_claim(name)}:{path}:U{ro}"]
                continue
            if name not in volumes:
                raise Failure(f"{self.pod_name}: volumeMount {name} has no volume")
            volume = volumes[name]
            if "emptyDir" in volume:
                size = volume["emptyDir"].get("sizeLimit")
                if path == "/dev/shm":  # a pod's /dev/shm is the runtime's shm mount
                    args += ["--shm-size", str(quantity_bytes(size) if size else 64 << 20)]
                else:
                    opts = f"tmpfs-size={quantity_bytes(size)}" if size else ""
                    opts += ",tmpfs-mode=1777"
                    args += ["--mount", f"type=tmpfs,destination={path},{opts.strip(',')}"]
            elif "hostPath" in volume:
                # DirectoryOrCreate: made root-owned, as the kubelet makes it.
                if volume["hostPath"].get("type") != "DirectoryOrCreate":
                    raise Failure(f"{self.pod_name}: hostPath {name} is not DirectoryOrCreate")
                folder = self.node_folder(volume["hostPath"]["path"])
                os.makedirs(folder, exist_ok=True)
                args += ["-v", f"{folder}:{path}{ro}"]
            elif "secret" in volume:
                folder = os.path.join(self.workdir, f"{self.pod_name}-{name}")
                os.makedirs(folder, exist_ok=True)
                data = self.secret(volume["secret"]["secretName"])
                items = volume["secret"].get("items") or [{"key": k, "path": k} for k in data]
                mode = volume["secret"].get("defaultMode", 0o644)
                for item in items:
                    target = os.path.join(folder, item["path"])
                    with open(target, "w") as f:
                        f.write(data[item["key"]])
                    os.chown(target, 0, fs_group if fs_group is not None else 0)
                    os.chmod(target, item.get("mode", mode))
                args += ["-v", f"{folder}:{path}:ro"]
            else:
                raise Failure(f"{self.pod_name}: volume {name} of an unsupported kind {volume}")
        return args

    def podman_run_args(self, container_name, image, extra_hosts, podman_volume_for_claim,
                        container=None):
        """`podman run` of the pod's container, or of one of its init
        containers (`container`: run to its end, then removed)."""
        init = container is not None
        container = self.container if container is None else container
        env = self.resolve_env()
        pod_security = self.spec.get("securityContext", {})
        security = container.get("securityContext", {})
        # A fixed MAC for the pod's address: a pod started again (the
        # coordinator restart) must not wait for neighbours' stale ARP entries.
        mac = "02:cb:" + ":".join("%02x" % int(octet) for octet in self.ip.split("."))
        args = ["run", "--rm" if init else "-d", "--name", container_name, "--hostname",
                self.pod_name,
                "--network", NETWORK, "--ip", self.ip, "--mac-address", mac,
                "--no-healthcheck", "--pull", "never"]
        user = security.get("runAsUser", pod_security.get("runAsUser"))
        group = security.get("runAsGroup", pod_security.get("runAsGroup"))
        if security.get("runAsNonRoot", pod_security.get("runAsNonRoot")) and not user:
            raise Failure(f"{self.pod_name}: runAsNonRoot without a runAsUser")
        if user is not None:
            args += ["--user", f"{user}:{group if group is not None else user}"]
        if pod_security.get("fsGroup") is not None:
            args += ["--group-add", str(pod_security["fsGroup"])]
        if security.get("readOnlyRootFilesystem"):
            args.append("--read-only")
        for cap in security.get("capabilities", {}).get("drop", []):
            args += ["--cap-drop", cap.lower()]
        for cap in security.get("capabilities", {}).get("add", []):
            args += ["--cap-add", cap.lower()]
        if security.get("allowPrivilegeEscalation") is False:
            args += ["--security-opt", "no-new-privileges"]
        limits = container.get("resources", {}).get("limits", {})
        if "cpu" in limits:
            args += ["--cpus", str(quantity_cpus(limits["cpu"]))]
        if "memory" in limits:
            args += ["--memory", str(quantity_bytes(limits["memory"]))]
        args += ["--ipc", "host" if self.spec.get("hostIPC") else "private"]
        if self.spec.get("hostPID"):
            args += ["--pid", "host"]
        if self.spec.get("hostNetwork"):
            raise Failure("hostNetwork pods are not part of this test")
        for host, address in extra_hosts.items():
            args += ["--add-host", f"{host}:{address}"]
        for key, value in env.items():
            args += ["-e", f"{key}={value}"]
        args += self.volume_args(podman_volume_for_claim, container)
        command = [expand(c, env) for c in container.get("command", [])]
        if command:
            args += ["--entrypoint", json.dumps(command)]
        args.append(image)
        args += [expand(a, env) for a in container.get("args", [])]
        return args

    def init_containers(self):
        return self.spec.get("initContainers", [])

    def image_name(self):
        """The manifest's image (collbench-worker:latest) as the test tagged it."""
        return self.container["image"].split("/")[-1].split(":")[0] + ":" + TAG

    def probes(self):
        return [(kind, self.container[kind]) for kind in ("startupProbe", "readinessProbe",
                                                         "livenessProbe") if kind in self.container]


# --- the test ----------------------------------------------------------------------------

class Test:
    def __init__(self, args, workdir, podman):
        self.args = args
        self.bin = os.path.abspath(args.bin_dir)
        self.workdir = workdir
        self.podman = podman
        self.timings = []
        self.host_processes = []  # Popen objects, each leading its own process group
        tokens = {role: os.urandom(12).hex()
                  for role in ("read", "operator", "worker", "launcher")}
        self.tokens = tokens
        self.secrets = {"collbench-tokens": {
            "tokens": "".join(f"{role} {token}\n" for role, token in tokens.items()),
            "join-token": tokens["worker"],
            "launcher-token": tokens["launcher"]}}
        self.coordinator = f"{COORDINATOR_IP}:50051"
        self.http = f"http://{COORDINATOR_IP}:8080"
        self.coordinator_pod = None
        self.worker_pods = {}

    # -- helpers

    def timed(self, what, fn, *a):
        start = time.monotonic()
        value = fn(*a)
        self.timings.append((what, time.monotonic() - start))
        log(f"{what}: {self.timings[-1][1]:.1f}s")
        return value

    def cli(self, *argv, timeout=90, check=True, token="operator"):
        return collbench_cli(self.bin, self.coordinator, argv, timeout=timeout, check=check,
                             token=self.tokens[token])

    def rest(self, path):
        """GET of the coordinator container's REST API, with the read token."""
        request = urllib.request.Request(self.http + path,
                                         headers={"Authorization": f"Bearer {self.tokens['read']}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read().decode())

    def container_logs(self, name, lines=30):
        _, out = self.podman("logs", "--tail", str(lines), name, check=False, quiet=True)
        return out

    # -- images and network

    def build_images(self):
        self.podman.write_storage_conf()
        # Warnings go to the same stream (e.g. about the CNI configuration
        # Debian's podman ships when no CNI plugins are installed); only
        # image ids count.
        _, out = self.podman("--log-level=error", "images", "-q")
        if out.strip():
            raise Failure(f"the test's storage {self.podman.storage_dir} is not empty")
        cmd = [os.path.join(ROOT, "scripts/images"), "build", "--prebuilt", self.bin,
               "--only", "coordinator", "--only", "worker", "--tag", TAG]
        log("building the images: " + " ".join(cmd[1:]))
        proc = subprocess.run(cmd, env=self.podman.env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=540)
        sizes = [l for l in proc.stdout.splitlines() if re.search(r"collbench-\S+:" + TAG, l)]
        if proc.returncode != 0:
            raise Failure(f"scripts/images build exited {proc.returncode}:\n{proc.stdout[-4000:]}")
        log("images:\n" + "\n".join(sizes[-4:]))
        self.check_license()

    def check_license(self):
        """Each image names the project's license and carries its text."""
        with open(os.path.join(ROOT, "LICENSE")) as f:
            license_text = f.read()
        for kind in ("coordinator", "worker"):
            image = f"collbench-{kind}:{TAG}"
            _, label = self.podman("--log-level=error", "image", "inspect", "-f",
                                   '{{index .Labels "org.opencontainers.image.licenses"}}', image)
            if label.strip() != "Apache-2.0":
                raise Failure(f"{image}: license label {label.strip()!r}, not Apache-2.0")
            # stdout alone: podman's own warnings go to stderr.
            shown = subprocess.run(["podman", "--log-level=error", "run", "--rm", "--network",
                                    "none", "--entrypoint", "cat", image,
                                    "/usr/share/doc/collbench/LICENSE"],
                                   env=self.podman.env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, timeout=120)
            if shown.returncode != 0 or shown.stdout != license_text:
                raise Failure(f"{image}: /usr/share/doc/collbench/LICENSE differs from LICENSE "
                              f"(exit {shown.returncode}, {len(shown.stdout)} of "
                              f"{len(license_text)} bytes): {shown.stderr.strip()[-300:]}")

    def create_network(self):
        self.podman("network", "create", "--internal", "--disable-dns", "--subnet", SUBNET,
                    "--gateway", GATEWAY, NETWORK)
        self.podman("volume", "create", DATA_VOLUME)

    # -- pods

    def start_coordinator(self):
        objects = render(os.path.join(PODS, "private"))
        pod = Pod(objects, "StatefulSet", "collbench-coordinator", "collbench-coordinator-0",
                  COORDINATOR_IP, self.secrets, self.workdir)
        self.coordinator_pod = pod
        self.podman(*pod.podman_run_args("cbct-coordinator", pod.image_name(), {},
                                         lambda claim: DATA_VOLUME))
        self.check_probes(pod, "cbct-coordinator")

    def start_launcher(self):
        """The launcher's Deployment as one pod: the coordinator gives it
        every run across worker pods (they never launch one: the base's
        coordinator runs with --worker-launch off)."""
        objects = render(os.path.join(PODS, "private"))
        pod = Pod(objects, "Deployment", "collbench-launcher", "collbench-launcher-0",
                  LAUNCHER_IP, self.secrets, self.workdir)
        self.launcher_pod = pod
        self.podman(*pod.podman_run_args("cbct-launcher", pod.image_name(),
                                         {"collbench-coordinator": COORDINATOR_IP},
                                         lambda claim: None))
        self.check_probes(pod, "cbct-launcher")

    def start_workers(self):
        private = render(os.path.join(PODS, "private"))
        shared = render(os.path.join(PODS, "shared"))
        for letter, objects in (("a", private), ("b", private), ("c", shared), ("d", shared)):
            pod = Pod(objects, "DaemonSet", "collbench-worker", f"collbench-worker-{letter}",
                      WORKER_IPS[letter], self.secrets, self.workdir)
            self.worker_pods[letter] = pod
            self.start_worker_pod(letter)

    def start_worker_pod(self, letter):
        """The pod's init containers to their end, then its container."""
        pod = self.worker_pods[letter]
        for init in pod.init_containers():
            self.podman(*pod.podman_run_args(f"cbct-worker-{letter}-{init['name']}",
                                             pod.image_name(), {}, lambda claim: None, init))
        # The Service collbench-coordinator: its name resolves to the pod.
        self.podman(*pod.podman_run_args(f"cbct-worker-{letter}", pod.image_name(),
                                         {"collbench-coordinator": COORDINATOR_IP},
                                         lambda claim: None))

    def replace_worker_pod(self):
        """A pod recreated on its node (a rollout, an eviction: the killed
        worker b's pod comes back as a new container) registers again under
        its name, with the secret kept on the node; a pod on another node
        under that name, which has only that node's folder, is refused."""
        pod = self.worker_pods["b"]
        folder = pod.node_folder("/var/lib/collbench/worker")
        mode = os.stat(folder)
        if (mode.st_uid, mode.st_mode & 0o777) != (10001, 0o700):
            raise Failure(f"the state folder {folder} is uid {mode.st_uid} mode "
                          f"{oct(mode.st_mode & 0o777)} after the init container, not 10001 0700")
        if not os.listdir(folder):
            raise Failure(f"worker b kept no secret in its node's folder {folder}")
        self.podman("rm", "-f", "cbct-worker-b")
        self.start_worker_pod("b")
        deadline = time.time() + 60
        row = ""
        while time.time() < deadline:
            row = next((l for l in self.cli("workers").stdout.splitlines()
                        if "collbench-worker-b " in l + " "), "")
            if " ready" in row.lower() or "READY" in row:
                break
            time.sleep(0.5)
        else:
            raise Failure(f"the replaced pod of worker b did not register again: {row}\n"
                          + self.container_logs("cbct-worker-b"))
        # Worker b's name on another node: that node (pod d's) has its own
        # folder, and its own secret in it, not b's.
        impostor = Pod(pod.objects, "DaemonSet", "collbench-worker", "collbench-worker-d",
                       WORKER_IPS["b"], self.secrets, self.workdir)
        impostor.pod_name = "collbench-worker-b"  # the name it registers under
        args = impostor.podman_run_args("cbct-impostor", pod.image_name(),
                                        {"collbench-coordinator": COORDINATOR_IP},
                                        lambda claim: None)
        other = self.worker_pods["d"].node_folder("/var/lib/collbench/worker")
        args = [a.replace(impostor.node_folder("/var/lib/collbench/worker"), other) for a in args]
        ip = args.index("--ip")  # podman picks its address
        del args[ip:ip + 2]
        mac = args.index("--mac-address")
        del args[mac:mac + 2]
        self.podman(*args)
        deadline = time.time() + 30
        logs = ""
        while time.time() < deadline:
            logs = self.container_logs("cbct-impostor")
            if "known worker" in logs:
                break
            time.sleep(0.5)
        self.podman("rm", "-f", "cbct-impostor")
        if "known worker" not in logs:
            raise Failure(f"a pod of another node under worker b's name was not refused:\n{logs}")
        row = next((l for l in self.cli("workers").stdout.splitlines()
                    if "collbench-worker-b " in l + " "), "")
        if "ready" not in row.lower():
            raise Failure(f"worker b is not ready after the impostor: {row}")
        log("a replaced pod of worker b registered again; a pod of another node under its "
            "name was refused")

    def start_host_worker(self):
        argv = [os.path.join(self.bin, "collbench-worker"), "--coordinator", self.coordinator,
                "--name", HOST_WORKER, "--listen", f"{GATEWAY}:{HOST_WORKER_PORT}",
                "--advertise", f"{GATEWAY}:{HOST_WORKER_PORT}", "--slots", "2",
                "--join-token-file", self.join_token_file(),
                "--work-dir", os.path.join(self.workdir, "host-worker")]
        self.start_host_process("host worker", argv, "host-worker.log")

    def join_token_file(self):
        """The worker token in a 0600 file of the test's folder."""
        path = os.path.join(self.workdir, "host-worker-join-token")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(self.tokens["worker"] + "\n")
        return path

    def start_host_process(self, name, argv, log_name):
        out = open(os.path.join(self.workdir, log_name), "w")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        out.close()
        self.host_processes.append((name, proc))
        return proc

    def stop_host_processes(self):
        for _, proc in reversed(self.host_processes):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for name, proc in self.host_processes:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                log(f"{name} ignored SIGTERM")
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        self.host_processes = []

    def check_probes(self, pod, container, deadline_s=60):
        """Every probe of the pod's container passes, asked as the kubelet asks."""
        for kind, probe in pod.probes():
            deadline = time.time() + deadline_s
            while True:
                ok, what = self.probe_once(pod, probe)
                if ok:
                    log(f"{container}: {kind} {what}: ok")
                    break
                state = self.podman("inspect", "-f", "{{.State.Status}}", container,
                                    check=False, quiet=True)[1].strip()
                if state != "running" or time.time() > deadline:
                    raise Failure(f"{container}: {kind} {what} fails ({state}):\n"
                                  f"{self.container_logs(container)}")
                time.sleep(0.5)

    def probe_once(self, pod, probe):
        timeout = probe.get("timeoutSeconds", 1)
        if "httpGet" in probe:
            get = probe["httpGet"]
            url = f"http://{pod.ip}:{pod.port(get['port'])}{get.get('path', '/')}"
            try:
                with urllib.request.urlopen(url, timeout=timeout) as response:
                    return 200 <= response.status < 400, f"GET {url}"
            except Exception as e:  # refused, 503, timeout: not yet
                return False, f"GET {url} ({e})"
        if "tcpSocket" in probe:
            port = pod.port(probe["tcpSocket"]["port"])
            try:
                socket.create_connection((pod.ip, port), timeout=timeout).close()
                return True, f"TCP {pod.ip}:{port}"
            except OSError as e:
                return False, f"TCP {pod.ip}:{port} ({e})"
        if "grpc" in probe:
            port = pod.port(probe["grpc"]["port"])
            argv = ["health", f"{pod.ip}:{port}", "--timeout", f"{timeout}s"]
            if probe["grpc"].get("service"):
                argv += ["--service", probe["grpc"]["service"]]
            result = self.cli(*argv, check=False, timeout=timeout + 5)
            return result.returncode == 0, f"gRPC health {pod.ip}:{port} " \
                f"({(result.stdout + result.stderr).strip()})"
        raise Failure(f"unsupported probe {probe}")

    def wait_for_workers(self):
        names = {HOST_WORKER} | {f"collbench-worker-{l}" for l in WORKER_IPS}
        deadline = time.time() + 90
        out = ""
        while time.time() < deadline:
            out = self.cli("workers", check=False).stdout
            ready = {line.split()[0].split("/")[-1] for line in out.splitlines()[1:]
                     if len(line.split()) > 1 and line.split()[1] == "ready"}
            if names <= ready:
                break
            time.sleep(0.5)
        else:
            raise Failure(f"not every worker registered:\n{out}\n" + "\n".join(
                f"-- cbct-worker-{l}\n{self.container_logs(f'cbct-worker-{l}')}" for l in WORKER_IPS))
        for letter, pod in self.worker_pods.items():  # readiness = registered
            self.check_probes(pod, f"cbct-worker-{letter}")
        long = self.cli("workers", "--long").stdout
        log("workers:\n" + long.rstrip())
        return long

    # -- runs

    def create_run(self, label, workers, mpi, transport, extra=(), sizes=SIZES, iters="300"):
        env = ["--env=OMPI_MCA_mpi_yield_when_idle=1"] if mpi == "openmpi" else []
        out = self.cli("run", "allreduce", "--ranks", "2", "--workers", ",".join(workers),
                       "--mpi", mpi, "--transport", transport, "--check", "--sizes", sizes,
                       "--iters", iters, "--warmup", "20", "--timeout", "3m",
                       "--label", f"case={label}", *env, *extra).stdout
        m = re.match(r"(runs/\S+):", out.strip())
        if not m:
            raise Failure(f"unexpected output from collbench run: {out!r}")
        return m.group(1)

    def checked_run(self, label, workers, mpi, transport):
        run = self.create_run(label, workers, mpi, transport)
        watched = self.cli("watch", run, timeout=240, check=False)
        shown = self.cli("show", run).stdout
        log(f"{label}: {run}\n{shown.rstrip()}")
        if watched.returncode != 0:
            raise Failure(f"{label} ({run}) did not succeed:\n{watched.stdout}{watched.stderr}\n"
                          + "\n".join(self.container_logs(f"cbct-worker-{w[-1]}")
                                      for w in workers if w.startswith("collbench-worker-")))
        checked_results(self.cli, run, SIZES)
        launcher = self.rest(f"/v1/{run}").get("launcher", "")
        if len(workers) > 1 and not launcher.startswith("launchers/"):
            raise Failure(f"{label} ({run}) spans workers but was launched by {launcher!r}, "
                          "not by the launcher")
        return run, shown

    def compare(self, runs):
        out = self.cli("compare", *runs).stdout
        log("compare, host / one container / two containers:\n" + out.rstrip())
        for i, run in enumerate(runs):
            if not any(l.startswith(f"# [{i}] {run}:") for l in out.splitlines()):
                raise Failure(f"compare does not name {run} as [{i}]:\n{out}")
        rows = [l for l in out.splitlines() if l.split()[:1] == ["allreduce"]]
        if len(rows) != len(SIZES.split(",")):
            raise Failure(f"compare shows {len(rows)} sizes:\n{out}")
        return out

    def kill_worker_mid_run(self):
        run = self.create_run("kill", ["collbench-worker-a", "collbench-worker-b"], "openmpi",
                              "tcp", sizes="64K", iters="1000000")
        deadline = time.time() + 60
        state = {}
        while time.time() < deadline:  # until the ranks are timing
            state = self.rest(f"/v1/{run}")
            if state.get("state") == "RUNNING":
                break
            if state.get("state") in ("FAILED", "CANCELLED", "SUCCEEDED"):
                raise Failure(f"{run} ended before the kill: {state}")
            time.sleep(0.2)
        else:
            raise Failure(f"{run} did not start running: {state}")
        time.sleep(2)
        killed_at = time.monotonic()
        self.podman("kill", "-s", "KILL", "cbct-worker-b")
        watched = self.cli("watch", run, timeout=60, check=False)
        failed_after = time.monotonic() - killed_at
        shown = self.cli("show", run).stdout
        log(f"kill -9 of cbct-worker-b: {run} ended {failed_after:.1f}s later:\n{shown.rstrip()}")
        if watched.returncode == 0:
            raise Failure(f"{run} succeeded although a worker was killed")
        if failed_after > 10:
            raise Failure(f"{run} failed {failed_after:.1f}s after the kill (limit 10 s)")
        if "collbench-worker-b" not in shown:
            raise Failure(f"{run}'s error does not name collbench-worker-b:\n{shown}")
        leftover = ""
        deadline = time.time() + 10
        while time.time() < deadline:
            _, top = self.podman("top", "cbct-worker-a", "pid", "comm", check=False, quiet=True)
            leftover = [l for l in top.splitlines()[1:]
                        if re.search(r"collbench-rank|orted|prted|mpirun|hydra|mpiexec", l)]
            if not leftover:
                break
            time.sleep(0.5)
        if leftover:
            raise Failure(f"left in cbct-worker-a after the failed run: {leftover}")
        return failed_after

    def restart_coordinator(self, runs):
        before = self.cli("runs").stdout
        start = time.monotonic()
        # As the kubelet stops a pod: SIGTERM, then SIGKILL after the grace period.
        grace = self.coordinator_pod.spec.get("terminationGracePeriodSeconds", 30)
        self.podman("stop", "-t", str(grace), "cbct-coordinator", timeout=grace + 30)
        stopped = time.monotonic() - start
        code = self.podman("inspect", "-f", "{{.State.ExitCode}}", "cbct-coordinator")[1].strip()
        log(f"the coordinator container stopped {stopped:.1f}s after SIGTERM, exit code {code}")
        if stopped > 10:
            raise Failure(f"the coordinator took {stopped:.1f}s to stop on SIGTERM")
        self.podman("rm", "cbct-coordinator")
        self.podman(*self.coordinator_pod.podman_run_args(
            "cbct-coordinator", self.coordinator_pod.image_name(), {}, lambda claim: DATA_VOLUME))
        self.check_probes(self.coordinator_pod, "cbct-coordinator")
        log(f"the new coordinator container answered its probes "
            f"{time.monotonic() - start - stopped:.1f}s after the stop")
        after = self.cli("runs").stdout
        for run in runs:
            if run not in after:
                raise Failure(f"{run} is gone after the coordinator restarted:\n{after}")
            results = self.cli("show", run, "--output", "jsonl").stdout.splitlines()
            if len([l for l in results if l.strip()]) != len(SIZES.split(",")):
                raise Failure(f"{run}'s results are gone after the restart")
        log(f"after the restart {len(after.splitlines()) - 1} runs listed "
            f"(before: {len(before.splitlines()) - 1})")

    def scrape_with_prometheus(self):
        config = os.path.join(self.workdir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global: {scrape_interval: 1s}\n"
                    "scrape_configs:\n"
                    "  - job_name: collbench\n"
                    f"    static_configs: [{{targets: ['{COORDINATOR_IP}:8080']}}]\n")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.start_host_process("prometheus", [
            "prometheus", f"--config.file={config}",
            f"--storage.tsdb.path={os.path.join(self.workdir, 'prometheus-data')}",
            f"--web.listen-address=127.0.0.1:{port}"], "prometheus.log")
        query = f"http://127.0.0.1:{port}/api/v1/query?query=collbench_workers"
        deadline = time.time() + 60
        answer = ""
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(query, timeout=2) as response:
                    answer = response.read().decode()
                data = json.loads(answer)
                if data.get("status") == "success" and data["data"]["result"]:
                    log(f"Prometheus scraped the coordinator container: {answer[:300]}")
                    return
            except Exception as e:
                answer = str(e)
            time.sleep(1)
        raise Failure(f"Prometheus did not scrape {COORDINATOR_IP}:8080/metrics: {answer}")

    def main(self):
        self.timed("images (from empty storage)", self.build_images)
        self.timed("network", self.create_network)
        self.timed("coordinator container", self.start_coordinator)
        self.timed("launcher container", self.start_launcher)
        self.start_host_worker()
        self.timed("worker containers", self.start_workers)
        self.timed("workers registered and ready", self.wait_for_workers)
        host, _ = self.timed("2 ranks in the host worker", self.checked_run, "host",
                             [HOST_WORKER], "openmpi", "auto")
        one, _ = self.timed("2 ranks in one container", self.checked_run, "one-container",
                            ["collbench-worker-a"], "openmpi", "auto")
        two_tcp, _ = self.timed("1+1 ranks, two containers, private IPC (TCP)", self.checked_run,
                                "two-containers-tcp", ["collbench-worker-a", "collbench-worker-b"],
                                "openmpi", "tcp")
        two_shm, _ = self.timed("1+1 ranks, two containers sharing IPC (SHM)", self.checked_run,
                                "two-containers-shm", ["collbench-worker-c", "collbench-worker-d"],
                                "mpich", "shm")
        self.timed("compare", self.compare, [host, one, two_tcp, two_shm])
        self.timed("kill -9 of a worker container mid-run", self.kill_worker_mid_run)
        self.timed("a worker pod replaced on its node", self.replace_worker_pod)
        self.timed("coordinator restart on its volume", self.restart_coordinator,
                   [host, one, two_tcp, two_shm])
        self.timed("Prometheus scrape", self.scrape_with_prometheus)


def precheck():
    if os.geteuid() != 0:
        raise Skip("needs root (rootful podman)")
    for tool in ("podman", "kubectl", "prometheus", "mmdebstrap"):
        if shutil.which(tool) is None:
            raise Skip(f"'{tool}' not found (scripts/setup installs it)")
    try:
        import yaml  # noqa: F401
    except ImportError:
        raise Skip("python3-yaml is missing")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True, help="a build's bin/ (programs for the images "
                        "and the host worker)")
    parser.add_argument("--storage", default="/var/tmp/collbench-container-test",
                        help="podman storage of the test's own, emptied before and removed after")
    parser.add_argument("--keep-logs", action="store_true")
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
    for binary in ("collbench", "collbench-coordinator", "collbench-worker", "collbench-rank",
                   "collbench-rank-mpich"):
        if not os.access(os.path.join(args.bin_dir, binary), os.X_OK):
            print(f"FAIL: {binary} not found in {args.bin_dir}", flush=True)
            return 1

    lock = open(LOCK_FILE, "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    with open("/proc/sys/net/ipv4/ip_forward") as f:
        ip_forward = f.read().strip()
    workdir = tempfile.mkdtemp(prefix="collbench-containers-")
    os.chmod(workdir, 0o755)
    podman = Podman(os.path.abspath(args.storage))
    test = Test(args, workdir, podman)
    ok = False
    started = time.monotonic()
    try:
        podman.write_storage_conf()
        podman.remove_all()        # what a killed earlier instance left
        podman.remove_storage()
        test.main()
        ok = True
    except Failure as e:
        print(f"FAIL: {e}", flush=True)
    except KeyboardInterrupt as e:
        print(f"FAIL: interrupted ({e})", flush=True)
    finally:
        if not ok:
            for name in podman.names("container"):
                print(f"---- container {name} (last lines)\n{test.container_logs(name)}", flush=True)
            for name in sorted(os.listdir(workdir)):
                if name.endswith(".log"):
                    print(f"---- {name} (last lines)\n{tail(os.path.join(workdir, name))}",
                          flush=True)
        test.stop_host_processes()
        podman.write_storage_conf()
        podman.remove_all()
        podman.remove_storage()
        left = podman.names("network")
        with open("/proc/sys/net/ipv4/ip_forward", "w") as f:
            f.write(ip_forward)
        if left:
            print(f"FAIL: left behind: {left}", flush=True)
            ok = False
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
    summary = ", ".join(f"{what} {seconds:.1f}s" for what, seconds in test.timings)
    log(f"{'PASS' if ok else 'FAIL'} in {time.monotonic() - started:.1f}s: {summary}")
    if ok and not args.keep_logs:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        log(f"logs in {workdir}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
