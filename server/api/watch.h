// SPDX-License-Identifier: Apache-2.0
// One watcher of a run or of a workflow
// (docs/design/run-lifecycle.md#watchers-and-metrics): the one fan-out
// between what the domain publishes (the WatchHub's run events, the
// WorkflowManager's versions) and one writer that sends it on, a gRPC
// stream (server/api/grpc_watch_writer.h) or a server-sent-events
// response (server/api/sse_watch.h). Both protocols and both subjects use
// the same mechanism:
//
//   - the watch is the domain's sink and queues what it gets under its own
//     lock; publishers never wait on a writer;
//   - it tells its writer that there is something to take through one
//     notify callback, called without the watch's lock (SetNotify(nullptr)
//     waits for a call in flight, and none follows);
//   - the writer takes at its own pace, at most `max_events` at once;
//   - Detach() unsubscribes from the domain, once; the writer calls it
//     when it is done. The watcher's slot in the limits
//     (server/core/watcher_limits.h) is held until the watch is destroyed.
//
// Only the buffer differs. A run's events all count: the stored state and
// results first, then the live events, deduplicated (WatchFeed); a reader
// more than WatcherLimitOptions::buffer_events behind is cut off, its
// queue dropped, with RESOURCE_EXHAUSTED ("watcher too slow"), counted. A
// workflow's versions replace one another: only the newest not yet taken
// waits, so a slow reader costs one workflow and skips what it no longer
// needs.
//
// Ownership: shared by the domain (until Detach, or its OnEnd) and the
// writer. Thread safety: every method may be called from any thread; one
// writer calls Take().
#ifndef COLLBENCH_SERVER_API_WATCH_H_
#define COLLBENCH_SERVER_API_WATCH_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/workflow.pb.h"
#include "common/clock.h"
#include "server/core/run_manager.h"
#include "server/core/watch_feed.h"
#include "server/core/watch_hub.h"
#include "server/core/watcher_limits.h"
#include "server/workflows/workflow_manager.h"

namespace collbench {

// What every watch shares, whatever it carries.
class WatchBase {
 public:
  virtual ~WatchBase() = default;
  // Called, without the watch's lock, whenever there is something to
  // take; nullptr stops the calls (before the callee goes away).
  void SetNotify(std::function<void()> notify) ABSL_LOCKS_EXCLUDED(notify_mu_);
  // Ends the watch now (server shutdown): what is queued is still taken,
  // the last of it marked last.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);
  // Stops receiving from the domain. Idempotent.
  void Detach() ABSL_LOCKS_EXCLUDED(mu_);

 protected:
  explicit WatchBase(std::unique_ptr<WatcherSlot> slot) : slot_(std::move(slot)) {}
  // How Detach() unsubscribes; set once subscribed, cleared when the
  // domain ended the subscription itself.
  void SetUnsubscribeLocked(std::function<void()> unsubscribe) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    unsubscribe_ = std::move(unsubscribe);
  }
  void Notify() ABSL_LOCKS_EXCLUDED(mu_, notify_mu_);

  absl::Mutex mu_ ABSL_ACQUIRED_AFTER(notify_mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;

 private:
  const std::unique_ptr<WatcherSlot> slot_;
  absl::Mutex notify_mu_;
  std::function<void()> notify_ ABSL_GUARDED_BY(notify_mu_);
  std::function<void()> unsubscribe_ ABSL_GUARDED_BY(mu_);
};

template <typename Event>
class Watch : public WatchBase {
 public:
  struct Batch {
    std::vector<Event> events;
    // Nothing follows `events`.
    bool last = false;
    // With `last`: OK when the subject ended or the watch was closed, else
    // why the watch was cut short (RESOURCE_EXHAUSTED: too slow).
    absl::Status end;
  };

  // Up to `max_events` of what is queued, without waiting.
  Batch Take(size_t max_events) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return TakeLocked(max_events);
  }

 protected:
  using WatchBase::WatchBase;
  virtual Batch TakeLocked(size_t max_events) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
};

// A run's events: RunEvent (state, result, progress, log).
class RunWatch final : public Watch<v1::RunEvent>, public RunEventSink {
 public:
  // Watches the run `name` ("runs/{id}"): subscribed to `hub` first, then
  // the stored run and results replayed, so nothing falls between the two.
  // The run's error (NotFound) when it cannot be read. `limits` (may be
  // null: no bound) bounds the queue and counts a reader cut off; `slot`
  // is held until the watch is destroyed.
  static absl::StatusOr<std::shared_ptr<RunWatch>> Open(RunManager& manager, WatchHub& hub,
                                                        const std::string& name,
                                                        WatcherLimits* limits,
                                                        std::unique_ptr<WatcherSlot> slot);
  void OnEvent(const v1::RunEvent& event) override ABSL_LOCKS_EXCLUDED(mu_);
  void OnEnd() override ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& run() const { return run_; }

 private:
  RunWatch(std::string run, WatcherLimits* limits, std::unique_ptr<WatcherSlot> slot)
      : Watch(std::move(slot)), run_(std::move(run)), limits_(limits) {}
  Batch TakeLocked(size_t max_events) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string run_;
  WatcherLimits* const limits_;
  WatchFeed feed_ ABSL_GUARDED_BY(mu_);    // replay, then live events, deduplicated
  absl::Status cut_ ABSL_GUARDED_BY(mu_);  // why it was cut short, once it fell behind
};

// A workflow's versions, each as a WorkflowEvent stamped when taken.
class WorkflowWatch final : public Watch<v1::WorkflowEvent>, public WorkflowSink {
 public:
  // Watches the workflow `name` ("workflows/{id}"): the version now, then
  // each newer one until it ends. NotFound (or the manager's error) when
  // it cannot be read. `clock` (outlives the watch) stamps each event.
  static absl::StatusOr<std::shared_ptr<WorkflowWatch>> Open(WorkflowManager& manager,
                                                             const std::string& name,
                                                             const Clock* clock,
                                                             std::unique_ptr<WatcherSlot> slot);
  void OnWorkflow(const v1::Workflow& workflow) override ABSL_LOCKS_EXCLUDED(mu_);
  void OnEnd() override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  WorkflowWatch(const Clock* clock, std::unique_ptr<WatcherSlot> slot)
      : Watch(std::move(slot)), clock_(clock) {}
  Batch TakeLocked(size_t max_events) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* const clock_;
  std::optional<v1::Workflow> newest_ ABSL_GUARDED_BY(mu_);  // not yet taken
  int64_t taken_version_ ABSL_GUARDED_BY(mu_) = -1;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_WATCH_H_
