// SPDX-License-Identifier: Apache-2.0
#include "server/api/grpc_adapter.h"

#include <optional>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "server/api/authorize.h"
#include "server/core/admission.h"

namespace collbench {
namespace {

// The call's `authorization` metadata, empty without one.
absl::string_view AuthorizationOf(const grpc::CallbackServerContext* context) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  return it == metadata.end() ? absl::string_view()
                              : absl::string_view(it->second.data(), it->second.size());
}

const google::protobuf::ServiceDescriptor& CoordinatorDescriptor() {
  return *google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
      v1::Coordinator::service_full_name());
}

// OK when the table serves every method of the service as its own kind,
// and names no other.
absl::Status CheckTableServesService(const google::protobuf::ServiceDescriptor& service) {
  std::set<std::string> served;
  for (const ApiMethod& method : ApiMethods()) {
    const google::protobuf::MethodDescriptor* rpc = service.FindMethodByName(method.name);
    if (rpc == nullptr) {
      return absl::InternalError(
          absl::StrCat("the method table's ", method.name, " is no method of ", service.name()));
    }
    if (rpc->server_streaming() != method.streaming || rpc->client_streaming()) {
      return absl::InternalError(
          absl::StrCat("the method table serves ", method.name, " as the wrong kind of call"));
    }
    served.insert(method.name);
  }
  for (int i = 0; i < service.method_count(); ++i) {
    if (served.count(service.method(i)->name()) == 0) {
      return absl::InternalError(
          absl::StrCat(service.name(), ".", service.method(i)->name(),
                       " is not in the method table (server/api/method_table.cc)"));
    }
  }
  return absl::OkStatus();
}

// The generated service, each method marked as a callback method served
// from the table.
class GrpcApiService final : public v1::Coordinator::Service {
 public:
  explicit GrpcApiService(const GrpcEnv& env) {
    const google::protobuf::ServiceDescriptor& service = CoordinatorDescriptor();
    for (const ApiMethod& method : ApiMethods()) {
      MarkMethodCallback(service.FindMethodByName(method.name)->index(), method.grpc_handler(env));
    }
  }
};

}  // namespace

absl::StatusOr<CallContext> AuthorizeGrpcCall(const GrpcEnv& env,
                                              const grpc::CallbackServerContext* context,
                                              Role needed) {
  const absl::string_view authorization = AuthorizationOf(context);
  if (absl::Status allowed = Authorize(env.authorizer, authorization, needed); !allowed.ok()) {
    return allowed;
  }
  return CallContext{CallerOf(env.authorizer, authorization, context->peer())};
}

void AddRetryAfter(grpc::CallbackServerContext* context, const absl::Status& status) {
  if (const std::optional<int64_t> retry_s = RetryAfterSeconds(status)) {
    context->AddTrailingMetadata("retry-after", std::to_string(*retry_s));
  }
}

absl::StatusOr<std::unique_ptr<grpc::Service>> NewGrpcApiService(const GrpcEnv& env) {
  if (absl::Status whole = CheckTableServesService(CoordinatorDescriptor()); !whole.ok()) {
    return whole;
  }
  return std::unique_ptr<grpc::Service>(new GrpcApiService(env));
}

}  // namespace collbench
