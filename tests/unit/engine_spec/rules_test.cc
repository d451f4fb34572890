// SPDX-License-Identifier: Apache-2.0
// Every engine rule, table-driven: for the same input the service
// (ValidateRunSpec on a RunSpec) and the engine (collbench-rank's checks on
// the flags EngineArgs makes of that RunSpec, with the spec's rank count)
// give the same verdict and the same message. The one difference is stated
// here explicitly: the engine writes the text after its flag, the service
// after the RunSpec field path (kFlagToField).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/convert.h"
#include "api/validation.h"
#include "engine_spec/job_checks.h"
#include "engine_spec/options.h"
#include "engine_spec/scenarios.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

// collbench-rank's flag -> the RunSpec field path the service names. The
// rank count has no flag (mpirun's -np): the engine gives the text alone.
// An entry of --sizes is the list's index, as spec.sizes_bytes[i].
const std::map<std::string, std::string>& FlagToField() {
  static const auto* map = new std::map<std::string, std::string>{
      {"", "spec.ranks"},
      {"--backend", "spec.backend"},
      {"--dtype", "spec.dtype"},
      {"--sizes", "spec.sizes_bytes[i]"},
      {"--min-bytes", "spec.min_bytes"},
      {"--max-bytes", "spec.max_bytes"},
      {"--root", "spec.root"},
      {"--memory", "spec.memory"},
      {"--check", "spec.check"},
      {"--sync", "spec.sync"},
      {"--strategy", "spec.strategy"},
      {"--model", "spec.model"},
      {"--factor", "spec.factor"},
      {"--in-place", "spec.in_place"},
  };
  return *map;
}

// What collbench-rank does with its options before any communication
// (worker/engine/rank_main.cc): the scenario's rules, or the plan of an
// operation run; its error as it prints it.
absl::Status EngineVerdict(const EngineOptions& options, int nranks) {
  if (options.scenario == kParameterServer) return ValidateParameterServer(options, nranks);
  if (options.scenario == kGradientReplay) return ValidateGradientReplay(options, nranks);
  RunPlan plan;
  std::optional<RuleError> broken = PlanRun(options, nranks, &plan);
  return broken ? EngineError(*broken) : absl::OkStatus();
}

struct Rule {
  std::string name;
  std::function<void(v1::RunSpec*)> mutate;
  std::string flag;   // the engine's flag the message starts with ("" for ranks)
  int index = -1;     // for --sizes: the entry
};

v1::RunSpec Allreduce() {
  v1::RunSpec spec;
  spec.set_operation("allreduce");
  spec.set_ranks(4);
  return spec;
}

std::vector<Rule> Rules() {
  using S = v1::RunSpec*;
  return {
      {"RootOutOfRange",
       [](S s) {
         s->set_operation("gather");
         s->set_root(4);
       },
       "--root"},
      {"OddRanksForPairs",
       [](S s) {
         s->set_operation("latency");
         s->set_ranks(3);
       },
       ""},
      {"ObjectPathHasNoReduceScatter",
       [](S s) {
         s->set_operation("reduce_scatter");
         s->set_backend("mpi-object");
       },
       "--backend"},
      {"GemmFloatsOnly",
       [](S s) {
         s->set_operation("gemm");
         s->set_dtype("int32");
       },
       "--dtype"},
      {"SixteenBitFloatsOnlyOnNccl", [](S s) { s->set_dtype("bfloat16"); }, "--dtype"},
      {"ListedSizeBelowOneElement",
       [](S s) {
         s->add_sizes_bytes(8);
         s->add_sizes_bytes(2);
       },
       "--sizes", 1},
      {"SmallestSizeBelowOneElement",
       [](S s) {
         s->set_dtype("float64");
         s->set_min_bytes(4);
       },
       "--min-bytes"},
      // Sizes that are not whole elements are refused, never rounded
      // (issue 21, item 10: --sizes 7 became 4 bytes).
      {"ListedSizeNotWholeElements", [](S s) { s->add_sizes_bytes(7); }, "--sizes", 0},
      {"SmallestSizeNotWholeElements", [](S s) { s->set_min_bytes(6); }, "--min-bytes"},
      {"FactorMakesAPartialElement",
       [](S s) {
         s->set_min_bytes(8);
         s->set_factor(1.5);  // 8, 12, 18: 18 is 4.5 float32 elements
       },
       "--factor"},
      {"InPlaceWithoutAnInPlaceForm",
       [](S s) {
         s->set_operation("reduce_scatter");
         s->set_in_place(true);
       },
       "--in-place"},
      {"InPlaceOnAStagingBackend",
       [](S s) {
         s->set_backend("host-staged");
         s->set_in_place(true);
       },
       "--in-place"},
      {"InPlaceGatherOnNccl",
       [](S s) {
         s->set_operation("gather");
         s->set_backend("nccl");
         s->set_in_place(true);
       },
       "--in-place"},
      {"InPlaceScenario",
       [](S s) {
         s->set_operation("gradient-replay");
         s->set_in_place(true);
       },
       "--in-place"},
      {"SumNotExactAtThisRankCount",
       [](S s) {
         s->set_ranks(200);
         s->set_dtype("int8");
         s->set_check(true);
       },
       "--check"},
      {"BarrierDoesNotApplyToPointToPoint",
       [](S s) {
         s->set_operation("latency");
         s->set_sync(v1::SYNC_BARRIER);
       },
       "--sync"},
      {"DeviceMemoryOnAHostBackend", [](S s) { s->set_memory("device"); }, "--memory"},
      {"HostMemoryOnADeviceBackend",
       [](S s) {
         s->set_backend("nccl");
         s->set_memory("default");
       },
       "--memory"},
      {"DeviceMemoryForAHostCopy",
       [](S s) {
         s->set_operation("h2h");
         s->set_memory("device");
       },
       "--memory"},
      {"DeviceSideOfACopyIsNotNamed",
       [](S s) {
         s->set_operation("h2d");
         s->set_memory("device");
       },
       "--memory"},
      {"ParameterServerAlone",
       [](S s) {
         s->set_operation("parameter-server");
         s->set_ranks(1);
       },
       ""},
      {"ParameterServerBackendWithoutStrategy",
       [](S s) {
         s->set_operation("parameter-server");
         s->set_backend("host-staged");
       },
       "--backend"},
      {"ParameterServerSixteenBitNeedsNcclChief",
       [](S s) {
         s->set_operation("parameter-server");
         s->set_dtype("float16");
       },
       "--dtype"},
      {"ParameterServerIntCountLimit",
       [](S s) {
         s->set_operation("parameter-server");
         s->set_strategy("nccl-chief");
         s->set_ranks(5);
         s->set_max_bytes(2 * kGiB);
       },
       "--max-bytes"},
      {"ParameterServerElementWidth",
       [](S s) {
         s->set_operation("parameter-server");
         s->add_sizes_bytes(2);
       },
       "--sizes", 0},
      {"GradientReplayUnknownModel",
       [](S s) {
         s->set_operation("gradient-replay");
         s->set_model("gpt-5");
       },
       "--model"},
      {"GradientReplaySixteenBitNeedsNccl",
       [](S s) {
         s->set_operation("gradient-replay");
         s->set_dtype("float16");
       },
       "--dtype"},
      {"GradientReplaySumNotExact",
       [](S s) {
         s->set_operation("gradient-replay");
         s->set_ranks(200);
         s->set_dtype("int8");
         s->set_check(true);
       },
       "--check"},
  };
}

