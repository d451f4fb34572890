# SPDX-License-Identifier: Apache-2.0
"""A small kube-scheduler for the test Kubernetes API server.

Every pass (200 ms by default, and only when something was written since
the last one) it looks at the pods that have no `spec.nodeName`, are not
being deleted and are for the default scheduler, highest `spec.priority`
first, then oldest first. For each it runs the filters of the real
scheduler, in its order, on every node: NodeUnschedulable
(`spec.unschedulable`), TaintToleration (NoSchedule and NoExecute taints
against the pod's tolerations), NodeAffinity (`spec.nodeSelector` and
required node affinity), NodeResourcesFit (the containers' requests: cpu,
memory, `nvidia.com/gpu`, any extended resource, against
`status.allocatable` less what the pods bound there and not Succeeded or
Failed request; `pods` when the node declares it) and InterPodAffinity
(required pod affinity and anti-affinity, both ways, by any topologyKey;
`kubernetes.io/hostname` is the node's name when the node has no such
label). A pod that fits is bound to the least loaded fitting node
(`spec.nodeName`, condition PodScheduled=True); one that does not gets
PodScheduled=False, reason Unschedulable, and the real scheduler's
message, e.g. "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.
preemption: 0/3 nodes are available: 3 No preemption victims found for
incoming pod.", written only when it changes.

It never runs a container: the tests play the kubelet.
"""
import re
import threading
from decimal import Decimal, InvalidOperation

DEFAULT_SCHEDULER = "default-scheduler"
HOSTNAME_LABEL = "kubernetes.io/hostname"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"

_SUFFIXES = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal(10) ** 3, "M": Decimal(10) ** 6, "G": Decimal(10) ** 9, "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15, "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))([eE][+-]?\d+|[a-zA-Z]*)")

# Why a node was filtered out, as the real scheduler words it, and whether
# preempting lower-priority pods could change that.
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


def parse_quantity(value):
    """A Kubernetes quantity ("500m", "2", "1Gi", "1e3", 4) as a Decimal."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Decimal(str(value))
    match = _QUANTITY.fullmatch(str(value).strip())
    if not match:
        raise ValueError(f"not a quantity: {value!r}")
    number, suffix = match.groups()
    try:
        if suffix[:1] in ("e", "E") and len(suffix) > 1:
            return Decimal(number) * Decimal(10) ** int(suffix[1:])
        return Decimal(number) * _SUFFIXES[suffix]
    except (KeyError, InvalidOperation) as error:
        raise ValueError(f"not a quantity: {value!r}") from error


def _quantities(mapping):
    result = {}
    for name, value in (mapping or {}).items():
        try:
            result[name] = parse_quantity(value)
        except ValueError:
            continue
    return result


def pod_requests(pod):
    """What a pod requests: the sum over its containers, at least the
    largest init container's (as the real scheduler counts). A container's
    limit stands for a request it does not state."""
    spec = pod.get("spec") or {}

    def container_requests(container):
        resources = container.get("resources") or {}
        requests = _quantities(resources.get("limits"))
        requests.update(_quantities(resources.get("requests")))
        return requests

    total = {}
    for container in spec.get("containers") or []:
        for name, amount in container_requests(container).items():
            total[name] = total.get(name, Decimal(0)) + amount
    for container in spec.get("initContainers") or []:
        for name, amount in container_requests(container).items():
            total[name] = max(total.get(name, Decimal(0)), amount)
    return {name: amount for name, amount in total.items() if amount > 0}


def node_labels(node):
    """A node's labels, with kubernetes.io/hostname defaulting to its name."""
    labels = dict((node.get("metadata") or {}).get("labels") or {})
    labels.setdefault(HOSTNAME_LABEL, node["metadata"]["name"])
    return labels


def tolerates(tolerations, taint):
    """Whether one of the pod's tolerations matches the node's taint."""
    for toleration in tolerations or []:
        if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
            continue
        operator = toleration.get("operator") or "Equal"
        if operator == "Exists":
            if not toleration.get("key") or toleration.get("key") == taint.get("key"):
                return True
        elif (toleration.get("key") == taint.get("key")
              and (toleration.get("value") or "") == (taint.get("value") or "")):
            return True
    return False


