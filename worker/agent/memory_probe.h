// SPDX-License-Identifier: Apache-2.0
// The worker's memory bandwidth (docs/design/workflows.md#verdicts, the roofline): a short copy
// probe at start, whose figures the coordinator turns into the limit of
// the shared-memory path. memcpy is what shared-memory transports do with
// a message (into and out of a shared segment, or once with CMA), so its
// rate is the honest ceiling for them.
#ifndef COLLBENCH_WORKER_AGENT_MEMORY_PROBE_H_
#define COLLBENCH_WORKER_AGENT_MEMORY_PROBE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "collbench/v1/worker.pb.h"

namespace collbench {

struct MemoryProbeOptions {
  int threads = 1;               // copies at once in the all-thread phases (the worker's cpus)
  uint64_t buffer_bytes = 64 << 20;  // per thread, source and destination each: beyond the caches
  uint64_t cache_buffer_bytes = 256 << 10;  // the same, within a core's cache
  double seconds_per_phase = 0.1;    // copies repeat until this much time passed
};

// The ceiling of copying memory on this worker: a buffer copied into
// another over and over, on one thread and then on `threads` at once, both
// with buffers within the caches (`cache_buffer_bytes`) and beyond them
// (`buffer_bytes`). It reports the best rate of one thread (bytes copied
// per second, the fastest single copy of either size) and of all threads
// together (bytes copied over a phase's wall time, the better size), with
// `buffer_bytes` saying which size gave the one-thread figure. A message
// small enough for the caches moves at cache speed, so the ceiling is the
// faster of the two, and a limit derived from it is never below what a
// result can reach. The buffers are touched before timing (no page faults
// counted); the large per-thread buffers shrink (not below 8 MiB) so that
// all together stay within 1 GiB. InvalidArgument for threads < 1, a large
// buffer under 1 MiB or a cache buffer under 4 KiB; ResourceExhausted when
// the buffers cannot be allocated.
absl::StatusOr<v1::MemoryBandwidth> ProbeMemoryBandwidth(const MemoryProbeOptions& options);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_MEMORY_PROBE_H_
