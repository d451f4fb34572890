// SPDX-License-Identifier: Apache-2.0
#include "local/local.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/cli.h"
#include "client/coordinator_client.h"
#include "client/local_flags.h"
#include "common/atomic_file.h"
#include "common/flag_parser.h"
#include "server/app/coordinator.h"

namespace collbench {
namespace {

std::string SelfDir() {
  char path[PATH_MAX] = {0};
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  const std::string self = n > 0 ? std::string(path, n) : "";
  return self.substr(0, self.rfind('/'));
}

// A fresh random token: 256 bits from the kernel, as hex.
absl::StatusOr<std::string> RandomToken() {
  std::string bytes(32, '\0');
  std::ifstream random("/dev/urandom", std::ios::binary);
  if (!random.read(bytes.data(), bytes.size())) {
    return absl::InternalError("cannot read /dev/urandom for a session token");
  }
  return absl::BytesToHexString(bytes);
}

// Writes `text` to a new file only its owner may read (0600, whatever the
// umask); fails if the file exists.
absl::Status WritePrivateFile(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot create ", path));
  fchmod(fd, 0600);
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!written) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

class LocalCluster {
 public:
  ~LocalCluster() { Stop(); }

  // `store`: a SQLite file that keeps the runs after the command, or "" for
  // an in-memory store that ends with it. `tuning_dir`: every worker's
  // --tuning-dir, or "" for none.
  absl::Status Start(int workers, int slots, const std::string& store,
                     const std::string& tuning_dir) {
    tuning_dir_ = tuning_dir;
    char dir[] = "/tmp/collbench-local.XXXXXX";
    if (mkdtemp(dir) == nullptr) return absl::InternalError("cannot create a temporary folder");
    dir_ = dir;
    chmod(dir, 0700);  // mkdtemp's mode; no other user may look inside
    // Beside a kept store, the workers' secrets are kept too: a later
    // `collbench local --store FILE` starts workers under the same names,
    // which that store's coordinator admits only with their secrets.
    state_root_ = store.empty() ? "" : store + ".worker-state";
    CoordinatorOptions options;
    options.grpc_listen = "127.0.0.1:0";
    absl::Status tokens = WriteSessionTokens(&options);
    if (!tokens.ok()) return tokens;
    options.store = store.empty() ? ":memory:" : store;
    // One user on one machine: no per-caller create rate to share out.
    options.core.runs.create_rate = RateLimit{/*per_second=*/0, /*burst=*/1};
    // Runs across workers are started by this session's launcher only.
    options.core.runs.worker_launch_fallback = false;
    absl::StatusOr<std::unique_ptr<Coordinator>> coordinator = Coordinator::Start(options);
    if (!coordinator.ok()) return coordinator.status();
    coordinator_ = *std::move(coordinator);
    address_ = absl::StrCat("127.0.0.1:", coordinator_->grpc_port());
    absl::FPrintF(stderr, "local: coordinator on %s; starting %d workers and a launcher\n",
                  address_, workers);
    for (int i = 0; i < workers; ++i) {
      absl::Status s = Spawn(absl::StrCat("local-", i + 1), slots);
      if (!s.ok()) return s;
    }
    if (absl::Status s = SpawnLauncher(); !s.ok()) return s;
    return WaitForWorkers(workers);
  }

  void Stop() {
    for (pid_t pid : pids_) kill(-pid, SIGTERM);
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    for (pid_t pid : pids_) {
      while (waitpid(pid, nullptr, WNOHANG) == 0) {
        if (absl::Now() > deadline) {
          kill(-pid, SIGKILL);
          waitpid(pid, nullptr, 0);
          break;
        }
        absl::SleepFor(absl::Milliseconds(20));
      }
    }
    pids_.clear();
    if (coordinator_) coordinator_->Shutdown();
    coordinator_.reset();
    if (!dir_.empty()) std::system(absl::StrCat("rm -rf '", dir_, "'").c_str());
    dir_.clear();
  }

  // Cancels every run not yet ended (the coordinator and the workers stop
  // with this process, so nothing would end them) and returns their names.
  std::vector<std::string> CancelUnfinishedRuns() {
    std::vector<std::string> cancelled;
    if (!coordinator_) return cancelled;
    // Workflows first, so that none makes a run after the runs are cancelled.
    if (WorkflowManager* workflows = coordinator_->workflows(); workflows != nullptr) {
      for (const char* state : {"state=QUEUED", "state=RUNNING"}) {
        absl::StatusOr<WorkflowManager::Page> page = workflows->List(1000, "", state);
        if (!page.ok()) continue;
        for (const v1::Workflow& w : page->workflows) {
          if (workflows->Cancel(w.name(), absl::Now()).ok()) cancelled.push_back(w.name());
        }
      }
    }
    RunManager* manager = coordinator_->manager();
    for (v1::RunState state : {v1::QUEUED, v1::SCHEDULED, v1::RUNNING}) {
      absl::StatusOr<Store::RunPage> page = manager->ListRuns(1000, "", state);
      if (!page.ok()) continue;
      for (const v1::Run& run : page->runs) {
        if (manager->CancelRun(run.name(), absl::Now()).ok()) cancelled.push_back(run.name());
      }
    }
    return cancelled;
  }

