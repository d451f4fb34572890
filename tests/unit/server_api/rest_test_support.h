// SPDX-License-Identifier: Apache-2.0
// A coordinator without gRPC for the REST tests: an in-memory store, a
// watch hub, the core and a fake link that accepts every message, plus
// helpers that play a launcher reporting a run (each returns once what it
// reported is stored and published).
#ifndef COLLBENCH_TESTS_UNIT_SERVER_API_REST_TEST_SUPPORT_H_
#define COLLBENCH_TESTS_UNIT_SERVER_API_REST_TEST_SUPPORT_H_

#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/core/core.h"
#include "tests/unit/fakes/accepting_link.h"

namespace collbench {

class FakeCoordinator {
 public:
  FakeCoordinator() : core_(store_.get(), &hub_, &link_, CoreOptions{}) {
    EXPECT_TRUE(core_.Recover(absl::Now()).ok());
  }

  RunManager& manager() { return core_.runs(); }
  Fleet& fleet() { return core_.fleet(); }
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
    EXPECT_TRUE(core_.fleet().OnRegister(hello, absl::Now()).ok());
    core_.runs().FlushJournal();
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
    absl::StatusOr<v1::Run> run = core_.runs().CreateRun(Spec(2, sizes), "", absl::Now());
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : v1::Run();
  }

  // The launcher on workers/a reports.
  void Running(const std::string& run, int sizes) {
    v1::RunStatus status;
    status.set_run(run);
    status.set_state(v1::RUNNING);
    status.set_sizes_total(sizes);
    core_.runs().OnRunStatus("workers/a", status, absl::Now());
    core_.runs().FlushJournal();
  }
  void Result(const std::string& run, int64_t sequence) {
    v1::RunResult result;
    result.set_run(run);
    result.mutable_result()->set_sequence(sequence);
    result.mutable_result()->set_bytes(uint64_t{8} << sequence);
    result.mutable_result()->set_avg_s(1e-6);
    core_.runs().OnResult("workers/a", result, absl::Now());
    core_.runs().FlushJournal();  // results are published once their batch is stored
  }
  void Succeeded(const std::string& run, int64_t results_total) {
    v1::RunStatus status;
    status.set_run(run);
    status.set_state(v1::SUCCEEDED);
    status.set_results_total(results_total);
    core_.runs().OnRunStatus("workers/a", status, absl::Now());
    core_.runs().FlushJournal();
  }

 private:
  std::unique_ptr<Store> store_ = NewMemoryStore();
  WatchHub hub_;
  AcceptingLink link_;
  Core core_;  // last: stopped first
};

}  // namespace collbench

#endif  // COLLBENCH_TESTS_UNIT_SERVER_API_REST_TEST_SUPPORT_H_
