# SPDX-License-Identifier: Apache-2.0
"""What each rendering of deploy/kubernetes must say (issue 21, item 11).

Every rendering: a PodDisruptionBudget for the coordinator and the launcher
(maxUnavailable 0) and the workers (an integer minAvailable, all a
DaemonSet's pods take); memory requests and limits on every container, the
worker's limit above its memory-backed /dev/shm; no container that may
escalate privileges, is privileged or writes its root filesystem, and each
token file read-only from its key of the tokens Secret. The launcher: one
replica of the worker's program called as collbench-launcher, with the
workers' coordinator address and TLS flags, on the workers' network (the
node's where theirs is) and in no other host namespace, every capability
dropped, ready while registered (gRPC health of its --listen port),
advertising its pod IP, and let through the NetworkPolicies to and from the
workers and to the coordinator's gRPC port. Each feature only where its
overlay is, and nowhere else:

  gpu             one GPU per worker
  gpu-multi       several GPUs per worker, and as many slots
  rdma            IPC_LOCK added and every other capability dropped, an
                  RDMA device resource, /etc/nccl.conf that keeps NCCL off
                  sockets (NCCL_NET=IB, NCCL_IB_DISABLE=0)
  ingress         an Ingress for /v1 and /ui with TLS, HTTPS to the coordinator
  node-selection  workers only on nodes labelled collbench.io/worker=true
  monitoring      the dashboards as ConfigMaps, identical to dashboards/*.json

check(docs, features, what) raises Failure naming the object and field.
"""

import os
import re

NODE_LABEL = "collbench.io/worker"
NCCL_CONF = "/etc/nccl.conf"
NCCL_REQUIRED = {"NCCL_NET": "IB", "NCCL_IB_DISABLE": "0"}
INGRESS_PATHS = {"/v1", "/ui"}
# Each workload, its token file flag and the key of the tokens Secret it reads.
WORKLOADS = {
    ("StatefulSet", "collbench-coordinator"): ("--tokens", "tokens"),
    ("DaemonSet", "collbench-worker"): ("--join-token-file", "join-token"),
    ("Deployment", "collbench-launcher"): ("--join-token-file", "launcher-token"),
}
TOKENS_SECRET = "collbench-tokens"
COORDINATOR_GRPC_PORT = 50051
UNITS = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
         "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "": 1}


class Failure(Exception):
    pass


def memory_bytes(quantity, field):
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti|k|M|G|T)?", str(quantity))
    if not match:
        raise Failure(f"{field}: {quantity!r} is not a memory quantity")
    return int(match.group(1)) * UNITS[match.group(2) or ""]


def find(docs, kind, name, what):
    for doc in docs:
        if doc["kind"] == kind and doc["metadata"]["name"] == name:
            return doc
    raise Failure(f"{what}: no {kind} {name}")


def pod_spec(doc):
    return doc["spec"]["template"]["spec"]


def container(doc):
    return pod_spec(doc)["containers"][0]


def flag_values(doc):
    """--flag=value args of the first container: {"--flag": "value"}."""
    return dict(arg.split("=", 1) for arg in container(doc).get("args", []) if "=" in arg)


def check_budgets(docs, what):
    budgets = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "PodDisruptionBudget"}
    # One pod each, whose eviction fails the runs in flight.
    for name in ("collbench-coordinator", "collbench-launcher"):
        budget = budgets.get(name)
        if budget is None or budget.get("maxUnavailable") != 0:
            raise Failure(f"{what}: PodDisruptionBudget {name} with maxUnavailable 0 "
                          f"expected, found {budget}")
    worker = budgets.get("collbench-worker")
    # A DaemonSet has no scale: its pods' budget takes only an integer minAvailable.
    if worker is None or "maxUnavailable" in worker or \
            not isinstance(worker.get("minAvailable"), int):
        raise Failure(f"{what}: PodDisruptionBudget collbench-worker with an integer minAvailable "
                      f"expected, found {worker}")
    for name, spec in budgets.items():
        component = spec["selector"]["matchLabels"].get("app.kubernetes.io/component")
        if f"collbench-{component}" != name:
            raise Failure(f"{what}: PodDisruptionBudget {name} selects component {component}")


