// SPDX-License-Identifier: Apache-2.0
// WorkflowRuns (server/workflows/workflow_runs.h) in memory, for tests of
// the workflow and schedule managers without a RunManager: runs are made
// QUEUED and stay as they are until the test moves them (SetState), which
// tells their subscribers as the watch hub would (a state change event; a
// final state's OnEnd after it). A request id made once returns its run,
// as after a coordinator restart. The test also sets the fleet (AddWorker),
// whether workers are idle, and refusals of the next creates.
//
// Thread safety: every method may be called from any thread; sinks are
// called without the fake's lock held.
#ifndef COLLBENCH_TESTS_UNIT_FAKES_FAKE_WORKFLOW_RUNS_H_
#define COLLBENCH_TESTS_UNIT_FAKES_FAKE_WORKFLOW_RUNS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "api/convert.h"
#include "server/workflows/workflow_runs.h"

namespace collbench {

class FakeWorkflowRuns final : public WorkflowRuns {
 public:
  // --- What the test sets --------------------------------------------------
  void AddWorker(const std::string& name, const std::string& host_id) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    v1::Worker& worker = workers_[name];
    worker.set_name(name);
    worker.set_state(v1::READY);
    worker.set_slots(1);
    worker.mutable_inventory()->set_host_id(host_id);
    worker.mutable_inventory()->set_hostname(host_id);
  }
  void SetWorkerState(const std::string& name, v1::WorkerState state) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    workers_[name].set_state(state);
  }
  // What WorkersIdle answers (OK by default).
  void SetIdle(absl::Status idle) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    idle_ = std::move(idle);
  }
  // The next `count` runs asked for are refused with `status`.
  void RefuseNext(int count, absl::Status status) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    refusals_ = count;
    refusal_ = std::move(status);
  }
  // What CheckRun (and CreateRun) say of a spec (OK by default).
  void SetCheck(std::function<absl::Status(const v1::RunSpec&)> check) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    check_ = std::move(check);
  }

  // The run goes to `state` (with `error`); its subscribers are told, and
  // once it is final ended. REQUIRES: the run exists.
  void SetState(const std::string& run, v1::RunState state, const std::string& error = "")
      ABSL_LOCKS_EXCLUDED(mu_) {
    v1::RunEvent event;
    std::vector<std::shared_ptr<RunEventSink>> sinks;
    {
      absl::MutexLock lock(&mu_);
      v1::Run& changed = runs_.at(run);
      changed.set_state(state);
      changed.set_error(error);
      event.set_run(run);
      *event.mutable_state_change() = changed;
      sinks = sinks_[run];
      if (IsFinalRunState(state)) sinks_.erase(run);
    }
    for (const auto& sink : sinks) sink->OnEvent(event);
    if (IsFinalRunState(state)) {
      for (const auto& sink : sinks) sink->OnEnd();
    }
  }
  void AddResult(const std::string& run, v1::SizeResult result) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    results_[run].push_back(std::move(result));
  }

  // --- What the test reads -------------------------------------------------
  // Every run made, in the order made.
  std::vector<v1::Run> Runs() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    std::vector<v1::Run> out;
    for (const std::string& name : order_) out.push_back(runs_.at(name));
    return out;
  }
  size_t subscribers(const std::string& run) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = sinks_.find(run);
    return it == sinks_.end() ? 0 : it->second.size();
  }
  int create_calls() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return create_calls_;
  }

  // --- WorkflowRuns --------------------------------------------------------
  absl::StatusOr<v1::Run> CreateRun(const v1::RunSpec& spec, const std::string& request_id,
                                    absl::Time now, absl::string_view caller) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ++create_calls_;
    return MakeLocked(spec, request_id, now);
  }
  std::vector<absl::StatusOr<v1::Run>> CreateRuns(const std::vector<Request>& requests,
                                                  absl::Time now,
                                                  absl::string_view caller) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ++create_calls_;
    std::vector<absl::StatusOr<v1::Run>> out;
    for (const Request& request : requests) {
      out.push_back(MakeLocked(request.spec, request.request_id, now));
    }
    return out;
  }
  absl::Status CheckRun(const v1::RunSpec& spec) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return check_ ? check_(spec) : absl::OkStatus();
  }
  absl::StatusOr<v1::Run> GetRun(absl::string_view name) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = runs_.find(std::string(name));
    if (it == runs_.end()) return absl::NotFoundError(absl::StrCat("run ", name, " not found"));
    return it->second;
  }
  absl::StatusOr<std::vector<v1::SizeResult>> GetResults(absl::string_view name) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return results_[std::string(name)];
  }
  absl::StatusOr<v1::Run> CancelRun(absl::string_view name, absl::Time now) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      auto it = runs_.find(std::string(name));
      if (it == runs_.end()) return absl::NotFoundError(absl::StrCat("run ", name, " not found"));
      if (IsFinalRunState(it->second.state())) {
        return absl::FailedPreconditionError(absl::StrCat(name, " has ended"));
      }
    }
    SetState(std::string(name), v1::CANCELLED, "cancelled");
    return GetRun(name);
  }
  void Subscribe(const std::string& run, std::shared_ptr<RunEventSink> sink) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    sinks_[run].push_back(std::move(sink));
  }
  void Unsubscribe(const std::string& run, const RunEventSink* sink) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = sinks_.find(run);
    if (it == sinks_.end()) return;
    std::erase_if(it->second, [sink](const auto& s) { return s.get() == sink; });
    if (it->second.empty()) sinks_.erase(it);
  }
  absl::Status WorkersIdle(absl::string_view selector) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return idle_;
  }
  std::vector<v1::Worker> ListWorkers() override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    std::vector<v1::Worker> out;
    for (const auto& [name, worker] : workers_) out.push_back(worker);
    return out;
  }
  absl::StatusOr<v1::Worker> GetWorker(absl::string_view name) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = workers_.find(std::string(name));
    if (it == workers_.end()) return absl::NotFoundError(absl::StrCat(name, " not found"));
    return it->second;
  }
  absl::StatusOr<v1::Worker> SuspectWorker(absl::string_view name,
                                           const v1::WorkerSuspicion& why) override
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = workers_.find(std::string(name));
    if (it == workers_.end()) return absl::NotFoundError(absl::StrCat(name, " not found"));
    it->second.set_state(v1::SUSPECT);
    *it->second.mutable_suspect() = why;
    return it->second;
  }
  absl::StatusOr<v1::Worker> ClearWorker(absl::string_view name, absl::string_view by,
                                         absl::Time now) override ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = workers_.find(std::string(name));
    if (it == workers_.end()) return absl::NotFoundError(absl::StrCat(name, " not found"));
    it->second.set_state(v1::READY);
    it->second.clear_suspect();
    return it->second;
  }

 private:
  absl::StatusOr<v1::Run> MakeLocked(const v1::RunSpec& spec, const std::string& request_id,
                                     absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (auto made = by_request_.find(request_id); !request_id.empty() && made != by_request_.end()) {
      return runs_.at(made->second);
    }
    if (refusals_ > 0) {
      --refusals_;
      return refusal_;
    }
    if (check_) {
      if (absl::Status checked = check_(spec); !checked.ok()) return checked;
    }
    v1::Run run;
    run.set_name(absl::StrCat("runs/fake-", order_.size() + 1));
    run.set_state(v1::QUEUED);
    run.set_request_id(request_id);
    *run.mutable_spec() = spec;
    *run.mutable_create_time() = TimestampFromTime(now);
    order_.push_back(run.name());
    if (!request_id.empty()) by_request_[request_id] = run.name();
    runs_[run.name()] = run;
    return run;
  }

  absl::Mutex mu_;
  std::map<std::string, v1::Run> runs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> order_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> by_request_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<v1::SizeResult>> results_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::shared_ptr<RunEventSink>>> sinks_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1::Worker> workers_ ABSL_GUARDED_BY(mu_);
  std::function<absl::Status(const v1::RunSpec&)> check_ ABSL_GUARDED_BY(mu_);
  absl::Status idle_ ABSL_GUARDED_BY(mu_);
  int refusals_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status refusal_ ABSL_GUARDED_BY(mu_);
  int create_calls_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace collbench

#endif  // COLLBENCH_TESTS_UNIT_FAKES_FAKE_WORKFLOW_RUNS_H_
