// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace collbench {
namespace {

// How often Next() looks at the leader while no output arrives, and how long
// it waits for the pipes to reach EOF once the group has been killed.
constexpr absl::Duration kPollSlice = absl::Milliseconds(50);
constexpr absl::Duration kDrainAfterExit = absl::Seconds(1);
// Grace given by the destructor of a process nobody has killed yet.
constexpr absl::Duration kDestructorGrace = absl::Seconds(1);
constexpr size_t kReadChunkBytes = 64 * 1024;

absl::Status ErrnoStatus(absl::string_view call, int error) {
  return absl::InternalError(absl::StrCat(call, ": ", std::strerror(error)));
}

// What /proc/PID/stat says about a process.
struct ProcEntry {
  pid_t ppid = 0;
  pid_t pgid = 0;
  pid_t sid = 0;
  char state = 0;
};

std::map<pid_t, ProcEntry> ScanProcesses() {
  std::map<pid_t, ProcEntry> table;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return table;
  while (dirent* entry = readdir(dir)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    std::ifstream file(absl::StrCat("/proc/", pid, "/stat"));
    std::string line;
    if (!std::getline(file, line)) continue;
    // "pid (comm) state ppid pgrp session ...": comm may hold spaces and ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    ProcEntry proc;
    if (rest >> proc.state >> proc.ppid >> proc.pgid >> proc.sid) table[pid] = proc;
  }
  closedir(dir);
  return table;
}

// The entries of process `pid`'s initial environment (empty when unreadable).
std::vector<std::string> EnvironOf(pid_t pid) {
  constexpr size_t kMaxEnvironBytes = 1 << 20;
  std::ifstream file(absl::StrCat("/proc/", pid, "/environ"), std::ios::binary);
  std::string environ_data;
  char buffer[16384];
  while (file.read(buffer, sizeof buffer) || file.gcount() > 0) {
    environ_data.append(buffer, file.gcount());
    if (environ_data.size() > kMaxEnvironBytes) break;
  }
  return absl::StrSplit(environ_data, '\0', absl::SkipEmpty());
}

// Whether process `pid`'s environment holds the entry `wanted` ("K=V").
bool EnvironHas(pid_t pid, const std::string& wanted) {
  for (const std::string& entry : EnvironOf(pid)) {
    if (entry == wanted) return true;
  }
  return false;
}

// The containment id in process `pid`'s environment, or "" when none.
std::string ContainmentIdOf(pid_t pid) {
  const std::string prefix = absl::StrCat(kContainmentEnv, "=");
  for (const std::string& entry : EnvironOf(pid)) {
    if (absl::StartsWith(entry, prefix)) return entry.substr(prefix.size());
  }
  return "";
}

// Adds `roots` and all their descendants to `tree`.
void AddDescendants(const std::multimap<pid_t, pid_t>& children, std::vector<pid_t> roots,
                    std::set<pid_t>* tree) {
  while (!roots.empty()) {
    const pid_t pid = roots.back();
    roots.pop_back();
    if (!tree->insert(pid).second) continue;
    auto [begin, end] = children.equal_range(pid);
    for (auto it = begin; it != end; ++it) roots.push_back(it->second);
  }
}

// Everything a process started (see process.h, Containment): the members
// of group `pgid`, the processes carrying `marker` ("K=V") in their
// environment, the sessions any of those opened, and all descendants.
std::set<pid_t> ContainedTree(pid_t pgid, const std::string& marker,
                              const std::map<pid_t, ProcEntry>& table) {
  const pid_t self = getpid();
  const pid_t own_sid = getsid(0);
  std::multimap<pid_t, pid_t> children;
  std::vector<pid_t> roots;
  for (const auto& [pid, proc] : table) {
    children.emplace(proc.ppid, pid);
    if (pid == self) continue;
    if (proc.pgid == pgid || (proc.state != 'Z' && EnvironHas(pid, marker))) roots.push_back(pid);
  }
  std::set<pid_t> tree;
  AddDescendants(children, std::move(roots), &tree);
  std::set<pid_t> sessions;
  for (pid_t pid : tree) {
    auto it = table.find(pid);
    if (it != table.end() && it->second.sid > 1 && it->second.sid != own_sid) {
      sessions.insert(it->second.sid);
    }
  }
  std::vector<pid_t> session_members;
  for (const auto& [pid, proc] : table) {
    if (pid != self && sessions.count(proc.sid) > 0) session_members.push_back(pid);
  }
  AddDescendants(children, std::move(session_members), &tree);
  tree.erase(self);
  return tree;
}

std::vector<std::string> EnvironmentEntries(const std::map<std::string, std::string>& env,
                                            const std::string& containment_id) {
  std::vector<std::string> entries;
  for (const auto& [key, value] : env) {
    if (key != kContainmentEnv) entries.push_back(absl::StrCat(key, "=", value));
  }
  entries.push_back(absl::StrCat(kContainmentEnv, "=", containment_id));
  return entries;
}

// The leaders of live PosixProcesses: their exit status is theirs to
// collect, so ReapAdoptedOrphans() leaves them alone. A process is added
// under the lock before anyone can see it exit and removed as it is reaped.
struct LeaderRegistry {
  absl::Mutex mu;
  std::map<pid_t, std::string> pids ABSL_GUARDED_BY(mu);  // leader -> containment id
};

LeaderRegistry& Leaders() {
  static auto* registry = new LeaderRegistry();
  return *registry;
}

std::string NextContainmentId() {
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(getpid(), "-", ++counter);
}

class PosixProcess final : public Process {
 public:
  PosixProcess(pid_t pid, int out_fd, int err_fd, std::string containment_id)
      : pid_(pid),
        marker_(absl::StrCat(kContainmentEnv, "=", containment_id)),
        fds_{out_fd, err_fd},
        // Readable once the leader exits (Linux 5.3+; close-on-exec): Next()
        // wakes at its exit instead of at the next poll slice. -1 where the
        // kernel has none, and the slices find the exit.
        exit_fd_(static_cast<int>(syscall(SYS_pidfd_open, pid, 0))) {}
  PosixProcess(const PosixProcess&) = delete;
  PosixProcess& operator=(const PosixProcess&) = delete;
  ~PosixProcess() override;

