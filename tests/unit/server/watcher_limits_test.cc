// SPDX-License-Identifier: Apache-2.0
// WatcherLimits: the total and per-client bounds, what a refusal says and
// carries, and places given back when a slot goes.
#include "server/core/watcher_limits.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/core/admission.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

TEST(WatcherLimitsTest, PerClientLimitRefusesTheNextOfThatClientOnly) {
  WatcherLimits limits(WatcherLimitOptions{.max_total = 10, .max_per_client = 2});
  std::vector<std::unique_ptr<WatcherSlot>> held;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<std::unique_ptr<WatcherSlot>> slot = limits.Acquire("token 1");
    ASSERT_TRUE(slot.ok()) << slot.status();
    held.push_back(*std::move(slot));
  }
  absl::StatusOr<std::unique_ptr<WatcherSlot>> refused = limits.Acquire("token 1");
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("--max-watchers-per-client"));
  EXPECT_THAT(refused.status().message(), HasSubstr("token 1"));
  ASSERT_TRUE(RetryAfterSeconds(refused.status()).has_value());
  EXPECT_GE(*RetryAfterSeconds(refused.status()), 1);
  EXPECT_TRUE(limits.Acquire("token 2").ok());  // another client
  EXPECT_EQ(limits.rejections().per_client, 1);
  EXPECT_EQ(limits.rejections().total, 0);
  held.pop_back();  // one closes: room again
  EXPECT_TRUE(limits.Acquire("token 1").ok());
}

TEST(WatcherLimitsTest, TotalLimitRefusesEveryClient) {
  WatcherLimits limits(WatcherLimitOptions{.max_total = 3, .max_per_client = 0});
  std::vector<std::unique_ptr<WatcherSlot>> held;
  for (const char* client : {"a", "b", "c"}) held.push_back(*limits.Acquire(client));
  EXPECT_EQ(limits.open(), 3);
  absl::StatusOr<std::unique_ptr<WatcherSlot>> refused = limits.Acquire("d");
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("--max-watchers)"));
  EXPECT_EQ(limits.rejections().total, 1);
  held.clear();
  EXPECT_EQ(limits.open(), 0);
  EXPECT_TRUE(limits.Acquire("d").ok());
}

TEST(WatcherLimitsTest, ZeroMeansNoLimit) {
  WatcherLimits limits(WatcherLimitOptions{.max_total = 0, .max_per_client = 0});
  std::vector<std::unique_ptr<WatcherSlot>> held;
  for (int i = 0; i < 1000; ++i) {
    absl::StatusOr<std::unique_ptr<WatcherSlot>> slot = limits.Acquire("");
    ASSERT_TRUE(slot.ok());
    held.push_back(*std::move(slot));
  }
  EXPECT_EQ(limits.open(), 1000);
}

}  // namespace
}  // namespace collbench
