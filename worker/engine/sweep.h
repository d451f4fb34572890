// SPDX-License-Identifier: Apache-2.0
// The shared driver every operation runs under: for each size it allocates
// and fills the buffers, times the iterations (timing.h), validates one more
// call when asked, gathers the statistics to rank 0 and reports the size.
// It speaks only to interfaces (Communicator, Backend, MemoryKind,
// DeviceRuntime), so tests drive it with fakes and no MPI.
#ifndef COLLBENCH_WORKER_ENGINE_SWEEP_H_
#define COLLBENCH_WORKER_ENGINE_SWEEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/records.h"
#include "worker/engine/collectives/operation.h"
#include "engine_spec/options.h"
#include "worker/engine/timing.h"

namespace collbench {

class Backend;
class Communicator;
class ProgressSlot;
class DeviceRuntime;
class MemoryKind;
class Reporter;

struct SweepEnv {
  const EngineOptions* options = nullptr;
  const Operation* op = nullptr;
  Backend* backend = nullptr;
  Communicator* comm = nullptr;
  // Kinds for buffers in host and in device memory; device_memory may be
  // null when nothing runs on a device.
  MemoryKind* host_memory = nullptr;
  MemoryKind* device_memory = nullptr;
  DeviceRuntime* device = nullptr;  // required when device buffers are used
  Reporter* reporter = nullptr;     // rank 0 only; null elsewhere
  // Host name of every rank, by rank (rank 0 only; may be empty elsewhere).
  const std::vector<std::string>* hosts = nullptr;
  // This rank's progress slot (common/progress_slot.h); null: none.
  ProgressSlot* progress = nullptr;
};

struct SweepTotals {
  uint64_t sizes = 0;
  uint64_t wrong = 0;  // over all sizes and ranks
  // Sum of the reported sizes' busbw_Bps (rank 0 only; 0 elsewhere), for
  // the run's average bus bandwidth.
  double busbw_sum_Bps = 0;

  // The mean busbw over the sizes reported, 0 when none.
  double AverageBusbwBps() const { return sizes > 0 ? busbw_sum_Bps / sizes : 0.0; }
};

// Runs every size of SweepSizes(*options). Every rank calls it. A local
// failure (allocation, fill) is agreed on before any collective so all
// ranks return it; a failure inside the data path is returned as is.
absl::StatusOr<SweepTotals> RunSweep(const SweepEnv& env);

// The operation's context for one size. `bytes` is the per-rank message.
OpContext MakeOpContext(const EngineOptions& options, const Communicator& comm,
                        uint64_t bytes);

// Copies the timing summary into `record` (iters, avg/min/max, percentiles,
// histogram) with algbw = alg_bytes / avg and busbw = algbw x bus_factor.
void FillTimings(const RankSummary& summary, double alg_bytes, double bus_factor,
                 SizeRecord* record);

// Copies each rank's statistics into `record->ranks` with its host (from
// `hosts`, by rank, when it has one), sets the synchronization the
// iterations ran with and names the slowest rank (AttributeRanks).
void FillRanks(const RankSummary& summary, const std::vector<std::string>* hosts,
               IterationSync sync, SizeRecord* record);

// The iteration policy's synchronization for `options` (resolved by the
// engine before it runs; collectives and scenarios).
bool BarrierAfterEachIteration(const EngineOptions& options);

// Builds the record rank 0 reports for one size from the summary.
SizeRecord MakeSizeRecord(const Operation& op, const OpContext& ctx,
                          const RankSummary& summary, bool checked, uint64_t wrong);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_SWEEP_H_
