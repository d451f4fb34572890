// SPDX-License-Identifier: Apache-2.0
// api/validation.h: every malformed spec is INVALID_ARGUMENT naming the
// field (docs/design/security.md#validation-before-queueing), and sound specs pass.
#include "api/validation.h"

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "api/convert.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

// Four workers of four slots, 1 GiB of host memory and 8 GiB GPUs each,
// each in its own container (private IPC), two per host.
ValidationLimits FourWorkers() {
  ValidationLimits limits;
  limits.worker_ipc = std::vector<WorkerIpc>{{"workers/a", "h1", 4026532281, 4026532282},
                                             {"workers/b", "h1", 4026532391, 4026532392},
                                             {"workers/c", "h2", 4026532281, 4026532282},
                                             {"workers/d", "h2", 4026532491, 4026532492}};
  limits.max_total_slots = 16;
  limits.worker_count = 4;
  limits.max_worker_slots = 4;
  limits.min_worker_memory_bytes = kGiB;
  limits.min_gpu_memory_bytes = 8 * kGiB;
  return limits;
}

v1::RunSpec Allreduce(int ranks = 4) {
  v1::RunSpec spec;
  spec.set_operation("allreduce");
  spec.set_ranks(ranks);
  return spec;
}

google::protobuf::Duration Seconds(int64_t seconds, int32_t nanos = 0) {
  google::protobuf::Duration d;
  d.set_seconds(seconds);
  d.set_nanos(nanos);
  return d;
}

struct BadSpec {
  std::string name;
  std::function<void(v1::RunSpec*, ValidationLimits*)> mutate;
  std::string field;  // the path the message must start with
};

