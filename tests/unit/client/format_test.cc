// SPDX-License-Identifier: Apache-2.0
// `collbench compare`'s table and CSV: the fastest is marked only where its
// win is significant (from the histograms), and the CSV names every run and
// gives ratios as numbers.
#include "client/format.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/histogram.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

// A result of `samples` iterations around `mean_ns`, spread by `spread_ns`.
v1::SizeResult Result(uint64_t bytes, uint64_t mean_ns, uint64_t spread_ns, int samples) {
  v1::SizeResult r;
  r.set_operation("allreduce");
  r.set_dtype("float32");
  r.set_redop("sum");
  r.set_bytes(bytes);
  uint64_t sum = 0;
  for (int i = 0; i < samples; ++i) {
    const uint64_t v = mean_ns - spread_ns + (2 * spread_ns * i) / (samples - 1);
    const int index = Histogram::IndexOf(v);
    (*r.mutable_histogram()->mutable_counts())[index] += 1;
    sum += v;
  }
  r.mutable_histogram()->set_sub_buckets(Histogram::kSubBuckets);
  r.set_avg_s(static_cast<double>(sum) / samples * 1e-9);
  return r;
}

RunWithResults Stored(const std::string& name, std::vector<v1::SizeResult> results) {
  RunWithResults run;
  run.run.set_name(name);
  run.results = std::move(results);
  return run;
}

// `show` says who launched a run: the trusted launcher, its one worker, or
// (--worker-launch=fallback) a worker of a run across workers.
TEST(ShowTest, NamesWhoLaunchedTheRun) {
  v1::Run run;
  run.set_name("runs/r1");
  run.mutable_spec()->set_operation("allreduce");
  run.add_hosts()->set_worker("workers/a");
  run.add_hosts()->set_worker("workers/b");
  run.set_launcher("launchers/lab");
  EXPECT_THAT(FormatRunResults(run, {}, OutputKind::kTable),
              HasSubstr("# launched by launchers/lab (the trusted launcher)\n"));
  run.set_launcher("workers/a");
  EXPECT_THAT(FormatRunResults(run, {}, OutputKind::kTable),
              HasSubstr("# launched by workers/a (a worker of the run: --worker-launch=fallback)"));
  run.mutable_hosts()->RemoveLast();
  EXPECT_THAT(FormatRunResults(run, {}, OutputKind::kTable),
              HasSubstr("# launched by workers/a (its one worker)"));
  run.clear_launcher();
  EXPECT_THAT(FormatRunResults(run, {}, OutputKind::kTable),
              ::testing::Not(HasSubstr("launched by")));
}

TEST(CompareTest, TheFastestIsMarkedOnlyWhereItsWinIsSignificant) {
  // At 8 B the two are 2% apart with a wide spread (not told apart); at
  // 1 MiB 40% apart with a narrow one.
  const std::vector<RunWithResults> runs = {
      Stored("runs/a", {Result(8, 10'000, 5'000, 200), Result(1 << 20, 1'400'000, 10'000, 200)}),
      Stored("runs/b", {Result(8, 9'800, 5'000, 200), Result(1 << 20, 1'000'000, 10'000, 200)})};
  const std::string table = FormatComparison(runs, OutputKind::kTable);
  EXPECT_THAT(table, HasSubstr("not told apart"));
  std::vector<std::string> lines = absl::StrSplit(table, '\n', absl::SkipEmpty());
  std::string small, large;
  for (const std::string& line : lines) {
    if (absl::StartsWith(line, "#") || line.find("allreduce") == std::string::npos) continue;
    (line.find("1048576") != std::string::npos ? large : small) = line;
  }
  ASSERT_FALSE(small.empty()) << table;
  ASSERT_FALSE(large.empty()) << table;
  EXPECT_TRUE(absl::EndsWith(small, "~")) << small;
  EXPECT_TRUE(absl::EndsWith(large, "[1]")) << large;
}

TEST(CompareTest, CsvNamesEveryRunAndGivesRatiosAsNumbers) {
  const std::vector<RunWithResults> runs = {
      Stored("runs/a", {Result(1 << 20, 1'400'000, 10'000, 200)}),
      Stored("runs/b", {Result(1 << 20, 1'000'000, 10'000, 200)})};
  const std::string csv = FormatComparison(runs, OutputKind::kCsv);
  std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << csv;
  EXPECT_EQ(lines[0], "run,operation,dtype,redop,bytes,avg_us,ratio_to_first,fastest");
  std::vector<std::string> a = absl::StrSplit(lines[1], ',');
  std::vector<std::string> b = absl::StrSplit(lines[2], ',');
  EXPECT_EQ(a[0], "runs/a");
  EXPECT_EQ(b[0], "runs/b");
  double ratio = 0;
  ASSERT_TRUE(absl::SimpleAtod(b[6], &ratio)) << b[6];
  EXPECT_NEAR(ratio, 1.0 / 1.4, 0.01);
  EXPECT_EQ(a[7], "0");
  EXPECT_EQ(b[7], "1");
}

}  // namespace
}  // namespace collbench
