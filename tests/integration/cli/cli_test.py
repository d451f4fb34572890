#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The collbench CLI as a person meets it: help, errors, follow-ups, Ctrl-C.

    cli_test.py --bin-dir build/bin --case help_offline [--case ...]
    cli_test.py --bin-dir build/bin            # every case
    cli_test.py --list

Cases:
  help_offline       every command of `collbench --help` (and each `suite`
                     subcommand), with --help and with -h, against a port
                     where nothing listens and under `collbench local`:
                     exit 0, its usage on stdout, no connection attempted.
  connection_error   a command with no coordinator at the address says which
                     address it tried, how to start a coordinator and how to
                     use `collbench local`; exit 1.
  local_help_flags   every flag `collbench local` accepts is named by
                     `collbench local --help`, by `collbench --help` and by
                     the usage line of `collbench local` without a command.
  missing_folder     `local --store` and `report -o` into a folder that does
                     not exist: exit 2 naming the folder, which is still not
                     there afterwards, and nothing started.
  follow_ups         the commands `sweep` and `matrix` print for later, under
                     `collbench local --store`, run exactly as printed; without
                     --store they say the runs were not kept instead.
  interrupt_watch    SIGINT to `run --watch` against a coordinator: exit 130,
                     stderr names the run, says it goes on, and gives the
                     commands to watch and cancel it; the printed cancel works.
  interrupt_local    SIGINT to `collbench local --store F run --watch`: exit
                     130 and the run cancelled (the embedded coordinator stops
                     with it), as a later `local --store F show` says.

It reuses tests/integration/service/service_test.py's cluster (processes,
ports, teardown, leak-safe subreaper). Each case prints one PASS/FAIL line.
Exit code: 0 when every case passed, 1 otherwise, 2 on bad usage.
"""

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "service"))
import service_test as svc  # noqa: E402  (the shared cluster helpers)
from service_test import Failure, expect, poll  # noqa: E402

# The commands `collbench --help` must list, at least; the test also takes
# every other command the help lists.
COMMANDS = ["workers", "health", "runs", "show", "watch", "cancel", "compare", "run", "matrix",
            "suite", "report", "sweep", "advise", "local"]
SUITE_SUBCOMMANDS = ["list", "run", "show"]
LOCAL_FLAGS = {"--workers", "--slots", "--store", "--tuning-dir"}
CONNECTION_WORDS = ("failed to connect", "no coordinator answers", "Connection refused")


def closed_address():
    """127.0.0.1:PORT where nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return "127.0.0.1:%d" % s.getsockname()[1]


def collbench(c, *args, timeout=60, cwd=None):
    argv = [c.binary("collbench")] + [str(a) for a in args]
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, env=svc.child_env(), cwd=cwd)
    except subprocess.TimeoutExpired:
        raise Failure("`%s` did not finish within %ss" % (" ".join(argv), timeout))


def run_printed(c, line, what, timeout=120, cwd=None):
    """Runs a command line exactly as the CLI printed it."""
    argv = shlex.split(line)
    expect(argv and os.path.basename(argv[0]) == "collbench",
           "%s does not start with the collbench program: %r" % (what, line))
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, env=svc.child_env(), cwd=cwd)
    except subprocess.TimeoutExpired:
        raise Failure("%s (`%s`) did not finish within %ss" % (what, line, timeout))
    expect(done.returncode == 0, "%s, run as printed (`%s`), exited %d: %s" % (
        what, line, done.returncode, done.stderr.strip()[-1500:]))
    return done


def listed_commands(c):
    """The commands `collbench --help` lists, as argv lists."""
    done = collbench(c, "--help")
    expect(done.returncode == 0, "collbench --help exited %d" % done.returncode)
    section = done.stdout.split("commands:", 1)
    expect(len(section) == 2, "collbench --help has no commands: section:\n" + done.stdout)
    names = re.findall(r"^  ([a-z]+)(?: |$)", section[1], re.M)
    for name in COMMANDS:
        expect(name in names, "collbench --help does not list %s: %s" % (name, names))
    out = []
    for name in dict.fromkeys(names):
        if name == "suite":
            out += [["suite", sub] for sub in SUITE_SUBCOMMANDS]
        out.append([name])
    return out


def case_help_offline(c):
    nowhere = closed_address()
    problems = []
    for command in listed_commands(c):
        for flag in ("--help", "-h"):
            for how in ("coordinator", "local"):
                if how == "local":
                    if command == ["local"]:
                        continue
                    argv = ["local"] + command + [flag]
                else:
                    argv = ["--coordinator", nowhere] + command + [flag]
                done = collbench(c, *argv, timeout=30)
                shown = "collbench " + " ".join(argv)
                if done.returncode != 0:
                    problems.append("`%s` exited %d: %s" % (shown, done.returncode,
                                                            done.stderr.strip()[-300:]))
                elif "usage: collbench " + command[0] not in done.stdout:
                    problems.append("`%s` printed no usage of %s on stdout: %r" % (
                        shown, command[0], done.stdout[:300]))
                elif any(w in done.stderr for w in CONNECTION_WORDS):
                    problems.append("`%s` tried to connect: %r" % (shown, done.stderr[-300:]))
                elif "local: coordinator on" in done.stderr:
                    problems.append("`%s` started a local cluster for its help" % shown)
    expect(not problems, "%d helps misbehave:\n  %s" % (len(problems), "\n  ".join(problems)))


