#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`collbench suite` end to end: the built-in suites are listed, one suite's
ci profile runs on `collbench local --workers 4 --slots 4` with a kept store,
prints its tables with the paper's values and a verdict per checked row, and
the `suite show` it prints to run again renders, run as printed, the same
tables from the store. Bad input gets one
line naming what is wrong.

    suite_cli_test.py --bin-dir build/bin [--suite container-parity]

Exit code 0 on success, 1 on a failed expectation.
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

SUITES = ["container-gpu-libs", "dl-framework-scaling", "hbw-api-containers",
          "container-parity", "container-locality"]


def fail(message):
    sys.stderr.write("FAIL: %s\n" % message)
    sys.exit(1)


def collbench(bin_dir, *args, timeout=600):
    started = time.monotonic()
    done = subprocess.run([os.path.join(bin_dir, "collbench")] + list(args),
                          capture_output=True, text=True, timeout=timeout)
    return done, time.monotonic() - started


def tables(output):
    """The tables' text: from the first '== ' line up to the agreement line."""
    start = output.find("\n== ")
    end = output.find("# paper checks:")
    if start < 0 or end < 0:
        fail("no tables in the output:\n" + output)
    return output[start:end]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--suite", default="container-parity")
    args = parser.parse_args()

    listed, _ = collbench(args.bin_dir, "suite", "list")
    if listed.returncode != 0:
        fail("suite list: exit %d: %s" % (listed.returncode, listed.stderr))
    for name in SUITES:
        if name not in listed.stdout:
            fail("suite list does not show %s:\n%s" % (name, listed.stdout))

    bad, _ = collbench(args.bin_dir, "suite", "run", "no-such-suite")
    if bad.returncode != 2 or "no suite 'no-such-suite'" not in bad.stderr:
        fail("an unknown suite: exit %d, stderr %r" % (bad.returncode, bad.stderr))
    bad, _ = collbench(args.bin_dir, "local", "--workers", "1", "suite", "run", args.suite,
                       "--profile", "huge")
    if bad.returncode != 2 or "no profile 'huge'" not in bad.stderr:
        fail("an unknown profile: exit %d, stderr %r" % (bad.returncode, bad.stderr))

    work = tempfile.mkdtemp(prefix="collbench-suite-test.")
    try:
        store = os.path.join(work, "runs.db")
        ran, seconds = collbench(args.bin_dir, "local", "--workers", "4", "--slots", "4",
                                 "--store", store, "suite", "run", args.suite)
        sys.stdout.write(ran.stdout)
        if ran.returncode != 0:
            fail("suite run %s: exit %d\n%s" % (args.suite, ran.returncode, ran.stderr[-3000:]))
        print("# suite run took %.0f s" % seconds)
        match = re.search(r"^# suite run: (\S+)$", ran.stdout, re.M)
        if not match:
            fail("the output names no suite run id")
        suite_run = match.group(1)
        # Progress went to stderr, one line per cell.
        if not re.search(r"^\[1/\d+\] ", ran.stderr, re.M):
            fail("no progress lines on stderr:\n" + ran.stderr[-2000:])
        shown = tables(ran.stdout)
        if "agrees" not in shown or not re.search(r"\b(yes|no) \(", shown):
            fail("no row carries a verdict against the paper")
        if "skipped: " not in shown:
            fail("the GPU rows are not listed as skipped with a reason")

        # `suite show` exactly as the run printed it, reaching the same store.
        printed = re.search(r"; again: (.*)$", ran.stdout, re.M)
        if not printed:
            fail("the suite run printed no again: command:\n" + ran.stdout[-1000:])
        argv = shlex.split(printed.group(1))
        if argv[-3:] != ["suite", "show", suite_run] or "--store" not in argv:
            fail("the again: command does not show this suite run from its store: %r"
                 % printed.group(1))
        again = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        if again.returncode != 0:
            fail("suite show, as printed: exit %d: %s" % (again.returncode, again.stderr))
        # Skip reasons are known only while the suite runs; show says the
        # cells were not run. Everything else must be the same.
        def comparable(text):
            return [line for line in text.splitlines() if "skipped: " not in line
                    and "not run in this suite run" not in line]
        if comparable(tables(again.stdout)) != comparable(shown):
            fail("suite show renders different tables:\n--- run\n%s\n--- show\n%s"
                 % (shown, tables(again.stdout)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
