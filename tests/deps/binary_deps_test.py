#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The control plane's binaries and libraries need no data-plane library.

collbench-coordinator and the collbench CLI must start on a host without MPI,
memkind, libnuma or a CUDA/NCCL loader: the test reads their ELF dynamic
sections (readelf -d), follows every NEEDED entry to the library the loader
would pick (ldconfig's cache), reads that library's NEEDED entries in turn,
and fails naming the chain that reaches a forbidden library.

The libraries that hold the protobuf messages, the store and analysis/ must
need no gRPC: the test lists their undefined symbols (nm -u) and fails naming
an object that refers to one from gRPC.
"""

import argparse
import re
import subprocess
import sys

# What the control plane must never load, by soname.
FORBIDDEN = [
    (re.compile(r"^lib(mpi|mpi_cxx|mpich|mpichcxx|open-pal|open-rte|pmix|pmi)\b"), "an MPI library"),
    (re.compile(r"^libmemkind\b"), "memkind"),
    (re.compile(r"^libnuma\b"), "libnuma"),
    (re.compile(r"^libhwloc\b"), "hwloc (pulled by MPI and memkind)"),
    (re.compile(r"^lib(cuda|cudart|nccl|nvidia-ml)\b"), "a CUDA or NCCL library"),
]

# A symbol from gRPC, demangled: grpc:: / grpc_impl:: C++ names or the C core's grpc_* / gpr_*.
GRPC_SYMBOL = re.compile(r"(^|\W)(grpc::|grpc_impl::|grpc_[a-z]|gpr_[a-z])")


def needed(path):
    out = subprocess.run(["readelf", "-d", "-W", path], check=True,
                         capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def loader_cache():
    """soname -> path for this machine's architecture, from ldconfig -p."""
    out = subprocess.run(["ldconfig", "-p"], check=True, capture_output=True, text=True).stdout
    cache = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)", line)
        if m and ("x86-64" in m.group(2) or "64bit" in m.group(2)):
            cache.setdefault(m.group(1), m.group(3))
    return cache


def forbidden_why(soname):
    for pattern, what in FORBIDDEN:
        if pattern.search(soname):
            return what
    return None


def check_binary(name, path, cache):
    """Walks the NEEDED graph breadth-first; returns the problems found."""
    problems = []
    seen = set()
    queue = [(soname, [soname]) for soname in needed(path)]
    while queue:
        soname, chain = queue.pop(0)
        if soname in seen:
            continue
        seen.add(soname)
        why = forbidden_why(soname)
        if why:
            problems.append("%s needs %s, %s: %s" % (name, soname, why, " -> ".join([name] + chain)))
            continue
        lib = cache.get(soname)
        if lib is None:
            continue  # the loader itself (ld-linux) or a library ldconfig does not list
        queue.extend((n, chain + [n]) for n in needed(lib))
    print("%s: %d libraries reachable, %s"
          % (name, len(seen), "%d forbidden" % len(problems) if problems
             else "none of MPI/memkind/numa/hwloc/CUDA/NCCL"))
    return problems


def check_static(name, path):
    out = subprocess.run(["nm", "-u", "-C", "-A", path], check=True,
                         capture_output=True, text=True).stdout
    problems = []
    for line in out.splitlines():
        # path:member.o:                 U symbol
        parts = line.split(None, 2)
        symbol = line.split(" U ", 1)[-1].strip() if " U " in line else ""
        if symbol and GRPC_SYMBOL.search(symbol):
            member = line.split(":")[1] if line.count(":") >= 2 else path
            problems.append("%s (%s) refers to gRPC: %s" % (name, member, symbol))
    print("%s: %s" % (name, "refers to gRPC" if problems else "no gRPC symbol"))
    return problems[:20]


def pairs(values):
    out = []
    for value in values or []:
        name, sep, path = value.partition("=")
        if not sep or not path:
            sys.exit("expected NAME=PATH, got %r" % value)
        out.append((name, path))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", action="append", help="NAME=PATH of a control-plane binary")
    parser.add_argument("--no-grpc", action="append", help="NAME=PATH of a static library that must not use gRPC")
    args = parser.parse_args()
    cache = loader_cache()
    problems = []
    for name, path in pairs(args.binary):
        problems += check_binary(name, path, cache)
    for name, path in pairs(args.no_grpc):
        problems += check_static(name, path)
    for problem in problems:
        print("FAIL " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
