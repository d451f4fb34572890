// SPDX-License-Identifier: Apache-2.0
// The /ui/ session table on a fake clock: random ids, expiry, revocation,
// the cap, and the login throttle.
#include "server/ui/ui_sessions.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace collbench {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

TEST(UiSessionsTest, IdsAreRandomAndLong) {
  UiSessions sessions;
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) ids.insert(sessions.Create(Role::kRead, kStart));
  EXPECT_EQ(ids.size(), 100u);
  for (const std::string& id : ids) {
    EXPECT_EQ(id.size(), 64u);  // 256 bits as hex
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  }
}

TEST(UiSessionsTest, ASessionLastsItsLifetime) {
  UiSessionOptions options;
  options.lifetime = absl::Hours(12);
  UiSessions sessions(options);
  const std::string id = sessions.Create(Role::kOperator, kStart);
  EXPECT_EQ(*sessions.Find(id, kStart + absl::Hours(11)), Role::kOperator);
  EXPECT_EQ(sessions.Find(id, kStart + absl::Hours(12)).status().code(),
            absl::StatusCode::kUnauthenticated);
  // Once expired it is gone, even if the clock went back.
  EXPECT_FALSE(sessions.Find(id, kStart).ok());
  EXPECT_EQ(sessions.size(), 0u);
}

TEST(UiSessionsTest, RevokeEndsOneSession) {
  UiSessions sessions;
  const std::string a = sessions.Create(Role::kRead, kStart);
  const std::string b = sessions.Create(Role::kRead, kStart);
  sessions.Revoke(a);
  sessions.Revoke("not-a-session");
  EXPECT_EQ(sessions.Find(a, kStart).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(sessions.Find(b, kStart).ok());
  EXPECT_FALSE(sessions.Find("", kStart).ok());
  // A prefix of a live id is no session.
  EXPECT_FALSE(sessions.Find(b.substr(0, 63), kStart).ok());
}

TEST(UiSessionsTest, TheTableIsCappedOldestFirst) {
  UiSessionOptions options;
  options.max_sessions = 3;
  UiSessions sessions(options);
  const std::string first = sessions.Create(Role::kRead, kStart);
  std::string last;
  for (int i = 1; i <= 3; ++i) last = sessions.Create(Role::kRead, kStart + absl::Seconds(i));
  EXPECT_EQ(sessions.size(), 3u);
  EXPECT_FALSE(sessions.Find(first, kStart + absl::Seconds(5)).ok());
  EXPECT_TRUE(sessions.Find(last, kStart + absl::Seconds(5)).ok());
}

TEST(UiSessionsTest, LoginsAreThrottledPerClientAndCounted) {
  UiSessionOptions options;
  options.login_burst = 3;
  options.login_per_minute = 6;  // one every 10 s
  UiSessions sessions(options);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sessions.AdmitLogin("peer 10.0.0.1", kStart), absl::ZeroDuration());
  }
  const absl::Duration wait = sessions.AdmitLogin("peer 10.0.0.1", kStart);
  EXPECT_EQ(wait, absl::Seconds(10));
  EXPECT_EQ(sessions.login_refusals(), 1);
  // Another client has its own bucket; the first refills with time.
  EXPECT_EQ(sessions.AdmitLogin("peer 10.0.0.2", kStart), absl::ZeroDuration());
  EXPECT_EQ(sessions.AdmitLogin("peer 10.0.0.1", kStart + absl::Seconds(10)), absl::ZeroDuration());
  EXPECT_GT(sessions.AdmitLogin("peer 10.0.0.1", kStart + absl::Seconds(10)), absl::ZeroDuration());
  EXPECT_EQ(sessions.login_refusals(), 2);
}

}  // namespace
}  // namespace collbench
