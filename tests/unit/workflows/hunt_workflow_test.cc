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
#include "api/convert.h"
#include "gtest/gtest.h"
#include "server/core/core.h"
#include "server/core/watch_hub.h"
#include "server/core/worker_link.h"
#include "server/scheduling/worker_registry.h"
#include "server/store/store.h"
#include "server/workflows/run_manager_runs.h"
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
    core_ = std::make_unique<Core>(store_.get(), &hub_, &link_, CoreOptions());
    runs_ = &core_->runs();
    ASSERT_TRUE(core_->Recover(absl::Now()).ok());
    for (int i = 0; i < hosts_; ++i) {
      v1::Register hello;
      hello.set_worker_id("w" + std::to_string(i));
      hello.set_slots(1);
      hello.set_agent_address("w" + std::to_string(i) + ":7000");
      hello.mutable_inventory()->set_host_id("host-" + std::to_string(i));
      hello.mutable_inventory()->set_hostname("w" + std::to_string(i));
      if (per_rack_ > 0) {
        const std::string rack = "r" + std::to_string(i / per_rack_);
        (*hello.mutable_inventory()->mutable_labels())["collbench.io/rack"] = rack;
        rack_of_["workers/w" + std::to_string(i)] = rack;
      }
      ASSERT_TRUE(core_->fleet().OnRegister(hello, absl::Now()).ok());
    }
    adapter_ = std::make_unique<RunManagerRuns>(runs_, &core_->fleet(), &hub_);
    workflows_ = std::make_unique<WorkflowManager>(store_.get(), adapter_.get(), RealClock(),
                                                   WorkflowManagerOptions());
    ASSERT_TRUE(workflows_->Start().ok());
    fleet_ = std::thread([this] { PlayTheFleet(); });
  }
  void TearDown() override {
    stop_ = true;
    fleet_.join();
    workflows_.reset();
  }

  // Waits for a batch of assignments (a round's runs arrive together), then
  // runs each: RUNNING, one result, SUCCEEDED.
  void PlayTheFleet() {
    while (!stop_) {
      absl::SleepFor(absl::Milliseconds(20));
      const auto batch = link_.Take();
      if (batch.empty()) continue;
      max_at_once_ = std::max<int>(max_at_once_, static_cast<int>(batch.size()));
      for (const auto& [launcher, a] : batch) Run(launcher, a);
      runs_->FlushJournal();
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
    std::set<std::string> ranks;
    for (const v1::Peer& p : a.peers()) ranks.insert(p.worker());
    bool slow = ranks.count(slow_worker_) > 0 || ranks == slow_link_;
    if (!slow_rack_.empty() && ranks.size() == 2) {
      std::set<std::string> racks;
      for (const std::string& w : ranks) racks.insert(rack_of_.at(w));
      slow = slow || (racks.size() == 2 && racks.count(slow_rack_) > 0);  // its uplink
    }
    if (ranks == flaky_pair_ && flaky_runs_++ == 0) slow = true;  // slow the first time only
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

  // A hunt (pairwise unless `pattern` says otherwise) at 1 MiB over the
  // fleet, to its end; its final state.
  v1::Workflow HuntToTheEnd(const std::string& pattern = "") {
    v1::CreateWorkflowRequest request;
    request.mutable_spec()->mutable_hunt()->add_sizes_bytes(1 << 20);
    request.mutable_spec()->mutable_hunt()->set_pattern(pattern);
    absl::StatusOr<v1::Workflow> created = workflows_->Create(request, absl::Now());
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) return v1::Workflow();
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    absl::StatusOr<v1::Workflow> w = workflows_->Get(created->name());
    while (w.ok() && !IsFinalWorkflowState(w->state()) && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(10));
      w = workflows_->Get(created->name());
    }
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *w : v1::Workflow();
  }

  static constexpr int kHosts = 6;
  int hosts_ = kHosts;
  int per_rack_ = 0;  // hosts per rack (label collbench.io/rack=r<i / per_rack_>); 0: none
  std::map<std::string, std::string> rack_of_;  // worker -> rack
  std::string slow_rack_;                       // runs across its boundary are a third as fast
  static constexpr char kSlow[] = "workers/w3";
  // The fleet's faults, set before a hunt is created: a node a third as
  // fast, a link (both workers) a third as fast, and a pair slow only the
  // first time it is measured (a moment's contention).
  std::string slow_worker_ = kSlow;
  std::set<std::string> slow_link_;
  std::set<std::string> flaky_pair_;
  int flaky_runs_ = 0;  // the fleet thread's
  std::unique_ptr<Store> store_ = NewMemoryStore();
  WatchHub hub_;
  FleetLink link_;
  std::unique_ptr<Core> core_;
  RunManager* runs_ = nullptr;
  std::unique_ptr<RunManagerRuns> adapter_;
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
  EXPECT_EQ(core_->fleet().GetWorker(kSlow)->state(), v1::SUSPECT);
  EXPECT_EQ(hunt.pairs_size(), kHosts * (kHosts - 1) / 2 + 3 + 1);  // survey, re-tests, control
  // Its report renders the heat map with the suspect marked.
  absl::StatusOr<v1::WorkflowReport> report = workflows_->Report(created->name());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_NE(report->html().find("hunt-heatmap"), std::string::npos);
  EXPECT_NE(report->html().find("data-worker=\"workers/w3\""), std::string::npos);
}

