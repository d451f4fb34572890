// SPDX-License-Identifier: Apache-2.0
// Whether the ranks on a host outnumber the CPUs they may run on. Such
// ranks time-slice the cores: a collective waits for a descheduled peer,
// and the figures measure the scheduler rather than the library (MPICH,
// 4 ranks on 2 cores: 5 ms per 16 B reduce_scatter). The engine warns once,
// from rank 0, before it measures.
//
// Thread-safe: pure functions, except AllowedCpus, which asks the kernel.
#ifndef COLLBENCH_WORKER_ENGINE_OVERSUBSCRIPTION_H_
#define COLLBENCH_WORKER_ENGINE_OVERSUBSCRIPTION_H_

#include <string>
#include <vector>

namespace collbench {

// The CPUs this process may run on (sched_getaffinity), as "0,1,5"; the
// online CPU count as "0,...,n-1" when the affinity cannot be read.
std::string AllowedCpus();

// The warning for every host whose ranks outnumber the CPUs in the union of
// their allowed sets, or "" when no host is oversubscribed. `hosts` and
// `cpus` are by rank: each rank's host name and its AllowedCpus(). Ranks
// bound to one core each are oversubscribed only when they share cores.
std::string OversubscriptionWarning(const std::vector<std::string>& hosts,
                                    const std::vector<std::string>& cpus);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_OVERSUBSCRIPTION_H_
