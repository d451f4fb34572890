#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""REST API integration tests: a real collbench-coordinator with
--http-listen and --tokens, two real collbench-worker processes joining with
the worker token, and curl against every route of docs/openapi.yaml.

    rest_test.py --bin-dir build/bin --case routes [--case watch ...]
    rest_test.py --bin-dir build/bin            # every case
    rest_test.py --list

Cases:
  routes  every route: success; 400 naming the field (spec.ranks,
          spec.sizes_bytes[1], page_size, filter), malformed JSON and
          unknown fields; 404 for unknown runs and workers; 401 without a
          token and 403 with a read token on POST; 413 for a body over
          1 MiB; paging; cancel and its 412; drain.
  watch   an SSE watch (GET /v1/runs/{id}:watch) of a real allreduce run of
          5 sizes on 2 ranks (one per worker): every size result arrives, in
          sequence order, while the run is still running, then the final
          SUCCEEDED state, and the stream ends.
  watchers  500 SSE watchers and 500 gRPC WatchRun streams of one run
          (watch_swarm, one read token each) with --max-watchers-per-client
          500: while they are open /healthz, GET /v1/runs and a CreateRun
          each answer within 100 ms (median of 3, all printed); the 501st
          watcher of each client gets 429 with Retry-After /
          RESOURCE_EXHAUSTED; /metrics counts 1000 open and 2 refused; then
          the run goes ahead and every watcher gets each result and the
          final SUCCEEDED.
  admission  --max-queued-runs and --create-rate: creates beyond the queue's
          length and beyond the caller's rate get 429 with Retry-After and a
          message naming the limit, queue nothing, and are counted in
          /metrics; a retry with a known requestId still returns its run;
          the CLI (gRPC) sees RESOURCE_EXHAUSTED naming the limit.
  lifecycle  drain (REST) -> the worker restarts -> still DRAINING, and a
          spread run waits for it -> undrain -> the run runs on it; a read
          token cannot delete or undrain (the run and the drain stay); a
          finished run deleted (then 404, results 404) and an active one
          refused (412) and still there; a connected worker refused, then
          deleted once stopped; the same through the CLI (drain, undrain,
          delete, workers delete).
  retention  three finished runs and one queued on drained workers; the
          coordinator restarted with --retain-runs 1 deletes exactly the two
          older finished runs (and logs them), keeps the queued one, and the
          drain survived the restart.
  workflows  a portal's workflows over REST only: a suite (container-parity,
          ci profile) and an algorithm sweep of allreduce (Open MPI's
          default, ring, recursive_doubling) created and watched over SSE
          from the start (versions in order, cellsDone growing, the stream
          ends after WORKFLOW_SUCCEEDED); every suite cell ran or names why
          it was skipped; the sweep's advice tables and a tuning file or the
          reason for none; advice over the sweep and a report over the suite,
          whose page and the sweep's are fetched; refusals that store and
          queue nothing (a typo in a matrix's operations names the field, a
          read token, an unknown workflow), requestId retries (same spec:
          the same workflow; another spec: 409), validateOnly; a matrix
          cancelled while it runs leaves no run active, is refused deletion
          while running (412) and deleted once ended.

