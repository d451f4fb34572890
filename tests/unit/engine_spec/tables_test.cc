// SPDX-License-Identifier: Apache-2.0
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

// In place the input lives in the one buffer: allgather's own block, the
// gather root's block at root x count, the others' input at 0.
TEST(InPlaceLayoutTest, InputSitsWhereMpiAndNcclTestsPutIt) {
  OpContext ctx{.rank = 2, .nranks = 4, .count = 10, .root = 2};
  const InPlaceLayout allgather = InPlaceLayoutOf(OperationSpecNamed("allgather"), ctx);
  EXPECT_EQ(allgather.buffer_count, 40u);
  EXPECT_EQ(allgather.input_offset, 20u);
  EXPECT_EQ(allgather.input_count, 10u);
  const InPlaceLayout root = InPlaceLayoutOf(OperationSpecNamed("gather"), ctx);
  EXPECT_EQ(root.buffer_count, 40u);
  EXPECT_EQ(root.input_offset, 20u);
  ctx.rank = 1;
  const InPlaceLayout other = InPlaceLayoutOf(OperationSpecNamed("gather"), ctx);
  EXPECT_EQ(other.buffer_count, 10u);
  EXPECT_EQ(other.input_offset, 0u);
  const InPlaceLayout alltoall = InPlaceLayoutOf(OperationSpecNamed("alltoall"), ctx);
  EXPECT_EQ(alltoall.buffer_count, 40u);
  EXPECT_EQ(alltoall.input_offset, 0u);
  EXPECT_EQ(alltoall.input_count, 40u);
  // The peak buffer of an in-place run is the one buffer.
  const EngineOptions in_place = Parse({"allgather", "--sizes", "1K", "--in-place"});
  EXPECT_EQ(PeakBufferBytes(in_place, OperationSpecNamed("allgather"), 0, 4), 4 * 1024u);
}

TEST(DefaultDataTypeTest, FloatWhereTheOperationComputesBytesElsewhere) {
  EXPECT_EQ(DefaultDataType("allreduce"), DataType::kFloat32);
  EXPECT_EQ(DefaultDataType("reduce_scatter"), DataType::kFloat32);
  EXPECT_EQ(DefaultDataType("gemm"), DataType::kFloat32);
  EXPECT_EQ(DefaultDataType("parameter-server"), DataType::kFloat32);
  EXPECT_EQ(DefaultDataType("latency"), DataType::kInt8);
  EXPECT_EQ(DefaultDataType("alltoall"), DataType::kInt8);
  EXPECT_EQ(DefaultDataType("h2d"), DataType::kInt8);
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
