// SPDX-License-Identifier: Apache-2.0
#include "common/grpc_log.h"

#include <grpc/support/log.h>

#include "common/log.h"

namespace collbench {
namespace {

void ToLog(gpr_log_func_args* args) {
  const LogLevel level = args->severity == GPR_LOG_SEVERITY_ERROR ? LogLevel::kWarn
                                                                   : LogLevel::kDebug;
  LogEvent(level, "grpc", args->message == nullptr ? "" : args->message)
      .Str("file", args->file == nullptr ? "" : args->file)
      .Int("line", args->line);
}

}  // namespace

void RouteGrpcLogsToLog() { gpr_set_log_function(&ToLog); }

}  // namespace collbench
