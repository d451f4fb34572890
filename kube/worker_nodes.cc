// SPDX-License-Identifier: Apache-2.0
#include "kube/worker_nodes.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/host_port.h"
#include "kube/json_fields.h"

namespace collbench::kube {
namespace {

using Json = nlohmann::json;

// Each running pod's IPs, and its node.
std::map<std::string, std::string> NodesByPodIp(const Json& pods) {
  std::map<std::string, std::string> out;
  for (const Json& pod : ArrayOf(pods, "items")) {
    const Json& status = Field(pod, "status");
    const std::string node = Text(Field(pod, "spec"), "nodeName");
    if (node.empty() || Text(status, "phase") != "Running") continue;
    std::set<std::string> ips;
    if (const std::string ip = Text(status, "podIP"); !ip.empty()) ips.insert(ip);
    for (const Json& entry : ArrayOf(status, "podIPs")) {
      if (const std::string ip = Text(entry, "ip"); !ip.empty()) ips.insert(ip);
    }
    for (const std::string& ip : ips) out.emplace(ip, node);
  }
  return out;
}

}  // namespace

std::vector<std::string> VerifyWorkerNodes(std::vector<v1::Worker>* workers, const Json& pods) {
  const std::map<std::string, std::string> node_of_ip = NodesByPodIp(pods);
  std::vector<std::string> rejected;
  for (v1::Worker& w : *workers) {
    const std::string& claimed = w.inventory().node_name();
    if (claimed.empty()) continue;
    const std::string ip = HostOf(w.agent_address());
    auto it = node_of_ip.find(ip);
    if (it != node_of_ip.end() && it->second == claimed) continue;
    rejected.push_back(absl::StrCat(
        w.name(), " says it is on node ", claimed, ", but ",
        it == node_of_ip.end()
            ? absl::StrCat("no running worker pod has its address ", ip)
            : absl::StrCat("the worker pod with its address ", ip, " is on node ", it->second),
        ": its verdicts are not written to any node"));
    w.mutable_inventory()->clear_node_name();
  }
  return rejected;
}

}  // namespace collbench::kube