std::vector<BadSpec> BadSpecs() {
  using S = v1::RunSpec*;
  using L = ValidationLimits*;
  return {
      // What runs.
      {"UnknownOperation", [](S s, L) { s->set_operation("allreduse"); }, "spec.operation"},
      {"MissingOperation", [](S s, L) { s->clear_operation(); }, "spec.operation"},
      {"UnknownScenario", [](S s, L) { s->set_scenario("inference"); }, "spec.scenario"},
      {"OperationBesideScenario", [](S s, L) { s->set_scenario("gradient-replay"); },
       "spec.operation"},
      {"UnknownBackend", [](S s, L) { s->set_backend("gloo"); }, "spec.backend"},
      {"UnknownMpiEnumValue", [](S s, L) { s->set_mpi(static_cast<v1::MpiImplementation>(7)); },
       "spec.mpi"},
      {"UnknownDtype", [](S s, L) { s->set_dtype("float128"); }, "spec.dtype"},
      {"UnknownSyncEnumValue", [](S s, L) { s->set_sync(static_cast<v1::IterationSync>(9)); },
       "spec.sync"},
      {"BarrierForPointToPoint",
       [](S s, L) {
         s->set_operation("latency");
         s->set_sync(v1::SYNC_BARRIER);
       },
       "spec.sync"},
      {"Float16OnMpi", [](S s, L) { s->set_dtype("float16"); }, "spec.dtype"},
      {"Bfloat16OnPsHostStrategy",
       [](S s, L) {
         s->set_operation("parameter-server");
         s->set_dtype("bfloat16");
       },
       "spec.dtype"},
      {"UnknownRedop", [](S s, L) { s->set_redop("avg"); }, "spec.redop"},
      // Sizes.
      {"ZeroSize",
       [](S s, L) {
         for (uint64_t b : {8u, 64u, 0u}) s->add_sizes_bytes(b);
       },
       "spec.sizes_bytes[2]"},
      {"SizeBelowOneElement", [](S s, L) { s->add_sizes_bytes(2); }, "spec.sizes_bytes[0]"},
      {"SizeOverTheLimit",
       [](S s, L) {
         s->add_sizes_bytes(8);
         s->add_sizes_bytes(17 * kGiB);
       },
       "spec.sizes_bytes[1]"},
      {"TooManySizes",
       [](S s, L) {
         for (uint64_t b = 1; b <= 65; ++b) s->add_sizes_bytes(b * 8);
       },
       "spec.sizes_bytes"},
      {"SizesAndRange",
       [](S s, L) {
         s->add_sizes_bytes(8);
         s->set_max_bytes(64);
       },
       "spec.sizes_bytes"},
      {"MaxBelowMin",
       [](S s, L) {
         s->set_min_bytes(4096);
         s->set_max_bytes(1024);
       },
       "spec.max_bytes"},
      {"MaxOverTheLimit", [](S s, L) { s->set_max_bytes(32 * kGiB); }, "spec.max_bytes"},
      {"MinBelowOneFloat64",
       [](S s, L) {
         s->set_dtype("float64");
         s->set_min_bytes(4);
       },
       "spec.min_bytes"},
      {"FactorOne", [](S s, L) { s->set_factor(1.0); }, "spec.factor"},
      {"FactorNegative", [](S s, L) { s->set_factor(-2); }, "spec.factor"},
      {"FactorGivingTooManySizes", [](S s, L) { s->set_factor(1.01); }, "spec.factor"},
      // Iterations.
      {"NegativeIterations", [](S s, L) { s->set_iters(-5); }, "spec.iters"},
      {"TooManyIterations", [](S s, L) { s->set_iters(2'000'000); }, "spec.iters"},
      {"WarmupBelowMinusOne", [](S s, L) { s->set_warmup(-2); }, "spec.warmup"},
      {"ZeroTimeBudget", [](S s, L) { *s->mutable_time_budget() = Seconds(0); },
       "spec.time_budget"},
      {"InvalidTimeBudget", [](S s, L) { *s->mutable_time_budget() = Seconds(1, -5); },
       "spec.time_budget"},
      {"TimeBudgetOverTheLimit", [](S s, L) { *s->mutable_time_budget() = Seconds(3600); },
       "spec.time_budget"},
      {"TimeBudgetWithIterations",
       [](S s, L) {
         s->set_iters(10);
         *s->mutable_time_budget() = Seconds(1);
       },
       "spec.time_budget"},
      // Ranks and root.
      {"ZeroRanks", [](S s, L) { s->set_ranks(0); }, "spec.ranks"},
      {"MoreRanksThanSlots", [](S s, L) { s->set_ranks(64); }, "spec.ranks"},
      {"OddRanksForLatency",
       [](S s, L) {
         s->set_operation("latency");
         s->set_ranks(3);
       },
       "spec.ranks"},
      {"ParameterServerAlone",
       [](S s, L) {
         s->set_scenario("parameter-server");
         s->clear_operation();
         s->set_ranks(1);
       },
       "spec.ranks"},
      {"RootBeyondRanks",
       [](S s, L) {
         s->set_operation("gather");
         s->set_root(4);
       },
       "spec.root"},
      {"NegativeRoot", [](S s, L) { s->set_root(-1); }, "spec.root"},
      // Memory and validation.
      {"UnknownMemoryKind", [](S s, L) { s->set_memory("hbm"); }, "spec.memory"},
      {"BadNumaNode", [](S s, L) { s->set_memory("numa:x"); }, "spec.memory"},
      {"ArgumentToPlainKind", [](S s, L) { s->set_memory("pinned:1"); }, "spec.memory"},
      {"DeviceMemoryOnMpi", [](S s, L) { s->set_memory("device"); }, "spec.memory"},
      {"HostMemoryOnNccl",
       [](S s, L) {
         s->set_backend("nccl");
         s->set_memory("default");
       },
       "spec.memory"},
      {"DeviceSideOfACopy",
       [](S s, L) {
         s->set_operation("h2d");
         s->set_memory("device");
       },
       "spec.memory"},
      {"ReduceScatterOnTheObjectPath",
       [](S s, L) {
         s->set_operation("reduce_scatter");
         s->set_backend("mpi-object");
       },
       "spec.backend"},
      {"DeviceMemoryForAHostCopy",
       [](S s, L) {
         s->set_operation("h2h");
         s->set_memory("device");
       },
       "spec.memory"},
      {"IntegerGemm",
       [](S s, L) {
         s->set_operation("gemm");
         s->set_dtype("int32");
       },
       "spec.dtype"},
      {"InexactInt8SumCheck",
       [](S s, L l) {
         l->max_total_slots = 256;
         l->max_worker_slots = 64;
         s->set_ranks(200);
         s->set_dtype("int8");
         s->set_check(true);
       },
       "spec.check"},
      {"WindowTooLarge", [](S s, L) { s->set_window(2000); }, "spec.window"},
      {"NegativeWindow", [](S s, L) { s->set_window(-1); }, "spec.window"},
      // Scenario settings.
      {"StrategyWithoutParameterServer", [](S s, L) { s->set_strategy("host"); }, "spec.strategy"},
      {"UnknownStrategy",
       [](S s, L) {
         s->set_operation("parameter-server");
         s->set_strategy("nccl-direct");
       },
       "spec.strategy"},
      {"ModelOnACollective", [](S s, L) { s->set_model("resnet50"); }, "spec.model"},
      {"BucketOnACollective", [](S s, L) { s->set_bucket_bytes(kMiB); }, "spec.bucket_bytes"},
      {"StepsOnACollective", [](S s, L) { s->set_steps(5); }, "spec.steps"},
      {"ComputeTimeOnACollective",
       [](S s, L) { s->mutable_compute_time()->set_seconds(1); },
       "spec.compute_time"},
      {"NegativeSteps",
       [](S s, L) {
         s->set_operation("gradient-replay");
         s->set_steps(-1);
       },
       "spec.steps"},
      {"NegativeComputeTime",
       [](S s, L) {
         s->set_operation("gradient-replay");
         s->mutable_compute_time()->set_seconds(-1);
       },
       "spec.compute_time"},
      {"UnknownModel",
       [](S s, L) {
         s->set_operation("gradient-replay");
         s->set_model("gpt-5");
       },
       "spec.model"},
      // Placement.
      {"UnknownPlacementEnumValue",
       [](S s, L) { s->mutable_placement()->set_policy(static_cast<v1::PlacementPolicy>(9)); },
       "spec.placement.policy"},
      {"ExplicitWithoutWorkers",
       [](S s, L) {
         s->mutable_placement()->set_policy(v1::EXPLICIT);
         s->mutable_placement()->set_ranks_per_worker(4);
       },
       "spec.placement.workers"},
      {"ExplicitMismatch",
       [](S s, L) {
         v1::Placement* p = s->mutable_placement();
         p->set_policy(v1::EXPLICIT);
         p->add_workers("workers/a");
         p->add_workers("workers/b");
         p->set_ranks_per_worker(3);
       },
       "spec.placement.ranks_per_worker"},
      {"ExplicitDuplicateWorker",
       [](S s, L) {
         v1::Placement* p = s->mutable_placement();
         p->set_policy(v1::EXPLICIT);
         p->add_workers("workers/a");
         p->add_workers("workers/a");
         p->set_ranks_per_worker(2);
       },
       "spec.placement.workers[1]"},
      {"PackListingWorkers", [](S s, L) { s->mutable_placement()->add_workers("workers/a"); },
       "spec.placement.workers"},
      {"SpreadBeyondTheWorkers",
       [](S s, L) {
         s->set_ranks(8);
         s->mutable_placement()->set_policy(v1::SPREAD);
       },
       "spec.ranks"},
      {"UnknownTransportEnumValue",
       [](S s, L) { s->set_transport(static_cast<v1::Transport>(42)); }, "spec.transport"},
      {"SharedMemoryAcrossWorkers",
       [](S s, L) {
         s->set_ranks(2);
         s->mutable_placement()->set_policy(v1::SPREAD);
         s->set_transport(v1::SHM);
       },
       "spec.transport"},
      // Environment, timeout, labels.
      {"EnvKeyOutsideTheAllowList", [](S s, L) { (*s->mutable_env())["LD_PRELOAD"] = "/tmp/x.so"; },
       "spec.env.LD_PRELOAD"},
      {"EnvBarePrefix", [](S s, L) { (*s->mutable_env())["NCCL_"] = "1"; }, "spec.env.NCCL_"},
      // Not a variable name: named in the message (EnvKeyThatIsNoVariableName),
      // never in the field path, which ':', '=' or '.' would break.
      {"EnvKeyWithEquals", [](S s, L) { (*s->mutable_env())["UCX_TLS=x"] = "1"; }, "spec.env"},
      {"EnvValueWithNewline", [](S s, L) { (*s->mutable_env())["NCCL_DEBUG"] = "INFO\nrm -rf /"; },
       "spec.env.NCCL_DEBUG"},
      {"EnvValueWithNul",
       [](S s, L) { (*s->mutable_env())["OMPI_MCA_btl"] = std::string("tcp\0x", 5); },
       "spec.env.OMPI_MCA_btl"},
      {"NegativeTimeout", [](S s, L) { *s->mutable_timeout() = Seconds(-1); }, "spec.timeout"},
      {"TimeoutOverADay", [](S s, L) { *s->mutable_timeout() = Seconds(48 * 3600); },
       "spec.timeout"},
      {"UppercaseLabelKey", [](S s, L) { (*s->mutable_labels())["Team"] = "x"; }, "spec.labels"},
      {"LongLabelKey", [](S s, L) { (*s->mutable_labels())[std::string(64, 'k')] = "x"; },
       "spec.labels"},
      {"LongLabelValue", [](S s, L) { (*s->mutable_labels())["team"] = std::string(257, 'v'); },
       "spec.labels"},
      // Buffers against the workers' memory.
      {"BuffersOverWorkerMemory",
       [](S s, L) {
         s->set_operation("allgather");
         s->set_ranks(8);
         s->add_sizes_bytes(8);
         s->add_sizes_bytes(64 * kMiB);  // 64M + 512M per rank, 4 per worker
       },
       "spec.sizes_bytes"},
      {"RangeOverWorkerMemory", [](S s, L) { s->set_max_bytes(256 * kMiB); }, "spec.max_bytes"},
      {"ExplicitRanksPerWorkerOverMemory",
       [](S s, L) {
         v1::Placement* p = s->mutable_placement();
         p->set_policy(v1::EXPLICIT);
         p->add_workers("workers/a");
         p->set_ranks_per_worker(4);
         s->set_max_bytes(256 * kMiB);  // 512 MiB per rank x 4
       },
       "spec.max_bytes"},
      {"BuffersOverGpuMemory",
       [](S s, L l) {
         l->min_worker_memory_bytes = 1024 * kGiB;
         s->set_backend("nccl");
         s->set_max_bytes(8 * kGiB);  // 16 GiB per rank on 8 GiB GPUs
       },
       "spec.max_bytes"},
  };
}

