// SPDX-License-Identifier: Apache-2.0
#include "analysis/pairwise_rounds.h"

#include <map>

namespace collbench {

std::vector<PairRound> PairwiseRounds(const std::vector<HostWorker>& workers) {
  std::map<std::string, std::string> first_of;  // host -> its first worker by name
  for (const HostWorker& worker : workers) {
    auto [it, inserted] = first_of.try_emplace(worker.host, worker.name);
    if (!inserted && worker.name < it->second) it->second = worker.name;
  }
  std::vector<std::string> hosts;
  for (const auto& [host, worker] : first_of) hosts.push_back(worker);
  if (hosts.size() < 2) return {};
  // The circle method: with an even count (a bye added to an odd one), the
  // first stays, the others turn one place each round; round r pairs
  // position i with position n-1-i.
  const bool odd = hosts.size() % 2 == 1;
  if (odd) hosts.emplace_back();  // the bye: its partner sits the round out
  const size_t n = hosts.size();
  std::vector<PairRound> rounds;
  std::vector<std::string> circle = hosts;
  for (size_t round = 0; round + 1 < n; ++round) {
    PairRound pairs;
    for (size_t i = 0; i < n / 2; ++i) {
      const std::string& a = circle[i];
      const std::string& b = circle[n - 1 - i];
      if (a.empty() || b.empty()) continue;
      pairs.push_back({a < b ? a : b, a < b ? b : a});
    }
    rounds.push_back(std::move(pairs));
    // Turn every position but the first by one.
    std::string last = circle.back();
    for (size_t i = n - 1; i > 1; --i) circle[i] = circle[i - 1];
    circle[1] = last;
  }
  return rounds;
}

}  // namespace collbench