  const std::string& address() const { return address_; }
  // The operator token of this session, for the command's own calls.
  const std::string& token() const { return operator_token_; }

 private:
  // Other users on this machine can reach 127.0.0.1 too: the coordinator
  // takes only this session's random tokens. The operator token stays in
  // this process; the workers read the join token from a 0600 file in the
  // 0700 folder, never from argv or the environment.
  absl::Status WriteSessionTokens(CoordinatorOptions* options) {
    absl::StatusOr<std::string> operator_token = RandomToken();
    absl::StatusOr<std::string> join_token = RandomToken();
    absl::StatusOr<std::string> launcher_token = RandomToken();
    for (const absl::StatusOr<std::string>* token :
         {&operator_token, &join_token, &launcher_token}) {
      if (!token->ok()) return token->status();
    }
    operator_token_ = *operator_token;
    join_token_file_ = dir_ + "/join-token";
    launcher_token_file_ = dir_ + "/launcher-token";
    options->tokens_file = dir_ + "/tokens";
    absl::Status written = WritePrivateFile(
        options->tokens_file, absl::StrCat("operator ", *operator_token, "\nworker ", *join_token,
                                           "\nlauncher ", *launcher_token, "\n"));
    if (!written.ok()) return written;
    written = WritePrivateFile(join_token_file_, *join_token + "\n");
    if (!written.ok()) return written;
    return WritePrivateFile(launcher_token_file_, *launcher_token + "\n");
  }

  // The session's launcher (collbench-launcher), which starts every run
  // that spans its workers.
  absl::Status SpawnLauncher() {
    return SpawnProcess(
        "launcher",
        {SelfDir() + "/collbench-launcher", "--coordinator", address_, "--listen", "127.0.0.1:0",
         "--name", "local", "--work-dir", dir_ + "/launcher", "--mpi-interface", "127.0.0.0/8",
         "--join-token-file", launcher_token_file_, "--progress-dir", dir_ + "/progress"});
  }

  absl::Status Spawn(const std::string& name, int slots) {
    const std::string binary = SelfDir() + "/collbench-worker";
    const std::string work = absl::StrCat(dir_, "/", name);
    // Everything stays on loopback, MPI's own TCP traffic included.
    std::vector<std::string> args = {binary,
                                     "--coordinator",
                                     address_,
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--name",
                                     name,
                                     "--work-dir",
                                     work,
                                     "--mpi-interface",
                                     "127.0.0.0/8",
                                     "--join-token-file",
                                     join_token_file_};
    // Progress slots in this session's private folder, shared by its workers
    // (all of a run's ranks are on this machine): never the machine-wide default.
    args.insert(args.end(), {"--progress-dir", dir_ + "/progress"});
    if (slots > 0) args.insert(args.end(), {"--slots", absl::StrCat(slots)});
    if (!state_root_.empty()) args.insert(args.end(), {"--state-dir", state_root_ + "/" + name});
    if (!tuning_dir_.empty()) args.insert(args.end(), {"--tuning-dir", tuning_dir_});
    return SpawnProcess(name, std::move(args));
  }

  // Starts args[0] in a process group of its own, its output in
  // DIR/NAME.log.
  absl::Status SpawnProcess(const std::string& name, std::vector<std::string> args) {
    const std::string log = absl::StrCat(dir_, "/", name, ".log");
    const pid_t pid = fork();
    if (pid < 0) return absl::InternalError("fork failed");
    if (pid == 0) {
      setpgid(0, 0);  // its own group, so Stop() reaches everything it started
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      // The log on descriptors 1 and 2 themselves (this process's stdio may
      // be the CLI's terminal filter, which has no descriptor to reopen).
      const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (log_fd < 0) _exit(127);
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(args[0].c_str(), argv.data());
      _exit(127);
    }
    setpgid(pid, pid);
    pids_.push_back(pid);
    return absl::OkStatus();
  }

