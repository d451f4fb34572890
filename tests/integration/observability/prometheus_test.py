#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Grafana dashboards against a real Prometheus and a real coordinator.

A coordinator (with --http-listen, so it serves /metrics) and three workers
on 127.0.0.1, and Prometheus (Debian's `prometheus`) scraping it every
second from its own temporary folder and loopback port. With Prometheus
already scraping, the test runs a small matrix with the `collbench` CLI
(allreduce and bcast; pack and spread; Open MPI and MPICH), one run that
fails (an allreduce algorithm MPICH does not know), one that
is cancelled and a few API calls that fail, so that every panel has
something to show. The workers carry a node pool label (`--label
pool=...`) and the coordinator exposes the run label `team`
(--metric-run-labels); two runs that differ only in their transport (shm
and tcp) must be two series. For the fleet board: the coordinator reads a
site reference table (--references) that the test writes, a test fixture
with made-up figures for host-memory allreduce from 1 KiB up, so results
have a % of expected and a floor ratio (and shm/tcp runs a % of limit); one
matrix run is saved as a baseline, and a schedule of the same run every 2 s
(--min-schedule-period 1s) is checked against it until one firing has
ended, then paused. Once Prometheus has scraped the final state it checks,
for every dashboard in dashboards/:

  - every metric name an expression or a variable query uses is one the
    coordinator's /metrics exports (histograms as _bucket/_sum/_count);
  - every templating variable query (label_values) yields values;
  - every panel target's expression, with the variables substituted as
    Grafana would (All -> its allValue, otherwise the saved or the first
    value; $__range, $__interval and $__rate_interval from the test's time
    window and the 1 s scrape interval), evaluates through Prometheus' HTTP
    API (/api/v1/query for instant targets, /api/v1/query_range for the
    others) without error and returns at least one finite sample;
  - every panel and target uses the provisioned data source uid.

Last, the coordinator is restarted on the same store: every collective
series (bus bandwidth gauge and latency histogram count) must come back
with the value it had.

    prometheus_test.py [--bin-dir build/bin] [--prometheus PATH] [--dashboards DIR]
                       [--keep-logs] [-v]

The binaries come from --bin-dir, else $COLLBENCH_BIN_DIR, else build/bin.
Without a prometheus binary (--prometheus, $PROMETHEUS, or on PATH) it exits
77, which ctest reports as skipped. Everything it starts, Prometheus
included, is stopped by process id in `finally`, also on failure. Exit code:
0 passed, 1 failed, 2 bad usage, 77 skipped.
"""

import argparse
import glob
import json
import math
import os
import re
import shutil
import sys
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.join(HERE, "..", "service"))
import service_test as svc  # noqa: E402  (the shared cluster helpers)
from service_test import Failure, expect, poll  # noqa: E402

SKIP = 77
DATASOURCE_UID = "collbench-prometheus"
SCRAPE_INTERVAL_S = 1
SIZES = "8,1K,64K"
POOL = "pool-a"  # the workers' node pool label
BASELINE = "fleet-baseline"
SCHEDULE = "fleet-check"
SCHEDULE_EVERY = "2s"
# The configuration that is saved as the baseline and scheduled: the
# matrix's first one (Open MPI, since MPICH may not be built).
SCHEDULED = ("allreduce", "pack", "openmpi")
# The site reference table's one entry (GB/s, as in
# analysis/references/collective_references.json): made-up figures, far
# from anything loopback reaches, so that every referenced result has both
# ratios and none is below the floor.
REFERENCE_VALUE_GBPS = 1000.0
REFERENCE_FLOOR_GBPS = 0.001
REFERENCE_AT_BYTES = 1024  # the 8-byte results have no reference
COLLECTIVE_SERIES = ("collbench_collective_bus_bandwidth_bytes_per_second",
                     "collbench_collective_latency_seconds_count")


def log(message):
    svc.log(message)


# ---------------------------------------------------------------------------
# HTTP


def http_get(url, timeout=10):
    """(status, body text); status 0 when nothing answered."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError):
        return 0, ""


class Prometheus:
    """Prometheus' HTTP API on 127.0.0.1:port."""

    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port

    def api(self, path, **params):
        """The `data` of a successful API answer; raises Failure with
        Prometheus' error otherwise."""
        query = urllib.parse.urlencode(params, doseq=True)
        status, body = http_get("%s/api/v1/%s?%s" % (self.base, path, query), timeout=30)
        try:
            answer = json.loads(body)
        except ValueError:
            raise Failure("Prometheus answered %s with HTTP %d: %r" % (path, status, body[:300]))
        if answer.get("status") != "success":
            raise Failure("%s: %s: %s" % (path, answer.get("errorType"), answer.get("error")))
        return answer["data"]

    def ready(self):
        return http_get(self.base + "/-/ready", timeout=2)[0] == 200

    def instant(self, expr, at):
        return self.api("query", query=expr, time="%.3f" % at)

    def range(self, expr, start, end, step):
        return self.api("query_range", query=expr, start="%.3f" % start, end="%.3f" % end,
                        step="%gs" % step)

    def label_values(self, label, selector, start, end):
        params = {"start": "%.3f" % start, "end": "%.3f" % end}
        if selector:
            params["match[]"] = [selector]
        return self.api("label/%s/values" % urllib.parse.quote(label), **params)


def finite_samples(data):
    """How many finite values a query's data holds (NaN and ±Inf are what
    histogram_quantile and divisions by zero give where nothing was
    measured, so they do not count as data)."""
    def finite(value):
        try:
            return math.isfinite(float(value))
        except (TypeError, ValueError):
            return False
    kind, result = data.get("resultType"), data.get("result")
    if kind == "scalar":
        return int(finite(result[1]))
    if kind == "vector":
        return sum(finite(s["value"][1]) for s in result)
    if kind == "matrix":
        return sum(finite(v[1]) for s in result for v in s["values"])
    return 0


# ---------------------------------------------------------------------------
# Processes


def write_references(folder):
    """A site reference table (the format of
    analysis/references/collective_references.json) with one test-only
    entry for host-memory allreduce on any number of ranks; its path."""
    table = {"version": 1, "entries": [{
        "class": {"gpu": None, "gpus": None, "interconnect": None, "nic": None,
                  "host_memory": None},
        "operation": "allreduce",
        "metric": "busbw_GBps",
        "value": REFERENCE_VALUE_GBPS,
        "range": None,
        "floor": REFERENCE_FLOOR_GBPS,
        "at_bytes": REFERENCE_AT_BYTES,
        "source": {
            "title": "Test fixture of collbench's prometheus_test.py: made-up figures, "
                     "not a published reference",
            "url": "https://example.invalid/collbench-test-fixture",
            "publisher": "collbench tests",
            "date": None,
            "what": "Nothing was measured; the figures only make the coordinator export "
                    "collbench_result_expected_ratio and collbench_result_floor_ratio.",
        },
        "note": "Test fixture; not a reference for any hardware.",
    }]}
    path = os.path.join(folder, "test-references.json")
    with open(path, "w") as f:
        json.dump(table, f, indent=2)
    return path


class ObservedCluster(svc.Cluster):
    """service_test's Cluster whose coordinator also serves HTTP (/metrics),
    plus a Prometheus that scrapes it; all in the cluster's folder and
    stopped by its teardown."""

    def __init__(self, bin_dir):
        super().__init__(bin_dir, "observability")
        self.http_port = None
        self.prometheus = None
        self.prometheus_port = None
        self.references = write_references(self.dir)

    def _spawn(self, argv, log_name, env=None):
        if os.path.basename(argv[0]) == "collbench-coordinator":
            if self.http_port is None:
                self.http_port = svc.free_port()
            argv = argv + ["--http-listen", "127.0.0.1:%d" % self.http_port,
                           "--metric-run-labels", "team", "--references", self.references,
                           "--min-schedule-period", "1s"]
        return super()._spawn(argv, log_name, env)

    def metrics_url(self):
        return "http://127.0.0.1:%d/metrics" % self.http_port

    def metrics_text(self):
        status, body = http_get(self.metrics_url())
        expect(status == 200, "GET %s answered %d: %r" % (self.metrics_url(), status, body[:300]))
        return body

    def wait_metrics(self):
        poll("the coordinator's /metrics on port %d" % self.http_port,
             lambda: http_get(self.metrics_url(), timeout=2)[0] == 200, 20)

    def start_prometheus(self, binary):
        """Prometheus with its own configuration and storage here, on a
        free loopback port (another try if someone took the port)."""
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n"
                    "  scrape_interval: %ds\n"
                    "  scrape_timeout: %ds\n"
                    "scrape_configs:\n"
                    "  - job_name: collbench\n"
                    "    metrics_path: /metrics\n"
                    "    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n"
                    % (SCRAPE_INTERVAL_S, SCRAPE_INTERVAL_S, self.http_port))
        for attempt in range(3):
            port = svc.free_port()
            storage = os.path.join(self.dir, "prometheus-data-%d" % attempt)
            proc = self._spawn([binary, "--config.file=" + config,
                                "--storage.tsdb.path=" + storage,
                                "--web.listen-address=127.0.0.1:%d" % port,
                                "--storage.tsdb.retention.time=1d"],
                               "prometheus-%d.log" % attempt)
            api = Prometheus(port)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and proc.poll() is None:
                if api.ready():
                    self.prometheus, self.prometheus_port = proc, port
                    return api
                time.sleep(0.2)
            log("prometheus on port %d did not come up: %s" % (port, self.tail(proc)))
            self.stop(proc)
        raise Failure("prometheus did not start: %s" % self.tail(proc))


