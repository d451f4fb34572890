// SPDX-License-Identifier: Apache-2.0
#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <mutex>
#include <random>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace collbench {
namespace {

// The process's configuration. The level is also kept apart, so that a
// line below it costs one atomic load.
struct LogState {
  std::mutex mu;  // held while a line is written: one line at a time
  LogOptions options;
  std::atomic<int> level{static_cast<int>(LogLevel::kError)};
};

LogState& State() {
  static LogState* const state = new LogState;  // never destroyed: threads log at exit
  return *state;
}

// Fields of the ScopedLogFields alive on this thread.
thread_local std::vector<LogField> scoped_fields;

void WriteToStderr(absl::string_view line) {
  while (!line.empty()) {
    const ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;  // stderr is gone: nothing to tell anyone
    line.remove_prefix(static_cast<size_t>(written));
  }
}

}  // namespace

void SetLogOptions(LogOptions options) {
  LogState& state = State();
  std::lock_guard<std::mutex> lock(state.mu);
  state.level.store(static_cast<int>(options.level));
  state.options = std::move(options);
}

absl::StatusOr<LogOptions> LogOptionsFromFlags(absl::string_view format, absl::string_view level) {
  LogOptions options;
  absl::StatusOr<LogFormat> parsed_format = ParseLogFormat(format, ::isatty(STDERR_FILENO) == 1);
  if (!parsed_format.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-format: ", parsed_format.status().message()));
  }
  absl::StatusOr<LogLevel> parsed_level = ParseLogLevel(level);
  if (!parsed_level.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-level: ", parsed_level.status().message()));
  }
  options.format = *parsed_format;
  options.level = *parsed_level;
  return options;
}

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= State().level.load(std::memory_order_relaxed);
}

LogEvent::LogEvent(LogLevel level, absl::string_view event, absl::string_view message)
    : enabled_(LogEnabled(level)), level_(level) {
  if (!enabled_) return;
  event_ = std::string(event);
  message_ = std::string(message);
}

LogEvent::~LogEvent() {
  if (!enabled_) return;
  // The innermost scope's field wins over an outer one of the same key.
  for (auto it = scoped_fields.rbegin(); it != scoped_fields.rend(); ++it) {
    const LogField& field = *it;
    bool present = false;
    for (const LogField& own : fields_) present |= own.key == field.key;
    if (!present) fields_.push_back(field);
  }
  LogState& state = State();
  const absl::Time now = absl::Now();
  std::lock_guard<std::mutex> lock(state.mu);
  const std::string line =
      FormatLogLine(state.options.format, now, level_, event_, message_, fields_);
  if (state.options.sink) {
    state.options.sink(line);
  } else {
    WriteToStderr(line);
  }
}

LogEvent& LogEvent::Add(absl::string_view key, std::string value, bool raw) {
  if (enabled_) fields_.push_back(LogField{std::string(key), std::move(value), raw});
  return *this;
}

LogEvent& LogEvent::Str(absl::string_view key, absl::string_view value) {
  return enabled_ ? Add(key, std::string(value), false) : *this;
}

LogEvent& LogEvent::StrIfSet(absl::string_view key, absl::string_view value) {
  return value.empty() ? *this : Str(key, value);
}

LogEvent& LogEvent::Int(absl::string_view key, int64_t value) {
  return enabled_ ? Add(key, absl::StrCat(value), true) : *this;
}

LogEvent& LogEvent::Double(absl::string_view key, double value) {
  if (!enabled_) return *this;
  // JSON has no NaN or infinity: those are written as strings.
  return Add(key, absl::StrCat(value), std::isfinite(value));
}

LogEvent& LogEvent::Bool(absl::string_view key, bool value) {
  return Add(key, value ? "true" : "false", true);
}

LogEvent& LogEvent::Error(const absl::Status& status) {
  if (!enabled_ || status.ok()) return *this;
  Add("error", std::string(status.message()), false);
  return Add("code", absl::StatusCodeToString(status.code()), false);
}

std::string RequestIdFor(absl::string_view offered) {
  constexpr size_t kMaxLength = 64;
  bool plain = !offered.empty() && offered.size() <= kMaxLength;
  for (const char c : offered) {
    plain &= absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
             c == ':' || c == '-';
  }
  if (plain) return std::string(offered);
  thread_local std::mt19937_64 random{std::random_device{}()};
  return absl::StrFormat("%016x", random());
}

ScopedLogField::ScopedLogField(absl::string_view key, absl::string_view value) {
  scoped_fields.push_back(LogField{std::string(key), std::string(value), false});
}

ScopedLogField::~ScopedLogField() { scoped_fields.pop_back(); }

}  // namespace collbench
