// SPDX-License-Identifier: Apache-2.0
// The histogram's promises (docs/design/data-plane.md#histogram and
// docs/design/observability.md#histogram-buckets): log-linear buckets with 64
// sub-buckets per power of two from 1 ns to 2^40 ns, any quantile within 1%
// relative error, power-of-two edges that Prometheus `le` buckets can be filled
// from exactly, lossless merging and a sparse wire form.
#include "common/histogram.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace collbench {
namespace {

constexpr uint64_t kMax = Histogram::kMaxValueNs;
constexpr int kLastIndex = Histogram::kNumBuckets - 1;

uint64_t Pow2(int k) { return uint64_t{1} << k; }

// What the histogram stores for a raw sample: 0 counts as 1 ns, anything
// above 2^40 ns as 2^40 ns.
uint64_t Clamped(uint64_t value_ns) {
  return std::clamp<uint64_t>(value_ns, 1, kMax);
}

// The exact nearest-rank quantile of `sorted` for q = per_10000 / 10000: the
// smallest sample v such that at least ceil(q * n) samples are <= v. Integer
// arithmetic, so the rank is exact.
uint64_t ExactQuantile(const std::vector<uint64_t>& sorted, int per_10000) {
  const uint64_t n = sorted.size();
  uint64_t rank = (n * per_10000 + 9999) / 10000;
  rank = std::clamp<uint64_t>(rank, 1, n);
  return sorted[rank - 1];
}

// ---------------------------------------------------------------------------
// Bucket geometry.

TEST(HistogramGeometryTest, HasSixtyFourSubBucketsUpToTwoToTheForty) {
  EXPECT_EQ(Histogram::kSubBuckets, 64);
  EXPECT_EQ(Histogram::kMaxValueNs, Pow2(40));
  EXPECT_EQ(Histogram::LowerBound(0), 0u);
  EXPECT_EQ(Histogram::UpperBound(0), 1u);
  EXPECT_EQ(Histogram::UpperBound(kLastIndex), Pow2(40));
  EXPECT_EQ(Histogram::IndexOf(1), 0);
  EXPECT_EQ(Histogram::IndexOf(Pow2(40)), kLastIndex);
}

TEST(HistogramGeometryTest, EveryBucketIsRightClosedAndContiguous) {
  for (int i = 0; i < Histogram::kNumBuckets; ++i) {
    SCOPED_TRACE(i);
    const uint64_t lo = Histogram::LowerBound(i);
    const uint64_t hi = Histogram::UpperBound(i);
    ASSERT_LT(lo, hi);
    // (lo, hi]: the first and last integer inside map to i, lo itself does not.
    EXPECT_EQ(Histogram::IndexOf(lo + 1), i);
    EXPECT_EQ(Histogram::IndexOf(hi), i);
    if (i > 0) {
      EXPECT_EQ(Histogram::IndexOf(lo), i - 1);
      EXPECT_EQ(lo, Histogram::UpperBound(i - 1)) << "gap or overlap";
    }
    if (hi < kMax) EXPECT_EQ(Histogram::IndexOf(hi + 1), i + 1);
  }
}

TEST(HistogramGeometryTest, BucketsBelowSixtyFourNsAreOneNsWide) {
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(Histogram::LowerBound(i), static_cast<uint64_t>(i));
    EXPECT_EQ(Histogram::UpperBound(i), static_cast<uint64_t>(i) + 1);
    EXPECT_EQ(Histogram::IndexOf(i + 1), i);
  }
}

TEST(HistogramGeometryTest, BucketsAboveSixtyFourNsAreAtMostOneSixtyFourthWide) {
  for (int i = 64; i < Histogram::kNumBuckets; ++i) {
    const uint64_t lo = Histogram::LowerBound(i);
    const uint64_t width = Histogram::UpperBound(i) - lo;
    EXPECT_GE(lo, 64u) << i;
    EXPECT_LE(width * 64, lo) << "bucket " << i << " (" << lo << ", "
                              << lo + width << "]";
  }
}

