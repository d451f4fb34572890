// SPDX-License-Identifier: Apache-2.0
// Agreeing on a failure that happened on some ranks only (allocation, a
// missing device or memory kind on one host), so that every rank returns
// instead of leaving peers inside a collective, and the job ends with one
// message rather than one per rank.
#ifndef COLLBENCH_WORKER_ENGINE_AGREEMENT_H_
#define COLLBENCH_WORKER_ENGINE_AGREEMENT_H_

#include "absl/status/status.h"

namespace collbench {

class Communicator;

// Every rank calls this with its local status. All OK: returns OK
// everywhere. Otherwise every rank returns a non-OK status marked agreed;
// rank 0's carries the failing ranks' messages, each distinct one once
// ("ranks 1,3: ..." when not every rank failed the same way), with the
// code of the lowest failing rank. A failure of the agreement itself is
// returned unmarked.
absl::Status AgreeOnStatus(Communicator& comm, const absl::Status& local);

// Whether `status` came out of AgreeOnStatus (all ranks are returning).
bool IsAgreed(const absl::Status& status);

// Marks a status as agreed by every rank (for callers that agreed by other
// means, e.g. a deterministic check every rank made alike).
absl::Status MarkAgreed(absl::Status status);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_AGREEMENT_H_