# ---------------------------------------------------------------------------
# Dashboards


def load_dashboards(folder):
    dashboards = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path) as f:
            try:
                dashboards[os.path.basename(path)] = json.load(f)
            except ValueError as e:
                raise Failure("%s is not JSON: %s" % (path, e))
    expect(dashboards, "no dashboards (*.json) in %s" % folder)
    return dashboards


def all_panels(panels):
    """Every panel, those inside (collapsed) rows included."""
    for panel in panels:
        yield panel
        for inner in panel.get("panels", []) or []:
            yield from all_panels([inner])


def datasource_uid(ref):
    if isinstance(ref, dict):
        return ref.get("uid")
    return ref  # a name or a "${var}" in older dashboards


def check_structure(dashboards, provisioning_file):
    """Uids, data source references, targets: problems as lines."""
    problems = []
    with open(provisioning_file) as f:
        provisioned = f.read()
    if not re.search(r"^\s*uid:\s*['\"]?%s['\"]?\s*$" % re.escape(DATASOURCE_UID), provisioned,
                     re.M):
        problems.append("%s does not provision a data source with uid %s" % (
            provisioning_file, DATASOURCE_UID))
    uids = {}
    for name, board in dashboards.items():
        uid = board.get("uid")
        if not uid or uid in uids:
            problems.append("%s: missing or duplicate uid %r (also %s)" % (name, uid,
                                                                           uids.get(uid)))
        uids[uid] = name
        for var in board.get("templating", {}).get("list", []):
            if var.get("type") == "query" and datasource_uid(var.get("datasource")) != \
                    DATASOURCE_UID:
                problems.append("%s: variable %s uses data source %r" % (
                    name, var.get("name"), var.get("datasource")))
        for panel in all_panels(board.get("panels", [])):
            if panel.get("type") in ("row", "text"):
                continue
            title = panel.get("title", "?")
            targets = panel.get("targets") or []
            if not targets:
                problems.append("%s / %s: no targets" % (name, title))
            refs = [datasource_uid(panel.get("datasource"))]
            refs += [datasource_uid(t.get("datasource")) for t in targets if "datasource" in t]
            for ref in refs:
                if ref != DATASOURCE_UID:
                    problems.append("%s / %s: data source %r, expected uid %s" % (
                        name, title, ref, DATASOURCE_UID))
            for t in targets:
                if not (t.get("expr") or "").strip():
                    problems.append("%s / %s [%s]: empty expr" % (name, title, t.get("refId")))
    return problems