def _match_expression(labels, expression):
    key, operator = expression.get("key"), expression.get("operator")
    values = expression.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt") and key in labels and values:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def matches_label_selector(selector, labels):
    """A metav1.LabelSelector (matchLabels, matchExpressions) against labels;
    an absent selector matches nothing, an empty one everything."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_match_expression(labels, e) for e in selector.get("matchExpressions") or [])


def matches_node_affinity(pod, node):
    """spec.nodeSelector and required node affinity of the pod on the node."""
    spec = pod.get("spec") or {}
    labels = node_labels(node)
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if not required:
        return True
    fields = {"metadata.name": node["metadata"]["name"]}
    for term in required.get("nodeSelectorTerms") or []:
        expressions = term.get("matchExpressions") or []
        field_expressions = term.get("matchFields") or []
        if not expressions and not field_expressions:
            continue  # an empty term matches no node
        if (all(_match_expression(labels, e) for e in expressions)
                and all(_match_expression(fields, e) for e in field_expressions)):
            return True
    return False


def _pod_terms(pod, kind):
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    return affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or []


def _term_selects(term, owner, candidate):
    """Whether an affinity term of the owner pod selects the candidate pod."""
    owner_namespace = owner["metadata"].get("namespace")
    namespaces = term.get("namespaces") or []
    if term.get("namespaceSelector") == {}:
        pass  # every namespace
    elif candidate["metadata"].get("namespace") not in (namespaces or [owner_namespace]):
        return False
    return matches_label_selector(term.get("labelSelector"), candidate["metadata"].get("labels") or {})


class _Placement:
    """The nodes and the pods bound to them during one pass."""

    def __init__(self, nodes, pods):
        self.nodes = {n["metadata"]["name"]: n for n in nodes}
        self.labels = {name: node_labels(n) for name, n in self.nodes.items()}
        self.bound = {name: [] for name in self.nodes}
        self.used = {name: {} for name in self.nodes}
        for pod in pods:
            node_name = (pod.get("spec") or {}).get("nodeName")
            phase = (pod.get("status") or {}).get("phase")
            if node_name in self.nodes and phase not in ("Succeeded", "Failed"):
                self.add(pod, node_name)

    def add(self, pod, node_name):
        self.bound[node_name].append(pod)
        used = self.used[node_name]
        for name, amount in pod_requests(pod).items():
            used[name] = used.get(name, Decimal(0)) + amount

    def allocatable(self, node_name):
        status = self.nodes[node_name].get("status") or {}
        return _quantities(status.get("allocatable") or status.get("capacity"))

    def pods_in_domain(self, node_name, topology_key):
        """The bound pods whose node shares the node's value of topology_key."""
        value = self.labels[node_name].get(topology_key)
        if value is None:
            return []
        return [pod for other, pods in self.bound.items()
                if self.labels[other].get(topology_key) == value for pod in pods]

    def filter(self, pod, node_name, requests):
        """The reasons the node cannot take the pod, and whether preemption
        could help; an empty list when it fits. Like the real scheduler, the
        first filter that fails gives the reasons."""
        node = self.nodes[node_name]
        spec = pod.get("spec") or {}
        tolerations = spec.get("tolerations")
        if (node.get("spec") or {}).get("unschedulable") and not tolerates(
                tolerations, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}):
            return ["node(s) were unschedulable"], False
        for taint in (node.get("spec") or {}).get("taints") or []:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
                key, value = taint.get("key"), taint.get("value", "")
                return [f"node(s) had untolerated taint {{{key}: {value}}}"], False
        if not matches_node_affinity(pod, node):
            return ["node(s) didn't match Pod's node affinity/selector"], False
        allocatable = self.allocatable(node_name)
        reasons = []
        if "pods" in allocatable and len(self.bound[node_name]) + 1 > allocatable["pods"]:
            reasons.append("Too many pods")
        for name, amount in sorted(requests.items()):
            if self.used[node_name].get(name, Decimal(0)) + amount > allocatable.get(name, Decimal(0)):
                reasons.append(f"Insufficient {name}")
        if reasons:
            return reasons, True
        return self._inter_pod_affinity(pod, node_name)

    def _inter_pod_affinity(self, pod, node_name):
        for existing_node in self.bound:
            for existing in self.bound[existing_node]:
                for term in _pod_terms(existing, "podAntiAffinity"):
                    key = term.get("topologyKey")
                    same = (self.labels[node_name].get(key) is not None
                            and self.labels[node_name].get(key) == self.labels[existing_node].get(key))
                    if same and _term_selects(term, existing, pod):
                        return ["node(s) didn't satisfy existing pods anti-affinity rules"], True
        for term in _pod_terms(pod, "podAntiAffinity"):
            domain = self.pods_in_domain(node_name, term.get("topologyKey"))
            if any(_term_selects(term, pod, other) for other in domain):
                return ["node(s) didn't match pod anti-affinity rules"], True
        for term in _pod_terms(pod, "podAffinity"):
            domain = self.pods_in_domain(node_name, term.get("topologyKey"))
            if any(_term_selects(term, pod, other) for other in domain):
                continue
            anywhere = any(_term_selects(term, pod, other)
                           for pods in self.bound.values() for other in pods)
            # The first pod of a group that selects itself may go anywhere.
            if anywhere or not _term_selects(term, pod, pod):
                return ["node(s) didn't match pod affinity rules"], False
        return [], False

    def score(self, node_name, requests):
        """Higher for a node left with more of its cpu and memory free."""
        allocatable = self.allocatable(node_name)
        shares = []
        for name in ("cpu", "memory"):
            total = allocatable.get(name)
            if total:
                used = self.used[node_name].get(name, Decimal(0)) + requests.get(name, Decimal(0))
                shares.append((total - used) / total)
        return sum(shares) / len(shares) if shares else Decimal(0)


