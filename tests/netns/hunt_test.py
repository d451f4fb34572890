#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hunts: find the bad node and the bad link among six netns hosts.

Six "hosts" are network namespaces on one bridge (198.18.4.0/24, names
cbhn-*), a worker with one slot in each. The test

  1. slows host 3's link (a tc tbf of 200 Mbit/s on both ends of its veth;
     the kernel here has no netem, so no added delay): `collbench hunt
     --pattern all --output json` exits 3 and names exactly that worker
     CONFIRMED_BAD, no other; the worker is SUSPECT in `collbench workers`,
     in REST and in /metrics (collbench_workers{state="SUSPECT"} 1, and
     collbench_node_health 0 for its node alone); an
     ordinary 5-rank run is placed on the five others; `workers clear` on a
     worker that is not SUSPECT is refused;
     then collbench-kube against a test Kubernetes API server holding a
     Node per host (kube_nodes.py; skipped with a message without kubectl
     or PyYAML): --dry-run writes nothing; a circuit breaker below one
     node's share withholds the quarantine and says so; watching, with
     --taint, it sets exactly host 3's condition, label and taint and the
     others' healthy, as `kubectl get node -o json` reads them;
  2. removes the tbf and hunts again (pairwise): no suspect, exit 0, and the
     hunt, having measured host 3 healthy, clears its SUSPECT state, and
     collbench-kube its node (condition False, label healthy, no taint);
  3. slows only the link between hosts 2 and 5 (an htb class of 200 Mbit/s
     with a u32 filter on the other's address, on both hosts' eth0): the
     pairwise hunt reports LINK_SUSPECT for that pair and no CONFIRMED_BAD;
  4. puts hosts 5 and 6 on a bridge of their own (their rack's switch),
     joined to the main bridge by a veth (its uplink) with a 200 Mbit/s tbf
     on both ends; the workers carry collbench.io/rack labels (rack-1: hosts
     1, 2; rack-2: 3, 4; rack-3: 5, 6): `collbench hunt --pattern topology`
     names rack-3 RACK_SUSPECT, quarantines none of its workers and names no
     node CONFIRMED_BAD; the rack's own link is then restored;
  5. with nothing slowed, hunts --repetitions more times (default 1) and
     counts the hunts with no suspect (the acceptance asks for 9 of 10).
It also checks that a pairwise round's runs overlap in time (they run at
once on their disjoint hosts), and, where Debian's chromium is installed,
opens the slow-node hunt's /ui/workflows/ID and its report in it (signed
in with the read token): no console error, a heat-map cell for each way of
each measured pair, the suspect marked on the heat map and the per-worker
plot and coloured in the suspects table; screenshots go to
$COLLBENCH_UI_ARTIFACTS (default BIN_DIR/../test-artifacts/ui).

Needs root, `ip netns` and `tc`; exits 77 (skipped) otherwise. Everything it
creates is named cbhn-* (or lives in its folder) and is removed at the end,
also on failure; one netns test at a time.

  hunt_test.py --bin-dir build/bin [--repetitions N] [--keep-logs]
