// SPDX-License-Identifier: Apache-2.0
// What a run needs of the workers it runs on, and what a worker offers, as
// the "field=value" tokens the scheduler matches (server/scheduling/
// scheduler.h, WorkerInfo::offers and PendingRun::needs). The field is the
// RunSpec field that asks for it, so a refusal names it.
#ifndef COLLBENCH_API_CAPABILITIES_H_
#define COLLBENCH_API_CAPABILITIES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/worker.pb.h"

namespace collbench {

// The backend its ranks call (a scenario's strategy decides it), the MPI
// implementation that launches them, and the memory kind when the spec
// names one: "backend=nccl", "mpi=mpich", "memory=hbw". A worker selector
// (RunSpec.workers) adds "workers=a|b" for the names it lists (any of
// them) and "workers=KEY=VALUE" for each label term (every one).
std::vector<std::string> NeedsOf(const v1::RunSpec& spec);

// The inventory's backends, MPI implementations and usable memory kinds;
// "field=*" for a list the inventory leaves empty (it says nothing of it);
// and, for worker selectors, "workers=ID" (the worker's bare id) and
// "workers=KEY=VALUE" for each of its labels.
std::vector<std::string> OffersOf(const v1::Inventory& inventory, absl::string_view worker_id = "");

// OK, or InvalidArgument naming `field` and the term that is not a worker
// name ("workers/ID" or "ID") or a label term (KEY=VALUE, common/
// worker_labels.h). Empty is OK (any worker).
absl::Status ValidateWorkerSelector(absl::string_view selector, absl::string_view field);

// Whether the worker (bare id or workers/ID) is selected: named by one of
// the selector's names (when it has any) and carrying every label term.
// An empty selector selects every worker.
bool SelectorMatches(absl::string_view selector, absl::string_view worker,
                     const v1::Inventory& inventory);

}  // namespace collbench

#endif  // COLLBENCH_API_CAPABILITIES_H_
