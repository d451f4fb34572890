#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A test Kubernetes API server: the subset of the real one that a node
controller uses, served over TLS on 127.0.0.1, for tests that have no
Kubernetes.

It holds core v1 nodes (and nodes/status), namespaces, pods (pods/status,
pods/binding), events and configmaps in memory, with the real server's
semantics where a client can tell: resourceVersions from one counter,
watches that resume from a resourceVersion or answer 410 Expired,
selectors, the three patch types (kube_patch.py), optimistic concurrency,
dry runs, validation (kube_objects.py), ownerReferences garbage
collection (the store: kube_store.py), bearer-token and
client-certificate authentication (kube_credentials.py), RBAC-like rules,
and the discovery kubectl needs. An optional scheduler
(kube_scheduler.py) binds pods to nodes that fit them. Every request is
recorded (DIR/audit.jsonl) so tests can assert what a client did.

Run by hand:
    kube_apiserver.py --dir DIR [--listen 127.0.0.1:0] [--history N]
                      [--scheduler] [--rbac RULES.json]
It prints `READY <url>` once listening, writes DIR/server.json and the
credentials and kubeconfigs (see README.md), and stops on SIGTERM/SIGINT.
In a test: `with KubeApiServer(dir) as server: ...`.
"""
import argparse
import base64
import binascii
import copy
import http.client
import http.server
import json
import os
import secrets
import signal
import socket
import socketserver
import ssl
import sys
import threading
import time
import traceback
import urllib.parse
from collections import namedtuple
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kube_credentials  # noqa: E402
import kube_patch  # noqa: E402
import kube_scheduler  # noqa: E402
from kube_objects import (RESOURCES, SUBRESOURCES, ApiError, FieldSelector, LabelSelector,  # noqa: E402
                          bad_request, forbidden, resource_for)
from kube_store import ObjectStore, now_rfc3339  # noqa: E402

GIT_VERSION = "v1.32.0-collbench-test"
ADMIN_USER = kube_credentials.ADMIN_USER
CONTROLLER_USER = kube_credentials.CONTROLLER_USER
CERT_USER = kube_credentials.CERT_USER
DEFAULT_WATCH_TIMEOUT = 1800
MAX_WATCH_TIMEOUT = 3600

# --- HTTP ----------------------------------------------------------------------

RequestInfo = namedtuple("RequestInfo", "verb resource subresource namespace name watch")


def route(method, path, query):
    """The RequestInfo of a resource path under /api/v1 (404 otherwise)."""
    parts = [p for p in path.split("/") if p][2:]  # after "api", "v1"
    watch = query.get("watch") in ("1", "true")
    if parts[:1] == ["watch"]:
        parts, watch = parts[1:], True
    namespace = None
    if (len(parts) >= 3 and parts[0] == "namespaces" and parts[2] in RESOURCES
            and RESOURCES[parts[2]].namespaced):
        namespace, parts = parts[1], parts[2:]
    if not parts or parts[0] not in RESOURCES or len(parts) > 3:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    resource = RESOURCES[parts[0]]
    name = parts[1] if len(parts) > 1 else None
    subresource = parts[2] if len(parts) > 2 else None
    if name and resource.namespaced and namespace is None:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    if resource.namespaced and namespace is None and not (method == "GET"):
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the "
                       "requested resource (all namespaces' path only lists and watches)")
    if subresource and (resource.name, subresource) not in SUBRESOURCES:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    verbs = {"GET": "get" if name else "list", "POST": "create", "PUT": "update", "PATCH": "patch",
             "DELETE": "delete" if name else "deletecollection"}
    verb = verbs.get(method)
    if method == "GET" and watch:
        verb = "watch"
    allowed = SUBRESOURCES[(resource.name, subresource)][1] if subresource else resource.verbs
    if (verb is None or verb not in allowed or (verb == "create" and name and not subresource)
            or (verb in ("update", "patch") and not name)):
        raise ApiError(405, "MethodNotAllowed",
                       "the server does not allow this method on the requested resource")
    return RequestInfo(verb, resource, subresource, namespace, name, watch)


class _Handler(http.server.BaseHTTPRequestHandler):
    """One connection: requests in turn, each answered as JSON (or a watch
    stream) by the KubeApiServer in self.server.api."""

    protocol_version = "HTTP/1.1"
    server_version = "collbench-kube-test-apiserver"
    sys_version = ""

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def do_GET(self):
        self.server.api.serve(self)

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def send_body(self, code, payload, content_type="application/json"):
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.close_connection = True

    def send_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


class _TlsServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """A thread per connection; the TLS handshake happens in that thread,
    so a slow client holds up nobody. stop_connections() ends them all."""

    daemon_threads = False
    block_on_close = True
    allow_reuse_address = True

    def __init__(self, address, api, ssl_context):
        self.api = api
        self.ssl_context = ssl_context
        self._connections = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def server_bind(self):
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def finish_request(self, request, client_address):
        request.settimeout(10)
        # Headers and body leave in separate writes: without this, Nagle's
        # algorithm and the client's delayed ACK add 40 ms to each answer.
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection = self.ssl_context.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        with self._connections_lock:
            self._connections.add(connection)
        try:
            connection.do_handshake()
            connection.settimeout(None)
            self.RequestHandlerClass(connection, client_address, self)
        except (OSError, ssl.SSLError):
            pass
        finally:
            with self._connections_lock:
                self._connections.discard(connection)
                try:
                    connection.close()
                except OSError:
                    pass

    def shutdown_request(self, request):
        request.close()

    def stop_connections(self):
        with self._connections_lock:
            for connection in self._connections:
                try:
                    duplicate = socket.fromfd(connection.fileno(), socket.AF_INET, socket.SOCK_STREAM)
                    duplicate.shutdown(socket.SHUT_RDWR)
                    duplicate.close()
                except OSError:
                    pass


def _selectors(query, resource):
    """The labelSelector and fieldSelector of a query (None when absent)."""
    labels = LabelSelector(query["labelSelector"]) if query.get("labelSelector") else None
    fields = FieldSelector(query["fieldSelector"], resource) if query.get("fieldSelector") else None
    return labels, fields


def _discovery_resources():
    resources = []
    for resource in RESOURCES.values():
        entry = {"name": resource.name, "singularName": resource.singular,
                 "namespaced": resource.namespaced, "kind": resource.kind,
                 "verbs": list(resource.verbs), "shortNames": list(resource.short_names)}
        if resource.name == "pods":
            entry["categories"] = ["all"]
        resources.append(entry)
        for (name, subresource), (kind, verbs) in SUBRESOURCES.items():
            if name == resource.name:
                resources.append({"name": f"{name}/{subresource}", "singularName": "",
                                  "namespaced": resource.namespaced, "kind": kind, "verbs": list(verbs)})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": resources}


class KubeApiServer:
    """The test API server, in-process.

    dir: where the credentials, kubeconfigs, server.json and audit.jsonl go
    (created if missing; credentials already there are reused).
    listen: "127.0.0.1:PORT" (0 picks a free port); loopback only.
    history: how many watch events are kept for watches that resume.
    scheduler: run the scheduler (kube_scheduler.py).
    rbac: what non-admin users may do, {"USER": [rule, ...]} or a path to
    such a JSON file; a rule has apiGroups, resources, verbs and optionally
    resourceNames, "*" matching all.
    bookmark_interval: seconds between BOOKMARK events of watches that
    allow them."""

    def __init__(self, dir, listen="127.0.0.1:0", history=1000, scheduler=False, rbac=None,  # noqa: A002
                 bookmark_interval=5.0):
        self.dir = Path(dir)
        host, _, port = listen.rpartition(":")
        if host not in ("127.0.0.1", "localhost"):
            raise ValueError(f"the test API server listens on 127.0.0.1 only, not {host!r}")
        self._address = ("127.0.0.1", int(port))
        self.store = ObjectStore(history)
        self.rules = {}
        self.set_rbac(rbac)
        self.bookmark_interval = bookmark_interval
        self.scheduler = (kube_scheduler.Scheduler(self.store, now=now_rfc3339) if scheduler else None)
        self.credentials = None
        self.url = None
        self.port = None
        self._tokens = {}
        self._audit = []
        self._audit_lock = threading.Lock()
        self._audit_file = None
        self._httpd = None
        self._threads = []

    # --- life cycle ---

    def start(self):
        """Makes the credentials, listens, writes the kubeconfigs and
        server.json, starts serving; returns self. Once per instance."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.credentials = kube_credentials.ensure(self.dir)
        self._tokens.update({self.credentials.token: CONTROLLER_USER,
                             self.credentials.admin_token: ADMIN_USER})
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.credentials.server_cert, self.credentials.server_key)
        context.load_verify_locations(self.credentials.ca_cert)
        context.verify_mode = ssl.CERT_OPTIONAL
        context.set_alpn_protocols(["http/1.1"])
        self._audit_file = open(self.dir / "audit.jsonl", "a", buffering=1)
        self._httpd = _TlsServer(self._address, self, context)
        self.port = self._httpd.server_address[1]
        self.url = f"https://127.0.0.1:{self.port}"
        kube_credentials.write_kubeconfigs(self.dir, self.url, self.credentials)
        self._start_thread("kube-apiserver", lambda: self._httpd.serve_forever(poll_interval=0.05))
        self._start_thread("kube-garbage-collector", self.store.run_garbage_collector)
        if self.scheduler:
            self.scheduler.start()
        (self.dir / "server.json").write_text(json.dumps({"url": self.url, "pid": os.getpid()}) + "\n")
        return self

    def _start_thread(self, name, target):
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self):
        """Ends the watches and connections, then the threads; idempotent."""
        if self._httpd is None:
            return
        if self.scheduler:
            self.scheduler.stop()
        self.store.stop()
        self._httpd.shutdown()
        self._httpd.stop_connections()
        self._httpd.server_close()
        for thread in self._threads:
            thread.join()
        self._httpd = None
        self._audit_file.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- helpers for tests ---

    def compact(self):
        """Drops the watch history (as etcd compaction): a watch from any
        resourceVersion before now gets 410 Expired."""
        self.store.compact()

    @property
    def resource_version(self):
        return self.store.resource_version

    def objects(self, kind, namespace=None):
        """Copies of the objects of a kind ("nodes", "Node", "no"...)."""
        return self.store.list(self._resource(kind), namespace)[0]

    def get(self, kind, name, namespace=None):
        """A copy of one object, or None."""
        with self.store.lock:
            obj = self.store.find(self._resource(kind), namespace, name)
            return copy.deepcopy(obj) if obj is not None else None

    def create(self, obj, namespace=None):
        """Creates an object (its kind says where) without going over HTTP."""
        resource = self._resource(obj["kind"])
        namespace = namespace or obj.get("metadata", {}).get("namespace") or "default"
        return self.store.create(resource, namespace if resource.namespaced else None, obj)

    def wait_garbage_collected(self, timeout=5.0):
        return self.store.wait_garbage_collected(timeout)

    def add_user(self, user):
        """A new bearer token for user (who has what the rules give it)."""
        token = secrets.token_hex(16)
        self._tokens[token] = user
        return token

    def token_for(self, user):
        """The bearer token of a user (admin, the controller's service
        account, or one add_user made)."""
        for token, owner in self._tokens.items():
            if owner == user:
                return token
        raise KeyError(f"no token for user {user!r}")

    def set_rbac(self, rbac):
        if isinstance(rbac, (str, Path)):
            rbac = json.loads(Path(rbac).read_text())
        self.rules = dict(rbac or {})

    def audit(self, user=None, verb=None, resource=None, since=None):
        """The requests served, oldest first, optionally filtered. Each is
        {ts, user, method, path, query, verb, resource, subresource,
        namespace, name, dryRun, contentType, code}; user is None when the
        request had no valid credentials."""
        with self._audit_lock:
            return [dict(r) for r in self._audit
                    if (user is None or r["user"] == user) and (verb is None or r["verb"] == verb)
                    and (resource is None or r["resource"] == resource)
                    and (since is None or r["ts"] >= since)]

    def clear_audit(self):
        with self._audit_lock:
            self._audit.clear()

    def request(self, method, path, body=None, user=ADMIN_USER, token=None, content_type=None,
                headers=None, client_cert=False, timeout=10):
        """One request as a client would send it: returns (status, body as
        JSON when it is JSON). user picks a known bearer token; user=None
        and no token sends no credentials; client_cert=True authenticates
        with the client certificate instead."""
        connection = self.connect(client_cert, timeout)
        all_headers = {"Accept": "application/json"}
        if token is None and user is not None and not client_cert:
            token = self.token_for(user)
        if token:
            all_headers["Authorization"] = f"Bearer {token}"
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            all_headers["Content-Type"] = content_type or (
                kube_patch.MERGE_PATCH if method == "PATCH" else "application/json")
        all_headers.update(headers or {})
        try:
            connection.request(method, path, body=data, headers=all_headers)
            response = connection.getresponse()
            raw = response.read()
        finally:
            connection.close()
        try:
            return response.status, json.loads(raw)
        except ValueError:
            return response.status, raw.decode(errors="replace")

    def connect(self, client_cert=False, timeout=10):
        context = ssl.create_default_context(cafile=str(self.credentials.ca_cert))
        if client_cert:
            context.load_cert_chain(self.credentials.client_cert, self.credentials.client_key)
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=context, timeout=timeout)

    def watch(self, path, user=ADMIN_USER, timeout=10):
        """Opens a watch (path with its query, watch=1 is added) and returns
        a WatchStream."""
        separator = "&" if "?" in path else "?"
        connection = self.connect(timeout=timeout)
        connection.request("GET", f"{path}{separator}watch=1",
                           headers={"Authorization": f"Bearer {self.token_for(user)}"})
        return WatchStream(connection, connection.getresponse())

    @staticmethod
    def _resource(kind):
        resource = resource_for(kind)
        if resource is None:
            raise KeyError(f"no such kind: {kind}")
        return resource

    # --- serving ---

    def _authenticate(self, handler):
        certificate = handler.connection.getpeercert()
        if certificate:
            for rdn in certificate.get("subject", ()):
                for field, value in rdn:
                    if field == "commonName":
                        return value
        scheme, _, token = handler.headers.get("Authorization", "").strip().partition(" ")
        if scheme.lower() == "bearer" and token.strip() in self._tokens:
            return self._tokens[token.strip()]
        raise ApiError(401, "Unauthorized", "Unauthorized")

    def _authorized(self, user, info):
        if user == ADMIN_USER:
            return True
        resource = info.resource.name + (f"/{info.subresource}" if info.subresource else "")
        for rule in self.rules.get(user, []):
            if not ({"", "*"} & set(rule.get("apiGroups", [""]))):
                continue
            if resource not in rule.get("resources", []) and "*" not in rule.get("resources", []):
                continue
            if info.verb not in rule.get("verbs", []) and "*" not in rule.get("verbs", []):
                continue
            names = rule.get("resourceNames")
            if names and info.name not in names:
                continue
            return True
        return False

    def _record(self, record):
        with self._audit_lock:
            self._audit.append(record)
            if self._audit_file and not self._audit_file.closed:
                self._audit_file.write(json.dumps(record) + "\n")

    def serve(self, handler):
        url = urllib.parse.urlsplit(handler.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        record = {"ts": time.time(), "user": None, "method": handler.command, "path": url.path,
                  "query": url.query, "verb": handler.command.lower(), "resource": None,
                  "subresource": None, "namespace": None, "name": None,
                  "dryRun": query.get("dryRun") == "All",
                  "contentType": handler.headers.get("Content-Type"), "code": None}
        try:
            body = handler.read_body()
            if url.path in ("/healthz", "/livez", "/readyz"):
                code, payload = 200, b"ok"
            else:
                record["user"] = user = self._authenticate(handler)
                code, payload = self._serve_authenticated(handler, user, url.path, query, body, record)
                if code is None:
                    return  # a watch, recorded and streamed
        except ApiError as error:
            code, payload = error.code, error.status()
        except Exception:  # noqa: BLE001 - answered as the real server would, and shown
            traceback.print_exc()
            code, payload = 500, ApiError(500, "InternalError", "an error on the server").status()
        record["code"] = code
        self._record(record)
        handler.send_body(code, payload, "text/plain" if isinstance(payload, bytes) else "application/json")

    def _serve_authenticated(self, handler, user, path, query, body, record):
        if path == "/testing/compact" and handler.command == "POST":
            if user != ADMIN_USER:
                raise ApiError(403, "Forbidden", f'User "{user}" cannot compact the test server')
            self.compact()
            return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success",
                         "metadata": {}, "code": 200}
        nonresource = self._nonresource(path)
        if nonresource is not None:
            if handler.command != "GET":
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method")
            return 200, nonresource
        if not path.startswith("/api/v1/"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        info = route(handler.command, path, query)
        record.update(verb=info.verb, resource=info.resource.name, subresource=info.subresource,
                      namespace=info.namespace, name=info.name)
        if not self._authorized(user, info):
            resource = info.resource.name + (f"/{info.subresource}" if info.subresource else "")
            raise forbidden(user, info.verb, resource, info.namespace, info.name)
        if info.watch:
            labels, fields = _selectors(query, info.resource)
            if info.name:
                fields = fields or FieldSelector("", info.resource)
                fields.requirements.append(("metadata.name", True, info.name))
            self._stream_watch(handler, info, query, labels, fields, record)
            return None, None
        return self._serve_resource(handler, info, query, body)

    def _nonresource(self, path):
        """Discovery and version documents, or None for other paths."""
        path = path.rstrip("/") or "/"
        if path == "/version":
            return {"major": "1", "minor": "32", "gitVersion": GIT_VERSION,
                    "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                    "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23.0", "compiler": "gc",
                    "platform": "linux/amd64"}
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.port}"}]}
        if path == "/apis":
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
        if path == "/api/v1":
            return _discovery_resources()
        if path.startswith("/openapi") or path.startswith("/apis/"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return None

    def _serve_resource(self, handler, info, query, body):
        dry_run = query.get("dryRun")
        if dry_run not in (None, "All"):
            raise bad_request(f"invalid dry run value: {dry_run!r}, supported values are: All")
        dry_run = dry_run == "All"
        resource, namespace, name = info.resource, info.namespace, info.name
        if info.verb == "get":
            return 200, self.store.get(resource, namespace, name)
        if info.verb == "list":
            return 200, self._list(info, query)
        if info.verb == "create":
            obj = self._json_body(handler, body)
            if info.subresource == "binding":
                self.store.bind(namespace, name, obj, dry_run)
                return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                             "status": "Success", "code": 201}
            return 201, self.store.create(resource, namespace, obj, dry_run)
        if info.verb == "update":
            return 200, self.store.update(resource, namespace, name, self._json_body(handler, body),
                                          info.subresource, dry_run)
        if info.verb == "patch":
            content_type = handler.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if content_type not in kube_patch.PATCH_TYPES:
                raise ApiError(415, "UnsupportedMediaType",
                               f"the body of the request was in an unknown format - accepted media types "
                               f"include: {', '.join(kube_patch.PATCH_TYPES)}")
            patch = self._parse_json(body)
            return 200, self.store.patch(resource, namespace, name, content_type, patch,
                                         info.subresource, dry_run)
        # DeleteOptions; a protobuf body (kubectl drain sends one) is read as
        # the defaults.
        protobuf = "protobuf" in handler.headers.get("Content-Type", "")
        options = self._parse_json(body) if body.strip() and not protobuf else {}
        if not isinstance(options, dict):
            raise bad_request("the body of a delete must be DeleteOptions")
        if query.get("propagationPolicy"):
            options["propagationPolicy"] = query["propagationPolicy"]
        if info.verb == "delete":
            deleted = self.store.delete(resource, namespace, name, dry_run, options)
            if resource.returns_deleted:
                return 200, deleted
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                         "details": {"name": name, "kind": resource.name,
                                     "uid": deleted["metadata"]["uid"]}}
        listed = self._list(info, query)
        with self.store.lock:
            for item in listed["items"]:
                self.store.delete(resource, item["metadata"].get("namespace"),
                                  item["metadata"]["name"], dry_run, options)
        return 200, listed

    def _list(self, info, query):
        labels, fields = _selectors(query, info.resource)
        items, version = self.store.list(info.resource, info.namespace, labels, fields)
        metadata = {"resourceVersion": str(version)}
        if query.get("continue"):
            try:
                after = json.loads(base64.urlsafe_b64decode(query["continue"]))["after"]
            except (ValueError, KeyError, TypeError, binascii.Error):
                raise ApiError(410, "Expired", "the provided continue parameter is too old")
            items = [i for i in items
                     if [i["metadata"].get("namespace", ""), i["metadata"]["name"]] > after]
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise bad_request(f"invalid limit: {query['limit']!r}")
        if 0 < limit < len(items):
            last = items[limit - 1]["metadata"]
            metadata["continue"] = base64.urlsafe_b64encode(json.dumps(
                {"after": [last.get("namespace", ""), last["name"]]}).encode()).decode()
            metadata["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        for item in items:  # as the real server: list items carry no kind
            item.pop("kind", None)
            item.pop("apiVersion", None)
        return {"kind": f"{info.resource.kind}List", "apiVersion": "v1", "metadata": metadata,
                "items": items}

    @staticmethod
    def _parse_json(body):
        try:
            return json.loads(body or b"null")
        except ValueError as error:
            raise bad_request(f"couldn't get version/kind; json parse error: {error}")

    def _json_body(self, handler, body):
        content_type = handler.headers.get("Content-Type", "application/json").split(";")[0].strip()
        if content_type not in ("application/json", "", "*/*"):
            raise ApiError(415, "UnsupportedMediaType",
                           f"the body of the request was in an unknown format - accepted media types "
                           f"include: application/json")
        return self._parse_json(body)

    # --- watch ---

    def _stream_watch(self, handler, info, query, labels, fields, record):
        """Streams WatchEvents as JSON lines in an HTTP chunked body until
        timeoutSeconds, the client leaves or the server stops. The request
        is recorded (code 200) as the stream starts."""
        store = self.store
        try:
            timeout = min(int(query.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT), MAX_WATCH_TIMEOUT)
        except ValueError:
            timeout = DEFAULT_WATCH_TIMEOUT
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true")
        since = query.get("resourceVersion") or "0"

        def selected(obj):
            return (obj is not None
                    and (info.namespace is None or obj["metadata"].get("namespace") == info.namespace)
                    and (labels is None or labels.matches(obj["metadata"].get("labels")))
                    and (fields is None or fields.matches(obj)))

        def line(event_type, obj):
            return json.dumps({"type": event_type, "object": obj}).encode() + b"\n"

        def expired(version):
            return line("ERROR", ApiError(410, "Expired", f"too old resource version: {version} "
                                                          f"({store.history_floor})").status())

        def bookmark(version):
            return line("BOOKMARK", {"kind": info.resource.kind, "apiVersion": "v1",
                                     "metadata": {"resourceVersion": str(version)}})

        with store.lock:
            if since == "0":
                cursor = store.resource_version
                pending = [line("ADDED", o) for o in store.scan(info.resource.name) if selected(o)]
            else:
                try:
                    cursor = int(since)
                except ValueError:
                    raise bad_request(f"invalid resource version: {since!r}")
                pending = []
            too_old = cursor < store.history_floor
        record["code"] = 200
        self._record(record)
        handler.start_stream()
        deadline = time.monotonic() + timeout
        next_bookmark = time.monotonic() + self.bookmark_interval
        try:
            if too_old:
                handler.send_chunk(expired(cursor))
            for data in pending:
                handler.send_chunk(data)
            while not too_old:
                wake_at = min(deadline, next_bookmark) if bookmarks else deadline
                with store.lock:
                    while (not store.stopping and store.resource_version <= cursor
                           and time.monotonic() < wake_at):
                        store.changed.wait(wake_at - time.monotonic())
                    if cursor < store.history_floor:
                        handler.send_chunk(expired(cursor))
                        break
                    events = store.events_after(cursor)
                    cursor = store.resource_version
                    stopping = store.stopping
                for event in events:
                    translated = self._translate(event, info, selected)
                    if translated:
                        handler.send_chunk(line(*translated))
                if stopping:
                    break
                now = time.monotonic()
                if now >= deadline:
                    if bookmarks:
                        handler.send_chunk(bookmark(cursor))
                    break
                if bookmarks and now >= next_bookmark:
                    handler.send_chunk(bookmark(cursor))
                    next_bookmark = now + self.bookmark_interval
            handler.wfile.write(b"0\r\n\r\n")
        except (OSError, ssl.SSLError):
            pass

    @staticmethod
    def _translate(event, info, selected):
        """The event as this watcher sees it: a modification that moves an
        object into (out of) its selection is an ADDED (DELETED)."""
        if event.resource != info.resource.name:
            return None
        now, before = selected(event.object), selected(event.old)
        if event.type == "MODIFIED":
            if now and not before:
                return "ADDED", event.object
            if before and not now:
                return "DELETED", event.object
        return (event.type, event.object) if now else None


class WatchStream:
    """A client's end of a watch: next() gives the next event (a dict with
    type and object), or None once the stream ended or after `timeout`."""

    def __init__(self, connection, response):
        self.connection, self.response = connection, response
        self.status = response.status

    def next(self, timeout=10):
        self.connection.sock.settimeout(timeout)
        try:
            line = self.response.readline()
        except (TimeoutError, socket.timeout):
            return None
        return json.loads(line) if line.strip() else None

    def events(self, timeout=10):
        """Every event until the stream ends (or stays silent for timeout)."""
        events = []
        while (event := self.next(timeout)) is not None:
            events.append(event)
        return events

    def close(self):
        self.connection.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", required=True, help="credentials, kubeconfigs, server.json, audit.jsonl")
    parser.add_argument("--listen", default="127.0.0.1:0", help="127.0.0.1:PORT (0: any free port)")
    parser.add_argument("--history", type=int, default=1000, help="watch events kept")
    parser.add_argument("--scheduler", action="store_true", help="bind pending pods to nodes")
    parser.add_argument("--rbac", help="JSON rules of the non-admin users")
    args = parser.parse_args(argv)
    server = KubeApiServer(args.dir, args.listen, args.history, args.scheduler, args.rbac)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    server.start()
    print(f"READY {server.url}", flush=True)
    while not stop.wait(1):
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