  pid_t pid() const override { return pid_; }
  pid_t pgid() const override { return pid_; }
  absl::StatusOr<ProcessEvent> Next(absl::Duration timeout) override;
  void Kill(absl::Duration grace) override;

 private:
  // SIGKILLs the process' whole tree (process.h, Containment) until nothing
  // of it is left alive, unless already reaped.
  void SweepLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits for the leader and forgets it as a leader.
  void ReapLeaderLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EscalateIfDue();
  void CheckLeader();
  void Reap();
  ProcessEvent ExitEvent() const;
  // Reads one chunk from a readable pipe; closes it at EOF.
  bool ReadChunk(int index, ProcessEvent* event);

  const pid_t pid_;
  const std::string marker_;  // "COLLBENCH_CONTAINMENT=<id>"
  int fds_[2];  // stdout, stderr; -1 once closed. Owner thread only.
  const int exit_fd_;  // a pidfd of the leader, or -1

  // Owner thread only.
  bool leader_exited_ = false;
  int exit_code_ = -1;
  absl::Time drain_deadline_ = absl::InfiniteFuture();
  bool done_ = false;
  int next_fd_ = 0;  // alternates between the pipes for fairness

  mutable absl::Mutex mu_;
  absl::Time kill_deadline_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  bool term_sent_ ABSL_GUARDED_BY(mu_) = false;
  bool hard_killed_ ABSL_GUARDED_BY(mu_) = false;
  bool reaped_ ABSL_GUARDED_BY(mu_) = false;
};

PosixProcess::~PosixProcess() {
  if (!done_) {
    Kill(kDestructorGrace);
    while (!done_) {
      if (!Next(absl::InfiniteDuration()).ok()) break;
    }
  }
  if (!done_) {  // Next() failed: make sure of the reap anyway.
    absl::MutexLock lock(&mu_);
    SweepLocked();
    ReapLeaderLocked();
  }
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
  if (exit_fd_ >= 0) close(exit_fd_);
}

void PosixProcess::SweepLocked() {
  if (reaped_) return;
  // A process may fork while the tree is being killed: sweep until a scan
  // finds nothing alive (a few rounds at most in practice).
  constexpr int kMaxRounds = 20;
  for (int round = 0; round < kMaxRounds; ++round) {
    const std::map<pid_t, ProcEntry> table = ScanProcesses();
    bool any_alive = false;
    for (pid_t pid : ContainedTree(pid_, marker_, table)) {
      auto it = table.find(pid);
      if (pid <= 1 || it == table.end() || it->second.state == 'Z') continue;
      any_alive = true;
      kill(pid, SIGKILL);
    }
    kill(-pid_, SIGKILL);
    ReapAdoptedOrphans();
    if (!any_alive) return;
    absl::SleepFor(absl::Milliseconds(5));
  }
}

void PosixProcess::ReapLeaderLocked() {
  if (reaped_) return;
  LeaderRegistry& leaders = Leaders();
  absl::MutexLock lock(&leaders.mu);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  leaders.pids.erase(pid_);
  reaped_ = true;
}

void PosixProcess::Kill(absl::Duration grace) {
  absl::MutexLock lock(&mu_);
  const absl::Time deadline = absl::Now() + grace;
  if (deadline < kill_deadline_) kill_deadline_ = deadline;
  if (!term_sent_ && !reaped_) {
    term_sent_ = true;
    kill(-pid_, SIGTERM);  // the daemons stop their ranks; the sweep follows
  }
}

void PosixProcess::EscalateIfDue() {
  absl::MutexLock lock(&mu_);
  if (hard_killed_ || absl::Now() < kill_deadline_) return;
  hard_killed_ = true;
  SweepLocked();
}

void PosixProcess::CheckLeader() {
  siginfo_t info{};
  // WNOWAIT: observe the exit but keep the zombie, which pins the group id
  // until the group has been cleaned up.
  if (waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return;
  if (info.si_pid != pid_) return;  // still running
  leader_exited_ = true;
  exit_code_ = info.si_code == CLD_EXITED ? info.si_status : 128 + info.si_status;
  drain_deadline_ = absl::Now() + kDrainAfterExit;
  absl::MutexLock lock(&mu_);
  SweepLocked();  // nothing the process started outlives it
}

void PosixProcess::Reap() {
  absl::MutexLock lock(&mu_);
  ReapLeaderLocked();
  done_ = true;
}

ProcessEvent PosixProcess::ExitEvent() const {
  ProcessEvent event;
  event.kind = ProcessEvent::Kind::kExit;
  event.exit_code = exit_code_;
  return event;
}

bool PosixProcess::ReadChunk(int index, ProcessEvent* event) {
  std::string buffer(kReadChunkBytes, '\0');
  ssize_t n;
  do {
    n = read(fds_[index], buffer.data(), buffer.size());
  } while (n < 0 && errno == EINTR);
  if (n <= 0) {  // EOF, or an error that ends the stream just the same
    close(fds_[index]);
    fds_[index] = -1;
    return false;
  }
  buffer.resize(n);
  event->kind = index == 0 ? ProcessEvent::Kind::kStdout : ProcessEvent::Kind::kStderr;
  event->data = std::move(buffer);
  return true;
}

absl::StatusOr<ProcessEvent> PosixProcess::Next(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (done_) return ExitEvent();
    EscalateIfDue();
    if (!leader_exited_) CheckLeader();
    const bool pipes_open = fds_[0] >= 0 || fds_[1] >= 0;
    if (leader_exited_ && (!pipes_open || absl::Now() >= drain_deadline_)) {
      Reap();
      return ExitEvent();
    }
    absl::Time wake = std::min({deadline, absl::Now() + kPollSlice, drain_deadline_});
    {
      absl::MutexLock lock(&mu_);
      if (!hard_killed_) wake = std::min(wake, kill_deadline_);
    }
    // The pipes usually reach EOF a moment before the exit can be seen;
    // the pidfd wakes the loop at the exit itself.
    pollfd polls[3] = {{fds_[0], POLLIN, 0},
                       {fds_[1], POLLIN, 0},
                       {leader_exited_ ? -1 : exit_fd_, POLLIN, 0}};
    const int wait_ms =
        static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(wake - absl::Now())));
    const int ready = poll(polls, 3, wait_ms);
    if (ready < 0 && errno != EINTR) return ErrnoStatus("poll", errno);
    for (int i = 0; i < 2 && ready > 0; ++i) {
      const int index = (next_fd_ + i) % 2;
      if (fds_[index] < 0 || polls[index].revents == 0) continue;
      ProcessEvent event;
      if (ReadChunk(index, &event)) {
        next_fd_ = 1 - index;
        return event;
      }
    }
    if (absl::Now() >= deadline) return ProcessEvent{};
  }
}

