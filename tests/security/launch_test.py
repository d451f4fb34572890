#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Security tests of the launch path
(docs/design/security.md#no-shell-on-the-launch-path): a real coordinator,
two collbench-worker processes and the CLI on 127.0.0.1 per case.

    launch_test.py --bin-dir build/bin --case hostile_env [--case ...]
    launch_test.py --list

Each attack asserts that its effect did not happen (a proof file under the
case's temporary folder is never created, no token is found), not merely
that an error came back:
  hostile_env          spec.env keys and values of every hostile kind are
                       refused naming the key, no run is created, no proof
  exec_non_daemon      with a live run's real token, a direct Exec of a
                       non-daemon argv is refused and runs nothing
  tokens_in_processes  during a run, neither the run token nor the worker's
                       join token is in any /proc/PID/environ or cmdline of
                       the run's processes, nor in logs or the run's output
  setsid_rank          a rank binary that leaves a setsid'd child behind:
                       nothing of it outlives the run
  tuning_takes_effect  allowed tuning parameters still reach the ranks: an
                       Open MPI coll_tuned algorithm with a tiny segment
                       size slows bcast down by a large factor; an MPICH
                       algorithm cvar changes the run's outcome
  fake_launcher        a worker registered under a name that sorts first
                       (SPREAD would once have made it its runs' launcher)
                       launches nothing: a run across it and a peer waits for
                       the trusted launcher, which holds the token alone; the
                       worker holds its digest, and presenting that to the
                       peer's Exec with an orted / hydra_pmi_proxy payload
                       starts nothing (no proof file, no process of it)
  tuning_file          a dynamic rules file from the workers' --tuning-dir,
                       named by its bare name, takes effect across two
                       workers (the same slow bcast); a link in the folder
                       that points out of it, a missing file, a launcher
                       without --tuning-dir and a peer without one (its
                       Exec refuses the path) each fail the run; an MPICH
                       JSON selection file from the folder reaches the ranks
"""

import glob
import hashlib
import os
import shutil
import stat
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.join(HERE, "..", "integration", "service"))
import service_test as svc  # noqa: E402  (the shared cluster helpers)
from service_test import Failure, expect, poll  # noqa: E402

JOIN_TOKEN = "join-7f3e9a0c-never-in-a-child"


def proof_files(c):
    return sorted(glob.glob(os.path.join(c.dir, "proof*")))


def expect_no_proof(c, what):
    found = proof_files(c)
    expect(not found, "%s: the attack's proof file was created: %s" % (what, found))


def hostile_env(proof):
    """(KEY, VALUE) attacks of every kind; each would create `proof` if it
    reached a shell, a fork agent, a loader or a parameter file."""
    sh = "/bin/sh -c 'touch %s'" % proof
    return [
        ("OMPI_MCA_orte_fork_agent", sh),                          # a program in front of ranks
        ("OMPI_MCA_plm_rsh_agent", sh),                            # a program for daemons
        ("OMPI_MCA_foo", "$(touch %s)" % proof),                   # unknown name, shell value
        ("OMPI_MCA_btl", "tcp$(touch %s)" % proof),                # known name, shell value
        ("OMPI_MCA_coll_tuned_allreduce_algorithm", "`touch %s`" % proof),
        ("OMPI_MCA_mca_base_param_files", proof + ".conf"),        # a parameter file
        ("OMPI_MCA_coll_tuned_dynamic_rules_filename", proof + ".rules"),
        ("NCCL_NET_PLUGIN", "/tmp/x.so"),                          # a plugin library
        ("NCCL_TUNER_PLUGIN", proof + ".so"),
        ("NCCL_TOPO_FILE", proof + ".xml"),                        # a file
        ("NCCL_ALGO", "Ring;touch %s" % proof),                   # metacharacters in a value
        ("LD_PRELOAD", proof + ".so"),                             # the loader
        ("UCX_MODULE_DIR", os.path.dirname(proof)),                # a directory
        ("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "ring|touch %s" % proof),
        ("MPIR_CVAR_$(touch %s)" % proof, "1"),                    # metacharacters in a name
    ]


def case_hostile_env(c):
    c.start_coordinator()
    c.start_workers(2, slots=1)
    proof = os.path.join(c.dir, "proof-env")
    for key, value in hostile_env(proof):
        for mpi in ("openmpi", "mpich"):
            time.sleep(0.15)  # below the coordinator's create rate limit
            done = c.cli("run", "allreduce", "--ranks", 2, "--placement", "spread", "--mpi", mpi,
                         "--sizes", "8", "-n", 2, "--env", "%s=%s" % (key, value),
                         "--wait", expect_code=None, timeout=60)
            expect(done.returncode == 2,
                   "%s=%s (%s): exit %d, expected 2 (refused)\n%s%s" % (
                       key, value, mpi, done.returncode, done.stdout, done.stderr))
            # spec.env.KEY, or for a key that is no variable name (it would
            # break the field path) spec.env: key 'KEY' ...
            named = ("spec.env.%s:" % key in done.stderr or
                     "spec.env: key '%s'" % key in done.stderr)
            expect(named, "%s: the refusal does not name spec.env and the key: %r"
                   % (key, done.stderr))
    expect(not c.list_runs(), "a hostile run was created: %s" % c.list_runs())
    time.sleep(1)
    expect_no_proof(c, "hostile spec.env")
    # The same workers still run an allowed run.
    done = c.cli("run", "allreduce", "--ranks", 2, "--placement", "spread", "--sizes", "8,1K",
                 "-n", 5, "--check", "--env", "OMPI_MCA_coll_tuned_use_dynamic_rules=1",
                 "--wait", "--output", "jsonl", timeout=90)
    svc.check_results(svc.parse_jsonl(done.stdout), [8, 1024], "allowed run")


def agent_addresses(c):
    """{worker name: Agent address} from the workers' start-up lines."""
    out = {}
    for name, proc in c.workers.items():
        with open(proc.log_path, errors="replace") as f:
            for line in f:
                if ": agent on " in line:
                    out[name] = line.split(": agent on ", 1)[1].split(",", 1)[0].strip()
    return out


def live_token_file(c):
    """The token file of the run in progress (in its launcher's work dir)."""
    def find():
        files = glob.glob(os.path.join(c.dir, "*", "run-*", "token"))
        return files[0] if files else None
    return poll("the run's token file", find, 30, 0.1)


LONG_RUN_ITERS = 400000


def start_long_run(c):
    """A run that lasts until the test cancels it: 400,000 iterations of 1
    MiB (4,000 took under a second on a fast machine, and the run ended
    before the test was done with it; a time budget stops early once the
    median is known)."""
    return c.create_run("allreduce", "--ranks", 2, "--placement", "spread", "--sizes", "1M",
                        "-n", LONG_RUN_ITERS, "-w", 2, "--transport", "tcp")


def case_exec_non_daemon(c):
    c.start_coordinator()
    names = c.start_workers(2, slots=1)
    run = start_long_run(c)
    token_file = live_token_file(c)
    launcher = token_file.split(os.sep)[-3]
    peer = [n for n in names if n != launcher][0]
    address = agent_addresses(c)[peer]
    probe = os.path.join(c.bin_dir, "exec_probe")
    proof = os.path.join(c.dir, "proof-exec")
    attacks = [
        ["/bin/sh", "-c", "touch " + proof],
        ["sh", "-c", "touch " + proof],
        ["/usr/bin/touch", proof],
        ["orted", "-mca", "orte_fork_agent", "/usr/bin/touch " + proof],
        ["orted", "-mca", "mca_base_param_files", proof],
        ["hydra_pmi_proxy", "--launcher-exec", "/usr/bin/touch", "--proxy-id", "1"],
        ["orted; touch " + proof],
    ]
    for argv in attacks:
        done = svc.subprocess.run([probe, address, run, token_file] + argv, capture_output=True,
                                  text=True, timeout=60)
        # Status 3 (INVALID_ARGUMENT): the token was accepted and the argv refused.
        expect(done.returncode == 0 and "status: 3 " in done.stderr,
               "Exec %s with the run's token: exit %d, %s" % (argv, done.returncode,
                                                             done.stderr.strip()[-500:]))
    # The real daemon with a shell-looking argument runs verbatim: no shell
    # sees it (orted fails on its own), and no proof appears.
    svc.subprocess.run([probe, address, run, token_file, "orted", "-mca", "ess",
                        "$(touch %s)" % proof], capture_output=True, text=True, timeout=60)
    time.sleep(1)
    expect_no_proof(c, "direct Exec")
    c.cli("cancel", run)
    c.wait_state(run, ("cancelled", "failed", "succeeded"), 60)
    svc.expect_no_run_processes(c, 15)


def scan_for(pids, secrets):
    """[(pid, file, secret)] for every secret found in the environ or cmdline."""
    found = []
    for pid in pids:
        for name in ("environ", "cmdline"):
            try:
                with open("/proc/%d/%s" % (pid, name), "rb") as f:
                    data = f.read()
            except OSError:
                continue
            for secret in secrets:
                if secret.encode() in data:
                    found.append((pid, name, secret))
    return found


def case_tokens_in_processes(c):
    c.start_coordinator()
    # The join token sits in each worker's own environment (as an operator's
    # COLLBENCH_JOIN_TOKEN would); none of it may reach what runs start.
    for name in ("w1", "w2"):
        c.start_worker(name, 1, env={"COLLBENCH_JOIN_TOKEN": JOIN_TOKEN})
    c.wait_workers_ready(["w1", "w2"])
    for mpi in ("openmpi", "mpich"):
        run = c.create_run("allreduce", "--ranks", 2, "--placement", "spread", "--sizes", "1M",
                           "-n", LONG_RUN_ITERS, "-w", 2, "--transport", "tcp", "--mpi", mpi)
        token_file = live_token_file(c)
        with open(token_file) as f:
            run_token = f.read().strip()
        expect(len(run_token) >= 16, "run token too short to search for: %r" % run_token)
        mode = stat.S_IMODE(os.stat(token_file).st_mode)
        expect(mode == 0o600, "token file mode %o" % mode)
        expect(stat.S_IMODE(os.stat(os.path.dirname(token_file)).st_mode) == 0o700,
               "run directory not private")
        poll("the run's ranks", lambda: svc.ranks_running(c, 2), 30, 0.1)
        pids = [p.pid for p in svc.run_processes(c)]
        expect(len(pids) >= 4, "too few run processes to scan: %d" % len(pids))
        found = scan_for(pids, [run_token, JOIN_TOKEN])
        expect(not found, "%s: tokens found in the run's processes: %s" % (mpi, [
            (pid, name, "run token" if s == run_token else "join token") for pid, name, s in found]))
        c.cli("cancel", run)
        c.wait_state(run, ("cancelled", "failed", "succeeded"), 60)
        svc.expect_no_run_processes(c, 15)
        # The launcher removes the run's folder once it has read mpirun's
        # exit, a moment after the last process is gone.
        poll("the token file to go with the run (it outlived the run)",
             lambda: not os.path.exists(token_file), 5, 0.05)
        shown = (c.cli("show", run).stdout + c.cli("show", run, "--output", "jsonl").stdout +
                 c.cli("watch", run, expect_code=None, timeout=30).stdout)
        expect(run_token not in shown and JOIN_TOKEN not in shown,
               "a token is in `collbench show` or the watch stream")
        for proc in c.popens:
            with open(proc.log_path, errors="replace") as f:
                expect(run_token not in f.read(), "the run token is in %s" % proc.log_path)


class SetsidRankCluster(svc.Cluster):
    """Workers whose collbench-rank leaves a setsid'd child behind, then runs
    the real engine. The child waits for the file `run-ended` (made once the
    run is over) and then writes a proof file: it does so only if it
    survived the run."""

    def __init__(self, bin_dir, case):
        super().__init__(bin_dir, case)
        self.fake_bin = os.path.join(self.dir, "bin")
        os.makedirs(self.fake_bin)
        # The worker finds collbench-rank beside its own (real) path.
        shutil.copy2(os.path.join(bin_dir, "collbench-worker"), self.fake_bin)
        for rank in ("collbench-rank", "collbench-rank-mpich"):
            real = os.path.join(bin_dir, rank)
            if not os.access(real, os.X_OK):
                continue
            script = os.path.join(self.fake_bin, rank)
            with open(script, "w") as f:
                f.write("#!/bin/sh\n"
                        "setsid /bin/sh -c 'while [ ! -e %s/run-ended ]; do sleep 0.2; done; "
                        "touch %s/proof-setsid-$$' </dev/null >/dev/null 2>&1 &\n"
                        "exec %s \"$@\"\n" % (self.dir, self.dir, real))
            os.chmod(script, 0o755)

    def binary(self, name):
        if name == "collbench-worker":
            return os.path.join(self.fake_bin, name)
        return super().binary(name)


def case_setsid_rank(c):
    c.start_coordinator()
    c.start_workers(2, slots=1)
    for mpi in ("openmpi", "mpich"):
        if mpi == "mpich" and not os.access(os.path.join(c.bin_dir, "collbench-rank-mpich"),
                                            os.X_OK):
            continue
        done = c.cli("run", "allreduce", "--ranks", 2, "--placement", "spread", "--mpi", mpi,
                     "--sizes", "8,1K", "-n", 5, "--check", "--wait", "--output", "jsonl",
                     timeout=90)
        svc.check_results(svc.parse_jsonl(done.stdout), [8, 1024], "%s run" % mpi)
        svc.expect_no_run_processes(c, 10)
    open(os.path.join(c.dir, "run-ended"), "w").close()
    time.sleep(2)
    expect_no_proof(c, "a rank's setsid'd child")


def p50(results, nbytes, what):
    for r in results:
        if int(r["bytes"]) == nbytes:
            return float(r["p50_s"])
    raise Failure("%s has no result for %d bytes" % (what, nbytes))


def timed_run(c, env, mpi="openmpi", op="bcast", nbytes=4 << 20, workers=None):
    """(the CLI's result, the run's size results)."""
    args = [op, "--ranks", 2, "--placement", "spread", "--mpi", mpi, "--transport", "tcp",
            "--sizes", nbytes, "-n", 3, "-w", 1, "--wait", "--output", "jsonl"]
    if workers:
        args += ["--workers", workers]
    for key, value in env.items():
        args += ["--env", "%s=%s" % (key, value)]
    done = c.cli("run", *args, timeout=240, expect_code=None)
    results = svc.parse_jsonl(done.stdout) if done.returncode == 0 else []
    return done, results


def expect_slow_bcast(c, env, what, workers=None):
    """Open MPI: bcast's pipeline algorithm (3) with 64-byte segments sends a
    4 MiB message as 65536 messages, the default a few: `env` must make the
    median iteration more than 5 times slower than no setting."""
    base, base_results = timed_run(c, {}, workers=workers)
    expect(base.returncode == 0, "baseline run failed: %s %s" % (base.stdout, base.stderr))
    slow, slow_results = timed_run(c, env, workers=workers)
    expect(slow.returncode == 0, "%s: run failed: %s %s" % (what, slow.stdout, slow.stderr))
    fast_s = p50(base_results, 4 << 20, "baseline")
    slow_s = p50(slow_results, 4 << 20, what)
    expect(slow_s > 5 * fast_s,
           "%s: p50 %.4fs vs default %.4fs; the setting did not take effect" % (
               what, slow_s, fast_s))
    svc.log("open mpi bcast 4M p50: default %.4fs, %s %.4fs" % (fast_s, what, slow_s))


def case_tuning_takes_effect(c):
    c.start_coordinator()
    c.start_workers(2, slots=1)
    expect_slow_bcast(c, {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
                          "OMPI_MCA_coll_tuned_bcast_algorithm": "3",
                          "OMPI_MCA_coll_tuned_bcast_algorithm_segmentsize": "64"},
                      "coll_tuned bcast algorithm 3 / 64 B segments")
    # MPICH: an algorithm name MPICH does not know fails the run at MPI_Init,
    # a known one runs: the cvar reaches the ranks.
    if not os.access(os.path.join(c.bin_dir, "collbench-rank-mpich"), os.X_OK):
        return
    good, _ = timed_run(c, {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling"},
                        mpi="mpich", op="allreduce", nbytes=1024)
    expect(good.returncode == 0, "MPICH recursive_doubling run failed: %s %s" % (
        good.stdout, good.stderr))
    bad, _ = timed_run(c, {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "no_such_algorithm"},
                       mpi="mpich", op="allreduce", nbytes=1024)
    expect(bad.returncode != 0, "MPICH ran with an unknown allreduce algorithm: the cvar "
                                "did not reach the ranks")


# Open MPI's classic dynamic rules: bcast (collective 7) on 2 ranks, from 0
# bytes up: the pipeline algorithm (3) with 64-byte segments.
SLOW_BCAST_RULES = "1\n7\n1\n2\n1\n0 3 0 64\n"
RULES_KEY = "OMPI_MCA_coll_tuned_dynamic_rules_filename"


def case_tuning_file(c):
    tuning = os.path.join(c.dir, "tuning")
    os.makedirs(tuning)
    with open(os.path.join(tuning, "slow-bcast.conf"), "w") as f:
        f.write(SLOW_BCAST_RULES)
    outside = os.path.join(c.dir, "outside.conf")
    with open(outside, "w") as f:
        f.write(SLOW_BCAST_RULES)
    os.symlink(outside, os.path.join(tuning, "escape.conf"))
    c.start_coordinator()
    for name in ("w1", "w2"):
        c.start_worker(name, 1, args=["--tuning-dir", tuning])
    c.start_worker("w3", 1)  # no tuning folder
    c.wait_workers_ready(["w1", "w2", "w3"])

    def rules(name):
        return {"OMPI_MCA_coll_tuned_use_dynamic_rules": "1", RULES_KEY: name}

    expect_slow_bcast(c, rules("slow-bcast.conf"),
                      "rules file (bcast algorithm 3 / 64 B segments)", workers="w1,w2")

    # Each of these fails the run naming the key, the file and why: the
    # launcher's refusals, and the peer's (w3's Exec refuses the path mpirun
    # hands its orted; the run's error starts with the shim's line). The
    # same pair without the file runs, so it is the file.
    control, _ = timed_run(c, {}, workers="w1,w3")
    expect(control.returncode == 0, "w1,w3 without a tuning file failed: %s %s" % (
        control.stdout, control.stderr))
    for name, workers, why in [("escape.conf", "w1,w2", "outside the tuning folder"),
                               ("missing.conf", "w1,w2", "no such file"),
                               ("slow-bcast.conf", "w3,w1", "no tuning folder"),
                               ("slow-bcast.conf", "w1,w3", "no tuning folder")]:
        done, _ = timed_run(c, rules(name), workers=workers)
        expect(done.returncode != 0, "%s on %s: the run succeeded" % (name, workers))
        text = done.stdout + done.stderr
        for want in (RULES_KEY, name, why):
            expect(want in text, "%s on %s: the failure does not say %r:\n%s" % (
                name, workers, want, text[-2000:]))
        svc.log("%s on %s: refused" % (name, workers))

    # MPICH reads its JSON collective selection from the folder too: a file
    # that is not JSON aborts the ranks (MPICH 4.0 has no other visible
    # effect to test for without a full selection tree), the same run
    # without it succeeds.
    if not os.access(os.path.join(c.bin_dir, "collbench-rank-mpich"), os.X_OK):
        return
    with open(os.path.join(tuning, "broken.json"), "w") as f:
        f.write("{ not json\n")
    good, _ = timed_run(c, {}, mpi="mpich", op="allreduce", nbytes=1024, workers="w1,w2")
    expect(good.returncode == 0, "MPICH run failed: %s %s" % (good.stdout, good.stderr))
    bad, _ = timed_run(c, {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": "broken.json"},
                       mpi="mpich", op="allreduce", nbytes=1024, workers="w1,w2")
    expect(bad.returncode != 0, "MPICH ran with a broken JSON selection file: the file did "
                                "not reach the ranks")


def case_fake_launcher(c):
    c.start_coordinator(args=["--worker-launch", "off"])
    c.start_worker("0000-evil", 1)
    c.start_worker("w1", 1)
    c.wait_workers_ready(["0000-evil", "w1"])
    run = start_long_run(c)
    # No launcher yet: the run waits, and no worker was given it.
    time.sleep(2)
    header = c.cli("show", run).stdout.splitlines()[0]
    expect("queued (waiting for a launcher" in header,
           "%s before any launcher connected: %s" % (run, header))
    expect(not glob.glob(os.path.join(c.dir, "*", "run-*")),
           "a worker launched the run: %s" % glob.glob(os.path.join(c.dir, "*", "run-*")))
    c.start_launcher()
    token_file = live_token_file(c)
    expect(token_file.split(os.sep)[-3] == "launcher",
           "the run's token is in %s, not with the launcher" % token_file)
    # What a worker of the run holds of the token: its SHA-256.
    with open(token_file) as f:
        digest = hashlib.sha256(f.read().strip().encode()).hexdigest()
    digest_file = os.path.join(c.dir, "digest")
    with open(digest_file, "w") as f:
        f.write(digest + "\n")
    address = agent_addresses(c)["w1"]
    probe = os.path.join(c.bin_dir, "exec_probe")
    proof = os.path.join(c.dir, "proof-fake-launcher")
    for argv in (["orted", "-mca", "orte_fork_agent", "/usr/bin/touch " + proof],
                 ["hydra_pmi_proxy", "--launcher-exec", "/usr/bin/touch", "--proxy-id", "1"],
                 ["/bin/sh", "-c", "touch " + proof]):
        done = svc.subprocess.run([probe, address, run, digest_file] + argv, capture_output=True,
                                  text=True, timeout=60)
        # Status 7 (PERMISSION_DENIED): refused at the token, before the argv.
        expect("status: 7 " in done.stderr,
               "Exec %s with the token's digest: exit %d, %s" % (argv, done.returncode,
                                                                done.stderr.strip()[-500:]))
    time.sleep(1)
    expect_no_proof(c, "Exec with the digest")
    running = [i.describe() for i in svc.all_procs().values() if proof in i.describe()]
    expect(not running, "a process of the payload runs: %s" % running)
    c.cli("cancel", run)
    c.wait_state(run, ("cancelled", "failed", "succeeded"), 60)
    svc.expect_no_run_processes(c, 15)


CASES = {
    "hostile_env": case_hostile_env,
    "exec_non_daemon": case_exec_non_daemon,
    "tokens_in_processes": case_tokens_in_processes,
    "setsid_rank": case_setsid_rank,
    "tuning_takes_effect": case_tuning_takes_effect,
    "tuning_file": case_tuning_file,
    "fake_launcher": case_fake_launcher,
}


def make_cluster(bin_dir, case):
    if case == "setsid_rank":
        return SetsidRankCluster(bin_dir, case)
    return svc.Cluster(bin_dir, case)


def main():
    return svc.case_main(__doc__, CASES, make_cluster=make_cluster, prog="launch_test",
                         binaries=("collbench", "collbench-coordinator", "collbench-worker",
                                   "collbench-launcher", "collbench-rank", "exec_probe"))


if __name__ == "__main__":
    sys.exit(main())
