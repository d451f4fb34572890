// SPDX-License-Identifier: Apache-2.0
// How one structured log line (common/log.h) is written: JSON (one object
// per line, for containers and log collectors) or text (for a terminal).
// Pure functions, safe from any thread.
//
//   {"time":"2024-05-01T12:00:00.123Z","level":"warn","event":"run.state",
//    "msg":"runs/x FAILED: timed out","run":"runs/x","state":"FAILED"}
//   2024-05-01T12:00:00.123Z WARN  run.state runs/x FAILED: timed out run=runs/x state=FAILED
//
// In text, a value that would not read back as one (spaces, '=', quotes,
// anything beyond printable ASCII) is quoted, and so is a message holding
// '=' or '"': a line's fields cannot be forged from inside a message or a
// value. Every string is escaped, whatever bytes it holds: quotes, backslashes
// and control characters (newlines included, so no value can start a
// line of its own) become JSON escapes, and bytes that are not UTF-8
// become U+FFFD, so a JSON line always parses.
#ifndef COLLBENCH_COMMON_LOG_FORMAT_H_
#define COLLBENCH_COMMON_LOG_FORMAT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace collbench {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class LogFormat { kJson, kText };

// "debug", "info", "warn", "error".
absl::string_view LogLevelName(LogLevel level);
// One of the names above (any case; "warning" too); InvalidArgument
// listing them otherwise.
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view text);
// "json", "text", or "auto": text when `terminal` (stderr is one), JSON
// otherwise. InvalidArgument listing them otherwise.
absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view text, bool terminal);

// One field of a line. `raw` values (numbers, booleans) are written as
// they are; the others are strings.
struct LogField {
  std::string key;
  std::string value;
  bool raw = false;
};

// Appends `text` escaped for the inside of a JSON string (no quotes).
void AppendJsonEscaped(std::string* out, absl::string_view text);

// The whole line, newline included: time (RFC 3339, UTC, milliseconds),
// level, event, msg (omitted when empty), then the fields in order.
std::string FormatLogLine(LogFormat format, absl::Time time, LogLevel level,
                          absl::string_view event, absl::string_view message,
                          const std::vector<LogField>& fields);

}  // namespace collbench

#endif  // COLLBENCH_COMMON_LOG_FORMAT_H_
