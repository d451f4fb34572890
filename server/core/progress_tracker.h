// SPDX-License-Identifier: Apache-2.0
// Hang attribution (docs/design/run-lifecycle.md#hang-attribution): every
// worker of a running run relays where the run's ranks on its host are
// (common/progress_slot.h); this class keeps each run's rank table, says
// which reports changed it, and finds the runs in which no rank moved for
// their hang timeout, with a diagnosis that names the ranks that hold the
// others up and where every rank is. What to do about a hang (ending the
// run) is the run lifecycle's.
//
// Thread safety: every method may be called from any thread; one mutex, a
// leaf (the run lifecycle calls in with its own lock held). Progress() is
// what GetRun adds to a running run, read without the lifecycle's lock.
#ifndef COLLBENCH_SERVER_CORE_PROGRESS_TRACKER_H_
#define COLLBENCH_SERVER_CORE_PROGRESS_TRACKER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collbench/v1/gateway.pb.h"
#include "collbench/v1/run.pb.h"

namespace collbench {

// Every rank's place, for people: "rank 5 on node-7 in allreduce 1M
// iteration 412/1000, stopped; ...".
std::string RankPositions(const std::map<int, v1::RankProgress>& ranks);

class ProgressTracker {
 public:
  using Ranks = google::protobuf::RepeatedPtrField<v1::RankProgress>;

  // Applies `worker`'s report about `run` (REQUIRES: `worker` hosts ranks
  // of it; `hosts` is the run's placement, ranks in order, `slots` each). A
  // worker speaks only for the ranks placed on it: where co-resident
  // workers see each other's slots, each relays its own, and one worker can
  // neither hide another's hang nor frame it. Returns the run's ranks when
  // the report changed where one is (or its process state), else nullopt.
  std::optional<Ranks> Apply(const std::string& run, const std::string& worker,
                             const Ranks& reported,
                             const google::protobuf::RepeatedPtrField<v1::RankHost>& hosts,
                             absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

  // A run in which no rank advanced for its hang timeout (`spec`'s, or 3
  // time budgets of a size and at least 30 s): the diagnosis and the ranks
  // with those behind marked. nullopt while it moves, while its ranks set
  // up or finish, or when it is not tracked.
  struct Hang {
    std::string diagnosis;
    Ranks ranks;
  };
  std::optional<Hang> CheckHang(const std::string& run, const v1::RunSpec& spec, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Where the run's ranks are now; empty when it is not tracked.
  Ranks Progress(const std::string& run) const ABSL_LOCKS_EXCLUDED(mu_);
  // RankPositions of the run (empty when it is not tracked).
  std::string Positions(const std::string& run) const ABSL_LOCKS_EXCLUDED(mu_);
  // The run ended: its table goes.
  void Drop(const std::string& run) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Table {
    std::map<int, v1::RankProgress> ranks;
    absl::Time last_advance = absl::InfinitePast();
    // Each rank's CPU time when it last moved: a rank that used none since
    // while the run stands still is not waiting in a busy loop.
    std::map<int, double> cpu_at_advance;
  };
  static Ranks AsRepeated(const Table& table);

  mutable absl::Mutex mu_;
  std::map<std::string, Table> runs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_PROGRESS_TRACKER_H_