class BadSpecTest : public ::testing::TestWithParam<BadSpec> {};

TEST(ValidationTest, EnvKeyThatIsNoVariableNameIsQuotedInTheMessage) {
  for (const char* key : {"UCX_TLS=x", "L:_PRELOAD", "NCCL.ALGO", "A B", "2LD_PRELOAD"}) {
    v1::RunSpec spec = Allreduce();
    (*spec.mutable_env())[key] = "1";
    const absl::Status status = ValidateRunSpec(spec, FourWorkers());
    EXPECT_EQ(status.message(), absl::StrCat("spec.env: key '", key,
                                             "' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"));
  }
}

TEST_P(BadSpecTest, IsInvalidArgumentNamingTheField) {
  v1::RunSpec spec = Allreduce();
  ValidationLimits limits = FourWorkers();
  GetParam().mutate(&spec, &limits);
  const absl::Status status = ValidateRunSpec(spec, limits);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_TRUE(absl::StartsWith(status.message(), GetParam().field + ": "))
      << "expected a message starting with '" << GetParam().field << ": ', got: " << status;
}

INSTANTIATE_TEST_SUITE_P(Validation, BadSpecTest, ::testing::ValuesIn(BadSpecs()),
                         [](const ::testing::TestParamInfo<BadSpec>& info) {
                           return info.param.name;
                         });