class Window:
    """The time window the dashboards are evaluated over, and Grafana's
    built-in interval variables for it."""

    def __init__(self, start, end):
        self.start, self.end = start, end
        self.range_s = max(1, int(math.ceil(end - start)))
        # Grafana: $__interval = range / max data points, at least the data
        # source's scrape interval; $__rate_interval = max($__interval +
        # scrape interval, 4 x scrape interval).
        self.step_s = max(SCRAPE_INTERVAL_S, int(math.ceil(self.range_s / 1000.0)))
        self.rate_interval_s = max(self.step_s + SCRAPE_INTERVAL_S, 4 * SCRAPE_INTERVAL_S)

    def builtins(self):
        return {
            "__range": "%ds" % self.range_s, "__range_s": str(self.range_s),
            "__range_ms": str(self.range_s * 1000),
            "__interval": "%ds" % self.step_s, "__interval_ms": str(self.step_s * 1000),
            "__rate_interval": "%ds" % self.rate_interval_s,
            "__rate_interval_ms": str(self.rate_interval_s * 1000),
        }


VARIABLE_RE = re.compile(r"\$\{(\w+)(?::(\w+))?\}|\$(\w+)|\[\[(\w+)(?::(\w+))?\]\]")


def interpolate(text, values):
    """Grafana's variable substitution for a Prometheus query: a list value
    becomes a regex alternation; unknown variables are an error."""
    def replace(match):
        name = match.group(1) or match.group(3) or match.group(4)
        if name not in values:
            raise Failure("unknown variable $%s in %r" % (name, text))
        value = values[name]
        if isinstance(value, list):
            return value[0] if len(value) == 1 else "(%s)" % "|".join(
                re.escape(v) for v in value)
        return value
    return VARIABLE_RE.sub(replace, text)


