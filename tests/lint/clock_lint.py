#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Time is injected (common/clock.h, docs/design/layout.md): the folders
given read the time only from a `const Clock*` and never sleep.

Refused in their sources: absl::Now(), absl::SleepFor(), RealClock(),
std::this_thread::sleep_for/_until, sleep(), usleep(), nanosleep(), and
including absl/time/clock.h. Only the wiring (server/app) hands out the
real clock. Comments are not code: a line's text after // is ignored.

Exit status: 0 when none is found, 1 naming each file:line otherwise.
Usage: clock_lint.py ROOT FOLDER...
       clock_lint.py --self-test   (plants each refused call in a temporary
                                    tree and expects it found, and a clean
                                    file not)
"""
import re
import sys
from pathlib import Path

from self_test_report import report

REFUSED = [
    (re.compile(r"\babsl::Now\s*\("), "absl::Now(): read the injected Clock"),
    (re.compile(r"\babsl::SleepFor\s*\("), "absl::SleepFor(): be driven by events"),
    (re.compile(r"\bRealClock\s*\("), "RealClock(): only server/app wires the real clock"),
    (re.compile(r"\bstd::this_thread::sleep_(for|until)\b"), "a sleep: be driven by events"),
    (re.compile(r"(?<![\w:.>])(u|nano)?sleep\s*\("), "a sleep: be driven by events"),
    (re.compile(r'#include\s+"absl/time/clock\.h"'), "absl/time/clock.h: the system clock"),
]


def code_of(line: str) -> str:
    """The line without a // comment (string literals with // are rare here)."""
    return line.split("//", 1)[0]


def check(root: Path, folders) -> list:
    problems = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".h", ".cc"):
                continue
            for number, line in enumerate(path.read_text().splitlines(), start=1):
                code = code_of(line)
                for pattern, why in REFUSED:
                    if pattern.search(code):
                        problems.append(f"{path.relative_to(root)}:{number}: {why}")
    return problems


PLANTED = [
    "absl::Time t = absl::Now();",
    "absl::SleepFor(absl::Seconds(1));",
    "const Clock* c = RealClock();",
    "std::this_thread::sleep_for(std::chrono::seconds(1));",
    "std::this_thread::sleep_until(t);",
    "sleep(1);",
    "usleep(10);",
    "nanosleep(&ts, nullptr);",
    '#include "absl/time/clock.h"',
]
CLEAN = [
    "absl::Time t = clock_->Now();  // not absl::Now()",
    "// absl::SleepFor(absl::Seconds(1)) in a comment",
    "watch.Sleep(x); timer.usleep_count = 1;",
]


def self_test() -> int:
    import tempfile
    missed = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i, line in enumerate(PLANTED):
            (root / f"bad{i}").mkdir()
            (root / f"bad{i}" / "x.cc").write_text(line + "\n")
            if not check(root, [f"bad{i}"]):
                missed.append(line)
        (root / "good").mkdir()
        (root / "good" / "x.cc").write_text("\n".join(CLEAN) + "\n")
        false_alarms = check(root, ["good"])
    return report(len(PLANTED), missed, false_alarms)


def main() -> int:
    if len(sys.argv) == 2 and sys.argv[1] == "--self-test":
        return self_test()
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(sys.argv[1])
    problems = check(root, sys.argv[2:])
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