def _histogram(counts):
    return ", ".join(sorted(f"{count} {reason}" for reason, count in counts.items()))


def unschedulable_message(node_count, node_reasons):
    """The real scheduler's FitError message, preemption's part included."""
    if node_count == 0:
        return "no nodes available to schedule pods"
    filters, preemption = {}, {}
    for reasons, preemption_helps in node_reasons:
        for reason in reasons:
            filters[reason] = filters.get(reason, 0) + 1
        outcome = NO_VICTIMS if preemption_helps else NOT_HELPFUL
        preemption[outcome] = preemption.get(outcome, 0) + 1
    return (f"0/{node_count} nodes are available: {_histogram(filters)}. "
            f"preemption: 0/{node_count} nodes are available: {_histogram(preemption)}.")


def _condition(status, reason=None, message=None, now=None):
    condition = {"type": "PodScheduled", "status": status, "lastProbeTime": None,
                 "lastTransitionTime": now}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def _set_condition(pod, condition):
    status = pod.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(condition)
    status["conditions"] = conditions


def _scheduled_condition(pod):
    return next((c for c in (pod.get("status") or {}).get("conditions") or []
                 if c.get("type") == "PodScheduled"), None)


class Scheduler:
    """Binds pending pods of a store (kube_apiserver.ObjectStore) to nodes.

    The store gives it `lock`, `resource_version`, `scan(resource)` (the
    stored objects, not copies, in creation order) and
    `modify(resource, namespace, name, change)` (applies change to a copy
    and writes it as a MODIFIED event when it changed something)."""

    def __init__(self, store, interval=0.2, now=None):
        self.store = store
        self.interval = interval
        self._now = now
        self._stopping = threading.Event()
        self._thread = None
        self._last_version = None

    def start(self):
        self._thread = threading.Thread(target=self._run, name="kube-scheduler", daemon=True)
        self._thread.start()

    def stop(self):
        self._stopping.set()
        if self._thread:
            self._thread.join()

    def _run(self):
        while not self._stopping.wait(self.interval):
            self.run_once()

    def run_once(self):
        """One pass over the pending pods; returns how many it bound."""
        with self.store.lock:
            if self.store.resource_version == self._last_version:
                return 0
            bound = self._pass()
            self._last_version = self.store.resource_version
            return bound

    def _pending(self, pods):
        waiting = []
        for order, pod in enumerate(pods):
            spec = pod.get("spec") or {}
            if (spec.get("nodeName") or pod["metadata"].get("deletionTimestamp")
                    or (spec.get("schedulerName") or DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER
                    or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")):
                continue
            waiting.append((-int(spec.get("priority") or 0), order, pod))
        return [pod for _, _, pod in sorted(waiting, key=lambda item: item[:2])]

    def _pass(self):
        now = self._now() if self._now else None
        pods = list(self.store.scan("pods"))
        placement = _Placement(list(self.store.scan("nodes")), pods)
        bound = 0
        for pod in self._pending(pods):
            meta = pod["metadata"]
            if (pod.get("spec") or {}).get("schedulingGates"):
                self._mark(pod, "SchedulingGated",
                           "Scheduling is blocked due to non-empty scheduling gates", now)
                continue
            requests = pod_requests(pod)
            fitting, failures = [], []
            for node_name in sorted(placement.nodes):
                reasons, preemption_helps = placement.filter(pod, node_name, requests)
                if reasons:
                    failures.append((reasons, preemption_helps))
                else:
                    fitting.append(node_name)
            if not fitting:
                self._mark(pod, "Unschedulable",
                           unschedulable_message(len(placement.nodes), failures), now)
                continue
            chosen = min(fitting, key=lambda name: (-placement.score(name, requests), name))

            def bind(stored, node_name=chosen):
                stored.setdefault("spec", {})["nodeName"] = node_name
                _set_condition(stored, _condition("True", now=now))

            updated = self.store.modify("pods", meta.get("namespace"), meta["name"], bind)
            placement.add(updated, chosen)
            bound += 1
        return bound

    def _mark(self, pod, reason, message, now):
        current = _scheduled_condition(pod)
        if (current and current.get("status") == "False" and current.get("reason") == reason
                and current.get("message") == message):
            return

        def mark(stored):
            _set_condition(stored, _condition("False", reason, message, now))

        self.store.modify("pods", pod["metadata"].get("namespace"), pod["metadata"]["name"], mark)