// The guarantee behind "relative error of any quantile under 1%": the value
// a bucket answers with is within 1% of every integer the bucket can hold.
TEST(HistogramGeometryTest, BucketMidpointIsWithinOnePercentOfEveryValueInIt) {
  for (int i = 0; i < Histogram::kNumBuckets; ++i) {
    const double first = static_cast<double>(Histogram::LowerBound(i) + 1);
    const double last = static_cast<double>(Histogram::UpperBound(i));
    const double mid = (first + last) / 2;
    EXPECT_LT((mid - first) / first, 0.01) << i;
    EXPECT_LT((last - mid) / last, 0.01) << i;
  }
}

TEST(HistogramGeometryTest, EveryPowerOfTwoIsExactlyABucketUpperEdge) {
  for (int k = 0; k <= Histogram::kMaxExponent; ++k) {
    SCOPED_TRACE(k);
    const int index = Histogram::IndexOfPowerOfTwoEdge(k);
    ASSERT_GE(index, 0);
    ASSERT_LT(index, Histogram::kNumBuckets);
    EXPECT_EQ(Histogram::UpperBound(index), Pow2(k));
    EXPECT_EQ(Histogram::IndexOf(Pow2(k)), index);
    if (k < Histogram::kMaxExponent) {
      EXPECT_EQ(Histogram::IndexOf(Pow2(k) + 1), index + 1);
    }
  }
}

TEST(HistogramGeometryTest, NumberOfBucketsCoversTheWholeRange) {
  // 64 one-ns buckets, then 64 per power of two for 2^6 .. 2^40.
  EXPECT_EQ(Histogram::kNumBuckets, 64 + 34 * 64);
  EXPECT_EQ(Histogram::IndexOfPowerOfTwoEdge(40), kLastIndex);
}

// ---------------------------------------------------------------------------
// Recording, extremes and clamping.

TEST(HistogramTest, EmptyHistogramAnswersZero) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.sum_ns(), 0u);
  EXPECT_EQ(h.min_ns(), 0u);
  EXPECT_EQ(h.max_ns(), 0u);
  EXPECT_EQ(h.clamped(), 0u);
  EXPECT_EQ(h.mean_ns(), 0.0);
  EXPECT_EQ(h.QuantileNs(0.5), 0.0);
  EXPECT_EQ(h.CountAtOrBelowPowerOfTwo(40), 0u);
  EXPECT_TRUE(h.Sparse().empty());
}

TEST(HistogramTest, KeepsExactCountSumMinMaxAndMean) {
  Histogram h;
  for (uint64_t v : {1000u, 3u, 250000u, 77u}) h.Record(v);
  EXPECT_EQ(h.count(), 4u);
  EXPECT_EQ(h.sum_ns(), 1000u + 3u + 250000u + 77u);
  EXPECT_EQ(h.min_ns(), 3u);
  EXPECT_EQ(h.max_ns(), 250000u);
  EXPECT_DOUBLE_EQ(h.mean_ns(), (1000.0 + 3 + 250000 + 77) / 4);
  EXPECT_EQ(h.clamped(), 0u);
}

TEST(HistogramTest, ZeroIsRecordedAsOneNanosecond) {
  Histogram h;
  h.Record(0);
  EXPECT_EQ(h.count(), 1u);
  EXPECT_EQ(h.bucket_count(0), 1u);
  EXPECT_EQ(h.min_ns(), 1u);
  EXPECT_EQ(h.max_ns(), 1u);
  EXPECT_EQ(h.sum_ns(), 1u);
  EXPECT_EQ(h.clamped(), 0u);
  EXPECT_EQ(h.QuantileNs(0.5), 1.0);
}

