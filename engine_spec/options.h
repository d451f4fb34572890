// SPDX-License-Identifier: Apache-2.0
// The engine's settings: what collbench-rank's command line says, as a plain
// struct, and the size sweep they describe. Parsing is MPI-free so it can be
// unit-tested and reused by the CLI (`collbench run OPERATION [engine
// flags]`) and by api/, which validates a RunSpec through these options.
#ifndef COLLBENCH_ENGINE_SPEC_OPTIONS_H_
#define COLLBENCH_ENGINE_SPEC_OPTIONS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine_spec/types.h"

namespace collbench {

enum class OutputFormat { kTable, kJsonl };

struct EngineOptions {
  // An operation (allreduce, latency, h2d, ...) or, with a scenario, the
  // scenario's name.
  std::string operation;

  // Sizes in bytes of the per-rank message (count x dtype size). Either the
  // explicit list or the geometric sweep min..max by factor.
  std::vector<uint64_t> sizes_bytes;
  uint64_t min_bytes = 8;
  uint64_t max_bytes = uint64_t{16} << 20;
  double factor = 2.0;

  // Fixed iteration counts; unset means the size-dependent defaults.
  std::optional<int> iters;
  std::optional<int> warmup;
  // Adaptive mode: seconds to spend per size (stops early once the p50's 95%
  // confidence interval is within 1%).
  std::optional<double> time_budget_s;

  std::string backend = "mpi";
  std::string memory;  // empty: the backend's natural kind
  // ParseEngineArgs sets the operation's DefaultDataType when --dtype is
  // not given.
  DataType dtype = DataType::kFloat32;
  ReduceOp redop = ReduceOp::kSum;
  // `--dtype all` / `--redop all` (as nccl-tests' -d all -o all): run every
  // type the backend carries / every operator, one after the other. `dtype`
  // and `redop` then hold the combination being run.
  bool all_dtypes = false;
  bool all_redops = false;
  int root = 0;
  // Unset: the operation's default (EffectiveSync). Set explicitly, or
  // resolved by the engine before it runs.
  std::optional<IterationSync> sync;
  bool check = false;
  // --in-place: one buffer is input and output (MPI_IN_PLACE, NCCL's same
  // pointer), as nccl-tests' in-place columns; operations and backends
  // without such a form are refused (CheckJob).
  bool in_place = false;
  OutputFormat format = OutputFormat::kTable;
  int window = 64;  // messages in flight for bw / bibw, as osu_bw

  // Scenarios.
  std::string scenario;  // "", "parameter-server" or "gradient-replay"
  std::string strategy;  // parameter-server: host, mpi-staged, nccl-chief, mpi-cuda
  std::string model = "resnet50";  // gradient-replay preset or "sizes:1M,4M"
  uint64_t bucket_bytes = uint64_t{25} << 20;  // DDP's default bucket size
  int steps = 0;  // gradient-replay steps per rank count; 0 = default
  std::optional<double> compute_time_s;  // gradient-replay nominal compute/step

  bool help = false;  // --help: print usage, run nothing
  // Testing aid: this rank overwrites one received element after the checked
  // call, so tests can prove --check catches a wrong result.
  std::optional<int> corrupt_rank;
  // Testing aid: this rank spins for `slow_delay_s` inside each timed
  // iteration, after the operation returns, so tests can check that the
  // per-rank view names it (a rank whose completion is slow).
  std::optional<int> slow_rank;
  double slow_delay_s = 100e-6;
};

// The synchronization the sweep uses: `--sync` when given, else barrier for
// collectives and scenarios. Point-to-point patterns (latency, bw, bibw)
// and copies keep their own back-to-back loop, so they are always kNone.
// `collective` is false for point-to-point operations and copies.
IterationSync EffectiveSync(const EngineOptions& options, bool collective);

// InvalidArgument when `--sync barrier` is asked of an operation whose
// pattern it does not apply to (point-to-point and copies).
absl::Status CheckSyncApplies(const EngineOptions& options, bool collective,
                              absl::string_view operation);

// The settings as option name -> text, for the "start" record's spec echo.
std::map<std::string, std::string> SpecEcho(const EngineOptions& options);

// The most sizes one invocation sweeps. A factor close to 1 over a wide
// range would otherwise ask for billions of sizes (--factor 1.000001 from
// 1 B to 1 TiB), each a full measurement.
inline constexpr size_t kMaxSweepSizes = 10000;

// Parses everything after the program name. Errors are InvalidArgument
// naming the flag and the bad value, or the flags that together ask for
// more than kMaxSweepSizes sizes. Without --dtype the type is the
// operation's DefaultDataType (engine_spec/operations.h).
absl::StatusOr<EngineOptions> ParseEngineArgs(const std::vector<std::string>& args);

// The geometric sweep: in increasing order min, min*f, ... (rounded, each
// at least one byte above the one before) up to max inclusive, stopping
// after `limit` sizes. The one definition of a min..max sweep: the engine
// runs it, api/ counts and bounds it. REQUIRES: factor > 1.
std::vector<uint64_t> GeometricSweep(uint64_t min_bytes, uint64_t max_bytes, double factor,
                                     size_t limit);

// The sizes to run: the explicit list as given, or GeometricSweep from
// min to max. At most kMaxSweepSizes for options ParseEngineArgs accepted.
std::vector<uint64_t> SweepSizes(const EngineOptions& options);

// Default iteration counts near OSU's: many for small sizes, fewer for large.
int DefaultIters(uint64_t bytes);
int DefaultWarmup(uint64_t bytes);

// The usage text for --help.
std::string EngineUsage(const std::string& program);

}  // namespace collbench

#endif  // COLLBENCH_ENGINE_SPEC_OPTIONS_H_
