// SPDX-License-Identifier: Apache-2.0
// CoordinatorService's workflow methods: thin translations onto
// WorkflowManager, and the WatchWorkflow stream.
#include <memory>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "api/convert.h"
#include "api/status_mapping.h"
#include "server/services/unary_reply.h"
#include "server/core/admission.h"
#include "server/services/coordinator_service.h"

namespace collbench {
namespace {

using service_reply::AuthorizationOf;
using service_reply::Fail;
using service_reply::Reply;

absl::Status NoWorkflows() { return absl::UnavailableError("this server runs no workflows"); }

// One WatchWorkflow stream: the workflow now, then its newer versions until
// it ends. Only the newest version not yet written waits, so a slow client
// costs one workflow of memory and skips versions it no longer needs.
class WorkflowWatch final : public grpc::ServerWriteReactor<v1::WorkflowEvent> {
 public:
  WorkflowWatch(WorkflowManager* manager, std::unique_ptr<WatcherSlot> slot,
                const std::string& name)
      : manager_(manager), slot_(std::move(slot)), sink_(std::make_shared<Sink>(this)) {
    // Subscribed without this reactor's lock: the manager calls the sink
    // under its own, so holding ours here would order the two both ways.
    // A version delivered meanwhile is kept if it is newer.
    absl::StatusOr<v1::Workflow> now = manager_->Subscribe(name, sink_);
    absl::MutexLock lock(&mu_);
    if (!now.ok()) {
      FinishLocked(ToGrpcStatus(now.status()));
      return;
    }
    name_ = now->name();
    subscribed_ = !IsFinalWorkflowState(now->state());
    if (!subscribed_) ended_ = true;
    if ((!newest_ || newest_->version() < now->version()) && now->version() > written_version_) {
      newest_ = *std::move(now);
    }
    MaybeWriteLocked();
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {
      FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "client went away"));
      return;
    }
    MaybeWriteLocked();
  }

  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    FinishLocked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    sink_->Detach();
    bool subscribed;
    std::string name;
    {
      absl::MutexLock lock(&mu_);
      subscribed = subscribed_;
      name = name_;
    }
    if (subscribed) manager_->Unsubscribe(name, sink_.get());
    delete this;
  }

 private:
  class Sink final : public WorkflowSink {
   public:
    explicit Sink(WorkflowWatch* owner) : owner_(owner) {}
    void OnWorkflow(const v1::Workflow& workflow) override {
      absl::MutexLock lock(&mu_);
      if (owner_ != nullptr) owner_->Deliver(workflow);
    }
    void OnEnd() override {
      absl::MutexLock lock(&mu_);
      if (owner_ != nullptr) owner_->End();
    }
    void Detach() {
      absl::MutexLock lock(&mu_);
      owner_ = nullptr;
    }

   private:
    absl::Mutex mu_;
    WorkflowWatch* owner_ ABSL_GUARDED_BY(mu_);
  };

  void Deliver(const v1::Workflow& workflow) {
    absl::MutexLock lock(&mu_);
    if (finished_ || workflow.version() <= written_version_) return;
    newest_ = workflow;
    MaybeWriteLocked();
  }

  void End() {
    absl::MutexLock lock(&mu_);
    ended_ = true;
    subscribed_ = false;
    MaybeWriteLocked();
  }

  void MaybeWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_) return;
    if (newest_) {
      event_.set_workflow(newest_->name());
      *event_.mutable_time() = TimestampFromTime(absl::Now());
      *event_.mutable_snapshot() = *std::move(newest_);
      written_version_ = event_.snapshot().version();
      if (IsFinalWorkflowState(event_.snapshot().state())) ended_ = true;
      newest_.reset();
      writing_ = true;
      StartWrite(&event_);
    } else if (ended_) {
      FinishLocked(grpc::Status::OK);
    }
  }

  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  WorkflowManager* const manager_;
  const std::unique_ptr<WatcherSlot> slot_;
  const std::shared_ptr<Sink> sink_;
  absl::Mutex mu_;
  std::string name_ ABSL_GUARDED_BY(mu_);
  bool subscribed_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<v1::Workflow> newest_ ABSL_GUARDED_BY(mu_);
  v1::WorkflowEvent event_ ABSL_GUARDED_BY(mu_);  // being written
  int64_t written_version_ ABSL_GUARDED_BY(mu_) = -1;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