TEST(HistogramTest, ValuesAboveTwoToTheFortyAreClampedAndCounted) {
  Histogram h;
  h.Record(kMax);      // exactly the top: not clamped
  h.Record(kMax + 1);  // clamped
  h.Record(std::numeric_limits<uint64_t>::max());  // clamped
  EXPECT_EQ(h.count(), 3u);
  EXPECT_EQ(h.clamped(), 2u);
  EXPECT_EQ(h.max_ns(), kMax);
  EXPECT_EQ(h.min_ns(), kMax);
  EXPECT_EQ(h.sum_ns(), 3 * kMax);
  EXPECT_EQ(h.bucket_count(kLastIndex), 3u);
  EXPECT_EQ(h.QuantileNs(1.0), static_cast<double>(kMax));
  EXPECT_EQ(h.CountAtOrBelowPowerOfTwo(40), 3u);
  EXPECT_EQ(h.CountAtOrBelowPowerOfTwo(39), 0u);
}

TEST(HistogramTest, RecordManyEqualsRepeatedRecord) {
  Histogram many;
  Histogram one_by_one;
  const std::vector<std::pair<uint64_t, uint64_t>> samples = {
      {0, 3}, {5, 2}, {64, 1}, {65, 4}, {123456789, 7}, {kMax + 5, 2}, {9, 0}};
  for (const auto& [value, count] : samples) {
    many.RecordMany(value, count);
    for (uint64_t i = 0; i < count; ++i) one_by_one.Record(value);
  }
  EXPECT_EQ(many, one_by_one);
  EXPECT_EQ(many.clamped(), one_by_one.clamped());
  EXPECT_EQ(many.count(), 19u);
}

TEST(HistogramTest, ClearEmptiesEverything) {
  Histogram h;
  h.Record(42);
  h.Record(kMax + 1);
  h.Clear();
  EXPECT_EQ(h, Histogram());
  EXPECT_EQ(h.clamped(), 0u);
  EXPECT_EQ(h.min_ns(), 0u);
  h.Record(7);
  EXPECT_EQ(h.min_ns(), 7u);
}

TEST(HistogramTest, QuantileZeroAndOneAreTheExtremesWithinOnePercent) {
  Histogram h;
  for (uint64_t v : {1001u, 5003u, 70001u, 999999u}) h.Record(v);
  EXPECT_NEAR(h.QuantileNs(0.0), 1001.0, 10.01);
  EXPECT_NEAR(h.QuantileNs(1.0), 999999.0, 9999.99);
  // Answers never leave the exact [min, max].
  EXPECT_GE(h.QuantileNs(0.0), 1001.0);
  EXPECT_LE(h.QuantileNs(1.0), 999999.0);
}

