# SPDX-License-Identifier: Apache-2.0
"""What each rendering of deploy/kubernetes must say (issue 21, item 11).

Every rendering: a PodDisruptionBudget for the coordinator (maxUnavailable 0)
and the workers (an integer minAvailable, all a DaemonSet's pods take), and
memory requests and limits on both containers, the worker's limit above its
memory-backed /dev/shm. Each feature only where its overlay is, and nowhere
else:

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


def check_budgets(docs, what):
    budgets = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "PodDisruptionBudget"}
    coordinator = budgets.get("collbench-coordinator")
    if coordinator is None or coordinator.get("maxUnavailable") != 0:
        raise Failure(f"{what}: PodDisruptionBudget collbench-coordinator with maxUnavailable 0 "
                      f"expected, found {coordinator}")
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
    for kind, name in (("StatefulSet", "collbench-coordinator"), ("DaemonSet", "collbench-worker")):
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


def check(docs, features, dashboards_dir, what):
    """All of the above for one rendering with the given features."""
    check_budgets(docs, what)
    check_memory(docs, what)
    worker = find(docs, "DaemonSet", "collbench-worker", what)
    config = next((d["data"] for d in docs if d["kind"] == "ConfigMap"
                   and d["metadata"]["name"].startswith("collbench-config")), {})
    check_gpus(worker, config.get("COLLBENCH_WORKER_SLOTS"), features, what)
    check_rdma(docs, worker, features, what)
    check_node_selection(worker, features, what)
    check_ingress(docs, features, what)
    check_dashboards(docs, features, dashboards_dir, what)