class RefusedWorkflowWatch final : public grpc::ServerWriteReactor<v1::WorkflowEvent> {
 public:
  explicit RefusedWorkflowWatch(const absl::Status& status) { Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerUnaryReactor* CoordinatorService::CreateWorkflow(
    grpc::CallbackServerContext* context, const v1::CreateWorkflowRequest* request,
    v1::Workflow* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  if (workflows_ == nullptr) return Fail(context, NoWorkflows());
  if (!request->has_spec()) {
    return Fail(context, absl::InvalidArgumentError("spec: is required"));
  }
  const absl::StatusOr<v1::Workflow> created = workflows_->Create(
      *request, absl::Now(), authorizer_->CallerOf(AuthorizationOf(context), context->peer()));
  if (const std::optional<int64_t> retry_s = RetryAfterSeconds(created.status())) {
    context->AddTrailingMetadata("retry-after", std::to_string(*retry_s));
  }
  return Reply(context, created, response);
}

grpc::ServerUnaryReactor* CoordinatorService::GetWorkflow(grpc::CallbackServerContext* context,
                                                          const v1::GetWorkflowRequest* request,
                                                          v1::Workflow* response) {
  if (auto* refused = Refuse(context, Role::kRead)) return refused;
  if (workflows_ == nullptr) return Fail(context, NoWorkflows());
  return Reply(context, workflows_->Get(request->name()), response);
}

grpc::ServerUnaryReactor* CoordinatorService::ListWorkflows(
    grpc::CallbackServerContext* context, const v1::ListWorkflowsRequest* request,
    v1::ListWorkflowsResponse* response) {
  if (auto* refused = Refuse(context, Role::kRead)) return refused;
  if (workflows_ == nullptr) return Fail(context, NoWorkflows());
  absl::StatusOr<WorkflowManager::Page> page =
      workflows_->List(request->page_size(), request->page_token(), request->filter());
  if (!page.ok()) return Fail(context, page.status());
  for (v1::Workflow& w : page->workflows) *response->add_workflows() = std::move(w);
  response->set_next_page_token(page->next_page_token);
  return Fail(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* CoordinatorService::CancelWorkflow(
    grpc::CallbackServerContext* context, const v1::CancelWorkflowRequest* request,
    v1::Workflow* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  if (workflows_ == nullptr) return Fail(context, NoWorkflows());
  return Reply(context, workflows_->Cancel(request->name(), absl::Now()), response);
}

grpc::ServerUnaryReactor* CoordinatorService::DeleteWorkflow(
    grpc::CallbackServerContext* context, const v1::DeleteWorkflowRequest* request,
    google::protobuf::Empty* response) {
  if (auto* refused = Refuse(context, Role::kOperator)) return refused;
  if (workflows_ == nullptr) return Fail(context, NoWorkflows());
  return Fail(context, workflows_->Delete(request->name()));
}

grpc::ServerWriteReactor<v1::WorkflowEvent>* CoordinatorService::WatchWorkflow(
    grpc::CallbackServerContext* context, const v1::WatchWorkflowRequest* request) {
  if (absl::Status allowed = Authorize(context, Role::kRead); !allowed.ok()) {
    return new RefusedWorkflowWatch(allowed);
  }
  if (workflows_ == nullptr) return new RefusedWorkflowWatch(NoWorkflows());
  absl::StatusOr<std::unique_ptr<WatcherSlot>> slot =
      limits_->Acquire(authorizer_->CallerOf(AuthorizationOf(context), context->peer()));
  if (!slot.ok()) return new RefusedWorkflowWatch(slot.status());
  return new WorkflowWatch(workflows_, *std::move(slot), request->name());
}

grpc::ServerUnaryReactor* CoordinatorService::GetWorkflowReport(
    grpc::CallbackServerContext* context, const v1::GetWorkflowReportRequest* request,
    v1::WorkflowReport* response) {
  if (auto* refused = Refuse(context, Role::kRead)) return refused;
  if (workflows_ == nullptr) return Fail(context, NoWorkflows());
  return Reply(context, workflows_->Report(request->name()), response);
}

}  // namespace collbench
