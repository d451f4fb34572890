// SPDX-License-Identifier: Apache-2.0
// Structured, levelled logs (docs/design/observability.md#logs): one line per event, with the time,
// the level, an event name ("run.state", "http.refused"), a message for
// people, and fields (run, worker, request_id, caller, error, ...),
// written as JSON or text (common/log_format.h).
//
//   LogInfo("run.state", absl::StrCat(name, " ", state)).Str("run", name).Str("state", state);
//
// The line is written when the LogEvent ends (at the end of the statement),
// with one write per line, so lines of different threads never interleave.
// Below the configured level nothing is formatted.
//
// Never log a secret: tokens, worker secrets and Authorization headers are
// not fields; name a caller by Authorizer::CallerOf.
//
// The configuration is process-wide (a sink is, by nature): the binaries'
// main() set it from --log-format and --log-level. Until then, and in
// processes that never set it (`collbench local`, whose CLI reports
// refusals and failed runs itself; tests), only errors go to stderr, as
// text.
//
// Thread safety: everything here may be called from any thread.
#ifndef COLLBENCH_COMMON_LOG_H_
#define COLLBENCH_COMMON_LOG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/log_format.h"

namespace collbench {

// Receives each whole line, newline included.
using LogSink = std::function<void(absl::string_view line)>;

struct LogOptions {
  LogFormat format = LogFormat::kText;
  LogLevel level = LogLevel::kError;  // lines below it are dropped
  LogSink sink;                      // empty: stderr
};

// Replaces the process's log configuration.
void SetLogOptions(LogOptions options);
// The options of --log-format (auto, json, text; auto looks at whether
// stderr is a terminal) and --log-level, writing to stderr; InvalidArgument
// naming the flag.
absl::StatusOr<LogOptions> LogOptionsFromFlags(absl::string_view format, absl::string_view level);
// Whether a line of `level` would be written.
bool LogEnabled(LogLevel level);

// One line under construction; see the top of this file.
class LogEvent {
 public:
  LogEvent(LogLevel level, absl::string_view event, absl::string_view message = "");
  ~LogEvent();  // writes the line
  LogEvent(const LogEvent&) = delete;
  LogEvent& operator=(const LogEvent&) = delete;

  LogEvent& Str(absl::string_view key, absl::string_view value);
  // Only when `value` is not empty.
  LogEvent& StrIfSet(absl::string_view key, absl::string_view value);
  LogEvent& Int(absl::string_view key, int64_t value);
  LogEvent& Double(absl::string_view key, double value);
  LogEvent& Bool(absl::string_view key, bool value);
  // "error" (the message) and "code" (its name); nothing for OK.
  LogEvent& Error(const absl::Status& status);

 private:
  LogEvent& Add(absl::string_view key, std::string value, bool raw);

  const bool enabled_;
  const LogLevel level_;
  std::string event_;
  std::string message_;
  std::vector<LogField> fields_;
};

inline LogEvent LogDebug(absl::string_view event, absl::string_view message = "") {
  return LogEvent(LogLevel::kDebug, event, message);
}
inline LogEvent LogInfo(absl::string_view event, absl::string_view message = "") {
  return LogEvent(LogLevel::kInfo, event, message);
}
inline LogEvent LogWarn(absl::string_view event, absl::string_view message = "") {
  return LogEvent(LogLevel::kWarn, event, message);
}
inline LogEvent LogError(absl::string_view event, absl::string_view message = "") {
  return LogEvent(LogLevel::kError, event, message);
}

// A request's id for its log lines: `offered` (the client's X-Request-Id
// or x-request-id metadata) when it is a plain token, 1 to 64 of A-Z a-z
// 0-9 . _ : -, else 16 new random hex digits.
std::string RequestIdFor(absl::string_view offered);

// Adds a field to every line this thread writes while it lives (the
// request id around a request's handler). Nest in stack order.
class ScopedLogField {
 public:
  ScopedLogField(absl::string_view key, absl::string_view value);
  ~ScopedLogField();
  ScopedLogField(const ScopedLogField&) = delete;
  ScopedLogField& operator=(const ScopedLogField&) = delete;
};

}  // namespace collbench

#endif  // COLLBENCH_COMMON_LOG_H_