def check_memory(docs, what):
    for kind, name in WORKLOADS:
        doc = find(docs, kind, name, what)
        resources = container(doc).get("resources", {})
        field = f"{what}: {kind}/{name} resources"
        if not all("memory" in resources.get(part, {}) for part in ("requests", "limits")):
            raise Failure(f"{field}: a memory request and a memory limit expected, "
                          f"found {resources}")
        request = memory_bytes(resources["requests"]["memory"], f"{field}.requests.memory")
        limit = memory_bytes(resources["limits"]["memory"], f"{field}.limits.memory")
        if limit < request:
            raise Failure(f"{field}: limits.memory is below requests.memory")
        for volume in pod_spec(doc).get("volumes", []):
            shm = volume.get("emptyDir", {})
            if shm.get("medium") == "Memory" and shm.get("sizeLimit") and \
                    memory_bytes(shm["sizeLimit"], f"{field} volume {volume['name']}") >= limit:
                raise Failure(f"{field}: memory-backed volume {volume['name']} "
                              f"({shm['sizeLimit']}) does not fit in limits.memory "
                              f"({resources['limits']['memory']})")


def check_hardening(docs, what, features=frozenset()):
    """Every workload: non-root, no privilege escalation, not privileged, a
    read-only root filesystem, and its token file read-only from its key of
    the tokens Secret."""
    for (kind, name), (flag, key) in WORKLOADS.items():
        doc = find(docs, kind, name, what)
        field = f"{what}: {kind}/{name}"
        reads_nodes = kind == "DaemonSet" and "node-topology" in features
        if pod_spec(doc).get("automountServiceAccountToken") is not (True if reads_nodes else False):
            raise Failure(f"{field}: automountServiceAccountToken: {str(reads_nodes).lower()} "
                          "expected")
        if pod_spec(doc).get("securityContext", {}).get("runAsNonRoot") is not True:
            raise Failure(f"{field}: securityContext.runAsNonRoot: true expected")
        security = container(doc).get("securityContext", {})
        expected = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True}
        found = {k: security.get(k) for k in expected}
        if found != expected or security.get("privileged"):
            raise Failure(f"{field}: container securityContext {expected} and not privileged "
                          f"expected, found {security}")
        check_secret_file(doc, flag, key, field)


def check_secret_file(doc, flag, key, field):
    """The file `flag` names is key `key` of the tokens Secret, mounted read-only."""
    path = flag_values(doc).get(flag)
    if path is None:
        raise Failure(f"{field}: no {flag}=FILE argument")
    volumes = {v["name"]: v for v in pod_spec(doc).get("volumes", [])}
    for mount in container(doc).get("volumeMounts", []):
        folder = mount["mountPath"].rstrip("/") + "/"
        if not path.startswith(folder):
            continue
        secret = volumes.get(mount["name"], {}).get("secret")
        items = {i["path"]: i["key"] for i in (secret or {}).get("items", [])}
        if secret is None or secret.get("secretName") != TOKENS_SECRET or \
                items.get(path[len(folder):]) != key:
            raise Failure(f"{field}: {flag}={path} is not the key {key} of Secret "
                          f"{TOKENS_SECRET} (volume {mount['name']}: {secret})")
        if mount.get("readOnly") is not True:
            raise Failure(f"{field}: the volume of {flag}={path} is not mounted read-only")
        return
    raise Failure(f"{field}: {flag}={path} is in no mounted volume")


