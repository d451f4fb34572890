// SPDX-License-Identifier: Apache-2.0
// `collbench run`'s flags into a RunRequest (client/run_flags).
#include "client/run_flags.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace collbench {
namespace {

using ::testing::HasSubstr;

TEST(RunFlagsTest, ServiceAndEngineFlagsLandInTheSpec) {
  absl::StatusOr<RunRequest> r =
      ParseRunFlags({"allreduce", "-b", "8", "-e", "64M", "--check", "--ranks", "4",
                     "--placement", "spread", "--transport", "tcp", "--watch"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->spec.operation(), "allreduce");
  EXPECT_EQ(r->spec.min_bytes(), 8u);
  EXPECT_EQ(r->spec.max_bytes(), uint64_t{64} << 20);
  EXPECT_TRUE(r->spec.check());
  EXPECT_EQ(r->spec.ranks(), 4);
  EXPECT_TRUE(r->watch);
}

TEST(RunFlagsTest, TimeoutKeepsFractionsOfASecond) {
  absl::StatusOr<RunRequest> r = ParseRunFlags({"bcast", "--timeout", "90.25s"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->spec.timeout().seconds(), 90);
  EXPECT_EQ(r->spec.timeout().nanos(), 250'000'000);
  r = ParseRunFlags({"bcast", "--timeout", "10m"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->spec.timeout().seconds(), 600);
  EXPECT_EQ(r->spec.timeout().nanos(), 0);
}

// Found by the run_flags fuzzer: a timeout beyond int64 seconds was
// converted anyway (undefined behaviour; UBSan stops there).
TEST(RunFlagsTest, RejectsATimeoutBeyondTheLimit) {
  absl::StatusOr<RunRequest> r =
      ParseRunFlags({"bcast", "--timeout", std::string(83, '6') + "m"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("--timeout"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("longer than the limit of 86400s"));
  EXPECT_FALSE(ParseRunFlags({"bcast", "--timeout", "25h"}).ok());
  EXPECT_TRUE(ParseRunFlags({"bcast", "--timeout", "24h"}).ok());
}

}  // namespace
}  // namespace collbench
