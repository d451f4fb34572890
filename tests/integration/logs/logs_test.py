#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The coordinator's logs (docs/design/observability.md#logs,
docs/operations/logs.md): a real collbench-coordinator with --tokens and
--http-listen, its stderr not a terminal, so JSON lines by default, as
`kubectl logs` shows them.

    logs_test.py --bin-dir build/bin [--case refusals ...]
    logs_test.py --list

Cases:
  refusals  start-up lines (listen addresses, TLS off, tokens on); a REST
            request with a wrong token gets a 401 line naming the peer, a
            read token on POST /v1/runs a 403 line naming the caller
            ("token N"), a bad spec a 400 line with the field and the
            client's X-Request-Id (echoed back); a gRPC call with a wrong
            token an UNAUTHENTICATED line; no token of any role, right or
            wrong, appears anywhere in the log; SIGTERM gives the signal,
            draining and stopped lines and exit 0.
  run_failure  a worker registers (a line with its name and peer); a run
            created over REST with a 2 s timeout gets state lines QUEUED
            (with the caller and the request id), SCHEDULED, RUNNING and
            FAILED with its reason ("timed out"); the worker's own log is
            JSON lines too (serving, registered, the run started and
            cancelled); the worker killed gives a worker.lost line.

In both, every line the coordinator wrote is one JSON object with an RFC
3339 UTC time, a level and an event. Reuses rest_test.py's cluster.
Exit code: 0 when every case passed, 1 otherwise, 2 on bad usage, 77 when
curl is missing (ctest reports it as skipped).
"""

import json
import os
import re
import shutil
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.join(HERE, "..", "rest"))
sys.path.insert(0, os.path.join(HERE, "..", "service"))
import rest_test as rest  # noqa: E402  (the REST cluster: tokens, curl)
import service_test as svc  # noqa: E402
from service_test import Failure, expect, poll  # noqa: E402

TOKENS = rest.TOKENS
READ, OPERATOR = rest.READ, rest.OPERATOR
WRONG_TOKEN = "wrong-7f3a91c2e5d8"  # looks like a token, is none
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
LEVELS = ("debug", "info", "warn", "error")


class BadLine(Failure):
    """A coordinator log line that is not what every line must be."""


def read_log(c, path=None):
    with open(path or c.coordinator_log, errors="replace") as f:
        return f.read()


def parse_log(c, path=None):
    """Every line of the coordinator's log (or the one at `path`) as a
    dict; fails on any line that is not a JSON object with time, level and
    event."""
    lines = []
    for number, text in enumerate(read_log(c, path).splitlines(), 1):
        try:
            line = json.loads(text)
        except ValueError:
            raise BadLine("coordinator log line %d is not JSON: %r" % (number, text))
        if not isinstance(line, dict):
            raise BadLine("line %d is not an object: %r" % (number, text))
        if not TIME.match(str(line.get("time", ""))):
            raise BadLine("line %d has no RFC 3339 UTC time: %r" % (number, text))
        if line.get("level") not in LEVELS:
            raise BadLine("line %d has no level: %r" % (number, text))
        if not line.get("event"):
            raise BadLine("line %d has no event: %r" % (number, text))
        lines.append(line)
    return lines


def find(c, what, timeout=10, **fields):
    """The first log line whose fields equal `fields` (a callable value is
    a predicate), waiting up to `timeout` s for it."""
    def match(line):
        for key, want in fields.items():
            got = line.get(key)
            if not (want(got) if callable(want) else got == want):
                return False
        return True

    def look():
        return next((line for line in parse_log(c) if match(line)), None)
    try:
        return poll(what, look, timeout, 0.1)
    except BadLine:
        raise
    except Failure:
        raise Failure("no log line for %s (%s) in:\n%s" % (what, fields, read_log(c)[-4000:]))


def expect_no_secret(c):
    text = read_log(c)
    for secret in [WRONG_TOKEN] + list(TOKENS.values()):
        expect(secret not in text, "the log holds the token %r:\n%s" % (secret, text[-3000:]))


def start(c):
    proc = c.start_coordinator()
    c.coordinator_log = proc.log_path
    return proc


def stop_and_check_shutdown(c):
    proc = c.coordinator
    c.stop_coordinator()  # SIGTERM; exit 0 checked there
    signalled = find(c, "the signal", event="coordinator.signal")
    expect(signalled["signal"] == "SIGTERM", "signal line: %s" % signalled)
    find(c, "the drain", event="coordinator.draining")
    find(c, "every connection closed", event="coordinator.drained")
    last = parse_log(c)[-1]
    expect(last["event"] == "coordinator.stopped", "the last line is not 'stopped': %s" % last)
    expect(proc.returncode == 0, "exit %s" % proc.returncode)


def case_refusals(c):
    start(c)
    serving = find(c, "the gRPC listener", event="coordinator.serving")
    expect(serving["port"] == c.port and serving["tls"] is False and serving["tokens"] is True,
           "start-up line: %s" % serving)
    http = find(c, "the HTTP listener", event="coordinator.serving_http")
    expect(http["port"] == c.http_port, "HTTP start-up line: %s" % http)

    status, _, _ = c.curl("GET", "/v1/runs", WRONG_TOKEN)
    expect(status == 401, "a wrong token answered %d" % status)
    line = find(c, "the 401", event="http.refused", status=401)
    expect(line["level"] == "warn" and line["method"] == "GET" and line["path"] == "/v1/runs",
           "401 line: %s" % line)
    expect(line["peer"] == "127.0.0.1" and line["caller"] == "peer 127.0.0.1",
           "the 401 line does not name the peer: %s" % line)
    expect(line.get("request_id"), "the 401 line has no request id: %s" % line)

    status, _, _ = c.curl("POST", "/v1/runs", READ, json.dumps({"spec": rest.spec()}))
    expect(status == 403, "a read token on POST answered %d" % status)
    line = find(c, "the 403", event="http.refused", status=403)
    expect(re.match(r"^token \d+$", line["caller"]), "the 403 caller: %s" % line)
    expect("operator" in line["error"], "the 403 line has no reason: %s" % line)

    status, _, got = c.curl("POST", "/v1/runs", OPERATOR, json.dumps({"spec": rest.spec(ranks=0)}),
                            headers=["X-Request-Id: req-bad-spec-1"])
    expect(status == 400, "a bad spec answered %d" % status)
    expect(got.get("x-request-id") == "req-bad-spec-1", "X-Request-Id not echoed: %s" % got)
    line = find(c, "the 400", event="http.refused", status=400)
    expect(line["request_id"] == "req-bad-spec-1" and line["error"].startswith("spec.ranks"),
           "the 400 line: %s" % line)

    denied = c.cli("--token", WRONG_TOKEN, "runs", expect_code=None)
    expect(denied.returncode != 0, "gRPC with a wrong token succeeded: %s" % denied.stdout)
    line = find(c, "the gRPC refusal", event="grpc.refused", code="UNAUTHENTICATED")
    expect(line["method"] == "/collbench.v1.Coordinator/ListRuns" and
           line["caller"] == "peer 127.0.0.1" and line["peer"].startswith("ipv4:127.0.0.1:"),
           "the gRPC refusal line: %s" % line)
    stop_and_check_shutdown(c)
    expect_no_secret(c)


def case_run_failure(c):
    start(c)
    c.start_workers(1, slots=2)
    registered = find(c, "w1's registration", event="worker.registered", worker="workers/w1")
    expect(registered["peer"].startswith("ipv4:127.0.0.1:"), "registration: %s" % registered)
    spec = rest.spec(ranks=2, sizes=("1048576",), iters=1000000, check=False,
                     placement={"policy": "PACK"}, timeout="2s")
    status, body, _ = c.curl("POST", "/v1/runs", OPERATOR, json.dumps({"spec": spec}),
                             headers=["X-Request-Id: req-run-1"])
    expect(status == 200, "POST /v1/runs answered %d: %s" % (status, body))
    run = json.loads(body)["name"]
    queued = find(c, "QUEUED", event="run.state", run=run, state="QUEUED")
    expect(queued["request_id"] == "req-run-1" and re.match(r"^token \d+$", queued["caller"]),
           "the QUEUED line: %s" % queued)
    find(c, "SCHEDULED", event="run.state", run=run, state="SCHEDULED")
    find(c, "RUNNING", event="run.state", run=run, state="RUNNING", timeout=30)
    failed = find(c, "FAILED", event="run.state", run=run, state="FAILED", timeout=30)
    expect(failed["level"] == "warn" and failed["error"] == "timed out",
           "the FAILED line: %s" % failed)
    expect(failed["msg"] == "%s FAILED: timed out" % run, "the FAILED message: %s" % failed)
    created = find(c, "the create request", event="http.request", method="POST", status=200)
    expect(created["request_id"] == "req-run-1" and created["level"] == "info",
           "the create line: %s" % created)
    worker_log = c.workers["w1"].log_path
    wanted = {"worker.serving", "worker.registered", "worker.run_started", "worker.run_cancelled"}
    try:
        poll("the worker's lines", lambda: wanted <= {line["event"] for line in
                                                      parse_log(c, worker_log)}, 10, 0.1)
    except BadLine:
        raise
    except Failure:
        raise Failure("the worker's log lacks some of %s:\n%s" % (
            sorted(wanted), read_log(c, worker_log)[-3000:]))
    os.kill(c.workers["w1"].pid, signal.SIGKILL)
    c.workers["w1"].wait(timeout=10)
    del c.workers["w1"]
    lost = find(c, "w1 lost", event="worker.lost", worker="workers/w1", timeout=20)
    expect(lost["level"] == "warn" and "w1" in lost.get("reason", ""), "lost: %s" % lost)
    stop_and_check_shutdown(c)
    expect_no_secret(c)


CASES = {
    "refusals": case_refusals,
    "run_failure": case_run_failure,
}


def main():
    return svc.case_main(
        __doc__, CASES, rest.RestCluster, "logs_test",
        binaries=("collbench", "collbench-coordinator", "collbench-worker", "collbench-rank"),
        skip=lambda: None if shutil.which("curl") else "no curl")


if __name__ == "__main__":
    sys.exit(main())
