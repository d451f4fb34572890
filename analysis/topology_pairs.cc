// SPDX-License-Identifier: Apache-2.0
#include "analysis/topology_pairs.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <utility>

namespace collbench {
namespace {

// How far a random pass looks for a partner in another rack (and not met
// in the pass before) before it takes the next host left: bounds the pass
// at O(N) when one rack holds most hosts.
constexpr size_t kPartnerWindow = 64;

// The hosts in the fleet's order, by index, and their racks.
struct RackedHosts {
  std::vector<std::string> workers;        // one per host, in the fleet's order
  std::vector<size_t> rack;                // index into racks
  std::vector<std::vector<size_t>> racks;  // in the order of their first host
};

RackedHosts HostsOf(const std::vector<HostWorker>& workers,
                    const std::map<std::string, std::string>& rack_of) {
  std::map<std::string, std::string> host_of;
  for (const HostWorker& w : workers) host_of.emplace(w.name, w.host);
  RackedHosts fleet;
  fleet.workers = HostRepresentatives(workers);
  // A host of unknown rack is a rack of its own: (true, host id).
  std::map<std::pair<bool, std::string>, size_t> rack_index;
  for (size_t i = 0; i < fleet.workers.size(); ++i) {
    const std::string& host = host_of.at(fleet.workers[i]);
    auto known = rack_of.find(host);
    const std::pair<bool, std::string> key = known == rack_of.end() || known->second.empty()
                                                 ? std::make_pair(true, host)
                                                 : std::make_pair(false, known->second);
    auto [it, inserted] = rack_index.try_emplace(key, fleet.racks.size());
    if (inserted) fleet.racks.emplace_back();
    fleet.racks[it->second].push_back(i);
    fleet.rack.push_back(it->second);
  }
  return fleet;
}

// A pass being built: pairs by index, each once.
class PassBuilder {
 public:
  PassBuilder(const RackedHosts& fleet, std::string name) : fleet_(fleet) {
    pass_.name = std::move(name);
  }
  void Add(size_t x, size_t y) {
    if (x == y) return;
    const std::pair<size_t, size_t> pair = std::minmax(x, y);
    if (!seen_.insert(pair).second) return;
    pass_.pairs.push_back({fleet_.workers[pair.first], fleet_.workers[pair.second]});
  }
  TopologyPass Take() { return std::move(pass_); }

 private:
  const RackedHosts& fleet_;
  TopologyPass pass_;
  std::set<std::pair<size_t, size_t>> seen_;
};

TopologyPass Within(const RackedHosts& fleet) {
  PassBuilder pass(fleet, "within");
  for (const std::vector<size_t>& rack : fleet.racks) {
    for (size_t t = 0; t < rack.size(); ++t) pass.Add(rack[t], rack[(t + 1) % rack.size()]);
  }
  return pass.Take();
}

TopologyPass Across(const RackedHosts& fleet) {
  PassBuilder pass(fleet, "across");
  const size_t racks = fleet.racks.size();
  if (racks < 2) return pass.Take();
  for (size_t r = 0; r < racks; ++r) {
    const std::vector<size_t>& here = fleet.racks[r];
    const std::vector<size_t>& next = fleet.racks[(r + 1) % racks];
    // Two racks are each other's next: the way back meets another peer.
    const size_t shift = racks == 2 && r == 1 ? 1 : 0;
    for (size_t t = 0; t < here.size(); ++t) pass.Add(here[t], next[(t + shift) % next.size()]);
  }
  return pass.Take();
}

// A matching of the hosts in a shuffled order: each takes the first host
// left within the window that is in another rack and not in `met` (the
// pairs of the random passes before), else the first host left. An odd
// host out sits the pass out. Adds its pairs to `met`.
TopologyPass Random(const RackedHosts& fleet, uint32_t seed,
                    std::set<std::pair<size_t, size_t>>* met) {
  PassBuilder pass(fleet, "random");
  std::vector<size_t> order(fleet.workers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937 shuffle(seed);
  std::shuffle(order.begin(), order.end(), shuffle);
  std::vector<bool> taken(order.size(), false);
  for (size_t at = 0; at < order.size(); ++at) {
    if (taken[at]) continue;
    const size_t u = order[at];
    size_t first_left = order.size(), chosen = order.size();
    size_t looked = 0;
    for (size_t next = at + 1; next < order.size() && looked < kPartnerWindow; ++next) {
      if (taken[next]) continue;
      ++looked;
      if (first_left == order.size()) first_left = next;
      const size_t v = order[next];
      if (fleet.rack[v] != fleet.rack[u] && met->count(std::minmax(u, v)) == 0) {
        chosen = next;
        break;
      }
    }
    if (chosen == order.size()) chosen = first_left;
    if (chosen == order.size()) break;  // the odd one out
    taken[at] = taken[chosen] = true;
    pass.Add(u, order[chosen]);
    met->insert(std::minmax(u, order[chosen]));
  }
  return pass.Take();
}

}  // namespace

std::vector<TopologyPass> TopologyPasses(const std::vector<HostWorker>& workers,
                                         const std::map<std::string, std::string>& rack_of) {
  const RackedHosts fleet = HostsOf(workers, rack_of);
  if (fleet.workers.size() < 2) return {};
  std::vector<TopologyPass> passes;
  for (TopologyPass pass : {Within(fleet), Across(fleet)}) {
    if (!pass.pairs.empty()) passes.push_back(std::move(pass));
  }
  // Two random passes, each with its own fixed seed; the second avoids
  // the first's pairs where it can.
  std::set<std::pair<size_t, size_t>> met;
  for (uint32_t seed : {0x72616e64u, 0x6f6d3232u}) passes.push_back(Random(fleet, seed, &met));
  return passes;
}

}  // namespace collbench
