#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Attacks on the coordinator's web surface and on `collbench local` (issue
19, "fail closed", "tokens and sessions"). Each case asserts that the
attack's effect did not happen (no run exists, no proof file was written,
the coordinator did not serve), not merely that an error came back. All
traffic goes to 127.0.0.1.

    web_test.py --bin-dir build/bin --case NAME

Cases:
  cross_origin  a coordinator on 127.0.0.1 without tokens (the open case a
                web page aims at): the "simple" cross-origin POST another
                site's page can send (Content-Type: text/plain, a valid
                CreateRun body, Origin of that site) is refused, as are the
                same body as text/plain without Origin, with no type, and
                `Origin: null`; afterwards no run exists. The same create as
                JSON from the server's own Origin works (the check is real).
  foreign_host  the same coordinator: a DNS-rebinding page's requests (Host:
                its own name, Origin: the same name, so "same origin" to the
                browser) are refused with 421 for reads and creates; no run
                exists.
  fail_closed   --grpc-listen or --http-listen on 0.0.0.0 without tokens:
                the coordinator exits 2 naming the flag and the ways out, and
                serves nothing; API tokens without a worker token: exits 2
                saying how to add one; --join-token VALUE: exits 2 naming
                --join-token-file; with --insecure-no-auth it starts, prints
                a WARNING and /metrics says collbench_insecure_no_auth 1.
                COLLBENCH_JOIN_TOKEN is gone from the coordinator's
                environment (/proc/PID/environ).
  ui_session    with tokens: the /ui/login cookie holds a random session id,
                never the token; it opens /ui/ until POST /ui/logout, after
                which the same cookie opens nothing; a cross-origin logout is
                refused; logins beyond the throttle get 429 with Retry-After.
  cli_token     the CLI takes its token from --token-file or COLLBENCH_TOKEN
                (and still --token); a token file every user may read is
                warned about; without a token it is refused.
  http_flood    with tokens, what one unauthenticated client can make the
                REST listener hold: 24 requests announcing 16 MiB bodies
                are refused 413 before any body byte is sent; 24 bodies of
                just under --max-body-bytes left unfinished, then 2,000
                connections sending a header byte at a time: the
                coordinator never holds more than
                --max-unauthenticated-connections of them, closes the rest
                at the deadline, its peak resident memory grows by less
                than the stated bound (--max-unauthenticated-bytes, 16 KiB
                a connection and 16 MiB), and an operator's request on a
                new connection is answered during the flood; every refusal
                is counted.
  local_user    (root only: a second local user, uid 65534, via setpriv) a
                root-owned `collbench local` running a long run: the other
                user cannot list, create (a run whose Open MPI fork agent
                would write a proof file), or join a worker, nor read the
                session's token files; no proof file exists and the store
                holds only the owner's run. The workers' command lines carry
                no token.

