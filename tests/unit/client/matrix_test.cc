// `collbench matrix`'s lists: every combination is checked before anything
// runs, so a typo refuses the matrix whole, naming the cell and the field.
#include "client/matrix.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

TEST(MatrixFlagsTest, AMisspelledOperationRefusesTheWholeMatrix) {
  absl::StatusOr<MatrixPlan> plan =
      ParseMatrixFlags({"--operations", "allreduce,allredcue", "--ranks", "2"});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("allredcue"));
  EXPECT_THAT(plan.status().message(), HasSubstr("--operations: 'allredcue' fits no combination"));
  EXPECT_THAT(plan.status().message(), HasSubstr("operation"));
}

TEST(MatrixFlagsTest, MisspelledPlacementTransportAndMpiAreRefused) {
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--placements", "pack,sprad"}, {"--transports", "shm,tpc"}, {"--mpis", "openmpi,mpcih"}}) {
    absl::StatusOr<MatrixPlan> plan = ParseMatrixFlags({flag, value, "--ranks", "2"});
    ASSERT_FALSE(plan.ok()) << flag;
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << flag;
  }
}

TEST(MatrixFlagsTest, AnOptionNoCellCanTakeIsRefusedUpFront) {
  // A 16-bit float is an element width only NCCL takes (engine_spec's rules).
  absl::StatusOr<MatrixPlan> plan =
      ParseMatrixFlags({"--operations", "allreduce", "--ranks", "2", "--dtype", "float16"});
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("dtype"));
}

TEST(MatrixFlagsTest, ACombinationThatCannotBeIsLeftToBeSkipped) {
  // Open MPI cannot use SHM across workers (SPREAD), but shm fits PACK:
  // the default lists are accepted, that one cell skipped when it runs.
  absl::StatusOr<MatrixPlan> plan = ParseMatrixFlags({"--ranks", "2"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->size(), 12);
}

TEST(MatrixFlagsTest, ValidListsGiveEveryCombination) {
  absl::StatusOr<MatrixPlan> plan = ParseMatrixFlags(
      {"--operations", "allreduce,bcast", "--placements", "pack", "--transports", "shm,tcp",
       "--ranks", "2"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->size(), 4);
  EXPECT_THAT(plan->common_flags, ::testing::ElementsAre("--ranks", "2"));
}

}  // namespace
}  // namespace collbench
