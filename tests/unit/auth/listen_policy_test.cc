// SPDX-License-Identifier: Apache-2.0
// Fail closed: which listeners a coordinator may open with which tokens.
#include "server/auth/listen_policy.h"

#include <gtest/gtest.h>

namespace collbench {
namespace {

Authorizer Tokens(const char* text) {
  absl::StatusOr<Authorizer> parsed = Authorizer::FromText(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? *parsed : Authorizer();
}

std::vector<Listener> Grpc(const std::string& address) { return {{"--grpc-listen", address}}; }

TEST(ListenPolicy, LoopbackNeedsNoTokens) {
  for (const char* address : {"127.0.0.1:50051", "127.9.8.7:0", "localhost:50051", "[::1]:50051",
                              "unix:/tmp/collbench.sock"}) {
    EXPECT_TRUE(CheckListenPolicy(Grpc(address), Authorizer(), false).ok()) << address;
  }
  EXPECT_TRUE(CheckListenPolicy({{"--grpc-listen", "127.0.0.1:1"}, {"--http-listen", ""}},
                                Authorizer(), false)
                  .ok());
}

TEST(ListenPolicy, BeyondLoopbackWithoutTokensIsRefusedNamingTheListener) {
  for (const char* address : {"0.0.0.0:50051", ":50051", "[::]:50051", "10.0.0.5:50051",
                              "collbench.example:50051", "[::ffff:10.0.0.1]:1"}) {
    const absl::Status refused = CheckListenPolicy(Grpc(address), Authorizer(), false);
    EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << address;
    EXPECT_NE(refused.message().find(address), absl::string_view::npos) << refused;
    EXPECT_NE(refused.message().find("--tokens"), absl::string_view::npos) << refused;
    EXPECT_NE(refused.message().find("--insecure-no-auth"), absl::string_view::npos) << refused;
  }
  // The HTTP listener counts as much as the gRPC one.
  const absl::Status http =
      CheckListenPolicy({{"--grpc-listen", "127.0.0.1:50051"}, {"--http-listen", "0.0.0.0:8080"}},
                        Authorizer(), false);
  EXPECT_EQ(http.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(http.message().find("--http-listen 0.0.0.0:8080"), absl::string_view::npos) << http;
  // Only a worker token: the API is still open.
  EXPECT_FALSE(CheckListenPolicy(Grpc("0.0.0.0:1"), Tokens("worker w\n"), false).ok());
}

TEST(ListenPolicy, InsecureNoAuthOpensOnPurpose) {
  EXPECT_TRUE(CheckListenPolicy(Grpc("0.0.0.0:50051"), Authorizer(), true).ok());
}

TEST(ListenPolicy, ApiTokensNeedAWorkerCredential) {
  for (const char* address : {"0.0.0.0:50051", "127.0.0.1:50051"}) {
    const absl::Status refused =
        CheckListenPolicy(Grpc(address), Tokens("read r\noperator o\n"), false);
    EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << address;
    EXPECT_NE(refused.message().find("worker TOKEN"), absl::string_view::npos) << refused;
    EXPECT_NE(refused.message().find("--join-token-file"), absl::string_view::npos) << refused;
  }
  EXPECT_TRUE(CheckListenPolicy(Grpc("0.0.0.0:50051"), Tokens("read r\nworker w\n"), false).ok());
  Authorizer with_join = Tokens("operator o\n");
  with_join.Add(Role::kWorker, "w");
  EXPECT_TRUE(CheckListenPolicy(Grpc("0.0.0.0:50051"), with_join, false).ok());
}

TEST(ListenPolicy, LoopbackHosts) {
  for (const char* host : {"localhost", "LocalHost", "127.0.0.1", "127.255.255.254", "::1", "[::1]",
                           "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"", "0.0.0.0", "::", "128.0.0.1", "127.1", "localhost.evil.example",
                           "127.0.0.1.nip.io", "10.0.0.1", "::2", "[::1"}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

}  // namespace
}  // namespace collbench
