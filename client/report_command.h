// SPDX-License-Identifier: Apache-2.0
// `collbench report RUN... | --suite ID -o FILE.html` (docs/design/workflows.md#reports): one
// self-contained HTML page (analysis/report.h) for a run, several runs
// compared (the first is the baseline) or a stored suite run, written
// atomically: a reader of FILE sees the old page or the whole new one.
#ifndef COLLBENCH_CLIENT_REPORT_COMMAND_H_
#define COLLBENCH_CLIENT_REPORT_COMMAND_H_

#include <string>
#include <vector>

#include "client/coordinator_client.h"

namespace collbench {

int ReportCommand(CoordinatorClient& client, const std::vector<std::string>& args);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_REPORT_COMMAND_H_