// A pair slow once is measured again; the better run stands for it and
// nothing is reported. A link slow every time stays slow: LINK_SUSPECT for
// that pair, no CONFIRMED_BAD.
TEST_F(HuntWorkflowTest, APairSlowOnceIsMeasuredAgainAndNotReported) {
  slow_worker_.clear();
  flaky_pair_ = {"workers/w1", "workers/w4"};
  const v1::Workflow w = HuntToTheEnd();
  ASSERT_EQ(w.state(), v1::WORKFLOW_SUCCEEDED) << w.error();
  const v1::HuntOutput& hunt = w.output().hunt();
  EXPECT_EQ(hunt.suspects_size(), 0) << hunt.DebugString();
  int counted = 0, set_aside = 0;
  for (const v1::HuntMeasurement& m : hunt.pairs()) {
    if (std::set<std::string>(m.workers().begin(), m.workers().end()) != flaky_pair_) continue;
    if (m.phase() == "pairwise") {
      ++counted;
      EXPECT_GT(m.busbw_bytes_per_s(), 2.9e9);  // the repeat's figure stands
      EXPECT_FALSE(m.slow());
    } else {
      EXPECT_EQ(m.phase(), "repeat");
      ++set_aside;
      EXPECT_LT(m.busbw_bytes_per_s(), 1.1e9);
    }
  }
  EXPECT_EQ(counted, 1);
  EXPECT_EQ(set_aside, 1);
  EXPECT_EQ(core_->fleet().GetWorker("workers/w1")->state(), v1::READY);
}