def check_launcher(docs, worker, what):
    """The launcher: see the module's docstring."""
    launcher = find(docs, "Deployment", "collbench-launcher", what)
    field = f"{what}: Deployment/collbench-launcher"
    spec = pod_spec(launcher)
    if launcher["spec"].get("replicas") != 1:
        raise Failure(f"{field}: one replica expected, found {launcher['spec'].get('replicas')}")
    if container(launcher).get("command", [])[-1:] != ["collbench-launcher"]:
        raise Failure(f"{field}: command {container(launcher).get('command')} does not run "
                      "collbench-launcher")
    # Its mpirun takes the workers' MPI interface, and their daemons dial it back.
    host_network = bool(pod_spec(worker).get("hostNetwork"))
    if bool(spec.get("hostNetwork")) != host_network:
        raise Failure(f"{field}: hostNetwork {spec.get('hostNetwork')}, the workers' is "
                      f"{pod_spec(worker).get('hostNetwork')}: it must be on their network")
    shared = [k for k in ("hostIPC", "hostPID") if spec.get(k)]
    if shared:
        raise Failure(f"{field}: {', '.join(shared)}: the launcher hosts no ranks")
    capabilities = container(launcher).get("securityContext", {}).get("capabilities", {})
    if capabilities != {"drop": ["ALL"]}:
        raise Failure(f"{field}: capabilities {{drop: [ALL]}} expected, found {capabilities}")
    limits = container(launcher).get("resources", {}).get("limits", {})
    devices = sorted(set(limits) - {"cpu", "memory"})
    if devices:
        raise Failure(f"{field}: asks for {devices}; the launcher runs no ranks")
    args, worker_args = flag_values(launcher), flag_values(worker)
    for flag in ("--coordinator", "--tls-ca", "--tls-server-name"):
        if args.get(flag) != worker_args.get(flag):
            raise Failure(f"{field}: {flag} {args.get(flag)!r}, the workers' is "
                          f"{worker_args.get(flag)!r}")
    listen_port = int(args.get("--listen", ":0").rsplit(":", 1)[1])
    readiness = container(launcher).get("readinessProbe", {}).get("grpc", {})
    if not listen_port or readiness.get("port") != listen_port:
        raise Failure(f"{field}: readiness must be the gRPC health of --listen "
                      f"({args.get('--listen')}), found {readiness}")
    if "livenessProbe" not in container(launcher):
        raise Failure(f"{field}: no livenessProbe")
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
           for e in container(launcher).get("env", [])}
    if not args.get("--advertise", "").startswith("$(POD_IP):") or \
            env.get("POD_IP") != "status.podIP":
        raise Failure(f"{field}: --advertise must be $(POD_IP):PORT with POD_IP from "
                      f"status.podIP, found {args.get('--advertise')}, POD_IP from "
                      f"{env.get('POD_IP')}")
    check_launcher_policies(docs, what)


def selects(peer, component):
    labels = peer.get("podSelector", {}).get("matchLabels", {})
    return labels.get("app.kubernetes.io/component") == component and len(peer) == 1


def allows(rules, direction, component, port=None):
    """Whether one rule lets TCP to `port` (None: every port) through to or
    from pods of `component`."""
    for rule in rules:
        if not any(selects(peer, component) for peer in rule.get(direction, [])):
            continue
        for entry in rule.get("ports", []):
            if entry.get("protocol", "TCP") == "TCP" and entry.get("port") in (None, port):
                return True
    return False


def check_launcher_policies(docs, what):
    policies = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "NetworkPolicy"}
    if not policies:
        return
    worker = policies.get("collbench-worker", {})
    launcher = policies.get("collbench-launcher")
    if launcher is None:
        raise Failure(f"{what}: NetworkPolicies but none for the launcher")
    needed = [
        ("collbench-worker ingress from the launcher, any TCP port",
         allows(worker.get("ingress", []), "from", "launcher")),
        ("collbench-worker egress to the launcher, any TCP port",
         allows(worker.get("egress", []), "to", "launcher")),
        ("collbench-launcher ingress from workers, any TCP port",
         allows(launcher.get("ingress", []), "from", "worker")),
        ("collbench-launcher egress to workers, any TCP port",
         allows(launcher.get("egress", []), "to", "worker")),
        (f"collbench-launcher egress to the coordinator's port {COORDINATOR_GRPC_PORT}",
         allows(launcher.get("egress", []), "to", "coordinator", COORDINATOR_GRPC_PORT)),
    ]
    missing = [name for name, allowed in needed if not allowed]
    if missing:
        raise Failure(f"{what}: NetworkPolicy: no rule for {'; '.join(missing)}")


def check_gpus(worker, slots, features, what):
    gpus = int(container(worker).get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0))
    if "gpu-multi" in features:
        if gpus <= 1 or slots != str(gpus):
            raise Failure(f"{what}: gpu-multi: several GPUs per worker and as many slots expected, "
                          f"found nvidia.com/gpu {gpus}, COLLBENCH_WORKER_SLOTS {slots!r}")
    elif "gpu" in features and gpus != 1:
        raise Failure(f"{what}: gpu: one GPU per worker expected, found {gpus}")
    elif not features & {"gpu", "gpu-multi"} and gpus:
        raise Failure(f"{what}: workers ask for {gpus} GPUs without a gpu component")


