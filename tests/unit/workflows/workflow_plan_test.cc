// SPDX-License-Identifier: Apache-2.0
// A workflow's plan: every cell checked before anything runs, so a typo
// refuses the workflow whole (naming the field) and a cell that cannot be
// is planned as skipped with its reason.
#include "server/workflows/workflow_plan.h"

#include "api/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench::workflows {
namespace {

using ::testing::HasSubstr;

// What CreateRun checks with no worker registered: the spec alone.
absl::Status CheckSpec(const v1::RunSpec& spec) {
  return ValidateRunSpec(spec, ValidationLimits());
}

v1::WorkflowSpec Matrix(std::vector<std::string> operations, std::vector<std::string> placements,
                        std::vector<std::string> transports, std::vector<std::string> mpis) {
  v1::WorkflowSpec spec;
  v1::MatrixSpec* m = spec.mutable_matrix();
  m->mutable_base()->set_ranks(2);
  m->mutable_base()->add_sizes_bytes(8);
  for (auto& o : operations) m->add_operations(o);
  for (auto& p : placements) m->add_placements(p);
  for (auto& t : transports) m->add_transports(t);
  for (auto& x : mpis) m->add_mpis(x);
  return spec;
}

absl::StatusOr<Plan> PlanIt(const v1::WorkflowSpec& spec) {
  return PlanWorkflow(spec, "w-1", {}, CheckSpec);
}

TEST(MatrixPlanTest, AMisspelledOperationRefusesTheWholeMatrix) {
  absl::StatusOr<Plan> plan = PlanIt(Matrix({"allreduce", "allredcue"}, {}, {}, {}));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(),
              HasSubstr("spec.matrix.operations: 'allredcue' fits no combination"));
}

TEST(MatrixPlanTest, MisspelledPlacementTransportAndMpiAreRefusedNamingTheirList) {
  struct Case {
    v1::WorkflowSpec spec;
    const char* field;
  };
  for (const Case& c : {Case{Matrix({}, {"pack", "sprad"}, {}, {}), "spec.matrix.placements"},
                        Case{Matrix({}, {}, {"shm", "tpc"}, {}), "spec.matrix.transports"},
                        Case{Matrix({}, {}, {}, {"openmpi", "mpcih"}), "spec.matrix.mpis"}}) {
    absl::StatusOr<Plan> plan = PlanIt(c.spec);
    ASSERT_FALSE(plan.ok()) << c.field;
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(plan.status().message(), HasSubstr(c.field));
  }
}

TEST(MatrixPlanTest, AnOptionNoCellCanTakeIsRefusedUpFront) {
  // A 16-bit float is an element width only NCCL takes (engine_spec's rules).
  v1::WorkflowSpec spec = Matrix({"allreduce"}, {}, {}, {});
  spec.mutable_matrix()->mutable_base()->set_dtype("float16");
  absl::StatusOr<Plan> plan = PlanIt(spec);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("dtype"));
}

TEST(MatrixPlanTest, ACombinationThatCannotBeIsPlannedAsSkippedWithItsReason) {
  // Open MPI cannot use SHM across workers (SPREAD), but shm fits PACK.
  absl::StatusOr<Plan> plan = PlanIt(Matrix({}, {}, {}, {}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->cells.size(), 12u);  // 3 operations x 2 placements x 2 transports
  int skipped = 0;
  for (const v1::WorkflowCell& cell : plan->cells) {
    if (cell.skipped().empty()) continue;
    ++skipped;
    EXPECT_THAT(cell.label(), HasSubstr("spread/shm"));
    EXPECT_THAT(cell.skipped(), HasSubstr("SHM"));
  }
  EXPECT_EQ(skipped, 3);
}

TEST(MatrixPlanTest, EveryCellCarriesItsSpecAndTheWorkflowLabel) {
  absl::StatusOr<Plan> plan = PlanIt(Matrix({"allreduce", "bcast"}, {"pack"}, {"shm", "tcp"}, {}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->cells.size(), 4u);
  EXPECT_EQ(plan->cells[0].label(), "allreduce openmpi/pack/shm");
  EXPECT_EQ(plan->cells[3].spec().operation(), "bcast");
  EXPECT_EQ(plan->cells[3].spec().transport(), v1::TCP);
  EXPECT_EQ(plan->cells[3].spec().ranks(), 2);
  EXPECT_EQ(plan->cells[3].spec().labels().at("workflow"), "w-1");
}

TEST(SweepPlanTest, AnUnknownAlgorithmIsRefusedNamingTheOffered) {
  v1::WorkflowSpec spec;
  spec.mutable_sweep()->mutable_base()->set_operation("allreduce");
  spec.mutable_sweep()->mutable_base()->set_ranks(2);
  spec.mutable_sweep()->add_algorithms("rnig");
  absl::StatusOr<Plan> plan = PlanIt(spec);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("spec.sweep.algorithms"));
  EXPECT_THAT(plan.status().message(), HasSubstr("ring"));
}

TEST(SweepPlanTest, OneCellForTheLibrarysChoiceAndOnePerAlgorithm) {
  v1::WorkflowSpec spec;
  spec.mutable_sweep()->mutable_base()->set_operation("allreduce");
  spec.mutable_sweep()->mutable_base()->set_ranks(2);
  spec.mutable_sweep()->add_algorithms("ring");
  absl::StatusOr<Plan> plan = PlanIt(spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->cells.size(), 2u);
  EXPECT_EQ(plan->cells[0].label(), "allreduce default");
  EXPECT_TRUE(plan->cells[0].spec().env().empty());
  EXPECT_EQ(plan->cells[1].label(), "allreduce ring");
  EXPECT_FALSE(plan->cells[1].spec().env().empty());
  EXPECT_EQ(plan->cells[1].spec().labels().at("sweep"), "w-1");
}

TEST(SuitePlanTest, AnUnknownSuiteOrProfileIsRefusedNamingTheField) {
  v1::WorkflowSpec spec;
  spec.mutable_suite()->set_suite("no-such-suite");
  absl::StatusOr<Plan> plan = PlanIt(spec);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("spec.suite.suite"));
  spec.mutable_suite()->set_suite("container-parity");
  spec.mutable_suite()->set_profile("nightly");
  plan = PlanIt(spec);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("spec.suite.profile"));
}

TEST(SuitePlanTest, CellsTheWorkersCannotRunAreSkippedWithTheReason) {
  v1::WorkflowSpec spec;
  spec.mutable_suite()->set_suite("container-parity");
  // No worker at all: every cell is planned, each skipped with why.
  absl::StatusOr<Plan> plan = PlanIt(spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_FALSE(plan->cells.empty());
  for (const v1::WorkflowCell& cell : plan->cells) {
    EXPECT_FALSE(cell.skipped().empty()) << cell.label();
    EXPECT_EQ(cell.spec().labels().at("suite-run"), "w-1");
  }
}

TEST(KindTest, ASpecWithoutAKindIsRefused) {
  absl::StatusOr<std::string> kind = KindOf(v1::WorkflowSpec());
  ASSERT_FALSE(kind.ok());
  EXPECT_THAT(kind.status().message(), HasSubstr("matrix, suite, sweep, advice, report, check or hunt"));
}

}  // namespace
}  // namespace collbench::workflows
