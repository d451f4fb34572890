// SPDX-License-Identifier: Apache-2.0
// `collbench baseline` and `collbench check`
// (docs/design/workflows.md#baselines-and-checks): keep the distributions of a
// set of runs, and compare new runs with them. A check exits 0 when nothing
// regressed, 3 when something did, 2 on bad input, so a CI job can gate on it.
#ifndef COLLBENCH_CLIENT_VERDICT_COMMANDS_H_
#define COLLBENCH_CLIENT_VERDICT_COMMANDS_H_

#include <string>
#include <vector>

#include "client/coordinator_client.h"

namespace collbench {

// A check found a regression.
inline constexpr int kExitRegression = 3;

// `collbench baseline save NAME (RUN... | --suite ID | --workflow ID)
// [--description TEXT] [--replace] | list | show NAME | delete NAME`.
int BaselineCommand(CoordinatorClient& client, const std::vector<std::string>& args);

// `collbench check (RUN... | --suite ID | --workflow ID) --baseline NAME
// [--threshold F] [--alpha F] [--output table|json]`.
int CheckCommand(CoordinatorClient& client, const std::vector<std::string>& args);

// `collbench schedule create NAME --every D (--suite S [--profile P] |
// OPERATION [run flags]) [--baseline B] [--workers SELECTOR] [--window D]
// | list | show NAME | pause NAME | resume NAME | delete NAME`.
int ScheduleCommand(CoordinatorClient& client, const std::vector<std::string>& args);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_VERDICT_COMMANDS_H_
