// SPDX-License-Identifier: Apache-2.0
#include "server/api/call_log.h"

#include <grpcpp/server_context.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace collbench {
namespace {

using grpc::experimental::InterceptionHookPoints;

// One client metadata entry, empty without it.
std::string Metadata(const grpc::ServerContextBase* context, const char* key) {
  if (context == nullptr) return "";
  const auto& metadata = context->client_metadata();
  auto it = metadata.find(key);
  return it == metadata.end() ? "" : std::string(it->second.data(), it->second.size());
}

// A worker's stream: the run manager logs its registration, refusal
// (throttled, so that a stranger hammering the port cannot flood the log)
// and loss; its end here is debug, whatever its code.
bool IsWorkerStream(absl::string_view method) {
  return absl::StartsWith(method, "/collbench.v1.WorkerGateway/");
}

// Whether a call only reads.
bool Quiet(absl::string_view method) {
  const absl::string_view name = method.substr(method.rfind('/') + 1);
  return absl::StartsWith(name, "Get") || absl::StartsWith(name, "List") ||
         absl::StartsWith(name, "Watch") || absl::StartsWith(method, "/grpc.");
}

enum class Outcome { kServed, kRefused, kFailed };

Outcome OutcomeOf(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
    case grpc::StatusCode::CANCELLED:
      return Outcome::kServed;
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::DATA_LOSS:
    case grpc::StatusCode::UNAVAILABLE:
      return Outcome::kFailed;
    default:
      return Outcome::kRefused;
  }
}

LogLevel LevelOf(absl::string_view method, Outcome outcome) {
  if (IsWorkerStream(method)) return LogLevel::kDebug;
  switch (outcome) {
    case Outcome::kServed: return Quiet(method) ? LogLevel::kDebug : LogLevel::kInfo;
    case Outcome::kRefused: return LogLevel::kWarn;
    case Outcome::kFailed: return LogLevel::kError;
  }
  return LogLevel::kInfo;
}

absl::string_view EventOf(Outcome outcome) {
  switch (outcome) {
    case Outcome::kServed: return "grpc.call";
    case Outcome::kRefused: return "grpc.refused";
    case Outcome::kFailed: return "grpc.failed";
  }
  return "grpc.call";
}

class CallLogInterceptor final : public grpc::experimental::Interceptor {
 public:
  CallLogInterceptor(const Authorizer* authorizer, const Clock* clock,
                     grpc::experimental::ServerRpcInfo* info)
      : authorizer_(authorizer),
        clock_(clock),
        context_(info->server_context()),
        method_(info->method() == nullptr ? "" : info->method()),
        start_(clock->Now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace("x-request-id", RequestId());
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      Log(methods->GetSendStatus());
    }
    methods->Proceed();
  }

 private:
  // Read when first needed, once the client's metadata is in.
  const std::string& RequestId() {
    if (request_id_.empty()) request_id_ = RequestIdFor(Metadata(context_, "x-request-id"));
    return request_id_;
  }

  void Log(const grpc::Status& status) {
    const Outcome outcome = OutcomeOf(status.error_code());
    const LogLevel level = LevelOf(method_, outcome);
    if (!LogEnabled(level)) return;
    const std::string peer = context_ == nullptr ? "" : context_->peer();
    const std::string code =
        absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()));
    LogEvent(level, EventOf(outcome),
             absl::StrCat(method_, " ", code,
                          status.error_message().empty() ? "" : ": ", status.error_message()))
        .Str("request_id", RequestId())
        .Str("method", method_)
        .Str("code", code)
        .StrIfSet("error", status.error_message())
        .Str("peer", peer)
        .Str("caller", authorizer_->CallerOf(Metadata(context_, "authorization"), peer))
        .Double("latency_ms", absl::ToDoubleMilliseconds(clock_->Now() - start_));
  }

  const Authorizer* const authorizer_;
  const Clock* const clock_;
  const grpc::ServerContextBase* const context_;
  const std::string method_;
  std::string request_id_;  // RequestId()
  const absl::Time start_;
};

class CallLogInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  CallLogInterceptorFactory(const Authorizer* authorizer, const Clock* clock)
      : authorizer_(authorizer), clock_(clock) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new CallLogInterceptor(authorizer_, clock_, info);
  }

 private:
  const Authorizer* const authorizer_;
  const Clock* const clock_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewCallLogInterceptorFactory(
    const Authorizer* authorizer, const Clock* clock) {
  return std::make_unique<CallLogInterceptorFactory>(authorizer, clock);
}

}  // namespace collbench
