// SPDX-License-Identifier: Apache-2.0
// The JSON-lines records collbench-rank prints with `--format jsonl` and the
// agent and coordinator parse (docs/design/data-plane.md#output). Field names are part of
// the contract with external tools; keep them stable.
//
// Every line is one JSON object with a "kind": "start", "size", "end" or
// "error". ToJsonLine() never ends with a newline; ParseJsonLine() accepts
// exactly what ToJsonLine() writes, plus unknown fields (ignored) so newer
// engines can add fields without breaking older parsers.
#ifndef COLLBENCH_COMMON_RECORDS_H_
#define COLLBENCH_COMMON_RECORDS_H_

#include <cstdint>
#include <map>
#include <string>
#include "absl/strings/string_view.h"
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "common/histogram.h"

namespace collbench {

struct StartRecord {
  // The run's settings as option name -> value text (the "spec echo").
  std::map<std::string, std::string> spec;
  int nranks = 0;
  std::string mpi_library;  // "Open MPI" or "MPICH"
  std::string mpi_version;  // the library's own version line
  std::string nccl_version;  // empty when the build or run uses no NCCL
  std::vector<std::string> hosts;  // host name of every rank, by rank
  // What could change the numbers: kernel, CPU model, relevant environment
  // variables (NCCL_*, UCX_*, OMPI_MCA_*, MPIR_CVAR_*, ...).
  std::map<std::string, std::string> environment;
  std::string fingerprint;  // hex digest of `environment`
  std::string collbench_version;
  // The size records the run will report: sizes x (dtype, redop)
  // combinations; progress counts against it. 0 when unknown.
  uint64_t sizes_total = 0;

  bool operator==(const StartRecord&) const = default;
};

// One rank's view of one size
// (docs/design/data-plane.md#statistics-over-ranks): its mean, p50 and p99 over
// its own iterations and the host it ran on.
struct RankTiming {
  int rank = 0;
  std::string host;
  double mean_s = 0, p50_s = 0, p99_s = 0;
  // Its mean is above kStragglerRatio x the median rank's (rank_spread.h).
  bool straggler = false;

  bool operator==(const RankTiming&) const = default;
};

struct SizeRecord {
  std::string operation;
  uint64_t bytes = 0;
  uint64_t count = 0;  // elements per rank
  std::string dtype;
  std::string redop;  // empty for operations that do not reduce
  int root = -1;      // -1 for operations without a root
  uint64_t iters = 0;
  double avg_s = 0, min_s = 0, max_s = 0;
  double p50_s = 0, p90_s = 0, p99_s = 0;
  double algbw_Bps = 0, busbw_Bps = 0;
  uint64_t wrong = 0;  // mismatched elements; 0 when not checked
  bool checked = false;
  Histogram histogram;  // every rank's iterations, merged
  // Scenario-specific numbers (e.g. "ranks", "efficiency"); omitted if empty.
  std::map<std::string, double> scenario;
  // "barrier" or "none" (docs/design/data-plane.md#iteration-synchronization); empty in
  // records of engines that predate the field.
  std::string sync;
  // Every rank, by rank; the slowest of them (-1 when `ranks` is empty) and
  // its mean over the median rank's (AttributeRanks in rank_spread.h).
  std::vector<RankTiming> ranks;
  int slowest_rank = -1;
  double slowest_vs_median = 0;
  // One buffer was input and output (--in-place); written only when true.
  bool in_place = false;

  bool operator==(const SizeRecord&) const = default;
};

struct EndRecord {
  std::string status;  // "ok", "wrong" (validation failed) or "failed"
  uint64_t sizes = 0;
  uint64_t wrong = 0;
  double elapsed_s = 0;
  // The run's summary figure, as nccl-tests' "Avg bus bandwidth": the mean
  // of busbw_Bps over the size records it reported. Written only when
  // positive (a run that measured something).
  double avg_busbw_Bps = 0;

  bool operator==(const EndRecord&) const = default;
};

struct ErrorRecord {
  std::string message;

  bool operator==(const ErrorRecord&) const = default;
};

using Record = std::variant<StartRecord, SizeRecord, EndRecord, ErrorRecord>;

std::string ToJsonLine(const Record& record);
// A stored result as one JSON line (`collbench show --output jsonl`): the
// size record's fields, names and types as ToJsonLine writes them, plus
// the run that measured it and the result's place in that run.
std::string ToStoredJsonLine(const SizeRecord& record, absl::string_view run, int64_t sequence);
absl::StatusOr<Record> ParseJsonLine(absl::string_view line);

}  // namespace collbench

#endif  // COLLBENCH_COMMON_RECORDS_H_
