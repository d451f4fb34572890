// SPDX-License-Identifier: Apache-2.0
// The in-memory Store: the fake beside the SQLite store (CONTRIBUTING.md#style). Same
// contract, nothing survives the process.
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status_macros.h"
#include "server/store/store.h"
#include "server/store/store_internal.h"

namespace collbench {
namespace {

using store_internal::RunPosition;

// Orders positions as ListRuns lists them: newest first.
struct ListOrder {
  bool operator()(const RunPosition& a, const RunPosition& b) const {
    return store_internal::ListedBefore(a, b);
  }
};

RunPosition PositionOf(const v1::Run& run) {
  return RunPosition{store_internal::CreateTimeNs(run), run.name()};
}

class MemoryStore final : public Store {
 public:
  absl::StatusOr<std::vector<WriteResult>> Commit(const std::vector<Write>& writes) override {
    absl::MutexLock lock(&mu_);
    // Each write records how to take itself back; a refused write takes
    // back those before it, newest first, so the batch is all or nothing.
    std::vector<std::function<void()>> undo;
    std::vector<WriteResult> results;
    results.reserve(writes.size());
    for (const Write& write : writes) {
      absl::StatusOr<WriteResult> applied =
          std::visit([&](const auto& w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
            return ApplyLocked(w, &undo);
          },
          write);
      if (!applied.ok()) {
        for (auto it = undo.rbegin(); it != undo.rend(); ++it) (*it)();
        return applied.status();
      }
      results.push_back(*std::move(applied));
    }
    return results;
  }

  absl::StatusOr<v1::Run> GetRun(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    auto it = runs_.find(name);
    if (it == runs_.end()) return store_internal::RunNotFound(name);
    return it->second;
  }

  absl::StatusOr<v1::Run> FindRunByRequestId(
      absl::string_view request_id) override {
    absl::MutexLock lock(&mu_);
    auto it = request_ids_.find(request_id);
    if (request_id.empty() || it == request_ids_.end()) {
      return absl::NotFoundError(
          absl::StrCat("no run with request_id \"", request_id, "\""));
    }
    return runs_.at(it->second);
  }

  absl::StatusOr<RunPage> ListRuns(int page_size, absl::string_view page_token,
                                   v1::RunState state) override {
    ASSIGN_OR_RETURN(const int limit,
                     store_internal::EffectivePageSize(page_size));
    RunPosition after;
    const bool has_token = !page_token.empty();
    if (has_token) {
      ASSIGN_OR_RETURN(after,
                       store_internal::DecodePageToken(page_token, state));
    }
    absl::MutexLock lock(&mu_);
    auto it = has_token ? order_.upper_bound(after) : order_.begin();
    RunPage page;
    for (; it != order_.end(); ++it) {
      const v1::Run& run = runs_.at(it->name);
      if (state != v1::RUN_STATE_UNSPECIFIED && run.state() != state) continue;
      if (static_cast<int>(page.runs.size()) == limit) {
        page.next_page_token = store_internal::EncodePageToken(
            PositionOf(page.runs.back()), state);
        break;
      }
      page.runs.push_back(run);
    }
    return page;
  }

  absl::StatusOr<std::vector<v1::Run>> ListUnfinishedRuns() override {
    absl::MutexLock lock(&mu_);
    std::vector<v1::Run> runs;
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const v1::Run& run = runs_.at(it->name);
      if (store_internal::IsUnfinished(run.state())) runs.push_back(run);
    }
    return runs;
  }

  absl::StatusOr<std::vector<FinishedRun>> ListFinishedRuns() override {
    absl::MutexLock lock(&mu_);
    std::vector<FinishedRun> runs;
    for (const RunPosition& position : order_) {
      const v1::Run& run = runs_.at(position.name);
      if (!store_internal::IsFinished(run.state())) continue;
      runs.push_back(
          {run.name(), position.create_time_ns, store_internal::TimestampNs(run.end_time())});
    }
    return runs;
  }

