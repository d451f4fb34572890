// SPDX-License-Identifier: Apache-2.0
// Racks in a hunt's survey (docs/design/workflows.md#hunts): a slow
// top-of-rack switch or uplink makes every run that crosses its rack's
// boundary slow, so judged one node at a time it shows up as a dozen
// unrelated slow nodes. Here it is judged as a rack first.
//
// A rack R (the hosts whose workers carry the same rack, hunts'
// rack_keys; a host of unknown rack is no candidate) is slow across when
// all hold, over the survey's measured pair runs:
//   - at least 2 of its workers are fine within it: each has a run with
//     another worker of R that is not slow (so a rack of bad nodes is not a
//     rack verdict, and one bad node inside a rack does not hide it);
//   - those workers have at least 2 runs across R's boundary (one end in
//     R), and at least 3 in 4 of them are slow;
//   - fewer than half of the runs that do not touch R are slow (the rest of
//     the fabric is fine: not a slow fabric everywhere).
// Each such rack is a RACK_SUSPECT, and the runs across its boundary are
// explained by it (explained_by "racks/R"): they count against none of
// their workers, whose own verdicts come from the runs within the rack and
// re-tests that stay on one side of it.
//
// With two racks both are slow across when their link is: the verdict
// names both and says that a third rack would tell which.
//
// Pure function; deterministic.
#ifndef COLLBENCH_ANALYSIS_HUNT_RACKS_H_
#define COLLBENCH_ANALYSIS_HUNT_RACKS_H_

#include <map>
#include <string>
#include <vector>

#include "collbench/v1/hunt.pb.h"

namespace collbench {

// The survey's racks slow across (RACK_SUSPECT suspects: rack, peers its
// workers, ratio and z the median of its runs across, runs the slow ones
// among them, evidence), the slowest first; sets explained_by on the runs
// they explain, and clears it on every other. `rack_of`: each worker's rack ("" unknown);
// `host_of`: each worker's host. Measurements must be scored (ScoreMeasurement).
std::vector<v1::HuntSuspect> FindSlowRacks(const std::map<std::string, std::string>& rack_of,
                                           const std::map<std::string, std::string>& host_of,
                                           std::vector<v1::HuntMeasurement>* survey);

}  // namespace collbench

#endif  // COLLBENCH_ANALYSIS_HUNT_RACKS_H_
