// SPDX-License-Identifier: Apache-2.0
// Fan-out of run events to watchers (WatchRun, the REST event stream, the
// CLI's live view). Publishers never block on watchers: each sink queues
// what it gets and writes at its own pace.
//
// A watcher that must not miss anything subscribes first, then reads what
// is already stored and sends it, then drains what arrived meanwhile,
// skipping results by sequence (SizeResult.sequence).
//
// Thread safety: all methods may be called concurrently. Sinks are called
// without the hub's lock held, possibly from several threads at once.
#ifndef COLLBENCH_SERVER_CORE_WATCH_HUB_H_
#define COLLBENCH_SERVER_CORE_WATCH_HUB_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collbench/v1/run.pb.h"

namespace collbench {

class RunEventSink {
 public:
  virtual ~RunEventSink() = default;
  virtual void OnEvent(const v1::RunEvent& event) = 0;
  // The run reached a final state (after its last OnEvent) or the hub is
  // shutting down. No more calls follow.
  virtual void OnEnd() = 0;
  // Observers only: `runs` (finished) were deleted from the store, by the
  // API or by retention; nothing of them follows. Called without any core
  // lock held.
  virtual void OnRunsDeleted(const std::vector<std::string>& runs) { (void)runs; }
};

class WatchHub {
 public:
  // `observer` receives every event of every run from now on (metrics); its
  // OnEnd() is never called. Add observers before events flow.
  void AddObserver(std::shared_ptr<RunEventSink> observer);
  // `sink` receives every event published for `run` from now on.
  void Subscribe(const std::string& run, std::shared_ptr<RunEventSink> sink);
  void Unsubscribe(const std::string& run, const RunEventSink* sink);
  void Publish(const v1::RunEvent& event);
  // Tells every observer that `runs` were deleted (RunEventSink::OnRunsDeleted).
  void PublishDeleted(const std::vector<std::string>& runs);
  // Ends every watcher of `run`.
  void End(const std::string& run);
  // Ends every watcher (shutdown).
  void EndAll();
  size_t watcher_count() const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::vector<std::shared_ptr<RunEventSink>>> sinks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<RunEventSink>> observers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_CORE_WATCH_HUB_H_
