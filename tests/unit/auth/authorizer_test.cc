// SPDX-License-Identifier: Apache-2.0
#include "server/auth/authorizer.h"

#include <gtest/gtest.h>

#include <string>

namespace collbench {
namespace {

constexpr char kTokens[] = R"(# roles and tokens
read      r-1
operator  o-1

worker    w-1
worker	w-2
)";

Authorizer Parse(const char* text) {
  absl::StatusOr<Authorizer> parsed = Authorizer::FromText(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? *parsed : Authorizer();
}

TEST(Authorizer, WithoutTokensEverythingIsAllowed) {
  Authorizer open;
  EXPECT_TRUE(open.Check("", Role::kOperator).ok());
  EXPECT_TRUE(open.CheckToken("", Role::kWorker).ok());
}

TEST(Authorizer, ReadTokenReadsButMayNotOperate) {
  Authorizer auth = Parse(kTokens);
  EXPECT_TRUE(auth.Check("Bearer r-1", Role::kRead).ok());
  const absl::Status denied = auth.Check("Bearer r-1", Role::kOperator);
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(denied.message().find("operator"), absl::string_view::npos) << denied;
}

TEST(Authorizer, OperatorTokenDoesBoth) {
  Authorizer auth = Parse(kTokens);
  EXPECT_TRUE(auth.Check("Bearer o-1", Role::kRead).ok());
  EXPECT_TRUE(auth.Check("bearer o-1", Role::kOperator).ok());
  EXPECT_EQ(auth.Check("Bearer o-1", Role::kWorker).code(), absl::StatusCode::kPermissionDenied);
}

TEST(Authorizer, MissingMalformedOrUnknownTokensAreUnauthenticated) {
  Authorizer auth = Parse(kTokens);
  for (const char* header : {"", "Bearer", "Bearer ", "Basic r-1", "r-1", "Bearer r-2"}) {
    EXPECT_EQ(auth.Check(header, Role::kRead).code(), absl::StatusCode::kUnauthenticated)
        << "'" << header << "'";
  }
}

TEST(Authorizer, WorkerTokensJoinOnly) {
  Authorizer auth = Parse(kTokens);
  EXPECT_TRUE(auth.CheckToken("w-1", Role::kWorker).ok());
  EXPECT_TRUE(auth.CheckToken("w-2", Role::kWorker).ok());
  EXPECT_EQ(auth.CheckToken("w-3", Role::kWorker).code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.Check("Bearer w-1", Role::kRead).code(), absl::StatusCode::kPermissionDenied);
}

TEST(Authorizer, ApiAndJoiningAreProtectedSeparately) {
  Authorizer join_only;
  join_only.Add(Role::kWorker, "w");
  EXPECT_TRUE(join_only.Protects(Role::kWorker));
  EXPECT_FALSE(join_only.Protects(Role::kRead));
  EXPECT_TRUE(join_only.Check("", Role::kOperator).ok());
  EXPECT_FALSE(join_only.CheckToken("", Role::kWorker).ok());

  Authorizer api_only = Parse("read r\n");
  EXPECT_TRUE(api_only.CheckToken("", Role::kWorker).ok());
  EXPECT_FALSE(api_only.Check("", Role::kRead).ok());
}

TEST(Authorizer, CallerIsTheTokensPlaceOrThePeerAddress) {
  Authorizer auth = Parse(kTokens);
  // The token's place in the file (r-1, o-1, w-1, w-2): never the token.
  EXPECT_EQ(auth.CallerOf("Bearer r-1", "ipv4:10.0.0.7:5123"), "token 0");
  EXPECT_EQ(auth.CallerOf("Bearer o-1", "ipv4:10.0.0.7:5123"), "token 1");
  // Unknown and worker tokens are no API identity: the address decides.
  EXPECT_EQ(auth.CallerOf("Bearer nope", "ipv4:10.0.0.7:5123"), "peer 10.0.0.7");
  EXPECT_EQ(auth.CallerOf("Bearer w-1", "ipv6:[::1]:5123"), "peer [::1]");
  // Without tokens: the address (REST gives it bare), the port dropped.
  Authorizer open;
  EXPECT_EQ(open.CallerOf("", "127.0.0.1"), "peer 127.0.0.1");
  EXPECT_EQ(open.CallerOf("", "ipv4:127.0.0.1:40000"), "peer 127.0.0.1");
  EXPECT_EQ(open.CallerOf("", ""), "anonymous");
}

TEST(Authorizer, BadFilesNameTheLine) {
  struct Case {
    const char* text;
    const char* expected;
  } cases[] = {
      {"read\n", "line 1: expected 'ROLE TOKEN'"},
      {"read a b\n", "line 1: expected 'ROLE TOKEN'"},
      {"# c\nadmin x\n", "line 2: unknown role 'admin'"},
      {"read x\noperator x\n", "line 2: the same token appears twice"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Authorizer> parsed = Authorizer::FromText(c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(c.expected), absl::string_view::npos)
        << parsed.status();
  }
}

TEST(Authorizer, FileErrors) {
  EXPECT_EQ(Authorizer::FromFile("/nonexistent/tokens").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Every token is compared whole: prefixes, extensions, a changed last byte,
// other cases and embedded NULs of a known token are all unknown, whichever
// token is first or last in the file.
TEST(Authorizer, OnlyTheExactTokenMatches) {
  const std::string secret = "o-5f0c9a11d2e34b7c8a9f";
  Authorizer auth = Parse(("read r-first\noperator " + secret + "\nworker w-last\n").c_str());
  EXPECT_TRUE(auth.CheckToken(secret, Role::kOperator).ok());
  std::string last_changed = secret;
  last_changed.back() = 'e';
  std::string with_nul = secret;
  with_nul.push_back('\0');
  for (const std::string& guess :
       {secret.substr(0, secret.size() - 1), secret + "0", last_changed,
        std::string("O") + secret.substr(1), with_nul, std::string(), std::string(1000, 'o')}) {
    EXPECT_EQ(auth.CheckToken(guess, Role::kRead).code(), absl::StatusCode::kUnauthenticated)
        << guess;
  }
  EXPECT_EQ(*auth.RoleOf("w-last"), Role::kWorker);
  EXPECT_EQ(*auth.RoleOf("r-first"), Role::kRead);
  EXPECT_EQ(auth.RoleOf("r-firs").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace collbench
