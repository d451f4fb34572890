// SPDX-License-Identifier: Apache-2.0
#include "analysis/pairwise_rounds.h"

#include <map>

namespace collbench {

std::vector<std::string> HostRepresentatives(const std::vector<HostWorker>& workers) {
  std::map<std::string, std::string> first_of;  // host -> its first worker by name
  for (const HostWorker& worker : workers) {
    auto [it, inserted] = first_of.try_emplace(worker.host, worker.name);
    if (!inserted && worker.name < it->second) it->second = worker.name;
  }
  std::vector<std::string> hosts;
  for (const auto& [host, worker] : first_of) hosts.push_back(worker);
  return hosts;
}

PairwisePlan::PairwisePlan(const std::vector<HostWorker>& workers)
    : circle_(HostRepresentatives(workers)) {
  if (circle_.size() < 2) {
    circle_.clear();
    return;
  }
  if (circle_.size() % 2 == 1) circle_.emplace_back();  // the bye: its partner sits out
}

size_t PairwisePlan::pairs() const {
  const bool odd = !circle_.empty() && circle_.back().empty();
  const size_t hosts = circle_.size() - (odd ? 1 : 0);
  return hosts * (hosts - 1) / 2;
}

PairRound PairwisePlan::Round(size_t r) const {
  // The circle method: the first stays, the others turn one place each
  // round, so after r turns position p >= 1 holds host 1 + (p - 1 - r)
  // mod (n - 1); round r pairs position i with position n - 1 - i.
  const size_t n = circle_.size();
  auto at = [&](size_t p) -> const std::string& {
    if (p == 0) return circle_[0];
    return circle_[1 + ((p - 1 + (n - 1) - r % (n - 1)) % (n - 1))];
  };
  PairRound pairs;
  for (size_t i = 0; i < n / 2; ++i) {
    const std::string& a = at(i);
    const std::string& b = at(n - 1 - i);
    if (a.empty() || b.empty()) continue;
    pairs.push_back({a < b ? a : b, a < b ? b : a});
  }
  return pairs;
}

std::vector<PairRound> PairwiseRounds(const std::vector<HostWorker>& workers) {
  const PairwisePlan plan(workers);
  std::vector<PairRound> rounds;
  for (size_t r = 0; r < plan.rounds(); ++r) rounds.push_back(plan.Round(r));
  return rounds;
}

}  // namespace collbench