LABEL_VALUES_RE = re.compile(r"^\s*label_values\(\s*(?:(.*?)\s*,\s*)?(\w+)\s*\)\s*$", re.S)


def variable_query(var):
    query = var.get("query")
    if isinstance(query, dict):
        query = query.get("query", "")
    return query or var.get("definition", "")


def sort_values(values, mode):
    if mode in (3, 4):  # numerical
        def key(v):
            try:
                return (0, float(v), v)
            except ValueError:
                return (1, 0.0, v)
        return sorted(values, key=key, reverse=mode == 4)
    if mode in (1, 2):
        return sorted(values, reverse=mode == 2)
    return list(values)


def resolve_variables(board, prom, window, problems, name):
    """Evaluates the board's templating variables in order; returns the
    substitution map (built-ins included)."""
    values = window.builtins()
    for var in board.get("templating", {}).get("list", []):
        vname, kind = var.get("name"), var.get("type")
        current = (var.get("current") or {}).get("value")
        if kind == "query":
            query = interpolate(variable_query(var), values)
            match = LABEL_VALUES_RE.match(query)
            if not match:
                problems.append("%s: variable %s: unsupported query %r" % (name, vname, query))
                values[vname] = ".*"
                continue
            selector, label = match.group(1), match.group(2)
            try:
                options = prom.label_values(label, selector, window.start, window.end)
            except Failure as e:
                problems.append("%s: variable %s: %s fails: %s" % (name, vname, query, e))
                options = []
            if var.get("regex"):
                options = [o for o in options if re.search(var["regex"], o)]
            options = sort_values(options, var.get("sort", 0))
            log("%s: $%s <- %s: %s" % (name, vname, query, options))
            if not options:
                problems.append("%s: variable %s: %s yields no values" % (name, vname, query))
                values[vname] = var.get("allValue") or ".*"
                continue
        elif kind == "custom":
            options = [o.strip() for o in (variable_query(var) or "").split(",") if o.strip()]
        elif kind in ("constant", "textbox"):
            values[vname] = variable_query(var) or current or ""
            continue
        else:
            options = [current] if isinstance(current, str) else list(current or [])
        chosen = current if isinstance(current, list) else [current] if current else []
        if var.get("includeAll") and "$__all" in chosen:
            values[vname] = var.get("allValue") or options
        else:
            picked = [c for c in chosen if c in options]
            values[vname] = picked if picked else [options[0]]
    return values


# ---------------------------------------------------------------------------
# Metric names


def exported_names(metrics_text):
    """Sample names in a text exposition (histograms give _bucket, _sum and
    _count), and the families by type."""
    names, families = set(), {}
    for line in metrics_text.splitlines():
        if line.startswith("# TYPE "):
            parts = line.split()
            if len(parts) >= 4:
                families[parts[2]] = parts[3]
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{\s]", line, 1)[0])
    return names, families


METRIC_NAME_RE = re.compile(r"(?<![\w:])(collbench_[A-Za-z0-9_:]*)")
STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')


SAMPLE_RE = re.compile(r'^(\w+)(?:\{(.*)\})?\s+(\S+)$')
LABEL_RE = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def samples(metrics_text, names):
    """{(name, frozenset of (label, value)): value} for the samples of the
    metrics `names` in a text exposition."""
    found = {}
    for line in metrics_text.splitlines():
        match = SAMPLE_RE.match(line)
        if match and match.group(1) in names:
            labels = frozenset(LABEL_RE.findall(match.group(2) or ""))
            found[(match.group(1), labels)] = float(match.group(3))
    return found


def metric_names(expr):
    """collbench_* metric names an expression uses (quoted strings, such as
    label values, left out)."""
    return set(METRIC_NAME_RE.findall(STRING_RE.sub('""', expr)))


# ---------------------------------------------------------------------------
# The test


