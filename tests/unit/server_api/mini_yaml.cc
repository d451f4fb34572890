// SPDX-License-Identifier: Apache-2.0
#include "mini_yaml.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace collbench::testing_yaml {
namespace {

struct Line {
  int number;        // 1-based, for messages
  int indent;        // leading spaces
  std::string text;  // without the indent
  std::string raw;   // the whole line, for block scalars
};

// Drops a trailing " # comment" outside quotes.
std::string StripComment(absl::string_view text) {
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || text[i - 1] == ' ')) {
      return std::string(absl::StripTrailingAsciiWhitespace(text.substr(0, i)));
    }
  }
  return std::string(absl::StripTrailingAsciiWhitespace(text));
}

std::string Unquote(absl::string_view value) {
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
      value.back() == value.front()) {
    return std::string(value.substr(1, value.size() - 2));
  }
  return std::string(value);
}

class Parser {
 public:
  explicit Parser(std::vector<Line> lines) : lines_(std::move(lines)) {}

  absl::StatusOr<YamlNode> Document() {
    if (lines_.empty()) return YamlNode();
    absl::StatusOr<YamlNode> node = Node(lines_[0].indent);
    if (node.ok() && i_ < lines_.size()) return Error("unexpected indentation");
    return node;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    const int number = i_ < lines_.size() ? lines_[i_].number : -1;
    return absl::InvalidArgumentError(absl::StrCat("line ", number, ": ", what));
  }

  bool IsItem(const Line& line) const {
    return line.text == "-" || absl::StartsWith(line.text, "- ");
  }

  absl::StatusOr<YamlNode> Node(int indent) {
    if (IsItem(lines_[i_])) return List(indent);
    return Map(indent);
  }

  absl::StatusOr<YamlNode> List(int indent) {
    YamlNode node;
    node.kind = YamlNode::Kind::kList;
    while (i_ < lines_.size() && lines_[i_].indent == indent && IsItem(lines_[i_])) {
      Line& line = lines_[i_];
      if (line.text == "-") {
        ++i_;
        if (i_ >= lines_.size() || lines_[i_].indent <= indent) return Error("empty item");
        absl::StatusOr<YamlNode> item = Node(lines_[i_].indent);
        if (!item.ok()) return item.status();
        node.list.push_back(*std::move(item));
        continue;
      }
      // "- rest": the rest is a node two columns further in.
      line.text = line.text.substr(2);
      line.indent += 2;
      if (line.text.find(": ") == std::string::npos && line.text.back() != ':') {
        YamlNode scalar;
        scalar.scalar = Unquote(line.text);
        node.list.push_back(std::move(scalar));
        ++i_;
        continue;
      }
      absl::StatusOr<YamlNode> item = Map(line.indent);
      if (!item.ok()) return item.status();
      node.list.push_back(*std::move(item));
    }
    return node;
  }

  // Splits "key: value" / "key:". A quoted key ends at its closing quote;
  // a plain one at the first ": " (so "a:b: c" has the key "a:b").
  static bool SplitKey(absl::string_view text, std::string* key, std::string* value) {
    size_t colon;
    if (!text.empty() && (text[0] == '"' || text[0] == '\'')) {
      colon = text.find(text[0], 1);
      if (colon == absl::string_view::npos) return false;
      ++colon;
      if (colon >= text.size() || text[colon] != ':') return false;
    } else {
      colon = text.find(": ");
      if (colon == absl::string_view::npos) {
        if (text.empty() || text.back() != ':') return false;
        colon = text.size() - 1;
      }
    }
    *key = Unquote(text.substr(0, colon));
    *value = std::string(absl::StripLeadingAsciiWhitespace(text.substr(colon + 1)));
    return true;
  }

  absl::StatusOr<YamlNode> Map(int indent) {
    YamlNode node;
    node.kind = YamlNode::Kind::kMap;
    while (i_ < lines_.size() && lines_[i_].indent == indent) {
      std::string key, value;
      if (IsItem(lines_[i_]) || !SplitKey(lines_[i_].text, &key, &value)) {
        return Error("expected \"key: value\"");
      }
      const int key_indent = indent;
      ++i_;
      YamlNode child;
      if (value == "|" || value == ">" || value == "|-" || value == ">-") {
        while (i_ < lines_.size() && lines_[i_].indent > key_indent) {
          absl::StrAppend(&child.scalar, lines_[i_].raw, "\n");
          ++i_;
        }
      } else if (!value.empty()) {
        child.scalar = Unquote(value);
      } else if (i_ < lines_.size() && (lines_[i_].indent > key_indent ||
                                        (lines_[i_].indent == key_indent && IsItem(lines_[i_])))) {
        absl::StatusOr<YamlNode> nested = Node(lines_[i_].indent);
        if (!nested.ok()) return nested.status();
        child = *std::move(nested);
      }
      node.map.emplace_back(std::move(key), std::move(child));
    }
    if (i_ < lines_.size() && lines_[i_].indent > indent) return Error("unexpected indentation");
    return node;
  }

  std::vector<Line> lines_;
  size_t i_ = 0;
};

}  // namespace

YamlNode::YamlNode() = default;
YamlNode::YamlNode(const YamlNode&) = default;
YamlNode::YamlNode(YamlNode&&) noexcept = default;
YamlNode& YamlNode::operator=(const YamlNode&) = default;
YamlNode& YamlNode::operator=(YamlNode&&) noexcept = default;
YamlNode::~YamlNode() = default;

const YamlNode* YamlNode::Get(absl::string_view key) const {
  for (const auto& [k, v] : map) {
    if (k == key) return &v;
  }
  return nullptr;
}

absl::StatusOr<YamlNode> ParseYaml(absl::string_view text) {
  std::vector<Line> lines;
  int number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++number;
    const size_t first = raw.find_first_not_of(' ');
    if (first == absl::string_view::npos || raw[first] == '#') continue;
    if (raw.find('\t') != absl::string_view::npos && raw.find('\t') < first) {
      return absl::InvalidArgumentError(absl::StrCat("line ", number, ": tab in indentation"));
    }
    lines.push_back(
        Line{number, static_cast<int>(first), StripComment(raw.substr(first)), std::string(raw)});
  }
  return Parser(std::move(lines)).Document();
}

}  // namespace collbench::testing_yaml
