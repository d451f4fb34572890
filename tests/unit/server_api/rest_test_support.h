// SPDX-License-Identifier: Apache-2.0
// A coordinator without gRPC for the REST tests: an in-memory store, a
// worker registry, a watch hub, a run manager and a fake link that accepts
// every message, plus helpers that play a launcher reporting a run.
#ifndef COLLBENCH_TESTS_UNIT_SERVER_API_REST_TEST_SUPPORT_H_
#define COLLBENCH_TESTS_UNIT_SERVER_API_REST_TEST_SUPPORT_H_

#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/core/run_manager.h"
#include "tests/unit/fakes/accepting_link.h"

namespace collbench {

class FakeCoordinator {
 public:
  FakeCoordinator() {
    manager_ =
        std::make_unique<RunManager>(store_.get(), &registry_, &hub_, &link_, RunManagerOptions{});
    EXPECT_TRUE(manager_->Recover(absl::Now()).ok());
  }

  RunManager& manager() { return *manager_; }
  Store& store() { return *store_; }
  WatchHub& hub() { return hub_; }

  void Register(const std::string& id, int slots = 2) {
    v1::Register hello;
    hello.set_worker_id(id);
    hello.set_slots(slots);
    hello.set_agent_address(id + ":7000");
    hello.mutable_inventory()->set_host_id("host-" + id);
    hello.mutable_inventory()->set_hostname(id);
    hello.mutable_inventory()->set_memory_bytes(uint64_t{8} << 30);
    EXPECT_TRUE(manager_->OnRegister(hello, absl::Now()).ok());
  }

  static v1::RunSpec Spec(int ranks, int sizes) {
    v1::RunSpec spec;
    spec.set_operation("allreduce");
    spec.set_ranks(ranks);
    for (int i = 0; i < sizes; ++i) spec.add_sizes_bytes(uint64_t{8} << i);
    return spec;
  }

  // A scheduled run on worker `a` (call Register("a") first).
  v1::Run Create(int sizes) {
    absl::StatusOr<v1::Run> run = manager_->CreateRun(Spec(2, sizes), "", absl::Now());
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : v1::Run();
  }

  // The launcher on workers/a reports.
  void Running(const std::string& run, int sizes) {
    v1::RunStatus status;
    status.set_run(run);
    status.set_state(v1::RUNNING);
    status.set_sizes_total(sizes);
    manager_->OnRunStatus("workers/a", status, absl::Now());
  }
  void Result(const std::string& run, int64_t sequence) {
    v1::RunResult result;
    result.set_run(run);
    result.mutable_result()->set_sequence(sequence);
    result.mutable_result()->set_bytes(uint64_t{8} << sequence);
    result.mutable_result()->set_avg_s(1e-6);
    manager_->OnResult("workers/a", result, absl::Now());
    manager_->FlushResults();  // results are published once their batch is stored
  }
  void Succeeded(const std::string& run, int64_t results_total) {
    v1::RunStatus status;
    status.set_run(run);
    status.set_state(v1::SUCCEEDED);
    status.set_results_total(results_total);
    manager_->OnRunStatus("workers/a", status, absl::Now());
  }

 private:
  std::unique_ptr<Store> store_ = NewMemoryStore();
  scheduling::WorkerRegistry registry_;
  WatchHub hub_;
  AcceptingLink link_;
  std::unique_ptr<RunManager> manager_;
};

}  // namespace collbench

#endif  // COLLBENCH_TESTS_UNIT_SERVER_API_REST_TEST_SUPPORT_H_
