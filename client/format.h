// SPDX-License-Identifier: Apache-2.0
// How the CLI shows runs and results: tables for people, JSON lines and CSV
// for tools. Pure functions over the API messages, apart from any I/O.
#ifndef COLLBENCH_CLIENT_FORMAT_H_
#define COLLBENCH_CLIENT_FORMAT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analysis/run_set.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/worker.pb.h"

namespace collbench {

enum class OutputKind { kTable, kJsonl, kCsv };

absl::StatusOr<OutputKind> ParseOutputKind(absl::string_view text);

// "queued", "running", ... (lower case, for tables).
std::string RunStateName(v1::RunState state);
// The state, and for a queued run why it waits: "queued (waiting for
// workers/x (draining))".
std::string RunStateText(const v1::Run& run);
std::string WorkerStateName(v1::WorkerState state);
// The state as `collbench workers` shows it: its name, or "lost/draining"
// for a drained worker that is gone (the drain holds when it comes back).
std::string WorkerStateText(const v1::Worker& worker);

// One line per run: name, state, operation, backend/mpi, ranks, placement,
// sizes done, created, error.
std::string FormatRunList(const std::vector<v1::Run>& runs);

// One line per worker: name, state, host, slots, cpus, memory, GPUs,
// container (runtime, "host" or "host?"), IPC namespace id, run. CPUs and
// memory are what the worker may use (its cgroup limits applied).
std::string FormatWorkerList(const std::vector<v1::Worker>& workers);

// A run's header and one row per size: the engine's table columns. The
// header says where the ranks ran ("# placement: ...", container_format.h)
// and who launched them ("# launched by ...").
std::string FormatRunResults(const v1::Run& run, const std::vector<v1::SizeResult>& results,
                             OutputKind kind);

// One row of the live view while a run goes on.
std::string FormatResultRow(const v1::SizeResult& result);
std::string ResultHeader();

// Several runs side by side, matched by (operation, dtype, redop, bytes):
// avg latency of each and its ratio to the first run, plus the fastest
// where its win is significant (SignificantFastest). The table names each
// run [i] in its header lines, each followed by its placement, and starts
// with SyncMismatchWarning's line when the runs differ in iteration
// synchronization. CSV is long: one line per run and size, with the run's
// name, the ratio to the first run as a number and fastest as 1 or 0.
std::string FormatComparison(const std::vector<RunWithResults>& runs, OutputKind kind);

// One line saying the runs differ in iteration synchronization and why
// that matters, or "" when they all ran alike.
std::string SyncMismatchWarning(const std::vector<RunWithResults>& runs);

// "allreduce mpi/openmpi 4 ranks spread" — what distinguishes a run.
std::string DescribeRun(const v1::Run& run);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_FORMAT_H_