It reuses tests/integration/service/service_test.py's cluster (processes,
ports, teardown, leak-safe subreaper). Each case prints one PASS/FAIL line.
Exit code: 0 when every case passed, 1 otherwise, 2 on bad usage, 77 when
curl is missing (ctest reports it as skipped).
"""

import http.client
import json
import os
import re
import resource
import select
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.join(HERE, "..", "service"))
import service_test as svc  # noqa: E402  (the shared cluster helpers)
from service_test import Failure, expect, poll  # noqa: E402

TOKENS = {"read": "r-3c9f1e", "operator": "o-77ab02", "worker": "w-51d4c8"}
READ, OPERATOR = TOKENS["read"], TOKENS["operator"]


def log(message):
    svc.log(message)


class RestCluster(svc.Cluster):
    """service_test's Cluster whose coordinator also serves HTTP and checks
    bearer tokens, and whose workers join with the worker token."""

    def __init__(self, bin_dir, case):
        super().__init__(bin_dir, "rest-" + case)
        self.http_port = None
        self.coordinator_args = []  # more flags for the coordinator
        self.tokens_file = os.path.join(self.dir, "tokens")
        with open(os.open(self.tokens_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
                  "w") as f:
            f.write("# role token\n")
            for role, token in TOKENS.items():
                f.write("%s %s\n" % (role, token))
        self.join_token_file = self.token_file("join-token", TOKENS["worker"])

    def token_file(self, name, token):
        """A 0600 file in the case's folder whose first line is `token`."""
        path = os.path.join(self.dir, name)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(token + "\n")
        return path

    def _spawn(self, argv, log_name, env=None):
        name = os.path.basename(argv[0])
        if name == "collbench-coordinator":
            if self.http_port is None:
                self.http_port = svc.free_port()
            argv = argv + ["--http-listen", "127.0.0.1:%d" % self.http_port,
                           "--tokens", self.tokens_file] + self.coordinator_args
        elif name == "collbench-worker":
            argv = argv + ["--join-token-file", self.join_token_file]
        return super()._spawn(argv, log_name, env)

    def start_coordinator(self, heartbeat_timeout=6):
        proc = super().start_coordinator(heartbeat_timeout)
        poll("GET /healthz on port %d" % self.http_port,
             lambda: self.curl("GET", "/healthz")[0] == 200, 20, 0.1)
        return proc

    def list_workers(self):
        """What wait_workers_ready needs, over REST (the CLI would need a
        token)."""
        status, body, _ = self.curl("GET", "/v1/workers", READ)
        expect(status == 200, "GET /v1/workers answered %d: %s" % (status, body))
        return [{"name": w["name"], "state": w["state"].lower()}
                for w in json.loads(body).get("workers", [])]

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.http_port, path)

    def curl(self, method, path, token=None, body=None, timeout=30, headers=()):
        """(HTTP status, body text, headers dict with lower-case names).
        `body` is sent as is (str or bytes) with Content-Type JSON;
        `headers` are more request headers ("Name: value")."""
        headers_file = os.path.join(self.dir, "curl-headers")
        argv = ["curl", "-sS", "-o", "-", "-D", headers_file, "-w", "\n%{http_code}",
                "-X", method, "--max-time", str(timeout)]
        if token:
            argv += ["-H", "Authorization: Bearer " + token]
        for header in headers:
            argv += ["-H", header]
        if body is not None:
            argv += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
        data = body.encode() if isinstance(body, str) else body
        done = subprocess.run(argv + [self.url(path)], input=data, capture_output=True,
                              timeout=timeout + 10)
        expect(done.returncode == 0, "curl %s %s failed (%d): %s" % (
            method, path, done.returncode, done.stderr.decode(errors="replace")))
        text, _, code = done.stdout.decode(errors="replace").rpartition("\n")
        headers = {}
        with open(headers_file, errors="replace") as f:
            for line in f:
                name, sep, value = line.partition(":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
        log("curl %s %s -> %s" % (method, path, code))
        return int(code), text, headers

    def call(self, method, path, token, body=None, status=200):
        """The parsed JSON answer of a call that must answer `status`."""
        got, text, headers = self.curl(method, path, token, body)
        expect(got == status, "%s %s answered %d, expected %d: %s" % (
            method, path, got, status, text[:500]))
        if status != 200:
            expect(headers.get("content-type") == "application/json",
                   "%s %s error is not JSON: %s" % (method, path, headers.get("content-type")))
        try:
            return json.loads(text)
        except ValueError:
            raise Failure("%s %s answered no JSON: %r" % (method, path, text[:300]))


def expect_error(c, method, path, token, status, code_name, field=None, body=None,
                 message_part=None):
    """An error answer with the JSON error body; `field` is the field its
    BadRequest detail must name."""
    error = c.call(method, path, token, body, status)
    for key in ("code", "status", "message", "details"):
        expect(key in error, "%s %s: error body has no %r: %s" % (method, path, key, error))
    expect(error["status"] == code_name, "%s %s: status %s, expected %s" % (
        method, path, error["status"], code_name))
    if field is not None:
        fields = [v["field"] for d in error["details"] for v in d.get("fieldViolations", [])]
        expect(fields == [field], "%s %s: names %s, expected %s (%s)" % (
            method, path, fields, field, error["message"]))
        expect(error["message"].startswith(field + ": "),
               "%s %s: message does not start with %s: %s" % (method, path, field,
                                                               error["message"]))
    if message_part is not None:
        expect(message_part in error["message"], "%s %s: %r not in %r" % (
            method, path, message_part, error["message"]))
    return error


def spec(ranks=2, sizes=("8", "1024"), **extra):
    s = {"operation": "allreduce", "ranks": ranks, "sizesBytes": list(sizes), "iters": 20,
         "check": True, "placement": {"policy": "SPREAD"}}
    s.update(extra)
    return s


def run_id(run):
    expect(run["name"].startswith("runs/"), "not a run name: %s" % run["name"])
    return run["name"][len("runs/"):]


def wait_final(c, rid, timeout=120):
    def final():
        run = c.call("GET", "/v1/runs/" + rid, READ)
        return run if run["state"] in ("SUCCEEDED", "FAILED", "CANCELLED") else None
    return poll("runs/%s to end" % rid, final, timeout, 0.25)


# ---------------------------------------------------------------------------
# Cases


def check_public_routes(c):
    status, body, headers = c.curl("GET", "/healthz")
    expect(status == 200 and body.strip() == "ok", "/healthz: %d %r" % (status, body))
    status, body, _ = c.curl("GET", "/readyz")
    expect(status == 200, "/readyz: %d %r" % (status, body))
    status, body, headers = c.curl("GET", "/metrics")
    expect(status == 200 and "collbench_" in body, "/metrics: %d %r" % (status, body[:200]))
    expect(headers.get("content-type", "").startswith("text/plain"),
           "/metrics content type %s" % headers.get("content-type"))


def check_auth(c):
    for method, path in (("GET", "/v1/runs"), ("GET", "/v1/workers"), ("GET", "/v1/runs/x"),
                         ("POST", "/v1/runs")):
        error = expect_error(c, method, path, None, 401, "UNAUTHENTICATED",
                             body="{}" if method == "POST" else None)
        expect(error["code"] == 16, "401 with code %s" % error["code"])
    _, _, headers = c.curl("GET", "/v1/runs")
    expect(headers.get("www-authenticate", "").startswith("Bearer"),
           "401 without WWW-Authenticate: %s" % headers)
    expect_error(c, "GET", "/v1/runs", "not-a-token", 401, "UNAUTHENTICATED")
    expect_error(c, "GET", "/v1/runs", TOKENS["worker"], 403, "PERMISSION_DENIED")
    body = json.dumps({"spec": spec()})
    expect_error(c, "POST", "/v1/runs", READ, 403, "PERMISSION_DENIED", body=body)
    expect_error(c, "POST", "/v1/runs/x:cancel", READ, 403, "PERMISSION_DENIED")
    expect_error(c, "POST", "/v1/workers/w1:drain", READ, 403, "PERMISSION_DENIED")
    expect(c.call("GET", "/v1/runs", READ).get("runs", []) == [],
           "a request without the operator token queued a run")


def check_validation(c):
    post = lambda body, field, **kw: expect_error(  # noqa: E731
        c, "POST", "/v1/runs", OPERATOR, 400, "INVALID_ARGUMENT", field, body, **kw)
    post(json.dumps({"spec": spec(ranks=0)}), "spec.ranks")
    post(json.dumps({"spec": spec(sizes=("8", "0"))}), "spec.sizes_bytes[1]")
    post(json.dumps({"spec": spec(ranks=64)}), "spec.ranks")  # more than the workers' slots
    post(json.dumps({"spec": spec(env={"LD_PRELOAD": "x"})}), "spec.env.LD_PRELOAD")
    post(json.dumps({"spec": spec(operation="latency", sync="SYNC_BARRIER")}), "spec.sync")
    post(json.dumps({"requestId": "no-spec"}), "spec")
    # Malformed JSON and unknown fields: 400 naming the problem.
    error = post('{"spec": {"operation": "allreduce", ', None, message_part="request body: ")
    expect(len(error["message"]) > len("request body: ") + 5,
           "malformed JSON without the parser's reason: %s" % error["message"])
    post(json.dumps({"spec": spec(), "colour": "red"}), None, message_part="colour")
    post(json.dumps({"spec": dict(spec(), ranks="two")}), None, message_part="request body: ")
    post("", None, message_part="request body: ")
    # Bodies over the default 1 MiB limit.
    big = json.dumps({"spec": spec(), "requestId": "x" * (2 << 20)})
    expect_error(c, "POST", "/v1/runs", OPERATOR, 413, "RESOURCE_EXHAUSTED", body=big)
    # Query parameters.
    get = lambda path, field: expect_error(  # noqa: E731
        c, "GET", path, READ, 400, "INVALID_ARGUMENT", field)
    get("/v1/runs?page_size=abc", "page_size")
    get("/v1/runs?page_size=-3", "page_size")
    get("/v1/runs?filter=state=SLEEPING", "filter")
    get("/v1/runs?page_token=bogus", "page_token")
    get("/v1/runs?colour=red", "colour")
    get("/v1/workers?page_size=x", "page_size")
    expect(c.call("GET", "/v1/runs", READ).get("runs", []) == [],
           "an invalid request queued a run")


def check_unknown(c):
    for path in ("/v1/runs/nope", "/v1/runs/nope/results", "/v1/runs/nope:watch",
                 "/v1/workers/nope"):
        expect_error(c, "GET", path, READ, 404, "NOT_FOUND")
    expect_error(c, "POST", "/v1/runs/nope:cancel", OPERATOR, 404, "NOT_FOUND")
    expect_error(c, "POST", "/v1/workers/nope:drain", OPERATOR, 404, "NOT_FOUND")
    expect_error(c, "GET", "/v1/nothing", READ, 404, "NOT_FOUND")
    status, _, headers = c.curl("DELETE", "/v1/runs", OPERATOR)
    expect(status == 405 and headers.get("allow") == "POST, GET",
           "DELETE /v1/runs: %d, Allow %s" % (status, headers.get("allow")))


def check_runs(c):
    created = c.call("POST", "/v1/runs", OPERATOR,
                     json.dumps({"spec": spec(), "requestId": "rest-1"}))
    expect(created["state"] in ("QUEUED", "SCHEDULED", "RUNNING"), "created: %s" % created)
    again = c.call("POST", "/v1/runs", OPERATOR,
                   json.dumps({"spec": spec(), "request_id": "rest-1"}))
    expect(again["name"] == created["name"], "the same requestId made a second run")
    rid = run_id(created)
    got = c.call("GET", "/v1/runs/" + rid, READ)
    expect(got["name"] == created["name"] and got["spec"]["ranks"] == 2, "GET run: %s" % got)
    done = wait_final(c, rid)
    expect(done["state"] == "SUCCEEDED", "the run ended %s: %s" % (done["state"], done["error"]))
    results = c.call("GET", "/v1/runs/%s/results" % rid, READ)
    expect(results["run"]["name"] == created["name"], "results of another run")
    got_sizes = [int(r["bytes"]) for r in results["results"]]
    expect(got_sizes == [8, 1024], "result sizes %s" % got_sizes)
    expect(got["spec"].get("sync") == "SYNC_BARRIER",
           "the stored spec does not say its resolved sync: %s" % got["spec"])
    for r in results["results"]:
        expect(r["checked"] is True and int(r["wrong"]) == 0 and r["avgS"] > 0,
               "a bad result: %s" % r)
        expect(r.get("sync") == "SYNC_BARRIER", "a result without its sync: %s" % r)
        ranks = r.get("ranks", [])
        expect([t.get("rank", 0) for t in ranks] == [0, 1] and all(t["host"] for t in ranks)
               and all(t["meanS"] > 0 and t["p99S"] > 0 for t in ranks),
               "a result without both ranks' statistics: %s" % ranks)
    # A long run to cancel, and a third run queued behind it.
    long_spec = spec(sizes=("1048576",), iters=100000)
    long_run = c.call("POST", "/v1/runs", OPERATOR, json.dumps({"spec": long_spec}))
    queued = c.call("POST", "/v1/runs", OPERATOR, json.dumps({"spec": long_spec}))
    expect(queued["state"] == "QUEUED", "the third run is %s, not queued" % queued["state"])
    cancelled = c.call("POST", "/v1/runs/%s:cancel" % run_id(queued), OPERATOR)
    expect(cancelled["state"] == "CANCELLED", "cancel of a queued run: %s" % cancelled["state"])
    expect_error(c, "POST", "/v1/runs/%s:cancel" % run_id(queued), OPERATOR, 412,
                 "FAILED_PRECONDITION")
    cancelled = c.call("POST", "/v1/runs/%s:cancel" % run_id(long_run), OPERATOR, body="{}")
    expect(cancelled["state"] == "CANCELLED", "cancel of a started run: %s" % cancelled)
    # Paging: three runs, newest first, two per page; the filter.
    first = c.call("GET", "/v1/runs?page_size=2", READ)
    expect(len(first["runs"]) == 2 and first["nextPageToken"], "first page: %s" % first)
    second = c.call("GET", "/v1/runs?pageSize=2&page_token=" + first["nextPageToken"], READ)
    names = [r["name"] for r in first["runs"] + second["runs"]]
    expect(names == [queued["name"], long_run["name"], created["name"]],
           "paged listing %s" % names)
    expect(not second["nextPageToken"], "a token after the last page")
    only = c.call("GET", "/v1/runs?filter=state=SUCCEEDED", READ)["runs"]
    expect([r["name"] for r in only] == [created["name"]], "filtered listing %s" % only)


def check_sync_round_trip(c):
    """A run asked for back to back keeps SYNC_NONE in its spec and results."""
    created = c.call("POST", "/v1/runs", OPERATOR,
                     json.dumps({"spec": spec(sizes=("8",), sync="SYNC_NONE")}))
    expect(created["spec"].get("sync") == "SYNC_NONE", "created: %s" % created["spec"])
    done = wait_final(c, run_id(created))
    expect(done["state"] == "SUCCEEDED", "the sync none run ended %s" % done["state"])
    results = c.call("GET", "/v1/runs/%s/results" % run_id(created), READ)["results"]
    expect([r.get("sync") for r in results] == ["SYNC_NONE"], "results %s" % results)


def check_workers(c):
    workers = c.call("GET", "/v1/workers", READ)["workers"]
    expect([w["name"] for w in workers] == ["workers/w1", "workers/w2"], "workers %s" % workers)
    page = c.call("GET", "/v1/workers?page_size=1", READ)
    expect(len(page["workers"]) == 1 and page["nextPageToken"], "worker page %s" % page)
    w1 = c.call("GET", "/v1/workers/w1", READ)
    expect(w1["name"] == "workers/w1" and w1["inventory"]["cpus"] >= 1, "w1: %s" % w1)
    drained = c.call("POST", "/v1/workers/w2:drain", OPERATOR)
    expect(drained["state"] == "DRAINING", "drained w2 is %s" % drained["state"])


def case_routes(c):
    c.start_coordinator()
    c.start_workers(2, slots=1)
    check_public_routes(c)
    check_auth(c)
    check_validation(c)
    check_unknown(c)
    check_runs(c)
    check_sync_round_trip(c)
    check_workers(c)


def case_grpc_auth(c):
    """The same tokens guard the gRPC API (through the CLI's --token) and
    joining (a worker with a wrong join token is refused)."""
    c.start_coordinator()
    c.start_workers(2, slots=1)
    denied = c.cli("workers", expect_code=None)
    expect(denied.returncode != 0 and "token" in denied.stderr.lower(),
           "`collbench workers` without a token: exit %d, stderr %r" % (
               denied.returncode, denied.stderr.strip()))
    listed = c.cli("--token", READ, "workers")
    expect(listed.stdout.count("ready") >= 2, "workers with a read token: %r" % listed.stdout)
    run = ["run", "allreduce", "--ranks", 2, "--placement", "spread", "--sizes", "8,1K",
           "-n", 20, "--check", "--wait", "--output", "jsonl"]
    refused = c.cli("--token", READ, *run, expect_code=None)
    expect(refused.returncode != 0 and "operator" in refused.stderr,
           "a run with a read token: exit %d, stderr %r" % (
               refused.returncode, refused.stderr.strip()))
    status, body, _ = c.curl("GET", "/v1/runs", READ)
    expect(status == 200 and json.loads(body).get("runs", []) == [],
           "a refused create queued something: %s" % body)
    done = c.cli("--token", OPERATOR, *run)
    svc.check_results(svc.parse_jsonl(done.stdout), [8, 1024], "a run with an operator token")
    # A stranger's worker never joins.
    stranger = super(RestCluster, c)._spawn(
        [c.binary("collbench-worker"), "--coordinator", "127.0.0.1:%d" % c.port,
         "--listen", "127.0.0.1:0", "--name", "stranger", "--slots", "1",
         "--join-token-file", c.token_file("wrong-join-token", "not-a-token")], "stranger")
    poll("the stranger's refusal in its log",
         lambda: "not accepted" in c.tail(stranger, 20), 20, 0.2)
    names = [w["name"] for w in c.list_workers()]
    expect("workers/stranger" not in names, "a worker with a wrong token joined: %s" % names)


class SseReader:
    """Reads `curl -N` of an event stream on a thread; keeps each event with
    the time it arrived."""

    def __init__(self, c, path, token, headers_name="sse-headers"):
        self.events = []  # (arrival monotonic time, event name, data dict)
        self.lock = threading.Condition()
        self.headers_path = os.path.join(c.dir, headers_name)
        self.proc = subprocess.Popen(
            ["curl", "-sS", "-N", "--max-time", "300", "-H", "Authorization: Bearer " + token,
             "-D", self.headers_path, c.url(path)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        c.popens.append(self.proc)  # the teardown stops it on failure
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        name, data = None, None
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                data = json.loads(line[len("data: "):])
            elif line == "" and name is not None:
                with self.lock:
                    self.events.append((time.monotonic(), name, data))
                    self.lock.notify_all()
                name, data = None, None

    def wait(self, predicate, what, timeout):
        deadline = time.monotonic() + timeout
        with self.lock:
            while not predicate(self.events):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Failure("timed out after %ss waiting for %s; events: %s" % (
                        timeout, what, [(n, d.get("result", {}).get("sequence")) for _, n, d in
                                        self.events]))
                self.lock.wait(left)
            return list(self.events)

    def finish(self, timeout):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Failure("the event stream did not end within %ss of the final state" % timeout)
        self.thread.join(timeout=5)
        return self.proc.returncode


def case_watch(c):
    c.start_coordinator()
    c.start_workers(2, slots=1)
    sizes = [8, 1024, 65536, 1 << 20, 4 << 20]
    body = {"spec": spec(sizes=[str(s) for s in sizes], iters=1000, warmup=5)}
    run = c.call("POST", "/v1/runs", OPERATOR, json.dumps(body))
    rid = run_id(run)
    reader = SseReader(c, "/v1/runs/%s:watch" % rid, READ)
    # The first result arrives while the run still runs: streamed, not
    # replayed at the end.
    reader.wait(lambda ev: any(n == "result" for _, n, _ in ev), "the first result", 90)
    now = c.call("GET", "/v1/runs/" + rid, READ)
    log("at the first result the run is %s, %s/%s sizes" % (
        now["state"], now.get("sizesDone"), now.get("sizesTotal")))
    expect(now["state"] == "RUNNING" and now["sizesDone"] < len(sizes),
           "the first result came only with the run's end (%s, %s sizes done)" % (
               now["state"], now["sizesDone"]))
    events = reader.wait(lambda ev: any(n == "state" and d["stateChange"]["state"] in (
        "SUCCEEDED", "FAILED", "CANCELLED") for _, n, d in ev), "the final state", 120)
    code = reader.finish(10)
    expect(code == 0, "curl of the event stream exited %d: %s" % (
        code, reader.proc.stderr.read().decode(errors="replace")))
    with open(os.path.join(c.dir, "sse-headers")) as f:
        headers = f.read().lower()
    expect("content-type: text/event-stream" in headers, "SSE headers: %s" % headers)
    names = [n for _, n, _ in events]
    expect(names[-1] == "state" and events[-1][2]["stateChange"]["state"] == "SUCCEEDED",
           "the stream did not end with SUCCEEDED: %s" % names)
    expect(names[0] == "state", "the stream did not start with the run's state: %s" % names)
    results = [(t, d["result"]) for t, n, d in events if n == "result"]
    got = [(int(r["sequence"]), int(r["bytes"])) for _, r in results]
    expect(got == list(enumerate(sizes)), "results (sequence, bytes) %s, expected %s" % (
        got, list(enumerate(sizes))))
    for _, r in results:
        expect(r["checked"] is True and int(r["wrong"]) == 0 and r["avgS"] > 0,
               "a bad result: %s" % r)
    # Each result came as it was stored, not in one burst at the end: the
    # large sizes take seconds, so the first and last arrive well apart.
    final_time = events[-1][0]
    times = [t for t, _ in results]
    log("results arrived at +%s s; final state at +%.2f s" % (
        ", ".join("%.2f" % (t - times[0]) for t in times), final_time - times[0]))
    expect(times[-1] <= final_time, "a result arrived after the final state")
    expect(times[-1] - times[0] >= 0.3,
           "all results arrived within %.3f s: not streamed as they completed" % (
               times[-1] - times[0]))
    progress = [d["progress"] for _, n, d in events if n == "progress"]
    expect(progress and progress[-1]["sizesDone"] == len(sizes), "progress %s" % progress)
    stored = c.call("GET", "/v1/runs/%s/results" % rid, READ)["results"]
    expect([int(r["bytes"]) for r in stored] == sizes, "stored results %s" % stored)


def admission_rejections(c):
    """collbench_admission_rejections_total by reason, from /metrics."""
    status, body, _ = c.curl("GET", "/metrics")
    expect(status == 200, "/metrics answered %d" % status)
    counts = {}
    for line in body.splitlines():
        if line.startswith("collbench_admission_rejections_total{"):
            labels, _, value = line.rpartition(" ")
            counts[labels.split('reason="')[1].split('"')[0]] = float(value)
    return counts


NO_REJECTIONS = {"queue_full": 0, "rate_limited": 0, "watchers_total": 0,
                 "watchers_per_client": 0, "watcher_too_slow": 0, "watchers_threads": 0,
                 "workflow_cells": 0, "runs_per_request": 0, "report_size": 0}


def metric_value(c, name):
    """The value of an unlabelled metric from /metrics."""
    status, body, _ = c.curl("GET", "/metrics")
    expect(status == 200, "/metrics answered %d" % status)
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise Failure("/metrics has no %s" % name)


def timed_request(c, method, path, token=None, body=None):
    """(milliseconds from connect to the whole answer, HTTP status)."""
    start = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", c.http_port, timeout=10)
    headers = {"Authorization": "Bearer " + token} if token else {}
    if body is not None:
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=body, headers=headers)
    answer = conn.getresponse()
    answer.read()
    conn.close()
    return (time.monotonic() - start) * 1000, answer.status


def case_watchers(c):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 8192 and (hard == resource.RLIM_INFINITY or hard >= 8192):
        resource.setrlimit(resource.RLIMIT_NOFILE, (8192, hard))  # the children inherit it
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft != resource.RLIM_INFINITY and soft < 4096:
        raise Failure("the open-file limit is %d; 1000 watchers need about 4096" % soft)
    grpc_token = "r-watch-9b2e71"  # the gRPC watchers' client; the SSE ones use READ
    with open(c.tokens_file, "a") as f:
        f.write("read %s\n" % grpc_token)
    per_client = 500
    c.coordinator_args = ["--max-watchers-per-client", str(per_client), "--max-watchers", "5000",
                          "--create-rate", "off"]
    c.start_coordinator()
    sizes = [8, 1024, 65536, 1 << 20]
    # No workers yet: every watcher opens on a QUEUED run, then sees it run.
    run = c.call("POST", "/v1/runs", OPERATOR, json.dumps(
        {"spec": spec(sizes=[str(s) for s in sizes], iters=200)}))
    rid = run_id(run)
    log("starting watch_swarm")
    swarm = subprocess.Popen(
        [c.binary("watch_swarm"), "--grpc", "127.0.0.1:%d" % c.port,
         "--http", "127.0.0.1:%d" % c.http_port, "--run", "runs/" + rid,
         "--grpc-watchers", str(per_client), "--grpc-token", grpc_token,
         "--sse-watchers", str(per_client), "--sse-token", READ, "--extra", "--timeout", "150"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    c.popens.append(swarm)  # the teardown stops it on failure
    log("watch_swarm started (pid %d)" % swarm.pid)
    pending = [b""]  # what watch_swarm wrote after its last whole line

    def next_line(timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in pending[0]:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([swarm.stdout.fileno()], [], [], max(left, 0))
            if not ready:
                raise Failure("watch_swarm said nothing for %s s" % timeout)
            chunk = os.read(swarm.stdout.fileno(), 65536)
            if not chunk:
                raise Failure("watch_swarm ended early (exit %s)" % swarm.wait())
            pending[0] += chunk
        raw, pending[0] = pending[0].split(b"\n", 1)
        line = raw.decode(errors="replace")
        log("watch_swarm: " + line)
        return line

    said = {}
    while True:
        line = next_line(120)
        if line == "READY":
            break
        said[line.split(" ", 2)[0] + " " + line.split(" ", 2)[1]] = line
    expect(said.get("opened grpc=%d" % per_client, "").endswith(
        "%d of %d got their first event" % (2 * per_client, 2 * per_client)),
        "not every watcher opened: %s" % said)
    # The 501st watcher of each client is refused.
    extra_grpc = said.get("extra grpc", "")
    expect(extra_grpc.startswith("extra grpc RESOURCE_EXHAUSTED") and
           "--max-watchers-per-client" in extra_grpc, "the 501st gRPC watcher: %r" % extra_grpc)
    extra_sse = said.get("extra sse", "")
    expect(extra_sse.startswith("extra sse 429 retry-after=") and
           extra_sse.split("retry-after=")[1].split(" ")[0].isdigit() and
           "--max-watchers-per-client" in extra_sse, "the 501st SSE watcher: %r" % extra_sse)
    # With them all open, the HTTP server still answers at once.
    for method, path, token, body in (
            ("GET", "/healthz", None, None),
            ("GET", "/v1/runs", READ, None),
            ("POST", "/v1/runs", OPERATOR, json.dumps({"spec": spec(sizes=["8"])}))):
        times = []
        for _ in range(3):
            ms, status = timed_request(c, method, path, token, body)
            expect(status == 200, "%s %s answered %d with %d watchers open" % (
                method, path, status, 2 * per_client))
            times.append(ms)
        log("with %d watchers open: %s %s took %s ms" % (
            2 * per_client, method, path, ", ".join("%.1f" % t for t in times)))
        expect(sorted(times)[1] < 100, "%s %s took %s ms (median over 100 ms)" % (
            method, path, times))
    open_now = metric_value(c, "collbench_watchers_open")
    expect(open_now == 2 * per_client,
           "collbench_watchers_open is %s, not %d" % (open_now, 2 * per_client))
    counts = admission_rejections(c)
    expect(counts == dict(NO_REJECTIONS, watchers_per_client=2),
           "collbench_admission_rejections_total: %s" % counts)
    # Now the run goes ahead: every watcher gets every result and the end.
    c.start_workers(2, slots=1)
    final = wait_final(c, rid, timeout=120)
    expect(final["state"] == "SUCCEEDED", "the watched run ended %s" % final["state"])
    summaries = {}
    while len(summaries) < 2:
        line = next_line(180)
        if line.startswith("summary "):
            summaries[line.split(" ")[1]] = line
    for kind in ("grpc", "sse"):
        line = summaries[kind]
        expect(" watchers=%d ended=%d final=SUCCEEDED:%d results=%d..%d " % (
            per_client, per_client, per_client, len(sizes), len(sizes)) in line and
            " errors=0 " in line, "the %s watchers: %s" % (kind, line))
    expect(swarm.wait(timeout=60) == 0, "watch_swarm exited %s" % swarm.returncode)
    open_now = metric_value(c, "collbench_watchers_open")
    expect(open_now == 0, "%s watchers still counted open after the run ended" % open_now)


def case_admission(c):
    # No workers: every accepted run stays QUEUED. A burst of 5 creates
    # (3 queued, 2 refused for the queue), then one per 20 s, so the rate
    # cannot refill during the test.
    c.coordinator_args = ["--max-queued-runs", "3", "--create-rate", "3/min",
                          "--create-burst", "5"]
    c.start_coordinator()
    expect(admission_rejections(c) == dict(NO_REJECTIONS),
           "the counters are not there from the start: %s" % admission_rejections(c))
    first = c.call("POST", "/v1/runs", OPERATOR,
                   json.dumps({"spec": spec(), "requestId": "adm-1"}))
    for i in (2, 3):
        c.call("POST", "/v1/runs", OPERATOR,
               json.dumps({"spec": spec(), "requestId": "adm-%d" % i}))
    # The queue is full: 429 naming the limit, Retry-After, nothing queued.
    for i in (4, 5):
        body = json.dumps({"spec": spec(), "requestId": "adm-%d" % i})
        status, text, headers = c.curl("POST", "/v1/runs", OPERATOR, body)
        expect(status == 429, "create over the queue limit answered %d: %s" % (status, text))
        error = json.loads(text)
        expect(error["status"] == "RESOURCE_EXHAUSTED" and "queue limit" in error["message"]
               and "--max-queued-runs 3" in error["message"],
               "queue-full error: %s" % error)
        expect(headers.get("retry-after", "").isdigit() and int(headers["retry-after"]) >= 1,
               "queue-full 429 without a Retry-After in seconds: %s" % headers)
    # The caller's burst of 5 is spent: 429 for the rate, Retry-After is the
    # wait for the next token (20 s at 3/min).
    status, text, headers = c.curl("POST", "/v1/runs", OPERATOR,
                                   json.dumps({"spec": spec(), "requestId": "adm-7"}))
    expect(status == 429, "create over the rate answered %d: %s" % (status, text))
    error = json.loads(text)
    expect("create rate limit" in error["message"], "rate-limit error: %s" % error)
    retry = int(headers.get("retry-after", "0"))
    expect(1 <= retry <= 20, "rate-limit Retry-After %r, expected 1..20 s" % (
        headers.get("retry-after")))
    # A retry of an accepted create still answers with its run.
    again = c.call("POST", "/v1/runs", OPERATOR,
                   json.dumps({"spec": spec(), "requestId": "adm-1"}))
    expect(again["name"] == first["name"], "the retry of adm-1 made %s, not %s" % (
        again["name"], first["name"]))
    # Over gRPC (the CLI), the same refusal.
    refused = c.cli("--token", OPERATOR, "run", "allreduce", "--ranks", 2, "--sizes", "8",
                    expect_code=None)
    expect(refused.returncode != 0 and "create rate limit" in refused.stderr,
           "the CLI's create over the rate: exit %d, stderr %r" % (
               refused.returncode, refused.stderr.strip()))
    # Nothing of the refused creates was queued or stored.
    runs = c.call("GET", "/v1/runs", READ).get("runs", [])
    expect(len(runs) == 3 and all(r["state"] == "QUEUED" for r in runs),
           "expected the 3 accepted runs, QUEUED: %s" % [(r["name"], r["state"]) for r in runs])
    counts = admission_rejections(c)
    expect(counts == dict(NO_REJECTIONS, queue_full=2, rate_limited=2),
           "collbench_admission_rejections_total: %s" % counts)
    # A read token never creates; the limits do not change that.
    expect_error(c, "POST", "/v1/runs", READ, 403, "PERMISSION_DENIED",
                 body=json.dumps({"spec": spec()}))


def worker_row(c, name):
    return c.call("GET", "/v1/workers/" + name, READ)


def wait_worker(c, name, state, timeout=30):
    return poll("workers/%s to be %s" % (name, state),
                lambda: worker_row(c, name)["state"] == state, timeout, 0.25)


def restart_worker(c, name):
    """Stops the worker process and starts it again under its name (its
    secret is kept in its state folder); returns once it re-registered."""
    old = c.workers[name]
    before = worker_row(c, name)["registerTime"]
    c.stop(old)
    wait_worker(c, name, "LOST", timeout=20)
    c.start_worker(name, 1)
    poll("workers/%s to register again" % name,
         lambda: worker_row(c, name)["state"] != "LOST", 30, 0.25)
    log("workers/%s came back (registered first at %s)" % (name, before))


def check_read_token_changes_nothing(c, finished_id):
    expect_error(c, "DELETE", "/v1/runs/" + finished_id, READ, 403, "PERMISSION_DENIED")
    expect_error(c, "POST", "/v1/workers/w2:undrain", READ, 403, "PERMISSION_DENIED")
    expect_error(c, "DELETE", "/v1/workers/w2", READ, 403, "PERMISSION_DENIED")
    expect(c.call("GET", "/v1/runs/" + finished_id, READ)["name"] == "runs/" + finished_id,
           "a read token's DELETE removed the run")
    expect(len(c.call("GET", "/v1/runs/%s/results" % finished_id, READ)["results"]) == 1,
           "a read token's DELETE removed the results")
    expect(worker_row(c, "w2")["draining"] is True, "a read token's undrain ended the drain")
    refused = c.cli("--token", READ, "delete", "runs/" + finished_id, expect_code=None)
    expect(refused.returncode != 0 and "operator" in refused.stderr,
           "`collbench delete` with a read token: exit %d, %r" % (
               refused.returncode, refused.stderr.strip()))
    expect(c.call("GET", "/v1/runs/" + finished_id, READ)["state"] == "SUCCEEDED",
           "the CLI's refused delete removed the run")


def case_lifecycle(c):
    c.start_coordinator()
    c.start_workers(2, slots=1)
    first = c.call("POST", "/v1/runs", OPERATOR, json.dumps({"spec": spec(sizes=("8",))}))
    expect(wait_final(c, run_id(first))["state"] == "SUCCEEDED", "the first run failed")
    # Drain w2 over REST; a restart of the worker keeps it draining.
    drained = c.call("POST", "/v1/workers/w2:drain", OPERATOR)
    expect(drained["state"] == "DRAINING" and drained["draining"] is True,
           "drained w2: %s" % drained)
    restart_worker(c, "w2")
    again = worker_row(c, "w2")
    expect(again["state"] == "DRAINING" and again["draining"] is True,
           "w2 after its restart: %s, draining %s" % (again["state"], again.get("draining")))
    listed = c.cli("--token", READ, "workers").stdout
    expect(re.search(r"workers/w2\s+draining\s", listed), "`collbench workers`: %r" % listed)
    check_read_token_changes_nothing(c, run_id(first))
    # A run that needs both workers waits for w2, naming the drain.
    waiting = c.call("POST", "/v1/runs", OPERATOR, json.dumps({"spec": spec(sizes=("8",))}))
    time.sleep(1)
    waiting = c.call("GET", "/v1/runs/" + run_id(waiting), READ)
    expect(waiting["state"] == "QUEUED" and "workers/w2 (draining)" in waiting["waitingReason"],
           "the run for both workers: %s (%s)" % (waiting["state"], waiting.get("waitingReason")))
    # An active run cannot be deleted; it is still there afterwards.
    expect_error(c, "DELETE", "/v1/runs/" + run_id(waiting), OPERATOR, 412,
                 "FAILED_PRECONDITION", message_part="cancel it first")
    expect(c.call("GET", "/v1/runs/" + run_id(waiting), READ)["state"] == "QUEUED",
           "a refused delete changed the queued run")
    undrained = c.call("POST", "/v1/workers/w2:undrain", OPERATOR)
    expect(undrained["draining"] is False, "undrained w2: %s" % undrained)
    done = wait_final(c, run_id(waiting))
    expect(done["state"] == "SUCCEEDED", "the run after the undrain ended %s" % done["state"])
    expect(sorted(h["worker"] for h in done["hosts"]) == ["workers/w1", "workers/w2"],
           "the run did not use w2: %s" % done["hosts"])
    # A finished run is deleted with its results.
    expect(c.call("DELETE", "/v1/runs/" + run_id(first), OPERATOR) == {},
           "DELETE of a run answers no empty object")
    expect_error(c, "GET", "/v1/runs/" + run_id(first), READ, 404, "NOT_FOUND")
    expect_error(c, "GET", "/v1/runs/%s/results" % run_id(first), READ, 404, "NOT_FOUND")
    expect_error(c, "DELETE", "/v1/runs/" + run_id(first), OPERATOR, 404, "NOT_FOUND")
    # A connected worker is refused; once stopped it is deleted.
    expect_error(c, "DELETE", "/v1/workers/w2", OPERATOR, 412, "FAILED_PRECONDITION",
                 message_part="drain it, stop it, then delete it")
    c.stop(c.workers.pop("w2"))
    wait_worker(c, "w2", "LOST", timeout=20)
    expect(c.call("DELETE", "/v1/workers/w2", OPERATOR) == {}, "DELETE of w2")
    expect_error(c, "GET", "/v1/workers/w2", READ, 404, "NOT_FOUND")
    expect(c.call("GET", "/v1/runs/" + run_id(waiting), READ)["hosts"] == done["hosts"],
           "the run that ran on the deleted worker lost its history")
    check_cli_lifecycle(c, run_id(waiting))


def check_cli_lifecycle(c, finished_id):
    """The same operations through the CLI (gRPC)."""
    op = ("--token", OPERATOR)
    out = c.cli(*op, "drain", "w1").stdout
    expect(out.strip() == "workers/w1: draining", "`collbench drain w1`: %r" % out)
    out = c.cli(*op, "undrain", "workers/w1").stdout
    expect(out.strip() == "workers/w1: ready", "`collbench undrain w1`: %r" % out)
    busy = c.call("POST", "/v1/runs", OPERATOR, json.dumps(
        {"spec": spec(ranks=1, sizes=("4194304",), iters=100000)}))
    refused = c.cli(*op, "delete", run_id(busy), finished_id, expect_code=None)
    expect(refused.returncode == 1 and "cancel it first" in refused.stderr and
           refused.stdout.strip() == "runs/%s: deleted" % finished_id,
           "`collbench delete ACTIVE FINISHED`: exit %d, %r, %r" % (
               refused.returncode, refused.stdout, refused.stderr))
    expect(c.call("GET", "/v1/runs/" + run_id(busy), READ)["state"] in ("SCHEDULED", "RUNNING"),
           "the refused delete stopped the active run")
    c.cli(*op, "cancel", run_id(busy))
    poll("the cancelled run to be deletable",
         lambda: c.cli(*op, "delete", run_id(busy), expect_code=None).returncode == 0, 30, 0.5)
    expect_error(c, "GET", "/v1/runs/" + run_id(busy), READ, 404, "NOT_FOUND")
    refused = c.cli(*op, "workers", "delete", "w1", expect_code=None)
    expect(refused.returncode == 1 and "is connected" in refused.stderr,
           "`collbench workers delete w1` (connected): %d %r" % (
               refused.returncode, refused.stderr))


def case_retention(c):
    c.start_coordinator()
    c.start_workers(2, slots=1)
    finished = []
    for _ in range(3):
        run = c.call("POST", "/v1/runs", OPERATOR, json.dumps({"spec": spec(sizes=("8",))}))
        expect(wait_final(c, run_id(run))["state"] == "SUCCEEDED", "a run failed")
        finished.append(run["name"])
    for name in ("w1", "w2"):
        c.call("POST", "/v1/workers/%s:drain" % name, OPERATOR)
    queued = c.call("POST", "/v1/runs", OPERATOR, json.dumps({"spec": spec(sizes=("8",))}))
    expect(queued["state"] == "QUEUED", "the run on drained workers is %s" % queued["state"])
    c.stop_coordinator()
    c.coordinator_args = ["--retain-runs", "1"]
    coordinator = c.start_coordinator()
    names = [r["name"] for r in c.call("GET", "/v1/runs", READ)["runs"]]
    expect(names == [queued["name"], finished[2]],
           "after --retain-runs 1: %s (finished %s)" % (names, finished))
    for name in finished[:2]:
        expect_error(c, "GET", "/v1/%s/results" % name, READ, 404, "NOT_FOUND")
    logged = c.tail(coordinator, 50)
    expect("retention (--retain-runs 1) deleted 2 finished runs: %s, %s" % (
        finished[0], finished[1]) in logged, "the coordinator's log: %s" % logged)
    # The drains outlived the coordinator's restart: the queued run waits.
    for name in ("w1", "w2"):
        poll("workers/%s back, still draining" % name,
             lambda: worker_row(c, name)["state"] == "DRAINING", 30, 0.25)
    expect(c.call("GET", "/v1/runs/" + run_id(queued), READ)["state"] == "QUEUED",
           "the queued run started on drained workers")


# ---------------------------------------------------------------------------
# Workflows: what a portal does with a coordinator, over REST only.

FINAL_WORKFLOW_STATES = ("WORKFLOW_SUCCEEDED", "WORKFLOW_FAILED", "WORKFLOW_CANCELLED")
ACTIVE_RUN_STATES = ("QUEUED", "SCHEDULED", "RUNNING")
PORTAL_SUITE = {"suite": "container-parity", "profile": "ci"}


def workflow_id(workflow):
    expect(workflow["name"].startswith("workflows/"), "not a workflow name: %s" % workflow["name"])
    return workflow["name"][len("workflows/"):]


def list_workflows(c):
    return c.call("GET", "/v1/workflows", READ).get("workflows", [])


def list_runs(c):
    return c.call("GET", "/v1/runs?page_size=1000", READ).get("runs", [])


def create_workflow(c, spec_body, **extra):
    body = dict({"spec": spec_body}, **extra)
    workflow = c.call("POST", "/v1/workflows", OPERATOR, json.dumps(body))
    log("created %s (%s, %s cells): %s" % (workflow["name"], workflow["kind"],
                                          workflow["cellsTotal"], workflow["state"]))
    return workflow


def wait_workflow_final(c, wid, timeout):
    def final():
        workflow = c.call("GET", "/v1/workflows/" + wid, READ)
        return workflow if workflow["state"] in FINAL_WORKFLOW_STATES else None
    return poll("workflows/%s to end" % wid, final, timeout, 0.25)


def workflow_failure(workflow):
    """What to say when a workflow did not succeed: its error and its cells."""
    return "%s ended %s: %s; cells: %s" % (
        workflow["name"], workflow["state"], workflow.get("error"),
        [(cell["label"], cell.get("run"), cell.get("state"), cell.get("skipped"),
          cell.get("error")) for cell in workflow.get("cells", [])])


def watch_workflow(c, wid):
    return SseReader(c, "/v1/workflows/%s:watch" % wid, READ, headers_name="sse-headers-" + wid)


def check_watched(c, reader, wid, timeout):
    """The stream of a workflow watched since its create: versions in
    increasing order, cellsDone never going back and growing, nothing final
    before the last event, the last one WORKFLOW_SUCCEEDED, then the stream
    ends. Returns the events' snapshots."""
    name = "workflows/" + wid
    reader.wait(lambda ev: any(d["snapshot"]["state"] in FINAL_WORKFLOW_STATES
                               for _, _, d in ev), "%s to end (SSE)" % name, timeout)
    code = reader.finish(15)
    expect(code == 0, "curl of %s's event stream exited %d: %s" % (
        name, code, reader.proc.stderr.read().decode(errors="replace")))
    with open(reader.headers_path) as f:
        headers = f.read().lower()
    expect("content-type: text/event-stream" in headers, "SSE headers of %s: %s" % (name, headers))
    events = reader.events
    expect([n for _, n, _ in events] == ["workflow"] * len(events),
           "%s's stream has events other than `workflow`: %s" % (name, [n for _, n, _ in events]))
    snapshots = [d["snapshot"] for _, _, d in events]
    for _, _, data in events:
        expect(data["workflow"] == name and data["snapshot"]["name"] == name and data["time"],
               "an event of %s names %s / %s (time %r)" % (
                   name, data["workflow"], data["snapshot"]["name"], data.get("time")))
    versions = [int(s["version"]) for s in snapshots]
    done = [s["cellsDone"] for s in snapshots]
    states = [s["state"] for s in snapshots]
    log("%s: %d events, versions %s, cellsDone %s" % (name, len(events), versions, done))
    expect(all(a < b for a, b in zip(versions, versions[1:])),
           "%s's versions did not arrive in increasing order: %s" % (name, versions))
    expect(all(a <= b for a, b in zip(done, done[1:])),
           "%s's cellsDone went back: %s" % (name, done))
    expect(len(events) >= 2 and done[0] < done[-1],
           "%s's stream did not show its cells being done (cellsDone %s): opened too late or "
           "replayed at the end" % (name, done))
    expect(all(s not in FINAL_WORKFLOW_STATES for s in states[:-1]),
           "%s's stream went on after a final state: %s" % (name, states))
    expect(states[-1] == "WORKFLOW_SUCCEEDED", workflow_failure(snapshots[-1]))
    expect(done[-1] == snapshots[-1]["cellsTotal"],
           "%s succeeded with %s of %s cells done" % (name, done[-1], snapshots[-1]["cellsTotal"]))
    return snapshots


def expect_tuning_xor_refusal(workflow):
    output = workflow["output"]
    files = output.get("tuningFiles", [])
    refusal = output.get("tuningRefusal", "")
    expect(bool(files) != bool(refusal),
           "%s: expected tuning files or a refusal, exactly one: files %s, refusal %r" % (
               workflow["name"], [f["name"] for f in files], refusal))
    for f in files:
        expect(f["name"] and f["content"].strip(), "%s: an empty tuning file %s" % (
            workflow["name"], f))
    log("%s: %s" % (workflow["name"], "tuning files %s" % [f["name"] for f in files] if files
                    else "no tuning file: %s" % refusal))


def check_report_page(c, wid, must_contain):
    report = c.call("GET", "/v1/workflows/%s/report" % wid, READ)
    expect(set(report) >= {"title", "html"} and report["title"],
           "the report of workflows/%s: %s" % (wid, list(report)))
    html = report["html"]
    expect(html.startswith("<!DOCTYPE html>"),
           "the report of workflows/%s does not start with <!DOCTYPE html>: %r" % (wid, html[:80]))
    for text in must_contain:
        expect(text in html, "the report of workflows/%s (%s) does not name %s" % (
            wid, report["title"], text))
    log("report of workflows/%s: %r, %d bytes" % (wid, report["title"], len(html)))
    return report


def check_workflow_refusals(c):
    """Refusals that store and queue nothing (with no workflow yet)."""
    # A typo in a matrix's operations: 400 naming the field and the value.
    matrix = {"matrix": {"base": spec(), "operations": ["allreduce", "allredcue"],
                         "placements": ["spread"], "transports": ["tcp"]}}
    expect_error(c, "POST", "/v1/workflows", OPERATOR, 400, "INVALID_ARGUMENT",
                 "spec.matrix.operations", json.dumps({"spec": matrix}),
                 message_part="'allredcue'")
    # A read token creates nothing.
    expect_error(c, "POST", "/v1/workflows", READ, 403, "PERMISSION_DENIED",
                 body=json.dumps({"spec": {"suite": PORTAL_SUITE}}))
    expect_error(c, "POST", "/v1/workflows", None, 401, "UNAUTHENTICATED",
                 body=json.dumps({"spec": {"suite": PORTAL_SUITE}}))
    # Other specs the plan refuses, naming the field.
    for field, refused in (
            ("spec.sweep.algorithms", {"sweep": {"base": spec(), "algorithms": ["rign"]}}),
            ("spec.suite.suite", {"suite": {"suite": "no-such-suite"}}),
            ("spec.advice.workflow", {"advice": {"workflow": "workflows/nope"}}),
            ("spec", {})):
        expect_error(c, "POST", "/v1/workflows", OPERATOR, 400, "INVALID_ARGUMENT", field,
                     json.dumps({"spec": refused}))
    # validateOnly: the plan (with the cells a portal shows before it
    # commits), stored nowhere.
    dry = c.call("POST", "/v1/workflows", OPERATOR,
                 json.dumps({"spec": {"suite": PORTAL_SUITE}, "validateOnly": True}))
    cells = dry.get("cells", [])
    runnable = [cell["label"] for cell in cells if not cell.get("skipped")]
    skipped = [(cell["label"], cell["skipped"]) for cell in cells if cell.get("skipped")]
    log("validateOnly %s: %d cells, runnable %s, skipped %s" % (
        dry["name"], len(cells), runnable, skipped))
    expect(dry["kind"] == "suite" and cells and dry["cellsTotal"] == len(cells),
           "validateOnly of the suite: %s" % {k: dry.get(k) for k in ("kind", "cellsTotal")})
    expect(runnable, "validateOnly: no cell of %s runs on these workers: %s" % (
        PORTAL_SUITE["suite"], skipped))
    expect(dry["cellsDone"] == len(skipped),
           "validateOnly: cellsDone %s, %d cells skipped" % (dry["cellsDone"], len(skipped)))
    expect_error(c, "GET", "/v1/workflows/" + workflow_id(dry), READ, 404, "NOT_FOUND")
    # Unknown workflows.
    for method, path, token in (("GET", "/v1/workflows/nope", READ),
                                ("GET", "/v1/workflows/nope:watch", READ),
                                ("GET", "/v1/workflows/nope/report", READ),
                                ("POST", "/v1/workflows/nope:cancel", OPERATOR),
                                ("DELETE", "/v1/workflows/nope", OPERATOR)):
        expect_error(c, method, path, token, 404, "NOT_FOUND")
    expect(list_workflows(c) == [], "a refused or validate-only create stored a workflow: %s" % [
        w["name"] for w in list_workflows(c)])
    expect(list_runs(c) == [], "a refused or validate-only create queued a run: %s" % [
        r["name"] for r in list_runs(c)])
    return len(runnable)


def check_suite_workflow(c, suite):
    wid = workflow_id(suite)
    cells = suite["cells"]
    expect(suite["kind"] == "suite" and suite["state"] == "WORKFLOW_SUCCEEDED",
           workflow_failure(suite))
    ran = 0
    for cell in cells:
        if cell.get("skipped"):
            expect(not cell.get("run"), "skipped cell %s has a run %s" % (cell["label"], cell["run"]))
            continue
        expect(cell.get("run", "").startswith("runs/") and cell["state"] == "SUCCEEDED",
               "suite cell %s: neither a succeeded run nor a reason to skip it: %s" % (
                   cell["label"], cell))
        run = c.call("GET", "/v1/" + cell["run"], READ)
        expect(run["state"] == "SUCCEEDED" and run["spec"]["labels"].get("suite-run") == wid,
               "%s of suite cell %s: %s, labels %s" % (cell["run"], cell["label"], run["state"],
                                                     run["spec"].get("labels")))
        ran += 1
    expect(ran > 0, "no cell of the suite ran")
    output = suite["output"]
    expect(output.get("tables"), "the suite workflow has no output tables")
    expect(any(wid in line for line in output.get("header", [])),
           "the suite's header does not name its run: %s" % output.get("header"))
    log("suite %s: %d cells, %d ran, tables %s" % (
        suite["name"], len(cells), ran, [t["id"] for t in output["tables"]]))
    return [cell["run"] for cell in cells if cell.get("run")]


def check_sweep_workflow(sweep, algorithms):
    expect(sweep["kind"] == "sweep" and sweep["state"] == "WORKFLOW_SUCCEEDED",
           workflow_failure(sweep))
    labels = [cell["label"] for cell in sweep["cells"]]
    expect([label.split(" ")[-1] for label in labels] == ["default"] + algorithms,
           "the sweep's cells: %s" % labels)
    for cell in sweep["cells"]:
        expect(cell.get("run") and cell["state"] == "SUCCEEDED", "sweep cell %s" % cell)
    tables = [t["id"] for t in sweep["output"].get("tables", [])]
    expect("advice-allreduce-2" in tables, "the sweep's output has no advice table: %s" % tables)
    expect_tuning_xor_refusal(sweep)
    return [cell["run"] for cell in sweep["cells"]]


def check_cancel_workflow(c):
    """A matrix of long runs, cancelled while its first run runs."""
    long_base = spec(sizes=("1048576",), iters=100000)
    matrix = c.call("POST", "/v1/workflows", OPERATOR, json.dumps({"spec": {"matrix": {
        "base": long_base, "operations": ["allreduce", "bcast", "gather"],
        "placements": ["spread"], "transports": ["tcp"]}}}))
    wid = workflow_id(matrix)
    expect(matrix["cellsTotal"] == 3 and not any(cell.get("skipped") for cell in matrix["cells"]),
           "the matrix to cancel: %s" % workflow_failure(matrix))

    def first_run_running():
        now = c.call("GET", "/v1/workflows/" + wid, READ)
        expect(now["state"] not in FINAL_WORKFLOW_STATES, workflow_failure(now))
        return now if now["state"] == "WORKFLOW_RUNNING" and now["cells"][0].get(
            "state") == "RUNNING" else None
    running = poll("workflows/%s's first run to run" % wid, first_run_running, 60, 0.25)
    expect_error(c, "DELETE", "/v1/workflows/" + wid, OPERATOR, 412, "FAILED_PRECONDITION",
                 message_part="cancel it first")
    expect(c.call("GET", "/v1/workflows/" + wid, READ)["state"] == "WORKFLOW_RUNNING",
           "the refused delete changed the running workflow")
    cancelled = c.call("POST", "/v1/workflows/%s:cancel" % wid, OPERATOR)
    expect(cancelled["name"] == running["name"], "cancel answered %s" % cancelled["name"])
    final = wait_workflow_final(c, wid, 30)
    expect(final["state"] == "WORKFLOW_CANCELLED", workflow_failure(final))
    # The moment it reads CANCELLED, none of its runs is left to run.
    runs = list_runs(c)
    active = [(r["name"], r["state"]) for r in runs if r["state"] in ACTIVE_RUN_STATES]
    expect(not active, "runs still active after workflows/%s was cancelled: %s" % (wid, active))
    mine = [r for r in runs if r["spec"].get("labels", {}).get("workflow") == wid]
    expect(len(mine) >= 1 and any(r["state"] == "CANCELLED" for r in mine),
           "workflows/%s's runs: %s" % (wid, [(r["name"], r["state"]) for r in mine]))
    for cell in final["cells"]:
        expect(cell.get("state", "RUN_STATE_UNSPECIFIED") not in ACTIVE_RUN_STATES,
               "cell %s of the cancelled workflow is %s" % (cell["label"], cell["state"]))
    log("workflows/%s cancelled: runs %s" % (wid, [(r["name"], r["state"]) for r in mine]))
    expect_error(c, "POST", "/v1/workflows/%s:cancel" % wid, OPERATOR, 412, "FAILED_PRECONDITION")
    # Ended: deleted (its runs stay), then gone.
    expect(c.call("DELETE", "/v1/workflows/" + wid, OPERATOR) == {},
           "DELETE of a finished workflow answers no empty object")
    expect_error(c, "GET", "/v1/workflows/" + wid, READ, 404, "NOT_FOUND")
    expect_error(c, "DELETE", "/v1/workflows/" + wid, OPERATOR, 404, "NOT_FOUND")
    for r in mine:
        expect(c.call("GET", "/v1/" + r["name"], READ)["name"] == r["name"],
               "deleting the workflow deleted its run %s" % r["name"])


def case_workflows(c):
    c.start_coordinator()
    c.start_workers(2, slots=1)
    started = time.monotonic()
    runnable = check_workflow_refusals(c)
    # A suite and a sweep, as a portal starts them: create, then watch at once.
    suite = create_workflow(c, {"suite": PORTAL_SUITE}, requestId="portal-suite")
    suite_id = workflow_id(suite)
    suite_watch = watch_workflow(c, suite_id)
    algorithms = ["ring", "recursive_doubling"]
    sweep_spec = {"sweep": {"base": spec(iters=200), "algorithms": algorithms}}
    sweep = create_workflow(c, sweep_spec, requestId="portal-sweep")
    sweep_id = workflow_id(sweep)
    sweep_watch = watch_workflow(c, sweep_id)
    expect(suite["kind"] == "suite" and sweep["kind"] == "sweep" and
           suite["state"] in ("WORKFLOW_QUEUED", "WORKFLOW_RUNNING"),
           "created: %s %s, %s %s" % (suite["kind"], suite["state"], sweep["kind"], sweep["state"]))
    expect(len([cell for cell in suite["cells"] if not cell.get("skipped")]) == runnable,
           "the suite's create planned other cells than its validateOnly")
    # Retries: the same requestId and spec is the same workflow; another
    # spec under it is refused and stores nothing.
    again = c.call("POST", "/v1/workflows", OPERATOR,
                   json.dumps({"spec": sweep_spec, "requestId": "portal-sweep"}))
    expect(again["name"] == sweep["name"], "the retry made %s, not %s" % (
        again["name"], sweep["name"]))
    other = {"sweep": {"base": spec(iters=200), "algorithms": ["ring"]}}
    expect_error(c, "POST", "/v1/workflows", OPERATOR, 409, "ALREADY_EXISTS",
                 body=json.dumps({"spec": other, "requestId": "portal-sweep"}),
                 message_part="portal-sweep")
    names = sorted(w["name"] for w in list_workflows(c))
    expect(names == sorted([suite["name"], sweep["name"]]), "workflows after the retries: %s" % names)
    # Both run to the end, streamed as they go.
    check_watched(c, suite_watch, suite_id, 150)
    check_watched(c, sweep_watch, sweep_id, 90)
    log("suite and sweep done after %.1f s" % (time.monotonic() - started))
    suite = c.call("GET", "/v1/workflows/" + suite_id, READ)
    suite_runs = check_suite_workflow(c, suite)
    sweep = c.call("GET", "/v1/workflows/" + sweep_id, READ)
    sweep_runs = check_sweep_workflow(sweep, algorithms)
    # A watch of a finished workflow: its last version, then the end.
    late = watch_workflow(c, sweep_id)
    expect(late.finish(15) == 0 and [int(d["snapshot"]["version"]) for _, _, d in late.events] ==
           [int(sweep["version"])], "a watch of the finished sweep: %s" % [
               (n, d["snapshot"]["version"]) for _, n, d in late.events])
    # Advice over the sweep, a report over the suite.
    advice = create_workflow(c, {"advice": {"workflow": sweep["name"]}})
    report = create_workflow(c, {"report": {"workflow": suite["name"]}})
    advice = wait_workflow_final(c, workflow_id(advice), 60)
    expect(advice["kind"] == "advice" and advice["state"] == "WORKFLOW_SUCCEEDED",
           workflow_failure(advice))
    expect(any(t["id"] == "advice-allreduce-2" for t in advice["output"].get("tables", [])),
           "the advice has no advice table: %s" % [t["id"] for t in advice["output"]["tables"]])
    expect_tuning_xor_refusal(advice)
    report = wait_workflow_final(c, workflow_id(report), 60)
    expect(report["kind"] == "report" and report["state"] == "WORKFLOW_SUCCEEDED" and
           report["output"].get("hasReport") is True, workflow_failure(report))
    check_report_page(c, workflow_id(report), [PORTAL_SUITE["suite"], suite_id])
    check_report_page(c, sweep_id, sweep_runs)
    log("the suite's runs: %s" % suite_runs)
    listed = c.call("GET", "/v1/workflows?filter=kind=sweep", READ)["workflows"]
    expect([w["name"] for w in listed] == [sweep["name"]], "kind=sweep lists %s" % [
        w["name"] for w in listed])
    # Nothing left active, then a workflow cancelled while it runs.
    expect(not [r["name"] for r in list_runs(c) if r["state"] in ACTIVE_RUN_STATES],
           "runs still active after every workflow ended")
    check_cancel_workflow(c)
    log("case done after %.1f s" % (time.monotonic() - started))


CASES = {
    "routes": case_routes,
    "watch": case_watch,
    "grpc_auth": case_grpc_auth,
    "admission": case_admission,
    "watchers": case_watchers,
    "lifecycle": case_lifecycle,
    "retention": case_retention,
    "workflows": case_workflows,
}


def main():
    return svc.case_main(
        __doc__, CASES, RestCluster, "rest_test",
        binaries=("collbench", "collbench-coordinator", "collbench-worker", "collbench-rank",
                  "watch_swarm"),
        skip=lambda: None if shutil.which("curl") else "no curl")


if __name__ == "__main__":
    sys.exit(main())