class RuleTest : public ::testing::TestWithParam<Rule> {};

TEST_P(RuleTest, ServiceAndEngineGiveOneVerdictInOneWording) {
  const Rule& rule = GetParam();
  v1::RunSpec spec = Allreduce();
  rule.mutate(&spec);

  absl::StatusOr<EngineOptions> options = ParseEngineArgs(EngineArgs(spec));
  ASSERT_TRUE(options.ok()) << options.status();
  const absl::Status engine = EngineVerdict(*options, spec.ranks());
  const absl::Status service = ValidateRunSpec(spec, ValidationLimits());

  ASSERT_EQ(engine.code(), absl::StatusCode::kInvalidArgument) << engine;
  ASSERT_EQ(service.code(), absl::StatusCode::kInvalidArgument) << service;
  // The engine: "<flag> <text>", or the text alone for the rank count.
  const std::string flag_prefix = rule.flag.empty() ? "" : rule.flag + " ";
  ASSERT_TRUE(absl::StartsWith(engine.message(), flag_prefix)) << engine;
  const std::string text(engine.message().substr(flag_prefix.size()));
  // The service: "<field path>: <text>", the same text.
  std::string field = FlagToField().at(rule.flag);
  if (rule.index >= 0) field = absl::StrCat("spec.sizes_bytes[", rule.index, "]");
  EXPECT_EQ(service.message(), absl::StrCat(field, ": ", text));
}

INSTANTIATE_TEST_SUITE_P(EveryRule, RuleTest, ::testing::ValuesIn(Rules()),
                         [](const ::testing::TestParamInfo<Rule>& info) {
                           return info.param.name;
                         });

// Sound specs pass both, including every combination of `all`, the byte
// sizes OSU starts from for operations that only move bytes, and in-place
// runs of the operations and backends that have them.
TEST(RuleTest, SoundSpecsPassBoth) {
  std::vector<v1::RunSpec> specs(12, Allreduce());
  specs[1].set_dtype("all");
  specs[1].set_redop("all");
  specs[2].set_backend("nccl");
  specs[2].set_dtype("all");
  specs[3].set_operation("gemm");
  specs[3].set_dtype("float64");
  specs[4].set_operation("parameter-server");
  specs[5].set_operation("gradient-replay");
  specs[5].set_check(true);
  specs[6].set_operation("latency");
  specs[6].set_min_bytes(1);
  specs[7].set_operation("bcast");
  specs[7].add_sizes_bytes(1);
  specs[7].add_sizes_bytes(7);
  specs[8].set_in_place(true);
  specs[8].set_check(true);
  specs[9].set_operation("allgather");
  specs[9].set_backend("nccl");
  specs[9].set_in_place(true);
  specs[10].set_operation("alltoall");
  specs[10].set_min_bytes(3);
  specs[10].set_factor(1.5);
  specs[10].set_in_place(true);
  specs[11].set_dtype("float64");
  specs[11].set_min_bytes(16);
  specs[11].set_max_bytes(1000);  // a bound only: 1000 is not run
  for (const v1::RunSpec& spec : specs) {
    absl::StatusOr<EngineOptions> options = ParseEngineArgs(EngineArgs(spec));
    ASSERT_TRUE(options.ok()) << options.status();
    EXPECT_TRUE(EngineVerdict(*options, spec.ranks()).ok()) << spec.ShortDebugString();
    EXPECT_TRUE(ValidateRunSpec(spec, ValidationLimits()).ok()) << spec.ShortDebugString();
  }
}

}  // namespace
}  // namespace collbench
