// SPDX-License-Identifier: Apache-2.0
// common/log.h and common/log_format.h: every JSON line parses whatever
// bytes its values hold, text lines keep one value per field, levels
// filter, and lines of many threads never interleave.
#include "common/log.h"

#include <gtest/gtest.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/time.h"

namespace collbench {
namespace {

const absl::Time kTime = absl::FromUnixMillis(1714564800123);  // 2024-05-01T12:00:00.123Z

// Captures the lines written while it lives, at `level`, as `format`.
class CapturedLog {
 public:
  explicit CapturedLog(LogFormat format = LogFormat::kJson, LogLevel level = LogLevel::kDebug) {
    LogOptions options;
    options.format = format;
    options.level = level;
    options.sink = [this](absl::string_view line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.emplace_back(line);
    };
    SetLogOptions(std::move(options));
  }
  ~CapturedLog() { SetLogOptions(LogOptions()); }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

nlohmann::json ParseLine(const std::string& line) {
  EXPECT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line: " << line;
  return nlohmann::json::parse(line);  // throws, failing the test, when not JSON
}

TEST(LogFormatTest, JsonLineHasTimeLevelEventMessageAndFieldsInOrder) {
  const std::string line =
      FormatLogLine(LogFormat::kJson, kTime, LogLevel::kWarn, "run.state", "runs/x FAILED",
                    {{"run", "runs/x"}, {"sizes", "3", true}, {"ok", "false", true}});
  EXPECT_EQ(line,
            "{\"time\":\"2024-05-01T12:00:00.123Z\",\"level\":\"warn\",\"event\":\"run.state\","
            "\"msg\":\"runs/x FAILED\",\"run\":\"runs/x\",\"sizes\":3,\"ok\":false}\n");
  const nlohmann::json parsed = ParseLine(line);
  EXPECT_EQ(parsed["sizes"], 3);
  EXPECT_EQ(parsed["ok"], false);
}

TEST(LogFormatTest, JsonEscapesQuotesBackslashesAndControlCharacters) {
  const std::string nasty = std::string("a\"b\\c\nd\re\tf\x01g\x7fh\0i", 18);
  const std::string line =
      FormatLogLine(LogFormat::kJson, kTime, LogLevel::kInfo, "e", nasty, {{nasty, nasty}});
  EXPECT_NE(line.find("a\\\"b\\\\c\\nd\\re\\tf\\u0001g\\u007fh\\u0000i"), std::string::npos)
      << line;
  const nlohmann::json parsed = ParseLine(line);
  EXPECT_EQ(parsed["msg"], nasty);
  EXPECT_EQ(parsed[nasty], nasty);
}

TEST(LogFormatTest, JsonKeepsUtf8AndReplacesBytesThatAreNotUtf8) {
  struct Case {
    std::string in;
    std::string decoded;  // what a JSON parser reads back
  };
  const std::string fffd = "\xEF\xBF\xBD";
  const std::vector<Case> cases = {
      {"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"},
      {"\xFF", fffd},                            // never in UTF-8
      {"\xC0\xAF", fffd + fffd},                 // overlong '/'
      {"\xED\xA0\x80", fffd + fffd + fffd},      // a surrogate
      {"\xF4\x90\x80\x80", fffd + fffd + fffd + fffd},  // above U+10FFFF
      {"x\xE2\x82", "x" + fffd + fffd},          // cut short
      {"\x80y", fffd + "y"},                     // a lone continuation byte
      {"\xE2\x80\xA8", "\xE2\x80\xA8"},          // escaped, still U+2028
  };
  for (const Case& c : cases) {
    const std::string line =
        FormatLogLine(LogFormat::kJson, kTime, LogLevel::kInfo, "e", "", {{"v", c.in}});
    const nlohmann::json parsed = ParseLine(line);
    EXPECT_EQ(parsed["v"].get<std::string>(), c.decoded) << line;
  }
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte.push_back(static_cast<char>(b));
  ParseLine(FormatLogLine(LogFormat::kJson, kTime, LogLevel::kInfo, every_byte, every_byte,
                          {{every_byte, every_byte}}));
}

TEST(LogFormatTest, TextLineQuotesValuesThatWouldNotReadBackAsOne) {
  const std::string line = FormatLogLine(
      LogFormat::kText, kTime, LogLevel::kError, "store.error", "saving runs/x: disk \"full\"",
      {{"run", "runs/x"}, {"error", "disk full\nnext=line"}, {"empty", ""}, {"n", "7", true}});
  EXPECT_EQ(line,
            "2024-05-01T12:00:00.123Z ERROR store.error \"saving runs/x: disk \\\"full\\\"\" run=runs/x "
            "error=\"disk full\\nnext=line\" empty=\"\" n=7\n");
}

// A worker's text in a message cannot pass for the line's own fields: the
// message is quoted once it holds '=' (or a quote), so the only unquoted
// KEY=VALUE pairs are the real fields.
TEST(LogFormatTest, TextMessageCannotForgeAField) {
  const std::string line =
      FormatLogLine(LogFormat::kText, kTime, LogLevel::kWarn, "run.state",
                    "runs/x failed: rank 0 said state=SUCCEEDED run=runs/y", {{"run", "runs/x"}});
  EXPECT_EQ(line,
            "2024-05-01T12:00:00.123Z WARN  run.state \"runs/x failed: rank 0 said "
            "state=SUCCEEDED run=runs/y\" run=runs/x\n");
}

TEST(LogFormatTest, TextEscapesControlCharactersInTheMessage) {
  const std::string line = FormatLogLine(LogFormat::kText, kTime, LogLevel::kInfo, "e",
                                         "one\ntwo\x1b[31m\xFF", {});
  EXPECT_EQ(line, "2024-05-01T12:00:00.123Z INFO  e one\\ntwo\\u001b[31m\\ufffd\n");
}

TEST(LogFormatTest, ParsesLevelsAndFormats) {
  EXPECT_EQ(*ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(*ParseLogLevel("INFO"), LogLevel::kInfo);
  EXPECT_EQ(*ParseLogLevel("warning"), LogLevel::kWarn);
  EXPECT_EQ(*ParseLogLevel("error"), LogLevel::kError);
  EXPECT_EQ(ParseLogLevel("loud").status().message(),
            "log level 'loud' is not one of debug, info, warn, error");
  EXPECT_EQ(*ParseLogFormat("auto", /*terminal=*/true), LogFormat::kText);
  EXPECT_EQ(*ParseLogFormat("auto", /*terminal=*/false), LogFormat::kJson);
  EXPECT_EQ(*ParseLogFormat("json", true), LogFormat::kJson);
  EXPECT_EQ(*ParseLogFormat("text", false), LogFormat::kText);
  EXPECT_FALSE(ParseLogFormat("xml", false).ok());
  EXPECT_EQ(LogOptionsFromFlags("xml", "info").status().message(),
            "--log-format: log format 'xml' is not one of auto, json, text");
  EXPECT_EQ(LogOptionsFromFlags("json", "x").status().message(),
            "--log-level: log level 'x' is not one of debug, info, warn, error");
}

TEST(LogTest, DropsLinesBelowTheLevel) {
  CapturedLog log(LogFormat::kJson, LogLevel::kWarn);
  bool formatted = false;
  auto expensive = [&formatted] {
    formatted = true;
    return std::string("x");
  };
  LogDebug("a.debug").Str("k", "v");
  LogInfo("a.info");
  LogWarn("a.warn", "careful").Int("n", -3);
  LogError("a.error").Error(absl::UnavailableError("disk gone")).Bool("retry", true);
  if (LogEnabled(LogLevel::kInfo)) LogInfo("a.info").Str("k", expensive());
  EXPECT_FALSE(formatted);
  const std::vector<std::string> lines = log.lines();
  ASSERT_EQ(lines.size(), 2u);
  const nlohmann::json warn = ParseLine(lines[0]);
  EXPECT_EQ(warn["level"], "warn");
  EXPECT_EQ(warn["event"], "a.warn");
  EXPECT_EQ(warn["msg"], "careful");
  EXPECT_EQ(warn["n"], -3);
  const nlohmann::json error = ParseLine(lines[1]);
  EXPECT_EQ(error["level"], "error");
  EXPECT_EQ(error["error"], "disk gone");
  EXPECT_EQ(error["code"], "UNAVAILABLE");
  EXPECT_EQ(error["retry"], true);
  EXPECT_FALSE(error.contains("msg"));
}

TEST(LogTest, DoublesThatJsonCannotHoldAreStrings) {
  CapturedLog log;
  LogInfo("e").Double("ms", 1.5).Double("nan", std::nan(""));
  const nlohmann::json line = ParseLine(log.lines().at(0));
  EXPECT_EQ(line["ms"], 1.5);
  EXPECT_EQ(line["nan"], "nan");
}

TEST(LogTest, ScopedFieldsJoinEveryLineOfTheirThreadOnly) {
  CapturedLog log;
  {
    ScopedLogField request("request_id", "r-1");
    LogInfo("inside");
    LogInfo("own").Str("request_id", "mine");
    std::thread([] { LogInfo("other.thread"); }).join();
  }
  LogInfo("after");
  const std::vector<std::string> lines = log.lines();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(ParseLine(lines[0])["request_id"], "r-1");
  EXPECT_EQ(ParseLine(lines[1])["request_id"], "mine");
  EXPECT_EQ(lines[1].find("r-1"), std::string::npos);
  EXPECT_FALSE(ParseLine(lines[2]).contains("request_id"));
  EXPECT_FALSE(ParseLine(lines[3]).contains("request_id"));
}

TEST(LogTest, LinesOfManyThreadsNeverInterleave) {
  CapturedLog log;
  const std::string long_value(4096, 'v');
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &long_value] {
      for (int i = 0; i < 200; ++i) LogInfo("load").Int("thread", t).Str("v", long_value);
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::vector<std::string> lines = log.lines();
  ASSERT_EQ(lines.size(), 1600u);
  for (const std::string& line : lines) EXPECT_EQ(ParseLine(line)["v"], long_value);
}

}  // namespace
}  // namespace collbench
