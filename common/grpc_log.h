// SPDX-License-Identifier: Apache-2.0
// Sends gRPC's own log lines (gpr_log: connection errors, TLS handshake
// failures) through common/log.h, so that a process whose log is JSON
// writes nothing else to stderr. Event "grpc", the source file and line as
// fields; gRPC's ERROR is warn (a peer's failure, not ours), INFO and
// DEBUG are debug.
#ifndef COLLBENCH_COMMON_GRPC_LOG_H_
#define COLLBENCH_COMMON_GRPC_LOG_H_

namespace collbench {

// Call once, early in main(); gRPC keeps the function for the process.
void RouteGrpcLogsToLog();

}  // namespace collbench

#endif  // COLLBENCH_COMMON_GRPC_LOG_H_
