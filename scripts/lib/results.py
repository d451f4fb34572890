#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads collbench-rank JSON lines and prints them for people.

  results.py table FILE.jsonl             the size records as a table
  results.py compare A.jsonl... -- B.jsonl...
                                          side by side: which side is faster
                                          for each operation and size
"""
import json
import sys


def read(path):
    start, sizes = None, []
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if record["kind"] == "start":
                start = record
            elif record["kind"] == "size":
                sizes.append(record)
            elif record["kind"] == "error":
                print(f"error in {path}: {record['message']}")
    return start, sizes


def table(path):
    start, sizes = read(path)
    if start:
        print(f"# {start['spec']['operation']}: {start['nranks']} ranks, {start['mpi_version']}")
    print(f"{'bytes':>10} {'avg_us':>10} {'p50_us':>10} {'p99_us':>10} "
          f"{'algbw_GBps':>11} {'busbw_GBps':>11} {'wrong':>6}")
    for r in sizes:
        print(f"{r['bytes']:>10} {r['avg_s']*1e6:>10.2f} {r['p50_s']*1e6:>10.2f} "
              f"{r['p99_s']*1e6:>10.2f} {r['algbw_Bps']/1e9:>11.3f} "
              f"{r['busbw_Bps']/1e9:>11.3f} {r['wrong']:>6}")


def library(start):
    return start["mpi_library"] if start else "?"


def compare(left_paths, right_paths):
    def collect(paths):
        by_key, name = {}, "?"
        for path in paths:
            start, sizes = read(path)
            name = library(start)
            for r in sizes:
                by_key[(r["operation"], r["bytes"])] = r
        return name, by_key

    left_name, left = collect(left_paths)
    right_name, right = collect(right_paths)
    print(f"{'operation':>10} {'bytes':>10} {left_name + ' us':>12} {right_name + ' us':>12} "
          f"{'ratio':>7}  winner")
    wins = {left_name: 0, right_name: 0}
    for key in sorted(set(left) & set(right)):
        a, b = left[key]["avg_s"], right[key]["avg_s"]
        winner = left_name if a <= b else right_name
        wins[winner] += 1
        print(f"{key[0]:>10} {key[1]:>10} {a*1e6:>12.2f} {b*1e6:>12.2f} "
              f"{max(a, b)/min(a, b):>6.2f}x  {winner}")
    print("wins: " + ", ".join(f"{k} {v}" for k, v in wins.items()))


def main(argv):
    if len(argv) >= 2 and argv[0] == "table":
        for path in argv[1:]:
            table(path)
        return 0
    if len(argv) >= 3 and argv[0] == "compare" and "--" in argv:
        split = argv.index("--")
        compare(argv[1:split], argv[split + 1:])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
