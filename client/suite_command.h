// SPDX-License-Identifier: Apache-2.0
// `collbench suite list | run NAME [--profile P] | show ID` (docs/design/workflows.md#suites):
// runs a suite's cells one at a time on the coordinator, labelled with the
// suite run's id so `show` (and reports) can render the tables again later.
#ifndef COLLBENCH_CLIENT_SUITE_COMMAND_H_
#define COLLBENCH_CLIENT_SUITE_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/suite.h"
#include "client/coordinator_client.h"

namespace collbench {

int SuiteCommand(CoordinatorClient& client, const std::vector<std::string>& args);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_SUITE_COMMAND_H_