def nccl_conf(docs, worker, what):
    """The settings of the file mounted at /etc/nccl.conf; None when none is."""
    spec = pod_spec(worker)
    mount = next((m for m in container(worker).get("volumeMounts", [])
                  if m["mountPath"] == NCCL_CONF), None)
    if mount is None:
        return None
    volume = next((v for v in spec.get("volumes", []) if v["name"] == mount["name"]), None)
    if volume is None or "configMap" not in volume:
        raise Failure(f"{what}: {NCCL_CONF} is not from a ConfigMap: {volume}")
    data = find(docs, "ConfigMap", volume["configMap"]["name"], what).get("data", {})
    text = data.get(mount.get("subPath"))
    if text is None:
        raise Failure(f"{what}: {NCCL_CONF}: ConfigMap {volume['configMap']['name']} has no key "
                      f"{mount.get('subPath')!r}")
    return dict(line.split("=", 1) for line in text.splitlines()
                if "=" in line and not line.startswith("#"))


def check_rdma(docs, worker, features, what):
    capabilities = container(worker)["securityContext"].get("capabilities", {})
    limits = container(worker).get("resources", {}).get("limits", {})
    rdma_resources = [key for key in limits if key.startswith("rdma/")]
    settings = nccl_conf(docs, worker, what)
    if capabilities.get("drop") != ["ALL"]:
        raise Failure(f"{what}: worker capabilities: drop [ALL] expected, found {capabilities}")
    if "rdma" not in features:
        if capabilities.get("add") or rdma_resources or settings is not None:
            raise Failure(f"{what}: RDMA settings without the rdma component: {capabilities}, "
                          f"{rdma_resources}, {NCCL_CONF}: {settings}")
        return
    if capabilities.get("add") != ["IPC_LOCK"]:
        raise Failure(f"{what}: rdma: worker capabilities add [IPC_LOCK] expected, "
                      f"found {capabilities}")
    if not rdma_resources:
        raise Failure(f"{what}: rdma: the worker asks for no RDMA device (limits: {limits})")
    missing = {k: v for k, v in NCCL_REQUIRED.items() if (settings or {}).get(k) != v}
    if missing:
        raise Failure(f"{what}: rdma: {NCCL_CONF} must set {missing}, found {settings}")


def check_node_selection(worker, features, what):
    selector = pod_spec(worker).get("nodeSelector", {})
    if "node-selection" in features:
        if selector.get(NODE_LABEL) != "true":
            raise Failure(f"{what}: node-selection: nodeSelector {NODE_LABEL}: \"true\" expected, "
                          f"found {selector}")
    elif NODE_LABEL in selector:
        raise Failure(f"{what}: workers select {NODE_LABEL} without the node-selection component")


def check_ingress(docs, features, what):
    ingresses = [d for d in docs if d["kind"] == "Ingress"]
    if "ingress" not in features:
        if ingresses:
            raise Failure(f"{what}: an Ingress without the ingress component")
        return
    if len(ingresses) != 1:
        raise Failure(f"{what}: ingress: one Ingress expected, found {len(ingresses)}")
    spec = ingresses[0]["spec"]
    tls_hosts = {h for entry in spec.get("tls", []) for h in entry.get("hosts", [])}
    paths = set()
    for rule in spec["rules"]:
        if rule.get("host") not in tls_hosts:
            raise Failure(f"{what}: ingress: host {rule.get('host')} has no TLS entry")
        for path in rule["http"]["paths"]:
            service = path["backend"]["service"]
            if (service["name"], service["port"].get("name")) != ("collbench-coordinator", "http"):
                raise Failure(f"{what}: ingress: {path['path']} goes to {service}")
            paths.add(path["path"])
    if paths != INGRESS_PATHS:
        raise Failure(f"{what}: ingress: paths {sorted(INGRESS_PATHS)} expected, "
                      f"found {sorted(paths)}")
    args = container(find(docs, "StatefulSet", "collbench-coordinator", what)).get("args", [])
    if not any(a.startswith("--tls-cert=") for a in args):
        raise Failure(f"{what}: ingress: the coordinator serves plain HTTP (no --tls-cert): "
                      "the UI's forms would be refused behind a TLS-terminating Ingress")