def case_connection_error(c):
    nowhere = closed_address()
    report = os.path.join(c.dir, "r.html")
    problems = []
    for command in (["workers"], ["runs"], ["show", "runs/x"], ["watch", "runs/x"],
                    ["cancel", "runs/x"], ["compare", "runs/x", "runs/y"],
                    ["suite", "show", "x"], ["run", "allreduce", "--ranks", "2"],
                    ["advise", "runs/x"], ["report", "runs/x", "-o", report]):
        done = collbench(c, "--coordinator", nowhere, *command, timeout=30)
        shown = " ".join(command)
        err = done.stderr
        if done.returncode != 1:
            problems.append("`%s` exited %d, expected 1: %r" % (shown, done.returncode, err))
        elif nowhere not in err:
            problems.append("`%s` does not name %s: %r" % (shown, nowhere, err))
        elif "collbench-coordinator --grpc-listen" not in err:
            problems.append("`%s` does not say how to start a coordinator: %r" % (shown, err))
        elif "collbench local" not in err:
            problems.append("`%s` does not mention collbench local: %r" % (shown, err))
    expect(not problems, "%d connection errors misreported:\n  %s" % (
        len(problems), "\n  ".join(problems)))


def flags_named(text):
    return set(re.findall(r"--[a-z][a-z0-9-]*", text))


def case_local_help_flags(c):
    shown = collbench(c, "local", "--help")
    expect(shown.returncode == 0, "local --help exited %d" % shown.returncode)
    # The flag lines of its help: what the parser defines.
    listed = set(re.findall(r"^  (--[a-z][a-z0-9-]*)", shown.stdout, re.M))
    for flag in sorted(LOCAL_FLAGS | listed):
        # Accepted: with --help after it, a known flag parses and exits 0.
        done = collbench(c, "local", flag, "1", "--help")
        expect(done.returncode == 0, "local does not accept %s: exit %d: %s" % (
            flag, done.returncode, done.stderr.strip()))
    accepted = LOCAL_FLAGS | listed
    top = collbench(c, "--help").stdout
    local_part = top[top.find("  local "):]
    no_command = collbench(c, "local")
    expect(no_command.returncode == 2, "local without a command exited %d" % no_command.returncode)
    texts = {"collbench local --help": shown.stdout,
             "collbench --help (its local entry)": local_part,
             "collbench local (its usage line)": no_command.stderr}
    missing = ["%s lacks %s" % (where, flag) for where, text in texts.items()
               for flag in sorted(accepted) if flag not in flags_named(text)]
    expect(not missing, "flags of local not named:\n  " + "\n  ".join(missing))


def case_missing_folder(c):
    missing = os.path.join(c.dir, "missing")
    store = os.path.join(missing, "sub", "x.db")
    done = collbench(c, "local", "--store", store, "runs")
    expect(done.returncode == 2, "local --store %s exited %d: %s" % (store, done.returncode,
                                                                      done.stderr))
    expect(os.path.dirname(store) in done.stderr and "does not exist" in done.stderr,
           "local --store does not name the missing folder: %r" % done.stderr)
    expect("local: coordinator on" not in done.stderr,
           "local --store into a missing folder started a cluster: %r" % done.stderr)
    expect(not os.path.exists(missing), "local --store created %s" % missing)

    html = os.path.join(missing, "y.html")
    done = collbench(c, "--coordinator", closed_address(), "report", "runs/x", "-o", html)
    expect(done.returncode == 2, "report -o %s exited %d: %s" % (html, done.returncode,
                                                                 done.stderr))
    expect(missing in done.stderr and "does not exist" in done.stderr,
           "report -o does not name the missing folder: %r" % done.stderr)
    expect(not any(w in done.stderr for w in CONNECTION_WORDS),
           "report -o into a missing folder asked the coordinator first: %r" % done.stderr)
    expect(not os.path.exists(missing), "report -o created %s" % missing)


def printed(text, label):
    """The command of the line `... LABEL: COMMAND` in text."""
    match = re.search(r"(?:^|\s)%s:\s+(\S*collbench .*)$" % re.escape(label), text, re.M)
    expect(match, "no '%s: ' command printed:\n%s" % (label, text[-2000:]))
    return match.group(1)