  absl::Status DeleteRun(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    if (!runs_.contains(name)) return store_internal::RunNotFound(name);
    Erase(std::string(name));
    if (auto it = results_.find(name); it != results_.end()) results_.erase(it);
    return absl::OkStatus();
  }

  absl::StatusOr<bool> AddResult(absl::string_view run,
                                 const v1::SizeResult& result) override {
    RETURN_IF_ERROR(store_internal::ValidateResultSequence(result));
    absl::MutexLock lock(&mu_);
    if (!runs_.contains(run)) return store_internal::RunNotFound(run);
    return results_[std::string(run)].emplace(result.sequence(), result).second;
  }

  absl::StatusOr<std::vector<v1::SizeResult>> ListResults(
      absl::string_view run) override {
    absl::MutexLock lock(&mu_);
    if (!runs_.contains(run)) return store_internal::RunNotFound(run);
    std::vector<v1::SizeResult> results;
    auto it = results_.find(run);
    if (it == results_.end()) return results;
    for (const auto& [sequence, result] : it->second) {
      results.push_back(result);
    }
    return results;
  }

  absl::StatusOr<std::vector<v1::Worker>> ListWorkers() override {
    absl::MutexLock lock(&mu_);
    std::vector<v1::Worker> workers;
    workers.reserve(workers_.size());
    for (const auto& [name, worker] : workers_) workers.push_back(worker);
    return workers;
  }

  absl::StatusOr<std::map<std::string, WorkerCredential>> ListWorkerCredentials() override {
    absl::MutexLock lock(&mu_);
    return credentials_;
  }

  absl::Status PutWorkflow(const v1::Workflow& workflow) override {
    RETURN_IF_ERROR(store_internal::ValidateWorkflowName(workflow.name()));
    absl::MutexLock lock(&mu_);
    workflows_[workflow.name()] = workflow;
    return absl::OkStatus();
  }