def check_dashboards(docs, features, dashboards_dir, what):
    boards = {key: value for d in docs if d["kind"] == "ConfigMap"
              and d["metadata"].get("labels", {}).get("grafana_dashboard") == "1"
              for key, value in d["data"].items()}
    if "monitoring" not in features:
        if boards:
            raise Failure(f"{what}: dashboards without the monitoring component")
        return
    files = sorted(n for n in os.listdir(dashboards_dir) if n.endswith(".json"))
    if sorted(boards) != files:
        raise Failure(f"{what}: monitoring: dashboards {sorted(boards)} rendered, "
                      f"dashboards/ has {files}")
    for name in files:
        with open(os.path.join(dashboards_dir, name)) as file:
            if file.read() != boards[name]:
                raise Failure(f"{what}: monitoring: the rendered {name} differs from "
                              f"dashboards/{name} (cp dashboards/*.json "
                              "deploy/kubernetes/components/monitoring/dashboards/)")


def check_worker_state(worker, what):
    """The worker's --state-dir is on the node (a hostPath that outlives the
    pod, so a replaced pod keeps its node's name), and the only init
    container that touches it runs as root with CHOWN and FOWNER alone."""
    field = f"{what}: DaemonSet/collbench-worker"
    state_dir = flag_values(worker).get("--state-dir")
    mounts = {m["mountPath"]: m["name"] for m in container(worker).get("volumeMounts", [])}
    if state_dir not in mounts:
        raise Failure(f"{field}: --state-dir {state_dir} is not a mounted volume")
    state = mounts[state_dir]
    volumes = {v["name"]: v for v in pod_spec(worker).get("volumes", [])}
    host_path = volumes.get(state, {}).get("hostPath", {})
    if host_path.get("type") != "DirectoryOrCreate" or not host_path.get("path"):
        raise Failure(f"{field}: the state volume is not a DirectoryOrCreate hostPath: "
                      f"{volumes.get(state)}")
    inits = pod_spec(worker).get("initContainers", [])
    for init in inits:
        security = init.get("securityContext", {})
        capabilities = security.get("capabilities", {})
        if (capabilities.get("drop") != ["ALL"]
                or sorted(capabilities.get("add", [])) != ["CHOWN", "FOWNER"]
                or security.get("allowPrivilegeEscalation") is not False
                or security.get("privileged")):
            raise Failure(f"{field}: init container {init['name']} may do more than chown: "
                          f"{security}")
    if not any(m["name"] == state for i in inits for m in i.get("volumeMounts", [])):
        raise Failure(f"{field}: no init container makes the state folder the worker's")


