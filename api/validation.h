// SPDX-License-Identifier: Apache-2.0
// Validation of a RunSpec before anything is queued
// (docs/design/security.md#validation-before-queueing): sizes, ranks,
// iterations, buffer memory against the workers' memory, env keys, and every
// enum and name the engine would otherwise reject only once the run has
// started.
//
// A bad spec gets InvalidArgument (gRPC INVALID_ARGUMENT, HTTP 400) whose
// message starts with the path of the offending field, e.g.
//   "spec.ranks: must be at least 1"
//   "spec.sizes_bytes[2]: 0 is not a size"
//   "spec.env.LD_PRELOAD: names a program, library, plugin, file or ..."
// Only the first problem found is reported; checks run in field order.
//
// Thread-safe: no state beyond immutable, lazily built operation and
// memory-kind registries.
#ifndef COLLBENCH_API_VALIDATION_H_
#define COLLBENCH_API_VALIDATION_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/ipc_sharing.h"
#include "collbench/v1/run.pb.h"

namespace collbench {

// What a run may ask for. The service-wide caps have defaults; the facts
// about the registered workers are passed by the caller (the coordinator
// from its registry). A fact left unset (nullopt) is unknown and its check
// is skipped: the CLI, which does not know the workers, validates with the
// defaults alone.
struct ValidationLimits {
  // Largest message size (per rank) and most sizes in one run.
  uint64_t max_message_bytes = uint64_t{16} << 30;  // 16 GiB
  int max_sizes = 64;
  // Largest iters and warmup per size.
  int max_iters = 1'000'000;
  // Largest adaptive budget per size and largest whole-run timeout.
  double max_time_budget_s = 600;
  double max_timeout_s = 24 * 3600;

  // Sum of the registered workers' slots: the most ranks any run can get.
  std::optional<int> max_total_slots;
  // Number of registered workers (SPREAD puts one rank on each).
  std::optional<int> worker_count;
  // The largest slot count of a single worker: the most ranks PACK can put
  // on one worker.
  std::optional<int> max_worker_slots;
  // The smallest host memory (Inventory.memory_bytes) of any worker, and the
  // smallest GPU memory of any worker's GPUs.
  std::optional<uint64_t> min_worker_memory_bytes;
  std::optional<uint64_t> min_gpu_memory_bytes;
  // Every registered worker's host and namespaces, for SHM across workers
  // (ipc_sharing.h).
  std::optional<std::vector<WorkerIpc>> worker_ipc;
};

// OK or InvalidArgument naming the first bad field (see above). Besides
// each field's own range, asks the engine's rules of the options
// collbench-rank would get (engine_spec/job_checks.h, scenarios.h): root
// below ranks for rooted operations, an even rank count for
// point-to-point, the backend's calls, 16-bit floats only on nccl, gemm's
// float types, every size at least one element, exact --check for
// reductions at this rank count, memory kinds that suit the buffers, the
// scenarios' strategies, models and MPI count limits. Their text is the
// engine's, after the field path instead of the flag. Then that the
// buffers of the largest size fit the workers:
//   host:   (send + recv bytes per rank) x (ranks on one worker)
//           <= min_worker_memory_bytes
//   device: (send + recv bytes per rank) <= min_gpu_memory_bytes
//           (assumes each rank has a GPU of its own)
// where ranks on one worker is ranks_per_worker for EXPLICIT, 1 for
// SPREAD, and for PACK min(ranks, max_worker_slots) (ranks when that is
// unknown). Host bytes are counted for device backends too, since the
// engine fills and checks device buffers through host staging. Pairing
// the smallest memory with the largest slot count is deliberately
// conservative. Scenarios size their own buffers and skip this check.
//
// SHM with ranks on more than one worker (SPREAD with 2+ ranks, EXPLICIT
// with 2+ workers, PACK beyond max_worker_slots) needs the workers the
// placement may use to share one IPC namespace on one host
// (DecideIpcSharing): the listed workers for EXPLICIT, every registered
// worker for SPREAD and PACK, since the scheduler picks among them later
// (the coordinator checks the picked workers again when the run starts).
// The refusal names the workers that do not share and why. Unknown
// worker_ipc (the CLI) leaves the decision to the coordinator. Only MPICH
// can do it (over UCX's shared memory); Open MPI is refused whatever the
// workers, since mpirun makes each worker a node and it joins nodes over
// the network only (vader is per node; its UCX pml sends other nodes
// network-only addresses).
absl::Status ValidateRunSpec(const v1::RunSpec& spec, const ValidationLimits& limits);

// The synchronization `spec` runs with, as the coordinator stores it:
// SYNC_NONE for point-to-point operations and copies (their own loop),
// else the spec's sync, SYNC_BARRIER when unset.
// REQUIRES: ValidateRunSpec(spec, ...) is OK.
v1::IterationSync ResolvedSync(const v1::RunSpec& spec);

// `spec` as the coordinator stores it: the sync resolved (ResolvedSync) and
// an unset transport as AUTO, so stored runs compare by what they ran with.
// REQUIRES: ValidateRunSpec(spec, ...) is OK.
v1::RunSpec StoredSpec(const v1::RunSpec& spec);

// A spec that passed ValidateRunSpec, in the form the coordinator stores
// (StoredSpec). Validate is the only way to make one, so whatever takes one
// needs no second check; the spec is resolved once, for the checks and the
// stored form alike.
class ValidatedRunSpec {
 public:
  // ValidateRunSpec's errors.
  static absl::StatusOr<ValidatedRunSpec> Validate(const v1::RunSpec& spec,
                                                   const ValidationLimits& limits);
  const v1::RunSpec& spec() const& { return spec_; }
  v1::RunSpec spec() && { return std::move(spec_); }

 private:
  explicit ValidatedRunSpec(v1::RunSpec spec) : spec_(std::move(spec)) {}
  v1::RunSpec spec_;
};

}  // namespace collbench

#endif  // COLLBENCH_API_VALIDATION_H_
