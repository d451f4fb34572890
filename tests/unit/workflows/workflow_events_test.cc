// SPDX-License-Identifier: Apache-2.0
// The workflow executor driven by events, with no RunManager and no real
// time: the runs are a fake (the test moves each run's state, which tells
// its subscribers as the watch hub does), the clock a FakeClock, and the
// executor runs what the events hand it only when the test says so. A
// matrix goes through its cells one run at a time, each made when the one
// before ended; cancel, a failed cell, a refused create, a scheduled cell
// waiting for idle workers and a restart that adopts its run; a hunt's
// round is made as one group and the next round follows when its runs end.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "api/convert.h"
#include "common/clock.h"
#include "server/workflows/workflow_manager.h"
#include "tests/unit/fakes/fake_workflow_runs.h"
#include "tests/unit/fakes/manual_executor.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

class WorkflowEventsTest : public ::testing::Test {
 protected:
  void SetUp() override { StartManager(); }
  void TearDown() override { manager_.reset(); }

  // A manager over the same store and runs: a coordinator (re)start.
  void StartManager(WorkflowManagerOptions options = {}) {
    manager_.reset();
    auto executor = std::make_unique<ManualExecutor>();
    executor_ = executor.get();
    manager_ = std::make_unique<WorkflowManager>(store_.get(), &runs_, &clock_, options,
                                                 std::move(executor));
    ASSERT_TRUE(manager_->Start().ok());
  }

  // What the events handed over, done.
  void Settle() { executor_->RunUntilIdle(); }
  void Tick() {
    manager_->Tick(clock_.Now());
    Settle();
  }
  void SetState(const std::string& run, v1::RunState state, const std::string& error = "") {
    runs_.SetState(run, state, error);
    Settle();
  }

  static v1::CreateWorkflowRequest Matrix(std::vector<std::string> operations) {
    v1::CreateWorkflowRequest request;
    v1::MatrixSpec* m = request.mutable_spec()->mutable_matrix();
    m->mutable_base()->set_ranks(2);
    m->mutable_base()->add_sizes_bytes(8);
    for (const std::string& op : operations) m->add_operations(op);
    m->add_placements("pack");
    m->add_transports("tcp");
    return request;
  }

  std::string Create(const v1::CreateWorkflowRequest& request) {
    absl::StatusOr<v1::Workflow> created = manager_->Create(request, clock_.Now());
    EXPECT_TRUE(created.ok()) << created.status();
    Settle();
    return created.ok() ? created->name() : "";
  }

  v1::Workflow Get(const std::string& name) {
    absl::StatusOr<v1::Workflow> workflow = manager_->Get(name);
    EXPECT_TRUE(workflow.ok()) << workflow.status();
    return workflow.ok() ? *workflow : v1::Workflow();
  }

  std::unique_ptr<Store> store_ = NewMemoryStore();
  FakeWorkflowRuns runs_;
  FakeClock clock_;
  ManualExecutor* executor_ = nullptr;  // owned by manager_
  std::unique_ptr<WorkflowManager> manager_;
};

TEST_F(WorkflowEventsTest, EachCellsRunIsMadeWhenTheOneBeforeEnds) {
  const std::string name = Create(Matrix({"allreduce", "bcast"}));
  ASSERT_EQ(runs_.Runs().size(), 1u);
  const v1::Run first = runs_.Runs()[0];
  EXPECT_EQ(first.request_id(), name + "/cell-0");
  EXPECT_EQ(first.spec().operation(), "allreduce");
  EXPECT_EQ(runs_.subscribers(first.name()), 1u);
  EXPECT_EQ(Get(name).state(), v1::WORKFLOW_RUNNING);
  EXPECT_EQ(TimeFromTimestamp(Get(name).start_time()), clock_.Now());

  SetState(first.name(), v1::RUNNING);
  EXPECT_EQ(Get(name).cells(0).state(), v1::RUNNING);
  EXPECT_EQ(runs_.Runs().size(), 1u);  // one run at a time

  clock_.Advance(absl::Seconds(30));
  SetState(first.name(), v1::SUCCEEDED);
  ASSERT_EQ(runs_.Runs().size(), 2u);
  const v1::Run second = runs_.Runs()[1];
  EXPECT_EQ(second.request_id(), name + "/cell-1");
  EXPECT_EQ(runs_.subscribers(first.name()), 0u);
  EXPECT_EQ(Get(name).cells_done(), 1);

  SetState(second.name(), v1::SUCCEEDED);
  const v1::Workflow ended = Get(name);
  EXPECT_EQ(ended.state(), v1::WORKFLOW_SUCCEEDED) << ended.error();
  EXPECT_EQ(ended.cells_done(), 2);
  EXPECT_EQ(TimeFromTimestamp(ended.end_time()), clock_.Now());
  EXPECT_EQ(runs_.subscribers(second.name()), 0u);
  EXPECT_EQ(executor_->queued(), 0u);
}