TEST(HistogramTest, QuantilesOfASingleSampleAreThatSample) {
  Histogram h;
  h.Record(123457);
  for (double q : {0.0, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    EXPECT_EQ(h.QuantileNs(q), 123457.0) << q;
  }
}

// ---------------------------------------------------------------------------
// Quantile accuracy against the exact nearest-rank quantile.

struct Distribution {
  std::string name;
  std::function<uint64_t(std::mt19937_64&)> draw;
};

std::vector<Distribution> Distributions() {
  return {
      {"LogUniform100nsTo10ms",
       [](std::mt19937_64& rng) {
         std::uniform_real_distribution<double> log_ns(std::log(100.0),
                                                       std::log(1e7));
         return static_cast<uint64_t>(std::exp(log_ns(rng)));
       }},
      {"UniformOneToTenMs",
       [](std::mt19937_64& rng) {
         return std::uniform_int_distribution<uint64_t>(1'000'000,
                                                        10'000'000)(rng);
       }},
      {"LogNormalAround20us",
       [](std::mt19937_64& rng) {
         std::lognormal_distribution<double> d(std::log(20000.0), 0.5);
         return static_cast<uint64_t>(d(rng));
       }},
      {"HeavyTailedPareto",
       [](std::mt19937_64& rng) {
         // Pareto(alpha 1.1, scale 1 us), which reaches the clamp sometimes.
         std::uniform_real_distribution<double> u(0.0, 1.0);
         const double x = 1000.0 / std::pow(1.0 - u(rng), 1.0 / 1.1);
         return x >= 1e18 ? uint64_t{1'000'000'000'000'000'000}
                          : static_cast<uint64_t>(x);
       }},
      {"BelowSixtyFourNs",
       [](std::mt19937_64& rng) {
         return std::uniform_int_distribution<uint64_t>(0, 63)(rng);
       }},
      {"NearTwoToTheForty",
       [](std::mt19937_64& rng) {
         return std::uniform_int_distribution<uint64_t>(kMax - Pow2(36),
                                                        kMax)(rng);
       }},
      {"BimodalCacheHitOrMiss",
       [](std::mt19937_64& rng) {
         std::normal_distribution<double> fast(800.0, 40.0);
         std::normal_distribution<double> slow(120000.0, 9000.0);
         const bool miss = std::bernoulli_distribution(0.03)(rng);
         return static_cast<uint64_t>(std::max(1.0, miss ? slow(rng) : fast(rng)));
       }},
      {"FewDistinctValues",
       [](std::mt19937_64& rng) {
         static constexpr uint64_t kValues[] = {70, 129, 4097, 65535, 1u << 20};
         return kValues[std::uniform_int_distribution<int>(0, 4)(rng)];
       }},
  };
}

// Names the distribution in test output instead of dumping its bytes.
void PrintTo(const Distribution& distribution, std::ostream* os) {
  *os << distribution.name;
}

class HistogramQuantileTest
    : public testing::TestWithParam<std::tuple<Distribution, int>> {};

TEST_P(HistogramQuantileTest, QuantilesWithinOnePercentOfExactNearestRank) {
  const auto& [distribution, n] = GetParam();
  std::mt19937_64 rng(20240611 + n);
  std::vector<uint64_t> samples;
  samples.reserve(n);
  Histogram h;
  for (int i = 0; i < n; ++i) {
    const uint64_t v = distribution.draw(rng);
    h.Record(v);
    samples.push_back(Clamped(v));
  }
  std::sort(samples.begin(), samples.end());

  // p50, p90, p99, p99.9 and a few in between, in parts per 10000.
  for (int per_10000 : {1, 100, 2500, 5000, 7500, 9000, 9500, 9900, 9990, 9999}) {
    const double exact = static_cast<double>(ExactQuantile(samples, per_10000));
    const double got = h.QuantileNs(per_10000 / 10000.0);
    EXPECT_LE(std::abs(got - exact), 0.01 * exact)
        << "q=" << per_10000 / 10000.0 << " exact=" << exact << " got=" << got;
  }
  // q = 0 and q = 1 are the extremes, within 1% and never outside them.
  const double min = static_cast<double>(samples.front());
  const double max = static_cast<double>(samples.back());
  EXPECT_GE(h.QuantileNs(0.0), min);
  EXPECT_LE(h.QuantileNs(0.0), min * 1.01);
  EXPECT_LE(h.QuantileNs(1.0), max);
  EXPECT_GE(h.QuantileNs(1.0), max * 0.99);
  EXPECT_EQ(h.min_ns(), samples.front());
  EXPECT_EQ(h.max_ns(), samples.back());
}

INSTANTIATE_TEST_SUITE_P(
    DistributionsAndSampleCounts, HistogramQuantileTest,
    testing::Combine(testing::ValuesIn(Distributions()),
                     testing::Values(1, 2, 3, 7, 10, 99, 100, 101, 1000, 1001,
                                     200000)),
    [](const testing::TestParamInfo<HistogramQuantileTest::ParamType>& info) {
      return std::get<0>(info.param).name + "_" +
             std::to_string(std::get<1>(info.param));
    });

// Small sample counts are where a floating-point rank (ceil(q * n)) can land
// one sample off; check every q in steps of 1% for every n up to 200.
TEST(HistogramTest, NearestRankIsExactForEveryPercentAndSmallCount) {
  for (int n = 1; n <= 200; ++n) {
    Histogram h;
    std::vector<uint64_t> samples;
    // Widely spaced values so that one rank off is far more than 1%.
    for (int i = 1; i <= n; ++i) {
      const uint64_t v = 1000 * uint64_t(i) * uint64_t(i);
      h.Record(v);
      samples.push_back(v);
    }
    for (int percent = 0; percent <= 100; ++percent) {
      const double exact = static_cast<double>(ExactQuantile(samples, percent * 100));
      const double got = h.QuantileNs(percent / 100.0);
      ASSERT_LE(std::abs(got - exact), 0.01 * exact)
          << "n=" << n << " q=" << percent / 100.0 << " exact=" << exact
          << " got=" << got;
    }
  }
}

// ---------------------------------------------------------------------------
// Prometheus buckets: samples <= 2^k ns, exact.

TEST(HistogramTest, CountAtOrBelowPowerOfTwoIsExact) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> samples;
  // Values exactly on, just below and just above every edge, plus 0 and
  // values beyond the top.
  for (int k = 0; k <= Histogram::kMaxExponent; ++k) {
    samples.push_back(Pow2(k));
    samples.push_back(Pow2(k) + 1);
    samples.push_back(Pow2(k) - 1);
  }
  samples.push_back(kMax + 1);
  samples.push_back(std::numeric_limits<uint64_t>::max());
  std::uniform_int_distribution<int> exponent(0, 41);
  for (int i = 0; i < 50000; ++i) {
    const int e = exponent(rng);
    samples.push_back(std::uniform_int_distribution<uint64_t>(0, Pow2(e))(rng));
  }
  Histogram h;
  for (uint64_t v : samples) h.Record(v);

  for (int k = 0; k <= Histogram::kMaxExponent; ++k) {
    const uint64_t exact = std::count_if(
        samples.begin(), samples.end(),
        [k](uint64_t v) { return Clamped(v) <= Pow2(k); });
    EXPECT_EQ(h.CountAtOrBelowPowerOfTwo(k), exact) << "le=2^" << k;
  }
  EXPECT_EQ(h.CountAtOrBelowPowerOfTwo(40), samples.size());
}

