// SPDX-License-Identifier: Apache-2.0
// The operator's commands on workers and runs that exist (docs/operations/lifecycle.md,
// "Drain and undrain", "Deleting a worker", "Deleting runs"):
//   collbench drain WORKER...       no new run on it until undrained
//   collbench undrain WORKER...     it takes runs again
//   collbench delete RUN...         a finished run and its results
//   collbench workers delete WORKER...   a worker that is gone
// Each name is handled in turn; one that fails is reported on stderr and
// the rest are still tried. Exit 0 when all succeeded, else the exit code
// of the first failure (2 for an unknown name, 1 for a refusal such as an
// active run).
#ifndef COLLBENCH_CLIENT_LIFECYCLE_COMMANDS_H_
#define COLLBENCH_CLIENT_LIFECYCLE_COMMANDS_H_

#include <string>
#include <vector>

#include "client/coordinator_client.h"

namespace collbench {

// `drain` when `drain`, else `undrain`.
int DrainCommand(CoordinatorClient& client, const std::vector<std::string>& args, bool drain);
int DeleteRunsCommand(CoordinatorClient& client, const std::vector<std::string>& args);
// `workers delete ...`: `args` are the words after `delete`.
int DeleteWorkersCommand(CoordinatorClient& client, const std::vector<std::string>& args);
// `collbench workers clear WORKER...`: ends SUSPECT quarantines.
int ClearWorkersCommand(CoordinatorClient& client, const std::vector<std::string>& args);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_LIFECYCLE_COMMANDS_H_
