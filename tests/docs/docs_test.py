#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The documentation's promises, checked: its runnable examples run, its
relative links resolve, the code's references to it resolve, and README.md
stays small.

Modes (one per ctest test):
  examples  every fenced block whose info string is `sh runnable` in
            README.md and docs/**/*.md runs, in order, with the built
            binaries first on PATH, in a temporary folder of its page that
            looks like a checkout (build/, scripts/, bench/, ... are links
            to the real ones). Each command must exit 0 (`! cmd` states
            that cmd must fail). A block runs in one bash, so its commands
            share variables and background jobs; everything a block
            started is killed when it ends. A failure names the file, the
            line and the command, with the end of its output. Then, in every
            sh block, runnable or not, each --flag given to a collbench
            program must be one its --help names (the helps must exit 0).
  links     every relative link in README.md, CONTRIBUTING.md and
            docs/**/*.md names an existing file (and, with #anchor into a
            Markdown page, one of its headings); README.md is at most 12,288
            bytes, links the docs index and CONTRIBUTING.md, the index links
            every page under docs/ (two clicks from README.md to any page),
            and docs/design/README.md links every page under docs/design/.
            Every reference of the form docs/<path>.md or
            docs/<path>.md#<anchor> in a source file (C++, protos, Python,
            shell, CMake, scripts/, YAML, Containerfiles and the module
            READMEs outside docs/) names an existing page and heading. No
            file cites the retired design document by section (the design
            lives in docs/design/). A failure names file:line.
"""

import argparse
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

README_MAX_BYTES = 12288
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


@dataclass
class Command:
    line: int  # 1-based line of its first line in the page
    text: str


@dataclass
class Block:
    page: Path
    line: int  # the opening fence's line
    timeout_s: float
    runnable: bool
    commands: list = field(default_factory=list)


def pages(root: Path):
    yield root / "README.md"
    if (root / "CONTRIBUTING.md").exists():
        yield root / "CONTRIBUTING.md"
    yield from sorted((root / "docs").rglob("*.md"))


def fenced_blocks(text: str):
    """Yields (info string, first body line number, body lines) per fence."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(1), m.group(2).strip()
        body, start = [], i + 2
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence[0] * len(fence))
                                      and lines[i].strip().strip(fence[0]) == ""):
            body.append(lines[i])
            i += 1
        yield info, start, body
        i += 1


