# SPDX-License-Identifier: Apache-2.0
"""The objects of the test Kubernetes API server, its resourceVersion
counter and its watch history.

One global counter, as etcd's revision: every write takes the next
resourceVersion and appends one WatchEvent (ADDED, MODIFIED or DELETED,
with the object and, for a modification, the object before it) to a
bounded history that watches resume from. Writes keep the real API
server's rules: validation, optimistic concurrency (a stale
metadata.resourceVersion is a 409 Conflict), generation bumps on spec
changes, the status subresource's split, pods' immutable spec,
finalizers, and the garbage collection of objects whose owners
(metadata.ownerReferences) are all gone.
"""
import copy
import datetime
import secrets
import threading
import time
import uuid
from collections import deque, namedtuple

import kube_patch
from kube_objects import (RESOURCES, POD_SPEC_FORBIDDEN, ApiError, already_exists, bad_request,
                          conflict, invalid, not_found, pod_spec_change_allowed, validate)

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "collbench")
PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public")
_GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

WatchEvent = namedtuple("WatchEvent", "rv resource type object old")


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _key(resource, obj):
    meta = obj["metadata"]
    return (resource.name, meta.get("namespace") or "", meta["name"])


def _content(obj):
    """What an object holds besides metadata and status: a change to it
    bumps metadata.generation."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "kind", "apiVersion")}


class ObjectStore:
    """The objects, the resourceVersion counter and the watch history.

    Every write takes the next resourceVersion and appends one WatchEvent
    to a bounded history; watchers wait on `changed`. Stored objects are
    never changed in place (each write stores a new dict), so events and
    the store may share them; whatever leaves the store is a copy."""

    def __init__(self, history):
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.resource_version = 0
        self.history_floor = 0      # events up to this resourceVersion are gone
        self.stopping = False
        self._objects = {}
        self._history = deque()
        self._history_size = max(1, history)
        self._gc_requested = 0
        self._gc_done = 0
        self._gc_changed = threading.Condition(self.lock)
        for name in INITIAL_NAMESPACES:
            self.create(RESOURCES["namespaces"], None, {"metadata": {"name": name}})

    # --- reading ---

    def find(self, resource, namespace, name):
        return self._objects.get((resource.name, namespace or "", name))

    def get(self, resource, namespace, name):
        with self.lock:
            obj = self.find(resource, namespace, name)
            if obj is None:
                raise not_found(resource.name, name)
            return copy.deepcopy(obj)

    def scan(self, resource_name):
        """The stored objects of a resource in creation order (not copies;
        for readers holding the lock)."""
        return [o for (r, _, _), o in self._objects.items() if r == resource_name]

    def list(self, resource, namespace, labels=None, fields=None):
        """Matching objects (copies, ordered by namespace and name) and the
        resourceVersion they are current at."""
        with self.lock:
            items = [copy.deepcopy(o) for (r, ns, _), o in sorted(self._objects.items())
                     if r == resource.name and (not namespace or ns == namespace)
                     and (labels is None or labels.matches(o["metadata"].get("labels")))
                     and (fields is None or fields.matches(o))]
            return items, self.resource_version

    def events_after(self, version):
        """The events with a resourceVersion above version, oldest first."""
        events = []
        for event in reversed(self._history):
            if event.rv <= version:
                break
            events.append(event)
        events.reverse()
        return events

    # --- writing ---

    def _commit(self, resource, event_type, obj, old=None):
        self.resource_version += 1
        obj["metadata"]["resourceVersion"] = str(self.resource_version)
        key = _key(resource, obj)
        if event_type == "DELETED":
            self._objects.pop(key, None)
        else:
            self._objects[key] = obj
        self._history.append(WatchEvent(self.resource_version, resource.name, event_type, obj, old))
        while len(self._history) > self._history_size:
            self.history_floor = self._history.popleft().rv
        if event_type == "DELETED" or obj["metadata"].get("ownerReferences"):
            self._gc_requested += 1
            self._gc_changed.notify_all()
        self.changed.notify_all()

    def compact(self):
        """Drops the history: a watch from any older resourceVersion gets 410."""
        with self.lock:
            self._history.clear()
            self.history_floor = self.resource_version
            self.changed.notify_all()

    def create(self, resource, namespace, obj, dry_run=False):
        with self.lock:
            if not isinstance(obj, dict) or not isinstance(obj.get("metadata", {}), dict):
                raise bad_request("the object must be a JSON object with a metadata object")
            if obj.get("kind") not in (None, "", resource.kind):
                raise bad_request(f"the kind of the object ({obj['kind']}) is not {resource.kind}")
            obj = copy.deepcopy(obj)
            meta = obj.setdefault("metadata", {})
            if resource.namespaced:
                if meta.get("namespace") not in (None, "", namespace):
                    raise bad_request("the namespace of the provided object does not match the "
                                      "namespace sent on the request")
                meta["namespace"] = namespace
                if self.find(RESOURCES["namespaces"], None, namespace) is None:
                    raise not_found("namespaces", namespace)
            else:
                meta.pop("namespace", None)
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + "".join(
                    secrets.choice(_GENERATE_NAME_ALPHABET) for _ in range(5))
            causes = validate(resource, obj)
            if causes:
                raise invalid(resource.kind, meta.get("name", ""), causes)
            if self.find(resource, namespace, meta["name"]) is not None:
                raise already_exists(resource.name, meta["name"])
            if meta.get("resourceVersion") not in (None, "", "0"):
                # Kubernetes refuses it (an object copied from a read), as a 500.
                raise ApiError(500, "", "resourceVersion should not be set on objects to be created")
            for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"):
                meta.pop(field, None)
            meta.update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339(), generation=1)
            obj["kind"], obj["apiVersion"] = resource.kind, "v1"
            if resource.name == "pods":
                obj["status"] = {"phase": "Pending"}
                _default_requests_from_limits(obj)
            elif resource.name == "namespaces":
                obj["status"] = {"phase": "Active"}
            if dry_run:
                return obj
            self._commit(resource, "ADDED", obj)
            return copy.deepcopy(obj)

    def update(self, resource, namespace, name, new, subresource=None, dry_run=False, internal=False):
        """PUT (and the end of every patch): new replaces the stored object,
        but for what the server owns (metadata it sets, status or spec
        depending on subresource)."""
        with self.lock:
            old = self.find(resource, namespace, name)
            if old is None:
                raise not_found(resource.name, name)
            if not isinstance(new, dict) or not isinstance(new.get("metadata", {}), dict):
                raise bad_request("the object must be a JSON object with a metadata object")
            new_meta = new.get("metadata") or {}
            if new_meta.get("name") not in (None, "", name):
                raise bad_request(f"the name of the object ({new_meta['name']}) does not match the "
                                  f"name on the URL ({name})")
            if resource.namespaced and new_meta.get("namespace") not in (None, "", namespace):
                raise bad_request("the namespace of the provided object does not match the "
                                  "namespace sent on the request")
            if new.get("kind") not in (None, "", resource.kind):
                raise bad_request(f"the kind of the object ({new['kind']}) is not {resource.kind}")
            if new_meta.get("resourceVersion") not in (None, "", old["metadata"]["resourceVersion"]):
                raise conflict(resource.name, name)
            result = self._merge_owned(resource, old, new, None if internal else subresource, internal)
            if resource.name == "pods":
                _default_requests_from_limits(result)
            causes = validate(resource, result)
            if (not internal and resource.name == "pods" and subresource is None
                    and not pod_spec_change_allowed(old.get("spec"), result.get("spec"))):
                causes.append(("spec", POD_SPEC_FORBIDDEN))
            if causes:
                raise invalid(resource.kind, name, causes)
            if result == old:
                return copy.deepcopy(old)
            if _content(result) != _content(old):
                result["metadata"]["generation"] = int(old["metadata"].get("generation") or 0) + 1
            if dry_run:
                return result
            if result["metadata"].get("deletionTimestamp") and not result["metadata"].get("finalizers"):
                self._commit(resource, "DELETED", result, old)
            else:
                self._commit(resource, "MODIFIED", result, old)
            return copy.deepcopy(result)

    @staticmethod
    def _merge_owned(resource, old, new, subresource, whole=False):
        """new, but for what the request may not change: the metadata the
        server sets, and status (main resource) or all but status (the
        status subresource). whole: the server's own write of everything."""
        if subresource == "status":
            result = copy.deepcopy(old)
            if "status" in new:
                result["status"] = copy.deepcopy(new["status"])
            else:
                result.pop("status", None)
        else:
            result = copy.deepcopy(new)
            if resource.has_status and not whole:
                if "status" in old:
                    result["status"] = copy.deepcopy(old["status"])
                else:
                    result.pop("status", None)
        meta = result.setdefault("metadata", {})
        for field in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "generation", "resourceVersion"):
            if field in old["metadata"]:
                meta[field] = old["metadata"][field]
            else:
                meta.pop(field, None)
        result["kind"], result["apiVersion"] = resource.kind, "v1"
        return result

    def patch(self, resource, namespace, name, patch_type, patch, subresource=None, dry_run=False):
        with self.lock:
            old = self.find(resource, namespace, name)
            if old is None:
                raise not_found(resource.name, name)
            try:
                patched = kube_patch.apply_patch(patch_type, old, patch)
            except kube_patch.PatchError as error:
                if error.code == 400:
                    raise bad_request(error.message)
                raise ApiError(422, "Invalid", error.message)
            if not isinstance(patched, dict):
                raise ApiError(422, "Invalid", "the patch made the object something other than "
                                               "a JSON object")
            return self.update(resource, namespace, name, patched, subresource, dry_run)

    def modify(self, resource_name, namespace, name, change):
        """For the server's own controllers: change(copy) and store it."""
        resource = RESOURCES[resource_name]
        with self.lock:
            stored = self.find(resource, namespace, name)
            if stored is None:
                raise not_found(resource.name, name)
            updated = copy.deepcopy(stored)
            change(updated)
            return self.update(resource, namespace, name, updated, internal=True)

    def bind(self, namespace, name, binding, dry_run=False):
        """pods/binding: assigns the pod to the binding's target node."""
        with self.lock:
            pod = self.find(RESOURCES["pods"], namespace, name)
            if pod is None:
                raise not_found("pods", name)
            node_name = ((binding or {}).get("target") or {}).get("name")
            if not node_name:
                raise invalid("Binding", name, [("target.name", "Required value")])
            if (pod.get("spec") or {}).get("nodeName"):
                raise conflict("pods/binding", name,
                               f"pod {name} is already assigned to node \"{pod['spec']['nodeName']}\"")
            if dry_run:
                return

            def assign(stored):
                stored.setdefault("spec", {})["nodeName"] = node_name
                conditions = [c for c in (stored.setdefault("status", {}).get("conditions") or [])
                              if c.get("type") != "PodScheduled"]
                conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                   "lastTransitionTime": now_rfc3339()})
                stored["status"]["conditions"] = conditions
            self.modify("pods", namespace, name, assign)

    def delete(self, resource, namespace, name, dry_run=False, options=None):
        """Deletes now, or marks for deletion while finalizers remain."""
        options = options or {}
        with self.lock:
            old = self.find(resource, namespace, name)
            if old is None:
                raise not_found(resource.name, name)
            preconditions = options.get("preconditions") or {}
            for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
                if preconditions.get(field) and preconditions[field] != old["metadata"].get(field):
                    raise conflict(resource.name, name,
                                   f"Precondition failed: {label} in precondition: {preconditions[field]}, "
                                   f"{label} in object meta: {old['metadata'].get(field)}")
            if resource.name == "namespaces" and name in PROTECTED_NAMESPACES:
                raise ApiError(403, "Forbidden",
                               f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                               {"name": name, "kind": "namespaces"})
            if dry_run:
                return copy.deepcopy(old)
            if old["metadata"].get("finalizers"):
                if old["metadata"].get("deletionTimestamp"):
                    return copy.deepcopy(old)
                marked = copy.deepcopy(old)
                marked["metadata"].update(deletionTimestamp=now_rfc3339(), deletionGracePeriodSeconds=0)
                self._commit(resource, "MODIFIED", marked, old)
                return copy.deepcopy(marked)
            if resource.name == "namespaces":
                for (r, ns, n), obj in list(self._objects.items()):
                    if ns == name and RESOURCES[r].namespaced:
                        self._commit(RESOURCES[r], "DELETED", copy.deepcopy(obj), obj)
            gone = copy.deepcopy(old)
            self._commit(resource, "DELETED", gone, old)
            if options.get("propagationPolicy") == "Orphan":
                self._orphan(old["metadata"]["uid"])
            return copy.deepcopy(gone)

    def _orphan(self, owner_uid):
        for (r, _, _), obj in list(self._objects.items()):
            refs = obj["metadata"].get("ownerReferences") or []
            if any(ref.get("uid") == owner_uid for ref in refs):
                kept = copy.deepcopy(obj)
                kept["metadata"]["ownerReferences"] = [ref for ref in refs if ref.get("uid") != owner_uid]
                if not kept["metadata"]["ownerReferences"]:
                    del kept["metadata"]["ownerReferences"]
                self._commit(RESOURCES[r], "MODIFIED", kept, obj)

    # --- garbage collection of dependents ---

    def collect_garbage(self):
        """Deletes every object all of whose owners are gone; repeats until
        none is left (dependents of dependents). An owner of a kind this
        server does not hold (a custom resource) cannot be looked up, so,
        as for the real collector, it does not count as gone. Returns how
        many objects went."""
        deleted = 0
        with self.lock:
            while True:
                uids = {o["metadata"]["uid"] for o in self._objects.values()}
                doomed = [(RESOURCES[r], ns, n) for (r, ns, n), o in self._objects.items()
                          if o["metadata"].get("ownerReferences")
                          and not o["metadata"].get("deletionTimestamp")
                          and all(_owner_gone(ref, uids) for ref in o["metadata"]["ownerReferences"])]
                if not doomed:
                    return deleted
                for resource, namespace, name in doomed:
                    self.delete(resource, namespace, name)
                    deleted += 1

    def run_garbage_collector(self):
        """The collector's thread: runs after every delete (and every write
        of an object with owners) until the store stops."""
        with self.lock:
            while not self.stopping:
                if self._gc_done == self._gc_requested:
                    self._gc_changed.wait()
                    continue
                target = self._gc_requested
                self.collect_garbage()
                self._gc_done = target
                self._gc_changed.notify_all()

    def wait_garbage_collected(self, timeout=5.0):
        """Waits until the collector has run after the latest write."""
        deadline = time.monotonic() + timeout
        with self.lock:
            target = self._gc_requested
            while self._gc_done < target and not self.stopping:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._gc_changed.wait(remaining)
            return True

    def stop(self):
        with self.lock:
            self.stopping = True
            self.changed.notify_all()
            self._gc_changed.notify_all()


_SERVED_KINDS = {resource.kind for resource in RESOURCES.values()}


def _owner_gone(reference, live_uids):
    return (reference.get("apiVersion") == "v1" and reference.get("kind") in _SERVED_KINDS
            and reference.get("uid") not in live_uids)


def _default_requests_from_limits(pod):
    """As the API server defaults a pod: a limit with no request is also
    the request."""
    for list_name in ("containers", "initContainers"):
        for container in (pod.get("spec") or {}).get(list_name) or []:
            resources = container.get("resources")
            if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
                requests = resources.setdefault("requests", {})
                for name, value in resources["limits"].items():
                    requests.setdefault(name, value)
