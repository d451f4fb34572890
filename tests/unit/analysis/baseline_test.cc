// SPDX-License-Identifier: Apache-2.0
// Baselines and checks: like is compared with like (a key that differs in
// any defining field is never compared, and is listed), a slowed
// configuration is named a regression, and the environment that changed
// is said.
#include "analysis/baseline.h"

#include <cmath>
#include <random>

#include "api/convert.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

v1::SizeResult Result(uint64_t bytes, double median_ns, uint64_t seed, int samples = 2000) {
  std::mt19937_64 random(seed);
  std::lognormal_distribution<double> spread(std::log(median_ns), 0.03);
  Histogram h;
  for (int i = 0; i < samples; ++i) h.Record(static_cast<uint64_t>(spread(random)));
  v1::SizeResult r;
  r.set_operation("allreduce");
  r.set_bytes(bytes);
  r.set_dtype("float32");
  r.set_redop("sum");
  *r.mutable_histogram() = HistogramToProto(h);
  return r;
}

RunWithResults MakeRun(const std::string& name, v1::Transport transport,
                   const std::vector<v1::SizeResult>& results) {
  RunWithResults r;
  r.run.set_name(name);
  r.run.set_state(v1::SUCCEEDED);
  r.run.mutable_spec()->set_operation("allreduce");
  r.run.mutable_spec()->set_ranks(2);
  r.run.mutable_spec()->set_transport(transport);
  r.run.mutable_spec()->mutable_placement()->set_policy(v1::SPREAD);
  (*r.run.mutable_spec()->mutable_labels())["workflow"] = name;  // filing, not configuration
  r.run.set_mpi_version("Open MPI 4.1.4");
  for (const char* worker : {"workers/a", "workers/b"}) r.run.add_hosts()->set_worker(worker);
  r.results = results;
  return r;
}

TEST(BaselineTest, ASlowedConfigurationIsARegressionAndTheRestOk) {
  const std::vector<BaselineEntry> baseline =
      BaselineFrom({MakeRun("runs/b", v1::TCP, {Result(8, 20'000, 1), Result(1024, 30'000, 2)})})
          .value();
  ASSERT_EQ(baseline.size(), 2u);
  const CheckResult check =
      Check(baseline, {MakeRun("runs/c", v1::TCP, {Result(8, 20'000, 3), Result(1024, 36'000, 4)})},
            CompareOptions());
  ASSERT_EQ(check.rows.size(), 2u);
  EXPECT_TRUE(check.regressed);
  EXPECT_EQ(check.rows[0].comparison.verdict, "ok");
  EXPECT_EQ(check.rows[1].comparison.verdict, "regression");
  EXPECT_THAT(KeyText(check.rows[1].key), HasSubstr("bytes=1024"));
  EXPECT_NEAR(check.rows[1].comparison.ratio, 1.2, 0.03);
  EXPECT_TRUE(check.only_baseline.empty());
  EXPECT_TRUE(check.only_candidate.empty());
}

TEST(BaselineTest, KeysThatDifferInAnyDefiningFieldAreNeverCompared) {
  const std::vector<BaselineEntry> baseline =
      BaselineFrom({MakeRun("runs/b", v1::TCP, {Result(8, 20'000, 1)})}).value();
  RunWithResults other_transport = MakeRun("runs/c", v1::SHM, {Result(8, 40'000, 2)});
  RunWithResults other_ranks = MakeRun("runs/d", v1::TCP, {Result(8, 40'000, 3)});
  other_ranks.run.mutable_spec()->set_ranks(4);
  RunWithResults other_dtype = MakeRun("runs/e", v1::TCP, {Result(8, 40'000, 4)});
  other_dtype.results[0].set_dtype("int8");
  RunWithResults other_sync = MakeRun("runs/f", v1::TCP, {Result(8, 40'000, 5)});
  other_sync.run.mutable_spec()->set_sync(v1::SYNC_NONE);
  const CheckResult check =
      Check(baseline, {other_transport, other_ranks, other_dtype, other_sync}, CompareOptions());
  EXPECT_TRUE(check.rows.empty());
  EXPECT_FALSE(check.regressed);
  EXPECT_EQ(check.only_baseline.size(), 1u);
  EXPECT_EQ(check.only_candidate.size(), 4u);
}

TEST(BaselineTest, AnAutoRunThatWentOverTcpMatchesATcpBaseline) {
  const std::vector<BaselineEntry> baseline =
      BaselineFrom({MakeRun("runs/b", v1::TCP, {Result(8, 20'000, 1)})}).value();
  RunWithResults automatic = MakeRun("runs/c", v1::AUTO, {Result(8, 20'000, 2)});
  automatic.run.set_effective_transport(v1::TCP);
  EXPECT_EQ(Check(baseline, {automatic}, CompareOptions()).rows.size(), 1u);
}

TEST(BaselineTest, TheEnvironmentThatChangedIsNamed) {
  const std::vector<BaselineEntry> baseline =
      BaselineFrom({MakeRun("runs/b", v1::TCP, {Result(8, 20'000, 1)})}).value();
  RunWithResults upgraded = MakeRun("runs/c", v1::TCP, {Result(8, 20'000, 2)});
  upgraded.run.set_mpi_version("Open MPI 4.1.5");
  upgraded.run.mutable_hosts(1)->set_worker("workers/c");
  const CheckResult check = Check(baseline, {upgraded}, CompareOptions());
  ASSERT_EQ(check.rows.size(), 1u);
  EXPECT_THAT(check.rows[0].environment,
              Contains("mpi_version: Open MPI 4.1.4 -> Open MPI 4.1.5"));
  EXPECT_THAT(check.rows[0].environment, Contains("workers: workers/a,workers/b -> workers/a,workers/c"));
}

TEST(BaselineTest, FailedRunsAndResultsWithoutHistogramsAreNotABaseline) {
  RunWithResults failed = MakeRun("runs/b", v1::TCP, {Result(8, 20'000, 1)});
  failed.run.set_state(v1::FAILED);
  v1::SizeResult bare;
  bare.set_bytes(8);
  absl::StatusOr<std::vector<BaselineEntry>> none =
      BaselineFrom({failed, MakeRun("runs/c", v1::TCP, {bare})});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace collbench
