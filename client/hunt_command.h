// SPDX-License-Identifier: Apache-2.0
// `collbench hunt` (docs/design/workflows.md#hunts): find the bad node. Makes a hunt
// workflow, follows its rounds, and prints the suspects (or, with --output
// json, one object: suspects, pairs, groups, workers). Exit 0 with no
// suspect, 3 when one was found, 2 on bad input, 1 when the hunt failed.
#ifndef COLLBENCH_CLIENT_HUNT_COMMAND_H_
#define COLLBENCH_CLIENT_HUNT_COMMAND_H_

#include <string>
#include <vector>

#include "client/coordinator_client.h"

namespace collbench {

int HuntCommand(CoordinatorClient& client, const std::vector<std::string>& args);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_HUNT_COMMAND_H_
