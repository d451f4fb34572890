// SPDX-License-Identifier: Apache-2.0
// The rounds of a pairwise hunt (docs/design/workflows.md#hunts): every pair of
// distinct hosts measured once, in rounds of disjoint pairs that run at
// the same time, as a round-robin tournament (the circle method): N hosts
// take N-1 rounds of N/2 pairs when N is even, N rounds of (N-1)/2 pairs
// when N is odd (one host sits each round out), not N(N-1)/2 runs one after
// another.
//
// A pair is of hosts, not of workers: co-resident workers share their
// host's NIC and memory, so two pairs on one host would measure each
// other. Each pair is measured between one worker of each host, the first
// in the fleet's order (HostWorker::admission_order, then the name), and
// hosts are ordered by the worker that stands for them, so no worker puts
// itself or its host first by what it reports about itself.
#ifndef COLLBENCH_ANALYSIS_PAIRWISE_ROUNDS_H_
#define COLLBENCH_ANALYSIS_PAIRWISE_ROUNDS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace collbench {

// One worker and the host it is on.
struct HostWorker {
  std::string name;  // workers/{id}
  std::string host;  // host_id
  // The fleet's order, lower first (when the coordinator first admitted the
  // name); 0 is unknown and comes after every known one.
  int64_t admission_order = 0;
};

struct WorkerPair {
  std::string a;  // rank 0: the pair's worker earlier in the fleet's order
  std::string b;  // rank 1: the other, on another host
};

using PairRound = std::vector<WorkerPair>;

// A worker's place in the fleet's order, to sort by: admitted first, the
// unknown (0) after the known, then by name.
std::pair<int64_t, std::string> FleetOrder(const HostWorker& worker);

// The first worker in the fleet's order of every host of `workers`, hosts
// ordered by those workers (then by host id): who stands for each host in
// a hunt's pairs and groups.
std::vector<std::string> HostRepresentatives(const std::vector<HostWorker>& workers);

// The rounds for `workers` (any order; duplicates of a name count once).
// Each host is stood for by its first worker in the fleet's order, and
// hosts are ordered by those (HostRepresentatives), so the plan depends on
// the set of workers only. Fewer
// than two hosts: no rounds.
std::vector<PairRound> PairwiseRounds(const std::vector<HostWorker>& workers);

// The same plan, one round at a time: a fleet of 5,000 hosts has 12.5
// million pairs, which are not all held at once. Round(r) equals
// PairwiseRounds(workers)[r].
class PairwisePlan {
 public:
  explicit PairwisePlan(const std::vector<HostWorker>& workers);
  size_t rounds() const { return circle_.size() < 2 ? 0 : circle_.size() - 1; }
  size_t pairs() const;  // in all rounds
  // REQUIRES: r < rounds().
  PairRound Round(size_t r) const;

 private:
  std::vector<std::string> circle_;  // hosts' first workers, a bye ("") when odd
};

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_PAIRWISE_ROUNDS_H_
