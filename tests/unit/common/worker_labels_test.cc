// SPDX-License-Identifier: Apache-2.0
#include "common/worker_labels.h"

#include <gtest/gtest.h>

namespace collbench {
namespace {

TEST(WorkerLabels, ParsesKeyAndValue) {
  auto label = ParseWorkerLabel("link=tbf-1gbit");
  ASSERT_TRUE(label.ok()) << label.status();
  EXPECT_EQ(label->first, "link");
  EXPECT_EQ(label->second, "tbf-1gbit");
  EXPECT_TRUE(ParseWorkerLabel("rack.row_2=A-07.b").ok());
}

TEST(WorkerLabels, RejectsMalformedFlagsNamingTheProblem) {
  EXPECT_NE(ParseWorkerLabel("link").status().message().find("expected KEY=VALUE"),
            std::string::npos);
  EXPECT_NE(ParseWorkerLabel("=x").status().message().find("1 to 63 characters"),
            std::string::npos);
  EXPECT_NE(ParseWorkerLabel("link=").status().message().find("value '' must be"),
            std::string::npos);
  EXPECT_NE(ParseWorkerLabel("Link=x").status().message().find("must start with"),
            std::string::npos);
  EXPECT_NE(ParseWorkerLabel("li nk=x").status().message().find("only lower-case"),
            std::string::npos);
  EXPECT_NE(ParseWorkerLabel("link=a,b").status().message().find("only letters"),
            std::string::npos);
  EXPECT_NE(ParseWorkerLabel("link=a=b").status().message().find("only letters"),
            std::string::npos);
  EXPECT_FALSE(ParseWorkerLabel(std::string(64, 'k') + "=v").ok());
  EXPECT_FALSE(ParseWorkerLabel("k=" + std::string(64, 'v')).ok());
  EXPECT_TRUE(ParseWorkerLabel(std::string(63, 'k') + "=" + std::string(63, 'V')).ok());
}

TEST(WorkerLabels, TakesAKubernetesNodeLabelsPrefixedKey) {
  for (const char* text :
       {"topology.kubernetes.io/zone=eu-west-1a", "network.topology.nvidia.com/leaf=s1",
        "fabric.topograph.run/tier-0=leaf-07", "collbench.io/rack=r3"}) {
    EXPECT_TRUE(ParseWorkerLabel(text).ok()) << text << ": " << ParseWorkerLabel(text).status();
  }
  auto label = ParseWorkerLabel("collbench.io/rack=r3");
  ASSERT_TRUE(label.ok());
  EXPECT_EQ(label->first, "collbench.io/rack");
  EXPECT_EQ(label->second, "r3");
  // The name after the prefix keeps the rule of a bare key; the prefix is a
  // DNS name; one '/' only, and neither end of the prefix is a dot or dash.
  EXPECT_NE(ParseWorkerLabel("/rack=r").status().message().find("DNS name"), std::string::npos);
  EXPECT_NE(ParseWorkerLabel("Collbench.io/rack=r").status().message().find("DNS name"),
            std::string::npos);
  EXPECT_NE(ParseWorkerLabel("a/b/rack=r").status().message().find("DNS name"), std::string::npos);
  EXPECT_NE(ParseWorkerLabel("-x.io/rack=r").status().message().find("DNS name"),
            std::string::npos);
  EXPECT_NE(ParseWorkerLabel("x.io/=r").status().message().find("after its prefix"),
            std::string::npos);
  EXPECT_NE(ParseWorkerLabel("x.io/Rack=r").status().message().find("after its prefix"),
            std::string::npos);
  EXPECT_FALSE(ParseWorkerLabel("x.io/" + std::string(64, 'k') + "=v").ok());
  EXPECT_TRUE(ParseWorkerLabel(std::string(253, 'p') + "/" + std::string(63, 'k') + "=v").ok());
  EXPECT_FALSE(ParseWorkerLabel(std::string(254, 'p') + "/k=v").ok());
}

TEST(WorkerLabels, FormatsInKeyOrder) {
  EXPECT_EQ(FormatWorkerLabels({}), "");
  EXPECT_EQ(FormatWorkerLabels({{"link", "tbf-1gbit"}, {"hosts", "netns"}}),
            "hosts=netns,link=tbf-1gbit");
}

}  // namespace
}  // namespace collbench