class PosixProcessRunner final : public ProcessRunner {
 public:
  absl::StatusOr<std::unique_ptr<Process>> Start(const ProcessOptions& options) override;
};

// posix_spawn attributes: own process group, empty mask, default dispositions.
absl::Status InitSpawnAttributes(posix_spawnattr_t* attr) {
  sigset_t mask;
  sigemptyset(&mask);
  sigset_t defaults;
  sigemptyset(&defaults);
  // The classic signals only: glibc keeps its internal real-time ones (32,
  // 33) to itself and would leave them ignored in the child if asked here.
  for (int sig = 1; sig < 32; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaddset(&defaults, sig);
  }
  if (posix_spawnattr_setflags(
          attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF) != 0 ||
      posix_spawnattr_setpgroup(attr, 0) != 0 || posix_spawnattr_setsigmask(attr, &mask) != 0 ||
      posix_spawnattr_setsigdefault(attr, &defaults) != 0) {
    return absl::InternalError("posix_spawnattr setup failed");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Process>> PosixProcessRunner::Start(const ProcessOptions& options) {
  if (options.argv.empty() || options.argv[0].empty() || options.argv[0][0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("process argv[0] must be an absolute program path, not '",
                     options.argv.empty() ? "" : options.argv[0], "'"));
  }
  int out[2];
  int err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return ErrnoStatus("pipe2", errno);
  if (pipe2(err, O_CLOEXEC) != 0) {
    const int error = errno;
    close(out[0]);
    close(out[1]);
    return ErrnoStatus("pipe2", error);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!options.inherit_stdin) {
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  }
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  absl::Status status = InitSpawnAttributes(&attr);

  const std::string containment_id = NextContainmentId();
  std::vector<std::string> env = EnvironmentEntries(options.env, containment_id);
  std::vector<char*> envp;
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = options.argv;
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  pid_t pid = -1;
  if (status.ok()) {
    // Registered as a leader before ReapAdoptedOrphans() can see it exit.
    LeaderRegistry& leaders = Leaders();
    absl::MutexLock lock(&leaders.mu);
    const int rc = posix_spawn(&pid, args[0].c_str(), &actions, &attr, argv.data(), envp.data());
    if (rc != 0) {
      status = ErrnoStatus(absl::StrCat("posix_spawn ", args[0]), rc);
    } else {
      leaders.pids.emplace(pid, containment_id);
    }
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out[1]);
  close(err[1]);
  if (!status.ok()) {
    close(out[0]);
    close(err[0]);
    return status;
  }
  return std::unique_ptr<Process>(new PosixProcess(pid, out[0], err[0], containment_id));
}

}  // namespace

std::unique_ptr<ProcessRunner> NewPosixProcessRunner() {
  return std::make_unique<PosixProcessRunner>();
}

bool EnableChildSubreaper() { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

int ReapAdoptedOrphans() {
  LeaderRegistry& leaders = Leaders();
  absl::MutexLock lock(&leaders.mu);
  const pid_t self = getpid();
  int reaped = 0;
  for (const auto& [pid, proc] : ScanProcesses()) {
    if (proc.ppid != self || proc.state != 'Z' || leaders.pids.count(pid) > 0) continue;
    if (waitpid(pid, nullptr, WNOHANG) == pid) ++reaped;
  }
  return reaped;
}

int EndStrayOrphans() {
  LeaderRegistry& leaders = Leaders();
  absl::MutexLock lock(&leaders.mu);
  const pid_t self = getpid();
  std::set<std::string> live_ids;
  for (const auto& [pid, id] : leaders.pids) live_ids.insert(id);
  int ended = 0;
  for (const auto& [pid, proc] : ScanProcesses()) {
    if (proc.ppid != self || proc.state == 'Z' || leaders.pids.count(pid) > 0) continue;
    const std::string id = ContainmentIdOf(pid);
    if (!id.empty() && live_ids.count(id) > 0) continue;  // its Process sweeps it
    if (id.empty() && !leaders.pids.empty()) continue;    // unattributable while runs live
    if (kill(pid, SIGKILL) == 0) ++ended;
  }
  return ended;
}

std::vector<pid_t> FindContained(const std::string& containment_id) {
  const std::string marker = absl::StrCat(kContainmentEnv, "=", containment_id);
  std::vector<pid_t> found;
  for (const auto& [pid, proc] : ScanProcesses()) {
    if (pid != getpid() && proc.state != 'Z' && EnvironHas(pid, marker)) found.push_back(pid);
  }
  return found;
}

absl::StatusOr<ProcessResult> CollectOutput(Process* process, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  ProcessResult result;
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(absl::StrCat(
          "process ", process->pid(), " still running after ", absl::FormatDuration(timeout)));
    }
    absl::StatusOr<ProcessEvent> event = process->Next(left);
    if (!event.ok()) return event.status();
    switch (event->kind) {
      case ProcessEvent::Kind::kStdout:
        result.stdout_data += event->data;
        break;
      case ProcessEvent::Kind::kStderr:
        result.stderr_data += event->data;
        break;
      case ProcessEvent::Kind::kExit:
        result.exit_code = event->exit_code;
        return result;
      case ProcessEvent::Kind::kTimeout:
        break;
    }
  }
}

