// SPDX-License-Identifier: Apache-2.0
// The launcher's record of what it owes the coordinator
// (docs/design/run-lifecycle.md#results-and-durability): every size result of
// its runs, kept until the coordinator acknowledges it (at-least-once
// delivery), and each run's latest status, kept until the run is released.
// After a reconnect the agent re-sends everything Pending() returns; the
// coordinator ignores duplicates by (run, sequence).
//
// Thread safety: all methods may be called concurrently.
#ifndef COLLBENCH_WORKER_AGENT_RESULT_SPOOL_H_
#define COLLBENCH_WORKER_AGENT_RESULT_SPOOL_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "collbench/v1/gateway.pb.h"

namespace collbench {

class ResultSpool {
 public:
  // Unacknowledged results kept at most (all runs together).
  static constexpr size_t kDefaultMaxUnacked = 100000;

  explicit ResultSpool(size_t max_unacked = kDefaultMaxUnacked) : max_unacked_(max_unacked) {}

  // Adds the next result of `run`, numbering it; returns the message to send.
  // ResourceExhausted ("result spool full: ...") when max_unacked results
  // are still unacknowledged; the result is not kept.
  absl::StatusOr<v1::RunResult> AddResult(const std::string& run, v1::SizeResult result);
  // Records the run's newest status (replacing the previous one) with the
  // number of results produced so far.
  v1::RunStatus SetStatus(const std::string& run, v1::RunStatus status);
  // The coordinator stored results up to and including `sequence`.
  void Ack(const std::string& run, int64_t sequence);
  // Forgets the run (its results must all be acked; the coordinator
  // released it).
  void Release(const std::string& run);

  // Everything to send after (re)connecting: per run, the unacked results
  // in order and then the latest status.
  std::vector<v1::WorkerMessage> Pending() const;
  // Runs with a status that is not final (for Register.active_runs).
  std::vector<std::string> ActiveRuns() const;
  size_t UnackedCount() const;

 private:
  struct RunEntry {
    int64_t next_sequence = 0;
    int64_t acked_through = -1;
    std::map<int64_t, v1::SizeResult> unacked;
    std::optional<v1::RunStatus> status;
  };
  const size_t max_unacked_;
  mutable absl::Mutex mu_;
  std::map<std::string, RunEntry> runs_ ABSL_GUARDED_BY(mu_);
  size_t unacked_ ABSL_GUARDED_BY(mu_) = 0;
};


}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_RESULT_SPOOL_H_