// ---------------------------------------------------------------------------
// Merging.

TEST(HistogramTest, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(99);
  std::lognormal_distribution<double> latency(std::log(50000.0), 1.2);
  Histogram all;
  std::vector<Histogram> parts(4);
  for (int i = 0; i < 100000; ++i) {
    uint64_t v = static_cast<uint64_t>(latency(rng));
    if (i % 10007 == 0) v = kMax + 17;  // a few clamped samples too
    if (i % 10009 == 0) v = 0;
    all.Record(v);
    parts[i % 3].Record(v);  // parts[3] stays empty
  }
  Histogram merged;
  for (const Histogram& part : parts) merged.Merge(part);

  EXPECT_EQ(merged, all);
  EXPECT_EQ(merged.count(), all.count());
  EXPECT_EQ(merged.sum_ns(), all.sum_ns());
  EXPECT_EQ(merged.min_ns(), all.min_ns());
  EXPECT_EQ(merged.max_ns(), all.max_ns());
  EXPECT_EQ(merged.clamped(), all.clamped());
  for (double q : {0.0, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    EXPECT_EQ(merged.QuantileNs(q), all.QuantileNs(q)) << q;
  }
  for (int k = 0; k <= Histogram::kMaxExponent; ++k) {
    EXPECT_EQ(merged.CountAtOrBelowPowerOfTwo(k), all.CountAtOrBelowPowerOfTwo(k));
  }
}

TEST(HistogramTest, MergingAnEmptyHistogramChangesNothing) {
  Histogram h;
  h.Record(500);
  h.Record(90000);
  const Histogram before = h;
  h.Merge(Histogram());
  EXPECT_EQ(h, before);
  EXPECT_EQ(h.min_ns(), 500u);

  Histogram empty;
  empty.Merge(before);
  EXPECT_EQ(empty, before);
  EXPECT_EQ(empty.min_ns(), 500u);
  EXPECT_EQ(empty.max_ns(), 90000u);
}

// ---------------------------------------------------------------------------
// Sparse wire form.

Histogram SampleHistogram() {
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> latency(std::log(3000.0), 2.0);
  Histogram h;
  for (int i = 0; i < 20000; ++i) h.Record(static_cast<uint64_t>(latency(rng)));
  h.Record(0);
  h.Record(kMax);
  return h;
}

TEST(HistogramSparseTest, ListsOnlyNonEmptyBucketsInIncreasingOrder) {
  Histogram h;
  h.Record(1);
  h.RecordMany(1000, 5);
  h.Record(65);
  const auto sparse = h.Sparse();
  ASSERT_EQ(sparse.size(), 3u);
  EXPECT_EQ(sparse[0], std::make_pair(0, uint64_t{1}));
  EXPECT_EQ(sparse[1], std::make_pair(Histogram::IndexOf(65), uint64_t{1}));
  EXPECT_EQ(sparse[2], std::make_pair(Histogram::IndexOf(1000), uint64_t{5}));
}

TEST(HistogramSparseTest, RoundTripKeepsEveryBucketCount) {
  const Histogram h = SampleHistogram();
  const auto sparse = h.Sparse();
  EXPECT_TRUE(std::is_sorted(sparse.begin(), sparse.end()));
  auto back = Histogram::FromSparse(sparse);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->count(), h.count());
  for (int i = 0; i < Histogram::kNumBuckets; ++i) {
    ASSERT_EQ(back->bucket_count(i), h.bucket_count(i)) << i;
  }
  for (int k = 0; k <= Histogram::kMaxExponent; ++k) {
    EXPECT_EQ(back->CountAtOrBelowPowerOfTwo(k), h.CountAtOrBelowPowerOfTwo(k));
  }
  EXPECT_EQ(back->Sparse(), sparse);
}

