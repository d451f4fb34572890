// SPDX-License-Identifier: Apache-2.0
#include "server/api/api_interceptor.h"

#include <string>
#include <utility>

#include "absl/status/status.h"

namespace collbench {
namespace {

using grpc::experimental::InterceptionHookPoints;

class ApiInterceptor final : public grpc::experimental::Interceptor {
 public:
  ApiInterceptor(const ApiCallObserver* observer, const Clock* clock,
                 grpc::experimental::ServerRpcInfo* info)
      : observer_(observer),
        clock_(clock),
        method_(info->method() == nullptr ? "" : info->method()),
        unary_(info->type() == grpc::experimental::ServerRpcInfo::Type::UNARY),
        start_(clock->Now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      const absl::Duration latency = unary_ ? clock_->Now() - start_ : absl::ZeroDuration();
      (*observer_)(method_,
                   absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())),
                   latency);
    }
    methods->Proceed();
  }

 private:
  const ApiCallObserver* const observer_;
  const Clock* const clock_;
  const std::string method_;
  const bool unary_;
  const absl::Time start_;
};

class ApiInterceptorFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  ApiInterceptorFactory(ApiCallObserver observer, const Clock* clock)
      : observer_(std::move(observer)), clock_(clock) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new ApiInterceptor(&observer_, clock_, info);
  }

 private:
  const ApiCallObserver observer_;
  const Clock* const clock_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewApiInterceptorFactory(
    ApiCallObserver observer, const Clock* clock) {
  return std::make_unique<ApiInterceptorFactory>(std::move(observer), clock);
}

}  // namespace collbench
