// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/shell_words.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"

namespace collbench {
namespace {

// Characters a shell would interpret outside quotes.
constexpr absl::string_view kUnquotedSpecial = "$`;|&<>(){}[]*?~#!\n\r";
// Characters a shell would interpret inside double quotes.
constexpr absl::string_view kDoubleQuotedSpecial = "$`";
// What a backslash escapes inside double quotes.
constexpr absl::string_view kDoubleQuotedEscapable = "$`\"\\";

absl::Status NeedsShell(absl::string_view line, size_t word_start, char special,
                        absl::string_view where) {
  size_t end = line.find_first_of(" \t", word_start);
  if (end == absl::string_view::npos) end = line.size();
  const absl::string_view word = line.substr(word_start, std::min<size_t>(end - word_start, 200));
  return absl::InvalidArgumentError(
      absl::StrCat("remote command word '", absl::CHexEscape(word), "': ", where, " '",
                   absl::CHexEscape(absl::string_view(&special, 1)),
                   "' would need a shell to interpret; refused"));
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SplitShellWords(absl::string_view line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  size_t word_start = 0;
  size_t i = 0;
  while (i < line.size()) {
    const char ch = line[i];
    if (ch == ' ' || ch == '\t') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      ++i;
      continue;
    }
    if (!in_word) word_start = i;
    in_word = true;
    if (ch == '\'') {
      const size_t close = line.find('\'', i + 1);
      if (close == absl::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("remote command: unterminated single quote in '",
                         absl::CHexEscape(line.substr(word_start, 200)), "'"));
      }
      absl::StrAppend(&word, line.substr(i + 1, close - i - 1));
      i = close + 1;
    } else if (ch == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i];
        if (c == '"') {
          closed = true;
          ++i;
          break;
        }
        if (kDoubleQuotedSpecial.find(c) != absl::string_view::npos) {
          return NeedsShell(line, word_start, c, "inside double quotes,");
        }
        if (c == '\\' && i + 1 < line.size() &&
            kDoubleQuotedEscapable.find(line[i + 1]) != absl::string_view::npos) {
          word.push_back(line[i + 1]);
          i += 2;
          continue;
        }
        word.push_back(c);
        ++i;
      }
      if (!closed) {
        return absl::InvalidArgumentError(
            absl::StrCat("remote command: unterminated double quote in '",
                         absl::CHexEscape(line.substr(word_start, 200)), "'"));
      }
    } else if (ch == '\\') {
      if (i + 1 >= line.size() || line[i + 1] == '\n') {
        return NeedsShell(line, word_start, '\\', "trailing or line-continuing");
      }
      word.push_back(line[i + 1]);
      i += 2;
    } else if (kUnquotedSpecial.find(ch) != absl::string_view::npos) {
      return NeedsShell(line, word_start, ch, "unquoted");
    } else {
      word.push_back(ch);
      ++i;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

absl::string_view StripProfileWrapper(absl::string_view line) {
  constexpr absl::string_view kOpen = "( test ! -r ./.profile || . ./.profile;";
  absl::string_view inner = absl::StripAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&inner, kOpen)) return line;
  inner = absl::StripTrailingAsciiWhitespace(inner);
  if (!absl::ConsumeSuffix(&inner, ")")) return line;
  return inner;
}

absl::StatusOr<std::vector<std::string>> SplitRemoteCommand(
    const std::vector<std::string>& words) {
  const std::string line = absl::StrJoin(words, " ");
  return SplitShellWords(StripProfileWrapper(line));
}

}  // namespace collbench
