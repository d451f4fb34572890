// SPDX-License-Identifier: Apache-2.0
// The bounds on what one request may ask of the workflows
// (docs/operations/limits.md#workflows-and-run-lists), each as the attack
// it stops: a matrix of 65,536 cells is refused before any cell is planned
// and nothing is stored; repeats in a matrix's lists and in the runs a
// report, advice or check names count once; more distinct runs than a
// request may name are refused before any is looked up; a report's page
// over its limit fails the workflow and stores no page. Over fake runs, a
// fake clock and an executor the test drives: no thread, no sleep.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/suite.h"
#include "api/convert.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/request_bounds.h"
#include "server/store/forwarding_store.h"
#include "server/workflows/workflow_manager.h"
#include "server/workflows/workflow_plan.h"
#include "tests/unit/fakes/fake_workflow_runs.h"
#include "tests/unit/fakes/manual_executor.h"

namespace collbench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

class WorkflowBoundsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Every cell the planner checks is counted: the planner's work.
    runs_.SetCheck([this](const v1::RunSpec&) {
      ++cells_checked_;
      return absl::OkStatus();
    });
    StartBoundedManager({});
  }
  void TearDown() override { manager_.reset(); }

  void StartBoundedManager(RequestBoundOptions options, WorkflowManagerOptions manager = {}) {
    manager_.reset();
    bounds_ = std::make_unique<RequestBounds>(options);
    auto executor = std::make_unique<ManualExecutor>();
    executor_ = executor.get();
    manager_ = std::make_unique<WorkflowManager>(store_.get(), &runs_, &clock_, manager,
                                                 std::move(executor), bounds_.get());
    ASSERT_TRUE(manager_->Start().ok());
  }

  // A matrix whose four lists hold `per_list` distinct values each.
  static v1::CreateWorkflowRequest WideMatrix(int per_list) {
    v1::CreateWorkflowRequest request;
    v1::MatrixSpec* m = request.mutable_spec()->mutable_matrix();
    m->mutable_base()->set_ranks(2);
    for (int i = 0; i < per_list; ++i) {
      m->add_operations(absl::StrCat("op", i));
      m->add_placements(absl::StrCat("place", i));
      m->add_transports(absl::StrCat("wire", i));
      m->add_mpis(absl::StrCat("mpi", i));
    }
    return request;
  }

  // A finished run with one result, as a report reads it.
  std::string FinishedRun() {
    v1::RunSpec spec;
    spec.set_operation("allreduce");
    spec.set_ranks(2);
    spec.add_sizes_bytes(8);
    absl::StatusOr<v1::Run> run = runs_.CreateRun(spec, "", clock_.Now(), "");
    EXPECT_TRUE(run.ok()) << run.status();
    v1::SizeResult result;
    result.set_operation("allreduce");
    result.set_bytes(8);
    result.set_iters(10);
    result.set_avg_s(1e-6);
    result.set_p50_s(1e-6);
    runs_.AddResult(run->name(), result);
    runs_.SetState(run->name(), v1::SUCCEEDED);
    return run->name();
  }

  static v1::CreateWorkflowRequest ReportOf(const std::vector<std::string>& runs) {
    v1::CreateWorkflowRequest request;
    for (const std::string& run : runs) request.mutable_spec()->mutable_report()->add_runs(run);
    return request;
  }

  // The workflow created, run as far as it goes.
  v1::Workflow CreateAndSettle(const v1::CreateWorkflowRequest& request) {
    absl::StatusOr<v1::Workflow> created = manager_->Create(request, clock_.Now());
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) return v1::Workflow();
    executor_->RunUntilIdle();
    return *manager_->Get(created->name());
  }

  size_t StoredWorkflows() { return store_->ListWorkflows()->size(); }

  std::unique_ptr<Store> store_ = NewMemoryStore();
  FakeWorkflowRuns runs_;
  FakeClock clock_;
  int cells_checked_ = 0;
  std::unique_ptr<RequestBounds> bounds_;
  ManualExecutor* executor_ = nullptr;  // owned by manager_
  std::unique_ptr<WorkflowManager> manager_;
};

