// SPDX-License-Identifier: Apache-2.0
// The gRPC adapter of the method table (server/api/method_table.h): the
// Coordinator service, every method served generically. A call is
// authorized first with the method's role and its `authorization:
// Bearer TOKEN` metadata (server/api/authorize.h), then the handler gets
// the decoded request and a CallContext naming the caller; its answer is
// the response, or its Status mapped to gRPC (api/status_mapping.h), with a
// refusal's wait as `retry-after` trailing metadata, as HTTP's Retry-After.
// A watch is written by a GrpcWatchWriter (server/api/grpc_watch_writer.h).
//
// The service is the generated v1::Coordinator::Service with each of its
// methods marked as a callback method from the table, found by name in the
// service's descriptor; NewGrpcApiService refuses to make a service that
// the table does not serve whole.
//
// Thread safety: calls are served from gRPC's callback threads, any number
// at once.
#ifndef COLLBENCH_SERVER_API_GRPC_ADAPTER_H_
#define COLLBENCH_SERVER_API_GRPC_ADAPTER_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/server_callback_handlers.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collbench/v1/coordinator.grpc.pb.h"
#include "server/api/call_context.h"
#include "server/api/grpc_watch_writer.h"
#include "server/api/handlers.h"
#include "server/api/method_table.h"
#include "server/auth/authorizer.h"

namespace collbench {

struct GrpcEnv {
  CoordinatorApi* api = nullptr;           // not owned
  const Authorizer* authorizer = nullptr;  // not owned; may be null: no tokens
};

// The call's context once it passed the check for `needed`, or the refusal
// (Unauthenticated, PermissionDenied).
absl::StatusOr<CallContext> AuthorizeGrpcCall(const GrpcEnv& env,
                                              const grpc::CallbackServerContext* context,
                                              Role needed);

// Adds `retry-after` trailing metadata when `status` carries a wait.
void AddRetryAfter(grpc::CallbackServerContext* context, const absl::Status& status);

// The generic bodies of the gRPC entry points the table makes.
template <typename Req, typename Resp>
grpc::internal::MethodHandler* GrpcUnary(
    const GrpcEnv& env, Role role,
    absl::StatusOr<Resp> (CoordinatorApi::*handler)(const CallContext&, const Req&)) {
  return new grpc::internal::CallbackUnaryHandler<Req, Resp>(
      [env, role, handler](grpc::CallbackServerContext* context, const Req* request,
                           Resp* response) {
        absl::StatusOr<CallContext> call = AuthorizeGrpcCall(env, context, role);
        const absl::StatusOr<Resp> answer =
            call.ok() ? (env.api->*handler)(*call, *request) : call.status();
        if (answer.ok()) *response = *answer;
        AddRetryAfter(context, answer.status());
        grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
        reactor->Finish(ToGrpcStatus(answer.status()));
        return reactor;
      });
}

template <typename Req, typename Event>
grpc::internal::MethodHandler* GrpcServerStream(
    const GrpcEnv& env, Role role,
    absl::StatusOr<std::shared_ptr<Watch<Event>>> (CoordinatorApi::*handler)(const CallContext&,
                                                                             const Req&)) {
  return new grpc::internal::CallbackServerStreamingHandler<Req, Event>(
      [env, role, handler](grpc::CallbackServerContext* context,
                           const Req* request) -> grpc::ServerWriteReactor<Event>* {
        absl::StatusOr<CallContext> call = AuthorizeGrpcCall(env, context, role);
        absl::StatusOr<std::shared_ptr<Watch<Event>>> watch =
            call.ok() ? (env.api->*handler)(*call, *request) : call.status();
        if (!watch.ok()) {
          AddRetryAfter(context, watch.status());
          return new RefusedWatchWriter<Event>(ToGrpcStatus(watch.status()));
        }
        return new GrpcWatchWriter<Event>(*std::move(watch));
      });
}

// The Coordinator service serving every method of ApiMethods() through
// `env`. Internal naming the method when a method of the service is not in
// the table (or is there as the other kind), or the table names one the
// service does not have.
absl::StatusOr<std::unique_ptr<grpc::Service>> NewGrpcApiService(const GrpcEnv& env);

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_GRPC_ADAPTER_H_