def is_complete(text: str) -> bool:
    """Whether bash parses text as whole commands (no open quote, no trailing \\)."""
    if text.rstrip().endswith("\\"):
        return False
    return subprocess.run(["bash", "-n", "-c", text], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def split_commands(body, first_line: int, where: str):
    commands, pending, pending_line = [], [], 0
    for offset, line in enumerate(body):
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if not pending:
            pending_line = first_line + offset
        pending.append(line)
        text = "\n".join(pending)
        if is_complete(text):
            commands.append(Command(pending_line, text))
            pending = []
    if pending:
        raise SystemExit(f"{where}:{pending_line}: the example does not parse as shell:\n"
                         + "\n".join(pending))
    return commands


def sh_blocks(root: Path, default_timeout_s: float = 0):
    """Every fenced sh block of README.md and docs/, runnable or not."""
    for page in pages(root):
        rel = page.relative_to(root)
        for info, start, body in fenced_blocks(page.read_text()):
            words = info.split() or [""]
            if words[0] not in ("sh", "bash", "shell"):
                if "runnable" in words[1:]:
                    raise SystemExit(f"{rel}:{start - 1}: a runnable example must be sh, "
                                     f"not '{words[0]}'")
                continue
            block = Block(rel, start - 1, default_timeout_s, "runnable" in words[1:])
            for w in words[1:]:
                if w.startswith("timeout="):
                    block.timeout_s = float(w.split("=", 1)[1])
            block.commands = split_commands(body, start, str(rel))
            yield block


def runnable_blocks(root: Path, default_timeout_s: float):
    return [b for b in sh_blocks(root, default_timeout_s) if b.runnable]


# The programs whose flags the docs must spell as their --help does, and the
# help texts that name them (collbench's run-like commands take every
# collbench-rank flag too).
HELPS = {
    "collbench": [["collbench", "--help"]] + [
        ["collbench", c, "--help"]
        for c in ("run", "matrix", "local", "suite", "report", "sweep", "advise", "health",
                  "workers", "runs", "show", "watch", "cancel", "compare", "workflows",
                  "baseline", "check", "schedule", "hunt")
    ] + [["collbench-rank", "--help"]],
    "collbench-rank": [["collbench-rank", "--help"]],
    "collbench-rank-mpich": [["collbench-rank-mpich", "--help"]],
    "collbench-coordinator": [["collbench-coordinator", "--help"]],
    "collbench-worker": [["collbench-worker", "--help"]],
    "collbench-launcher": [["collbench-launcher", "--help"]],  # the worker under that name
}


# Programs that run the program named after their own arguments.
WRAPPERS = {"mpirun", "mpiexec", "mpiexec.mpich", "mpiexec.openmpi", "env", "nice", "timeout",
            "sudo", "exec", "!"}


def known_flags(bin_dir: Path):
    """program -> the long flags its help texts name; or raises on a failing --help."""
    flags = {}
    for program, commands in HELPS.items():
        names = set()
        for argv in commands:
            done = subprocess.run([str(bin_dir / argv[0])] + argv[1:], capture_output=True,
                                  text=True, timeout=30)
            if done.returncode != 0:
                raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")
            names |= set(re.findall(r"--[a-z][a-z0-9-]*", done.stdout))
        flags[program] = names
    return flags


def check_flags(root: Path, bin_dir: Path) -> list:
    """Messages for flags the docs give a collbench program that its help lacks."""
    flags, problems, count = known_flags(bin_dir), [], 0
    for block in sh_blocks(root):
        for command in block.commands:
            lexer = shlex.shlex(command.text.replace("\\\n", " "), posix=True,
                                punctuation_chars=True)
            lexer.whitespace_split = True
            try:
                tokens = list(lexer)
            except ValueError:
                continue
            program, at_command, wrapped = None, True, False
            for token in tokens:
                name = os.path.basename(token)
                if token and set(token) <= set("|&;()<>"):
                    # The end of one program's arguments.
                    program, at_command, wrapped = None, True, False
                elif at_command and name in flags:
                    program, at_command = name, False
                elif at_command and name in WRAPPERS:
                    wrapped = True  # its arguments come before the program it runs
                elif at_command and not wrapped and "=" not in token:
                    at_command = False  # another program: not checked
                elif program and token.startswith("--") and token != "--":
                    count += 1
                    name = token.split("=", 1)[0]
                    if name not in flags[program]:
                        problems.append(f"{block.page}:{command.line}: {program} has no flag "
                                        f"{name} (its --help does not name it)\n")
    print(f"{count} flags of collbench programs checked against their --help")
    return problems


def checkout_view(root: Path, build_dir: Path, where: Path):
    """Links the checkout's top-level entries into `where`, build/ to build_dir."""
    for entry in root.iterdir():
        if entry.name.startswith(".") or entry.name.startswith("build"):
            continue
        os.symlink(entry, where / entry.name)
    os.symlink(build_dir, where / "build")


def script_for(block: Block, status_file: Path) -> str:
    out = ["set -o pipefail"]
    for index, command in enumerate(block.commands):
        out.append(f"echo {index} > '{status_file}'")
        out.append(command.text)
        out.append(f"__rc=$?; if [ $__rc -ne 0 ]; then echo \"$__rc\" > '{status_file}.rc'; exit $__rc; fi")
    out.append(f"echo done > '{status_file}'")
    return "\n".join(out) + "\n"


def kill_group(pgid: int):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        time.sleep(0.5)


def run_block(block: Block, cwd: Path, env) -> str:
    """Runs one block; returns '' or a message naming what failed."""
    status = cwd / ".docs-test-status"
    log = cwd / ".docs-test-output"
    for f in (status, Path(str(status) + ".rc")):
        f.unlink(missing_ok=True)
    with open(log, "w") as out:
        proc = subprocess.Popen(["bash", "-c", script_for(block, status)], cwd=cwd, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=block.timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        kill_group(proc.pid)
        proc.wait()
    state = status.read_text().strip() if status.exists() else "0"
    if state == "done" and not timed_out:
        return ""
    command = block.commands[int(state)] if state.isdigit() else block.commands[-1]
    rc_file = Path(str(status) + ".rc")
    why = (f"timed out after {block.timeout_s:g} s" if timed_out
           else f"exit {rc_file.read_text().strip()}" if rc_file.exists()
           else f"the block ended with exit {proc.returncode}")
    tail = log.read_text(errors="replace").splitlines()[-30:]
    return (f"{block.page}:{command.line}: {why}: {command.text}\n"
            + "".join(f"    | {line}\n" for line in tail))


def check_examples(root: Path, bin_dir: Path, default_timeout_s: float, only: str) -> int:
    blocks = [b for b in runnable_blocks(root, default_timeout_s)
              if not only or str(b.page) == only]
    if not blocks:
        print("no runnable examples found", file=sys.stderr)
        return 1
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    if os.geteuid() == 0:  # Open MPI refuses root without these
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    failures, started = [], time.monotonic()
    by_page = {}
    for block in blocks:
        by_page.setdefault(block.page, []).append(block)
    for page, page_blocks in by_page.items():
        workdir = Path(tempfile.mkdtemp(prefix="collbench-docs."))
        try:
            checkout_view(root, bin_dir.parent, workdir)
            for block in page_blocks:
                t0 = time.monotonic()
                message = run_block(block, workdir, env)
                n = len(block.commands)
                print(f"{'FAIL' if message else 'ok  '} {page}:{block.line} "
                      f"({n} command{'s' if n != 1 else ''}, {time.monotonic() - t0:.1f} s)")
                if message:
                    failures.append(message)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    total = sum(len(b.commands) for b in blocks)
    print(f"{len(blocks)} runnable blocks, {total} commands, "
          f"{time.monotonic() - started:.1f} s")
    failures += check_flags(root, bin_dir)
    for message in failures:
        print(message, file=sys.stderr, end="")
    return 1 if failures else 0


def github_slug(heading: str) -> str:
    text = re.sub(r"[`*_]|\[|\]\([^)]*\)", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path):
    seen, out = {}, set()
    for _, line in prose_lines(page.read_text(), keep_code=True):
        if h := re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line):
            slug = github_slug(h.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def prose_lines(text: str, keep_code: bool = False):
    """(line number, line) for lines outside fences, inline code removed
    unless keep_code."""
    in_fence = None
    for number, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            if in_fence is None:
                in_fence = m.group(1)[0]
            elif line.strip().startswith(in_fence):
                in_fence = None
            continue
        if in_fence is None:
            yield number, line if keep_code else re.sub(r"`[^`]*`", "", line)


def linked_files(page: Path):
    """The files page links to, resolved."""
    out = set()
    for _, line in prose_lines(page.read_text()):
        for target in LINK.findall(line):
            path_part = target.partition("#")[0]
            if path_part and not re.match(r"^[a-z][a-z0-9+.-]*:", target):
                out.add((page.parent / path_part).resolve())
    return out


def unreachable_pages(root: Path) -> list:
    """A newcomer's path: README.md links the docs index and CONTRIBUTING.md,
    the docs index links every page (the design pages included), and the
    design index links every design page."""
    index = (root / "docs" / "README.md").resolve()
    problems = []
    from_readme = linked_files(root / "README.md")
    if index not in from_readme:
        problems.append("README.md: no link to docs/README.md, the docs index")
    contributing = (root / "CONTRIBUTING.md").resolve()
    if contributing.exists() and contributing not in from_readme:
        problems.append("README.md: no link to CONTRIBUTING.md")
    from_index = linked_files(index)
    for page in sorted((root / "docs").rglob("*.md")):
        if page.resolve() != index and page.resolve() not in from_index:
            problems.append(f"docs/README.md: no link to {page.relative_to(root)}")
    design_index = (root / "docs" / "design" / "README.md").resolve()
    if design_index.exists():
        from_design = linked_files(design_index)
        for page in sorted(design_index.parent.rglob("*.md")):
            if page.resolve() != design_index and page.resolve() not in from_design:
                problems.append(f"docs/design/README.md: no link to {page.relative_to(root)}")
    return problems


# The files whose references to docs/ pages are checked: sources, build
# files, scripts, manifests and the module READMEs beside the code.
SOURCE_SUFFIXES = {".cc", ".h", ".proto", ".py", ".sh", ".cmake", ".yaml", ".yml"}
SOURCE_NAMES = {"CMakeLists.txt", "Containerfile", "Dockerfile"}
SKIP_DIRS = {".git", "node_modules", "__pycache__"}
# docs/<path>.md or docs/<path>.md#<anchor>, alone or after ../ (a module
# README's relative link); not part of a longer path such as x/docs/.
DOC_REF = re.compile(r"(?<![\w./-])((?:\.\./)*docs/[\w./-]*?\.md)(?![\w/])(?:#([\w-]+))?")
# A citation of the design document that preceded docs/design/, by section
# ("DESIGN" and the section sign, possibly split over a comment's lines) or by
# file name. Spelled in pieces so that this file does not match itself.
RETIRED_DESIGN = re.compile("DESIGN" + r"(?:\.md)?(?:\s|//|#|\*)*" + "\u00a7" + "|"
                            + "DESIGN" + r"\.md")
# The same for the other documents outside the repository: the style notes
# (now CONTRIBUTING.md#style) and the seed papers' notes (now docs/suites.md).
OUTSIDE_DOCUMENT = re.compile("STYLE" + r"(?:\.md)?(?:\s|//|#|\*)*" + "\u00a7" + "|"
                              + r"\b(?:STYLE|SEEDS)" + r"\.md")


def repository_files(root: Path) -> list:
    """Every file of the checkout that is not a build output: what git
    tracks or would track, or without git every file outside build*/."""
    if (root / ".git").exists():
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"], capture_output=True, check=False)
        if listed.returncode == 0:
            names = sorted({n for n in listed.stdout.decode().split("\0") if n})
            return [root / n for n in names if (root / n).is_file()]
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS
                             and not (here == root and d.startswith("build")))
        out += [here / f for f in sorted(filenames)]
    return out


def is_source(root: Path, path: Path) -> bool:
    rel = path.relative_to(root)
    if rel.parts[0] == "scripts":
        return True
    if path.suffix == ".md":  # module READMEs; pages are checked as pages
        return rel.parts[0] != "docs" and len(rel.parts) > 1
    return path.suffix in SOURCE_SUFFIXES or path.name in SOURCE_NAMES


def text_of(path: Path):
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data:
        return None
    return data.decode("utf-8", errors="replace")


def check_sources(root: Path) -> tuple:
    """Problems with the code's references to docs/ pages, and the count."""
    problems, count, cache = [], 0, {}
    for path in repository_files(root):
        text = text_of(path)
        if text is None:
            continue
        rel = path.relative_to(root)
        for m in RETIRED_DESIGN.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"{rel}:{line}: cites the retired design document "
                            f"({m.group(0).split()[0]}...); cite its page under docs/design/")
        for m in OUTSIDE_DOCUMENT.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"{rel}:{line}: cites a document outside the repository "
                            f"({m.group(0).split()[0]}...); cite CONTRIBUTING.md#style or "
                            f"docs/suites.md")
        if not is_source(root, path):
            continue
        for number, line in enumerate(text.split("\n"), 1):
            for m in DOC_REF.finditer(line):
                target, anchor = m.group(1), m.group(2)
                count += 1
                base = path.parent if target.startswith("../") else root
                dest = (base / target).resolve()
                shown = target + (f"#{anchor}" if anchor else "")
                try:
                    dest.relative_to(root.resolve())
                except ValueError:
                    problems.append(f"{rel}:{number}: {shown}: out of the repository")
                    continue
                if not dest.is_file():
                    problems.append(f"{rel}:{number}: {shown}: no such page")
                    continue
                if anchor:
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if anchor not in cache[dest]:
                        problems.append(f"{rel}:{number}: {shown}: no heading #{anchor} in "
                                        f"{dest.relative_to(root.resolve())}")
    return problems, count


