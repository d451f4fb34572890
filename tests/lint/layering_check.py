#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Which module may include which (docs/design/layout.md#what-links-what).

The libraries below server/ and client/ know neither; the CLI knows no
server code (it talks to a coordinator over gRPC; `collbench local`'s
embedded coordinator is local/, which only the binary's main.cc wires in);
the coordinator knows no CLI code (workflows plan from the spec's
vocabulary in api/ and engine_spec/). A binary's main.cc is wiring and may
include what it links.

Exit status: 0 when every include keeps the rules, 1 naming file:line and
the rule otherwise.
Usage: layering_check.py SOURCE_DIR
"""
import re
import sys
from pathlib import Path

# module folder -> (folders it must not include from, why)
RULES = {
    "common": (["server", "client", "local", "worker"], "common/ is below every module"),
    "engine_spec": (["server", "client", "local", "worker"], "the engine's vocabulary knows no process"),
    "flavors": (["server", "client", "local", "worker"], "the MPI libraries know no process"),
    "api": (["server", "client", "local", "worker"], "api/ is shared by the coordinator, the worker and the CLI"),
    "analysis": (["server", "client", "local", "worker"], "analysis/ is shared by the coordinator and the CLI"),
    "client": (["server", "local"], "the CLI talks to a coordinator over gRPC only; `local` is local/"),
    "server": (["client", "local"], "the coordinator plans from the spec's vocabulary (api/), not the CLI's"),
    "worker": (["server", "client", "local"], "the worker talks to the coordinator over gRPC only"),
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/')


def main(root: Path) -> int:
    failures = []
    for module, (forbidden, why) in RULES.items():
        for path in sorted((root / module).rglob("*")):
            if path.suffix not in (".h", ".cc") or path.name == "main.cc":
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                match = INCLUDE.match(line)
                if match and match.group(1) in forbidden:
                    failures.append(f"{path.relative_to(root)}:{number}: includes "
                                    f"{match.group(1)}/: {why}")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
