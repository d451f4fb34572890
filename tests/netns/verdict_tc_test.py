#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Baselines, checks and a schedule against a link slowed with tc.

Two "hosts" are network namespaces on one bridge (198.18.3.0/24, names
cbvd-*), a worker in each. The test

  1. runs a 2-rank point-to-point bandwidth test over TCP across the two hosts and
     saves it as baseline `veth`; the results carry a % of limit (the
     workers declare link-rate=100gbit);
  2. slows host 2's link with a tc tbf of 200 Mbit/s on both ends of its
     veth, runs the same again and checks it: `collbench check` exits 3 and
     names the bw configuration a regression (also with --output json).
     The checks use --threshold 1 (slower by more than 100%): TCP between
     namespaces on a shared machine varies by tens of percent from run to
     run, the tbf slows the transfer about a hundredfold;
  3. removes the tbf, runs again: the check exits 0, nothing regressed;
  4. slows the link again and creates a schedule of the same run every 3 s
     against the baseline: a firing ends in `regression`, the coordinator's
     /metrics shows collbench_schedule_last_regressions >= 1 for it, and a
     real Prometheus, scraping the coordinator with the PrometheusRule's
     alert rules loaded, fires CollbenchScheduleRegression for it;
  5. removes the tbf: a later firing succeeds and the alert resolves;
  6. kills the coordinator with SIGKILL, leaves it down for more than two
     periods and restarts it on the same store and port: the schedule is
     there with its history, and the periods it missed make one firing, not
     one each.

Needs root, `ip netns`, `tc` and prometheus; exits 77 (skipped) otherwise.
Everything it creates is named cbvd-* (or lives in its folder) and is
removed at the end, also on failure; one netns test at a time.

  verdict_tc_test.py --bin-dir build/bin [--keep-logs]
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netns_hosts import (Cluster, Failure, Network, Skip, check_reachable, log,  # noqa: E402
                         rate_limit_host, run_test)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NETWORK = Network("cbvd-", "198.18.3", host_count=2)
# The slowed link: a token bucket of 200 Mbit/s on both ends of the veth
# (the kernel here has tbf; netem may be missing).
RATE = "200mbit"
RUN = ["bw", "--ranks", "2", "--placement", "spread", "--transport", "tcp",
       "--sizes", "64K", "--iters", "100", "--window", "8"]
THRESHOLD = "1"
RULES = os.path.join(ROOT, "deploy", "kubernetes", "components", "monitoring",
                     "prometheus-rule.yaml")


def slow(ns, on):
    """A tbf on both ends of host `ns`'s veth (on), or none (off)."""
    rate_limit_host(ns, RATE if on else None)


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