  absl::Status PutWorkflowCell(const v1::Workflow& head, int index,
                               const v1::WorkflowCell& cell) override {
    absl::MutexLock lock(&mu_);
    auto it = workflows_.find(head.name());
    if (it == workflows_.end()) return store_internal::WorkflowNotFound(head.name());
    google::protobuf::RepeatedPtrField<v1::WorkflowCell> cells;
    cells.Swap(it->second.mutable_cells());  // kept, not copied
    it->second = head;
    it->second.mutable_cells()->Swap(&cells);
    if (index >= 0 && index < it->second.cells_size()) *it->second.mutable_cells(index) = cell;
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<v1::Workflow>> ListWorkflows() override {
    absl::MutexLock lock(&mu_);
    std::vector<v1::Workflow> out;
    for (const auto& [name, workflow] : workflows_) out.push_back(workflow);
    store_internal::SortWorkflowsNewestFirst(&out);
    return out;
  }

  absl::Status PutWorkflowReport(absl::string_view name, const std::string& html) override {
    absl::MutexLock lock(&mu_);
    if (!workflows_.contains(name)) return store_internal::WorkflowNotFound(name);
    reports_[std::string(name)] = html;
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> GetWorkflowReport(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    auto it = reports_.find(name);
    if (it == reports_.end()) {
      return absl::NotFoundError(absl::StrCat("workflow ", name, " has no stored report"));
    }
    return it->second;
  }

  absl::Status DeleteWorkflow(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    auto it = workflows_.find(name);
    if (it == workflows_.end()) return store_internal::WorkflowNotFound(name);
    workflows_.erase(it);
    if (auto report = reports_.find(name); report != reports_.end()) reports_.erase(report);
    return absl::OkStatus();
  }

  absl::Status PutBaseline(const v1::Baseline& baseline) override {
    RETURN_IF_ERROR(store_internal::ValidateBaselineName(baseline.name()));
    absl::MutexLock lock(&mu_);
    baselines_[baseline.name()] = baseline;
    return absl::OkStatus();
  }

  absl::StatusOr<v1::Baseline> GetBaseline(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    auto it = baselines_.find(name);
    if (it == baselines_.end()) return store_internal::NotFoundNamed("baseline", name);
    return it->second;
  }

  absl::StatusOr<std::vector<v1::Baseline>> ListBaselines() override {
    absl::MutexLock lock(&mu_);
    std::vector<v1::Baseline> out;
    for (const auto& [name, baseline] : baselines_) out.push_back(baseline);
    return out;
  }

  absl::Status DeleteBaseline(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    auto it = baselines_.find(name);
    if (it == baselines_.end()) return store_internal::NotFoundNamed("baseline", name);
    baselines_.erase(it);
    return absl::OkStatus();
  }

  absl::Status PutSchedule(const v1::Schedule& schedule) override {
    RETURN_IF_ERROR(store_internal::ValidateScheduleName(schedule.name()));
    absl::MutexLock lock(&mu_);
    schedules_[schedule.name()] = schedule;
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<v1::Schedule>> ListSchedules() override {
    absl::MutexLock lock(&mu_);
    std::vector<v1::Schedule> out;
    for (const auto& [name, schedule] : schedules_) out.push_back(schedule);
    return out;
  }

  absl::Status DeleteSchedule(absl::string_view name) override {
    absl::MutexLock lock(&mu_);
    auto it = schedules_.find(name);
    if (it == schedules_.end()) return store_internal::NotFoundNamed("schedule", name);
    schedules_.erase(it);
    return absl::OkStatus();
  }

 private:
  using Undo = std::vector<std::function<void()>>;

  absl::StatusOr<WriteResult> ApplyLocked(const CreateRunWrite& w, Undo* undo)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RETURN_IF_ERROR(store_internal::ValidateRunName(w.run.name()));
    if (runs_.contains(w.run.name())) {
      return absl::AlreadyExistsError(absl::StrCat("run ", w.run.name(), " already exists"));
    }
    RETURN_IF_ERROR(CheckRequestIdFree(w.run));
    Insert(w.run);
    undo->push_back([this, name = w.run.name()]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      Erase(name);
    });
    return WriteResult();
  }

  absl::StatusOr<WriteResult> ApplyLocked(const UpdateRunWrite& w, Undo* undo)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = runs_.find(w.run.name());
    if (it == runs_.end()) return store_internal::RunNotFound(w.run.name());
    v1::Run updated = w.run;
    if (!w.with_progress) {
      updated.set_sizes_done(it->second.sizes_done());
      updated.set_wrong(it->second.wrong());
    }
    const v1::Run before = it->second;
    RETURN_IF_ERROR(ReplaceLocked(updated));
    undo->push_back([this, before]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      (void)ReplaceLocked(before);
    });
    return WriteResult();
  }