TEST(ValidationMessageTest, SaysWhatIsWrong) {
  const ValidationLimits limits = FourWorkers();
  v1::RunSpec spec = Allreduce(64);
  EXPECT_EQ(ValidateRunSpec(spec, limits).message(),
            "spec.ranks: 64 ranks but the registered workers have 16 slots");

  spec = Allreduce();
  for (uint64_t b : {8u, 64u, 0u}) spec.add_sizes_bytes(b);
  EXPECT_EQ(ValidateRunSpec(spec, limits).message(), "spec.sizes_bytes[2]: 0 is not a size");

  spec = Allreduce();
  spec.set_operation("allreduse");
  EXPECT_TRUE(absl::StartsWith(ValidateRunSpec(spec, limits).message(),
                               "spec.operation: unknown operation 'allreduse' (one of "));

  spec = Allreduce();
  (*spec.mutable_env())["LD_PRELOAD"] = "x";
  EXPECT_EQ(ValidateRunSpec(spec, limits).message(),
            "spec.env.LD_PRELOAD: names a program, library, plugin, file or directory; such "
            "parameters are refused (docs/tuning-parameters.md)");

  spec = Allreduce();
  (*spec.mutable_env())["NCCL_ALGO"] = "Ring;touch /tmp/p";
  EXPECT_EQ(ValidateRunSpec(spec, limits).message(),
            "spec.env.NCCL_ALGO: value 'Ring;touch /tmp/p' is not a comma list of identifiers, "
            "optionally ^-prefixed");

  spec = Allreduce();
  spec.set_memory("--debug-corrupt-rank");
  EXPECT_TRUE(absl::StartsWith(ValidateRunSpec(spec, limits).message(), "spec.memory: "));

  spec = Allreduce();
  spec.set_max_bytes(256 * kMiB);
  EXPECT_EQ(ValidateRunSpec(spec, limits).message(),
            "spec.max_bytes: the largest size (256M) needs 512.0 MiB per rank x 4 ranks on "
            "one worker, workers have 1.0 GiB");
}

void ExpectValid(const v1::RunSpec& spec, const ValidationLimits& limits = FourWorkers()) {
  const absl::Status status = ValidateRunSpec(spec, limits);
  EXPECT_TRUE(status.ok()) << status << "\n" << spec.DebugString();
}