def case_follow_ups(c):
    store = os.path.join(c.dir, "runs with space.db")  # printed quoted
    common = ["--ranks", "2", "--sizes", "8,1K", "-n", "50"]
    sweep = collbench(c, "local", "--store", store, "sweep", "allreduce", "--algorithms", "ring",
                      *common, timeout=240)
    expect(sweep.returncode == 0, "sweep exited %d: %s" % (sweep.returncode,
                                                           sweep.stderr[-2000:]))
    again = printed(sweep.stdout, "again")
    expect("--store" in again, "the sweep's follow-up has no --store: %r" % again)
    advised = run_printed(c, again, "the sweep's again: line")
    expect(advised.stdout.strip(), "advise --sweep, run as printed, printed nothing")

    matrix = collbench(c, "local", "--store", store, "matrix", "--operations", "allreduce",
                       "--placements", "pack", "--transports", "shm", *common[2:], timeout=240,
                       cwd=c.dir)
    expect(matrix.returncode == 0, "matrix exited %d: %s" % (matrix.returncode,
                                                             matrix.stderr[-2000:]))
    report = printed(matrix.stdout, "report")
    run_printed(c, report, "the matrix's report: line", cwd=c.dir)
    expect(os.path.exists(os.path.join(c.dir, "matrix.html")),
           "the matrix's report command wrote no matrix.html")

    # Without --store nothing is kept: no command that cannot work.
    unkept = collbench(c, "local", "matrix", "--operations", "allreduce", "--placements", "pack",
                       "--transports", "shm", *common[2:], timeout=240)
    expect(unkept.returncode == 0, "matrix without --store exited %d" % unkept.returncode)
    expect(not re.search(r"report: \S*collbench", unkept.stdout),
           "matrix without --store prints a report command that cannot work:\n" + unkept.stdout)
    expect("not kept" in unkept.stdout, "matrix without --store does not say the runs are "
           "not kept:\n" + unkept.stdout)


class Watched:
    """A `collbench ... run --watch` process whose stderr is read as it comes."""

    def __init__(self, c, argv):
        self.proc = subprocess.Popen([c.binary("collbench")] + argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=svc.child_env(), start_new_session=True)
        c.popens.append(self.proc)
        self.err, self.out = [], []
        self.readers = [threading.Thread(target=self._read, args=(s, b), daemon=True)
                        for s, b in ((self.proc.stderr, self.err), (self.proc.stdout, self.out))]
        for t in self.readers:
            t.start()

    @staticmethod
    def _read(stream, into):
        for line in stream:
            into.append(line)

    def running_run(self, timeout):
        """The run's name once the CLI has said it runs."""
        def seen():
            for line in self.err:
                match = re.match(r"^(runs/\S+): running", line)
                if match:
                    return match.group(1)
            expect(self.proc.poll() is None, "the CLI ended before the run ran: %s" %
                   "".join(self.err)[-2000:])
            return None
        return poll("the run to be running", seen, timeout, 0.1)

    def interrupt(self, timeout=30):
        time.sleep(0.5)  # a moment inside the watch
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Failure("the CLI did not end within %ss of SIGINT" % timeout)
        for t in self.readers:
            t.join(timeout=5)
        return code, "".join(self.err)


LONG_RUN = ["run", "allreduce", "--ranks", "2", "--sizes", "1M", "-n", "100000", "-w", "1",
            "--watch"]


def case_interrupt_watch(c):
    c.start_coordinator()
    c.start_workers(1, slots=2)
    address = "127.0.0.1:%d" % c.port
    watched = Watched(c, ["--coordinator", address] + LONG_RUN)
    run = watched.running_run(60)
    code, err = watched.interrupt()
    expect(code == 130, "run --watch exited %s on SIGINT, expected 130: %s" % (code, err[-1500:]))
    expect("%s goes on" % run in err, "stderr does not say %s goes on: %r" % (run, err[-1500:]))
    watch_again = printed(err, "watch it again")
    expect(watch_again.endswith("watch " + run), "watch command: %r" % watch_again)
    cancel = printed(err, "cancel it")
    expect(c.run_state(run)[0] == "running", "%s is not running after the SIGINT" % run)
    run_printed(c, cancel, "the printed cancel command")
    expect(c.wait_state(run, ("cancelled", "failed", "succeeded"), 20) == "cancelled",
           "%s did not end cancelled" % run)


def case_interrupt_local(c):
    store = os.path.join(c.dir, "runs.db")
    watched = Watched(c, ["local", "--workers", "1", "--slots", "2", "--store", store] + LONG_RUN)
    run = watched.running_run(90)
    code, err = watched.interrupt()
    expect(code == 130, "local run --watch exited %s on SIGINT, expected 130: %s" % (
        code, err[-1500:]))
    expect("cancelled %s" % run in err, "stderr does not say %s was cancelled: %r" % (
        run, err[-1500:]))
    shown = collbench(c, "local", "--workers", "1", "--store", store, "show", run, timeout=90)
    expect(shown.returncode == 0, "show %s exited %d: %s" % (run, shown.returncode,
                                                            shown.stderr[-1500:]))
    state, _ = svc.parse_show_header(shown.stdout)
    expect(state == "cancelled", "%s is %s in the store, not cancelled" % (run, state))


CASES = {
    "help_offline": case_help_offline,
    "connection_error": case_connection_error,
    "local_help_flags": case_local_help_flags,
    "missing_folder": case_missing_folder,
    "follow_ups": case_follow_ups,
    "interrupt_watch": case_interrupt_watch,
    "interrupt_local": case_interrupt_local,
}


def main():
    return svc.case_main(__doc__, CASES, prog="cli_test")


if __name__ == "__main__":
    sys.exit(main())
