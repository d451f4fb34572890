// SPDX-License-Identifier: Apache-2.0
// The Agent service (docs/design/run-lifecycle.md#launch,
// docs/design/security.md#no-shell-on-the-launch-path): runs the MPI daemon a
// peer's launch shim asks for (only the installed orted / hydra_pmi_proxy,
// arguments verbatim, no shell: daemon_command.h), with this worker's allowed
// environment (clean_env.h), only for runs whose token digest the coordinator
// gave this worker, from the caller that presents the token itself (the run's
// launcher; no worker of a run holds its token), and for each run only the
// daemon of the run's library (the digest comes with it).
//
// ExecManager is the plain class (token table, running commands) that tests
// drive without gRPC; ExecService is the thin gRPC layer over it.
//
// No handler waits: an Exec for a run whose token has not arrived yet is
// refused at once with UNAVAILABLE (the coordinator sends a run's token to
// its peers just before the launcher starts, on another stream, so a
// launcher's Exec can come first; the launch shim retries that code
// briefly), one for a run that ended or with a wrong token with
// PERMISSION_DENIED. Each caller (peer address) has a token bucket of Exec
// calls (exec_rate); beyond it RESOURCE_EXHAUSTED. The refused path
// finishes its call exactly once, whatever the client's deadline.
//
// ExecService uses the callback API (grpc::CallbackServerContext, as the
// other collbench services do): cancellation arrives at once through
// OnCancel() instead of being polled, and no gRPC thread is held while a
// command runs. Each Exec call owns one pump thread that reads the process
// (Process::Next blocks) and queues output for the reactor, which writes one
// message at a time; the queue is bounded, so a slow reader slows the pump
// instead of growing memory.
#ifndef COLLBENCH_WORKER_AGENT_EXEC_SERVICE_H_
#define COLLBENCH_WORKER_AGENT_EXEC_SERVICE_H_

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collbench/v1/agent.grpc.pb.h"
#include "worker/agent/daemon_command.h"
#include "common/rate_limiter.h"
#include "worker/agent/process.h"

namespace collbench {

class ExecManager;

// One running command, registered with its manager so Revoke() and
// KillAll() can reach it. Destroying it kills the command if it still runs,
// waits for it (Process' destructor reaps it) and unregisters it.
// Thread safety: process() is used by one owner thread; Kill() from any.
class ExecHandle {
 public:
  ~ExecHandle();
  ExecHandle(const ExecHandle&) = delete;
  ExecHandle& operator=(const ExecHandle&) = delete;

  const std::string& run() const { return run_; }
  Process* process() const { return process_.get(); }
  // Kill(grace) on the process with the manager's grace period.
  void Kill();

 private:
  friend class ExecManager;
  ExecHandle(ExecManager* manager, std::string run, std::unique_ptr<Process> process)
      : manager_(manager), run_(std::move(run)), process_(std::move(process)) {}

  ExecManager* const manager_;
  const std::string run_;
  std::unique_ptr<Process> process_;
};

struct ExecManagerOptions {
  // Between SIGTERM and SIGKILL when a command is cancelled or revoked:
  // time for orted / hydra_pmi_proxy to stop their ranks.
  absl::Duration kill_grace = absl::Seconds(3);
  // Exec calls per caller (peer address, port ignored): a launcher's shim
  // makes one per daemon it starts here, plus its retries.
  RateLimit exec_rate = {/*per_second=*/20, /*burst=*/50};
  // The daemons this worker runs by name (daemon_command.h); a request
  // only names one of them.
  DaemonPaths daemons;
  // The environment every daemon starts from: the worker's allowed
  // variables (clean_env.h, AllowedOwnEnvironment()). Requests carry none.
  std::map<std::string, std::string> base_env;
  // Added to base_env for every daemon (e.g. where this worker's ranks put
  // their shared-memory segments, MpiFlavor::SegmentDirEnv).
  std::map<std::string, std::string> default_env;
  // This worker's --tuning-dir (real path; empty: none): the only place a
  // tuning file handed to a daemon may lie (daemon_command.h).
  std::string tuning_dir;
};

// The token table and the commands running for each run.
// Thread safety: every method may be called from any thread.
class ExecManager {
 public:
  // REQUIRES: `runner` outlives the manager and every handle it returns.
  explicit ExecManager(ProcessRunner* runner, ExecManagerOptions options = {});
  // Kills what still runs and waits for the handles to go (KillAll()).
  ~ExecManager();
  ExecManager(const ExecManager&) = delete;
  ExecManager& operator=(const ExecManager&) = delete;

