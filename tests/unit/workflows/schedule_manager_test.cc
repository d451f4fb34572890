// SPDX-License-Identifier: Apache-2.0
// Baselines, checks and schedules over a real RunManager and WorkflowManager
// (in-memory store, no workers): a baseline made of stored runs, a check
// workflow naming the slowed configuration, a schedule's first firing at
// once, a firing skipped while the workers stay busy, and a firing missed
// while the coordinator was down made once when it is back.
#include "server/workflows/schedule_manager.h"

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "api/convert.h"
#include "common/histogram.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/core.h"
#include "server/metrics/schedule_metrics.h"
#include "server/workflows/run_manager_runs.h"
#include "tests/unit/fakes/accepting_link.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

class VerdictsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    core_ = std::make_unique<Core>(store_.get(), &hub_, &link_, CoreOptions());
    runs_ = &core_->runs();
    ASSERT_TRUE(core_->Recover(absl::Now()).ok());
    adapter_ = std::make_unique<RunManagerRuns>(runs_, &core_->fleet(), &hub_);
    workflows_ = std::make_unique<WorkflowManager>(store_.get(), adapter_.get(), RealClock(),
                                                   WorkflowManagerOptions());
    ASSERT_TRUE(workflows_->Start().ok());
    StartSchedules();
  }
  void TearDown() override {
    schedules_.reset();
    workflows_.reset();
  }

  // A new schedule manager over the same store (a coordinator restart, as
  // far as schedules go). Nothing ticks it but the test, with its own time.
  void StartSchedules() {
    schedules_.reset();
    ScheduleManagerOptions options;
    options.min_period = absl::Seconds(1);
    schedules_ = std::make_unique<ScheduleManager>(store_.get(), adapter_.get(), workflows_.get(),
                                                   options);
    ASSERT_TRUE(schedules_->Start().ok());
  }

  // A finished run stored as a coordinator stores one: allreduce at 1 KiB
  // whose latencies centre on `median_ns`.
  std::string StoredRun(const std::string& id, double median_ns, uint64_t seed) {
    v1::Run run;
    run.set_name("runs/" + id);
    run.set_state(v1::SUCCEEDED);
    run.mutable_spec()->set_operation("allreduce");
    run.mutable_spec()->set_ranks(2);
    run.mutable_spec()->add_sizes_bytes(1024);
    run.set_effective_transport(v1::TCP);
    *run.mutable_create_time() = TimestampFromTime(absl::Now());
    EXPECT_TRUE(store_->CreateRun(run).ok());
    std::mt19937_64 random(seed);
    std::lognormal_distribution<double> spread(std::log(median_ns), 0.03);
    Histogram h;
    for (int i = 0; i < 3000; ++i) h.Record(static_cast<uint64_t>(spread(random)));
    v1::SizeResult result;
    result.set_operation("allreduce");
    result.set_bytes(1024);
    result.set_dtype("float32");
    result.set_redop("sum");
    *result.mutable_histogram() = HistogramToProto(h);
    EXPECT_TRUE(store_->AddResult(run.name(), result).ok());
    return run.name();
  }

  v1::Workflow WaitEnded(const std::string& name) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    absl::StatusOr<v1::Workflow> w = workflows_->Get(name);
    while (w.ok() && !IsFinalWorkflowState(w->state()) && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
      w = workflows_->Get(name);
    }
    EXPECT_TRUE(w.ok()) << w.status();
    return w.ok() ? *w : v1::Workflow();
  }

  absl::StatusOr<v1::Baseline> SaveBaseline(const std::string& id,
                                            const std::vector<std::string>& runs) {
    v1::CreateBaselineRequest request;
    request.set_baseline_id(id);
    for (const std::string& run : runs) request.add_runs(run);
    return workflows_->baselines()->Create(request, absl::Now(), "test");
  }

  v1::CreateScheduleRequest RunSchedule(const std::string& id, int64_t every_s) {
    v1::CreateScheduleRequest request;
    request.set_schedule_id(id);
    request.mutable_spec()->set_every_seconds(every_s);
    v1::RunSpec* run = request.mutable_spec()->mutable_run();
    run->set_operation("allreduce");
    run->set_ranks(2);
    run->add_sizes_bytes(1024);
    return request;
  }

  std::unique_ptr<Store> store_ = NewMemoryStore();
  WatchHub hub_;
  AcceptingLink link_;
  std::unique_ptr<Core> core_;
  RunManager* runs_ = nullptr;
  std::unique_ptr<RunManagerRuns> adapter_;
  std::unique_ptr<WorkflowManager> workflows_;
  std::unique_ptr<ScheduleManager> schedules_;
};