  absl::Status WaitForWorkers(int wanted) {
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (absl::Now() < deadline) {
      int ready = 0;
      for (const v1::Worker& w : coordinator_->fleet()->ListWorkers()) {
        ready += w.state() == v1::READY;
      }
      if (ready >= wanted && coordinator_->fleet()->connected_launchers() > 0) {
        absl::FPrintF(stderr, "local: %d workers ready, and the launcher\n", ready);
        return absl::OkStatus();
      }
      for (pid_t pid : pids_) {
        if (waitpid(pid, nullptr, WNOHANG) == pid) {
          return absl::InternalError(
              absl::StrCat("a worker or the launcher exited at start; see ", dir_));
        }
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    return absl::DeadlineExceededError(
        absl::StrCat("the workers and the launcher did not all register within 30s; see ", dir_));
  }

  std::string dir_;
  std::string launcher_token_file_;
  std::string state_root_;  // workers' --state-dir parent; empty: their work dirs
  std::string tuning_dir_;  // workers' --tuning-dir; empty: none
  std::string address_;
  std::string operator_token_;
  std::string join_token_file_;
  std::unique_ptr<Coordinator> coordinator_;
  std::vector<pid_t> pids_;
};

// The checks the coordinator and the workers would make, said here where
// they are readable: the store's folder exists (it is never created), the
// tuning folder exists (made absolute for the workers). Returns the exit
// code to stop with, or nullopt to go on.
std::optional<int> CheckPaths(LocalOptions* options) {
  if (!options->store.empty()) {
    if (absl::Status folder = CheckParentFolder(options->store); !folder.ok()) {
      absl::FPrintF(stderr, "collbench local: --store %s\n", folder.message());
      return kExitUsage;
    }
  }
  if (options->tuning_dir.empty()) return std::nullopt;
  char real[PATH_MAX];
  struct stat st;
  if (realpath(options->tuning_dir.c_str(), real) == nullptr || stat(real, &st) != 0 ||
      !S_ISDIR(st.st_mode)) {
    absl::FPrintF(stderr, "collbench local: --tuning-dir %s: not an existing folder\n",
                  options->tuning_dir);
    return kExitUsage;
  }
  options->tuning_dir = real;
  return std::nullopt;
}

// Starts the cluster, runs `command` on it and stops it. Ctrl-C or SIGTERM
// still tears everything down. Whoever comes first ends the session: the
// command finishing, or the signal thread, which cancels the runs not yet
// ended, stops everything and exits 128+signal while the command (a watch
// that saw its run cancelled, a suite going on to its next cell) waits.
int RunOnCluster(const LocalOptions& options, std::vector<std::string> command,
                 const FollowUp& follow_up) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  LocalCluster cluster;
  auto ended = std::make_shared<std::atomic<bool>>(false);
  std::thread([&cluster, signals, ended] {
    int signal = 0;
    if (sigwait(&signals, &signal) != 0 || ended->exchange(true)) return;
    for (const std::string& run : cluster.CancelUnfinishedRuns()) {
      absl::FPrintF(stderr,
                    "\nlocal: interrupted: cancelled %s (the embedded coordinator stops with"
                    " this command)\n",
                    run);
    }
    absl::FPrintF(stderr, "local: stopping\n");
    cluster.Stop();
    _exit(128 + signal);
  }).detach();
  auto end = [&](int code) {
    if (ended->exchange(true)) {
      for (;;) absl::SleepFor(absl::Hours(1));  // the signal thread exits the process
    }
    cluster.Stop();
    return code;
  };
  absl::Status started =
      cluster.Start(options.workers, options.slots, options.store, options.tuning_dir);
  if (!started.ok()) {
    absl::FPrintF(stderr, "collbench local: %s\n", started.message());
    return end(kExitFailed);
  }
  // The embedded coordinator ends with this command, so a run is always
  // waited for: without --watch it prints the results at the end.
  if (command[0] == "run" && std::find(command.begin(), command.end(), "--wait") == command.end() &&
      std::find(command.begin(), command.end(), "--watch") == command.end()) {
    command.push_back("--wait");
  }
  return end(RunCommand(cluster.address(), cluster.token(), command, follow_up));
}

}  // namespace

int RunLocal(const std::string& program, const std::vector<std::string>& args) {
  LocalOptions options;
  FlagParser flags;
  AddLocalFlags(&flags, &options);
  const absl::Status parsed = flags.Parse(args, /*stop_at_positional=*/true);
  const std::string usage =
      absl::StrCat("usage: collbench local ", flags.Synopsis(), " COMMAND...");
  if (parsed.ok() && flags.help() && flags.rest().empty()) {
    absl::PrintF(
        "%s\n"
        "An embedded coordinator and K local workers on 127.0.0.1 for one command;\n"
        "nothing is left running. COMMAND is any collbench command.\n%s",
        usage, flags.Usage());
    return kExitOk;
  }
  if (!parsed.ok() || flags.rest().empty() || options.workers < 1) {
    absl::FPrintF(stderr, "collbench local: %s\n",
                  !parsed.ok()          ? std::string(parsed.message())
                  : options.workers < 1 ? std::string("--workers must be at least 1")
                                        : usage);
    return kExitUsage;
  }
  const FollowUp follow_up(program,
                           options.store.empty()
                               ? std::vector<std::string>{"local"}
                               : std::vector<std::string>{"local", "--store", options.store},
                           /*kept=*/!options.store.empty());
  if (AsksForHelp(flags.rest())) {  // the command's help needs no coordinator
    return RunCommand("127.0.0.1:0", "", flags.rest(), follow_up);
  }
  if (std::optional<int> stop = CheckPaths(&options)) return *stop;
  return RunOnCluster(options, flags.rest(), follow_up);
}

}  // namespace collbench
