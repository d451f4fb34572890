// SPDX-License-Identifier: Apache-2.0
// The workers as the coordinator manages them: what each worker's stream
// says (registration, heartbeats, run status, results, logs, rank
// progress), what operators decide about workers (drain, clear, forget,
// and a hunt's quarantine), and the periodic tick. It ties who the workers
// are (WorkerDirectory) to the runs on them (RunManager): a worker that
// joins re-adopts its runs and lets the queue move, a lost one fails the
// run it carries ranks of, an undrained or cleared one may take a waiting
// run. The worker gateway and the API's worker methods call this class.
//
// Thread safety: every method may be called from any thread; it holds no
// lock of its own and calls the directory and the lifecycle in turn, never
// one under the other's lock.
#ifndef COLLBENCH_SERVER_CORE_FLEET_H_
#define COLLBENCH_SERVER_CORE_FLEET_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collbench/v1/gateway.pb.h"
#include "collbench/v1/worker.pb.h"
#include "server/core/launcher_pool.h"
#include "server/core/run_manager.h"
#include "server/core/worker_directory.h"

namespace collbench {

struct FleetOptions {
  // A worker that sent nothing for this long is lost.
  absl::Duration heartbeat_timeout = absl::Seconds(6);
};

class Fleet {
 public:
  // None of the pointers is owned; all outlive the fleet. Without
  // `launchers`, a launcher's registration is refused.
  Fleet(WorkerDirectory* workers, RunManager* runs, FleetOptions options = {},
        LauncherPool* launchers = nullptr)
      : workers_(workers), runs_(runs), launchers_(launchers), options_(options) {}

  // --- A worker's stream (the gateway) -------------------------------------
  // WorkerDirectory::RegisterAsync (LauncherPool::Register for a launcher's
  // stream, hello.launcher), then the runs it lists are re-adopted and the
  // queue placed, before `done` is told (on the thread and with the rules
  // RegisterAsync states). Its errors.
  void OnRegisterAsync(const v1::Register& hello, absl::Time now, absl::string_view peer,
                       WorkerDirectory::RegisterDone done);
  // OnRegisterAsync, waiting for its outcome (tests and tools).
  absl::StatusOr<WorkerDirectory::Registration> OnRegister(const v1::Register& hello,
                                                           absl::Time now,
                                                           absl::string_view peer = "");
  // A registration refused before OnRegister ("refused_concurrent").
  void CountRegistration(absl::string_view result) { workers_->CountRegistration(result); }
  void OnHeartbeat(const std::string& worker, uint64_t session, absl::Time now);
  // LOST at once (without the lifecycle's lock: a fleet whose streams all
  // end does not queue behind it); the run it carries ranks of fails.
  void OnDisconnect(const std::string& worker, uint64_t session, absl::Time now);
  void OnRunStatus(const std::string& worker, const v1::RunStatus& status, absl::Time now) {
    runs_->OnRunStatus(worker, status, now);
  }
  void OnResult(const std::string& worker, v1::RunResult result, absl::Time now) {
    runs_->OnResult(worker, std::move(result), now);
  }
  void OnLog(const std::string& worker, const v1::RunLog& log, absl::Time now) {
    runs_->OnLog(worker, log, now);
  }
  void OnRankProgress(const std::string& worker, const v1::RankProgressReport& report,
                      absl::Time now) {
    // Only a run's workers know where its ranks are; a launcher hosts none.
    if (!LauncherPool::IsLauncherName(worker)) runs_->OnRankProgress(worker, report, now);
  }

  // --- Operators and hunts -------------------------------------------------
  std::vector<v1::Worker> ListWorkers() { return workers_->List(); }
  // Launchers connected and heard from (LauncherPool::connected).
  int connected_launchers() const { return launchers_ != nullptr ? launchers_->connected() : 0; }
  WorkerDirectory::Page ListWorkers(size_t start, size_t count) {
    return workers_->List(start, count);
  }
  absl::StatusOr<v1::Worker> GetWorker(absl::string_view name) { return workers_->Get(name); }
  absl::StatusOr<v1::Worker> DrainWorker(absl::string_view name) { return workers_->Drain(name); }
  // Undrained: queued runs may fit on it now.
  absl::StatusOr<v1::Worker> UndrainWorker(absl::string_view name, absl::Time now);
  absl::StatusOr<v1::Worker> SuspectWorker(absl::string_view name, const v1::WorkerSuspicion& why) {
    return workers_->Suspect(name, why);
  }
  // Cleared: runs waiting for it may start.
  absl::StatusOr<v1::Worker> ClearWorker(absl::string_view name, absl::string_view by,
                                         absl::Time now);
  // WorkerDirectory::Forget, refused (FailedPrecondition) also while a run
  // waits for it after a restart.
  absl::Status ForgetWorker(absl::string_view name);
  // Forgets every name gone for longer than the directory's forget_after
  // (none held by a run), so that --max-workers counts only names heard
  // from within it; the names forgotten. Called by the coordinator's
  // ticker, with the runs' retention.
  std::vector<std::string> ForgetGoneWorkers(absl::Time now);
  WorkerCounts worker_counts();

  // Expires silent workers (their runs fail), enforces the runs' timeouts
  // and grace periods, places the queue, and writes changed worker rows.
  void Tick(absl::Time now);

 private:
  WorkerDirectory* const workers_;
  RunManager* const runs_;
  LauncherPool* const launchers_;
  const FleetOptions options_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_FLEET_H_
