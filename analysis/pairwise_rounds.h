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
// by name (the planner's callers pick which workers stand for a host).
#ifndef COLLBENCH_ANALYSIS_PAIRWISE_ROUNDS_H_
#define COLLBENCH_ANALYSIS_PAIRWISE_ROUNDS_H_

#include <string>
#include <utility>
#include <vector>

namespace collbench {

// One worker and the host it is on.
struct HostWorker {
  std::string name;  // workers/{id}
  std::string host;  // host_id
};

struct WorkerPair {
  std::string a;  // a worker of the first host
  std::string b;  // a worker of the second host
};

using PairRound = std::vector<WorkerPair>;

// The first worker by name of every host of `workers`, hosts ordered by
// host id: who stands for each host in a hunt's pairs and groups.
std::vector<std::string> HostRepresentatives(const std::vector<HostWorker>& workers);

// The rounds for `workers` (any order; duplicates of a name count once).
// Hosts are ordered by host id, and each host is stood for by its first
// worker by name, so the plan depends on the set of workers only. Fewer
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
