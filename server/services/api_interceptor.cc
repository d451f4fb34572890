// SPDX-License-Identifier: Apache-2.0
#include "server/services/api_interceptor.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/clock.h"

namespace collbench {
namespace {

using grpc::experimental::InterceptionHookPoints;

class ApiInterceptor final : public grpc::experimental::Interceptor {
 public:
  ApiInterceptor(const ApiCallObserver* observer, grpc::experimental::ServerRpcInfo* info)
      : observer_(observer),
        method_(info->method() == nullptr ? "" : info->method()),
        unary_(info->type() == grpc::experimental::ServerRpcInfo::Type::UNARY),
        start_(absl::Now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      const absl::Duration latency = unary_ ? absl::Now() - start_ : absl::ZeroDuration();
      (*observer_)(method_,
                   absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())),
                   latency);
    }
    methods->Proceed();
  }

 private:
  const ApiCallObserver* const observer_;
  const std::string method_;
  const bool unary_;
  const absl::Time start_;
};

class ApiInterceptorFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit ApiInterceptorFactory(ApiCallObserver observer) : observer_(std::move(observer)) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new ApiInterceptor(&observer_, info);
  }

 private:
  const ApiCallObserver observer_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewApiInterceptorFactory(
    ApiCallObserver observer) {
  return std::make_unique<ApiInterceptorFactory>(std::move(observer));
}

}  // namespace collbench
