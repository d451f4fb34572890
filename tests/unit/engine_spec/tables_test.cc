// engine_spec's tables and the numbers derived from them: the size sweep,
// the combinations `all` asks for and the progress total, the peak buffer.
#include <cstdint>
#include <vector>

#include "engine_spec/backends.h"
#include "engine_spec/job_checks.h"
#include "engine_spec/memory_kinds.h"
#include "engine_spec/operations.h"
#include "engine_spec/options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

EngineOptions Parse(const std::vector<std::string>& args) {
  absl::StatusOr<EngineOptions> options = ParseEngineArgs(args);
  EXPECT_TRUE(options.ok()) << options.status();
  return options.ok() ? *options : EngineOptions();
}

TEST(SweepTest, GeometricSweepIsTheEnginesSweep) {
  EXPECT_THAT(GeometricSweep(8, 64, 2, 100), ElementsAre(8, 16, 32, 64));
  // A factor close to 1 still advances by at least one byte.
  EXPECT_THAT(GeometricSweep(1, 4, 1.1, 100), ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(GeometricSweep(1, 1 << 20, 1.01, 64).size(), 64u);
  EXPECT_EQ(SweepSizes(Parse({"allreduce", "-b", "8", "-e", "64"})),
            GeometricSweep(8, 64, 2, kMaxSweepSizes));
}

TEST(ProgressTotalTest, IsSizesTimesCombinations) {
  // Four sizes.
  EXPECT_EQ(PlannedSizeRecords(Parse({"allreduce", "--sizes", "8,1K,64K,1M"})), 4u);
  // mpi carries five types, nccl seven; four operators for reductions.
  EXPECT_EQ(PlannedSizeRecords(Parse({"allreduce", "--sizes", "8,1K", "-d", "all"})), 2u * 5);
  EXPECT_EQ(PlannedSizeRecords(
                Parse({"allreduce", "--sizes", "8,1K", "-d", "all", "--backend", "nccl"})),
            2u * 7);
  EXPECT_EQ(PlannedSizeRecords(Parse({"allreduce", "--sizes", "8,1K", "-d", "all", "-o", "all"})),
            2u * 5 * 4);
  // Operators are no axis of an operation that does not reduce.
  EXPECT_EQ(PlannedSizeRecords(Parse({"bcast", "--sizes", "8,1K", "-o", "all"})), 2u);
  EXPECT_EQ(PlannedSizeRecords(Parse({"nosuchop", "--sizes", "8"})), 0u);
}

TEST(PeakBufferTest, GatherRootHoldsEveryBlock) {
  const EngineOptions options = Parse({"gather", "--sizes", "1K,4K"});
  const OperationSpec& gather = OperationSpecNamed("gather");
  EXPECT_EQ(PeakBufferBytes(options, gather, /*rank=*/0, /*nranks=*/4), 4096u + 4 * 4096u);
  EXPECT_EQ(PeakBufferBytes(options, gather, /*rank=*/1, /*nranks=*/4), 4096u);
}

TEST(TablesTest, BackendsAndStrategies) {
  EXPECT_THAT(BackendNames(),
              ElementsAre("mpi", "host-staged", "mpi-object", "mpi-staged", "mpi-cuda", "nccl"));
  EXPECT_EQ(FindBackendSpec("nccl")->space, MemorySpace::kDevice);
  EXPECT_TRUE(FindBackendSpec("nccl")->needs_cuda);
  EXPECT_FALSE(FindBackendSpec("mpi-object")->needs_cuda);
  EXPECT_EQ(FindBackendSpec("gloo"), nullptr);
  EXPECT_EQ((*ResolveStrategy("", "nccl"))->strategy, Strategy::kNcclChief);
  EXPECT_EQ((*ResolveStrategy("mpi-cuda", "mpi"))->strategy, Strategy::kMpiCuda);
  EXPECT_THAT(std::string(ResolveStrategy("", "host-staged").status().message()),
              HasSubstr("has no parameter-server strategy"));
}

TEST(TablesTest, MemoryKindTexts) {
  EXPECT_EQ(ParseMemoryKind("numa:3")->numa_node, 3);
  EXPECT_EQ(ParseMemoryKind("device")->kind->space, MemorySpace::kDevice);
  EXPECT_THAT(std::string(ParseMemoryKind("hbm").status().message()),
              HasSubstr("unknown --memory 'hbm' (one of default, "));
  EXPECT_THAT(std::string(ParseMemoryKind("pinned:1").status().message()),
              HasSubstr("'pinned' takes no argument"));
  EXPECT_THAT(std::string(ParseMemoryKind("numa:x").status().message()),
              HasSubstr("expected numa:N"));
}

}  // namespace
}  // namespace collbench
