// SPDX-License-Identifier: Apache-2.0
// What one watcher of a run (gRPC WatchRun, the REST event stream) sends,
// in order: the run's stored state and stored results first, then the live
// events the WatchHub delivers. The watcher subscribes to the hub before
// calling Replay(), so nothing falls between the two; what arrives twice is
// dropped here: a result whose sequence was already queued, and a state
// that repeats the last one queued. Once a final state is queued (replayed
// or live) nothing more is.
//
// Thread safety: none; the watcher calls it under its own lock.
#ifndef COLLBENCH_SERVER_CORE_WATCH_FEED_H_
#define COLLBENCH_SERVER_CORE_WATCH_FEED_H_

#include <cstdint>
#include <deque>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "collbench/v1/run.pb.h"
#include "server/core/run_manager.h"

namespace collbench {

class WatchFeed {
 public:
  // Queues the run's current state and its stored results. Returns the
  // run's resource name, or the error reading it (e.g. NotFound).
  absl::StatusOr<std::string> Replay(RunManager& manager, const std::string& run_name);
  // Queues a live event unless it repeats what was queued or the feed ended.
  void Add(const v1::RunEvent& event);
  // No more events will be queued (the hub ended the run's watchers).
  void End() { ended_ = true; }

  bool ended() const { return ended_; }
  bool empty() const { return queue_.empty(); }
  // Events queued and not yet taken; the watcher pops or swaps them out.
  std::deque<v1::RunEvent>& queue() { return queue_; }

 private:
  // Appends unless it repeats a queued result or the last queued state.
  void Queue(v1::RunEvent event);

  std::deque<v1::RunEvent> queue_;
  std::set<int64_t> sequences_;  // results queued so far
  v1::RunState last_state_ = v1::RUN_STATE_UNSPECIFIED;
  bool ended_ = false;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_WATCH_FEED_H_