TEST(HistogramSparseTest, WithoutExactStatsExtremesAreBucketEdges) {
  Histogram h;
  h.Record(1000);
  h.Record(50000);
  auto back = Histogram::FromSparse(h.Sparse());
  ASSERT_TRUE(back.ok()) << back.status();
  const int lo_index = Histogram::IndexOf(1000);
  const int hi_index = Histogram::IndexOf(50000);
  EXPECT_EQ(back->min_ns(), Histogram::LowerBound(lo_index) + 1);
  EXPECT_EQ(back->max_ns(), Histogram::UpperBound(hi_index));
  // The estimated sum is within the 1% the buckets promise.
  EXPECT_NEAR(static_cast<double>(back->sum_ns()), 51000.0, 510.0);
  EXPECT_NEAR(back->QuantileNs(0.5), 1000.0, 10.0);
}

TEST(HistogramSparseTest, WithExactStatsRoundTripIsEqual) {
  const Histogram h = SampleHistogram();
  auto back = Histogram::FromSparse(h.Sparse());
  ASSERT_TRUE(back.ok()) << back.status();
  back->SetExactStats(h.sum_ns(), h.min_ns(), h.max_ns());
  EXPECT_EQ(*back, h);
  for (double q : {0.0, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    EXPECT_EQ(back->QuantileNs(q), h.QuantileNs(q)) << q;
  }
}

TEST(HistogramSparseTest, EmptyRoundTrip) {
  auto back = Histogram::FromSparse({});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, Histogram());
  back->SetExactStats(0, 0, 0);
  EXPECT_EQ(*back, Histogram());
}

TEST(HistogramSparseTest, ZeroCountsAreIgnored) {
  auto back = Histogram::FromSparse({{5, 0}, {100, 2}});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->count(), 2u);
  EXPECT_EQ(back->Sparse().size(), 1u);
}

TEST(HistogramSparseTest, RejectsIndexesOutsideTheBuckets) {
  for (int bad : {-1, Histogram::kNumBuckets, Histogram::kNumBuckets + 1,
                  std::numeric_limits<int>::max(), std::numeric_limits<int>::min()}) {
    auto h = Histogram::FromSparse({{0, 1}, {bad, 1}});
    ASSERT_FALSE(h.ok()) << bad;
    EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(h.status().message().find(std::to_string(bad)), std::string::npos)
        << h.status();
  }
  EXPECT_TRUE(Histogram::FromSparse({{kLastIndex, 1}}).ok());
}

}  // namespace
}  // namespace collbench
