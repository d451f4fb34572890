#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Which module may include which (docs/design/layout.md#what-links-what and
docs/design/layout.md#the-coordinators-layers).

Between modules: the libraries below server/ and client/ know neither; the
CLI knows no server code (it talks to a coordinator over gRPC; `collbench
local`'s embedded coordinator is local/, which only the binary's main.cc
wires in); the coordinator knows no CLI code (workflows plan from the
spec's vocabulary in api/ and engine_spec/).

Inside the coordinator, each layer includes only what is below it: the HTTP
transport nothing of the coordinator; the store, placement and tokens
nothing above them; the core no API, page, workflow or wiring; the
workflows and metrics no API, page or wiring; the API no page or wiring;
the pages read through the API, never the core or the store; and only
server/app (and local/, which embeds the coordinator) includes server/app.

A binary's main.cc is wiring and may include what it links.

Exit status: 0 when every include keeps the rules, 1 naming file:line and
the rule otherwise, 2 on bad usage.
Usage: layering_check.py SOURCE_DIR
       layering_check.py --self-test   (plants a violation of each rule in a
                                        temporary tree and expects each found)
"""
import re
import sys
import tempfile
from pathlib import Path

from self_test_report import report

OUTSIDE = ["server", "client", "local", "worker", "kube"]
SERVER_DOMAIN = ["server/core", "server/workflows", "server/metrics", "server/store",
                 "server/scheduling", "server/auth"]
ABOVE_DOMAIN = ["server/api", "server/ui", "server/app", "server/http"]

# Folder (the longest that holds the file applies) -> (include prefixes it
# must not use, why).
RULES = {
    "common": (OUTSIDE, "common/ is below every module"),
    "engine_spec": (OUTSIDE, "the engine's vocabulary knows no process"),
    "flavors": (OUTSIDE, "the MPI libraries know no process"),
    "api": (OUTSIDE, "api/ is shared by the coordinator, the worker and the CLI"),
    "analysis": (OUTSIDE, "analysis/ is shared by the coordinator and the CLI"),
    "client": (["server", "local"],
               "the CLI talks to a coordinator over gRPC only; `local` is local/"),
    "worker": (["server", "client", "local"], "the worker talks to the coordinator over gRPC only"),
    "server": (["client", "local"],
               "the coordinator plans from the spec's vocabulary (api/), not the CLI's"),
    "server/http": (["client", "local"] + SERVER_DOMAIN + ABOVE_DOMAIN[:3],
                    "the HTTP transport knows no route, token or message of the coordinator"),
    "server/store": (["client", "local"] + SERVER_DOMAIN[:3] + ABOVE_DOMAIN,
                     "the store is below the core"),
    "server/scheduling": (["client", "local", "server/core", "server/workflows",
                           "server/metrics", "server/store"] + ABOVE_DOMAIN,
                          "placement is below the core"),
    "server/auth": (["client", "local", "server/core", "server/workflows", "server/metrics",
                     "server/store"] + ABOVE_DOMAIN, "tokens are below the core"),
    "server/core": (["client", "local", "server/workflows", "server/metrics"] + ABOVE_DOMAIN,
                    "the core knows no workflow, metric, API, page or wiring"),
    "server/metrics": (["client", "local", "server/workflows"] + ABOVE_DOMAIN,
                       "metrics observe the core; they know no API, page or wiring"),
    "server/workflows": (["client", "local"] + ABOVE_DOMAIN,
                         "workflows call the runs; they know no API, page or wiring"),
    "server/api": (["client", "local", "server/ui", "server/app"],
                   "the API knows no page and no wiring"),
    "server/ui": (["client", "local", "server/app", "server/core", "server/store"],
                  "pages read through the API's handlers, never the core or the store"),
    "server/app": (["client"], "the coordinator knows no CLI code"),
    "kube": (["server", "local", "worker"],
             "collbench-kube talks to the coordinator over gRPC and to Kubernetes over HTTPS"),
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def rule_for(relative: str):
    """The rule of the longest folder in RULES that holds `relative`."""
    best = None
    for folder in RULES:
        if relative.startswith(folder + "/") and (best is None or len(folder) > len(best)):
            best = folder
    return best


def check(root: Path) -> list:
    failures = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".h", ".cc") or path.name == "main.cc":
            continue
        relative = path.relative_to(root).as_posix()
        folder = rule_for(relative)
        if folder is None:
            continue
        forbidden, why = RULES[folder]
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            included = match.group(1)
            hit = next((f for f in forbidden if included.startswith(f + "/")), None)
            if hit is not None:
                failures.append(f"{relative}:{number}: includes {included}: {why}")
    return failures


def self_test() -> int:
    """Each rule, broken once in a tree of its own, is found; a clean tree is not."""
    planted = 0
    missed = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for folder, (forbidden, _) in RULES.items():
            for target in forbidden:
                tree = root / f"case{planted}"
                source = tree / folder / "planted.cc"
                source.parent.mkdir(parents=True)
                source.write_text(f'#include "{target}/x.h"\n')
                if not check(tree):
                    missed.append(f"{folder} including {target}/")
                planted += 1
        clean = root / "clean"
        (clean / "server/app").mkdir(parents=True)
        (clean / "server/app/x.cc").write_text('#include "server/core/x.h"\n')
        (clean / "server/ui").mkdir(parents=True)
        (clean / "server/ui/x.cc").write_text('#include "server/api/handlers.h"\n')
        false_alarms = check(clean)
    return report(planted, missed, false_alarms)


def main(argv) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "--self-test":
        return self_test()
    failures = check(Path(argv[1]))
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
