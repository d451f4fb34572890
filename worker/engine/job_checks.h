// Checks of a run against the job it is in, made on every rank before any
// communication (DESIGN §2, bad input): each rank reaches the same verdict
// from the same flags and rank count, so no agreement is needed and the
// error comes out before MPI moves a byte.
#ifndef COLLBENCH_WORKER_ENGINE_JOB_CHECKS_H_
#define COLLBENCH_WORKER_ENGINE_JOB_CHECKS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "worker/engine/backends/registry.h"
#include "worker/engine/collectives/operation.h"
#include "worker/engine/options.h"

namespace collbench {

// The `--memory` kinds a run uses for host and device buffers; empty when
// it uses none of that space.
struct MemoryPlan {
  std::string host_kind;
  std::string device_kind;
  bool needs_device = false;  // the CUDA runtime must be initialised
};

// Root in range, pairs for point-to-point, dtype the backend can carry, every
// size at least one element, exact validation possible, and which memory
// kinds serve the buffers. InvalidArgument / Unimplemented naming the flag.
absl::StatusOr<MemoryPlan> CheckJob(const EngineOptions& options, const Operation& op,
                                    const BackendInfo& backend, int nranks);

// Whether `bytes` of buffers on each of `ranks_here` ranks fit in
// `available_bytes`. InvalidArgument saying what was asked, what is there
// and `advice` (e.g. "lower --max-bytes").
absl::Status CheckFits(uint64_t bytes_per_rank, int ranks_here, uint64_t available_bytes,
                       const std::string& where, const std::string& advice);

// MemAvailable from /proc/meminfo, in bytes.
absl::StatusOr<uint64_t> HostMemoryAvailable();

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_JOB_CHECKS_H_
