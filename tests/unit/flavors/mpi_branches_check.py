#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when code outside flavors/ branches on the MPI implementation.

The MPI implementation is a plug-in
(docs/design/layout.md#mpi-implementations-as-plug-ins, flavors/mpi_flavor.h):
one file per library (flavors/open_mpi.cc, flavors/mpich.cc) and their
registration (flavors/builtin.cc). Everything else asks a flavour. This
check reads every C++ source of the product (api, analysis, client, common,
server, worker), with comments removed, and counts as a branch on the MPI
implementation:

  enum    a value of collbench.v1.MpiImplementation (v1::OPENMPI, v1::MPICH,
          v1::MPI_IMPLEMENTATION_UNSPECIFIED), or a comparison or switch on a
          RunSpec's mpi() field;
  name    a string literal that is exactly a library's name, display name,
          launcher, rank binary or daemon ("openmpi", "MPICH", "mpirun.openmpi",
          "collbench-rank-mpich", "orted", "hydra_pmi_proxy", ...);
  param   a string literal that starts with one library's own variable
          namespace ("OMPI_...", "MPIR_CVAR_...", "PMIX_...", "PMI_...",
          "HYDRA_..."): those parameters belong to the library's flavour;
  macro   a preprocessor condition on an MPI library's identity macros
          (OPEN_MPI, OMPI_*, MPICH*).

Prose inside a longer string ("use MPICH (--mpi mpich)") is not a branch.
The only exceptions are listed in ALLOWED with their reason.

Usage: mpi_branches_check.py SOURCE_ROOT     (exit 0: none, 1: found)
       mpi_branches_check.py --self-test
"""
import os
import re
import sys

SCANNED = ["api", "analysis", "client", "common", "server", "worker"]

NAMES = ["openmpi", "mpich", "Open MPI", "MPICH", "OpenMPI", "mpirun", "mpirun.openmpi",
         "mpiexec", "mpiexec.mpich", "mpiexec.hydra", "collbench-rank-mpich", "orted", "prted",
         "hydra_pmi_proxy"]
PARAM_PREFIXES = ["OMPI_", "MPIR_CVAR_", "PMIX_", "PMI_", "HYDRA_"]

RULES = [
    ("enum", re.compile(r"\bv1::(OPENMPI|MPICH|MPI_IMPLEMENTATION_UNSPECIFIED)\b")),
    ("enum", re.compile(r"\bmpi\(\)\s*[!=]=|[!=]=\s*[\w.>-]*\bmpi\(\)|switch\s*\([^)]*\bmpi\(\)")),
    ("name", re.compile(r'"(%s)"' % "|".join(re.escape(n) for n in NAMES))),
    ("param", re.compile(r'"(%s)' % "|".join(re.escape(p) for p in PARAM_PREFIXES))),
    ("macro", re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif)\b.*\b(OPEN_MPI|OMPI_\w+|MPICH\w*)\b")),
]

# path (relative to the source root) -> why it may branch on the library.
ALLOWED = {
    # Compiled once per MPI library against that library's headers: whether
    # the library is CUDA-aware can only be asked through its own extension
    # header, which an MPI-free flavour cannot include.
    "worker/engine/backends/mpi_cuda_backend.cc": "macro",
}


def strip_comments(text):
    """Removes // and /* */ comments, keeping string literals and lines."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def findings(path, text):
    found = []
    for number, line in enumerate(strip_comments(text).split("\n"), 1):
        kinds = []
        for kind, rule in RULES:
            if rule.search(line) and ALLOWED.get(path) != kind and kind not in kinds:
                kinds.append(kind)
        for kind in kinds:
            found.append("%s:%d: %s: %s" % (path, number, kind, line.strip()))
    return found


def scan(root):
    found = []
    for top in SCANNED:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".cc", ".h")):
                    continue
                full = os.path.join(folder, name)
                with open(full, encoding="utf-8", errors="replace") as f:
                    found += findings(os.path.relpath(full, root), f.read())
    return found


def self_test():
    branches = [
        'if (spec.mpi() == v1::MPICH) {',
        'return mpi == v1::OPENMPI ? a : b;',
        'if (g.mpi != "openmpi") continue;',
        'if (run.spec().mpi() != other) return;',
        'switch (spec.mpi()) {',
        'const char* kD = "hydra_pmi_proxy";',
        'env["OMPI_MCA_btl"] = "self";',
        'auto it = env.find("MPIR_CVAR_NOLOCAL");',
        '#if defined(OPEN_MPI)',
        '#elif defined(MPICH_VERSION)',
    ]
    clean = [
        '// if (spec.mpi() == v1::MPICH) a comment',
        '/* "openmpi" */ int x = 0;',
        'FieldError("spec.transport", "use MPICH (--mpi mpich), whose UCX");',
        'const MpiFlavor& f = FlavorFor(spec.mpi());',
        'token.set_mpi(run.spec().mpi());',
        'return std::string(flavor->name());',
    ]
    ok = True
    for line in branches:
        if not findings("x.cc", line):
            print("self-test: not caught: " + line)
            ok = False
    for line in clean:
        if findings("x.cc", line):
            print("self-test: wrongly caught: " + line)
            ok = False
    if not findings("worker/engine/backends/mpi_cuda_backend.cc", 'x = "OMPI_MCA_btl";'):
        print("self-test: an allowed file may only do what it is allowed")
        ok = False
    return ok


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return 0 if self_test() else 1
    if len(argv) != 2:
        print(__doc__)
        return 2
    if not self_test():
        return 1
    found = scan(argv[1])
    for line in found:
        print(line)
    if found:
        print("%d branch(es) on the MPI implementation outside flavors/: ask the run's flavour "
              "(flavors/registry.h) instead" % len(found))
        return 1
    print("no branch on the MPI implementation outside flavors/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
