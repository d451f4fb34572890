// SPDX-License-Identifier: Apache-2.0
// WorkflowManager: how workflows are executed (docs/design/workflows.md#execution-and-restarts).
// A workflow takes one of the `max_running` slots; the events of the runs
// it follows and the coordinator's tick wake it; a woken workflow is
// advanced by an executor thread as far as it can go without waiting, one
// thread at a time per workflow.
#include <algorithm>
#include <utility>

#include "api/convert.h"
#include "common/log.h"
#include "server/workflows/workflow_execution.h"
#include "server/workflows/workflow_manager.h"

namespace collbench {

absl::Status WorkflowManager::Start() {
  absl::StatusOr<std::vector<v1::Workflow>> stored = store_->ListWorkflows();
  if (!stored.ok()) return stored.status();
  std::vector<std::string> started;
  {
    absl::MutexLock lock(&mu_);
    // Oldest first into the queue: they were waiting longest.
    for (auto it = stored->rbegin(); it != stored->rend(); ++it) {
      if (!IsFinalWorkflowState(it->state())) {
        queue_.push_back(it->name());
        LogInfo("workflow.recovered")
            .Str("workflow", it->name())
            .Str("state", WorkflowStateName(it->state()));
      }
      workflows_[it->name()] = *it;
    }
    started = StartQueuedLocked();
  }
  for (const std::string& name : started) Wake(name);
  return absl::OkStatus();
}

void WorkflowManager::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  waker_->Detach();      // no run event wakes anything from here on
  executor_->Shutdown();  // what a thread was doing is done; nothing else runs
  std::map<std::string, std::unique_ptr<WorkflowExecution>> executing;
  {
    absl::MutexLock lock(&mu_);
    executing.swap(executing_);
    for (auto& [name, sinks] : sinks_) {
      for (const auto& sink : sinks) sink->OnEnd();
    }
    sinks_.clear();
  }
  for (const auto& [name, execution] : executing) {
    for (const std::string& run : execution->followed) {
      runs_->Unsubscribe(run, execution->sink.get());
    }
  }
}

void WorkflowManager::Tick(absl::Time now) {
  std::vector<std::string> due;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    for (auto& [name, execution] : executing_) {
      if (execution->wake_at > now) continue;
      execution->wake_at = absl::InfiniteFuture();
      due.push_back(name);
    }
  }
  for (const std::string& name : due) Wake(name);
}

std::vector<std::string> WorkflowManager::StartQueuedLocked() {
  std::vector<std::string> started;
  while (!stopping_ && !queue_.empty() &&
         static_cast<int>(executing_.size()) < std::max(options_.max_running, 1)) {
    const std::string name = queue_.front();
    queue_.pop_front();
    auto execution = std::make_unique<WorkflowExecution>();
    execution->sink = std::make_shared<RunSink>(waker_, name);
    executing_[name] = std::move(execution);
    started.push_back(name);
  }
  return started;
}

void WorkflowManager::Wake(const std::string& name) {
  absl::MutexLock lock(&wake_mu_);
  if (!advancing_.insert(name).second) {  // posted, or being advanced: once more after
    woken_again_.insert(name);
    return;
  }
  executor_->Post([this, name] { AdvanceWhileWoken(name); });
}

void WorkflowManager::AdvanceWhileWoken(const std::string& name) {
  for (;;) {
    Advance(name);
    absl::MutexLock lock(&wake_mu_);
    if (woken_again_.erase(name) == 0) {
      advancing_.erase(name);
      return;
    }
  }
}