  // Accept Exec for `run` (runs/{id}) with the token whose SHA-256 is
  // `token_digest` (TokenDigest; only the run's launcher holds the token),
  // for the daemons of `mpi`'s flavour only (MpiFlavor::daemons); replaces
  // an older digest.
  void Allow(std::string run, std::string token_digest, v1::MpiImplementation mpi);
  // Stop accepting `run` and kill every command still running for it.
  void Revoke(absl::string_view run);
  // For shutdown: refuse every later Start() (UNAVAILABLE), kill every
  // command, and wait up to `wait` for all handles to be destroyed. Returns
  // whether they all were.
  bool KillAll(absl::Duration wait = absl::Seconds(10));

  // Starts the MPI daemon `argv` names for `run` (CheckDaemonArgv: the
  // installed daemon of the run's library, verbatim arguments; no shell)
  // with base_env plus default_env. Never waits: Unavailable naming the run
  // when its token has not arrived (yet); PermissionDenied naming the run
  // when it was revoked or the token does not match (the token itself never
  // appears in an error); InvalidArgument naming the word when argv is not
  // a daemon's or not the daemon of the run's library.
  absl::StatusOr<std::unique_ptr<ExecHandle>> Start(absl::string_view run, absl::string_view token,
                                                    std::vector<std::string> argv);

  // Takes one Exec call from `caller`'s bucket: OK, or ResourceExhausted
  // naming the wait.
  absl::Status AdmitCaller(absl::string_view caller, absl::Time now);

  // Commands running now (all runs, or one).
  int running() const;
  int running(absl::string_view run) const;

 private:
  friend class ExecHandle;
  // A handle leaves handles_ (what Revoke/KillAll signal) before its process
  // is destroyed, and live_ (what running/KillAll count) after it is reaped.
  void Unregister(ExecHandle* handle);
  void Release(const std::string& run);

  ProcessRunner* const runner_;
  const ExecManagerOptions options_;
  mutable absl::Mutex mu_;
  struct Allowed {
    std::string token_digest;
    v1::MpiImplementation mpi;
  };
  std::map<std::string, Allowed, std::less<>> tokens_ ABSL_GUARDED_BY(mu_);
  // Runs revoked lately (oldest first, bounded), refused as ended rather
  // than as not yet known.
  std::deque<std::string> revoked_ ABSL_GUARDED_BY(mu_);
  RateLimiter exec_limiter_ ABSL_GUARDED_BY(mu_);
  std::set<ExecHandle*> handles_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int, std::less<>> live_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

// Agent.Exec over an ExecManager. Streams stdout/stderr chunks as they come
// and the exit code last; when the client goes away (cancel, broken stream,
// deadline) the command's process group is killed.
// Thread safety: as gRPC requires; all state lives in per-call reactors.
class ExecService final : public v1::Agent::CallbackService {
 public:
  // REQUIRES: `manager` outlives the service and the server's calls.
  explicit ExecService(ExecManager* manager) : manager_(manager) {}

  grpc::ServerWriteReactor<v1::ExecOutput>* Exec(grpc::CallbackServerContext* context,
                                                 const v1::ExecRequest* request) override;

 private:
  ExecManager* const manager_;
};

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_EXEC_SERVICE_H_
