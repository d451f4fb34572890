// SPDX-License-Identifier: Apache-2.0
// Command-line parsing of the engine flags
// (docs/design/command-lines.md#collbench-rank): every flag, the size sweep,
// and a clear InvalidArgument naming the flag for bad input.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "engine_spec/options.h"

namespace collbench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<EngineOptions> Parse(std::vector<std::string> args) {
  return ParseEngineArgs(args);
}

TEST(OptionsTest, DefaultsFollowTheDesign) {
  auto o = Parse({"allreduce"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->operation, "allreduce");
  EXPECT_EQ(o->backend, "mpi");
  EXPECT_EQ(o->dtype, DataType::kFloat32);
  EXPECT_EQ(o->redop, ReduceOp::kSum);
  EXPECT_EQ(o->format, OutputFormat::kTable);
  const std::vector<uint64_t> sizes = SweepSizes(*o);
  EXPECT_EQ(sizes.front(), 8u);
  EXPECT_EQ(sizes.back(), 16u << 20);
  EXPECT_EQ(sizes.size(), 22u);  // 8 B .. 16 MiB by 2
}

// OSU measures from 1 byte: what only moves bytes defaults to int8, what
// computes on the data keeps float32 (issue 21, item 10).
TEST(OptionsTest, DefaultTypeIsInt8UnlessTheOperationComputes) {
  for (const char* op : {"latency", "bw", "bibw", "bcast", "gather", "allgather", "alltoall",
                         "h2h", "h2d"}) {
    auto o = Parse({op, "-b", "1"});
    ASSERT_TRUE(o.ok()) << op << ": " << o.status();
    EXPECT_EQ(o->dtype, DataType::kInt8) << op;
    EXPECT_EQ(SpecEcho(*o).at("dtype"), "int8") << op;
  }
  for (const char* op : {"allreduce", "reduce", "reduce_scatter", "gemm", "gradient-replay"}) {
    auto o = Parse({op});
    ASSERT_TRUE(o.ok()) << op << ": " << o.status();
    EXPECT_EQ(o->dtype, DataType::kFloat32) << op;
  }
  auto asked = Parse({"latency", "--dtype", "float64"});
  ASSERT_TRUE(asked.ok()) << asked.status();
  EXPECT_EQ(asked->dtype, DataType::kFloat64);
}

TEST(OptionsTest, InPlaceIsAFlagAndEchoedOnlyWhenGiven) {
  auto o = Parse({"allreduce"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->in_place);
  EXPECT_EQ(SpecEcho(*o).count("in_place"), 0u);
  o = Parse({"allreduce", "--in-place"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->in_place);
  EXPECT_EQ(SpecEcho(*o).at("in_place"), "true");
  EXPECT_THAT(Parse({"allreduce", "--in-place=yes"}).status().message(),
              HasSubstr("takes no value"));
}

TEST(OptionsTest, ShortAndLongFlags) {
  auto o = Parse({"-b", "1K", "-e", "1M", "-f", "4", "-n", "10", "-w", "3", "bcast",
                  "--root=2", "-c", "--format", "jsonl", "-d", "int64", "-o", "max",
                  "--memory", "numa:0", "--window", "16"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_THAT(SweepSizes(*o), ElementsAre(1024, 4096, 16384, 65536, 262144, 1048576));
  EXPECT_EQ(*o->iters, 10);
  EXPECT_EQ(*o->warmup, 3);
  EXPECT_EQ(o->root, 2);
  EXPECT_TRUE(o->check);
  EXPECT_EQ(o->format, OutputFormat::kJsonl);
  EXPECT_EQ(o->dtype, DataType::kInt64);
  EXPECT_EQ(o->redop, ReduceOp::kMax);
  EXPECT_EQ(o->memory, "numa:0");
  EXPECT_EQ(o->window, 16);
}

TEST(OptionsTest, SyncIsBarrierForCollectivesUnlessAsked) {
  auto o = Parse({"bcast"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->sync.has_value());
  EXPECT_EQ(SpecEcho(*o).at("sync"), "auto");
  EXPECT_EQ(EffectiveSync(*o, /*collective=*/true), IterationSync::kBarrier);
  EXPECT_EQ(EffectiveSync(*o, /*collective=*/false), IterationSync::kNone);
  o = Parse({"bcast", "--sync", "none"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(EffectiveSync(*o, /*collective=*/true), IterationSync::kNone);
  EXPECT_EQ(SpecEcho(*o).at("sync"), "none");
  o = Parse({"latency", "--sync=barrier"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_THAT(std::string(CheckSyncApplies(*o, /*collective=*/false, "latency").message()),
              HasSubstr("--sync barrier does not apply to latency"));
}

TEST(OptionsTest, ExplicitSizesAndAll) {
  auto o = Parse({"alltoall", "--sizes", "8,1K,64K,1M", "--dtype", "all", "--redop", "all"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_THAT(SweepSizes(*o), ElementsAre(8, 1024, 65536, 1048576));
  EXPECT_TRUE(o->all_dtypes);
  EXPECT_TRUE(o->all_redops);
  EXPECT_EQ(SpecEcho(*o).at("dtype"), "all");
}

TEST(OptionsTest, ScenarioAsOperationOrFlag) {
  auto a = Parse({"gradient-replay", "--model", "bert-base"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->scenario, "gradient-replay");
  auto b = Parse({"--scenario", "parameter-server", "--strategy", "host"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->operation, "parameter-server");
}

TEST(OptionsTest, AdaptiveBudget) {
  auto o = Parse({"allreduce", "--time-budget", "250ms"});
  ASSERT_TRUE(o.ok());
  EXPECT_DOUBLE_EQ(*o->time_budget_s, 0.25);
}

TEST(OptionsTest, DefaultItersAreManyForSmallFewForLarge) {
  EXPECT_GT(DefaultIters(8), DefaultIters(1 << 20));
  EXPECT_GT(DefaultIters(1 << 20), DefaultIters(64 << 20));
  EXPECT_GE(DefaultWarmup(8), DefaultWarmup(64 << 20));
}

struct BadCase {
  std::vector<std::string> args;
  std::string mentions;
};

class BadOptionsTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadOptionsTest, IsInvalidArgumentNamingTheProblem) {
  auto o = Parse(GetParam().args);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(o.status().message()), HasSubstr(GetParam().mentions));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadOptionsTest,
    ::testing::Values(
        BadCase{{}, "missing OPERATION"},
        BadCase{{"allreduce", "--bogus"}, "unknown flag '--bogus'"},
        BadCase{{"allreduce", "-b", "12Q"}, "--min-bytes"},
        BadCase{{"allreduce", "-b", "4K", "-e", "1K"}, "--max-bytes (1K) is below --min-bytes (4K)"},
        BadCase{{"allreduce", "--sizes", "8,,1K"}, "--sizes"},
        BadCase{{"allreduce", "--sizes", "8", "-e", "1K"}, "--sizes conflicts"},
        BadCase{{"allreduce", "-n", "0"}, "--iters"},
        BadCase{{"allreduce", "-n", "-5"}, "--iters"},
        BadCase{{"allreduce", "-w", "x"}, "--warmup"},
        BadCase{{"allreduce", "-f", "1"}, "--factor"},
        BadCase{{"allreduce", "--dtype", "float8"}, "unknown --dtype 'float8'"},
        BadCase{{"allreduce", "--redop", "avg"}, "unknown --redop 'avg'"},
        BadCase{{"allreduce", "--root", "-1"}, "--root"},
        BadCase{{"allreduce", "--format", "xml"}, "--format"},
        BadCase{{"allreduce", "--time-budget", "fast"}, "--time-budget"},
        BadCase{{"allreduce", "--time-budget", "1s", "-n", "5"}, "conflicts with --iters"},
        BadCase{{"allreduce", "--window", "5000"}, "--window"},
        BadCase{{"allreduce", "--scenario", "training"}, "--scenario"},
        BadCase{{"allreduce", "--bucket-bytes", "0"}, "--bucket-bytes"},
        BadCase{{"allreduce", "-n"}, "needs a value"},
        BadCase{{"allreduce", "--check=yes"}, "takes no value"},
        BadCase{{"allreduce", "--sync", "fence"}, "unknown --sync 'fence' (one of barrier, none)"},
        BadCase{{"allreduce", "--debug-slow-delay", "5s"}, "--debug-slow-delay"},
        BadCase{{"allreduce", "bcast"}, "unexpected argument 'bcast'"}));

// A factor just above 1 over a wide range asked for about 10^8 sizes (and
// as much memory to list them); the engine_options fuzzer checks the cap.
TEST(OptionsTest, RejectsASweepOfTooManySizes) {
  auto o = Parse({"allreduce", "--factor", "1.0000001", "--min-bytes", "1", "--max-bytes", "1T"});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(o.status().message()), HasSubstr("--factor 1"));
  EXPECT_THAT(std::string(o.status().message()), HasSubstr("more than 10000 sizes"));
  // Below 1 / (factor - 1) the sweep steps by one byte: 10000 sizes pass,
  // 10001 do not.
  auto widest = Parse({"allreduce", "--factor", "1.00001", "--max-bytes", "10000", "-b", "1"});
  ASSERT_TRUE(widest.ok()) << widest.status();
  EXPECT_EQ(SweepSizes(*widest).size(), 10000u);
  EXPECT_FALSE(
      Parse({"allreduce", "--factor", "1.00001", "--max-bytes", "10001", "-b", "1"}).ok());
}

}  // namespace
}  // namespace collbench