Exit code 0 when the case passed, 1 when it failed, 77 when it cannot run
here (ctest reports a skip).
"""

import argparse
import glob
import http.client
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

SKIP = 77
TOKENS = {"read": "r-web-7c1f", "operator": "o-web-90ad", "worker": "w-web-44e2"}
CREATE_BODY = json.dumps({"spec": {"operation": "allreduce", "ranks": 1,
                                   "sizesBytes": ["8", "1024"]}})


class Failure(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failure(message)


def log(message):
    sys.stderr.write("  [%s] %s\n" % (time.strftime("%H:%M:%S"), message))
    sys.stderr.flush()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def private_file(path, text):
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(text)
    return path


def request(port, method, path, body=None, headers=None):
    """(status, body text, headers) of one request to 127.0.0.1:port; the
    headers given replace the defaults (Host included)."""
    headers = dict(headers or {})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.putrequest(method, path, skip_host="Host" in headers,
                        skip_accept_encoding=True)
        data = body.encode() if isinstance(body, str) else body
        if data is not None:
            headers.setdefault("Content-Length", str(len(data)))
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders(data)
        response = conn.getresponse()
        text = response.read().decode(errors="replace")
        return response.status, text, {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


class Coordinator:
    """collbench-coordinator on 127.0.0.1 (gRPC port 0, HTTP on a free port)
    with an in-memory store."""

    def __init__(self, bin_dir, workdir, *extra, env=None, http_host="127.0.0.1",
                 grpc_listen="127.0.0.1:0"):
        self.http_port = free_port()
        self.log_path = os.path.join(workdir, "coordinator-%d.log" % self.http_port)
        argv = [os.path.join(bin_dir, "collbench-coordinator"), "--grpc-listen", grpc_listen,
                "--http-listen", "%s:%d" % (http_host, self.http_port), "--store", ":memory:",
                *extra]
        log("start: " + " ".join(argv))
        with open(self.log_path, "w") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)

    def wait_serving(self, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            expect(self.proc.poll() is None,
                   "the coordinator exited (%s): %s" % (self.proc.returncode, self.output()))
            try:
                if request(self.http_port, "GET", "/healthz")[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise Failure("the coordinator did not serve within %ds: %s" % (timeout, self.output()))

    def wait_exit(self, timeout=20):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise Failure("the coordinator is still running, expected it to refuse to start: %s"
                          % self.output())

    def output(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()[-3000:]

    def run_count(self, token=None):
        headers = {"Authorization": "Bearer " + token} if token else {}
        status, body, _ = request(self.http_port, "GET", "/v1/runs", headers=headers)
        expect(status == 200, "GET /v1/runs answered %d: %s" % (status, body))
        return len(json.loads(body).get("runs", []))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def case_cross_origin(bin_dir, workdir):
    c = Coordinator(bin_dir, workdir).wait_serving()
    try:
        port = c.http_port
        attacks = [
            ("a cross-origin text/plain POST", {"Content-Type": "text/plain",
                                                "Origin": "http://evil.example"}, 403),
            ("a cross-origin form POST", {"Content-Type": "application/x-www-form-urlencoded",
                                          "Origin": "https://evil.example"}, 403),
            ("a text/plain POST without Origin", {"Content-Type": "text/plain"}, 415),
            ("a POST body without a type", {}, 415),
            ("Origin: null with JSON", {"Content-Type": "application/json", "Origin": "null"},
             403),
            ("another port's page with JSON", {"Content-Type": "application/json",
                                               "Origin": "http://127.0.0.1:%d" % (port + 1)},
             403),
        ]
        for what, headers, want in attacks:
            status, body, _ = request(port, "POST", "/v1/runs", CREATE_BODY, headers)
            log("%s -> %d %s" % (what, status, body[:160]))
            expect(status == want, "%s answered %d, expected %d: %s" % (what, status, want, body))
        expect(c.run_count() == 0, "a refused request created a run")
        # The server's own page and non-browser clients still create runs.
        status, body, _ = request(port, "POST", "/v1/runs", CREATE_BODY, {
            "Content-Type": "application/json", "Origin": "http://127.0.0.1:%d" % port})
        expect(status == 200, "a same-origin JSON create answered %d: %s" % (status, body))
        expect(c.run_count() == 1, "the same-origin create did not queue its run")
    finally:
        c.stop()


def case_foreign_host(bin_dir, workdir):
    c = Coordinator(bin_dir, workdir).wait_serving()
    try:
        port = c.http_port
        name = "rebound.evil.example:%d" % port
        status, body, _ = request(port, "POST", "/v1/runs", CREATE_BODY, {
            "Host": name, "Origin": "http://" + name, "Content-Type": "application/json"})
        log("rebound create -> %d %s" % (status, body[:160]))
        expect(status == 421 and name in body,
               "a create with Host %s answered %d: %s" % (name, status, body))
        for path in ("/v1/runs", "/v1/workers", "/metrics", "/ui/"):
            status, body, _ = request(port, "GET", path, headers={"Host": name})
            expect(status == 421, "GET %s with Host %s answered %d" % (path, name, status))
        expect(c.run_count() == 0, "a request with a foreign Host created a run")
        for host in ("localhost:%d" % port, "127.0.0.1:%d" % port, "[::1]:%d" % port):
            status, _, _ = request(port, "GET", "/healthz", headers={"Host": host})
            expect(status == 200, "GET /healthz with Host %s answered %d" % (host, status))
    finally:
        c.stop()


def case_fail_closed(bin_dir, workdir):
    # Beyond loopback without tokens: refused, nothing served.
    for what, kwargs in (("--grpc-listen 0.0.0.0", {"grpc_listen": "0.0.0.0:0"}),
                         ("--http-listen 0.0.0.0", {"http_host": "0.0.0.0"})):
        c = Coordinator(bin_dir, workdir, **kwargs)
        code = c.wait_exit()
        out = c.output()
        log("%s without tokens -> exit %d: %s" % (what, code, out.strip()[-300:]))
        expect(code == 2, "%s without tokens exited %d: %s" % (what, code, out))
        expect(what.split()[0] in out and "--insecure-no-auth" in out and "--tokens" in out,
               "the refusal does not name the flag and the ways out: %s" % out)
        try:
            request(c.http_port, "GET", "/healthz")
            raise Failure("%s: something still answers on port %d" % (what, c.http_port))
        except OSError:
            pass
    # API tokens without a worker credential.
    api_only = private_file(os.path.join(workdir, "api-tokens"), "read r-1\noperator o-1\n")
    c = Coordinator(bin_dir, workdir, "--tokens", api_only)
    code = c.wait_exit()
    expect(code == 2 and "worker TOKEN" in c.output() and "--join-token-file" in c.output(),
           "API tokens without a worker token: exit %d: %s" % (code, c.output()))
    # The token value on the command line is refused.
    c = Coordinator(bin_dir, workdir, "--join-token", "w-in-argv")
    code = c.wait_exit()
    expect(code == 2 and "--join-token-file" in c.output(),
           "--join-token VALUE: exit %d: %s" % (code, c.output()))
    # On purpose: it starts, says so, and /metrics says so.
    env = dict(os.environ, COLLBENCH_JOIN_TOKEN="w-from-env-5e1")
    c = Coordinator(bin_dir, workdir, "--insecure-no-auth", env=env, http_host="0.0.0.0")
    try:
        c.wait_serving()
        out = c.output()
        expect("WARNING" in out and "--insecure-no-auth" in out,
               "--insecure-no-auth started without a warning: %s" % out)
        status, metrics, _ = request(c.http_port, "GET", "/metrics")
        expect(status == 200 and re.search(r"^collbench_insecure_no_auth 1$", metrics, re.M),
               "/metrics lacks collbench_insecure_no_auth 1")
        with open("/proc/%d/environ" % c.proc.pid, "rb") as f:
            environ = f.read()
        expect(b"COLLBENCH_JOIN_TOKEN" not in environ and b"w-from-env-5e1" not in environ,
               "COLLBENCH_JOIN_TOKEN is still in the coordinator's environment")
    finally:
        c.stop()
    # With tokens the gauge is 0.
    tokens = private_file(os.path.join(workdir, "tokens"),
                          "".join("%s %s\n" % kv for kv in TOKENS.items()))
    c = Coordinator(bin_dir, workdir, "--tokens", tokens, http_host="0.0.0.0")
    try:
        c.wait_serving()
        status, metrics, _ = request(c.http_port, "GET", "/metrics")
        expect(re.search(r"^collbench_insecure_no_auth 0$", metrics, re.M),
               "/metrics lacks collbench_insecure_no_auth 0 with tokens")
        expect("WARNING" not in c.output(), "a warning with a private token file: %s"
               % c.output())
    finally:
        c.stop()


def session_of(headers):
    match = re.match(r"collbench_session=([^;]*);", headers.get("set-cookie", ""))
    return match.group(1) if match else None


def case_ui_session(bin_dir, workdir):
    tokens = private_file(os.path.join(workdir, "tokens"),
                          "".join("%s %s\n" % kv for kv in TOKENS.items()))
    c = Coordinator(bin_dir, workdir, "--tokens", tokens).wait_serving()
    try:
        port = c.http_port
        own = "http://127.0.0.1:%d" % port
        form = {"Content-Type": "application/x-www-form-urlencoded", "Origin": own}
        status, body, headers = request(port, "POST", "/ui/login",
                                        "token=%s&next=/ui/" % TOKENS["read"], form)
        expect(status == 303, "signing in answered %d: %s" % (status, body))
        cookie = headers.get("set-cookie", "")
        session = session_of(headers)
        log("Set-Cookie: " + cookie)
        expect(session and re.fullmatch(r"[0-9a-f]{64}", session),
               "the cookie holds no random session id: %s" % cookie)
        for token in TOKENS.values():
            expect(token not in cookie, "the cookie carries a token: %s" % cookie)
        expect("HttpOnly" in cookie and "SameSite=Strict" in cookie and "Max-Age=" in cookie,
               "the cookie is not HttpOnly, SameSite=Strict, expiring: %s" % cookie)
        jar = {"Cookie": "collbench_session=" + session}
        expect(request(port, "GET", "/ui/", headers=jar)[0] == 200, "the session opens no page")
        expect(request(port, "GET", "/v1/runs", headers=jar)[0] == 401,
               "the session cookie opens the API")
        # Another site's page cannot sign the user out (or in).
        status, _, _ = request(port, "POST", "/ui/logout", "",
                               dict(jar, Origin="http://evil.example",
                                    **{"Content-Type": "application/x-www-form-urlencoded"}))
        expect(status == 403, "a cross-origin logout answered %d" % status)
        expect(request(port, "GET", "/ui/", headers=jar)[0] == 200,
               "a refused logout ended the session")
        status, _, headers = request(port, "POST", "/ui/logout", "", dict(jar, **form))
        expect(status == 303 and "Max-Age=0" in headers.get("set-cookie", ""),
               "logout answered %d, Set-Cookie %r" % (status, headers.get("set-cookie")))
        # The same cookie, replayed after logout, opens nothing.
        status, _, _ = request(port, "GET", "/ui/", headers=jar)
        expect(status == 401, "the cookie still opens /ui/ after logout: %d" % status)
        # Guessing tokens at /ui/login is throttled per client.
        refused = None
        for i in range(30):
            status, _, headers = request(port, "POST", "/ui/login", "token=guess-%d" % i, form)
            if status == 429:
                refused = headers
                break
            expect(status == 401, "a wrong token at /ui/login answered %d" % status)
        expect(refused is not None, "30 wrong logins in a row were never throttled")
        expect(int(refused.get("retry-after", "0")) >= 1, "a 429 without Retry-After")
        expect(session_of(request(port, "POST", "/ui/login", "token=" + TOKENS["read"],
                                  form)[2]) is None,
               "a throttled client still got a session")
        status, metrics, _ = request(port, "GET", "/metrics")
        match = re.search(r"^collbench_ui_login_refusals_total (\d+)$", metrics, re.M)
        expect(match and int(match.group(1)) >= 2, "login refusals are not counted")
    finally:
        c.stop()


def case_cli_token(bin_dir, workdir):
    tokens = private_file(os.path.join(workdir, "tokens"),
                          "".join("%s %s\n" % kv for kv in TOKENS.items()))
    c = Coordinator(bin_dir, workdir, "--tokens", tokens).wait_serving()
    try:
        match = re.search(r"serving gRPC on port (\d+)", c.output())
        expect(match, "no gRPC port in the coordinator's log: %s" % c.output())
        address = "127.0.0.1:" + match.group(1)
        cli = [os.path.join(bin_dir, "collbench"), "--coordinator", address]
        env = {k: v for k, v in os.environ.items() if k != "COLLBENCH_TOKEN"}

        def cli_run(*args, extra_env=None):
            return subprocess.run(cli + list(args) + ["runs"], capture_output=True, text=True,
                                  timeout=60, env=dict(env, **(extra_env or {})))
        denied = cli_run()
        expect(denied.returncode != 0 and "token" in denied.stderr.lower(),
               "the CLI without a token: exit %d %s" % (denied.returncode, denied.stderr))
        read_file = private_file(os.path.join(workdir, "read-token"), TOKENS["read"] + "\n")
        done = cli_run("--token-file", read_file)
        expect(done.returncode == 0 and "warning" not in done.stderr.lower(),
               "--token-file: exit %d %s" % (done.returncode, done.stderr))
        done = cli_run(extra_env={"COLLBENCH_TOKEN": TOKENS["read"]})
        expect(done.returncode == 0, "COLLBENCH_TOKEN: exit %d %s" % (done.returncode,
                                                                     done.stderr))
        done = cli_run("--token", TOKENS["read"])
        expect(done.returncode == 0, "--token: exit %d %s" % (done.returncode, done.stderr))
        os.chmod(read_file, 0o644)
        done = cli_run("--token-file", read_file)
        expect(done.returncode == 0 and "warning" in done.stderr.lower()
               and read_file in done.stderr,
               "a world-readable --token-file was not warned about: %s" % done.stderr)
        done = cli_run("--token-file", os.path.join(workdir, "missing"))
        expect(done.returncode == 2 and "--token-file" in done.stderr,
               "a missing --token-file: exit %d %s" % (done.returncode, done.stderr))
    finally:
        c.stop()


def as_nobody(argv, **kwargs):
    return subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                           "--"] + argv, capture_output=True, text=True, **kwargs)


def case_local_user(bin_dir, workdir):
    if os.geteuid() != 0:
        print("SKIP: local_user needs root (to be a second user with setpriv)")
        return SKIP
    if shutil.which("setpriv") is None:
        print("SKIP: local_user needs setpriv")
        return SKIP
    cli = os.path.join(bin_dir, "collbench")
    probe = as_nobody([cli, "--help"])
    if probe.returncode != 0:
        print("SKIP: uid 65534 cannot run %s: %s" % (cli, probe.stderr.strip()))
        return SKIP
    # The attacker's own folder: a fork agent that writes the proof file.
    attacker = tempfile.mkdtemp(prefix="collbench-attacker.")
    os.chmod(attacker, 0o777)
    proof = os.path.join(attacker, "proof")
    agent = os.path.join(attacker, "agent.sh")
    with open(agent, "w") as f:
        f.write("#!/bin/sh\ntouch %s\nexec \"$@\"\n" % proof)
    os.chmod(agent, 0o755)
    store = os.path.join(workdir, "local.db")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    local_log = os.path.join(workdir, "local.log")
    before = set(glob.glob("/tmp/collbench-local.*"))
    # Long enough (seconds of 8 MiB allreduces) for the attacks below.
    argv = [cli, "local", "--workers", "1", "--slots", "2", "--store", store, "run",
            "allreduce", "--ranks", "2", "--sizes", "8M", "-n", "800"]
    log("start: " + " ".join(argv))
    with open(local_log, "w") as out:
        local = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 60
        address = None
        while time.monotonic() < deadline and local.poll() is None:
            with open(local_log, errors="replace") as f:
                text = f.read()
            match = re.search(r"local: coordinator on (127\.0\.0\.1:\d+)", text)
            if match and "workers ready" in text:
                address = match.group(1)
                break
            time.sleep(0.1)
        expect(address, "collbench local did not come up: %s" % open(local_log).read()[-2000:])
        log("root's collbench local on %s" % address)
        time.sleep(1)  # its run is under way
        attempts = {
            "list runs": [cli, "--coordinator", address, "runs"],
            "list workers": [cli, "--coordinator", address, "workers"],
            "create a run": [cli, "--coordinator", address, "run", "allreduce", "--ranks", "1",
                             "--sizes", "8", "--env", "OMPI_MCA_orte_fork_agent=" + agent,
                             "--env", "OMPI_MCA_prte_fork_agent=" + agent, "--wait"],
        }
        for what, attempt in attempts.items():
            done = as_nobody(attempt, timeout=60)
            log("uid 65534: %s -> exit %d: %s" % (what, done.returncode,
                                                    done.stderr.strip()[-200:]))
            expect(done.returncode != 0, "uid 65534 could %s on root's collbench local: %s"
                   % (what, done.stdout[-500:]))
            expect(re.search(r"token|unauthenticated", done.stderr, re.I),
                   "uid 65534's %s failed for another reason than the token: %s"
                   % (what, done.stderr))
        # A worker of the other user's does not join.
        intruder_log = os.path.join(attacker, "intruder.log")
        intruder = subprocess.Popen(
            ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--",
             os.path.join(bin_dir, "collbench-worker"), "--coordinator", address, "--listen",
             "127.0.0.1:0", "--name", "intruder", "--slots", "1", "--work-dir",
             os.path.join(attacker, "work")],
            stdout=open(intruder_log, "w"), stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                text = open(intruder_log, errors="replace").read()
                if re.search(r"not accepted|token", text, re.I) or intruder.poll() is not None:
                    break
                time.sleep(0.2)
            text = open(intruder_log, errors="replace").read()
            log("uid 65534's worker: %s" % text.strip()[-300:])
            expect(re.search(r"not accepted|token|unauthenticated", text, re.I),
                   "the other user's worker was not refused: %s" % text[-1000:])
        finally:
            if intruder.poll() is None:
                intruder.terminate()
                intruder.wait(10)
        # The session's secrets stay in root's private folder.
        session_dirs = sorted(set(glob.glob("/tmp/collbench-local.*")) - before)
        expect(session_dirs, "no session folder of collbench local found")
        for folder in session_dirs:
            expect(os.stat(folder).st_mode & 0o077 == 0,
                   "%s is open to other users: %o" % (folder, os.stat(folder).st_mode))
            for secret in ("tokens", "join-token"):
                path = os.path.join(folder, secret)
                done = as_nobody(["cat", path])
                expect(done.returncode != 0 and not done.stdout,
                       "uid 65534 read %s" % path)
        # No token on the workers' command lines.
        secrets = []
        for folder in session_dirs:
            try:
                with open(os.path.join(folder, "tokens")) as f:
                    secrets += [line.split()[1] for line in f if line.strip()]
            except OSError:
                pass
        expect(secrets, "the session's token file is not where expected")
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    cmdline = f.read().decode(errors="replace")
            except OSError:
                continue
            for secret in secrets:
                expect(secret not in cmdline, "a token in the argv of pid %s: %s"
                       % (pid, cmdline.replace("\0", " ")[:300]))
        expect(local.poll() is None, "collbench local ended before the attacks were over; "
               "the run must last longer for this test to mean anything")
        code = local.wait(180)
        expect(code == 0, "root's own run failed (exit %d): %s" % (
            code, open(local_log).read()[-2000:]))
    finally:
        if local.poll() is None:
            local.terminate()
            local.wait(30)
    expect(not os.path.exists(proof), "the proof file %s exists: the attack ran" % proof)
    listed = subprocess.run([cli, "local", "--workers", "1", "--store", store, "runs"],
                            capture_output=True, text=True, env=env, timeout=120)
    runs = [line for line in listed.stdout.splitlines() if re.match(r"^\S+\s+\S+", line)
            and "SUCCEEDED" in line.upper()]
    log("runs in the store: %s" % listed.stdout.strip())
    expect(listed.returncode == 0, "listing the store failed: %s" % listed.stderr)
    expect(len(runs) == 1 and len([l for l in listed.stdout.splitlines()
                                   if re.search(r"allreduce", l)]) == 1,
           "the store holds other runs than root's one: %s" % listed.stdout)
    shutil.rmtree(attacker, ignore_errors=True)
    return 0


def resident_kib(pid, field):
    """VmRSS or VmHWM of a process, in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise Failure("no %s in /proc/%d/status" % (field, pid))