def produce_runs(c):
    """Runs so that every panel has data: two operations, both placements,
    both MPI libraries, a failed and a cancelled run, and failing API
    calls. Returns the matrix's run names by (operation, placement, mpi),
    in the order they ran."""
    mpich = os.access(c.binary("collbench-rank-mpich"), os.X_OK)
    other_mpi = "mpich" if mpich else "openmpi"
    if not mpich:
        sys.stderr.write("prometheus_test: collbench-rank-mpich not built; MPICH runs use "
                         "Open MPI\n")

    def not_found():
        # Failing API calls over gRPC (NOT_FOUND) and HTTP (404), a few
        # times apart, so that rate() sees them rise.
        c.cli("show", "runs/no-such-run", expect_code=None)
        http_get("http://127.0.0.1:%d/v1/runs/no-such-run" % c.http_port)

    not_found()
    matrix = [
        ("allreduce", "pack", "openmpi"),
        ("allreduce", "spread", "openmpi"),
        ("allreduce", "spread", other_mpi),
        ("bcast", "pack", other_mpi),
        ("bcast", "spread", "openmpi"),
        ("allreduce", "pack", "openmpi"),  # again: the same series grows
    ]
    runs = {}
    for operation, placement, mpi in matrix:
        done = c.cli("run", *matrix_run_flags(operation, placement, mpi), "--wait", "--output",
                     "jsonl", timeout=120)
        results = svc.parse_jsonl(done.stdout)
        svc.check_results(results, [8, 1024, 65536], "%s %s %s" % (operation, placement, mpi))
        runs.setdefault((operation, placement, mpi), []).append(results[0]["run"])
    not_found()
    produce_transport_pair(c)

    # A memory kind no worker offers is refused at create time (a failed
    # API call for the panels); a run that fails at run time: an allreduce
    # algorithm MPICH does not know (it fails at MPI_Init), or, without
    # MPICH, an Open MPI rules file that is not in the tuning folder.
    refused = c.cli("run", "allreduce", "--ranks", 2, "--sizes", "8", "--memory", "hbw",
                    expect_code=2)
    expect("spec.memory" in refused.stderr, "--memory hbw: %r" % refused.stderr)
    if mpich:
        failing = ("--mpi", "mpich", "--env", "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM=no_such_algorithm")
    else:
        failing = ("--env", "OMPI_MCA_coll_tuned_use_dynamic_rules=1", "--env",
                   "OMPI_MCA_coll_tuned_dynamic_rules_filename=no-such-rules.conf")
    failed = c.create_run("allreduce", "--ranks", 2, "--placement", "pack", "--sizes", "8",
                          "-n", 10, *failing)
    state = c.wait_state(failed, ("succeeded", "failed", "cancelled"), 60)
    expect(state == "failed", "%s (%s) ended %s, expected failed" % (failed, failing[-1], state))

    cancelled = c.create_run("allreduce", "--ranks", 2, "--placement", "spread", "--sizes",
                             "1M", "-n", 100000, "-w", 1)
    c.wait_state(cancelled, ("running",), 60)
    c.cli("cancel", cancelled)
    state = c.wait_state(cancelled, ("succeeded", "failed", "cancelled"), 30)
    expect(state == "cancelled", "%s ended %s, expected cancelled" % (cancelled, state))
    c.wait_workers_ready(list(c.workers), timeout=30)
    not_found()
    return runs


def matrix_run_flags(operation, placement, mpi):
    """`collbench run` arguments of one matrix configuration."""
    return (operation, "--ranks", 2, "--placement", placement, "--mpi", mpi, "--sizes", SIZES,
            "-n", 50, "-w", 5, "--check")


def produce_transport_pair(c):
    """Two runs of one configuration but for the transport (shm, tcp),
    filed under the run label team=blue."""
    for transport in ("shm", "tcp"):
        done = c.cli("run", "allreduce", "--ranks", 2, "--placement", "pack", "--transport",
                     transport, "--label", "team=blue", "--sizes", SIZES, "-n", 20, "-w", 2,
                     "--check", "--wait", "--output", "jsonl", timeout=120)
        svc.check_results(svc.parse_jsonl(done.stdout), [8, 1024, 65536],
                          "allreduce pack --transport %s" % transport)


