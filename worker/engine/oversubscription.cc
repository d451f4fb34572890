// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/oversubscription.h"

#include <sched.h>
#include <unistd.h>

#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace collbench {

std::string AllowedCpus() {
  std::vector<int> allowed;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) allowed.push_back(cpu);
    }
  } else {
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    for (long cpu = 0; cpu < online; ++cpu) allowed.push_back(static_cast<int>(cpu));
  }
  return absl::StrJoin(allowed, ",");
}

std::string OversubscriptionWarning(const std::vector<std::string>& hosts,
                                    const std::vector<std::string>& cpus) {
  struct Host {
    int ranks = 0;
    std::set<int> cpus;
  };
  std::map<std::string, Host> by_host;
  for (size_t rank = 0; rank < hosts.size() && rank < cpus.size(); ++rank) {
    Host& host = by_host[hosts[rank]];
    ++host.ranks;
    for (absl::string_view text : absl::StrSplit(cpus[rank], ',', absl::SkipEmpty())) {
      int cpu = 0;
      if (absl::SimpleAtoi(text, &cpu)) host.cpus.insert(cpu);
    }
  }
  std::vector<std::string> crowded;
  for (const auto& [name, host] : by_host) {
    const size_t cores = host.cpus.size();
    if (cores == 0 || static_cast<size_t>(host.ranks) <= cores) continue;
    crowded.push_back(absl::StrCat(host.ranks, " ranks on ", name, " share ", cores,
                                   cores == 1 ? " CPU" : " CPUs"));
  }
  if (crowded.empty()) return "";
  return absl::StrCat("warning: ", absl::StrJoin(crowded, ", "),
                      ": the ranks take turns on the cores, so the figures will be dominated "
                      "by scheduling rather than by the library; run at most one rank per CPU");
}

}  // namespace collbench
