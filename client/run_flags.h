// SPDX-License-Identifier: Apache-2.0
// `collbench run OPERATION [engine flags] [run flags]`: the spec in the run
// flags' words (api/run_flags.h, the vocabulary the coordinator's suites
// share) plus how the CLI should wait and print (--wait, --watch,
// --output, --request-id).
#ifndef COLLBENCH_CLIENT_RUN_FLAGS_H_
#define COLLBENCH_CLIENT_RUN_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/format.h"
#include "collbench/v1/run.pb.h"

namespace collbench {

struct RunRequest {
  v1::RunSpec spec;
  std::string request_id;
  bool wait = false;   // block until the run ends, then print its results
  bool watch = false;  // print each size as it arrives
  OutputKind output = OutputKind::kTable;
};

// InvalidArgument naming the flag on bad input.
absl::StatusOr<RunRequest> ParseRunFlags(const std::vector<std::string>& args);

std::string RunUsage();

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_RUN_FLAGS_H_
