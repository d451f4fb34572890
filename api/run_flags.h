// SPDX-License-Identifier: Apache-2.0
// The run flags: a RunSpec in `collbench run`'s words. The engine's flags
// (collbench-rank's own parser, engine_spec/options.h) fill the engine's
// fields; the service's (--ranks, --placement, --workers,
// --ranks-per-worker, --share-host, --transport, --mpi, --env, --label,
// --timeout, --hang-timeout) the rest. One vocabulary for every place that
// speaks it: the CLI's commands (client/run_flags.h adds how it waits and
// prints) and the coordinator's suites, whose cells are written in these
// words (analysis/suites/README.md) and planned by server/workflows.
//
// Errors are InvalidArgument in the flags' words ("invalid --placement
// 'x': use pack or spread (or --workers)"), the same wherever the words
// came from. Pure functions; any thread.
#ifndef COLLBENCH_API_RUN_FLAGS_H_
#define COLLBENCH_API_RUN_FLAGS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collbench/v1/run.pb.h"

namespace collbench {

// A placement policy by name: pack or spread (explicit placements name
// their workers instead).
absl::StatusOr<v1::PlacementPolicy> PlacementPolicyNamed(absl::string_view name);
// auto, shm, tcp or ucx.
absl::StatusOr<v1::Transport> TransportNamed(absl::string_view name);
// An MPI library by its flavour's name (flavors/registry.h).
absl::StatusOr<v1::MpiImplementation> MpiNamed(absl::string_view name);

// A flag a front end adds to the run flags (the CLI's --wait, --output):
// parsed in the same pass, so that a value is never mistaken for a flag.
// A flag without a value ignores one given inline (--wait=yes).
struct RunFlagExtension {
  std::string name;  // "--output"
  bool takes_value = false;
  std::function<absl::Status(const std::string& value)> set;
};

// The spec the words describe: engine flags and an OPERATION for the
// engine's parser, service flags above; ranks default to 2, an explicit
// placement's ranks per worker to the ranks spread over its workers.
absl::StatusOr<v1::RunSpec> SpecFromRunFlags(const std::vector<std::string>& args,
                                             const std::vector<RunFlagExtension>& extensions = {});

}  // namespace collbench

#endif  // COLLBENCH_API_RUN_FLAGS_H_
