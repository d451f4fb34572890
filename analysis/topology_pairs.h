// SPDX-License-Identifier: Apache-2.0
// The pairs of a topology-aware hunt (docs/design/workflows.md#hunts): where
// pairwise (pairwise_rounds.h) measures every pair of hosts, N(N-1)/2 runs
// (50 million at 10,000 hosts), these passes measure each host a few times
// in O(N) pairs each, in the order that tells a bad node from a bad switch:
//
//   within  each rack's hosts in a ring: host i with host i+1, so a host of
//           a rack of three or more is in two pairs with two different
//           peers of its rack (a rack of two: one pair);
//   across  the racks in a ring: host i of each rack with host i of the
//           next rack (wrapping in the smaller one), so each host crosses to
//           the racks on either side; two racks: the second direction is
//           shifted by one host, so it meets a different peer;
//   random  two disjoint random matchings of all hosts (a fixed seed: the
//           plan depends on the hosts only), pairs inside one rack avoided
//           where another partner is left, as a second look that no rack
//           boundary chose.
//
// A node slow within its rack is the node; a rack whose hosts are fine
// within it and slow across it is its uplink. Each host is stood for by one
// worker and hosts go in the fleet's order (HostRepresentatives), racks by
// their first host. A host whose rack is unknown ("") is a rack of its own.
//
// Pure functions; deterministic (the same input gives the same plan).
#ifndef COLLBENCH_ANALYSIS_TOPOLOGY_PAIRS_H_
#define COLLBENCH_ANALYSIS_TOPOLOGY_PAIRS_H_

#include <map>
#include <string>
#include <vector>

#include "analysis/pairwise_rounds.h"

namespace collbench {

// One pass: its name ("within", "across", "random") and its pairs, each
// pair's `a` the one earlier in the fleet's order, no pair twice in a pass
// and no pair of one host.
struct TopologyPass {
  std::string name;
  std::vector<WorkerPair> pairs;
};

// The passes over `workers`, `rack_of` mapping a host id to its rack (a
// host it does not name is a rack of its own). A pass with no pairs (one
// rack: nothing across; racks of one host: nothing within) is left out.
// Fewer than two hosts: no passes.
std::vector<TopologyPass> TopologyPasses(const std::vector<HostWorker>& workers,
                                         const std::map<std::string, std::string>& rack_of);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_TOPOLOGY_PAIRS_H_
