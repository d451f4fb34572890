#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Clang's thread-safety analysis over every translation unit of a build tree.

A clang tree compiles with -Wthread-safety -Werror=thread-safety (the top
CMakeLists.txt), so what it builds is checked as it builds. This test
checks the rest: every entry of the tree's compile_commands.json whose
object file is absent (a target that tree did not build) is compiled again
with -fsyntax-only, which runs the analysis without generating code.
Generated protobuf code is left out (not ours; compiled with -w).

First it proves the analysis is on: a planted source that reads a member
without its mutex and calls a REQUIRES function unlocked, compiled with one
of the tree's own commands, must fail with a thread-safety error, and the
same source with the lock taken must compile.

Exit status: 0 when every unit passes, 1 naming the units and their
diagnostics otherwise, 77 (skipped) when the tree was not configured with
clang.
Usage: thread_safety_check.py BUILD_DIR [--jobs N]
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path


def units(build: Path):
    for entry in json.loads((build / "compile_commands.json").read_text()):
        if "/proto/gen/" in entry["file"]:
            continue
        words = shlex.split(entry["command"])
        output = entry.get("output")
        if output is None and "-o" in words:
            output = words[words.index("-o") + 1]
        yield entry, words, Path(entry["directory"]) / output


def syntax_only(words):
    """The compile command without its outputs, checking syntax only."""
    kept, skip = [], 0
    for word in words:
        if skip:
            skip -= 1
            continue
        if word in ("-o", "-MF", "-MT", "-MQ"):
            skip = 1
            continue
        if word in ("-MD", "-MMD", "-c"):
            continue
        kept.append(word)
    return kept + ["-fsyntax-only"]


def check(entry, words):
    result = subprocess.run(syntax_only(words), cwd=entry["directory"], capture_output=True,
                            text=True)
    return entry["file"], result.returncode, result.stderr


PLANTED = """
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
class Counter {
 public:
  int Read() {
    @TAKE_LOCK@
    return value_ + Twice();
  }
 private:
  int Twice() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return 2 * value_; }
  absl::Mutex mu_;
  int value_ ABSL_GUARDED_BY(mu_) = 0;
};
int Use() { return Counter().Read(); }
"""


def analysis_is_on(entry, words) -> str:
    """Empty when the planted violations fail the tree's compile command and
    the locked variant passes; otherwise what went wrong."""
    import tempfile
    outcomes = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, lock in (("unlocked", ""), ("locked", "absl::MutexLock lock(&mu_);")):
            source = Path(tmp) / f"{name}.cc"
            source.write_text(PLANTED.replace("@TAKE_LOCK@", lock))
            command = [w if w != entry["file"] else str(source) for w in syntax_only(words)]
            if str(source) not in command:
                command.append(str(source))
            result = subprocess.run(command, cwd=entry["directory"], capture_output=True,
                                    text=True)
            outcomes[name] = result
    unlocked, locked = outcomes["unlocked"], outcomes["locked"]
    if unlocked.returncode == 0 or "thread-safety" not in unlocked.stderr:
        return "a read of a guarded member without its mutex compiled: the analysis is off"
    if locked.returncode != 0:
        return "the planted source with its lock taken failed: " + locked.stderr[-2000:]
    return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build_dir", type=Path)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    all_units = list(units(args.build_dir))
    if not all_units or "clang" not in os.path.basename(all_units[0][1][0]):
        print("thread_safety_check: skipped: the tree is not built with clang")
        return 77
    if not any("-Werror=thread-safety" in words for _, words, _ in all_units):
        print("thread_safety_check: the tree compiles without -Werror=thread-safety",
              file=sys.stderr)
        return 1
    probe = all_units[0]
    if problem := analysis_is_on(probe[0], probe[1]):
        print(f"thread_safety_check: {problem}", file=sys.stderr)
        return 1
    print("thread_safety_check: a planted unguarded read fails the tree's compile command")
    built = [u for u in all_units if u[2].exists()]
    rest = [(entry, words) for entry, words, obj in all_units if not obj.exists()]
    print(f"thread_safety_check: {len(built)} units compiled by the build, "
          f"{len(rest)} more checked here with -fsyntax-only")
    failures = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for name, status, stderr in pool.map(lambda u: check(*u), rest):
            if status != 0:
                failures.append((name, stderr))
    for name, stderr in failures:
        lines = [l for l in stderr.splitlines() if re.search(r"(error|warning|note):", l)]
        print(f"FAIL {name}:\n  " + "\n  ".join(lines[:40]), file=sys.stderr)
    if failures:
        print(f"thread_safety_check: {len(failures)} of {len(rest)} units fail", file=sys.stderr)
        return 1
    print("thread_safety_check: every unit passes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
