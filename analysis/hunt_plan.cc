// SPDX-License-Identifier: Apache-2.0
#include "analysis/hunt_plan.h"

#include <algorithm>
#include <random>
#include <set>

namespace collbench {
namespace {

// `order` cut into ceil(n / group_size) groups whose sizes differ by one at
// most, the larger first: results of equal-sized groups are compared.
std::vector<WorkerGroup> Deal(const std::vector<std::string>& order, size_t group_size) {
  const size_t groups = (order.size() + group_size - 1) / group_size;
  std::vector<WorkerGroup> out;
  size_t at = 0;
  for (size_t g = 0; g < groups; ++g) {
    const size_t size = order.size() / groups + (g < order.size() % groups ? 1 : 0);
    out.emplace_back(order.begin() + at, order.begin() + at + size);
    at += size;
  }
  return out;
}

}  // namespace

std::vector<std::vector<WorkerGroup>> GroupDeals(const std::vector<HostWorker>& workers,
                                                 int group_size, int deals) {
  std::vector<std::string> hosts = HostRepresentatives(workers);
  if (hosts.size() < 2 || group_size < 2 || deals < 1) return {};
  std::vector<std::vector<WorkerGroup>> plan;
  // A fixed seed per deal: the plan depends on the workers only.
  std::mt19937 shuffle(0x6b756e74);
  for (int deal = 0; deal < deals; ++deal) {
    std::vector<std::string> order = hosts;
    if (deal > 0) std::shuffle(order.begin(), order.end(), shuffle);
    plan.push_back(Deal(order, static_cast<size_t>(group_size)));
  }
  return plan;
}

std::vector<std::vector<WorkerGroup>> PackRounds(
    const std::vector<WorkerGroup>& runs, const std::map<std::string, std::string>& host_of) {
  auto host = [&](const std::string& worker) -> const std::string& {
    auto it = host_of.find(worker);
    return it == host_of.end() ? worker : it->second;
  };
  std::vector<std::vector<WorkerGroup>> rounds;
  std::vector<std::set<std::string>> used;  // hosts of each round
  for (const WorkerGroup& run : runs) {
    size_t r = 0;
    for (; r < rounds.size(); ++r) {
      const bool clash = std::any_of(run.begin(), run.end(), [&](const std::string& worker) {
        return used[r].count(host(worker)) > 0;
      });
      if (!clash) break;
    }
    if (r == rounds.size()) {
      rounds.emplace_back();
      used.emplace_back();
    }
    rounds[r].push_back(run);
    for (const std::string& worker : run) used[r].insert(host(worker));
  }
  return rounds;
}

}  // namespace collbench