def check_transport_series(metrics_text):
    """The shm and tcp runs are two series per metric and size, alike in
    every label but transport, with the pool and run labels."""
    for name in COLLECTIVE_SERIES:
        blue = [dict(labels) for (n, labels) in samples(metrics_text, (name,))
                if ("label_team", "blue") in labels and ("size_bytes", "1024") in labels]
        by_transport = {series["transport"]: series for series in blue}
        expect(len(blue) == 2 and set(by_transport) == {"shm", "tcp"},
               "%s: the team=blue runs at 1024 B should be one shm and one tcp series, got "
               "%s" % (name, blue))
        shm, tcp = by_transport["shm"], by_transport["tcp"]
        differing = sorted(k for k in set(shm) | set(tcp) if shm.get(k) != tcp.get(k))
        expect(differing == ["transport"], "%s: shm and tcp series differ in %s: %s / %s" % (
            name, differing, shm, tcp))
        expect(shm.get("pool") == POOL, "%s: pool label %r, expected %r (the workers' "
               "--label pool)" % (name, shm.get("pool"), POOL))
    untagged = [dict(labels) for (n, labels) in samples(metrics_text, COLLECTIVE_SERIES)
                if ("label_team", "") not in labels and ("label_team", "blue") not in labels]
    expect(not untagged, "series with a label_team other than '' or blue: %s" % untagged[:2])


FIRING_RE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+(\w+)\s+(\S+)\s+(\d+)\s")
ENDED_CHECKED = ("succeeded", "regression")  # a firing that ran and was checked


def schedule_firings(c):
    """The outcomes of the schedule's firings, newest first, from
    `collbench schedule show`."""
    out = c.cli("schedule", "show", SCHEDULE).stdout
    return [m.group(1) for m in map(FIRING_RE.match, out.splitlines()) if m]


def produce_schedule(c, runs):
    """A baseline of one matrix run and a schedule of that configuration
    every 2 s checked against it: waits for one firing that ran and was
    checked, then pauses the schedule and waits for its last firing to end,
    so the collective series stay put for the restart."""
    first = runs[SCHEDULED][0]
    saved = c.cli("baseline", "save", BASELINE, first)
    expect(saved.stdout.startswith("baselines/%s: 3 configurations from 1 runs" % BASELINE),
           "baseline save %s: %r" % (first, saved.stdout))
    started = time.monotonic()
    c.cli("schedule", "create", SCHEDULE, "--every", SCHEDULE_EVERY, "--baseline", BASELINE,
          *matrix_run_flags(*SCHEDULED))

    def checked_firing():
        outcomes = schedule_firings(c)
        broken = [o for o in outcomes if o in ("failed", "cancelled")]
        expect(not broken, "schedule %s: a firing %s:\n%s" % (
            SCHEDULE, broken[0] if broken else "",
            c.cli("schedule", "show", SCHEDULE).stdout))
        return any(o in ENDED_CHECKED for o in outcomes)
    poll("a firing of schedule %s to end with its check" % SCHEDULE, checked_firing, 60, 0.5)
    c.cli("schedule", "pause", SCHEDULE)
    poll("the last firing of the paused schedule %s to end" % SCHEDULE,
         lambda: schedule_firings(c)[0] not in ("waiting", "running"), 60, 0.5)
    c.wait_workers_ready(list(c.workers), timeout=30)
    log("schedule %s: firings %s in %.1fs" % (SCHEDULE, schedule_firings(c),
                                               time.monotonic() - started))