  absl::StatusOr<WriteResult> ApplyLocked(const AddResultsWrite& w, Undo* undo)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const ResultRow& row : w.rows) {  // all checked before any is added
      RETURN_IF_ERROR(store_internal::ValidateResultSequence(row.result));
      if (!runs_.contains(row.run)) return store_internal::RunNotFound(row.run);
    }
    WriteResult result;
    result.inserted.reserve(w.rows.size());
    for (const ResultRow& row : w.rows) {
      const int64_t sequence = row.result.sequence();
      const bool added = results_[row.run].emplace(sequence, row.result).second;
      result.inserted.push_back(added);
      if (!added) continue;
      v1::Run& run = runs_.at(row.run);
      run.set_sizes_done(run.sizes_done() + 1);
      run.set_wrong(run.wrong() + row.result.wrong());
      undo->push_back([this, name = row.run, sequence,
                       wrong = row.result.wrong()]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        results_[name].erase(sequence);
        v1::Run& taken_back = runs_.at(name);
        taken_back.set_sizes_done(taken_back.sizes_done() - 1);
        taken_back.set_wrong(taken_back.wrong() - wrong);
      });
    }
    return result;
  }

  absl::StatusOr<WriteResult> ApplyLocked(const UpsertWorkersWrite& w, Undo* undo)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const v1::Worker& worker : w.workers) {
      RETURN_IF_ERROR(store_internal::ValidateWorkerName(worker.name()));
    }
    for (const v1::Worker& worker : w.workers) {
      undo->push_back(RestoreLocked(&workers_, worker.name()));
      workers_[worker.name()] = worker;
    }
    return WriteResult();
  }

  absl::StatusOr<WriteResult> ApplyLocked(const SetWorkerSecretHashWrite& w, Undo* undo)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RETURN_IF_ERROR(store_internal::ValidateWorkerSecretHash(w.name, w.secret_hash));
    undo->push_back(RestoreLocked(&credentials_, w.name));
    credentials_[w.name] = {w.secret_hash, w.issue_time};
    return WriteResult();
  }

  absl::StatusOr<WriteResult> ApplyLocked(const DeleteWorkerWrite& w, Undo* undo)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!workers_.contains(w.name) && !credentials_.contains(w.name)) {
      return absl::NotFoundError(absl::StrCat("worker ", w.name, " is not stored"));
    }
    undo->push_back(RestoreLocked(&workers_, w.name));
    undo->push_back(RestoreLocked(&credentials_, w.name));
    workers_.erase(w.name);
    credentials_.erase(w.name);
    return WriteResult();
  }

  // What puts `(*map)[key]` back as it is now (absent included).
  template <typename Map>
  std::function<void()> RestoreLocked(Map* map, const std::string& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = map->find(key);
    if (it == map->end()) return [map, key] { map->erase(key); };
    return [map, key, value = it->second] { (*map)[key] = value; };
  }

  // AlreadyExists if another run than `run` holds its (non-empty) request id.
  absl::Status CheckRequestIdFree(const v1::Run& run)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (run.request_id().empty()) return absl::OkStatus();
    auto it = request_ids_.find(run.request_id());
    if (it == request_ids_.end() || it->second == run.name()) {
      return absl::OkStatus();
    }
    return absl::AlreadyExistsError(
        absl::StrCat("request_id \"", run.request_id(),
                     "\" is already used by run ", it->second));
  }

  void Insert(const v1::Run& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    runs_[run.name()] = run;
    order_.insert(PositionOf(run));
    if (!run.request_id().empty()) request_ids_[run.request_id()] = run.name();
  }

  // Replaces the stored run named `run.name()`, which must exist.
  absl::Status ReplaceLocked(const v1::Run& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RETURN_IF_ERROR(CheckRequestIdFree(run));
    Erase(run.name());
    Insert(run);
    return absl::OkStatus();
  }

  // Removes the stored run named `name`, which must exist.
  void Erase(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = runs_.find(name);
    order_.erase(PositionOf(it->second));
    request_ids_.erase(it->second.request_id());
    runs_.erase(it);
  }

  absl::Mutex mu_;
  // Keyed by name; std::less<> lets absl::string_view look up std::string.
  std::map<std::string, v1::Run, std::less<>> runs_ ABSL_GUARDED_BY(mu_);
  // Every run's position, in ListRuns order.
  std::set<RunPosition, ListOrder> order_ ABSL_GUARDED_BY(mu_);
  // request id -> run name, for runs with a request id.
  std::map<std::string, std::string, std::less<>> request_ids_
      ABSL_GUARDED_BY(mu_);
  // run name -> sequence -> result.
  std::map<std::string, std::map<int64_t, v1::SizeResult>, std::less<>> results_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1::Worker> workers_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, WorkerCredential> credentials_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1::Workflow, std::less<>> workflows_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1::Baseline, std::less<>> baselines_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1::Schedule, std::less<>> schedules_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string, std::less<>> reports_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<Store> NewMemoryStore() {
  return std::make_unique<MemoryStore>();
}

}  // namespace collbench
