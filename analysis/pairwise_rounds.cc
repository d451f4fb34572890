// SPDX-License-Identifier: Apache-2.0
#include "analysis/pairwise_rounds.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <tuple>

namespace collbench {

std::pair<int64_t, std::string> FleetOrder(const HostWorker& worker) {
  return {
      worker.admission_order == 0 ? std::numeric_limits<int64_t>::max() : worker.admission_order,
      worker.name};
}

std::vector<std::string> HostRepresentatives(const std::vector<HostWorker>& workers) {
  std::map<std::string, std::pair<int64_t, std::string>> first_of;  // host -> its first
  for (const HostWorker& worker : workers) {
    auto [it, inserted] = first_of.try_emplace(worker.host, FleetOrder(worker));
    if (!inserted) it->second = std::min(it->second, FleetOrder(worker));
  }
  std::vector<std::tuple<int64_t, std::string, std::string>> order;  // (admitted, host, worker)
  for (const auto& [host, first] : first_of) order.emplace_back(first.first, host, first.second);
  std::sort(order.begin(), order.end());
  std::vector<std::string> hosts;
  for (const auto& [admitted, host, worker] : order) hosts.push_back(worker);
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
  // A pair's first worker (rank 0) is the one earlier in the fleet's
  // order, the circle's.
  const size_t n = circle_.size();
  auto at = [&](size_t p) -> size_t {
    if (p == 0) return 0;
    return 1 + ((p - 1 + (n - 1) - r % (n - 1)) % (n - 1));
  };
  PairRound pairs;
  for (size_t i = 0; i < n / 2; ++i) {
    const size_t a = std::min(at(i), at(n - 1 - i)), b = std::max(at(i), at(n - 1 - i));
    if (circle_[a].empty() || circle_[b].empty()) continue;
    pairs.push_back({circle_[a], circle_[b]});
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
