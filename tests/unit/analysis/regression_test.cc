// SPDX-License-Identifier: Apache-2.0
// The baseline comparison's statistics on synthetic histograms: equal
// distributions are "ok" at the 5% threshold in at least 95 of 100 seeded
// trials; a 10% slower candidate with enough samples is a "regression" in
// at least 95 of 100; and the rank test on a case worked out by hand.
#include "analysis/regression.h"

#include <cmath>
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

// `n` iteration times around `median_ns`, log-normally spread (3%), as a
// steady collective's samples look.
Histogram Samples(double median_ns, int n, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::lognormal_distribution<double> spread(std::log(median_ns), 0.03);
  Histogram h;
  for (int i = 0; i < n; ++i) h.Record(static_cast<uint64_t>(spread(random)));
  return h;
}

// How many of 100 seeded trials (2000 samples a side, a 10 us baseline)
// give `verdict` for a candidate around `candidate_median_ns`; each
// trial's ratio must sit inside its own interval.
int TrialsWithVerdict(double candidate_median_ns, const std::string& verdict) {
  int hits = 0;
  for (uint64_t trial = 0; trial < 100; ++trial) {
    const Histogram base = Samples(10'000, 2000, 2 * trial + 1);
    const Histogram cand = Samples(candidate_median_ns, 2000, 2 * trial + 2);
    CompareOptions options;
    options.seed = trial;
    absl::StatusOr<Comparison> c = CompareHistograms(base, cand, options);
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) continue;
    EXPECT_NEAR(c->ratio, candidate_median_ns / 10'000, 0.02);
    EXPECT_LE(c->ratio_low, c->ratio);
    EXPECT_GE(c->ratio_high, c->ratio);
    hits += c->verdict == verdict;
  }
  return hits;
}

TEST(RegressionTest, EqualDistributionsAreOkIn95Of100Trials) {
  EXPECT_GE(TrialsWithVerdict(10'000, "ok"), 95);
}

TEST(RegressionTest, ATenPercentShiftIsARegressionIn95Of100Trials) {
  EXPECT_GE(TrialsWithVerdict(11'000, "regression"), 95);
}

TEST(RegressionTest, SmallSignificantShiftsAreSlowerOrFasterNotRegressions) {
  const Histogram base = Samples(10'000, 20'000, 1);
  absl::StatusOr<Comparison> slower = CompareHistograms(base, Samples(10'300, 20'000, 2));
  ASSERT_TRUE(slower.ok());
  EXPECT_EQ(slower->verdict, "slower");
  absl::StatusOr<Comparison> faster = CompareHistograms(base, Samples(9'000, 20'000, 3));
  ASSERT_TRUE(faster.ok());
  EXPECT_EQ(faster->verdict, "faster");
}

TEST(RegressionTest, TooFewSamplesAreNotSignificant) {
  // A 10% shift seen in 3 samples each is no evidence.
  absl::StatusOr<Comparison> c =
      CompareHistograms(Samples(10'000, 3, 1), Samples(11'000, 3, 2));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->verdict, "ok");
}

// Three samples each, every one in a bucket of its own, the candidate's
// all above the baseline's: U = 9 of a possible 9, mean 4.5, variance
// 3 * 3 * 7 / 12 = 5.25; z = (9 - 4.5 - 0.5) / sqrt(5.25) = 1.7457,
// two-sided p = 0.0809.
TEST(RegressionTest, RankTestMatchesAHandWorkedCase) {
  Histogram a, b;
  for (uint64_t v : {1000, 2000, 3000}) a.Record(v);
  for (uint64_t v : {4000, 5000, 6000}) b.Record(v);
  EXPECT_NEAR(MannWhitneyP(a, b), 0.0809, 0.0005);
  EXPECT_NEAR(MannWhitneyP(b, a), 0.0809, 0.0005);
  // Identical samples: nothing tells them apart.
  EXPECT_NEAR(MannWhitneyP(a, a), 1.0, 1e-9);
}

TEST(RegressionTest, EmptyInputIsRefusedNamingTheSide) {
  Histogram empty;
  absl::StatusOr<Comparison> c = CompareHistograms(empty, Samples(1000, 10, 1));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), ::testing::HasSubstr("baseline"));
}

}  // namespace
}  // namespace collbench