def check_verdict_series(metrics_text):
    """Where the site reference table holds (allreduce, from
    REFERENCE_AT_BYTES up), a result's expected and floor ratios are its bus
    bandwidth over the table's value and floor; elsewhere there are none.
    The shm and tcp runs have a % of limit (their path's roofline, from the
    workers' memory probe), and the schedule's last check a ratio for each
    of the baseline's sizes."""
    busbw = samples(metrics_text, ("collbench_collective_bus_bandwidth_bytes_per_second",))
    ratios = {}
    for name in ("collbench_result_expected_ratio", "collbench_result_floor_ratio",
                 "collbench_result_limit_ratio"):
        ratios[name] = {labels: value for (n, labels), value in samples(metrics_text,
                                                                         (name,)).items()}
    referenced = 0
    for (_, labels), bandwidth in busbw.items():
        series = dict(labels)
        holds = (series.get("operation") == "allreduce" and bandwidth > 0 and
                 int(series.get("size_bytes", 0)) >= REFERENCE_AT_BYTES)
        for name, reference_gbps in (("collbench_result_expected_ratio", REFERENCE_VALUE_GBPS),
                                     ("collbench_result_floor_ratio", REFERENCE_FLOOR_GBPS)):
            ratio = ratios[name].get(labels)
            if not holds:
                expect(ratio is None, "%s where the references hold none: %s" % (name, series))
                continue
            want = bandwidth / (reference_gbps * 1e9)
            expect(ratio is not None and math.isclose(ratio, want, rel_tol=1e-6),
                   "%s %s, expected %.6g (bus bandwidth %.6g B/s over %g GB/s): %s" % (
                       name, ratio, want, bandwidth, reference_gbps, series))
        referenced += holds
        if series.get("label_team") == "blue" and bandwidth > 0:
            limit = ratios["collbench_result_limit_ratio"].get(labels)
            expect(limit is not None and limit > 0,
                   "no collbench_result_limit_ratio for the %s run: %s" % (
                       series.get("transport"), series))
    expect(referenced > 0, "no result the test's references hold for")
    checks = [dict(labels) for (_, labels), value in samples(
        metrics_text, ("collbench_check_ratio",)).items() if math.isfinite(value) and value > 0]
    sizes = sorted(int(s["size_bytes"]) for s in checks
                   if s.get("schedule") == SCHEDULE and s.get("baseline") == BASELINE and
                   s.get("operation") == SCHEDULED[0])
    expect(sizes == [8, 1024, 65536], "collbench_check_ratio of schedule %s: sizes %s, "
           "expected 8, 1024 and 65536; series %s" % (SCHEDULE, sizes, checks))
    log("references: %d series with expected and floor ratios; check ratios %s" % (
        referenced, sizes))


def check_restart_keeps_series(c):
    """Restarts the coordinator on the same store: every collective series
    comes back with its value (the gauges' last results, the histograms'
    counts)."""
    before = samples(c.metrics_text(), COLLECTIVE_SERIES)
    expect(before, "no collective series before the restart")
    c.stop_coordinator()
    c.start_coordinator()
    c.wait_metrics()
    after = samples(c.metrics_text(), COLLECTIVE_SERIES)
    lost = [key for key in before if key not in after]
    changed = [(key, before[key], after[key]) for key in before
               if key in after and after[key] != before[key]]
    expect(not lost and not changed,
           "after a restart on the same store, %d of %d collective series are gone and %d "
           "changed; e.g. %s" % (len(lost), len(before), len(changed), (lost + changed)[:1]))
    log("restart: %d collective series kept their values" % len(before))


def wait_scraped(prom, since):
    """Until Prometheus holds a scrape that started two scrape intervals
    after `since`: the final state is then at least one step old at the
    window's end, so the last step of a range query or of a subquery
    (aligned to the step) sees it, as Grafana a moment later would. A
    series that first appears, or a counter that rises, in the window's
    last second (the schedule's) would otherwise fall between two steps."""
    def scraped():
        data = prom.instant("timestamp(collbench_build_info)", time.time())
        return any(float(s["value"][1]) > since + 2 * SCRAPE_INTERVAL_S
                   for s in data["result"])
    poll("Prometheus to scrape the final state", scraped, 30, 0.5)


def evaluate_dashboards(dashboards, prom, window, exported):
    """Problems (lines) and counts."""
    problems = []
    counts = {"dashboards": len(dashboards), "panels": 0, "expressions": 0, "variables": 0}
    used = set()
    for name, board in dashboards.items():
        for var in board.get("templating", {}).get("list", []):
            if var.get("type") == "query":
                counts["variables"] += 1
                for metric in metric_names(variable_query(var)):
                    used.add(metric)
                    if metric not in exported:
                        problems.append("%s: variable %s uses %s, which the coordinator does "
                                        "not export" % (name, var.get("name"), metric))
        values = resolve_variables(board, prom, window, problems, name)
        for panel in all_panels(board.get("panels", [])):
            targets = [t for t in panel.get("targets") or [] if not t.get("hide")]
            if not targets:
                continue
            counts["panels"] += 1
            title = panel.get("title", "?")
            for t in targets:
                counts["expressions"] += 1
                where = "%s / %s [%s]" % (name, title, t.get("refId"))
                raw = t.get("expr", "")
                for metric in metric_names(raw):
                    used.add(metric)
                    if metric not in exported:
                        problems.append("%s: uses %s, which the coordinator does not export\n"
                                        "    %s" % (where, metric, raw))
                try:
                    expr = interpolate(raw, values)
                    instant = t.get("instant") and not t.get("range")
                    if instant:
                        data = prom.instant(expr, window.end)
                    else:
                        data = prom.range(expr, window.start, window.end, window.step_s)
                except Failure as e:
                    problems.append("%s: error: %s\n    %s" % (where, e, raw))
                    continue
                found = finite_samples(data)
                log("%s: %d finite samples (%s)" % (where, found,
                                                    "instant" if instant else "range"))
                if not found:
                    problems.append("%s: no data (%s query)\n    %s" % (
                        where, "instant" if instant else "range", expr))
    return problems, counts, used