TEST_F(WorkflowBoundsTest, A65536CellMatrixIsRefusedBeforeAnyCellIsPlanned) {
  const v1::CreateWorkflowRequest request = WideMatrix(16);  // 16^4 = 65,536 cells
  EXPECT_EQ(workflows::CountCells(request.spec()), 65536u);
  absl::StatusOr<v1::Workflow> created = manager_->Create(request, clock_.Now());
  ASSERT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(created.status().message(), HasSubstr("65536 cells"));
  EXPECT_THAT(created.status().message(), HasSubstr("1024"));
  EXPECT_THAT(created.status().message(), HasSubstr("--max-workflow-cells"));
  // No cell was planned (the planner checks each), nothing stored or run.
  EXPECT_EQ(cells_checked_, 0);
  EXPECT_EQ(StoredWorkflows(), 0u);
  EXPECT_TRUE(manager_->List(0, "", "")->workflows.empty());
  EXPECT_TRUE(runs_.Runs().empty());
  EXPECT_EQ(bounds_->rejections().workflow_cells, 1);

  // validate_only is bound the same way.
  v1::CreateWorkflowRequest validate = request;
  validate.set_validate_only(true);
  EXPECT_EQ(manager_->Create(validate, clock_.Now()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cells_checked_, 0);
  EXPECT_EQ(bounds_->rejections().workflow_cells, 2);
}

TEST_F(WorkflowBoundsTest, RepeatsInAMatrixsListsCountOnce) {
  v1::CreateWorkflowRequest request;
  v1::MatrixSpec* m = request.mutable_spec()->mutable_matrix();
  m->mutable_base()->set_ranks(2);
  for (int i = 0; i < 5000; ++i) m->add_operations("allreduce");
  m->add_operations("bcast,allreduce,bcast");
  m->add_placements("pack");
  m->add_placements("pack,pack");
  m->add_transports("tcp");
  request.set_validate_only(true);
  absl::StatusOr<v1::Workflow> planned = manager_->Create(request, clock_.Now());
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_EQ(planned->cells_size(), 2);
  EXPECT_EQ(planned->cells(0).spec().operation(), "allreduce");
  EXPECT_EQ(planned->cells(1).spec().operation(), "bcast");
  EXPECT_EQ(cells_checked_, 2);
}

TEST_F(WorkflowBoundsTest, AMatrixAtTheLimitIsPlannedAndOneCellMoreIsNot) {
  StartBoundedManager({.max_workflow_cells = 4});
  v1::CreateWorkflowRequest four;
  v1::MatrixSpec* m = four.mutable_spec()->mutable_matrix();
  m->mutable_base()->set_ranks(2);
  m->add_operations("allreduce,bcast");
  m->add_placements("pack,spread");
  m->add_transports("tcp");
  four.set_validate_only(true);
  EXPECT_TRUE(manager_->Create(four, clock_.Now()).ok());
  v1::CreateWorkflowRequest five = four;
  five.mutable_spec()->mutable_matrix()->add_operations("gather");
  absl::StatusOr<v1::Workflow> refused = manager_->Create(five, clock_.Now());
  EXPECT_THAT(refused.status().message(), HasSubstr("6 cells"));
  EXPECT_THAT(refused.status().message(), HasSubstr("more than the 4"));
}

// The default bound admits what the coordinator itself offers: every
// built-in suite at every profile, counted as it would be planned.
TEST_F(WorkflowBoundsTest, TheDefaultAdmitsEveryBuiltinSuiteAndTheDefaultMatrix) {
  uint64_t largest = 0;
  for (const Suite& suite : BuiltinSuites()) {
    for (const auto& [profile, values] : suite.profiles) {
      v1::WorkflowSpec spec;
      spec.mutable_suite()->set_suite(suite.name);
      spec.mutable_suite()->set_profile(profile);
      const uint64_t cells = workflows::CountCells(spec);
      EXPECT_EQ(cells, ExpandSuite(suite, profile)->size()) << suite.name << " " << profile;
      largest = std::max(largest, cells);
    }
  }
  EXPECT_EQ(largest, 144u);  // what the default is argued from (request_bounds.h)
  EXPECT_LE(largest * 4, uint64_t{RequestBoundOptions().max_workflow_cells});
  v1::WorkflowSpec matrix;
  matrix.mutable_matrix();
  EXPECT_EQ(workflows::CountCells(matrix), 12u);  // 3 operations, 2 placements, 2 transports
}

TEST_F(WorkflowBoundsTest, CountsOfListsTooLongToMultiplySaturate) {
  const uint64_t big = uint64_t{1} << 40;
  EXPECT_EQ(SaturatingProduct({big, big, 2}), UINT64_MAX);
  EXPECT_EQ(SaturatingProduct({big, big, 0}), 0u);
  EXPECT_EQ(SaturatingProduct({3, 4}), 12u);
  EXPECT_THAT(bounds_->CheckWorkflowCells(UINT64_MAX).message(), HasSubstr("more than 2^64"));
}

TEST_F(WorkflowBoundsTest, AReportOver5000CopiesOfARunIsTheReportOfThatRun) {
  const std::string run = FinishedRun();
  const v1::Workflow once = CreateAndSettle(ReportOf({run}));
  const v1::Workflow copies = CreateAndSettle(ReportOf(std::vector<std::string>(5000, run)));
  ASSERT_EQ(copies.state(), v1::WORKFLOW_SUCCEEDED) << copies.error();
  absl::StatusOr<std::string> page = store_->GetWorkflowReport(copies.name());
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(*page, *store_->GetWorkflowReport(once.name()));
  // "ID" and "runs/ID" name one run.
  const std::string id = run.substr(std::string("runs/").size());
  const v1::Workflow mixed = CreateAndSettle(ReportOf({run, id, run}));
  EXPECT_EQ(*store_->GetWorkflowReport(mixed.name()), *page);
}

TEST_F(WorkflowBoundsTest, MoreDistinctRunsThanTheLimitAreRefusedBeforeAnyIsRead) {
  std::vector<std::string> names;
  for (int i = 0; i <= 256; ++i) names.push_back(absl::StrCat("runs/missing-", i));
  using Selection = v1::RunSelection* (v1::WorkflowSpec::*)();
  for (Selection selection :
       {&v1::WorkflowSpec::mutable_report, &v1::WorkflowSpec::mutable_advice}) {
    v1::CreateWorkflowRequest request;
    for (const std::string& name : names) (request.mutable_spec()->*selection)()->add_runs(name);
    absl::StatusOr<v1::Workflow> created = manager_->Create(request, clock_.Now());
    ASSERT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument);
    // Refused for the count, not for the first missing run: none was read.
    EXPECT_THAT(created.status().message(), HasSubstr("more than 256 distinct runs"));
    EXPECT_THAT(created.status().message(), HasSubstr("--max-runs-per-request"));
  }
  EXPECT_EQ(StoredWorkflows(), 0u);
  EXPECT_EQ(bounds_->rejections().runs_per_request, 2);
  // Repeats of the first 256 do not count: refused for the first missing run.
  names.pop_back();
  for (int i = 0; i < 1000; ++i) names.push_back(names[i % names.size()]);
  v1::CreateWorkflowRequest request = ReportOf(names);
  EXPECT_THAT(manager_->Create(request, clock_.Now()).status().message(),
              HasSubstr("spec.report.runs[0]: run runs/missing-0 not found"));
}

