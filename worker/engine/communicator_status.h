// Marks a failure that every rank of a communicator has agreed on (through
// Communicator::AllOk), so the caller knows all ranks are returning and no
// peer is left inside a collective: such a run can end normally instead of
// aborting the whole MPI job.
#ifndef COLLBENCH_WORKER_ENGINE_COMMUNICATOR_STATUS_H_
#define COLLBENCH_WORKER_ENGINE_COMMUNICATOR_STATUS_H_

#include "absl/status/status.h"

namespace collbench {

inline constexpr char kAgreedPayload[] = "collbench.agreed";

inline absl::Status MarkAgreed(absl::Status status) {
  if (!status.ok()) status.SetPayload(kAgreedPayload, absl::Cord("1"));
  return status;
}

inline bool IsAgreed(const absl::Status& status) {
  return status.GetPayload(kAgreedPayload).has_value();
}

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_COMMUNICATOR_STATUS_H_
