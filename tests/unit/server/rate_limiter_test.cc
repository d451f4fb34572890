// SPDX-License-Identifier: Apache-2.0
// The create-rate limiter (docs/design/security.md#admission-and-fairness): a token
// bucket per caller, driven by a fake clock.
#include "common/rate_limiter.h"

#include "gtest/gtest.h"

namespace collbench {
namespace {

constexpr absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

TEST(RateLimiterTest, BurstIsAdmittedAtOnceThenRefused) {
  RateLimiter limiter({/*per_second=*/10, /*burst=*/20});
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(limiter.Acquire("token-a", kStart), absl::ZeroDuration()) << "request " << i;
  }
  // The 21st waits for one token at 10/s: 100 ms.
  EXPECT_NEAR(absl::ToDoubleMilliseconds(limiter.Acquire("token-a", kStart)), 100, 1e-6);
}

TEST(RateLimiterTest, RefillsAtTheRateUpToTheBurst) {
  RateLimiter limiter({/*per_second=*/2, /*burst=*/3});
  for (int i = 0; i < 3; ++i) ASSERT_EQ(limiter.Acquire("a", kStart), absl::ZeroDuration());
  // Half a token after 250 ms: the wait is the other 250 ms.
  EXPECT_EQ(limiter.Acquire("a", kStart + absl::Milliseconds(250)), absl::Milliseconds(250));
  // One token after 500 ms, and only one.
  EXPECT_EQ(limiter.Acquire("a", kStart + absl::Milliseconds(500)), absl::ZeroDuration());
  EXPECT_GT(limiter.Acquire("a", kStart + absl::Milliseconds(500)), absl::ZeroDuration());
  // A long pause refills to the burst, never beyond it.
  const absl::Time later = kStart + absl::Hours(1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.Acquire("a", later), absl::ZeroDuration());
  EXPECT_EQ(limiter.Acquire("a", later), absl::Milliseconds(500));
}

TEST(RateLimiterTest, CallersHaveTheirOwnBuckets) {
  RateLimiter limiter({/*per_second=*/1, /*burst=*/2});
  ASSERT_EQ(limiter.Acquire("a", kStart), absl::ZeroDuration());
  ASSERT_EQ(limiter.Acquire("a", kStart), absl::ZeroDuration());
  EXPECT_EQ(limiter.Acquire("a", kStart), absl::Seconds(1));
  // "a" being out of tokens does not touch "b".
  EXPECT_EQ(limiter.Acquire("b", kStart), absl::ZeroDuration());
  EXPECT_EQ(limiter.Acquire("b", kStart), absl::ZeroDuration());
  EXPECT_EQ(limiter.Acquire("b", kStart), absl::Seconds(1));
}

TEST(RateLimiterTest, RefusalTakesNoToken) {
  RateLimiter limiter({/*per_second=*/1, /*burst=*/1});
  ASSERT_EQ(limiter.Acquire("a", kStart), absl::ZeroDuration());
  // Hammering while empty does not push the next token further out.
  for (int i = 0; i < 100; ++i) limiter.Acquire("a", kStart + absl::Milliseconds(i));
  EXPECT_EQ(limiter.Acquire("a", kStart + absl::Seconds(1)), absl::ZeroDuration());
}

TEST(RateLimiterTest, ZeroRateIsNoLimit) {
  RateLimiter limiter({/*per_second=*/0, /*burst=*/1});
  EXPECT_FALSE(limiter.enabled());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(limiter.Acquire("a", kStart), absl::ZeroDuration());
}

TEST(RateLimiterTest, IdleBucketsAreDroppedBeyondTheCap) {
  RateLimiter limiter({/*per_second=*/1, /*burst=*/1}, /*max_idle_buckets=*/10);
  for (int i = 0; i < 10; ++i) limiter.Acquire(std::to_string(i), kStart);
  EXPECT_EQ(limiter.bucket_count(), 10u);
  // A second later every bucket is full again, so a new caller makes room.
  limiter.Acquire("new", kStart + absl::Seconds(1));
  EXPECT_EQ(limiter.bucket_count(), 1u);
}

TEST(RateLimiterTest, ParsesRatesAsTheFlagTakesThem) {
  EXPECT_DOUBLE_EQ(*ParseRatePerSecond("10/s"), 10);
  EXPECT_DOUBLE_EQ(*ParseRatePerSecond("600/min"), 10);
  EXPECT_DOUBLE_EQ(*ParseRatePerSecond("3600/h"), 1);
  EXPECT_DOUBLE_EQ(*ParseRatePerSecond("2.5"), 2.5);
  EXPECT_DOUBLE_EQ(*ParseRatePerSecond("off"), 0);
  EXPECT_DOUBLE_EQ(*ParseRatePerSecond("0"), 0);
  EXPECT_FALSE(ParseRatePerSecond("ten/s").ok());
  EXPECT_FALSE(ParseRatePerSecond("10/day").ok());
  EXPECT_FALSE(ParseRatePerSecond("-1/s").ok());
  EXPECT_FALSE(ParseRatePerSecond("").ok());
}

}  // namespace
}  // namespace collbench
