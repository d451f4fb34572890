// SPDX-License-Identifier: Apache-2.0
// A gRPC server interceptor that reports every finished call (method, status
// code, and for unary calls the time it took) to a callback; the coordinator
// feeds collbench_api_requests_total and collbench_api_request_duration_seconds
// with it. It observes only: it never changes or rejects a call.
#ifndef COLLBENCH_SERVER_API_API_INTERCEPTOR_H_
#define COLLBENCH_SERVER_API_API_INTERCEPTOR_H_

#include <grpcpp/support/server_interceptor.h>

#include <functional>
#include <memory>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace collbench {

// code: the gRPC code's name ("OK", "INVALID_ARGUMENT"); latency: zero for
// streaming calls, whose length says nothing about the server.
using ApiCallObserver =
    std::function<void(absl::string_view method, absl::string_view code, absl::Duration latency)>;

// `clock` (not owned; outlives the server) times unary calls.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewApiInterceptorFactory(
    ApiCallObserver observer, const Clock* clock);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_API_INTERCEPTOR_H_
