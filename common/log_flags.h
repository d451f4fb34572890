// SPDX-License-Identifier: Apache-2.0
// --log-format and --log-level, the same for every service binary
// (collbench-coordinator, collbench-worker): common/log.h's options from
// the command line.
#ifndef COLLBENCH_COMMON_LOG_FLAGS_H_
#define COLLBENCH_COMMON_LOG_FLAGS_H_

#include <string>

#include "absl/status/status.h"
#include "common/flag_parser.h"

namespace collbench {

struct LogFlags {
  std::string format = "auto";  // auto, json, text
  std::string level = "info";   // debug, info, warn, error
};

// Defines both flags on `parser`; `values` must outlive its Parse().
void AddLogFlags(FlagParser& parser, LogFlags* values);

// Sets the process's log options (stderr) from the flags; InvalidArgument
// naming the flag, and nothing set, when one is not valid.
absl::Status ApplyLogFlags(const LogFlags& values);

}  // namespace collbench

#endif  // COLLBENCH_COMMON_LOG_FLAGS_H_
