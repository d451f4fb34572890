// SPDX-License-Identifier: Apache-2.0
#include "common/log_format.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace collbench {
namespace {

bool Continuation(absl::string_view text, size_t at, unsigned char low = 0x80,
                  unsigned char high = 0xBF) {
  if (at >= text.size()) return false;
  const unsigned char c = static_cast<unsigned char>(text[at]);
  return c >= low && c <= high;
}

// The length of the well-formed UTF-8 sequence of two or more bytes that
// starts at text[at] (Unicode's table 3-7: no overlong forms, no
// surrogates, nothing above U+10FFFF), or 0.
int Utf8SequenceLength(absl::string_view text, size_t at) {
  const unsigned char c = static_cast<unsigned char>(text[at]);
  if (c >= 0xC2 && c <= 0xDF) return Continuation(text, at + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned char low = c == 0xE0 ? 0xA0 : 0x80;
    const unsigned char high = c == 0xED ? 0x9F : 0xBF;
    return Continuation(text, at + 1, low, high) && Continuation(text, at + 2) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned char low = c == 0xF0 ? 0x90 : 0x80;
    const unsigned char high = c == 0xF4 ? 0x8F : 0xBF;
    return Continuation(text, at + 1, low, high) && Continuation(text, at + 2) &&
                   Continuation(text, at + 3)
               ? 4
               : 0;
  }
  return 0;
}

// Quotes and backslashes are escaped only inside quoted values (JSON
// strings, quoted text values); control characters always.
void AppendAsciiEscaped(std::string* out, char c, bool quoted) {
  if (quoted && (c == '"' || c == '\\')) {
    out->push_back('\\');
    out->push_back(c);
    return;
  }
  switch (c) {
    case '\n': out->append("\\n"); return;
    case '\r': out->append("\\r"); return;
    case '\t': out->append("\\t"); return;
    case '\b': out->append("\\b"); return;
    case '\f': out->append("\\f"); return;
    default: break;
  }
  if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
    absl::StrAppendFormat(out, "\\u%04x", static_cast<unsigned char>(c));
  } else {
    out->push_back(c);
  }
}

void AppendEscaped(std::string* out, absl::string_view text, bool quoted) {
  size_t at = 0;
  while (at < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[at]);
    if (c < 0x80) {
      AppendAsciiEscaped(out, text[at], quoted);
      ++at;
      continue;
    }
    const int length = Utf8SequenceLength(text, at);
    if (length == 0) {
      out->append("\\ufffd");  // not UTF-8: one replacement per byte
      ++at;
      continue;
    }
    const absl::string_view sequence = text.substr(at, length);
    // U+2028 and U+2029 end lines in JavaScript and some log viewers.
    if (sequence == "\xE2\x80\xA8" || sequence == "\xE2\x80\xA9") {
      out->append(sequence.back() == '\xA8' ? "\\u2028" : "\\u2029");
    } else {
      out->append(sequence.data(), sequence.size());
    }
    at += length;
  }
}

// Whether a text value must be quoted to read back as one value.
bool NeedsQuotes(absl::string_view value) {
  if (value.empty()) return true;
  for (const char c : value) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7F || c == '"' || c == '=' || c == '\\') return true;
  }
  return false;
}

void AppendQuoted(std::string* out, absl::string_view text) {
  out->push_back('"');
  AppendEscaped(out, text, /*quoted=*/true);
  out->push_back('"');
}

std::string JsonLine(absl::string_view time, LogLevel level, absl::string_view event,
                     absl::string_view message, const std::vector<LogField>& fields) {
  std::string line = absl::StrCat("{\"time\":\"", time, "\",\"level\":\"", LogLevelName(level),
                                  "\",\"event\":");
  AppendQuoted(&line, event);
  if (!message.empty()) {
    line.append(",\"msg\":");
    AppendQuoted(&line, message);
  }
  for (const LogField& field : fields) {
    line.push_back(',');
    AppendQuoted(&line, field.key);
    line.push_back(':');
    if (field.raw) {
      line.append(field.value);
    } else {
      AppendQuoted(&line, field.value);
    }
  }
  line.append("}\n");
  return line;
}

std::string TextLine(absl::string_view time, LogLevel level, absl::string_view event,
                     absl::string_view message, const std::vector<LogField>& fields) {
  std::string line = absl::StrFormat("%s %-5s ", time, absl::AsciiStrToUpper(LogLevelName(level)));
  AppendEscaped(&line, event, /*quoted=*/false);
  if (!message.empty()) {
    line.push_back(' ');
    // A message with '=' or '"' is quoted, so no text in it (a worker's
    // error, a run's name) reads as a field of the line: every unquoted
    // KEY=VALUE after the event is one.
    if (message.find_first_of("=\"") != absl::string_view::npos) {
      AppendQuoted(&line, message);
    } else {
      AppendEscaped(&line, message, /*quoted=*/false);
    }
  }
  for (const LogField& field : fields) {
    line.push_back(' ');
    AppendEscaped(&line, field.key, /*quoted=*/false);
    line.push_back('=');
    if (field.raw || !NeedsQuotes(field.value)) {
      line.append(field.value);
    } else {
      AppendQuoted(&line, field.value);
    }
  }
  line.push_back('\n');
  return line;
}

}  // namespace

absl::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view text) {
  const std::string name = absl::AsciiStrToLower(text);
  for (const LogLevel level :
       {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (name == LogLevelName(level)) return level;
  }
  if (name == "warning") return LogLevel::kWarn;
  return absl::InvalidArgumentError(
      absl::StrCat("log level '", text, "' is not one of debug, info, warn, error"));
}

absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view text, bool terminal) {
  const std::string name = absl::AsciiStrToLower(text);
  if (name == "json") return LogFormat::kJson;
  if (name == "text") return LogFormat::kText;
  if (name == "auto") return terminal ? LogFormat::kText : LogFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("log format '", text, "' is not one of auto, json, text"));
}

void AppendJsonEscaped(std::string* out, absl::string_view text) {
  AppendEscaped(out, text, /*quoted=*/true);
}

std::string FormatLogLine(LogFormat format, absl::Time time, LogLevel level,
                          absl::string_view event, absl::string_view message,
                          const std::vector<LogField>& fields) {
  const std::string stamp =
      absl::FormatTime("%Y-%m-%d%ET%H:%M:%E3SZ", time, absl::UTCTimeZone());
  return format == LogFormat::kJson ? JsonLine(stamp, level, event, message, fields)
                                    : TextLine(stamp, level, event, message, fields);
}

}  // namespace collbench
