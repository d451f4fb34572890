// Child processes for the worker agent: the Exec RPC runs the MPI daemon
// command (orted, hydra_pmi_proxy) through a ProcessRunner, and tests of the
// classes above it use FakeProcessRunner instead.
//
// A process is `sh -c COMMAND`, started in its own process group so the
// whole tree it spawns can be signalled at once. Its stdout and stderr are
// pipes read incrementally through Process::Next(); stdin is /dev/null unless
// asked otherwise.
//
// No zombies, no orphans. The group leader is observed with waitid(WNOWAIT)
// and reaped only after the group has been killed: while the leader is an
// unreaped zombie its pid, and so the group id, cannot be reused, so a
// signal sent to the group never reaches an unrelated process. When the
// leader exits, every process still in its group (and their descendants) is
// SIGKILLed before the leader is reaped. A process that leaves the group
// (the MPI daemons put each rank in a group of its own) is found by walking
// the process tree from the group's members (/proc ppid links) and is killed
// with them. Kill() sends SIGTERM to the group first so that orted / the
// hydra proxy can stop their ranks in order, then SIGKILLs the tree after
// the grace period. The destructor of a Process that is still running kills
// it the same way and reaps it, so dropping a Process never leaks one.
// What cannot be caught: a process that both leaves the group and whose
// parent has already exited (it was re-parented to init). The launcher must
// therefore keep daemons attached (Open MPI: no --daemonize, see
// launch_shim.h). Killed grandchildren are re-parented to init, which reaps
// them; a worker that runs as PID 1 in a container needs an init
// (`docker run --init`, tini) for that.
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

struct ProcessOptions {
  // Run as `sh -c command`.
  std::string command;
  // Added to (or replacing entries of) the agent's own environment.
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

// The real runner: posix_spawn of /bin/sh with POSIX_SPAWN_SETPGROUP, default
// signal dispositions and an empty signal mask in the child (the agent
// ignores SIGPIPE; its children must not inherit that).
std::unique_ptr<ProcessRunner> NewPosixProcessRunner();

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
// A process' script is chosen by exact command text; a command without a
// script prints nothing and exits 0. A script with `wait_for_kill` emits its
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

  void SetScript(std::string command, Script script);
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