def run(args, failed_logs):
    """The test; raises Failure. On failure, the tails of the processes'
    logs go to `failed_logs`."""
    dashboards = load_dashboards(args.dashboards)
    provisioning = os.path.join(ROOT, "deploy", "grafana", "provisioning", "datasources",
                                "collbench.yaml")
    problems = check_structure(dashboards, provisioning)
    expect(not problems, "dashboard structure:\n  " + "\n  ".join(problems))

    c = ObservedCluster(args.bin_dir)
    ok = False
    try:
        c.start_coordinator()
        c.wait_metrics()
        prom = c.start_prometheus(args.prometheus)
        started = time.time()

        def target_up():
            active = prom.api("targets").get("activeTargets", [])
            return any(t.get("health") == "up" for t in active)
        poll("Prometheus to scrape the coordinator", target_up, 30, 0.5)
        names = ["w1", "w2", "w3"]
        for name in names:
            c.start_worker(name, 2, args=("--label", "pool=" + POOL))
        c.wait_workers_ready(names)
        runs = produce_runs(c)
        produce_schedule(c, runs)
        done = time.time()
        wait_scraped(prom, done)
        metrics = c.metrics_text()
        check_transport_series(metrics)
        check_verdict_series(metrics)
        exported, families = exported_names(metrics)
        log("exported: %s" % ", ".join("%s (%s)" % kv for kv in sorted(families.items())))
        window = Window(started, time.time())
        problems, counts, used = evaluate_dashboards(dashboards, prom, window, exported)
        unused = sorted(f for f in families
                        if not any(u == f or u.startswith(f + "_") for u in used))
        if unused:
            print("note: exported but on no dashboard: %s" % ", ".join(unused))
        expect(not problems, "%d problems in %d expressions:\n  %s" % (
            len(problems), counts["expressions"], "\n  ".join(problems)))
        check_restart_keeps_series(c)
        print("PASS observability: %(dashboards)d dashboards, %(panels)d panels, "
              "%(expressions)d expressions, %(variables)d variables evaluated; shm and tcp "
              "apart; reference ratios and a scheduled check; series kept over a restart"
              % counts)
        ok = True
    finally:
        if not ok:
            for proc in c.popens:
                if hasattr(proc, "log_path"):
                    failed_logs.append("--- %s\n%s" % (os.path.basename(proc.log_path),
                                                       c.tail(proc, 25)))
        c.teardown(keep_dir=args.keep_logs and not ok)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin-dir", default=os.environ.get("COLLBENCH_BIN_DIR",
                                                            os.path.join(ROOT, "build", "bin")),
                        help="folder with collbench, collbench-coordinator, ... "
                             "(default: $COLLBENCH_BIN_DIR or build/bin)")
    parser.add_argument("--prometheus", default=os.environ.get("PROMETHEUS") or
                        shutil.which("prometheus"), help="the prometheus binary")
    parser.add_argument("--dashboards", default=os.path.join(ROOT, "dashboards"),
                        help="folder of dashboard JSON files")
    parser.add_argument("--keep-logs", action="store_true", help="keep the folder on failure")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    svc.VERBOSE = args.verbose
    if not args.prometheus or not os.access(args.prometheus, os.X_OK):
        print("SKIP observability: no prometheus binary (install Debian's `prometheus`, or "
              "pass --prometheus PATH)")
        return SKIP
    args.bin_dir = os.path.abspath(args.bin_dir)
    stop = svc.prepare_driver("prometheus_test", args.bin_dir, (
        "collbench", "collbench-coordinator", "collbench-worker", "collbench-rank"))
    if stop is not None:
        return stop
    started = time.monotonic()
    failed_logs = []
    try:
        run(args, failed_logs)
        return 0
    except Failure as e:
        print("FAIL observability %.1fs: %s" % (time.monotonic() - started, e))
    except Exception:  # a bug in the test itself, or an unexpected error
        print("FAIL observability %.1fs:\n%s" % (time.monotonic() - started,
                                                 traceback.format_exc()))
    for text in failed_logs:
        print(text)
    return 1


if __name__ == "__main__":
    sys.exit(main())