TEST_F(HuntWorkflowTest, ALinkSlowEveryTimeIsALinkSuspect) {
  slow_worker_.clear();
  slow_link_ = {"workers/w1", "workers/w4"};
  const v1::Workflow w = HuntToTheEnd();
  ASSERT_EQ(w.state(), v1::WORKFLOW_SUCCEEDED) << w.error();
  const v1::HuntOutput& hunt = w.output().hunt();
  ASSERT_EQ(hunt.suspects_size(), 1) << hunt.DebugString();
  const v1::HuntSuspect& s = hunt.suspects(0);
  EXPECT_EQ(s.verdict(), "LINK_SUSPECT");
  std::set<std::string> pair = {s.worker()};
  pair.insert(s.peers().begin(), s.peers().end());
  EXPECT_EQ(pair, slow_link_);
  EXPECT_NEAR(s.ratio(), 1.0 / 3, 0.05);
  EXPECT_FALSE(s.quarantined());
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

// Nine hosts in three racks of three.
class TopologyHuntTest : public HuntWorkflowTest {
 protected:
  TopologyHuntTest() {
    hosts_ = 9;
    per_rack_ = 3;
  }
};

// A slow uplink: every run across rack r2's boundary is slow, every run
// within any rack and between r0 and r1 is not. The hunt names the rack,
// quarantines none of its nodes, and the heat map groups by rack.
TEST_F(TopologyHuntTest, AHuntNamesTheRackWhoseUplinkIsSlowNotItsNodes) {
  slow_worker_.clear();
  slow_rack_ = "r2";
  const v1::Workflow w = HuntToTheEnd("topology");
  ASSERT_EQ(w.state(), v1::WORKFLOW_SUCCEEDED) << w.error();
  const v1::HuntOutput& hunt = w.output().hunt();
  ASSERT_EQ(hunt.suspects_size(), 1) << hunt.DebugString();
  const v1::HuntSuspect& s = hunt.suspects(0);
  EXPECT_EQ(s.verdict(), "RACK_SUSPECT");
  EXPECT_EQ(s.rack(), "r2");
  EXPECT_EQ(std::set<std::string>(s.peers().begin(), s.peers().end()),
            (std::set<std::string>{"workers/w6", "workers/w7", "workers/w8"}));
  EXPECT_NEAR(s.ratio(), 1.0 / 3, 0.05);
  for (int i = 0; i < hosts_; ++i) {
    EXPECT_EQ(core_->fleet().GetWorker("workers/w" + std::to_string(i))->state(), v1::READY);
  }
  std::set<std::string> phases;
  for (const v1::HuntMeasurement& m : hunt.pairs()) phases.insert(m.phase());
  EXPECT_TRUE(phases.count("within") && phases.count("across") && phases.count("random"))
      << hunt.DebugString();
  for (const v1::HuntWorker& worker : hunt.workers()) {
    EXPECT_EQ(worker.rack(), rack_of_.at(worker.worker()));
  }
  absl::StatusOr<v1::WorkflowReport> report = workflows_->Report(w.name());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_NE(report->html().find("data-rack=\"r2\" data-suspect=\"true\""), std::string::npos);
  EXPECT_NE(report->html().find("rack r2"), std::string::npos);
}

// Within a fine topology, a bad node is still the node: CONFIRMED_BAD and
// SUSPECT, and no rack is named.
TEST_F(TopologyHuntTest, ABadNodeIsStillTheNode) {
  slow_worker_ = "workers/w4";
  const v1::Workflow w = HuntToTheEnd("topology");
  ASSERT_EQ(w.state(), v1::WORKFLOW_SUCCEEDED) << w.error();
  const v1::HuntOutput& hunt = w.output().hunt();
  ASSERT_EQ(hunt.suspects_size(), 1) << hunt.DebugString();
  EXPECT_EQ(hunt.suspects(0).worker(), "workers/w4");
  EXPECT_EQ(hunt.suspects(0).verdict(), "CONFIRMED_BAD");
  EXPECT_EQ(core_->fleet().GetWorker("workers/w4")->state(), v1::SUSPECT);
}

// A hunt's rack keys are label keys: one that is not is refused, named.
TEST_F(TopologyHuntTest, ARackKeyThatIsNoLabelKeyIsRefused) {
  v1::CreateWorkflowRequest request;
  request.mutable_spec()->mutable_hunt()->set_pattern("topology");
  request.mutable_spec()->mutable_hunt()->add_rack_keys("Rack Key");
  absl::StatusOr<v1::Workflow> created = workflows_->Create(request, absl::Now());
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(created.status().message().find("spec.hunt.rack_keys"), std::string::npos)
      << created.status();
}

}  // namespace
}  // namespace collbench
