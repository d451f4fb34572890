// SPDX-License-Identifier: Apache-2.0
#include "server/rest/workflow_stream.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "api/convert.h"
#include "server/rest/rest_json.h"

namespace collbench {

absl::StatusOr<std::shared_ptr<WorkflowStream>> WorkflowStream::Open(
    WorkflowManager& manager, const std::string& name, std::unique_ptr<WatcherSlot> slot) {
  std::shared_ptr<WorkflowStream> stream(new WorkflowStream(&manager, std::move(slot)));
  // Subscribe hands out the current version and registers in one step.
  // It is called without the stream's lock (the manager calls sinks under
  // its own); a version delivered meanwhile is kept if it is newer.
  absl::StatusOr<v1::Workflow> now = manager.Subscribe(name, stream);
  if (!now.ok()) return now.status();
  absl::MutexLock lock(&stream->mu_);
  stream->name_ = now->name();
  stream->subscribed_ = !IsFinalWorkflowState(now->state()) && !stream->ended_;
  if (!stream->newest_ || stream->newest_->version() < now->version()) {
    stream->newest_ = *std::move(now);
  }
  if (IsFinalWorkflowState(stream->newest_->state())) stream->ended_ = true;
  return stream;
}

void WorkflowStream::OnWorkflow(const v1::Workflow& workflow) {
  {
    absl::MutexLock lock(&mu_);
    if (ended_ || workflow.version() <= sent_version_) return;
    if (newest_ && newest_->version() >= workflow.version()) return;
    newest_ = workflow;  // replaces one not yet taken: the newest is all a reader needs
  }
  Notify();
}

void WorkflowStream::OnEnd() {
  {
    absl::MutexLock lock(&mu_);
    ended_ = true;
    subscribed_ = false;
  }
  Notify();
}

SseSource::Chunk WorkflowStream::Take() {
  absl::MutexLock lock(&mu_);
  Chunk chunk;
  if (newest_) {
    chunk.text = Format(*newest_);
    sent_version_ = newest_->version();
    if (IsFinalWorkflowState(newest_->state())) ended_ = true;
    newest_.reset();
  }
  chunk.last = ended_;
  return chunk;
}

void WorkflowStream::SetNotify(std::function<void()> notify) {
  absl::MutexLock lock(&notify_mu_);
  notify_ = std::move(notify);
}

void WorkflowStream::Notify() {
  absl::MutexLock lock(&notify_mu_);
  if (notify_) notify_();
}

void WorkflowStream::Close() {
  {
    absl::MutexLock lock(&mu_);
    ended_ = true;
  }
  Notify();
}

void WorkflowStream::Detach() {
  bool subscribed = false;
  {
    absl::MutexLock lock(&mu_);
    subscribed = subscribed_;
    subscribed_ = false;
  }
  if (subscribed) manager_->Unsubscribe(name_, this);
}

std::string WorkflowStream::Format(const v1::Workflow& workflow) {
  v1::WorkflowEvent event;
  event.set_workflow(workflow.name());
  *event.mutable_time() = TimestampFromTime(absl::Now());
  *event.mutable_snapshot() = workflow;
  return absl::StrCat("event: workflow\ndata: ", ProtoToJson(event), "\n\n");
}

}  // namespace collbench