namespace {

// A scripted process: its output, then its exit (or a wait for Kill()).
class FakeProcess final : public Process {
 public:
  FakeProcess(pid_t pid, FakeProcessRunner::Script script,
              std::shared_ptr<FakeProcessRunner::State> runner)
      : pid_(pid), runner_(std::move(runner)) {
    if (!script.stdout_data.empty()) {
      pending_.push_back({ProcessEvent::Kind::kStdout, script.stdout_data, -1});
    }
    if (!script.stderr_data.empty()) {
      pending_.push_back({ProcessEvent::Kind::kStderr, script.stderr_data, -1});
    }
    wait_for_kill_ = script.wait_for_kill;
    exit_code_ = script.exit_code;
  }

  pid_t pid() const override { return pid_; }
  pid_t pgid() const override { return pid_; }

  absl::StatusOr<ProcessEvent> Next(absl::Duration timeout) override {
    absl::MutexLock lock(&mu_);
    if (!pending_.empty()) {
      ProcessEvent event = std::move(pending_.front());
      pending_.erase(pending_.begin());
      return event;
    }
    if (wait_for_kill_) {
      mu_.AwaitWithTimeout(absl::Condition(&killed_), timeout);
      if (!killed_) return ProcessEvent{};
    }
    ProcessEvent exit;
    exit.kind = ProcessEvent::Kind::kExit;
    exit.exit_code = wait_for_kill_ ? 128 + SIGTERM : exit_code_;
    return exit;
  }

