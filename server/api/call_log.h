// SPDX-License-Identifier: Apache-2.0
// A gRPC server interceptor that logs every finished call (docs/design/observability.md#logs),
// through common/log.h, as server/http/request_log.h does for HTTP:
//
//   - refused (INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED,
//     NOT_FOUND, ALREADY_EXISTS, FAILED_PRECONDITION, RESOURCE_EXHAUSTED,
//     ...): warn, event "grpc.refused";
//   - failed (INTERNAL, UNKNOWN, DATA_LOSS, UNAVAILABLE): error,
//     event "grpc.failed";
//   - served (OK, or CANCELLED by the client): info for calls that change
//     state, debug for reads (Get*, List*, Watch*), health checks and
//     reflection, event "grpc.call";
//   - a worker's stream (WorkerGateway): debug whatever its end, as the run
//     manager logs its registration, refusal (throttled) and loss.
//
// Each line names the method, the code, the error message, the peer and
// the caller (Authorizer::CallerOf: "token N" or "peer HOST", never a
// token), and the call's request id (common/log.h's RequestIdFor, from the
// client's x-request-id metadata), which the answer's initial metadata
// carries back as x-request-id. It observes only: it never changes or
// rejects a call.
#ifndef COLLBENCH_SERVER_API_CALL_LOG_H_
#define COLLBENCH_SERVER_API_CALL_LOG_H_

#include <grpcpp/support/server_interceptor.h>

#include <memory>

#include "common/clock.h"
#include "server/auth/authorizer.h"

namespace collbench {

// `authorizer` and `clock` (which times each call) are not owned and
// outlive the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewCallLogInterceptorFactory(
    const Authorizer* authorizer, const Clock* clock);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_CALL_LOG_H_
