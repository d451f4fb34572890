// SPDX-License-Identifier: Apache-2.0
// The launcher role (docs/design/run-lifecycle.md#launch): runs an assignment's mpirun /
// mpiexec, reads rank 0's JSON lines as they come, and reports the run's
// status, each size result (numbered and kept in the ResultSpool until
// acknowledged) and the launcher's output lines. Cancel() kills the whole
// process tree; the MPI launcher's daemons on peers end with it.
//
// A job whose engine has written its "end" record but whose MPI launcher
// has not exited `finalize_grace` later is stuck in MPI_Finalize (MPICH 4.0
// over UCX's TCP transport does that in about half of 4-rank runs, in a
// plain MPI program too): the launcher ends its processes and the run
// counts as the end record says, with a log line saying what happened.
//
// Each run gets a private directory (mode 0700) under work_dir holding its
// token file (0600; the shim reads it, the token is in no environment or
// argv) and, for a launcher that needs one, the shim link; it is removed
// when the run ends.
// Output lines are bounded (LineBuffer, 1 MiB; a cut is logged once per
// run) and so is the spool (a refused result fails the run, named).
//
// Thread safety: all methods may be called from any thread. Each run has a
// thread of its own that owns its process.
#ifndef COLLBENCH_WORKER_AGENT_LAUNCHER_H_
#define COLLBENCH_WORKER_AGENT_LAUNCHER_H_

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collbench/v1/gateway.pb.h"
#include "worker/agent/launch_command.h"
#include "worker/agent/process.h"
#include "worker/agent/result_spool.h"

namespace collbench {

// Where the launcher's reports go: the agent's stream to the coordinator.
// Send may drop messages while disconnected; everything that matters is in
// the spool and re-sent after reconnecting.
class ReportSink {
 public:
  virtual ~ReportSink() = default;
  virtual void Send(const v1::WorkerMessage& message) = 0;
};

struct LauncherOptions {
  LaunchPaths paths;
  std::string self_worker;  // "workers/{id}"
  std::string work_dir;     // for per-run directories (token file, shim link)
  // The environment mpirun / mpiexec start from (AllowedOwnEnvironment()).
  std::map<std::string, std::string> base_env;
  absl::Duration kill_grace = absl::Seconds(3);
  // From the engine's end record to the launcher's exit, at most.
  absl::Duration finalize_grace = absl::Seconds(20);
};

class Launcher {
 public:
  // None of the pointers is owned; all outlive the launcher.
  Launcher(ProcessRunner* runner, ResultSpool* spool, ReportSink* sink, LauncherOptions options);
  ~Launcher();  // cancels every run and waits for their threads

  // Starts the run in the background. AlreadyExists if it runs already.
  absl::Status Start(const v1::Assignment& assignment);
  // Kills the run's processes; the run then reports CANCELLED.
  void Cancel(const std::string& run, const std::string& reason);
  std::vector<std::string> Active() const;

 private:
  struct RunState;
  void Drive(std::shared_ptr<RunState> state);
  void Report(RunState& state, v1::RunState run_state, const std::string& error);
  void HandleLine(RunState& state, const std::string& line);
  void EndIfStuckInFinalize(RunState& state);
  void HandleOutput(RunState& state, const ProcessEvent& event);
  void Log(RunState& state, const std::string& stream, const std::string& text);

  ProcessRunner* const runner_;
  ResultSpool* const spool_;
  ReportSink* const sink_;
  const LauncherOptions options_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<RunState>> runs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_LAUNCHER_H_
