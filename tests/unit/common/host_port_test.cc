// SPDX-License-Identifier: Apache-2.0
// HOST:PORT addresses as flags and peers write them: names, IPv4, bracketed
// IPv6, an empty host; a bad port or an unbracketed IPv6 is an error that
// quotes the text.
#include "common/host_port.h"

#include "gtest/gtest.h"

namespace collbench {
namespace {

TEST(ParseHostPort, AcceptsNamesAddressesAndBracketedIpv6) {
  absl::StatusOr<HostPort> name = ParseHostPort("node1:7100");
  ASSERT_TRUE(name.ok()) << name.status();
  EXPECT_EQ(name->host, "node1");
  EXPECT_EQ(name->port, 7100);

  absl::StatusOr<HostPort> v4 = ParseHostPort("198.18.0.2:0");
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->host, "198.18.0.2");
  EXPECT_EQ(v4->port, 0);

  absl::StatusOr<HostPort> v6 = ParseHostPort("[fe80::1]:65535");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->host, "fe80::1");
  EXPECT_EQ(v6->port, 65535);

  absl::StatusOr<HostPort> any = ParseHostPort(":8080");
  ASSERT_TRUE(any.ok()) << any.status();
  EXPECT_EQ(any->host, "");
  EXPECT_EQ(any->port, 8080);
}

TEST(ParseHostPort, RefusesWhatIsNotHostPort) {
  for (const char* bad :
       {"node1", "node1:", "node1:http", "node1:-1", "node1:65536", "::1:7100", "fe80::1", ""}) {
    absl::StatusOr<HostPort> parsed = ParseHostPort(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(std::string("\"") + bad + "\""),
              absl::string_view::npos)
        << parsed.status();
  }
}

TEST(HostOf, StripsPortAndBracketsAndKeepsBareHosts) {
  EXPECT_EQ(HostOf("node1:7100"), "node1");
  EXPECT_EQ(HostOf("[::1]:7100"), "::1");
  EXPECT_EQ(HostOf("node1"), "node1");
  EXPECT_EQ(HostOf("[::1]"), "::1");
}

TEST(JoinHostPort, BracketsIpv6AndRoundTrips) {
  EXPECT_EQ(JoinHostPort("node1", 7100), "node1:7100");
  EXPECT_EQ(JoinHostPort("fe80::1", 7100), "[fe80::1]:7100");
  for (const char* address : {"node1:1", "[::1]:2", "198.18.0.9:65535"}) {
    absl::StatusOr<HostPort> parsed = ParseHostPort(address);
    ASSERT_TRUE(parsed.ok()) << address;
    EXPECT_EQ(JoinHostPort(parsed->host, parsed->port), address);
  }
}

TEST(IsWildcardHost, KnowsEveryInterfaceForms) {
  for (const char* any : {"", "0.0.0.0", "::", "[::]"}) EXPECT_TRUE(IsWildcardHost(any)) << any;
  for (const char* one : {"127.0.0.1", "::1", "node1"}) EXPECT_FALSE(IsWildcardHost(one)) << one;
}

}  // namespace
}  // namespace collbench
