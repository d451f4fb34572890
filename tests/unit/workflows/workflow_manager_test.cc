// SPDX-License-Identifier: Apache-2.0
// The workflow manager over a real RunManager (in-memory store, a fake
// link standing for the workers; the integration: the adapter, the watch
// hub's events, the executor's threads): one cell's run at a time, each
// created with its cell's request id, so a restart goes on with the run it
// had; cancel ends the run in progress; a request id names one spec.
#include "server/workflows/workflow_manager.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "api/convert.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/core.h"
#include "server/core/admission.h"
#include "server/workflows/run_manager_runs.h"
#include "tests/unit/fakes/accepting_link.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

class WorkflowManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    core_ = std::make_unique<Core>(store_.get(), &hub_, &link_, CoreOptions());
    runs_ = &core_->runs();
    ASSERT_TRUE(core_->Recover(absl::Now()).ok());
    adapter_ = std::make_unique<RunManagerRuns>(runs_, &core_->fleet(), &hub_);
    StartWorkflows();
  }
  void TearDown() override { workflows_.reset(); }

  void StartWorkflows(WorkflowManagerOptions options = {}) {
    workflows_.reset();
    workflows_ =
        std::make_unique<WorkflowManager>(store_.get(), adapter_.get(), RealClock(), options);
    ASSERT_TRUE(workflows_->Start().ok());
  }

  static v1::CreateWorkflowRequest MatrixRequest(const std::string& request_id = "") {
    v1::CreateWorkflowRequest request;
    v1::MatrixSpec* m = request.mutable_spec()->mutable_matrix();
    m->mutable_base()->set_ranks(2);
    m->mutable_base()->add_sizes_bytes(8);
    m->add_operations("allreduce");
    m->add_operations("bcast");
    m->add_placements("pack");
    m->add_transports("tcp");
    request.set_request_id(request_id);
    return request;
  }

  // Waits until `done` holds of the workflow (or 10 s pass).
  v1::Workflow WaitFor(const std::string& name,
                       const std::function<bool(const v1::Workflow&)>& done) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    absl::StatusOr<v1::Workflow> w = workflows_->Get(name);
    while (w.ok() && !done(*w) && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
      w = workflows_->Get(name);
    }
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *w : v1::Workflow();
  }

  std::vector<v1::Run> StoredRuns() {
    absl::StatusOr<Store::RunPage> page = store_->ListRuns(1000, "", v1::RUN_STATE_UNSPECIFIED);
    return page.ok() ? page->runs : std::vector<v1::Run>();
  }

  std::unique_ptr<Store> store_ = NewMemoryStore();
  WatchHub hub_;
  AcceptingLink link_;
  std::unique_ptr<Core> core_;
  RunManager* runs_ = nullptr;
  std::unique_ptr<RunManagerRuns> adapter_;
  std::unique_ptr<WorkflowManager> workflows_;
};

// No worker is registered, so the first cell's run waits in the queue: the
// workflow makes it, with its cell's request id and labels, and no other.
TEST_F(WorkflowManagerTest, RunsOneCellAtATimeWithItsRequestId) {
  absl::StatusOr<v1::Workflow> created = workflows_->Create(MatrixRequest(), absl::Now());
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->kind(), "matrix");
  EXPECT_EQ(created->cells_total(), 2);
  const v1::Workflow running = WaitFor(
      created->name(), [](const v1::Workflow& w) { return !w.cells(0).run().empty(); });
  EXPECT_EQ(running.state(), v1::WORKFLOW_RUNNING);
  absl::SleepFor(absl::Milliseconds(50));  // time to (wrongly) make the second one
  const std::vector<v1::Run> runs = StoredRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].request_id(), created->name() + "/cell-0");
  EXPECT_EQ(runs[0].spec().operation(), "allreduce");
  EXPECT_EQ(runs[0].spec().labels().at("workflow"),
            created->name().substr(std::string("workflows/").size()));
}

