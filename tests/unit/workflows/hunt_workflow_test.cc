// SPDX-License-Identifier: Apache-2.0
// A hunt as a workflow over a real RunManager (in-memory store), its
// workers played by a link that runs every assignment at once with a
// bandwidth a model gives the pair (one node at a third of the others'):
// the rounds' runs are created together and run at the same time; the
// slow node is CONFIRMED_BAD and SUSPECT, and nothing else is a suspect.
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/core/run_manager.h"
#include "server/core/watch_hub.h"
#include "server/core/worker_link.h"
#include "server/scheduling/worker_registry.h"
#include "server/store/store.h"
#include "server/workflows/workflow_manager.h"

namespace collbench {
namespace {

// Keeps the assignments; the fleet thread answers them.
class FleetLink final : public WorkerLink {
 public:
  bool Send(const std::string& worker, const v1::CoordinatorMessage& m) override {
    if (!m.has_assignment()) return true;
    absl::MutexLock lock(&mu_);
    assignments_.push_back({worker, m.assignment()});
    return true;
  }
  std::vector<std::pair<std::string, v1::Assignment>> Take() {
    absl::MutexLock lock(&mu_);
    std::vector<std::pair<std::string, v1::Assignment>> out(assignments_.begin(),
                                                             assignments_.end());
    assignments_.clear();
    return out;
  }

 private:
  absl::Mutex mu_;
  std::deque<std::pair<std::string, v1::Assignment>> assignments_ ABSL_GUARDED_BY(mu_);
};

class HuntWorkflowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runs_ = std::make_unique<RunManager>(store_.get(), &registry_, &hub_, &link_,
                                         RunManagerOptions());
    ASSERT_TRUE(runs_->Recover(absl::Now()).ok());
    for (int i = 0; i < kHosts; ++i) {
      v1::Register hello;
      hello.set_worker_id("w" + std::to_string(i));
      hello.set_slots(1);
      hello.set_agent_address("w" + std::to_string(i) + ":7000");
      hello.mutable_inventory()->set_host_id("host-" + std::to_string(i));
      hello.mutable_inventory()->set_hostname("w" + std::to_string(i));
      ASSERT_TRUE(runs_->OnRegister(hello, absl::Now()).ok());
    }
    WorkflowManagerOptions options;
    options.poll_interval = absl::Milliseconds(5);
    workflows_ = std::make_unique<WorkflowManager>(store_.get(), runs_.get(), options);
    ASSERT_TRUE(workflows_->Start().ok());
    fleet_ = std::thread([this] { Fleet(); });
  }
  void TearDown() override {
    stop_ = true;
    fleet_.join();
    workflows_.reset();
  }

  // Waits for a batch of assignments (a round's runs arrive together), then
  // runs each: RUNNING, one result, SUCCEEDED.
  void Fleet() {
    while (!stop_) {
      absl::SleepFor(absl::Milliseconds(20));
      const auto batch = link_.Take();
      if (batch.empty()) continue;
      max_at_once_ = std::max<int>(max_at_once_, static_cast<int>(batch.size()));
      for (const auto& [launcher, a] : batch) Run(launcher, a);
      runs_->FlushResults();
      for (const auto& [launcher, a] : batch) {
        v1::RunStatus done;
        done.set_run(a.run());
        done.set_state(v1::SUCCEEDED);
        done.set_results_total(1);
        runs_->OnRunStatus(launcher, done, absl::Now());
      }
    }
  }

  void Run(const std::string& launcher, const v1::Assignment& a) {
    v1::RunStatus running;
    running.set_run(a.run());
    running.set_state(v1::RUNNING);
    running.set_sizes_total(1);
    runs_->OnRunStatus(launcher, running, absl::Now());
    bool slow = false;
    for (const v1::Peer& p : a.peers()) slow = slow || p.worker() == kSlow;
    const double bytes_per_s = (slow ? 1e9 : 3e9) * (1 + 0.01 * (a.run().back() % 5));
    v1::RunResult result;
    result.set_run(a.run());
    v1::SizeResult* r = result.mutable_result();
    r->set_sequence(0);
    r->set_operation(a.spec().operation());
    r->set_bytes(a.spec().sizes_bytes(0));
    r->set_iters(10);
    r->set_avg_s(static_cast<double>(r->bytes()) / bytes_per_s);
    r->set_p50_s(r->avg_s());
    r->set_busbw_bytes_per_s(bytes_per_s);
    runs_->OnResult(launcher, result, absl::Now());
  }

  static constexpr int kHosts = 6;
  static constexpr char kSlow[] = "workers/w3";
  std::unique_ptr<Store> store_ = NewMemoryStore();
  scheduling::WorkerRegistry registry_;
  WatchHub hub_;
  FleetLink link_;
  std::unique_ptr<RunManager> runs_;
  std::unique_ptr<WorkflowManager> workflows_;
  std::thread fleet_;
  std::atomic<bool> stop_{false};
  std::atomic<int> max_at_once_{0};
};

TEST_F(HuntWorkflowTest, RoundsRunAtOnceAndTheSlowNodeIsConfirmedBadAndSuspect) {
  v1::CreateWorkflowRequest request;
  request.mutable_spec()->mutable_hunt()->add_sizes_bytes(1 << 20);
  absl::StatusOr<v1::Workflow> created = workflows_->Create(request, absl::Now());
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->kind(), "hunt");
  EXPECT_EQ(created->cells_total(), kHosts * (kHosts - 1) / 2);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  absl::StatusOr<v1::Workflow> w = workflows_->Get(created->name());
  while (w.ok() && !IsFinalWorkflowState(w->state()) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
    w = workflows_->Get(created->name());
  }
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->state(), v1::WORKFLOW_SUCCEEDED) << w->error();
  // A round of 6 hosts is 3 disjoint pairs, created and assigned together.
  EXPECT_EQ(max_at_once_.load(), kHosts / 2);
  const v1::HuntOutput& hunt = w->output().hunt();
  ASSERT_EQ(hunt.suspects_size(), 1) << hunt.DebugString();
  EXPECT_EQ(hunt.suspects(0).worker(), kSlow);
  EXPECT_EQ(hunt.suspects(0).verdict(), "CONFIRMED_BAD");
  EXPECT_NEAR(hunt.suspects(0).ratio(), 1.0 / 3, 0.05);
  EXPECT_TRUE(hunt.suspects(0).quarantined());
  EXPECT_EQ(runs_->GetWorker(kSlow)->state(), v1::SUSPECT);
  EXPECT_EQ(hunt.pairs_size(), kHosts * (kHosts - 1) / 2 + 3 + 1);  // survey, re-tests, control
  // Its report renders the heat map with the suspect marked.
  absl::StatusOr<v1::WorkflowReport> report = workflows_->Report(created->name());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_NE(report->html().find("hunt-heatmap"), std::string::npos);
  EXPECT_NE(report->html().find("data-worker=\"workers/w3\""), std::string::npos);
}

TEST_F(HuntWorkflowTest, AHuntOverOneHostIsRefusedWithTheReason) {
  v1::CreateWorkflowRequest request;
  request.mutable_spec()->set_workers("workers/w1");
  absl::StatusOr<v1::Workflow> created = workflows_->Create(request, absl::Now());
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument);
  request.mutable_spec()->mutable_hunt()->set_pattern("diagonal");
  request.mutable_spec()->clear_workers();
  created = workflows_->Create(request, absl::Now());
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.status().message().find("spec.hunt.pattern"), std::string::npos);
}

}  // namespace
}  // namespace collbench