"""

import argparse
import json
import tempfile
import os
import re
import shutil
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netns_hosts import (Cluster, Failure, Network, check_reachable, log,  # noqa: E402
                         rate_limit_host, run_test, sh)
import kube_nodes  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ui"))
import cdp  # noqa: E402  (headless chromium over the DevTools protocol)

NETWORK = Network("cbhn-", "198.18.4", host_count=6)
RATE = "200mbit"
HUNT = ["--sizes", "64K", "--time-per-size", "0.5s", "--transport", "tcp"]
REPETITIONS = 1
TRIES = 3
RACK_LABEL = "collbench.io/rack"


def rack_of(ns):
    """rack-1 for hosts 1 and 2, rack-2 for 3 and 4, rack-3 for 5 and 6."""
    return f"rack-{(NETWORK.host_names().index(ns)) // 2 + 1}"


def rack_switch(hosts, on):
    """The hosts' veths on a bridge of their own joined to the main one by a
    veth, the rack's uplink, with a tbf of RATE on both of its ends (on); or
    back on the main bridge, the rack's bridge and uplink removed (off).
    Every name starts with the network's prefix: removed also on failure."""
    bridge, up, down = f"{NETWORK.prefix}rk", f"{NETWORK.prefix}up", f"{NETWORK.prefix}upr"
    if on:
        sh(["ip", "link", "add", bridge, "type", "bridge"])
        sh(["ip", "link", "set", bridge, "up"])
        sh(["ip", "link", "add", up, "type", "veth", "peer", "name", down])
        sh(["ip", "link", "set", up, "master", NETWORK.bridge])
        sh(["ip", "link", "set", down, "master", bridge])
        for end in (up, down):
            sh(["ip", "link", "set", end, "up"])
            sh(["tc", "qdisc", "replace", "dev", end, "root", "tbf", "rate", RATE, "burst",
                "64kb", "latency", "50ms"])
        for ns in hosts:
            sh(["ip", "link", "set", ns, "master", bridge])
        log(f"{' '.join(hosts)} behind an uplink of {RATE}")
    else:
        for ns in hosts:
            sh(["ip", "link", "set", ns, "master", NETWORK.bridge], check=False)
        sh(["ip", "link", "del", up], check=False)
        sh(["ip", "link", "del", bridge], check=False)
        log(f"{' '.join(hosts)} back on the main bridge")


def slow_host(ns, on):
    """A tbf on both ends of host `ns`'s veth (on), or none (off)."""
    rate_limit_host(ns, RATE if on else None)


def slow_link(a, b, on):
    """Traffic from a to b and from b to a through a 200 Mbit/s htb class,
    the rest unshaped (on), or no qdisc (off)."""
    addresses = dict(NETWORK.hosts)
    for ns, peer in ((a, b), (b, a)):
        tc = ["ip", "netns", "exec", ns, "tc"]
        if not on:
            sh([*tc, "qdisc", "del", "dev", "eth0", "root"], check=False)
            continue
        sh([*tc, "qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "htb", "default",
            "10"])
        sh([*tc, "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:10", "htb",
            "rate", "40gbit"])
        sh([*tc, "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:20", "htb",
            "rate", RATE])
        sh([*tc, "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "u32",
            "match", "ip", "dst", f"{addresses[peer]}/32", "flowid", "1:20"])
    log(f"link {a} <-> {b}: {'htb ' + RATE if on else 'as it is'}")


def http_get(url, token, timeout=10):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read().decode()