TEST_F(WorkflowManagerTest, CancelEndsTheWorkflowAndItsRunInProgress) {
  absl::StatusOr<v1::Workflow> created = workflows_->Create(MatrixRequest(), absl::Now());
  ASSERT_TRUE(created.ok()) << created.status();
  const v1::Workflow running = WaitFor(
      created->name(), [](const v1::Workflow& w) { return !w.cells(0).run().empty(); });
  ASSERT_TRUE(workflows_->Cancel(created->name(), absl::Now()).ok());
  const v1::Workflow ended = WaitFor(created->name(), [](const v1::Workflow& w) {
    return IsFinalWorkflowState(w.state());
  });
  EXPECT_EQ(ended.state(), v1::WORKFLOW_CANCELLED);
  EXPECT_EQ(runs_->GetRun(running.cells(0).run())->state(), v1::CANCELLED);
  EXPECT_EQ(StoredRuns().size(), 1u);  // the second cell was never made
  EXPECT_FALSE(workflows_->Cancel(created->name(), absl::Now()).ok());
}

// A coordinator that stops while a cell's run waits goes on with that same
// run after its restart: the store keeps the workflow, the request id the
// run.
TEST_F(WorkflowManagerTest, ARestartGoesOnWithTheRunItHad) {
  absl::StatusOr<v1::Workflow> created = workflows_->Create(MatrixRequest(), absl::Now());
  ASSERT_TRUE(created.ok()) << created.status();
  const v1::Workflow before = WaitFor(
      created->name(), [](const v1::Workflow& w) { return !w.cells(0).run().empty(); });
  StartWorkflows();  // stops the old manager (as a shutdown does), starts a new one
  const v1::Workflow after = WaitFor(created->name(), [](const v1::Workflow& w) {
    return w.state() == v1::WORKFLOW_RUNNING && !w.cells(0).run().empty();
  });
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(after.cells(0).run(), before.cells(0).run());
  EXPECT_EQ(StoredRuns().size(), 1u);
}

// One workflow runs (its first run waits for workers), one waits; a third
// is refused with a retry-after and nothing of it is stored.
TEST_F(WorkflowManagerTest, BeyondTheQueueCreateIsResourceExhausted) {
  WorkflowManagerOptions options;
  options.max_running = 1;
  options.max_queued = 1;
  StartWorkflows(options);
  absl::StatusOr<v1::Workflow> first = workflows_->Create(MatrixRequest(), absl::Now());
  ASSERT_TRUE(first.ok()) << first.status();
  WaitFor(first->name(), [](const v1::Workflow& w) { return w.state() == v1::WORKFLOW_RUNNING; });
  ASSERT_TRUE(workflows_->Create(MatrixRequest(), absl::Now()).ok());
  absl::StatusOr<v1::Workflow> refused = workflows_->Create(MatrixRequest(), absl::Now());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(RetryAfterSeconds(refused.status()).has_value());
  EXPECT_EQ(store_->ListWorkflows()->size(), 2u);
}

TEST_F(WorkflowManagerTest, ARequestIdNamesOneSpec) {
  absl::StatusOr<v1::Workflow> first = workflows_->Create(MatrixRequest("portal-1"), absl::Now());
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<v1::Workflow> again = workflows_->Create(MatrixRequest("portal-1"), absl::Now());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->name(), first->name());
  v1::CreateWorkflowRequest other = MatrixRequest("portal-1");
  other.mutable_spec()->mutable_matrix()->add_transports("shm");
  absl::StatusOr<v1::Workflow> refused = workflows_->Create(other, absl::Now());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(WorkflowManagerTest, BadInputIsRefusedAndNothingIsStored) {
  v1::CreateWorkflowRequest advice;
  advice.mutable_spec()->mutable_advice()->add_runs("runs/nonexistent");
  absl::StatusOr<v1::Workflow> refused = workflows_->Create(advice, absl::Now());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("spec.advice.runs[0]"));

  v1::CreateWorkflowRequest typo = MatrixRequest();
  typo.mutable_spec()->mutable_matrix()->add_operations("allredcue");
  refused = workflows_->Create(typo, absl::Now());
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("spec.matrix.operations: 'allredcue'"));

  v1::CreateWorkflowRequest dry = MatrixRequest();
  dry.set_validate_only(true);
  absl::StatusOr<v1::Workflow> planned = workflows_->Create(dry, absl::Now());
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_EQ(planned->cells_size(), 2);
  EXPECT_TRUE(workflows_->List(0, "", "")->workflows.empty());
  EXPECT_TRUE(store_->ListWorkflows()->empty());
  EXPECT_TRUE(StoredRuns().empty());
}

