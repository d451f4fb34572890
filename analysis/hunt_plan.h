// SPDX-License-Identifier: Apache-2.0
// The runs of a hunt besides its pairwise rounds (pairwise_rounds.h):
// groups of k dealt several times so every worker meets new partners, and
// any list of runs packed into rounds whose runs share no host, so a
// round's runs can run at the same time (docs/design/workflows.md#hunts).
//
// Pure functions; deterministic (the same input gives the same plan).
#ifndef COLLBENCH_ANALYSIS_HUNT_PLAN_H_
#define COLLBENCH_ANALYSIS_HUNT_PLAN_H_

#include <map>
#include <string>
#include <vector>

#include "analysis/pairwise_rounds.h"

namespace collbench {

// One run's workers, rank order.
using WorkerGroup = std::vector<std::string>;

// `deals` deals of the hosts of `workers` (stood for and ordered as in
// HostRepresentatives) into groups of at most
// `group_size`: ceil(N / group_size) groups whose sizes differ by one at
// most (6 hosts in groups of 4 make two of 3), so no group is left with one
// host and groups compare with groups of their size. Deal 0 takes the hosts
// in order; each later deal is a fixed shuffle of them, so partners change
// from deal to deal. A deal's groups are disjoint.
// REQUIRES: group_size >= 2, deals >= 1. Fewer than two hosts: no deals.
std::vector<std::vector<WorkerGroup>> GroupDeals(const std::vector<HostWorker>& workers,
                                                 int group_size, int deals);

// `runs` packed into rounds in which no host is used twice: first fit, in
// the order given. `host_of` maps a worker to its host; a worker it does
// not know is its own host.
std::vector<std::vector<WorkerGroup>> PackRounds(const std::vector<WorkerGroup>& runs,
                                                 const std::map<std::string, std::string>& host_of);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_HUNT_PLAN_H_
