// SPDX-License-Identifier: Apache-2.0
#include "server/api/watch.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/convert.h"

namespace collbench {

void WatchBase::SetNotify(std::function<void()> notify) {
  absl::MutexLock lock(&notify_mu_);
  notify_ = std::move(notify);
}

void WatchBase::Notify() {
  absl::MutexLock lock(&notify_mu_);
  if (notify_) notify_();
}

void WatchBase::Close() {
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }
  Notify();
}

void WatchBase::Detach() {
  std::function<void()> unsubscribe;
  {
    absl::MutexLock lock(&mu_);
    unsubscribe.swap(unsubscribe_);
  }
  // Without the lock: the domain calls sinks under its own.
  if (unsubscribe) unsubscribe();
}

absl::StatusOr<std::shared_ptr<RunWatch>> RunWatch::Open(RunManager& manager, WatchHub& hub,
                                                         const std::string& name,
                                                         WatcherLimits* limits,
                                                         std::unique_ptr<WatcherSlot> slot) {
  absl::StatusOr<v1::Run> run = manager.GetRun(name);
  if (!run.ok()) return run.status();
  std::shared_ptr<RunWatch> watch(new RunWatch(run->name(), limits, std::move(slot)));
  absl::Status replayed;
  {
    absl::MutexLock lock(&watch->mu_);
    // Subscribed before the store is read; live events wait for the lock
    // and queue behind the replay. No core lock is held when the hub
    // publishes (docs/design/threading.md#lock-order), so this lock and the
    // replay's GetRun cannot meet a publisher in the other order.
    hub.Subscribe(watch->run_, watch);
    watch->SetUnsubscribeLocked(
        [&hub, sink = watch.get(), run = watch->run_] { hub.Unsubscribe(run, sink); });
    replayed = watch->feed_.Replay(manager, watch->run_).status();
  }
  if (!replayed.ok()) {
    watch->Detach();
    return replayed;
  }
  return watch;
}

void RunWatch::OnEvent(const v1::RunEvent& event) {
  {
    absl::MutexLock lock(&mu_);
    if (closed_ || feed_.ended()) return;
    const size_t limit =
        limits_ != nullptr ? static_cast<size_t>(std::max(limits_->options().buffer_events, 1)) : 0;
    if (limit > 0 && feed_.queue().size() >= limit) {
      // Falling behind: end it rather than queue without bound.
      limits_->CountTooSlow();
      cut_ = absl::ResourceExhaustedError(
          absl::StrCat("watcher too slow: ", feed_.queue().size(),
                       " events not yet read (the coordinator buffers at most ", limit,
                       " per watcher); watch again to resume from the stored state"));
      feed_.queue().clear();
      closed_ = true;
    } else {
      feed_.Add(event);
    }
  }
  Notify();
}

void RunWatch::OnEnd() {
  {
    absl::MutexLock lock(&mu_);
    feed_.End();
  }
  Notify();
}

Watch<v1::RunEvent>::Batch RunWatch::TakeLocked(size_t max_events) {
  Batch batch;
  std::deque<v1::RunEvent>& queue = feed_.queue();
  while (!queue.empty() && batch.events.size() < max_events) {
    batch.events.push_back(std::move(queue.front()));
    queue.pop_front();
  }
  batch.last = queue.empty() && (feed_.ended() || closed_);
  if (batch.last) batch.end = cut_;
  return batch;
}

absl::StatusOr<std::shared_ptr<WorkflowWatch>> WorkflowWatch::Open(
    WorkflowManager& manager, const std::string& name, const Clock* clock,
    std::unique_ptr<WatcherSlot> slot) {
  std::shared_ptr<WorkflowWatch> watch(new WorkflowWatch(clock, std::move(slot)));
  // Subscribe hands out the current version and registers in one step. It
  // is called without the watch's lock (the manager calls sinks under its
  // own); a version delivered meanwhile is kept if it is newer.
  absl::StatusOr<v1::Workflow> now = manager.Subscribe(name, watch);
  if (!now.ok()) return now.status();
  absl::MutexLock lock(&watch->mu_);
  // The manager keeps no sink for a workflow that has ended, nor after it
  // ended the subscription itself (OnEnd).
  if (!IsFinalWorkflowState(now->state()) && !watch->ended_) {
    watch->SetUnsubscribeLocked([&manager, sink = watch.get(), workflow = now->name()] {
      manager.Unsubscribe(workflow, sink);
    });
  }
  if (!watch->newest_ || watch->newest_->version() < now->version()) {
    watch->newest_ = *std::move(now);
  }
  if (IsFinalWorkflowState(watch->newest_->state())) watch->ended_ = true;
  return watch;
}

void WorkflowWatch::OnWorkflow(const v1::Workflow& workflow) {
  {
    absl::MutexLock lock(&mu_);
    if (ended_ || workflow.version() <= taken_version_) return;
    if (newest_ && newest_->version() >= workflow.version()) return;
    newest_ = workflow;  // replaces one not yet taken: the newest is all a reader needs
  }
  Notify();
}

void WorkflowWatch::OnEnd() {
  {
    absl::MutexLock lock(&mu_);
    ended_ = true;
    SetUnsubscribeLocked(nullptr);  // the manager dropped the sink itself
  }
  Notify();
}

Watch<v1::WorkflowEvent>::Batch WorkflowWatch::TakeLocked(size_t max_events) {
  Batch batch;
  if (newest_ && max_events > 0) {
    v1::WorkflowEvent& event = batch.events.emplace_back();
    event.set_workflow(newest_->name());
    *event.mutable_time() = TimestampFromTime(clock_->Now());
    taken_version_ = newest_->version();
    if (IsFinalWorkflowState(newest_->state())) ended_ = true;
    *event.mutable_snapshot() = *std::move(newest_);
    newest_.reset();
  }
  batch.last = !newest_ && (ended_ || closed_);
  return batch;
}

}  // namespace collbench
