// SPDX-License-Identifier: Apache-2.0
// A Store that hands every call to another store, telling OnCall(method)
// first: the base of decorators (the coordinator's check that no store call
// is made under a lock requests wait on, server/core/no_io_lock.h) and of
// tests' fakes, which override only the calls they count, hold or fail.
//
// Ownership: the inner store is not owned when given as a pointer, owned
// when given as a unique_ptr. Thread safety: as the inner store's.
#ifndef COLLBENCH_SERVER_STORE_FORWARDING_STORE_H_
#define COLLBENCH_SERVER_STORE_FORWARDING_STORE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/store/store.h"

namespace collbench {

class ForwardingStore : public Store {
 public:
  explicit ForwardingStore(Store* inner) : inner_(inner) {}
  explicit ForwardingStore(std::unique_ptr<Store> inner)
      : owned_(std::move(inner)), inner_(owned_.get()) {}

  absl::StatusOr<std::vector<WriteResult>> Commit(const std::vector<Write>& writes) override {
    OnCall("Commit");
    return inner_->Commit(writes);
  }
  absl::StatusOr<v1::Run> GetRun(absl::string_view name) override {
    OnCall("GetRun");
    return inner_->GetRun(name);
  }
  absl::StatusOr<v1::Run> FindRunByRequestId(absl::string_view id) override {
    OnCall("FindRunByRequestId");
    return inner_->FindRunByRequestId(id);
  }
  absl::StatusOr<RunPage> ListRuns(int size, absl::string_view token,
                                   v1::RunState state) override {
    OnCall("ListRuns");
    return inner_->ListRuns(size, token, state);
  }
  absl::StatusOr<std::vector<v1::Run>> ListUnfinishedRuns() override {
    OnCall("ListUnfinishedRuns");
    return inner_->ListUnfinishedRuns();
  }
  absl::StatusOr<std::vector<FinishedRun>> ListFinishedRuns() override {
    OnCall("ListFinishedRuns");
    return inner_->ListFinishedRuns();
  }
  absl::Status DeleteRun(absl::string_view name) override {
    OnCall("DeleteRun");
    return inner_->DeleteRun(name);
  }
  absl::StatusOr<bool> AddResult(absl::string_view run, const v1::SizeResult& result) override {
    OnCall("AddResult");
    return inner_->AddResult(run, result);
  }
  absl::StatusOr<std::vector<v1::SizeResult>> ListResults(absl::string_view run) override {
    OnCall("ListResults");
    return inner_->ListResults(run);
  }
  absl::StatusOr<std::vector<v1::Worker>> ListWorkers() override {
    OnCall("ListWorkers");
    return inner_->ListWorkers();
  }
  absl::StatusOr<std::map<std::string, WorkerCredential>> ListWorkerCredentials() override {
    OnCall("ListWorkerCredentials");
    return inner_->ListWorkerCredentials();
  }
  absl::Status PutWorkflow(const v1::Workflow& workflow) override {
    OnCall("PutWorkflow");
    return inner_->PutWorkflow(workflow);
  }
  absl::Status PutWorkflowCell(const v1::Workflow& head, int index,
                               const v1::WorkflowCell& cell) override {
    OnCall("PutWorkflowCell");
    return inner_->PutWorkflowCell(head, index, cell);
  }
  absl::StatusOr<std::vector<v1::Workflow>> ListWorkflows() override {
    OnCall("ListWorkflows");
    return inner_->ListWorkflows();
  }
  absl::Status PutWorkflowReport(absl::string_view name, const std::string& html) override {
    OnCall("PutWorkflowReport");
    return inner_->PutWorkflowReport(name, html);
  }
  absl::StatusOr<std::string> GetWorkflowReport(absl::string_view name) override {
    OnCall("GetWorkflowReport");
    return inner_->GetWorkflowReport(name);
  }
  absl::Status DeleteWorkflow(absl::string_view name) override {
    OnCall("DeleteWorkflow");
    return inner_->DeleteWorkflow(name);
  }
  absl::Status PutBaseline(const v1::Baseline& baseline) override {
    OnCall("PutBaseline");
    return inner_->PutBaseline(baseline);
  }
  absl::StatusOr<v1::Baseline> GetBaseline(absl::string_view name) override {
    OnCall("GetBaseline");
    return inner_->GetBaseline(name);
  }
  absl::StatusOr<std::vector<v1::Baseline>> ListBaselines() override {
    OnCall("ListBaselines");
    return inner_->ListBaselines();
  }
  absl::Status DeleteBaseline(absl::string_view name) override {
    OnCall("DeleteBaseline");
    return inner_->DeleteBaseline(name);
  }
  absl::Status PutSchedule(const v1::Schedule& schedule) override {
    OnCall("PutSchedule");
    return inner_->PutSchedule(schedule);
  }
  absl::StatusOr<std::vector<v1::Schedule>> ListSchedules() override {
    OnCall("ListSchedules");
    return inner_->ListSchedules();
  }
  absl::Status DeleteSchedule(absl::string_view name) override {
    OnCall("DeleteSchedule");
    return inner_->DeleteSchedule(name);
  }

 protected:
  // Called before every call is handed on, with the method's name.
  virtual void OnCall(const char* method) {}
  Store* inner() const { return inner_; }

 private:
  std::unique_ptr<Store> owned_;
  Store* const inner_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_STORE_FORWARDING_STORE_H_