TEST(ValidSpecTest, AllreduceWithDefaults) { ExpectValid(Allreduce()); }

TEST(ResolvedSyncTest, BarrierForCollectivesAndScenariosUnlessAskedNoneForPointToPoint) {
  v1::RunSpec s = Allreduce();
  EXPECT_EQ(ResolvedSync(s), v1::SYNC_BARRIER);
  s.set_sync(v1::SYNC_NONE);
  ExpectValid(s);
  EXPECT_EQ(ResolvedSync(s), v1::SYNC_NONE);
  s.set_operation("bw");
  s.set_sync(v1::ITERATION_SYNC_UNSPECIFIED);
  EXPECT_EQ(ResolvedSync(s), v1::SYNC_NONE);
  s.set_operation("gradient-replay");
  EXPECT_EQ(ResolvedSync(s), v1::SYNC_BARRIER);
}

TEST(ValidSpecTest, WithoutWorkerFactsOnlyTheCapsApply) {
  ExpectValid(Allreduce(4096), ValidationLimits{});
}

TEST(ValidSpecTest, GatherWithRoot) {
  v1::RunSpec spec = Allreduce();
  spec.set_operation("gather");
  spec.set_root(3);
  spec.set_check(true);
  spec.set_min_bytes(1024);
  spec.set_max_bytes(16 * kMiB);
  ExpectValid(spec);
}

TEST(ValidSpecTest, GradientReplayScenario) {
  v1::RunSpec spec;
  spec.set_scenario("gradient-replay");
  spec.set_model("bert-base");
  spec.set_bucket_bytes(25 * kMiB);
  spec.set_backend("nccl");
  spec.set_ranks(8);
  ExpectValid(spec);
}

TEST(ValidSpecTest, ParameterServerWithHalfPrecisionOnNcclChief) {
  v1::RunSpec spec;
  spec.set_operation("parameter-server");
  spec.set_strategy("nccl-chief");
  spec.set_dtype("float16");
  spec.set_ranks(4);
  ExpectValid(spec);
}

TEST(ValidSpecTest, LatencyWithExplicitPlacementAndSurroundings) {
  v1::RunSpec spec;
  spec.set_operation("latency");
  spec.set_ranks(2);
  spec.mutable_placement()->set_policy(v1::EXPLICIT);
  spec.mutable_placement()->add_workers("workers/a");
  spec.mutable_placement()->add_workers("b");
  spec.mutable_placement()->set_ranks_per_worker(1);
  spec.set_transport(v1::TCP);
  spec.set_mpi(v1::MPICH);
  (*spec.mutable_env())["UCX_TLS"] = "tcp";
  (*spec.mutable_env())["MPIR_CVAR_CH4_NETMOD"] = "ofi";
  (*spec.mutable_env())["MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"] = "recursive_doubling";
  (*spec.mutable_labels())["team"] = "infra";
  (*spec.mutable_labels())["run-kind_2"] = "";
  *spec.mutable_timeout() = Seconds(3600);
  spec.set_window(64);
  spec.set_warmup(-1);
  spec.mutable_time_budget()->set_nanos(500'000'000);
  ExpectValid(spec);
}

TEST(ValidSpecTest, DeviceBackendsAndMemoryKinds) {
  v1::RunSpec nccl = Allreduce(8);
  nccl.set_backend("nccl");
  nccl.set_memory("device");
  nccl.set_dtype("bfloat16");
  nccl.mutable_placement()->set_policy(v1::PACK);
  ExpectValid(nccl);

  v1::RunSpec copy = Allreduce(1);
  copy.set_operation("h2d");
  copy.set_memory("pinned");
  ExpectValid(copy);

  v1::RunSpec host_copy = Allreduce(1);
  host_copy.set_operation("h2h");
  host_copy.set_memory("interleave");
  ExpectValid(host_copy);

  v1::RunSpec gemm = Allreduce(1);
  gemm.set_operation("gemm");
  gemm.set_dtype("float64");
  ExpectValid(gemm);

  v1::RunSpec numa = Allreduce();
  numa.set_memory("numa:0");
  numa.set_dtype("all");
  numa.set_redop("all");
  numa.set_check(true);
  ExpectValid(numa);
}

TEST(ValidSpecTest, WhatTheCliBuildsFromEngineFlags) {
  absl::StatusOr<v1::RunSpec> spec =
      SpecFromEngineArgs({"allreduce", "-b", "8", "-e", "1M", "--check"});
  ASSERT_TRUE(spec.ok()) << spec.status();
  spec->set_ranks(4);
  ExpectValid(*spec);
}

}  // namespace
}  // namespace collbench