TEST_F(WorkflowBoundsTest, ABaselineOfMoreDistinctRunsThanTheLimitIsRefused) {
  v1::CreateBaselineRequest request;
  request.set_baseline_id("too-many");
  for (int i = 0; i <= 256; ++i) request.add_runs(absl::StrCat("r", i));
  absl::StatusOr<v1::Baseline> made = manager_->baselines()->Create(request, clock_.Now(), "");
  ASSERT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(made.status().message(), HasSubstr("runs: more than 256 distinct runs"));
  EXPECT_TRUE(store_->ListBaselines()->empty());
}

TEST_F(WorkflowBoundsTest, AReportOverItsSizeFailsAndStoresNoPage) {
  StartBoundedManager({.max_report_bytes = 100});
  const v1::Workflow report = CreateAndSettle(ReportOf({FinishedRun()}));
  EXPECT_EQ(report.state(), v1::WORKFLOW_FAILED);
  EXPECT_THAT(report.error(), HasSubstr("more than the 100"));
  EXPECT_THAT(report.error(), HasSubstr("--max-report-bytes"));
  EXPECT_TRUE(absl::IsNotFound(store_->GetWorkflowReport(report.name()).status()));
  EXPECT_EQ(bounds_->rejections().report_size, 1);
}

// Ended workflows beyond --retain-workflows go with their pages, oldest
// first; a running one stays, and so does one that has just ended (its
// schedule reads its outcome first).
TEST_F(WorkflowBoundsTest, EndedWorkflowsBeyondTheRetainedOnesAreDeleted) {
  WorkflowManagerOptions options;
  options.retention.keep_runs = 1;
  StartBoundedManager({}, options);
  const std::string run = FinishedRun();
  std::vector<std::string> reports;
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(absl::Seconds(1));
    reports.push_back(CreateAndSettle(ReportOf({run})).name());
  }
  v1::CreateWorkflowRequest matrix;
  matrix.mutable_spec()->mutable_matrix()->mutable_base()->set_ranks(2);
  matrix.mutable_spec()->mutable_matrix()->add_operations("allreduce");
  const std::string running = CreateAndSettle(matrix).name();
  EXPECT_TRUE(manager_->SweepRetention(clock_.Now()).empty());  // all just ended
  clock_.Advance(absl::Hours(1));
  EXPECT_THAT(manager_->SweepRetention(clock_.Now()), ElementsAre(reports[1], reports[0]));
  std::vector<std::string> stored;
  const std::vector<v1::Workflow> listed = *store_->ListWorkflows();
  for (const v1::Workflow& w : listed) stored.push_back(w.name());
  EXPECT_THAT(stored, UnorderedElementsAre(running, reports[2]));
  EXPECT_TRUE(absl::IsNotFound(store_->GetWorkflowReport(reports[0]).status()));
  EXPECT_TRUE(store_->GetWorkflowReport(reports[2]).ok());
  EXPECT_TRUE(manager_->SweepRetention(clock_.Now()).empty());
}