class Test(Cluster):
    repetitions = REPETITIONS
    kube = None

    def kube_lab(self):
        """The test API server and its nodes, or None (saying why) where
        kubectl or PyYAML is missing."""
        if shutil.which("kubectl") is None:
            log("SKIP collbench-kube part: kubectl is not installed")
            return None
        try:
            import yaml  # noqa: F401
        except ImportError:
            log("SKIP collbench-kube part: python3-yaml is not installed")
            return None
        self.kube = kube_nodes.KubeLab(self)
        return self.kube

    def hunt(self, *argv, expect_rc=None):
        start = time.monotonic()
        result = self.cli("hunt", *HUNT, *argv, "--output", "json", check=False, timeout=600)
        m = re.search(r"(workflows/hunt-\S+):", result.stderr)
        self.last_workflow = m.group(1) if m else None
        took = time.monotonic() - start
        if result.returncode not in (0, 3):
            raise Failure(f"collbench hunt {' '.join(argv)} exited {result.returncode}:\n"
                          f"{result.stdout}{result.stderr}")
        if expect_rc is not None and result.returncode != expect_rc:
            raise Failure(f"collbench hunt {' '.join(argv)} exited {result.returncode}, not "
                          f"{expect_rc}:\n{result.stdout}{result.stderr}")
        data = json.loads(result.stdout)
        summary = [(s["worker"], s["verdict"], s.get("peers", []), round(s["ratio"], 2))
                   for s in data.get("suspects", [])]
        log(f"hunt {' '.join(argv)}: {took:.1f}s, {len(data.get('pairs', []))} pair runs, "
            f"suspects {summary}")
        for m in data.get("pairs", []) + data.get("groups", []):
            names = " ".join(w.split("/")[-1] for w in m["workers"])
            print(f"  {m['phase']:8} r{m['round']:<2} {names:40} "
                  f"{m['busbw_bytes_per_s'] / 1e6:9.1f} MB/s ratio {m['ratio']:.2f} "
                  f"z {m['z']:6.1f}{' slow' if m['slow'] else ''}{' ' + m['error'] if m['error'] else ''}",
                  flush=True)
        return data, result.returncode

    def rest_run(self, run):
        return json.loads(http_get(f"http://{self.http_address}/v1/{run}", self.tokens["read"]))

    def state_of(self, worker):
        return self.worker_states()[worker][0]

    def check_rounds_overlap(self, data):
        """Runs of one pairwise round ran at the same time."""
        rounds = {}
        for pair in data["pairs"]:
            if pair["phase"] == "pairwise":
                rounds.setdefault(pair["round"], []).append(pair["run"])
        runs = max(rounds.values(), key=len)
        if len(runs) < 2:
            raise Failure(f"no pairwise round has two runs: {rounds}")
        spans = []
        for run in runs:
            stored = self.rest_run(run)
            spans.append((stored["startTime"], stored["endTime"]))
        latest_start = max(s for s, _ in spans)
        earliest_end = min(e for _, e in spans)
        if not latest_start < earliest_end:
            raise Failure(f"the runs of one round did not overlap: {spans}")
        log(f"a round's {len(runs)} runs overlapped in time: {spans}")

    def check_pages(self, workflow, data):
        """The hunt's page and report in chromium (skipped without it)."""
        binary = cdp.find_chromium()
        if binary is None:
            log("SKIP the browser check: chromium not found (apt-get install chromium)")
            return
        out = os.environ.get("COLLBENCH_UI_ARTIFACTS") or os.path.join(
            self.bin, "..", "test-artifacts", "ui")
        os.makedirs(out, exist_ok=True)
        origin = f"http://{self.http_address}"
        wid = workflow.split("/", 1)[1]
        pairs = sum(1 for m in data["pairs"] if m["phase"] == "pairwise")
        confirmed = [s["worker"] for s in data["suspects"] if s["verdict"] == "CONFIRMED_BAD"]
        suspect = (confirmed or [data["suspects"][0]["worker"]])[0]
        browser = cdp.Browser(binary, tempfile.mkdtemp(prefix="cbhn-chromium.", dir=self.workdir))
        try:
            page = browser.new_page(width=1300, height=1000)
            page.navigate(f"{origin}/ui/")
            page.mark = len(page.browser.events)
            page.evaluate("document.querySelector('input[name=token]').value = %s;"
                          "document.querySelector('form.login').submit(); true"
                          % json.dumps(self.tokens["read"]))
            deadline = time.monotonic() + 20
            while not page.events("Page.loadEventFired"):
                if time.monotonic() > deadline:
                    raise Failure("signing in to /ui/ loaded no page")
                page.browser.pump(0.2)
            for path, name in ((f"/ui/workflows/{wid}", "ui-hunt.png"),
                               (f"/ui/workflows/{wid}/report", "ui-hunt-report.png")):
                page.navigate(origin + path)
                errors = page.errors()
                if errors:
                    raise Failure(f"{path}: console errors or exceptions: {errors}")
                outside = [u for u in page.requests() if not u.startswith(origin + "/")]
                if outside:
                    raise Failure(f"{path}: requests outside {origin}: {outside}")
                found = page.evaluate(
                    "[document.querySelectorAll('svg.hunt-heatmap rect.cell').length,"
                    " document.querySelectorAll('svg.hunt-heatmap g.suspect[data-worker=%s]')"
                    ".length, document.querySelectorAll('svg.hunt-distribution circle.worker')"
                    ".length, document.querySelectorAll('svg.hunt-distribution g.suspect')"
                    ".length, Array.from(document.querySelectorAll('td')).filter(function (td) {"
                    " return td.textContent === 'CONFIRMED_BAD' &&"
                    " td.className.indexOf('verdict-regression') >= 0; }).length]"
                    % json.dumps(suspect))
                # Every suspect gets a ring, an INCONCLUSIVE one that noise made
                # included; the CONFIRMED_BAD ones a red verdict cell each.
                expected = [2 * pairs, 1, len(data["workers"]), len(data["suspects"]),
                            len(confirmed)]
                if found != expected:
                    raise Failure(f"{path}: [cells, suspect marks, worker dots, suspect rings, "
                                  f"red CONFIRMED_BAD cells] = {found}, not {expected}")
                page.screenshot(os.path.join(out, name), full_page=True)
            log(f"the hunt's page and report render in chromium ({2 * pairs} heat-map cells, "
                f"the suspect marked); screenshots in {out}")
        finally:
            browser.close()

    def bad_node(self):
        bad = self.net.hosts[2][0]
        slow_host(bad, True)
        try:
            data, _ = self.hunt("--pattern", "all", expect_rc=3)
        finally:
            slow_host(bad, False)
        self.check_pages(self.last_workflow, data)
        confirmed = [s["worker"] for s in data["suspects"] if s["verdict"] == "CONFIRMED_BAD"]
        if confirmed != [f"workers/{bad}"]:
            raise Failure(f"CONFIRMED_BAD {confirmed}, not [workers/{bad}]: {data['suspects']}")
        suspect = data["suspects"][0]
        if not suspect["runs"] or suspect["ratio"] > 0.5 or suspect["z"] > -3:
            raise Failure(f"the suspect's evidence is thin: {suspect}")
        if not suspect.get("quarantined"):
            raise Failure(f"the CONFIRMED_BAD worker was not marked SUSPECT: {suspect}")
        self.check_rounds_overlap(data)
        if self.state_of(bad) != "suspect":
            raise Failure(f"`collbench workers` shows {bad} {self.state_of(bad)}, not suspect")
        worker = json.loads(http_get(f"http://{self.http_address}/v1/workers/{bad}",
                                     self.tokens["read"]))
        shown = self.cli("workers").stdout
        if f"workers/{bad}: SUSPECT since" not in shown:
            raise Failure(f"`collbench workers` gives no reason for {bad}:\n{shown}\n{worker}")
        if worker["state"] != "SUSPECT" or "CONFIRMED_BAD" not in worker["suspect"]["reason"]:
            raise Failure(f"REST shows {worker['state']}: {worker.get('suspect')}")
        metrics = http_get(f"http://{self.http_address}/metrics", self.tokens["read"])
        m = re.search(r'collbench_workers\{state="suspect"\} (\S+)', metrics)
        if not m or float(m.group(1)) != 1:
            raise Failure("collbench_workers{state=\"suspect\"} is not 1: "
                          + (m.group(0) if m else "absent"))
        # Per node: 0 for the bad one (its host id is its namespace), 1 for the others.
        health = {n: float(v) for n, v in
                  re.findall(r'collbench_node_health\{node="([^"]+)",worker="[^"]+"\} (\S+)',
                             metrics)}
        if health != {ns: (0.0 if ns == bad else 1.0) for ns in self.net.host_names()}:
            raise Failure(f"collbench_node_health is {health}, not 0 for {bad} alone")
        run = self.create_run("allreduce", "--ranks", "5", "--placement", "spread",
                              "--transport", "tcp", "--sizes", "1K", "--iters", "20")
        stored = self.wait_for_run(run, ("succeeded", "failed", "cancelled"), 120)
        placed = self.rest_run(run)["hosts"]
        workers = sorted(h["worker"] for h in placed)
        if stored["state"] != "succeeded" or f"workers/{bad}" in workers:
            raise Failure(f"the ordinary run {run} ({stored['state']}) was placed on {workers}")
        log(f"the next ordinary run avoided the SUSPECT worker: {workers}")
        refused = self.cli("workers", "clear", self.net.hosts[0][0], check=False)
        if refused.returncode == 0 or "is not SUSPECT" not in refused.stderr:
            raise Failure(f"workers clear of a worker that is not SUSPECT: {refused.returncode} "
                          f"{refused.stderr}")
        return bad

    def hunt_until(self, expected, done):
        """Pairwise hunts until `done(data, rc)` holds, at most TRIES of them.

        Six ranks that poll for messages share this machine's two cores, so a
        healthy pair can measure several times slower than the median when
        its round is unlucky, and a hunt's statistics have no model of that
        noise yet: one hunt may report noise as a suspect, or miss a slow
        link among widely spread healthy pairs. `done` may raise for what no
        hunt may do."""
        for attempt in range(1, TRIES + 1):
            data, rc = self.hunt("--pattern", "pairwise")
            if done(data, rc):
                return data
            log(f"hunt {attempt} of {TRIES} did not find {expected}: "
                f"{[(s['worker'], s['verdict']) for s in data['suspects']]}")
        raise Failure(f"{TRIES} hunts did not find {expected}, the last: {data['suspects']}")

    def cleared_by_a_healthy_hunt(self, bad):
        # A node that measures healthy is cleared by the first hunt that
        # finds no suspect.
        data = self.hunt_until("no suspect with nothing slowed",
                               lambda data, rc: rc == 0 and not data["suspects"])
        if f"workers/{bad}" not in data.get("cleared", []):
            raise Failure(f"the healthy hunt did not clear {bad}: {data.get('cleared')}")
        if self.state_of(bad) != "ready":
            raise Failure(f"{bad} is {self.state_of(bad)} after the hunt cleared it")
        metrics = http_get(f"http://{self.http_address}/metrics", self.tokens["read"])
        if f'collbench_node_health{{node="{bad}",worker="{bad}"}} 1' not in metrics:
            raise Failure(f"collbench_node_health of {bad} is not back to 1")
        log(f"a hunt that measured {bad} healthy cleared it")

    def bad_link(self):
        a, b = self.net.hosts[1][0], self.net.hosts[4][0]
        pair = {f"workers/{a}", f"workers/{b}"}

        def link_suspect(data, _):
            if any(s["verdict"] == "CONFIRMED_BAD" for s in data["suspects"]):
                raise Failure(f"a slow link made a CONFIRMED_BAD: {data['suspects']}")
            links = [s for s in data["suspects"] if s["verdict"] == "LINK_SUSPECT"]
            return len(links) == 1 and {links[0]["worker"], *links[0]["peers"]} == pair

        slow_link(a, b, True)
        try:
            data = self.hunt_until(f"the LINK_SUSPECT {sorted(pair)}", link_suspect)
        finally:
            slow_link(a, b, False)
        link = next(s for s in data["suspects"] if s["verdict"] == "LINK_SUSPECT")
        log(f"LINK_SUSPECT for {sorted(pair)}: {link['evidence']}")

    def bad_rack(self):
        rack = [ns for ns in self.net.host_names() if rack_of(ns) == "rack-3"]

        def rack_suspect(data, _):
            confirmed = [s["worker"] for s in data["suspects"] if s["verdict"] == "CONFIRMED_BAD"]
            if confirmed:
                raise Failure(f"a slow uplink made CONFIRMED_BAD nodes {confirmed}: "
                              f"{data['suspects']}")
            racks = [s for s in data["suspects"] if s["verdict"] == "RACK_SUSPECT"]
            return len(racks) == 1 and racks[0]["rack"] == "rack-3"

        rack_switch(rack, True)
        try:
            data = None
            for attempt in range(1, TRIES + 1):
                data, _ = self.hunt("--pattern", "topology")
                if rack_suspect(data, None):
                    break
                log(f"topology hunt {attempt} of {TRIES} did not name rack-3: "
                    f"{[(s['worker'] or s['rack'], s['verdict']) for s in data['suspects']]}")
            else:
                raise Failure(f"{TRIES} topology hunts did not name rack-3, the last: "
                              f"{data['suspects']}")
        finally:
            rack_switch(rack, False)
        suspect = next(s for s in data["suspects"] if s["verdict"] == "RACK_SUSPECT")
        if sorted(suspect["peers"]) != sorted(f"workers/{ns}" for ns in rack):
            raise Failure(f"the rack's workers are {suspect['peers']}, not {rack}")
        phases = {m["phase"] for m in data["pairs"]}
        if not {"within", "across", "random"} <= phases:
            raise Failure(f"the topology hunt's phases are {sorted(phases)}")
        states = {ns: self.state_of(ns) for ns in rack}
        if any(state != "ready" for state in states.values()):
            raise Failure(f"a RACK_SUSPECT quarantined its nodes: {states}")
        log(f"RACK_SUSPECT rack-3: {suspect['evidence']}")

    def main(self):
        port = self.timed("coordinator start", self.start_coordinator, http=True)
        self.timed("reachability", check_reachable, self.net, port)
        self.start_workers(mpi_interface=self.net.cidr, slots=1,
                           labels=lambda ns: {RACK_LABEL: rack_of(ns)})
        self.timed("workers registered", self.wait_for_workers)
        bad = self.timed("a slow node", self.bad_node)
        kube = self.kube_lab()
        if kube:
            self.timed("collbench-kube degrades its node", kube_nodes.check_degraded_node, kube,
                       bad, self.net.host_names())
        self.timed("a healthy hunt clears it", self.cleared_by_a_healthy_hunt, bad)
        if kube:
            self.timed("collbench-kube clears its node", kube_nodes.check_cleared_node, kube, bad)
            kube.stop()
            self.kube = None
        self.timed("a slow link", self.bad_link)
        self.timed("a slow rack uplink", self.bad_rack)
        clean = 1  # the hunt that cleared the node found no suspect
        outcomes = ["no suspect"]
        for _ in range(self.repetitions - 1):
            data, _ = self.hunt("--pattern", "pairwise")
            clean += not data["suspects"]
            outcomes.append("no suspect" if not data["suspects"] else
                            ", ".join(f"{s['worker']} {s['verdict']}" for s in data["suspects"]))
        log(f"nothing slowed: {clean} of {self.repetitions} hunts found no suspect: {outcomes}")
        if self.repetitions >= 10 and clean < 9:
            raise Failure(f"only {clean} of {self.repetitions} hunts with nothing slowed had no "
                          "suspect")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True, help="folder with collbench, "
                        "collbench-coordinator, collbench-worker and the rank binaries")
    parser.add_argument("--repetitions", type=int, default=REPETITIONS,
                        help="hunts with nothing slowed (counting the one that clears)")
    parser.add_argument("--keep-logs", action="store_true", help="keep the logs also on success")
    args = parser.parse_args()
    if shutil.which("tc") is None:
        print("SKIP: tc is not installed", flush=True)
        return 77
    Test.repetitions = max(1, args.repetitions)
    return run_test(NETWORK, "hunts: a slow node, a slow link, nothing slowed", args.bin_dir,
                    Test.main, make_cluster=Test, keep_logs=args.keep_logs,
                    cleanups=[lambda cluster: cluster.kube and cluster.kube.stop()])


if __name__ == "__main__":
    sys.exit(main())