def check_links(root: Path) -> int:
    problems = []
    readme = root / "README.md"
    size = readme.stat().st_size
    if size > README_MAX_BYTES:
        problems.append(f"README.md: {size} bytes, more than {README_MAX_BYTES}")
    count = 0
    for page in pages(root):
        rel = page.relative_to(root)
        for number, line in prose_lines(page.read_text()):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
                    continue
                count += 1
                path_part, _, anchor = target.partition("#")
                dest = (page.parent / path_part).resolve() if path_part else page
                if not dest.exists():
                    problems.append(f"{rel}:{number}: link to a missing file: {target}")
                    continue
                try:
                    dest.relative_to(root.resolve())
                except ValueError:
                    problems.append(f"{rel}:{number}: link out of the repository: {target}")
                    continue
                if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    problems.append(f"{rel}:{number}: no heading #{anchor} in "
                                    f"{dest.relative_to(root.resolve())}")
    problems += unreachable_pages(root)
    source_problems, source_refs = check_sources(root)
    problems += source_problems
    print(f"{count} relative links and {source_refs} references from the sources checked; "
          f"README.md is {size} bytes")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["examples", "links", "list"])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    parser.add_argument("--bin-dir", type=Path, help="the built binaries (build/bin)")
    parser.add_argument("--timeout", type=float, default=90,
                        help="seconds a block may take unless it says timeout=N")
    parser.add_argument("--only", default="", help="one page, e.g. docs/advice.md")
    args = parser.parse_args()
    root = args.root.resolve()
    if args.mode == "links":
        return check_links(root)
    if args.mode == "list":
        for block in runnable_blocks(root, args.timeout):
            for command in block.commands:
                print(f"{block.page}:{command.line}: {command.text}")
        return 0
    if args.bin_dir is None:
        parser.error("examples needs --bin-dir")
    return check_examples(root, args.bin_dir.resolve(), args.timeout, args.only)


if __name__ == "__main__":
    sys.exit(main())
