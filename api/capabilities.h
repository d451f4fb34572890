// SPDX-License-Identifier: Apache-2.0
// What a run needs of the workers it runs on, and what a worker offers, as
// the "field=value" tokens the scheduler matches (server/scheduling/
// scheduler.h, WorkerInfo::offers and PendingRun::needs). The field is the
// RunSpec field that asks for it, so a refusal names it.
#ifndef COLLBENCH_API_CAPABILITIES_H_
#define COLLBENCH_API_CAPABILITIES_H_

#include <string>
#include <vector>

#include "collbench/v1/run.pb.h"
#include "collbench/v1/worker.pb.h"

namespace collbench {

// The backend its ranks call (a scenario's strategy decides it), the MPI
// implementation that launches them, and the memory kind when the spec
// names one: "backend=nccl", "mpi=mpich", "memory=hbw".
std::vector<std::string> NeedsOf(const v1::RunSpec& spec);

// The inventory's backends, MPI implementations and usable memory kinds;
// "field=*" for a list the inventory leaves empty (it says nothing of it).
std::vector<std::string> OffersOf(const v1::Inventory& inventory);

}  // namespace collbench

#endif  // COLLBENCH_API_CAPABILITIES_H_