void WorkflowManager::Advance(const std::string& name) {
  v1::Workflow snapshot;
  HuntExecution* hunt = nullptr;
  {
    absl::MutexLock lock(&mu_);
    auto executing = executing_.find(name);
    v1::Workflow* workflow = FindLocked(name);
    if (stopping_ || executing == executing_.end() || workflow == nullptr ||
        IsFinalWorkflowState(workflow->state())) {
      return;
    }
    if (workflow->state() != v1::WORKFLOW_RUNNING) {
      workflow->set_state(v1::WORKFLOW_RUNNING);
      *workflow->mutable_start_time() = TimestampFromTime(clock_->Now());
      SaveLocked(*workflow);
      LogInfo("workflow.state").Str("workflow", name).Str("state", "RUNNING");
    }
    snapshot = *workflow;
    if (snapshot.spec().has_hunt()) {
      std::unique_ptr<HuntExecution>& state = executing->second->hunt;
      if (state == nullptr) {
        state = std::make_unique<HuntExecution>(
            snapshot.spec().hunt(),
            std::vector<v1::HuntWorker>(snapshot.output().hunt().workers().begin(),
                                        snapshot.output().hunt().workers().end()));
      }
      hunt = state.get();
    }
  }
  const v1::WorkflowSpec& spec = snapshot.spec();
  if (spec.has_hunt()) {
    AdvanceHunt(name, snapshot, hunt);
  } else if (spec.has_advice() || spec.has_report() || spec.has_check()) {
    ExecuteSelection(name, snapshot);
  } else {
    AdvanceCells(name);
  }
}

void WorkflowManager::WakeAt(const std::string& name, absl::Time at) {
  absl::MutexLock lock(&mu_);
  auto executing = executing_.find(name);
  if (executing == executing_.end()) return;
  executing->second->wake_at = std::min(executing->second->wake_at, at);
}

void WorkflowManager::Watch(const std::string& name, const std::string& run) {
  std::shared_ptr<RunEventSink> sink;
  {
    absl::MutexLock lock(&mu_);
    auto executing = executing_.find(name);
    if (executing == executing_.end() || !executing->second->followed.insert(run).second) return;
    sink = executing->second->sink;
  }
  runs_->Subscribe(run, std::move(sink));
}

void WorkflowManager::Unwatch(const std::string& name, const std::string& run) {
  std::shared_ptr<RunEventSink> sink;
  {
    absl::MutexLock lock(&mu_);
    auto executing = executing_.find(name);
    if (executing == executing_.end() || executing->second->followed.erase(run) == 0) return;
    sink = executing->second->sink;
  }
  runs_->Unsubscribe(run, sink.get());
}

bool WorkflowManager::StoppingOrGone(const std::string& name) {
  absl::MutexLock lock(&mu_);
  return stopping_ || executing_.count(name) == 0;
}

bool WorkflowManager::Cancelling(const std::string& name) {
  absl::MutexLock lock(&mu_);
  return cancelling_.count(name) > 0;
}

void WorkflowManager::Update(const std::string& name,
                             const std::function<void(v1::Workflow&)>& change, int changed_cell) {
  absl::MutexLock lock(&mu_);
  v1::Workflow* workflow = FindLocked(name);
  if (workflow == nullptr) return;
  change(*workflow);
  SaveLocked(*workflow, changed_cell);
}

void WorkflowManager::Finish(const std::string& name, v1::WorkflowState state,
                             const std::string& error, const v1::WorkflowOutput& output) {
  std::unique_ptr<WorkflowExecution> released;
  std::vector<std::string> started;
  {
    absl::MutexLock lock(&mu_);
    v1::Workflow* workflow = FindLocked(name);
    if (workflow == nullptr) return;
    // The plan's header stays above the tables.
    v1::WorkflowOutput merged = output;
    merged.mutable_header()->CopyFrom(workflow->output().header());
    *workflow->mutable_output() = std::move(merged);
    workflow->set_state(state);
    workflow->set_error(error);
    *workflow->mutable_end_time() = TimestampFromTime(clock_->Now());
    SaveLocked(*workflow);
    LogInfo("workflow.state")
        .Str("workflow", name)
        .Str("state", WorkflowStateName(state))
        .Str("error", error);
    cancelling_.erase(name);
    if (auto executing = executing_.find(name); executing != executing_.end()) {
      released = std::move(executing->second);
      executing_.erase(executing);
    }
    started = StartQueuedLocked();
  }
  if (released != nullptr) {
    for (const std::string& run : released->followed) runs_->Unsubscribe(run, released->sink.get());
  }
  for (const std::string& next : started) Wake(next);
}

}  // namespace collbench
