// SPDX-License-Identifier: Apache-2.0
// A Store that hands every call to an in-memory store, so a test's fake
// overrides only the calls it counts, holds or fails.
#ifndef COLLBENCH_TESTS_UNIT_SERVER_FORWARDING_STORE_H_
#define COLLBENCH_TESTS_UNIT_SERVER_FORWARDING_STORE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/store/store.h"

namespace collbench {

class ForwardingStore : public Store {
 public:
  absl::Status CreateRun(const v1::Run& run) override { return inner_->CreateRun(run); }
  absl::Status UpdateRun(const v1::Run& run) override { return inner_->UpdateRun(run); }
  absl::Status UpdateRunExceptProgress(const v1::Run& run) override {
    return inner_->UpdateRunExceptProgress(run);
  }
  absl::StatusOr<v1::Run> GetRun(absl::string_view name) override { return inner_->GetRun(name); }
  absl::StatusOr<v1::Run> FindRunByRequestId(absl::string_view id) override {
    return inner_->FindRunByRequestId(id);
  }
  absl::StatusOr<RunPage> ListRuns(int size, absl::string_view token,
                                   v1::RunState state) override {
    return inner_->ListRuns(size, token, state);
  }
  absl::StatusOr<std::vector<v1::Run>> ListUnfinishedRuns() override {
    return inner_->ListUnfinishedRuns();
  }
  absl::StatusOr<std::vector<FinishedRun>> ListFinishedRuns() override {
    return inner_->ListFinishedRuns();
  }
  absl::Status DeleteRun(absl::string_view name) override { return inner_->DeleteRun(name); }
  absl::StatusOr<bool> AddResult(absl::string_view run, const v1::SizeResult& result) override {
    return inner_->AddResult(run, result);
  }
  absl::StatusOr<std::vector<bool>> AddResults(const std::vector<ResultRow>& rows) override {
    return inner_->AddResults(rows);
  }
  absl::StatusOr<std::vector<v1::SizeResult>> ListResults(absl::string_view run) override {
    return inner_->ListResults(run);
  }
  absl::Status UpsertWorker(const v1::Worker& worker) override {
    return inner_->UpsertWorker(worker);
  }
  absl::Status UpsertWorkers(const std::vector<v1::Worker>& workers) override {
    return inner_->UpsertWorkers(workers);
  }
  absl::StatusOr<std::vector<v1::Worker>> ListWorkers() override { return inner_->ListWorkers(); }
  absl::Status SetWorkerSecretHash(absl::string_view name, absl::string_view hash) override {
    return inner_->SetWorkerSecretHash(name, hash);
  }
  absl::StatusOr<std::map<std::string, std::string>> ListWorkerSecretHashes() override {
    return inner_->ListWorkerSecretHashes();
  }
  absl::Status DeleteWorker(absl::string_view name) override { return inner_->DeleteWorker(name); }
  absl::Status PutWorkflow(const v1::Workflow& workflow) override {
    return inner_->PutWorkflow(workflow);
  }
  absl::StatusOr<std::vector<v1::Workflow>> ListWorkflows() override {
    return inner_->ListWorkflows();
  }
  absl::Status PutWorkflowReport(absl::string_view name, const std::string& html) override {
    return inner_->PutWorkflowReport(name, html);
  }
  absl::StatusOr<std::string> GetWorkflowReport(absl::string_view name) override {
    return inner_->GetWorkflowReport(name);
  }
  absl::Status DeleteWorkflow(absl::string_view name) override {
    return inner_->DeleteWorkflow(name);
  }
  absl::Status PutBaseline(const v1::Baseline& baseline) override {
    return inner_->PutBaseline(baseline);
  }
  absl::StatusOr<v1::Baseline> GetBaseline(absl::string_view name) override {
    return inner_->GetBaseline(name);
  }
  absl::StatusOr<std::vector<v1::Baseline>> ListBaselines() override {
    return inner_->ListBaselines();
  }
  absl::Status DeleteBaseline(absl::string_view name) override {
    return inner_->DeleteBaseline(name);
  }
  absl::Status PutSchedule(const v1::Schedule& schedule) override {
    return inner_->PutSchedule(schedule);
  }
  absl::StatusOr<std::vector<v1::Schedule>> ListSchedules() override {
    return inner_->ListSchedules();
  }
  absl::Status DeleteSchedule(absl::string_view name) override {
    return inner_->DeleteSchedule(name);
  }

 private:
  std::unique_ptr<Store> inner_ = NewMemoryStore();
};

}  // namespace collbench

#endif  // COLLBENCH_TESTS_UNIT_SERVER_FORWARDING_STORE_H_
