// SPDX-License-Identifier: Apache-2.0
// Conversions between the API's protos (collbench.v1) and the engine's own
// types, shared by the worker (records it parses from collbench-rank), the
// coordinator (results it stores and streams) and the CLI (engine flags it
// turns into a RunSpec).
//
// All functions are pure and thread-safe.
#ifndef COLLBENCH_API_CONVERT_H_
#define COLLBENCH_API_CONVERT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/timestamp.pb.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/workflow.pb.h"
#include "common/histogram.h"
#include "common/records.h"

namespace collbench {

// Histogram <-> v1::Histogram. Exact: bucket counts, sum, min and max all
// survive the trip. Only non-empty buckets go on the wire.
v1::Histogram HistogramToProto(const Histogram& histogram);
// InvalidArgument when sub_buckets is neither 64 nor (for an empty,
// never-set histogram) 0, or a bucket index is out of range.
absl::StatusOr<Histogram> HistogramFromProto(const v1::Histogram& proto);

// The engine's "size" record as the API's SizeResult, field by field;
// `sequence` is the launcher's per-run sequence number.
v1::SizeResult SizeResultFromRecord(const SizeRecord& record, int64_t sequence = 0);
// The reverse; `sequence` is dropped. Fails only on a malformed histogram.
absl::StatusOr<SizeRecord> SizeRecordFromResult(const v1::SizeResult& result);

// The command line after the program name that makes collbench-rank run
// `spec`: the operation first, then only the flags whose RunSpec field is
// set (zero / empty means the engine's default), always ending with
// `--format jsonl`. Fields that are not the engine's (mpi, ranks,
// placement, transport, env, timeout, labels) are left out: the launcher
// turns them into the mpirun command line and environment.
// Warmup follows RunSpec's rule: -1, or 0 while iters is 0, is the default.
// REQUIRES: ValidateRunSpec(spec, ...) is OK, else the engine may reject
// the arguments.
std::vector<std::string> EngineArgs(const v1::RunSpec& spec);

// Every string field EngineArgs puts on collbench-rank's command line
// (operation, backend, dtype, redop, memory, scenario, strategy, model) is
// empty or one word of [A-Za-z0-9][A-Za-z0-9_.+:-]* (at most 64
// characters): no value can start a new flag, carry a space or a path.
// InvalidArgument naming the field ("spec.memory: ..."). ValidateRunSpec
// checks this first; the launcher checks it again before it starts mpirun.
absl::Status CheckEngineArgWords(const v1::RunSpec& spec);

// "barrier", "none", or "" for ITERATION_SYNC_UNSPECIFIED; and back
// (anything else is UNSPECIFIED).
std::string IterationSyncText(v1::IterationSync sync);
v1::IterationSync IterationSyncFromText(absl::string_view text);

// SUCCEEDED, FAILED or CANCELLED: the run will not change again.
bool IsFinalRunState(v1::RunState state);
// When the run took its current state, as far as the run says: its end,
// else its start, else its creation.
google::protobuf::Timestamp StateTimeOf(const v1::Run& run);
// The run's effective transport (Run.effective_transport) once scheduled,
// else the one its spec asks for (AUTO when unset).
v1::Transport EffectiveTransport(const v1::Run& run);

// Where a rank is, for people: "allreduce 1M iteration 412/1000", with its
// phase when it is not measuring ("... (check)").
std::string RankPlace(const v1::RankProgress& rank);
// The run's spec with the effective transport in place of the asked one:
// what results are compared and labelled by.
v1::RunSpec SpecAsRun(const v1::Run& run);

// SUCCEEDED, FAILED or CANCELLED.
bool IsFinalWorkflowState(v1::WorkflowState state);
// "QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED" (the enum's name
// without its WORKFLOW_ prefix); "UNSPECIFIED" otherwise.
std::string WorkflowStateName(v1::WorkflowState state);

// absl::Time <-> google.protobuf.Timestamp, to the nanosecond.
google::protobuf::Timestamp TimestampFromTime(absl::Time time);
absl::Time TimeFromTimestamp(const google::protobuf::Timestamp& timestamp);

// The engine binary for `mpi`: its flavour's rank binary (flavors/), the
// default flavour's when unspecified.
std::string EngineBinary(v1::MpiImplementation mpi);

// The reverse of EngineArgs: parses collbench-rank flags with the engine's
// own parser (ParseEngineArgs) and sets only the RunSpec fields whose flag
// was given, so EngineArgs(spec) -> SpecFromEngineArgs is the identity on
// every engine field. `--format` is accepted and ignored (the service always
// reads JSON lines). InvalidArgument, naming the flag, for what the engine
// rejects and for what a RunSpec cannot carry (--help, --steps,
// --compute-time, --debug-corrupt-rank, --warmup 0 without --iters).
absl::StatusOr<v1::RunSpec> SpecFromEngineArgs(const std::vector<std::string>& engine_args);

}  // namespace collbench

#endif  // COLLBENCH_API_CONVERT_H_