// A workflow's runs are checked as CreateRun checks a run: a tuning
// environment that names a program (the launch agent, a preloaded
// library) refuses the whole workflow, and no workflow or run of it
// appears.
TEST_F(WorkflowManagerTest, AHostileSpecIsRefusedWholeAndNothingIsMadeOfIt) {
  v1::CreateWorkflowRequest agent = MatrixRequest();
  (*agent.mutable_spec()->mutable_matrix()->mutable_base()->mutable_env())
      ["OMPI_MCA_plm_rsh_agent"] = "/bin/sh -c 'touch /tmp/pwned'";
  v1::CreateWorkflowRequest sweep;
  sweep.mutable_spec()->mutable_sweep()->mutable_base()->set_operation("allreduce");
  sweep.mutable_spec()->mutable_sweep()->mutable_base()->set_ranks(2);
  (*sweep.mutable_spec()->mutable_sweep()->mutable_base()->mutable_env())["LD_PRELOAD"] =
      "/tmp/evil.so";
  for (const v1::CreateWorkflowRequest& request : {agent, sweep}) {
    absl::StatusOr<v1::Workflow> refused = workflows_->Create(request, absl::Now());
    ASSERT_FALSE(refused.ok()) << request.DebugString();
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(refused.status().message(), HasSubstr("names a program"));
  }
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_TRUE(store_->ListWorkflows()->empty());
  EXPECT_TRUE(StoredRuns().empty());
}

// Watchers see the workflow now and every later version, in order, ending
// with the final one.
TEST_F(WorkflowManagerTest, SubscribersSeeEveryVersionToTheEnd) {
  struct Recorder final : WorkflowSink {
    void OnWorkflow(const v1::Workflow& w) override {
      absl::MutexLock lock(&mu);
      versions.push_back(w.version());
      last_state = w.state();
    }
    void OnEnd() override {
      absl::MutexLock lock(&mu);
      ended = true;
    }
    absl::Mutex mu;
    std::vector<int64_t> versions;
    v1::WorkflowState last_state = v1::WORKFLOW_STATE_UNSPECIFIED;
    bool ended = false;
  };
  absl::StatusOr<v1::Workflow> created = workflows_->Create(MatrixRequest(), absl::Now());
  ASSERT_TRUE(created.ok());
  auto recorder = std::make_shared<Recorder>();
  absl::StatusOr<v1::Workflow> now = workflows_->Subscribe(created->name(), recorder);
  ASSERT_TRUE(now.ok());
  WaitFor(created->name(), [](const v1::Workflow& w) { return !w.cells(0).run().empty(); });
  ASSERT_TRUE(workflows_->Cancel(created->name(), absl::Now()).ok());
  WaitFor(created->name(), [](const v1::Workflow& w) { return IsFinalWorkflowState(w.state()); });
  absl::MutexLock lock(&recorder->mu);
  EXPECT_TRUE(recorder->ended);
  EXPECT_EQ(recorder->last_state, v1::WORKFLOW_CANCELLED);
  ASSERT_FALSE(recorder->versions.empty());
  EXPECT_GT(recorder->versions.front(), now->version());
  EXPECT_TRUE(std::is_sorted(recorder->versions.begin(), recorder->versions.end()));
}

}  // namespace
}  // namespace collbench