  void Kill(absl::Duration) override {
    {
      absl::MutexLock lock(&mu_);
      if (killed_) return;
      killed_ = true;
    }
    absl::MutexLock lock(&runner_->mu);
    ++runner_->kill_count;
  }

 private:
  const pid_t pid_;
  const std::shared_ptr<FakeProcessRunner::State> runner_;
  absl::Mutex mu_;
  std::vector<ProcessEvent> pending_ ABSL_GUARDED_BY(mu_);
  bool wait_for_kill_ ABSL_GUARDED_BY(mu_) = false;
  int exit_code_ ABSL_GUARDED_BY(mu_) = 0;
  bool killed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

void FakeProcessRunner::SetScript(std::string joined_argv, Script script) {
  absl::MutexLock lock(&state_->mu);
  state_->scripts[std::move(joined_argv)] = std::move(script);
}

void FakeProcessRunner::SetStartError(absl::Status status) {
  absl::MutexLock lock(&state_->mu);
  state_->start_error = std::move(status);
}

absl::StatusOr<std::unique_ptr<Process>> FakeProcessRunner::Start(const ProcessOptions& options) {
  absl::MutexLock lock(&state_->mu);
  if (!state_->start_error.ok()) return state_->start_error;
  state_->started.push_back(options);
  Script script;
  auto it = state_->scripts.find(absl::StrJoin(options.argv, " "));
  if (it != state_->scripts.end()) script = it->second;
  return std::unique_ptr<Process>(new FakeProcess(state_->next_pid++, std::move(script), state_));
}

std::vector<ProcessOptions> FakeProcessRunner::started() const {
  absl::MutexLock lock(&state_->mu);
  return state_->started;
}

int FakeProcessRunner::kill_count() const {
  absl::MutexLock lock(&state_->mu);
  return state_->kill_count;
}

}  // namespace collbench