// Only state changes wake a workflow, and a workflow woken while it is
// being advanced is advanced once more, never twice at once.
TEST_F(WorkflowEventsTest, NothingRunsUntilAnEventOrTheTick) {
  const std::string name = Create(Matrix({"allreduce", "bcast"}));
  const int64_t version = Get(name).version();
  Tick();
  Tick();
  EXPECT_EQ(Get(name).version(), version);
  EXPECT_EQ(runs_.Runs().size(), 1u);
}

TEST_F(WorkflowEventsTest, CancelEndsTheWorkflowAndItsRunInProgress) {
  const std::string name = Create(Matrix({"allreduce", "bcast"}));
  const std::string run = runs_.Runs()[0].name();
  absl::StatusOr<v1::Workflow> cancelled = manager_->Cancel(name, clock_.Now());
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  Settle();
  const v1::Workflow ended = Get(name);
  EXPECT_EQ(ended.state(), v1::WORKFLOW_CANCELLED);
  EXPECT_EQ(ended.error(), "cancelled");
  EXPECT_EQ(runs_.GetRun(run)->state(), v1::CANCELLED);
  EXPECT_EQ(runs_.Runs().size(), 1u);  // the second cell was never made
  EXPECT_EQ(manager_->Cancel(name, clock_.Now()).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(WorkflowEventsTest, AFailedCellFailsTheWorkflowNamingItAndTheNextCellStillRuns) {
  const std::string name = Create(Matrix({"allreduce", "bcast"}));
  SetState(runs_.Runs()[0].name(), v1::FAILED, "rank 1 exited with 137");
  ASSERT_EQ(runs_.Runs().size(), 2u);
  SetState(runs_.Runs()[1].name(), v1::SUCCEEDED);
  const v1::Workflow ended = Get(name);
  EXPECT_EQ(ended.state(), v1::WORKFLOW_FAILED);
  EXPECT_THAT(ended.error(), HasSubstr("1 of 2 runs did not succeed"));
  EXPECT_THAT(ended.error(), HasSubstr("rank 1 exited with 137"));
  EXPECT_EQ(ended.cells(0).error(), "rank 1 exited with 137");
}

TEST_F(WorkflowEventsTest, ARunNotAcceptedFailsItsCellAndTheNextIsMadeAtOnce) {
  runs_.RefuseNext(1, absl::InvalidArgumentError("spec.ranks: more than the workers have"));
  const std::string name = Create(Matrix({"allreduce", "bcast"}));
  ASSERT_EQ(runs_.Runs().size(), 1u);
  EXPECT_EQ(runs_.Runs()[0].request_id(), name + "/cell-1");
  const v1::Workflow going = Get(name);
  EXPECT_EQ(going.cells(0).state(), v1::FAILED);
  EXPECT_THAT(going.cells(0).error(), HasSubstr("not accepted: spec.ranks"));
  EXPECT_EQ(going.cells_done(), 1);
}

// The run queue or the create rate was full: tried again at the first tick
// a second later, not before, and without any thread waiting meanwhile.
TEST_F(WorkflowEventsTest, ARefusedCreateIsTriedAgainAtTheTickASecondLater) {
  runs_.RefuseNext(1, absl::ResourceExhaustedError("run queue full"));
  const std::string name = Create(Matrix({"allreduce"}));
  EXPECT_TRUE(runs_.Runs().empty());
  Tick();
  EXPECT_TRUE(runs_.Runs().empty());
  clock_.Advance(absl::Milliseconds(999));
  Tick();
  EXPECT_TRUE(runs_.Runs().empty());
  clock_.Advance(absl::Milliseconds(1));
  Tick();
  ASSERT_EQ(runs_.Runs().size(), 1u);
  EXPECT_EQ(runs_.Runs()[0].request_id(), name + "/cell-0");
}

// A schedule's firing never goes ahead of a user's run: its cell's run is
// made only at a tick that finds the workers idle.
TEST_F(WorkflowEventsTest, AScheduledCellWaitsForIdleWorkersAtEachTick) {
  runs_.SetIdle(absl::UnavailableError("runs/user-1 is queued"));
  v1::CreateWorkflowRequest request = Matrix({"allreduce"});
  request.mutable_spec()->set_schedule("schedules/nightly");
  const std::string name = Create(request);
  EXPECT_TRUE(runs_.Runs().empty());
  clock_.Advance(absl::Minutes(5));
  Tick();
  EXPECT_TRUE(runs_.Runs().empty());
  runs_.SetIdle(absl::OkStatus());
  Tick();
  ASSERT_EQ(runs_.Runs().size(), 1u);
  EXPECT_EQ(runs_.Runs()[0].spec().labels().at("schedule"), "nightly");
}

// Stopped while its cell's run waits: the next manager adopts that run (its
// request id), follows its events and goes on with the next cell.
TEST_F(WorkflowEventsTest, ARestartAdoptsTheRunOfTheCellItWasAt) {
  const std::string name = Create(Matrix({"allreduce", "bcast"}));
  const std::string run = runs_.Runs()[0].name();
  StartManager();
  EXPECT_EQ(runs_.subscribers(run), 0u);  // the old manager let go
  Settle();
  EXPECT_EQ(runs_.Runs().size(), 1u);
  EXPECT_EQ(runs_.subscribers(run), 1u);
  EXPECT_EQ(Get(name).cells(0).run(), run);
  SetState(run, v1::SUCCEEDED);
  ASSERT_EQ(runs_.Runs().size(), 2u);
  EXPECT_EQ(runs_.Runs()[1].request_id(), name + "/cell-1");
}

// The run ended while the coordinator was down: no event will come, so the
// restarted manager reads it and goes on.
TEST_F(WorkflowEventsTest, ARunThatEndedWhileStoppedIsTakenAtTheRestart) {
  const std::string name = Create(Matrix({"allreduce", "bcast"}));
  const std::string run = runs_.Runs()[0].name();
  manager_.reset();
  runs_.SetState(run, v1::SUCCEEDED);
  StartManager();
  Settle();
  const v1::Workflow going = Get(name);
  EXPECT_EQ(going.cells(0).state(), v1::SUCCEEDED);
  ASSERT_EQ(runs_.Runs().size(), 2u);
  EXPECT_EQ(runs_.subscribers(run), 0u);
}

// max_running workflows hold slots; the next starts when one ends.
TEST_F(WorkflowEventsTest, AQueuedWorkflowStartsWhenASlotFrees) {
  WorkflowManagerOptions options;
  options.max_running = 1;
  StartManager(options);
  const std::string first = Create(Matrix({"allreduce"}));
  const std::string second = Create(Matrix({"bcast"}));
  EXPECT_EQ(Get(second).state(), v1::WORKFLOW_QUEUED);
  ASSERT_EQ(runs_.Runs().size(), 1u);
  SetState(runs_.Runs()[0].name(), v1::SUCCEEDED);
  EXPECT_EQ(Get(first).state(), v1::WORKFLOW_SUCCEEDED);
  EXPECT_EQ(Get(second).state(), v1::WORKFLOW_RUNNING);
  ASSERT_EQ(runs_.Runs().size(), 2u);
  EXPECT_EQ(runs_.Runs()[1].request_id(), second + "/cell-0");
}

class HuntEventsTest : public WorkflowEventsTest {
 protected:
  void SetUp() override {
    for (int i = 0; i < 4; ++i) {
      runs_.AddWorker("workers/w" + std::to_string(i), "host-" + std::to_string(i));
    }
    WorkflowEventsTest::SetUp();
  }

  // Every run not ended measures `busbw_bytes_per_s` and succeeds.
  void EndRound(double busbw_bytes_per_s = 3e9) {
    for (const v1::Run& run : runs_.Runs()) {
      if (IsFinalRunState(run.state())) continue;
      v1::SizeResult result;
      result.set_operation(run.spec().operation());
      result.set_bytes(run.spec().sizes_bytes(0));
      result.set_iters(10);
      result.set_avg_s(static_cast<double>(result.bytes()) / busbw_bytes_per_s);
      result.set_p50_s(result.avg_s());
      result.set_busbw_bytes_per_s(busbw_bytes_per_s);
      runs_.AddResult(run.name(), result);
      runs_.SetState(run.name(), v1::SUCCEEDED);
    }
    Settle();
  }

  std::string CreateHunt() {
    v1::CreateWorkflowRequest request;
    request.mutable_spec()->mutable_hunt()->add_sizes_bytes(1 << 20);
    return Create(request);
  }
};

// Four hosts: three pairwise rounds of two disjoint pairs. A round's runs
// are asked for as one group; the next round is made when both ended.
TEST_F(HuntEventsTest, ARoundIsMadeAsOneGroupAndTheNextFollowsWhenItEnds) {
  const std::string name = CreateHunt();
  ASSERT_EQ(runs_.Runs().size(), 2u);
  EXPECT_EQ(runs_.create_calls(), 1);
  EXPECT_EQ(runs_.Runs()[0].request_id(), name + "/round-1-0");
  EXPECT_EQ(Get(name).cells(0).round(), 1);
  runs_.SetState(runs_.Runs()[0].name(), v1::RUNNING);
  Settle();
  EXPECT_EQ(runs_.Runs().size(), 2u);  // the round is not over
  for (int round = 1; round <= 3; ++round) {
    EXPECT_EQ(static_cast<int>(runs_.Runs().size()), 2 * round);
    EndRound();
  }
  const v1::Workflow ended = Get(name);
  ASSERT_EQ(ended.state(), v1::WORKFLOW_SUCCEEDED) << ended.error();
  EXPECT_EQ(runs_.create_calls(), 3);
  EXPECT_EQ(ended.output().hunt().suspects_size(), 0);
  EXPECT_EQ(ended.output().hunt().pairs_size(), 6);
}

// A run of the round waits for a worker that is lost: no run event will
// say so, the tick looks, and the run is cancelled and measured as failed.
TEST_F(HuntEventsTest, ARoundsRunWaitingForALostWorkerIsCancelledAtTheTick) {
  const std::string name = CreateHunt();
  const v1::Run waiting = runs_.Runs()[0];
  ASSERT_GT(waiting.spec().placement().workers_size(), 0);
  runs_.SetWorkerState(waiting.spec().placement().workers(0), v1::LOST);
  Tick();
  EXPECT_EQ(runs_.GetRun(waiting.name())->state(), v1::CANCELLED);
  const v1::Workflow going = Get(name);
  EXPECT_EQ(going.cells(0).state(), v1::CANCELLED);
  EXPECT_THAT(going.cells(0).error(), HasSubstr("is lost"));
}

TEST_F(HuntEventsTest, CancelStopsTheRoundAndMakesNoOther) {
  const std::string name = CreateHunt();
  ASSERT_TRUE(manager_->Cancel(name, clock_.Now()).ok());
  Settle();
  const v1::Workflow ended = Get(name);
  EXPECT_EQ(ended.state(), v1::WORKFLOW_CANCELLED);
  EXPECT_EQ(runs_.Runs().size(), 2u);
  for (const v1::Run& run : runs_.Runs()) EXPECT_EQ(run.state(), v1::CANCELLED) << run.name();
}

// Stopped in the middle of its second round: the next manager runs the
// rounds again, adopting every run already made (their request ids), and
// makes only what was missing.
TEST_F(HuntEventsTest, ARestartAdoptsTheRoundsRunsAndGoesOn) {
  const std::string name = CreateHunt();
  EndRound();
  ASSERT_EQ(runs_.Runs().size(), 4u);
  StartManager();
  Settle();
  EXPECT_EQ(runs_.Runs().size(), 4u);  // round 1 ended, round 2 adopted
  EndRound();
  EndRound();
  EXPECT_EQ(runs_.Runs().size(), 6u);
  EXPECT_EQ(Get(name).state(), v1::WORKFLOW_SUCCEEDED);
}

}  // namespace
}  // namespace collbench
