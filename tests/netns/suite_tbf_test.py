#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The rate-limited rows of dl-framework-scaling, on hosts in namespaces.

Eight "hosts" are network namespaces on one bridge (198.18.2.0/24, names
cbtb-*), as in multihost_test.py. Hosts 1 to 4 keep the veth as it is;
hosts 5 to 8 are behind a tc tbf of 1 Gbit/s on both ends of their veth
(netns_hosts.shape_link). Every worker carries the labels saying so:
hosts=netns and link=veth or link=tbf-1gbit (collbench-worker --label). The
test then runs `collbench suite run dl-framework-scaling` (ci profile) and
checks that

  1. `collbench workers --long` shows each worker's labels;
  2. the suite's veth rows ran instead of being skipped, and on workers
     carrying their labels: netpipe's tcp-veth (two link=veth workers) and
     tcp-veth-1g (two link=tbf-1gbit workers), and scaling's slow-1g (4
     ranks on the four tbf workers). Scaling's unlabelled slow row (SPREAD)
     lands where the scheduler puts it: hosts 1 to 4, unshaped, as it
     fills workers in name order;
  3. at 1 MiB, table B1's NetPIPE-style throughput of tcp-veth-1g is at most
     the 1 Gbit/s line rate (125 MB/s, plus 5% for the tbf's burst), and
     tcp-veth's is at least twice it;
  4. table B4 has a slow-1g column with a scaling efficiency at 4 ranks.

The suite's output (its tables) is printed. Needs root, `ip netns` and `tc`;
exits 77 (skipped) otherwise. Everything it creates is named cbtb-* and
removed at the end, also on failure (netns_hosts.run_test); one netns test
at a time (the shared lock file).

  suite_tbf_test.py --bin-dir build/bin [--keep-logs]
"""

import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netns_hosts import (TBF_LINK_LABEL, Cluster, Failure, Network, check_reachable,  # noqa: E402
                         log, run_test, sh, stored_run)

NETWORK = Network("cbtb-", "198.18.2", host_count=8, shaped=(5, 6, 7, 8))
SUITE = "dl-framework-scaling"
LINE_RATE_MBPS = 125.0  # 1 Gbit/s in MB/s (10^6 bytes), as the suite's throughput_MBps
# The labelled cells and the link=... label of the workers each must run on.
LABELLED_CELLS = {"netpipe:transport=tcp-veth": "veth",
                  "netpipe:transport=tcp-veth-1g": TBF_LINK_LABEL,
                  "scaling:fabric=slow-1g": TBF_LINK_LABEL}


def parse_tables(text):
    """{table id: (columns, [row dicts])} from a suite's printed tables: a
    '== ID title' line, the header, rows until a blank or note line. Columns
    are cut where the header's names start (cells may hold spaces)."""
    tables, lines, i = {}, text.splitlines(), 0
    while i < len(lines):
        m = re.match(r"== (\S+) ", lines[i])
        if not m or i + 1 >= len(lines):
            i += 1
            continue
        header = lines[i + 1]
        starts = [mm.start() for mm in re.finditer(r"\S+", header)]
        names = header.split()
        rows, i = [], i + 2
        while i < len(lines) and lines[i].strip() and not lines[i].startswith(("   ", "==", "#")):
            line = lines[i]
            rows.append({name: line[start:(starts[k + 1] if k + 1 < len(starts) else None)].strip()
                         for k, (name, start) in enumerate(zip(names, starts))})
            i += 1
        tables[m.group(1)] = (names, rows)
    return tables


def number(table_id, row, column):
    try:
        return float(row[column])
    except (KeyError, ValueError):
        raise Failure(f"table {table_id}: no number in column {column} of {row}")


class Test(Cluster):
    def check_labels(self):
        out = self.cli("workers", "--long").stdout
        log(f"workers:\n{out.rstrip()}")
        for ns in self.net.host_names():
            want = ",".join(f"{k}={v}" for k, v in sorted(self.net.link_labels(ns).items()))
            block = re.search(rf"^workers/{ns}: .*?(?=^workers/|\Z)", out, re.M | re.S)
            if block is None or f"    labels {want}\n" not in block.group(0):
                raise Failure(f"`collbench workers --long` does not show {ns}'s labels {want}")

    def check_shaping(self):
        for ns in self.net.host_names():
            _, outside = sh(["tc", "qdisc", "show", "dev", ns])
            _, inside = sh(["ip", "netns", "exec", ns, "tc", "qdisc", "show", "dev", "eth0"])
            shaped = "tbf" in outside and "tbf" in inside
            if shaped != (ns in self.net.shaped):
                raise Failure(f"{ns}: tbf {'missing' if not shaped else 'unexpected'}: "
                              f"{outside.strip()} / {inside.strip()}")

    def run_suite(self):
        result = self.cli("suite", "run", SUITE, "--profile", "ci", timeout=420, check=False)
        print(f"---- collbench suite run {SUITE} --profile ci\n{result.stdout}", flush=True)
        log(f"suite progress:\n{result.stderr.rstrip()}")
        if result.returncode != 0:
            raise Failure(f"suite run exited {result.returncode}:\n{result.stderr}")
        return result.stdout, result.stderr

    def check_suite(self, out, progress):
        for cell, link in LABELLED_CELLS.items():
            m = re.search(rf"\] {re.escape(cell)} \.\.\. (runs/\S+) succeeded", progress)
            if not m:
                raise Failure(f"{cell} did not run and succeed:\n{progress}")
            if re.search(rf"skipped:.*{re.escape(cell.split(':')[1])}(?![\w-])", out):
                raise Failure(f"{cell} is listed as skipped:\n{out}")
            hosts = [host for _, host, _ in stored_run(self.store, m.group(1))["placement"]]
            log(f"{cell}: {m.group(1)} on {hosts}")
            if not hosts or any(self.net.link_labels(h)["link"] != link for h in hosts):
                raise Failure(f"{cell} ran on {hosts}, not only on link={link} workers")
        tables = parse_tables(out)
        if "B1" not in tables or "B4" not in tables:
            raise Failure(f"tables B1 and B4 not both printed: {sorted(tables)}")
        _, b1 = tables["B1"]
        row = next((r for r in b1 if r.get("bytes", r.get("@bytes")) in ("1M", "1048576")), None)
        if row is None:
            raise Failure(f"B1 has no 1 MiB row: {b1}")
        shaped = number("B1", row, "tcp-veth-1g")
        unshaped = number("B1", row, "tcp-veth")
        log(f"B1 at 1 MiB: tcp-veth {unshaped:.1f} MB/s, tcp-veth-1g {shaped:.1f} MB/s "
            f"(line rate {LINE_RATE_MBPS:.0f} MB/s)")
        if shaped > LINE_RATE_MBPS * 1.05:
            raise Failure(f"tcp-veth-1g at 1 MiB: {shaped} MB/s, above the 1 Gbit/s line rate")
        if unshaped < 2 * shaped:
            raise Failure(f"tcp-veth ({unshaped} MB/s) is not clearly above tcp-veth-1g "
                          f"({shaped} MB/s) at 1 MiB")
        columns, b4 = tables["B4"]
        if "slow-1g" not in columns:
            raise Failure(f"B4 has no slow-1g column: {columns}")
        row = next((r for r in b4 if "4" in r.values()), None)
        if row is None:
            raise Failure(f"B4 has no row for 4 ranks: {b4}")
        log(f"B4 at 4 ranks: efficiency fast {row.get('fast')}, slow {row.get('slow')}, "
            f"slow-1g {number('B4', row, 'slow-1g')}")

    def main(self):
        port = self.timed("coordinator start", self.start_coordinator)
        self.timed("reachability", check_reachable, self.net, port)
        self.check_shaping()
        self.start_workers(mpi_interface=self.net.cidr, slots=4, labels=self.net.link_labels)
        self.timed("workers registered", self.wait_for_workers)
        self.check_labels()
        started = time.monotonic()
        out, progress = self.run_suite()
        self.record(f"suite {SUITE} (ci)", time.monotonic() - started)
        self.check_suite(out, progress)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True, help="folder with collbench, "
                        "collbench-coordinator, collbench-worker and the rank binaries")
    parser.add_argument("--keep-logs", action="store_true", help="keep the logs also on success")
    args = parser.parse_args()
    assert TBF_LINK_LABEL == "tbf-1gbit"  # what the suite's -1g rows need
    return run_test(NETWORK, f"suite {SUITE} over a tbf link", args.bin_dir, Test.main,
                    make_cluster=Test, keep_logs=args.keep_logs)


if __name__ == "__main__":
    sys.exit(main())
