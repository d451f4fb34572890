// SPDX-License-Identifier: Apache-2.0
// What every Coordinator method does around its plain-class call: answer a
// unary call from a Status or StatusOr, and read the caller's
// `authorization` metadata.
#ifndef COLLBENCH_SERVER_SERVICES_UNARY_REPLY_H_
#define COLLBENCH_SERVER_SERVICES_UNARY_REPLY_H_

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "api/status_mapping.h"

namespace collbench::service_reply {

// Answers a unary call with `value`'s status, copying the value into the
// response.
template <typename T>
grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* context,
                                const absl::StatusOr<T>& value, T* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (value.ok()) *response = *value;
  reactor->Finish(ToGrpcStatus(value.status()));
  return reactor;
}

// Answers a unary call with `status` alone.
inline grpc::ServerUnaryReactor* Fail(grpc::CallbackServerContext* context,
                                      const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// The call's `authorization` metadata, empty without one.
inline absl::string_view AuthorizationOf(const grpc::CallbackServerContext* context) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  return it == metadata.end() ? absl::string_view()
                              : absl::string_view(it->second.data(), it->second.size());
}

}  // namespace collbench::service_reply

#endif  // COLLBENCH_SERVER_SERVICES_UNARY_REPLY_H_
