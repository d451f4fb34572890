// SPDX-License-Identifier: Apache-2.0
// The rules a run must keep, checked against the job it is in: made on
// every rank before any communication (docs/design/data-plane.md#bad-input), so each rank
// reaches the same verdict from the same flags and rank count, no agreement
// is needed and the error comes out before MPI moves a byte. api/ asks the
// same rules of a RunSpec before it queues the run (api/validation.cc): the
// service and the engine give one verdict in one wording. A broken rule is
// a RuleError naming the setting; the engine writes it after the flag
// ("--root 4 is out of range for 4 ranks (0..3)"), the service after the
// field path ("spec.root: 4 is out of range for 4 ranks (0..3)").
//
// Thread-safe: pure functions of their arguments (HostMemoryAvailable reads
// /proc/meminfo).
#ifndef COLLBENCH_ENGINE_SPEC_JOB_CHECKS_H_
#define COLLBENCH_ENGINE_SPEC_JOB_CHECKS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine_spec/backends.h"
#include "engine_spec/operations.h"
#include "engine_spec/options.h"

namespace collbench {

// The settings a rule can concern.
enum class Setting {
  kOperation,  // the positional OPERATION
  kRanks,      // the job's rank count (mpirun -np), no flag
  kBackend,
  kDtype,
  kSizes,     // --sizes, one entry (RuleError::index)
  kMinBytes,  // the smallest size of the min..max sweep
  kRoot,
  kMemory,
  kMaxBytes,  // the largest size of the min..max sweep
  kCheck,
  kSync,
  kStrategy,
  kModel,
  kBucketBytes,
  kSteps,
  kComputeTime,
  kFactor,   // the sweep's factor (a size it generates)
  kInPlace,
};

// collbench-rank's flag for `setting` ("--root"); "" for the operation and
// the rank count, which have none.
absl::string_view FlagOf(Setting setting);

struct RuleError {
  Setting setting;
  int index = -1;  // kSizes: which entry of the list
  std::string text;  // what is wrong, worded to follow the flag or field path

  bool operator==(const RuleError&) const = default;
};

// A rule broken on `setting` as a whole (no list entry).
inline RuleError Broken(Setting setting, std::string text) {
  return {setting, -1, std::move(text)};
}

// InvalidArgument "<flag> <text>" (the text alone for settings without a
// flag): how collbench-rank reports the error.
absl::Status EngineError(const RuleError& error);

// A RuleError from `status`, whose message may start with the setting's
// flag (then dropped from the text, EngineError puts it back).
RuleError RuleErrorFrom(Setting setting, const absl::Status& status);

// The `--memory` kinds a run uses for host and device buffers; empty when
// it uses none of that space.
struct MemoryPlan {
  std::string host_kind;
  std::string device_kind;
  bool needs_device = false;  // the CUDA runtime must be initialised
};

// What an operation run (not a scenario) measures, once its rules hold.
struct RunPlan {
  const OperationSpec* op = nullptr;
  const BackendSpec* backend = nullptr;  // EffectiveBackend's entry
  // One set of options per (dtype, redop) combination, in order, with
  // dtype, redop and sync resolved.
  std::vector<EngineOptions> runs;
  MemoryPlan memory;
};

// Every rule of an operation run against a job of `nranks` ranks, in order:
// known operation and backend, --sync applies, then for every combination
// the rules of CheckJob. The first broken rule, or nullopt with `plan`
// filled. REQUIRES: options.scenario is empty.
std::optional<RuleError> PlanRun(const EngineOptions& options, int nranks, RunPlan* plan);

// Root in range, pairs for point-to-point, dtype the backend can carry, every
// size whole elements, an in-place form when --in-place asks, exact
// validation possible, and which memory kinds serve the buffers, for the one
// combination options.dtype/redop.
std::optional<RuleError> CheckJob(const EngineOptions& options, const OperationSpec& op,
                                  const BackendSpec& backend, int nranks, MemoryPlan* plan);

// Every size the run measures is a whole number of options.dtype elements
// (refused, never rounded): a --sizes entry, the sweep's --min-bytes and
// every size --factor makes from it. --max-bytes is only a bound.
std::optional<RuleError> CheckElementWidth(const EngineOptions& options);

// --in-place asked of an operation or a backend without an in-place form.
std::optional<RuleError> CheckInPlace(const EngineOptions& options, const OperationSpec& op,
                                      const BackendSpec& backend);

// The backend an operation runs on: copies (and gemm) always run on "mpi"
// (they use no collective), everything else on --backend.
absl::string_view EffectiveBackend(const EngineOptions& options, const OperationSpec& op);

// The (dtype, redop) combinations a run measures, in order: one, or every
// one `--dtype all` / `--redop all` asks for that the backend carries.
std::vector<std::pair<DataType, ReduceOp>> Combinations(const EngineOptions& options,
                                                        const OperationSpec& op,
                                                        const BackendSpec& backend);

// The size records the run reports: sizes x combinations for an operation,
// the sweep's sizes for a scenario (0 when the options name nothing known).
// The engine announces it in its start record; progress counts against it.
uint64_t PlannedSizeRecords(const EngineOptions& options);

// Bytes of buffers one rank allocates at the largest size of `options`
// (one combination), for the memory fit checks before anything is allocated.
uint64_t PeakBufferBytes(const EngineOptions& options, const OperationSpec& op, int rank,
                         int nranks);

// Whether `bytes` of buffers on each of `ranks_here` ranks fit in
// `available_bytes`. InvalidArgument saying what was asked, what is there
// and `advice` (e.g. "lower --max-bytes").
absl::Status CheckFits(uint64_t bytes_per_rank, int ranks_here, uint64_t available_bytes,
                       const std::string& where, const std::string& advice);

// MemAvailable from /proc/meminfo, in bytes.
absl::StatusOr<uint64_t> HostMemoryAvailable();

}  // namespace collbench

#endif  // COLLBENCH_ENGINE_SPEC_JOB_CHECKS_H_
