// SPDX-License-Identifier: Apache-2.0
#include "server/http/request_log.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "server/http/request_guard.h"

namespace collbench {
namespace {

// The request's target without its query (which may carry a page token).
absl::string_view PathOf(absl::string_view target) { return target.substr(0, target.find('?')); }

}  // namespace

std::string ErrorMessageOf(absl::string_view body) {
  const nlohmann::json parsed = nlohmann::json::parse(body.begin(), body.end(), nullptr,
                                                     /*allow_exceptions=*/false);
  if (!parsed.is_object()) return "";
  auto message = parsed.find("message");
  return message != parsed.end() && message->is_string() ? message->get<std::string>() : "";
}

void LogHttpRequest(const RequestRecord& record, int http_status, absl::string_view body,
                    absl::Time now) {
  const bool failed = http_status >= 500;
  const bool refused = http_status >= 400 && !failed;
  LogLevel level = IsStateChanging(record.method) ? LogLevel::kInfo : LogLevel::kDebug;
  if (refused) level = LogLevel::kWarn;
  if (failed) level = LogLevel::kError;
  if (!LogEnabled(level)) return;
  const absl::string_view path = PathOf(record.target);
  const std::string error = http_status >= 400 ? ErrorMessageOf(body) : "";
  LogEvent(level, failed ? "http.failed" : refused ? "http.refused" : "http.request",
           absl::StrCat(record.method, " ", path, " ", http_status,
                        error.empty() ? "" : ": ", error))
      .Str("request_id", record.request_id)
      .Str("method", record.method)
      .Str("path", path)
      .Str("route", record.route)
      .Int("status", http_status)
      .StrIfSet("error", error)
      .Str("peer", record.peer)
      .Str("caller", record.caller)
      .Double("latency_ms", absl::ToDoubleMilliseconds(now - record.start));
}

}  // namespace collbench