class Test(Cluster):
    prometheus = None

    def run_and_wait(self, what):
        run = self.create_run(*RUN)
        stored = self.wait_for_run(run, ("succeeded", "failed", "cancelled"), 120)
        if stored["state"] != "succeeded":
            raise Failure(f"{what}: {run} {stored['state']}: {stored['error']}")
        log(f"{what}: {run}")
        return run

    def check(self, run, expect_rc, json_output=False):
        argv = ["check", run, "--baseline", "veth", "--threshold", THRESHOLD] + \
            (["--output", "json"] if json_output else [])
        result = self.cli(*argv, check=False, timeout=60)
        print(result.stdout, flush=True)
        if result.returncode != expect_rc:
            raise Failure(f"collbench {' '.join(argv)} exited {result.returncode}, not "
                          f"{expect_rc}: {result.stdout}{result.stderr}")
        return result.stdout

    def start_prometheus(self):
        binary = shutil.which("prometheus")
        if binary is None:
            raise Skip("prometheus is not installed")
        import yaml  # Debian's python3-yaml, as tests/deploy uses
        with open(RULES) as f:
            rule = yaml.safe_load(f)
        rules_path = os.path.join(self.workdir, "rules.yml")
        with open(rules_path, "w") as f:
            yaml.safe_dump({"groups": rule["spec"]["groups"]}, f)
        config = os.path.join(self.workdir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    f"rule_files: ['{rules_path}']\n"
                    "scrape_configs:\n  - job_name: collbench-coordinator\n"
                    f"    static_configs:\n      - targets: ['{self.http_address}']\n")
        port = 19090 + os.getpid() % 500
        self.processes.start("prometheus", [binary, f"--config.file={config}",
                                            f"--storage.tsdb.path={self.workdir}/prom",
                                            f"--web.listen-address=127.0.0.1:{port}"],
                             os.path.join(self.workdir, "prometheus.log"))
        self.prometheus = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if "Ready" in http_get(f"{self.prometheus}/-/ready", timeout=2):
                    return
            except OSError:
                pass
            time.sleep(0.3)
        raise Failure("prometheus did not become ready")

    def alert_state(self, name, schedule):
        data = json.loads(http_get(f"{self.prometheus}/api/v1/alerts"))
        for alert in data["data"]["alerts"]:
            if alert["labels"].get("alertname") == name and \
                    alert["labels"].get("schedule") == schedule:
                return alert["state"]
        return None

    def wait_schedule(self, name, outcome, after_firings, timeout=90):
        deadline = time.monotonic() + timeout
        shown = ""
        while time.monotonic() < deadline:
            shown = self.cli("schedule", "show", name, timeout=20).stdout
            m = re.search(r"(\d+) firings", shown)
            rows = [line.split() for line in shown.splitlines()
                    if re.match(r"\d{4}-\d\d-\d\d ", line)]
            if m and int(m.group(1)) > after_firings and rows and rows[0][2] == outcome:
                print(shown, flush=True)
                return int(m.group(1))
            time.sleep(1)
        raise Failure(f"schedule {name}: no firing ended in {outcome} within {timeout}s:\n{shown}")

    def firings(self, name):
        shown = self.cli("schedule", "show", name, timeout=20).stdout
        m = re.search(r"(\d+) firings", shown)
        if not m:
            raise Failure(f"schedule show {name}: {shown}")
        return int(m.group(1)), shown

    def kill_and_restart(self, port):
        """SIGKILL the coordinator mid-schedule, down for over two periods of
        3 s, then back on the same store and port: one firing for the
        periods missed."""
        self.cli("schedule", "pause", "probe")
        self.cli("schedule", "resume", "probe")  # next firing a period on
        before, _ = self.firings("probe")
        coordinator = self.processes.get("coordinator")
        os.kill(coordinator.pid, signal.SIGKILL)
        self.processes.forget(coordinator)
        log(f"coordinator killed (SIGKILL) with {before} firings made")
        time.sleep(8)  # more than two periods of 3 s
        self.start_coordinator("--min-schedule-period", "1s", grpc_port=port, http=True)
        # The firing due is made at once (it waits for the workers to come
        # back within its window); the next one a period later.
        deadline = time.monotonic() + 20
        after, shown = self.firings("probe")
        while after == before and time.monotonic() < deadline:
            time.sleep(0.2)
            after, shown = self.firings("probe")
        print(shown, flush=True)
        if after != before + 1:
            raise Failure(f"after a restart {after - before} firings were made for the missed "
                          f"periods, not 1:\n{shown}")
        if self.cli("schedule", "list").stdout.count("schedules/probe") != 1:
            raise Failure("the schedule did not survive the kill")
        self.wait_schedule("probe", "succeeded", before)
        log("the schedule survived kill -9; the periods it missed made one firing")

    def main(self):
        port = self.timed("coordinator start", self.start_coordinator, "--min-schedule-period",
                          "1s", http=True)
        self.timed("reachability", check_reachable, self.net, port)
        self.start_workers(mpi_interface=self.net.cidr, slots=1,
                           labels=lambda ns: {"link-rate": "100gbit"})
        self.timed("workers registered", self.wait_for_workers)
        host2 = self.net.hosts[1][0]

        baseline_run = self.run_and_wait("baseline run")
        shown = self.cli("show", baseline_run).stdout
        print(shown, flush=True)
        if "%limit" not in shown or not re.search(r"\s\d+%\s", shown):
            raise Failure(f"`show {baseline_run}` has no % of limit:\n{shown}")
        out = self.cli("baseline", "save", "veth", baseline_run).stdout
        log(out.strip())

        slow(host2, True)
        slowed = self.run_and_wait("run over the slowed link")
        text = self.check(slowed, 3)
        if not re.search(r"regression\s+bw", text):
            raise Failure(f"the check names no bw regression:\n{text}")
        data = json.loads(self.check(slowed, 3, json_output=True))
        verdicts = [row["verdict"] for row in data["rows"]]
        if verdicts != ["regression"] or data["rows"][0]["ratio"] < 1.5:
            raise Failure(f"check --output json: {data}")
        if not any(f["name"] == "operation" and f["value"] == "bw"
                   for f in data["rows"][0]["key"]):
            raise Failure(f"the regressed row's key names no bw: {data['rows'][0]['key']}")

        slow(host2, False)
        restored = self.run_and_wait("run over the restored link")
        text = self.check(restored, 0)
        if "regression" in text.split("ok: no regression")[0].replace("0 regressions", ""):
            raise Failure(f"the restored link still shows a regression:\n{text}")

        self.start_prometheus()
        slow(host2, True)
        self.cli("schedule", "create", "probe", "--every", "3s", "--idle-window", "3s",
                 "--baseline", "veth", "--threshold", THRESHOLD, *RUN)
        firings = self.wait_schedule("probe", "regression", 0)
        metrics = http_get(f"http://{self.http_address}/metrics")
        m = re.search(r'collbench_schedule_last_regressions\{schedule="probe"\} (\S+)', metrics)
        if not m or float(m.group(1)) < 1:
            raise Failure("collbench_schedule_last_regressions{schedule=\"probe\"} is not >= 1: "
                          + (m.group(0) if m else "absent"))
        deadline = time.monotonic() + 60
        while self.alert_state("CollbenchScheduleRegression", "probe") != "firing":
            if time.monotonic() > deadline:
                raise Failure("Prometheus did not fire CollbenchScheduleRegression for probe")
            time.sleep(1)
        log("CollbenchScheduleRegression is firing for schedule probe")

        slow(host2, False)
        self.wait_schedule("probe", "succeeded", firings)
        deadline = time.monotonic() + 60
        while self.alert_state("CollbenchScheduleRegression", "probe") is not None:
            if time.monotonic() > deadline:
                raise Failure("CollbenchScheduleRegression did not resolve with the link restored")
            time.sleep(1)
        log("the alert resolved with the link restored")
        self.kill_and_restart(port)
        self.cli("schedule", "delete", "probe")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True, help="folder with collbench, "
                        "collbench-coordinator, collbench-worker and the rank binaries")
    parser.add_argument("--keep-logs", action="store_true", help="keep the logs also on success")
    args = parser.parse_args()
    if shutil.which("tc") is None:
        print("SKIP: tc is not installed", flush=True)
        return 77
    return run_test(NETWORK, "baselines and schedules over a slowed link", args.bin_dir,
                    Test.main, make_cluster=Test, keep_logs=args.keep_logs)


if __name__ == "__main__":
    sys.exit(main())
