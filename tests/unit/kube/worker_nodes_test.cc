// SPDX-License-Identifier: Apache-2.0
// Which node a worker may speak for (kube/worker_nodes.h): only where a
// running worker pod on that node has the worker's address. A worker that
// names another node, one whose pod is not running, and one with no pod
// at all lose their claim; the others keep it.
#include "kube/worker_nodes.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace collbench::kube {
namespace {

using Json = nlohmann::json;

v1::Worker Claiming(const std::string& id, const std::string& address, const std::string& node) {
  v1::Worker w;
  w.set_name("workers/" + id);
  w.set_agent_address(address);
  w.mutable_inventory()->set_node_name(node);
  return w;
}

Json Pod(const std::string& node, const std::string& ip, const std::string& phase = "Running") {
  return Json{
      {"spec", {{"nodeName", node}}},
      {"status", {{"phase", phase}, {"podIP", ip}, {"podIPs", Json::array({{{"ip", ip}}})}}}};
}

TEST(WorkerNodesTest, OnlyARunningPodOnTheNamedNodeWithTheWorkersAddressVouchesForIt) {
  std::vector<v1::Worker> workers = {
      Claiming("honest", "10.1.0.5:50052", "node-a"),
      Claiming("liar", "10.1.0.6:50052", "node-a"),     // its pod is on node-b
      Claiming("stopped", "10.1.0.7:50052", "node-c"),  // its pod is not running
      Claiming("podless", "10.9.9.9:50052", "node-d"),  // no pod has its address
      Claiming("v6", "[fd00::7]:50052", "node-e"),
      Claiming("unsaid", "10.1.0.8:50052", ""),
  };
  const Json pods = {
      {"items", Json::array({Pod("node-a", "10.1.0.5"), Pod("node-b", "10.1.0.6"),
                             Pod("node-c", "10.1.0.7", "Failed"), Pod("node-e", "fd00::7")})}};
  const std::vector<std::string> rejected = VerifyWorkerNodes(&workers, pods);
  EXPECT_EQ(workers[0].inventory().node_name(), "node-a");
  EXPECT_EQ(workers[1].inventory().node_name(), "");
  EXPECT_EQ(workers[2].inventory().node_name(), "");
  EXPECT_EQ(workers[3].inventory().node_name(), "");
  EXPECT_EQ(workers[4].inventory().node_name(), "node-e");
  ASSERT_EQ(rejected.size(), 3u);
  EXPECT_NE(rejected[0].find("workers/liar says it is on node node-a, but the worker pod with its "
                             "address 10.1.0.6 is on node node-b"),
            std::string::npos)
      << rejected[0];
  EXPECT_NE(rejected[2].find("no running worker pod has its address 10.9.9.9"), std::string::npos)
      << rejected[2];
}

}  // namespace
}  // namespace collbench::kube
