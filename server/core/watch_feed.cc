// SPDX-License-Identifier: Apache-2.0
#include "server/core/watch_feed.h"

#include <utility>
#include <vector>

#include "api/convert.h"

namespace collbench {

absl::StatusOr<std::string> WatchFeed::Replay(RunManager& manager, const std::string& run_name) {
  absl::StatusOr<v1::Run> run = manager.GetRun(run_name);
  if (!run.ok()) return run.status();
  absl::StatusOr<std::vector<v1::SizeResult>> results = manager.GetResults(run->name());
  v1::RunEvent state;
  state.set_run(run->name());
  // The replayed state is as of its last change, not of the replay.
  *state.mutable_time() = StateTimeOf(*run);
  *state.mutable_state_change() = *run;
  Queue(std::move(state));
  if (results.ok()) {
    for (v1::SizeResult& result : *results) {
      v1::RunEvent event;
      event.set_run(run->name());
      *event.mutable_result() = std::move(result);
      Queue(std::move(event));
    }
  }
  // A run that already ended gets no more events (its results were all
  // stored before it ended, so the replay holds them).
  if (IsFinalRunState(run->state())) ended_ = true;
  return run->name();
}

void WatchFeed::Add(const v1::RunEvent& event) {
  if (ended_) return;
  Queue(event);
  // Nothing follows a final state.
  if (event.has_state_change() && IsFinalRunState(event.state_change().state())) ended_ = true;
}

void WatchFeed::Queue(v1::RunEvent event) {
  if (event.has_result()) {
    if (!sequences_.insert(event.result().sequence()).second) return;  // queued already
  } else if (event.has_state_change()) {
    if (event.state_change().state() == last_state_) return;  // said already
    last_state_ = event.state_change().state();
  }
  queue_.push_back(std::move(event));
}

}  // namespace collbench