// What the workflow manager writes: whole workflows, and cells alone.
class WorkflowWritesCountingStore final : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  absl::Status PutWorkflow(const v1::Workflow& workflow) override {
    ++whole_writes;
    return ForwardingStore::PutWorkflow(workflow);
  }
  absl::Status PutWorkflowCell(const v1::Workflow& head, int index,
                               const v1::WorkflowCell& cell) override {
    ++cell_writes;
    cells_in_heads += head.cells_size();
    return ForwardingStore::PutWorkflowCell(head, index, cell);
  }
  int whole_writes = 0;
  int cell_writes = 0;
  int cells_in_heads = 0;
};

// Running a workflow writes each cell's changes alone: the whole workflow is
// written when it is made, started and ended, however many cells it has,
// and what is stored is the workflow as it ran (a restart reads it).
TEST(WorkflowCellWrites, ACellsChangeWritesThatCellNotTheWorkflow) {
  std::unique_ptr<Store> memory = NewMemoryStore();
  WorkflowWritesCountingStore store(memory.get());
  FakeWorkflowRuns runs;
  FakeClock clock;
  auto executor = std::make_unique<ManualExecutor>();
  ManualExecutor* steps = executor.get();
  WorkflowManager manager(&store, &runs, &clock, {}, std::move(executor));
  ASSERT_TRUE(manager.Start().ok());
  v1::CreateWorkflowRequest request;
  v1::MatrixSpec* m = request.mutable_spec()->mutable_matrix();
  m->mutable_base()->set_ranks(2);
  for (int i = 0; i < 16; ++i) m->add_operations(absl::StrCat("op", i));
  m->add_placements("pack");
  m->add_transports("tcp");
  absl::StatusOr<v1::Workflow> created = manager.Create(request, clock.Now());
  ASSERT_TRUE(created.ok()) << created.status();
  steps->RunUntilIdle();
  for (int i = 0; i < 16; ++i) {
    const std::string run = runs.Runs().back().name();
    runs.SetState(run, v1::RUNNING);
    steps->RunUntilIdle();
    runs.SetState(run, v1::SUCCEEDED);
    steps->RunUntilIdle();
  }
  const v1::Workflow ended = *manager.Get(created->name());
  ASSERT_EQ(ended.state(), v1::WORKFLOW_SUCCEEDED) << ended.error();
  EXPECT_EQ(store.whole_writes, 3);      // created, started, ended
  EXPECT_EQ(store.cell_writes, 16 * 3);  // made, running, succeeded
  EXPECT_EQ(store.cells_in_heads, 0);
  EXPECT_EQ(memory->ListWorkflows()->at(0).DebugString(), ended.DebugString());
}

}  // namespace
}  // namespace collbench