TEST_F(VerdictsTest, ACheckNamesTheSlowedConfigurationAndAnEqualOneIsOk) {
  const std::string then = StoredRun("then", 10'000, 1);
  ASSERT_TRUE(SaveBaseline("base", {then}).ok());
  absl::StatusOr<v1::Baseline> again = SaveBaseline("base", {then});
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);

  auto check = [&](const std::string& run) {
    v1::CreateWorkflowRequest request;
    request.mutable_spec()->mutable_check()->set_baseline("base");
    request.mutable_spec()->mutable_check()->mutable_runs()->add_runs(run);
    absl::StatusOr<v1::Workflow> created = workflows_->Create(request, absl::Now());
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? WaitEnded(created->name()) : v1::Workflow();
  };
  const v1::Workflow slowed = check(StoredRun("slow", 11'000, 2));
  ASSERT_EQ(slowed.state(), v1::WORKFLOW_SUCCEEDED) << slowed.error();
  ASSERT_EQ(slowed.output().check().rows_size(), 1);
  EXPECT_TRUE(slowed.output().check().regressed());
  EXPECT_EQ(slowed.output().check().rows(0).verdict(), "regression");
  EXPECT_THAT(slowed.output().check().rows(0).key_text(), HasSubstr("allreduce"));
  EXPECT_NEAR(slowed.output().check().rows(0).ratio(), 1.1, 0.02);

  const v1::Workflow same = check(StoredRun("same", 10'000, 3));
  ASSERT_EQ(same.state(), v1::WORKFLOW_SUCCEEDED);
  EXPECT_FALSE(same.output().check().regressed());
  EXPECT_EQ(same.output().check().rows(0).verdict(), "ok");
}

TEST_F(VerdictsTest, BadBaselinesAndChecksAreRefusedNamingTheField) {
  EXPECT_EQ(SaveBaseline("Bad Name", {StoredRun("r", 1000, 1)}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<v1::Baseline> unknown = SaveBaseline("b", {"runs/nope"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("runs[0]"));
  v1::CreateWorkflowRequest request;
  request.mutable_spec()->mutable_check()->set_baseline("missing");
  request.mutable_spec()->mutable_check()->mutable_runs()->add_runs("runs/r");
  absl::StatusOr<v1::Workflow> refused = workflows_->Create(request, absl::Now());
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("spec.check.baseline"));
  absl::StatusOr<std::vector<v1::Workflow>> stored = store_->ListWorkflows();
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(stored->empty());
}

TEST_F(VerdictsTest, ScheduleIsValidatedAsItsFiringWouldBe) {
  v1::CreateScheduleRequest short_period = RunSchedule("s", 0);
  EXPECT_THAT(schedules_->Create(short_period, absl::Now()).status().message(),
              HasSubstr("spec.every_seconds"));
  v1::CreateScheduleRequest bad_baseline = RunSchedule("s", 60);
  bad_baseline.mutable_spec()->set_baseline("nope");
  EXPECT_THAT(schedules_->Create(bad_baseline, absl::Now()).status().message(),
              HasSubstr("spec.baseline"));
  v1::CreateScheduleRequest bad_suite = RunSchedule("s", 60);
  bad_suite.mutable_spec()->mutable_suite()->set_suite("no-such-suite");
  EXPECT_FALSE(schedules_->Create(bad_suite, absl::Now()).ok());
  v1::CreateScheduleRequest bad_workers = RunSchedule("s", 60);
  bad_workers.mutable_spec()->set_workers("what is this");
  EXPECT_THAT(schedules_->Create(bad_workers, absl::Now()).status().message(),
              HasSubstr("spec.workers"));
  v1::CreateScheduleRequest only = RunSchedule("s", 60);
  only.set_validate_only(true);
  ASSERT_TRUE(schedules_->Create(only, absl::Now()).ok());
  EXPECT_TRUE(schedules_->List().empty());
  absl::StatusOr<std::vector<v1::Schedule>> stored = store_->ListSchedules();
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(stored->empty());
}

// The first firing is due at once; its workflow's runs carry the schedule
// label (so they queue behind user runs) and its request id is the
// schedule's and the firing's, so one firing is one workflow.
TEST_F(VerdictsTest, TheFirstFiringIsAtOnceAndIsAnOrdinaryWorkflow) {
  const absl::Time t0 = absl::Now();
  ASSERT_TRUE(schedules_->Create(RunSchedule("nightly", 60), t0).ok());
  schedules_->Tick(t0);
  absl::StatusOr<v1::Schedule> s = schedules_->Get("nightly");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->history_size(), 1);
  EXPECT_EQ(s->history(0).outcome(), "running");
  EXPECT_EQ(s->firings(), 1);
  EXPECT_EQ(TimeFromTimestamp(s->next_fire_time()), t0 + absl::Seconds(60));
  absl::StatusOr<v1::Workflow> workflow = workflows_->Get(s->history(0).workflow());
  ASSERT_TRUE(workflow.ok());
  EXPECT_EQ(workflow->spec().schedule(), "schedules/nightly");
  ASSERT_EQ(workflow->cells_size(), 1);
  EXPECT_EQ(workflow->cells(0).spec().labels().at("schedule"), "nightly");
  schedules_->Tick(t0 + absl::Seconds(1));  // still running: no second firing
  EXPECT_EQ(schedules_->Get("nightly")->firings(), 1);
  EXPECT_THAT(schedules_->MetricsText(),
              HasSubstr("collbench_schedule_period_seconds{schedule=\"nightly\"} 60"));
}

// A user's run is queued: the firing waits for the window, then is
// recorded as skipped, naming the run in the way, and makes nothing.
TEST_F(VerdictsTest, AFiringWhoseWorkersStayBusyIsSkippedWithTheReason) {
  v1::RunSpec user;
  user.set_operation("allreduce");
  user.set_ranks(2);
  user.add_sizes_bytes(8);
  absl::StatusOr<v1::Run> queued = runs_->CreateRun(user, "", absl::Now());
  ASSERT_TRUE(queued.ok()) << queued.status();
  const absl::Time t0 = absl::Now();
  v1::CreateScheduleRequest request = RunSchedule("busy", 60);
  request.mutable_spec()->set_window_seconds(10);
  ASSERT_TRUE(schedules_->Create(request, t0).ok());
  schedules_->Tick(t0);
  EXPECT_EQ(schedules_->Get("busy")->history(0).outcome(), "waiting");
  schedules_->Tick(t0 + absl::Seconds(11));
  const v1::Schedule s = *schedules_->Get("busy");
  EXPECT_EQ(s.history(0).outcome(), "skipped");
  EXPECT_THAT(s.history(0).reason(), HasSubstr(queued->name()));
  EXPECT_TRUE(s.history(0).workflow().empty());
  absl::StatusOr<std::vector<v1::Workflow>> made = store_->ListWorkflows();
  ASSERT_TRUE(made.ok());
  EXPECT_TRUE(made->empty());
}

// Down for ten periods: one firing when it is back, the next a period on;
// the schedule survives the restart with its history.
TEST_F(VerdictsTest, MissedFiringsAreMadeOnceAfterARestart) {
  const absl::Time t0 = absl::Now();
  ASSERT_TRUE(schedules_->Create(RunSchedule("hourly", 60), t0).ok());
  schedules_->Tick(t0);
  const std::string first = schedules_->Get("hourly")->history(0).workflow();
  ASSERT_TRUE(workflows_->Cancel(first, absl::Now()).ok());
  WaitEnded(first);
  schedules_->Tick(t0 + absl::Seconds(1));
  EXPECT_EQ(schedules_->Get("hourly")->history(0).outcome(), "cancelled");

  StartSchedules();  // the coordinator comes back ten and a half periods later
  const absl::Time back = t0 + absl::Seconds(630);
  schedules_->Tick(back);
  schedules_->Tick(back + absl::Seconds(1));
  const v1::Schedule s = *schedules_->Get("hourly");
  EXPECT_EQ(s.firings(), 2);
  ASSERT_EQ(s.history_size(), 2);
  EXPECT_EQ(s.history(0).outcome(), "running");
  EXPECT_NE(s.history(0).workflow(), first);
  const absl::Time next = TimeFromTimestamp(s.next_fire_time());
  EXPECT_GT(next, back);
  EXPECT_LE(next, back + absl::Seconds(60));
}

// The check's threshold travels in the firing's spec: the workflow needs
// nothing of its schedule when it ends. A threshold without a baseline, or
// outside [0, 10), is refused naming the field.
TEST_F(VerdictsTest, AFiringCarriesItsSchedulesThresholdInItsSpec) {
  ASSERT_TRUE(SaveBaseline("base", {StoredRun("then", 10'000, 1)}).ok());
  const absl::Time t0 = absl::Now();
  v1::CreateScheduleRequest request = RunSchedule("strict", 60);
  request.mutable_spec()->set_baseline("base");
  request.mutable_spec()->set_threshold(0.2);
  ASSERT_TRUE(schedules_->Create(request, t0).ok());
  schedules_->Tick(t0);
  absl::StatusOr<v1::Workflow> firing =
      workflows_->Get(schedules_->Get("strict")->history(0).workflow());
  ASSERT_TRUE(firing.ok()) << firing.status();
  EXPECT_EQ(firing->spec().baseline(), "base");
  EXPECT_DOUBLE_EQ(firing->spec().baseline_threshold(), 0.2);

  v1::CreateWorkflowRequest alone;
  *alone.mutable_spec() = firing->spec();
  alone.mutable_spec()->clear_baseline();
  alone.mutable_spec()->clear_schedule();
  EXPECT_THAT(workflows_->Create(alone, t0).status().message(),
              HasSubstr("spec.baseline_threshold: only with spec.baseline"));
  v1::CreateWorkflowRequest wide = alone;
  wide.mutable_spec()->set_baseline("base");
  wide.mutable_spec()->set_baseline_threshold(12);
  EXPECT_THAT(workflows_->Create(wide, t0).status().message(),
              HasSubstr("spec.baseline_threshold: 12 is not a fraction"));
}

TEST_F(VerdictsTest, PausedSchedulesDoNotFire) {
  const absl::Time t0 = absl::Now();
  ASSERT_TRUE(schedules_->Create(RunSchedule("p", 60), t0).ok());
  ASSERT_TRUE(schedules_->Pause("p", t0).ok());
  schedules_->Tick(t0 + absl::Seconds(600));
  EXPECT_EQ(schedules_->Get("p")->firings(), 0);
  ASSERT_TRUE(schedules_->Resume("schedules/p", t0 + absl::Seconds(600)).ok());
  EXPECT_EQ(TimeFromTimestamp(schedules_->Get("p")->next_fire_time()), t0 + absl::Seconds(660));
  EXPECT_THAT(schedules_->MetricsText(), HasSubstr("collbench_schedule_paused{schedule=\"p\"} 0"));
  ASSERT_TRUE(schedules_->Delete("p", t0).ok());
  EXPECT_EQ(schedules_->Get("p").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace collbench