def metric_values(port, name):
    """{labels text: value} of one metric family on /metrics."""
    status, body, _ = request(port, "GET", "/metrics")
    expect(status == 200, "GET /metrics answered %d" % status)
    values = {}
    for line in body.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            key, _, value = line.rpartition(" ")
            values[key[len(name):]] = float(value)
    return values


def raw_connection(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def answered_then_closed(s, timeout=5):
    """What the server wrote on `s` until it closed it ("" when it only
    closed), or None when it is still open after `timeout` seconds."""
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data.decode(errors="replace")
            data += chunk
    except ConnectionResetError:
        return data.decode(errors="replace")
    except socket.timeout:
        return None


def case_http_flood(bin_dir, workdir):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 4096:
        print("SKIP: needs 4096 open files (the hard limit is %d)" % hard)
        return SKIP
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, hard))
    body_limit = 1 << 20
    unauthenticated = 512  # the defaults
    byte_budget = 64 << 20
    tokens = private_file(os.path.join(workdir, "tokens"),
                          "".join("%s %s\n" % kv for kv in TOKENS.items()))
    c = Coordinator(bin_dir, workdir, "--tokens", tokens,
                    "--unauthenticated-request-deadline", "2s").wait_serving()
    operator = {"Authorization": "Bearer " + TOKENS["operator"]}
    try:
        port = c.http_port
        pid = c.proc.pid
        base_kib = resident_kib(pid, "VmHWM")
        # Bound: the bytes unauthenticated connections may hold, 16 KiB of
        # bookkeeping for each, and 16 MiB for the coordinator's own growth.
        bound_kib = byte_budget // 1024 + unauthenticated * 16 + 16 * 1024
        log("coordinator peak resident %d KiB at start; bound of growth %d KiB"
            % (base_kib, bound_kib))
        head = ("POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n")
        # 1. Bodies announced over the limit: refused before they are sent.
        for _ in range(24):
            s = raw_connection(port)
            s.sendall((head % (16 << 20)).encode())
            answer = answered_then_closed(s)
            s.close()
            expect(answer is not None and answer.startswith("HTTP/1.1 413 "),
                   "a 16 MiB body announced was answered %r" % (answer or "")[:200])
        # 2. Bodies within the limit, never finished: held only until the
        # deadline, at most `unauthenticated` of them.
        partial = []
        for _ in range(24):
            s = raw_connection(port)
            s.sendall((head % body_limit).encode() + b"{" * (body_limit - 1024))
            partial.append(s)
        # 3. Slow senders: a header byte at a time.
        slow = []
        for i in range(2000):
            s = raw_connection(port)
            s.setblocking(False)
            try:
                s.send(b"GET /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            except OSError:
                pass
            slow.append(s)
        held_most = 0
        served = False
        # The accepts of the burst take the server a moment; from then on
        # it holds no more than its cap.
        time.sleep(0.3)
        start = time.monotonic()
        while time.monotonic() - start < 3:
            for s in slow:
                try:
                    s.send(b"a")
                except OSError:
                    pass
            held = metric_values(port, "collbench_http_connections_open").get("", 0)
            held_most = max(held_most, held)
            if not served:
                status, _, _ = request(port, "GET", "/v1/runs", headers=operator)
                served = status == 200
            time.sleep(0.5)
        log("at most %d connections held during the flood" % held_most)
        # +1: the scrape's own connection.
        expect(held_most <= unauthenticated + 1,
               "the coordinator held %d connections (cap %d)" % (held_most, unauthenticated))
        expect(served, "an operator's request on a new connection was not served in the flood")
        # Past the deadline every attacking connection is closed.
        for s in partial + slow:
            s.setblocking(True)
            expect(answered_then_closed(s, timeout=5) is not None,
                   "an attacking connection is still open past the deadline")
            s.close()
        peak_kib = resident_kib(pid, "VmHWM")
        log("coordinator peak resident %d KiB after the flood (+%d KiB)"
            % (peak_kib, peak_kib - base_kib))
        expect(peak_kib - base_kib < bound_kib,
               "the coordinator's peak resident memory grew by %d KiB, over the bound of %d KiB"
               % (peak_kib - base_kib, bound_kib))
        refusals = metric_values(port, "collbench_http_request_refusals_total")
        log("refusals: %s" % refusals)
        expect(refusals.get('{reason="too_large"}', 0) == 24, "413s not counted: %s" % refusals)
        expect(refusals.get('{reason="unauthenticated_connections"}', 0) > 0 and
               refusals.get('{reason="request_deadline"}', 0) > 0,
               "connection refusals not counted: %s" % refusals)
        expect(c.run_count(TOKENS["read"]) == 0, "the flood created a run")
    finally:
        c.stop()
    return 0


CASES = {
    "cross_origin": case_cross_origin,
    "foreign_host": case_foreign_host,
    "fail_closed": case_fail_closed,
    "ui_session": case_ui_session,
    "cli_token": case_cli_token,
    "local_user": case_local_user,
    "http_flood": case_http_flood,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--case", required=True, choices=sorted(CASES))
    args = parser.parse_args()
    bin_dir = os.path.abspath(args.bin_dir)
    workdir = tempfile.mkdtemp(prefix="collbench-web-%s." % args.case)
    try:
        code = CASES[args.case](bin_dir, workdir) or 0
    except Failure as failure:
        print("FAIL %s: %s" % (args.case, failure))
        print("(files in %s)" % workdir)
        return 1
    if code == 0:
        print("PASS %s" % args.case)
        shutil.rmtree(workdir, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
