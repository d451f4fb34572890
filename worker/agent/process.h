// SPDX-License-Identifier: Apache-2.0
// Child processes for the worker agent: the launcher's mpirun / mpiexec and
// the MPI daemons Exec starts (orted, hydra_pmi_proxy) go through a
// ProcessRunner, and tests of the classes above it use FakeProcessRunner.
//
// No shell: a process is its argv, argv[0] an absolute path, started with
// posix_spawn in its own process group and with exactly the environment
// given (nothing of the agent's own environment is added; see
// clean_env.h). Its stdout and stderr are pipes read incrementally through
// Process::Next(); stdin is /dev/null unless asked otherwise.
//
// Containment: everything a process starts is found and ended with it.
// Each process gets a containment id, passed to it as the environment
// variable COLLBENCH_CONTAINMENT (kContainmentEnv), which its descendants
// inherit. Its tree is: the members of its process group, every process
// whose /proc/PID/environ carries its id, every process in a session one
// of those started (setsid), and all their descendants (/proc ppid links).
// So a double-forked, setsid'd child that was re-parented away is still
// found. One that also cleared its environment is adopted by a worker that
// is a child subreaper (EnableChildSubreaper()) and ended by
// EndStrayOrphans() once no run is live; ReapAdoptedOrphans() collects the
// killed orphans.
//
// No zombies, no orphans. The group leader is observed with waitid(WNOWAIT)
// and reaped only after its tree has been killed: while the leader is an
// unreaped zombie its pid, and so the group id, cannot be reused, so a
// signal sent to the group never reaches an unrelated process. When the
// leader exits, its whole tree is SIGKILLed (swept until nothing is left)
// before the leader is reaped. Kill() sends SIGTERM to the group first so
// that orted / the hydra proxy can stop their ranks in order, then SIGKILLs
// the tree after the grace period. The destructor of a Process that is
// still running kills it the same way and reaps it, so dropping a Process
// never leaks one. Orphans adopted by a subreaper worker are not Process
// leaders; ReapAdoptedOrphans() waits only for those (never for a live
// leader, whose exit status belongs to its Process).
#ifndef COLLBENCH_WORKER_AGENT_PROCESS_H_
#define COLLBENCH_WORKER_AGENT_PROCESS_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace collbench {

// The variable naming a process' containment id (see above).
inline constexpr char kContainmentEnv[] = "COLLBENCH_CONTAINMENT";

struct ProcessOptions {
  // argv[0] is the program's absolute path; no PATH search, no shell.
  std::vector<std::string> argv;
  // The child's complete environment. The runner adds kContainmentEnv.
  std::map<std::string, std::string> env;
  // When false (the default) the child's stdin is /dev/null.
  bool inherit_stdin = false;
};

// One step of a running process, as returned by Process::Next().
struct ProcessEvent {
  enum class Kind {
    kTimeout,  // nothing happened within the timeout
    kStdout,   // `data` holds bytes the process wrote to stdout
    kStderr,   // `data` holds bytes the process wrote to stderr
    kExit,     // the process has exited and been reaped: see exit_code
  };
  Kind kind = Kind::kTimeout;
  std::string data;
  // 0..255 for a normal exit, 128+N when killed by signal N. Set for kExit.
  int exit_code = -1;
};

// A started process. Thread safety: Next() is called from one thread at a
// time (the owner); Kill(), pid() and pgid() may be called from any thread,
// also while Next() blocks.
class Process {
 public:
  virtual ~Process() = default;

  virtual pid_t pid() const = 0;
  // The process group; equal to pid() for the POSIX runner.
  virtual pid_t pgid() const = 0;

  // Blocks up to `timeout` for the next event. Output comes in the order it
  // is read; kExit comes once, after all output, and is repeated by every
  // later call. absl::InfiniteDuration() waits for the next event.
  virtual absl::StatusOr<ProcessEvent> Next(absl::Duration timeout) = 0;

  // Asks the process group to stop: SIGTERM now, SIGKILL to the whole tree
  // once `grace` has passed (escalation happens inside Next() or the
  // destructor, so keep calling Next() until kExit). Idempotent; a second
  // call may only shorten the grace. Returns at once.
  virtual void Kill(absl::Duration grace) = 0;
};

// Starts processes. Thread safety: Start() may be called from any thread.
class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  virtual absl::StatusOr<std::unique_ptr<Process>> Start(const ProcessOptions& options) = 0;
};

// The real runner: posix_spawn of argv[0] with POSIX_SPAWN_SETPGROUP,
// default signal dispositions and an empty signal mask in the child (the
// agent ignores SIGPIPE; its children must not inherit that).
// InvalidArgument when argv is empty or argv[0] is not an absolute path.
std::unique_ptr<ProcessRunner> NewPosixProcessRunner();

// Makes this process a child subreaper (prctl PR_SET_CHILD_SUBREAPER):
// orphans of its descendants are re-parented to it instead of init. Returns
// whether the kernel agreed.
bool EnableChildSubreaper();

// Waits for every zombie child of this process that is not the leader of a
// live Process (adopted orphans). Thread-safe; the worker calls it
// periodically and every sweep calls it. Returns how many were reaped.
int ReapAdoptedOrphans();

// SIGKILLs the live orphans this (subreaper) process adopted that no live
// Process can own: those whose containment id names no live Process, and,
// once no Process is live at all, those with no readable id (a descendant
// that cleared its environment). Thread-safe; the worker calls it with
// ReapAdoptedOrphans(). Returns how many were signalled.
int EndStrayOrphans();

// Every live process whose environment carries `containment_id` as
// kContainmentEnv (for tests and diagnostics).
std::vector<pid_t> FindContained(const std::string& containment_id);

// Everything a process wrote, and how it ended.
struct ProcessResult {
  std::string stdout_data;
  std::string stderr_data;
  int exit_code = -1;
};

// Drives `process` until it exits, collecting its output. DeadlineExceeded
// when it has not exited after `timeout` (the process is left running; the
// caller may Kill() it and call again).
absl::StatusOr<ProcessResult> CollectOutput(Process* process, absl::Duration timeout);

// For tests of the classes that run processes (ExecManager, the launcher).
// A process' script is chosen by its argv joined with single spaces; a
// process without a script prints nothing and exits 0. A script with `wait_for_kill` emits its
// output and then runs until Kill(), ending with 128+SIGTERM.
// Thread safety: all methods may be called from any thread.
class FakeProcessRunner : public ProcessRunner {
 public:
  struct Script {
    std::string stdout_data;
    std::string stderr_data;
    int exit_code = 0;
    bool wait_for_kill = false;
  };

  void SetScript(std::string joined_argv, Script script);
  // Makes the next Start() calls fail with `status` (OK to succeed again).
  void SetStartError(absl::Status status);

  absl::StatusOr<std::unique_ptr<Process>> Start(const ProcessOptions& options) override;

  // Every ProcessOptions passed to Start(), in order.
  std::vector<ProcessOptions> started() const;
  // How many started processes have been killed.
  int kill_count() const;

  // Shared with the fake processes, which may outlive a Start() call.
  struct State;

 private:
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

struct FakeProcessRunner::State {
  mutable absl::Mutex mu;
  std::map<std::string, Script> scripts ABSL_GUARDED_BY(mu);
  absl::Status start_error ABSL_GUARDED_BY(mu);
  std::vector<ProcessOptions> started ABSL_GUARDED_BY(mu);
  int kill_count ABSL_GUARDED_BY(mu) = 0;
  pid_t next_pid ABSL_GUARDED_BY(mu) = 100000;
};

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_PROCESS_H_
