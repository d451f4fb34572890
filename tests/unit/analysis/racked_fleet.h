// SPDX-License-Identifier: Apache-2.0
// A fleet in racks for the tests of topology-aware hunts: `racks` racks of
// `per_rack` hosts, one worker each, admitted in host order: worker
// "workers/r<R>-h<H>" on host "r<R>-h<H>" in rack "rack-<R>".
#ifndef COLLBENCH_TESTS_UNIT_ANALYSIS_RACKED_FLEET_H_
#define COLLBENCH_TESTS_UNIT_ANALYSIS_RACKED_FLEET_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/pairwise_rounds.h"

namespace collbench {

struct RackedFleet {
  std::vector<HostWorker> workers;
  std::map<std::string, std::string> rack_of;      // host -> rack
  std::map<std::string, std::string> worker_rack;  // worker -> rack
  std::map<std::string, std::string> host_of;      // worker -> host
};

inline RackedFleet Racks(int racks, int per_rack) {
  RackedFleet fleet;
  int64_t admitted = 1;
  for (int r = 0; r < racks; ++r) {
    for (int h = 0; h < per_rack; ++h) {
      const std::string host = absl::StrCat("r", r, "-h", h);
      const std::string worker = absl::StrCat("workers/", host);
      fleet.workers.push_back({worker, host, admitted++});
      fleet.rack_of[host] = absl::StrCat("rack-", r);
      fleet.worker_rack[worker] = fleet.rack_of[host];
      fleet.host_of[worker] = host;
    }
  }
  return fleet;
}

}  // namespace collbench

#endif  // COLLBENCH_TESTS_UNIT_ANALYSIS_RACKED_FLEET_H_