def check_kube_controller(docs, worker, features, what):
    """collbench-kube only where the component is: its own ServiceAccount
    (the only workload that mounts a Kubernetes token), a ClusterRole with
    nothing beyond nodes get/list/watch/patch, nodes/status patch and events
    create (no Secret, no wildcard, no delete), a Role that lists pods and
    nothing else, bound to that account, the
    coordinator's read token from the Secret, hardened as the others. The
    worker DaemonSet tolerates the taints it sets, everywhere."""
    tolerated = {(t.get("key"), t.get("effect")) for t in pod_spec(worker).get("tolerations", [])}
    for key in ("collbench.io/degraded", "collbench.io/testing"):
        if (key, "NoSchedule") not in tolerated:
            raise Failure(f"{what}: DaemonSet/collbench-worker does not tolerate {key}:NoSchedule")
    present = [d for d in docs if d["metadata"]["name"] == "collbench-kube"]
    if "kube-controller" not in features:
        if present:
            raise Failure(f"{what}: collbench-kube or a ClusterRole without the kube-controller "
                          "component")
        return
    kube = find(docs, "Deployment", "collbench-kube", what)
    field = f"{what}: Deployment/collbench-kube"
    spec = pod_spec(kube)
    if spec.get("serviceAccountName") != "collbench-kube":
        raise Failure(f"{field}: serviceAccountName collbench-kube expected")
    if spec.get("securityContext", {}).get("runAsNonRoot") is not True:
        raise Failure(f"{field}: securityContext.runAsNonRoot: true expected")
    security = container(kube).get("securityContext", {})
    if security.get("allowPrivilegeEscalation") is not False or \
            security.get("readOnlyRootFilesystem") is not True:
        raise Failure(f"{field}: a hardened container expected, found {security}")
    check_secret_file(kube, "--token-file", "read-token", field)
    role = find(docs, "ClusterRole", "collbench-kube", what)
    allowed = {("nodes", "get"), ("nodes", "list"), ("nodes", "watch"), ("nodes", "patch"),
               ("nodes/status", "patch"), ("events", "create")}
    for rule in role.get("rules", []):
        for resource in rule.get("resources", []):
            for verb in rule.get("verbs", []):
                if rule.get("apiGroups") != [""] or (resource, verb) not in allowed:
                    raise Failure(f"{what}: ClusterRole/collbench-kube grants {verb} on "
                                  f"{rule.get('apiGroups')} {resource}, more than it needs")
    role = find(docs, "Role", "collbench-kube", what)
    for rule in role.get("rules", []):
        if rule.get("apiGroups") != [""] or rule.get("resources") != ["pods"] or \
                rule.get("verbs") != ["list"]:
            raise Failure(f"{what}: Role/collbench-kube grants {rule}, more than listing pods")
    binding = find(docs, "ClusterRoleBinding", "collbench-kube", what)
    subjects = binding.get("subjects", [])
    if binding["roleRef"].get("name") != "collbench-kube" or \
            [(s.get("kind"), s.get("name")) for s in subjects] != [("ServiceAccount",
                                                                    "collbench-kube")]:
        raise Failure(f"{what}: ClusterRoleBinding/collbench-kube binds {subjects} to "
                      f"{binding['roleRef']}")


def check_node_topology(docs, worker, features, what):
    """With node-topology (and only then) the workers read their node's
    labels: --node-labels, their own ServiceAccount, whose ClusterRole
    grants get on nodes and nothing else."""
    field = f"{what}: DaemonSet/collbench-worker"
    flags = flag_values(worker)
    if "node-topology" not in features:
        if "--node-labels" in flags or pod_spec(worker).get("serviceAccountName"):
            raise Failure(f"{field}: --node-labels or a ServiceAccount without node-topology")
        return
    if not flags.get("--node-labels"):
        raise Failure(f"{field}: no --node-labels")
    if pod_spec(worker).get("serviceAccountName") != "collbench-worker":
        raise Failure(f"{field}: serviceAccountName collbench-worker expected")
    role = find(docs, "ClusterRole", "collbench-worker-node-reader", what)
    if role.get("rules") != [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]:
        raise Failure(f"{what}: ClusterRole/collbench-worker-node-reader grants {role.get('rules')}, "
                      "more than get on nodes")
    binding = find(docs, "ClusterRoleBinding", "collbench-worker-node-reader", what)
    if [(s.get("kind"), s.get("name")) for s in binding.get("subjects", [])] != \
            [("ServiceAccount", "collbench-worker")]:
        raise Failure(f"{what}: ClusterRoleBinding/collbench-worker-node-reader binds "
                      f"{binding.get('subjects')}")


def check(docs, features, dashboards_dir, what):
    """All of the above for one rendering with the given features."""
    check_budgets(docs, what)
    check_memory(docs, what)
    check_hardening(docs, what, features)
    worker = find(docs, "DaemonSet", "collbench-worker", what)
    check_launcher(docs, worker, what)
    check_worker_state(worker, what)
    config = next((d["data"] for d in docs if d["kind"] == "ConfigMap"
                   and d["metadata"]["name"].startswith("collbench-config")), {})
    check_gpus(worker, config.get("COLLBENCH_WORKER_SLOTS"), features, what)
    check_rdma(docs, worker, features, what)
    check_node_selection(worker, features, what)
    check_ingress(docs, features, what)
    check_dashboards(docs, features, dashboards_dir, what)
    check_kube_controller(docs, worker, features, what)
    check_node_topology(docs, worker, features, what)
