// SPDX-License-Identifier: Apache-2.0
// `collbench advise` and `collbench sweep`
// (docs/design/workflows.md#advice-and-tuning-files): the best configuration
// per operation and size range among stored runs, with the tuning files that
// deploy it; and the runs that give the advisor an algorithm to choose — one
// per algorithm the library offers.
#ifndef COLLBENCH_CLIENT_ADVISE_COMMAND_H_
#define COLLBENCH_CLIENT_ADVISE_COMMAND_H_

#include <string>
#include <vector>

#include "client/coordinator_client.h"

namespace collbench {

int AdviseCommand(CoordinatorClient& client, const std::vector<std::string>& args);
int SweepCommand(CoordinatorClient& client, const std::vector<std::string>& args);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_ADVISE_COMMAND_H_
