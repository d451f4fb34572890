#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Self-test of the test Kubernetes API server (kube_apiserver.py).

Starts it in-process in a temporary directory and checks, over HTTPS with
urllib (trusting its CA) and with kubectl when it is on PATH, the
Kubernetes semantics the controller's tests rely on: authentication and
authorization, create/get/list with selectors and validation, the three
patch types, optimistic concurrency, watches that resume, expire and time
out, dry runs, ownerReferences garbage collection, kubectl's label, taint,
get and delete, the scheduler, and the runnable script's READY line and
SIGTERM.

Exit status: 0 when every check passes, 1 naming the first that failed,
77 (skipped) without the openssl command.
"""
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import kube_apiserver  # noqa: E402
from kube_apiserver import CERT_USER, CONTROLLER_USER, KubeApiServer  # noqa: E402

SKIP = 77
RBAC = {
    "viewer": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}],
    CERT_USER: [{"apiGroups": [""], "resources": ["nodes", "nodes/status", "events", "pods"],
                 "verbs": ["get", "list", "watch", "patch", "create", "delete"]}],
    CONTROLLER_USER: [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
}


class CheckFailed(Exception):
    pass


def expect(condition, what, detail=None):
    if not condition:
        raise CheckFailed(what + (f": {json.dumps(detail)[:1500]}" if detail is not None else ""))


class Client:
    """HTTPS requests with urllib, trusting the server's CA; a bearer
    token, a client certificate, or no credentials."""

    def __init__(self, url, ca_file, token=None, cert=None):
        self.url, self.token = url, token
        self.context = ssl.create_default_context(cafile=str(ca_file))
        if cert:
            self.context.load_cert_chain(*cert)

    def _request(self, method, path, body, content_type):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", content_type or (
                "application/merge-patch+json" if method == "PATCH" else "application/json"))
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        return request

    def call(self, method, path, body=None, content_type=None):
        """(HTTP status, decoded JSON body)."""
        try:
            with urllib.request.urlopen(self._request(method, path, body, content_type),
                                        context=self.context, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def ok(self, method, path, body=None, content_type=None, code=None):
        status, payload = self.call(method, path, body, content_type)
        expect(status == code if code else 200 <= status < 300,
               f"{method} {path} answered {status}", payload)
        return payload

    def watch(self, path, timeout=5):
        """The events of a watch until its stream ends; a watch silent for
        `timeout` seconds is a failure."""
        response = urllib.request.urlopen(self._request("GET", path, None, None),
                                          context=self.context, timeout=timeout)
        return WatchReader(response)


class WatchReader:
    def __init__(self, response):
        self.response = response

    def next(self):
        line = self.response.readline()
        return json.loads(line) if line.strip() else None

    def rest(self):
        events = []
        while (event := self.next()) is not None:
            events.append(event)
        self.response.close()
        return events

    def close(self):
        self.response.close()


def names(listing):
    return sorted(item["metadata"]["name"] for item in listing["items"])


def node(name, labels=None, gpus=1, **status):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": str(gpus),
                                       "pods": "110"}, **status}}


def pod(name, gpus=None, labels=None, owner=None, spec=None):
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {"requests": {"cpu": "100m"}}
    meta = {"name": name, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": owner["kind"],
                                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "main", "image": "collbench-worker", "resources": resources}],
                     **(spec or {})}}


class SelfTest:
    def __init__(self, workdir):
        self.workdir = workdir
        self.server = KubeApiServer(workdir / "main", rbac=RBAC, bookmark_interval=0.3).start()
        creds = self.server.credentials
        self.ca = creds.ca_cert
        self.admin = Client(self.server.url, self.ca, creds.admin_token)
        self.controller = Client(self.server.url, self.ca, creds.token)
        self.cert_client = Client(self.server.url, self.ca, cert=(creds.client_cert, creds.client_key))

    def stop(self):
        self.server.stop()

    # --- checks, in order ---

    def authentication(self):
        for client, what in ((Client(self.server.url, self.ca), "no credentials"),
                             (Client(self.server.url, self.ca, "not-a-token"), "a wrong token")):
            status, body = client.call("GET", "/api/v1/nodes")
            expect(status == 401 and body.get("kind") == "Status" and body.get("reason") == "Unauthorized"
                   and body.get("code") == 401 and body.get("status") == "Failure",
                   f"{what} is 401 Unauthorized", body)
        status, body = self.cert_client.call("GET", "/api/v1/nodes")
        expect(status == 200 and body["kind"] == "NodeList", "the client certificate authenticates", body)
        expect(self.server.audit()[-1]["user"] == CERT_USER,
               f"the certificate's user is its CN {CERT_USER}")
        self.controller.ok("GET", "/api/v1/namespaces/collbench/pods")
        expect(self.server.audit()[-1]["user"] == CONTROLLER_USER,
               "the token file's user is the service account")

    def authorization(self):
        nobody = Client(self.server.url, self.ca, self.server.add_user("nobody"))
        status, body = nobody.call("GET", "/api/v1/nodes")
        expect(status == 403 and body["reason"] == "Forbidden"
               and 'User "nobody" cannot list resource "nodes"' in body["message"],
               "a user no rule names is 403 Forbidden, the message naming user, verb and resource", body)
        viewer = Client(self.server.url, self.ca, self.server.add_user("viewer"))
        viewer.ok("GET", "/api/v1/nodes")
        status, body = viewer.call("PATCH", "/api/v1/nodes/x", {"metadata": {"labels": {"a": "b"}}})
        expect(status == 403 and 'cannot patch resource "nodes"' in body["message"],
               "a verb the rules do not grant is 403", body)
        status, body = self.cert_client.call("GET", "/api/v1/namespaces/default/configmaps")
        expect(status == 403, "a resource the rules do not grant is 403", body)
        status, body = viewer.call("POST", "/testing/compact", {})
        expect(status == 403, "only admin compacts", body)
        expect(any(r["user"] == "nobody" and r["code"] == 403 for r in self.server.audit()),
               "the audit records the refusal")

    def create_get_list(self):
        a = self.admin
        created = a.ok("POST", "/api/v1/nodes", node("node-a", {"rack": "r1", "gpu": "true"}), code=201)
        meta = created["metadata"]
        expect(created["kind"] == "Node" and created["apiVersion"] == "v1" and meta.get("uid")
               and meta.get("resourceVersion") and meta.get("creationTimestamp")
               and meta.get("generation") == 1,
               "a created object has kind, uid, resourceVersion, creationTimestamp, generation", created)
        a.ok("POST", "/api/v1/nodes", node("node-b", {"rack": "r2"}), code=201)
        a.ok("POST", "/api/v1/nodes", node("node-c"), code=201)
        got = a.ok("GET", "/api/v1/nodes/node-a")
        expect(got["metadata"]["uid"] == meta["uid"], "get returns the created node", got)
        status, body = a.call("POST", "/api/v1/nodes", node("node-a"))
        expect(status == 409 and body["reason"] == "AlreadyExists",
               "creating it again is 409 AlreadyExists", body)
        listing = a.ok("GET", "/api/v1/nodes")
        expect(listing["kind"] == "NodeList"
               and int(listing["metadata"]["resourceVersion"]) == self.server.resource_version,
               "a list is a NodeList at the current resourceVersion", listing["metadata"])
        for selector, expected in (("rack%3Dr1", ["node-a"]), ("rack!%3Dr1", ["node-b", "node-c"]),
                                   ("gpu", ["node-a"]), ("!gpu", ["node-b", "node-c"]),
                                   ("rack%3Dr2,!gpu", ["node-b"]),
                                   ("rack+in+(r1,r2)", ["node-a", "node-b"])):
            got = names(a.ok("GET", f"/api/v1/nodes?labelSelector={selector}"))
            expect(got == expected, f"labelSelector {selector} selects {expected}", got)
        got = names(a.ok("GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dnode-c"))
        expect(got == ["node-c"], "fieldSelector metadata.name=node-c", got)
        status, body = a.call("POST", "/api/v1/nodes", node("Node_Bad"))
        expect(status == 422 and body["reason"] == "Invalid" and "metadata.name" in body["message"],
               "a name that is no DNS-1123 subdomain is 422 naming metadata.name", body)
        status, body = a.call("POST", "/api/v1/nodes", node("node-d", {"rack": "not valid!"}))
        expect(status == 422 and "metadata.labels" in body["message"],
               "an invalid label value is 422 naming metadata.labels", body)
        status, body = a.call("POST", "/api/v1/namespaces/nowhere/pods", pod("p"))
        expect(status == 404 and body["reason"] == "NotFound", "a pod in a missing namespace is 404", body)
        event = {"metadata": {"generateName": "node-a."},
                 "involvedObject": {"kind": "Node", "name": "node-a"},
                 "reason": "Tested", "message": "hello", "type": "Normal"}
        generated = a.ok("POST", "/api/v1/namespaces/collbench/events", event, code=201)
        name = generated["metadata"]["name"]
        expect(name.startswith("node-a.") and len(name) == 12, "generateName adds five characters", name)
        got = names(a.ok("GET", "/api/v1/events?fieldSelector="
                                "involvedObject.name%3Dnode-a,involvedObject.kind%3DNode"))
        expect(got == [generated["metadata"]["name"]], "events select by involvedObject", got)

    def merge_patch(self):
        patched = self.admin.ok("PATCH", "/api/v1/nodes/node-a",
                                {"metadata": {"labels": {"rack": None, "zone": "z1"}}})
        expect(patched["metadata"]["labels"] == {"gpu": "true", "zone": "z1"},
               "a merge patch sets zone and its null deletes rack", patched["metadata"])
        expect(patched["metadata"]["generation"] == 1, "a label change does not bump generation")

    def strategic_merge_of_conditions(self):
        a, smp = self.admin, "application/strategic-merge-patch+json"
        a.ok("PATCH", "/api/v1/nodes/node-a/status", {"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady"},
            {"type": "GpuHealthy", "status": "True", "reason": "Probed"}]}}, smp)
        patched = a.ok("PATCH", "/api/v1/nodes/node-a/status", {
            "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "GpuHealthy"}],
            "status": {"conditions": [
                {"type": "GpuHealthy", "status": "False", "reason": "XidError"}]}}, smp)
        conditions = {c["type"]: c for c in patched["status"]["conditions"]}
        expect(set(conditions) == {"Ready", "GpuHealthy"} and conditions["Ready"]["status"] == "True"
               and conditions["GpuHealthy"] == {"type": "GpuHealthy", "status": "False",
                                                "reason": "XidError"},
               "conditions merge by type: GpuHealthy updated, Ready kept", patched["status"])
        expect(patched["status"]["allocatable"]["nvidia.com/gpu"] == "1", "the rest of status is kept")
        before = a.ok("GET", "/api/v1/nodes/node-a")
        after = a.ok("PATCH", "/api/v1/nodes/node-a", {"status": {"conditions": []},
                                                        "metadata": {"labels": {"patched": "main"}}}, smp)
        expect(after["status"] == before["status"] and after["metadata"]["labels"]["patched"] == "main",
               "a patch of the main resource ignores status", after)
        after = a.ok("PATCH", "/api/v1/nodes/node-a/status",
                     {"metadata": {"labels": {"patched": "status"}}}, smp)
        expect(after["metadata"]["labels"]["patched"] == "main", "a patch of /status changes only status")

    def taints_replace(self):
        smp = "application/strategic-merge-patch+json"
        self.admin.ok("PATCH", "/api/v1/nodes/node-b", {"spec": {"taints": [
            {"key": "a", "value": "1", "effect": "NoSchedule"}]}}, smp)
        patched = self.admin.ok("PATCH", "/api/v1/nodes/node-b", {"spec": {"taints": [
            {"key": "b", "effect": "NoExecute"}]}}, smp)
        expect(patched["spec"]["taints"] == [{"key": "b", "effect": "NoExecute"}],
               "spec.taints is atomic: the patch's list replaces it", patched["spec"])
        expect(patched["metadata"]["generation"] == 3, "each spec change bumps generation",
               patched["metadata"])
        status, body = self.admin.call("PATCH", "/api/v1/nodes/node-b", {"spec": {"taints": [
            {"key": "c", "effect": "Sometimes"}]}}, smp)
        expect(status == 422 and "spec.taints[0].effect" in body["message"],
               "an unknown taint effect is 422", body)

    def json_patch(self):
        a, jp = self.admin, "application/json-patch+json"
        before = a.ok("GET", "/api/v1/nodes/node-c")
        status, body = a.call("PATCH", "/api/v1/nodes/node-c", [
            {"op": "add", "path": "/metadata/labels/x", "value": "1"},
            {"op": "test", "path": "/metadata/name", "value": "someone-else"}], jp)
        after = a.ok("GET", "/api/v1/nodes/node-c")
        expect(status == 422 and body["code"] == 422, "a JSON patch whose test fails is 422", body)
        expect(after == before, "and changes nothing", after)
        patched = a.ok("PATCH", "/api/v1/nodes/node-c", [
            {"op": "test", "path": "/metadata/name", "value": "node-c"},
            {"op": "add", "path": "/metadata/labels/x~1y", "value": "1"}], jp)
        expect(patched["metadata"]["labels"] == {"x/y": "1"}, "a JSON patch that passes applies",
               patched["metadata"])
        status, body = a.call("PATCH", "/api/v1/nodes/node-c", {"a": 1}, "application/apply-patch+yaml")
        expect(status == 415 and body["reason"] == "UnsupportedMediaType",
               "other patch types are 415", body)

    def optimistic_concurrency(self):
        a = self.admin
        current = a.ok("GET", "/api/v1/nodes/node-c")
        stale = json.loads(json.dumps(current))
        a.ok("PATCH", "/api/v1/nodes/node-c", {"metadata": {"labels": {"bumped": "1"}}})
        stale["metadata"]["labels"]["lost"] = "update"
        status, body = a.call("PUT", "/api/v1/nodes/node-c", stale)
        expect(status == 409 and body["reason"] == "Conflict",
               "a PUT with a stale resourceVersion is 409 Conflict", body)
        status, body = a.call("PATCH", "/api/v1/nodes/node-c", {"metadata": {
            "resourceVersion": current["metadata"]["resourceVersion"], "labels": {"lost": "patch"}}})
        expect(status == 409 and body["reason"] == "Conflict",
               "a patch with a stale resourceVersion is 409", body)
        fresh = a.ok("GET", "/api/v1/nodes/node-c")
        expect("lost" not in fresh["metadata"]["labels"], "neither write happened", fresh["metadata"])
        fresh["metadata"]["labels"]["kept"] = "update"
        updated = a.ok("PUT", "/api/v1/nodes/node-c", fresh)
        expect(updated["metadata"]["labels"]["kept"] == "update",
               "a PUT with the current resourceVersion applies")

    def watch_resumes(self):
        a = self.admin
        since = int(a.ok("GET", "/api/v1/namespaces/default/configmaps")["metadata"]["resourceVersion"])
        path = "/api/v1/namespaces/default/configmaps"
        a.ok("POST", path, {"metadata": {"name": "watched"}, "data": {"k": "1"}}, code=201)
        a.ok("PATCH", f"{path}/watched", {"data": {"k": "2"}})
        a.ok("POST", "/api/v1/namespaces/collbench/configmaps", {"metadata": {"name": "elsewhere"}},
             code=201)
        a.ok("DELETE", f"{path}/watched")
        started = time.monotonic()
        events = a.watch(f"{path}?watch=1&resourceVersion={since}&timeoutSeconds=1"
                         "&allowWatchBookmarks=true").rest()
        elapsed = time.monotonic() - started
        kinds = [(e["type"], e["object"]["metadata"].get("name")) for e in events]
        expect(kinds[:3] == [("ADDED", "watched"), ("MODIFIED", "watched"), ("DELETED", "watched")],
               "a watch from a resourceVersion gets exactly the later events of its namespace", kinds)
        versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events[:3]]
        expect(versions == [since + 1, since + 2, since + 4], "with their resourceVersions", versions)
        expect(events[3:] and all(e["type"] == "BOOKMARK" for e in events[3:])
               and events[-1]["object"]["metadata"]["resourceVersion"] == str(self.server.resource_version),
               "then bookmarks at the current resourceVersion", events[3:])
        expect(0.9 <= elapsed < 5, f"timeoutSeconds=1 ended the stream after {elapsed:.2f}s")

    def watch_live_with_selector(self):
        a = self.admin
        a.ok("PATCH", "/api/v1/nodes/node-a", {"metadata": {"labels": {"watched": "yes"}}})
        stream = a.watch("/api/v1/nodes?watch=true&labelSelector=watched%3Dyes&timeoutSeconds=10")
        first = stream.next()
        expect(first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "node-a",
               "a watch without resourceVersion starts with ADDED for what exists", first)
        expect(first["object"]["kind"] == "Node", "watch events carry kind")
        a.ok("PATCH", "/api/v1/nodes/node-a", {"metadata": {"labels": {"watched": "no"}}})
        a.ok("PATCH", "/api/v1/nodes/node-b", {"metadata": {"labels": {"unrelated": "change"}}})
        a.ok("POST", "/api/v1/nodes", node("node-e", {"watched": "yes"}), code=201)
        got = [(stream.next()["type"], n) for n in ("node-a", "node-e")]
        stream.close()
        expect(got == [("DELETED", "node-a"), ("ADDED", "node-e")],
               "live: leaving the selection is DELETED, entering it ADDED, others unseen", got)

    def compaction_expires(self):
        old = self.server.resource_version - 3
        self.server.compact()
        events = self.admin.watch(f"/api/v1/nodes?watch=1&resourceVersion={old}").rest()
        expect(len(events) == 1 and events[0]["type"] == "ERROR", "after compact() a watch from an old "
               "resourceVersion gets one ERROR event and ends", events)
        status = events[0]["object"]
        expect(status["code"] == 410 and status["reason"] == "Expired"
               and status["message"].startswith(f"too old resource version: {old} ("),
               "a 410 Expired Status", status)
        self.admin.ok("POST", "/testing/compact", {})

    def dry_run(self):
        a = self.admin
        version = self.server.resource_version
        created = a.ok("POST", "/api/v1/nodes?dryRun=All", node("node-dry"), code=201)
        expect(created["metadata"]["name"] == "node-dry", "a dry-run create answers the object", created)
        status, _ = a.call("GET", "/api/v1/nodes/node-dry")
        expect(status == 404, "and stores nothing")
        patched = a.ok("PATCH", "/api/v1/nodes/node-c?dryRun=All", {"metadata": {"labels": {"dry": "run"}}})
        expect(patched["metadata"]["labels"].get("dry") == "run", "a dry-run patch answers the result")
        expect("dry" not in a.ok("GET", "/api/v1/nodes/node-c")["metadata"]["labels"], "and stores nothing")
        a.ok("DELETE", "/api/v1/nodes/node-c?dryRun=All")
        a.ok("GET", "/api/v1/nodes/node-c")
        expect(self.server.resource_version == version, "no dry run took a resourceVersion")
        status, body = a.call("POST", "/api/v1/nodes?dryRun=All", node("Bad_Dry"))
        expect(status == 422, "a dry run still validates", body)
        dry = [r for r in self.server.audit() if r["dryRun"]]
        expect(len(dry) == 4 and all(r["code"] in (200, 201, 422) for r in dry),
               "the audit marks dry runs", dry)

    def garbage_collection(self):
        a = self.admin
        owner = a.ok("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "owner"}},
                     code=201)
        a.ok("POST", "/api/v1/namespaces/default/pods", pod("dependent", owner=owner), code=201)
        a.ok("POST", "/api/v1/namespaces/default/pods", pod("independent"), code=201)
        deleted = a.ok("DELETE", "/api/v1/namespaces/default/configmaps/owner")
        expect(deleted["kind"] == "Status" and deleted["status"] == "Success",
               "a configmap's delete answers a Status")
        deadline = time.monotonic() + 5
        while a.call("GET", "/api/v1/namespaces/default/pods/dependent")[0] != 404:
            expect(time.monotonic() < deadline,
                   "the pod owned by the deleted configmap is collected within 5 s")
            time.sleep(0.02)
        a.ok("GET", "/api/v1/namespaces/default/pods/independent")

    def kubectl(self):
        if shutil.which("kubectl") is None:
            print("    skipped: kubectl is not on PATH")
            return
        env = dict(os.environ, HOME=str(self.workdir / "home"))

        def run(*args, kubeconfig="kubeconfig-admin"):
            result = subprocess.run(["kubectl", "--kubeconfig", str(self.server.dir / kubeconfig),
                                     "--cache-dir", str(self.workdir / "kubectl-cache"),
                                     "--request-timeout", "10s", *args],
                                    capture_output=True, text=True, env=env, timeout=30)
            expect(result.returncode == 0, f"kubectl {' '.join(args)} succeeds", result.stderr)
            return result.stdout

        expect("node-a" in run("get", "nodes"), "kubectl get nodes lists node-a")
        shown = json.loads(run("get", "node", "node-a", "-o", "json"))
        expect(shown["metadata"]["labels"].get("zone") == "z1"
               and any(c["type"] == "GpuHealthy" for c in shown["status"]["conditions"]),
               "kubectl get node -o json shows the label and condition set over the API", shown)
        run("label", "node", "node-a", "labelled=by-kubectl")
        run("taint", "node", "node-a", "collbench.io/suspect=true:NoSchedule")
        run("taint", "node", "node-a", "other=1:NoExecute")
        taints = self.admin.ok("GET", "/api/v1/nodes/node-a")["spec"]["taints"]
        expect(len(taints) == 2, "kubectl taint adds the taints", taints)
        run("taint", "node", "node-a", "collbench.io/suspect:NoSchedule-")
        shown = self.admin.ok("GET", "/api/v1/nodes/node-a")
        expect(shown["spec"]["taints"] == [{"key": "other", "value": "1", "effect": "NoExecute"}]
               and shown["metadata"]["labels"]["labelled"] == "by-kubectl",
               "kubectl taint ...- removes the taint, the label is there", shown)
        patch_types = {r["contentType"] for r in self.server.audit(user="admin", verb="patch")[-4:]}
        print(f"    kubectl's patches: {sorted(patch_types)}")
        pods = json.loads(run("get", "pods", "-A", "-o", "json"))
        expect("independent" in [p["metadata"]["name"] for p in pods["items"]],
               "kubectl get pods -A -o json")
        events = json.loads(run("get", "events", "-A", "-o", "json"))
        expect(len(events["items"]) >= 1, "kubectl get events -A -o json", events)
        run("delete", "pod", "-n", "default", "independent")
        status, _ = self.admin.call("GET", "/api/v1/namespaces/default/pods/independent")
        expect(status == 404, "kubectl delete pod deletes it")
        expect("node-a" in run("get", "nodes", kubeconfig="kubeconfig-cert"), "kubeconfig-cert works")
        expect("node-a" in run("get", "nodes", kubeconfig="kubeconfig-token"), "kubeconfig-token works")

    def scheduler(self):
        with KubeApiServer(self.workdir / "scheduler", scheduler=True) as server:
            client = Client(server.url, server.credentials.ca_cert, server.credentials.admin_token)
            for name in ("gpu-1", "gpu-2"):
                client.ok("POST", "/api/v1/nodes", node(name, gpus=1), code=201)
            pods = "/api/v1/namespaces/default/pods"
            client.ok("POST", pods, pod("wants-two", gpus=2), code=201)
            client.ok("POST", pods, pod("wants-one", gpus=1), code=201)
            spread = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": "spread"}},
                "topologyKey": "kubernetes.io/hostname"}]}}
            for i in range(3):
                client.ok("POST", pods, pod(f"spread-{i}", labels={"app": "spread"},
                                            spec={"affinity": spread}), code=201)

            def condition(name):
                got = client.ok("GET", f"{pods}/{name}")
                scheduled = [c for c in got["status"].get("conditions", []) if c["type"] == "PodScheduled"]
                return got, (scheduled[0] if scheduled else None)

            deadline = time.monotonic() + 5
            waiting = ("wants-two", "wants-one", "spread-0", "spread-1", "spread-2")
            while any(condition(n)[1] is None for n in waiting):
                expect(time.monotonic() < deadline, "the scheduler decides within 5 s")
                time.sleep(0.05)
            _, too_big = condition("wants-two")
            expect(too_big["status"] == "False" and too_big["reason"] == "Unschedulable"
                   and too_big["message"].startswith(
                       "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."),
                   "2 GPUs on 1-GPU nodes: PodScheduled=False, Unschedulable, "
                   "Insufficient nvidia.com/gpu", too_big)
            bound, fits = condition("wants-one")
            expect(fits["status"] == "True" and bound["spec"].get("nodeName") in ("gpu-1", "gpu-2"),
                   "1 GPU: bound to a node, PodScheduled=True", bound)
            placed = [condition(f"spread-{i}")[0]["spec"].get("nodeName") for i in range(3)]
            expect(sorted(p for p in placed if p) == ["gpu-1", "gpu-2"] and placed.count(None) == 1,
                   "anti-affine pods land on distinct nodes, the third waits", placed)
            version = server.resource_version
            time.sleep(0.5)
            expect(server.resource_version == version, "an unchanged message is not rewritten")
            stream = client.watch("/api/v1/pods?watch=1")
            stream.next()
        started = time.monotonic()
        rest = stream.rest()
        expect(time.monotonic() - started < 2 and all(e["type"] == "ADDED" for e in rest),
               "stopping the server ends its watches", rest)

    def script(self):
        directory = self.workdir / "script"
        process = subprocess.Popen([sys.executable, str(HERE / "kube_apiserver.py"),
                                    "--dir", str(directory), "--history", "10"],
                                   stdout=subprocess.PIPE, text=True)
        try:
            line = process.stdout.readline().strip()
            expect(line.startswith("READY https://127.0.0.1:"), "the script prints READY <url>", line)
            url = line.split()[1]
            info = json.loads((directory / "server.json").read_text())
            expect(info == {"url": url, "pid": process.pid}, "server.json has its url and pid", info)
            token = (directory / "admin-token").read_text().strip()
            version = Client(url, directory / "ca.crt", token).ok("GET", "/version")
            expect(version["gitVersion"] == kube_apiserver.GIT_VERSION, "/version", version)
            for path in ("serviceaccount/token", "serviceaccount/ca.crt", "serviceaccount/namespace",
                         "kubeconfig-admin", "kubeconfig-token", "kubeconfig-cert",
                         "client.crt", "client.key"):
                expect((directory / path).is_file(), f"it wrote {path}")
            process.send_signal(signal.SIGTERM)
            expect(process.wait(timeout=10) == 0, "SIGTERM stops it with exit status 0")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()

    def audit_file(self):
        lines = (self.server.dir / "audit.jsonl").read_text().splitlines()
        records = [json.loads(line) for line in lines]
        expect(len(records) == len(self.server.audit()) and any(r["code"] == 401 for r in records),
               "audit.jsonl holds every request, refused ones too", len(records))


CHECKS = [
    ("401 without credentials and with a wrong token; client certificate and token users",
     SelfTest.authentication),
    ("403 for what the rules do not grant", SelfTest.authorization),
    ("create, get, list with label and field selectors, validation", SelfTest.create_get_list),
    ("merge patch of labels (null deletes)", SelfTest.merge_patch),
    ("strategic merge of status.conditions by type on nodes/NAME/status",
     SelfTest.strategic_merge_of_conditions),
    ("spec.taints replace", SelfTest.taints_replace),
    ("JSON patch: a failing test is 422 and changes nothing; 415", SelfTest.json_patch),
    ("stale resourceVersion in PUT and patch is 409", SelfTest.optimistic_concurrency),
    ("a watch resumes from a resourceVersion; timeoutSeconds; bookmarks", SelfTest.watch_resumes),
    ("a live watch with a label selector", SelfTest.watch_live_with_selector),
    ("after compact() an old resourceVersion gets 410 Expired", SelfTest.compaction_expires),
    ("dryRun=All stores nothing", SelfTest.dry_run),
    ("ownerReferences garbage collection", SelfTest.garbage_collection),
    ("kubectl: get, label, taint, untaint, delete; the three kubeconfigs", SelfTest.kubectl),
    ("scheduler: Insufficient nvidia.com/gpu, binding, anti-affinity spread", SelfTest.scheduler),
    ("the script: READY line, server.json, SIGTERM", SelfTest.script),
    ("audit.jsonl", SelfTest.audit_file),
]


def main():
    if shutil.which("openssl") is None:
        print("skipped: the test API server needs the openssl command")
        return SKIP
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="kube-apiserver-test-"))
    test = None
    try:
        test = SelfTest(workdir)
        print(f"server at {test.server.url} (started in {time.monotonic() - started:.2f}s)")
        for title, check in CHECKS:
            check_started = time.monotonic()
            print(f"- {title}", flush=True)
            check(test)
            print(f"    ok ({time.monotonic() - check_started:.2f}s)", flush=True)
    except CheckFailed as failure:
        print(f"FAILED: {failure}")
        return 1
    finally:
        if test:
            test.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"PASS: {len(CHECKS)} checks in {time.monotonic() - started:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
