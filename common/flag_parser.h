// SPDX-License-Identifier: Apache-2.0
// A small command-line parser for the service binaries (coordinator,
// worker, CLI): `--name value` or `--name=value`, booleans without a value,
// positional arguments kept in order. Values are written into variables the
// caller owns (its Options struct), so there are no global flags. Errors
// are InvalidArgument naming the flag, which binaries turn into exit code 2.
#ifndef COLLBENCH_COMMON_FLAG_PARSER_H_
#define COLLBENCH_COMMON_FLAG_PARSER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace collbench {

class FlagParser {
 public:
  // `target` must outlive Parse(). `value_name` shows in the usage text
  // (default TEXT and N).
  void String(std::string name, std::string* target, std::string help);
  void String(std::string name, std::string value_name, std::string* target, std::string help);
  void Int(std::string name, int* target, std::string help);
  void Int(std::string name, std::string value_name, int* target, std::string help);
  void Bool(std::string name, bool* target, std::string help);
  // A flag with its own parser (e.g. a size or duration); `value_name`
  // shows in the usage text.
  void Custom(std::string name, std::string value_name,
              std::function<absl::Status(absl::string_view)> parse, std::string help);

  // Parses `args` (without the program name). Stops at the first argument
  // that is not a flag when `stop_at_positional` (sub-commands keep their
  // own flags); otherwise collects positionals and goes on.
  absl::Status Parse(const std::vector<std::string>& args, bool stop_at_positional = false);

  // Positional arguments, and with stop_at_positional everything from the
  // first one on.
  const std::vector<std::string>& rest() const { return rest_; }
  bool help() const { return help_; }
  // One line per flag: the flag, its value and its help.
  std::string Usage() const;
  // The flags in one line, "[--name VALUE] [--flag] ...", for a usage line.
  std::string Synopsis() const;
  // The names of the flags defined (without "--"), in definition order.
  std::vector<std::string> names() const;

 private:
  struct Flag {
    std::string name;
    std::string value_name;  // empty for booleans
    std::function<absl::Status(absl::string_view)> parse;
    std::string help;
  };
  const Flag* Find(absl::string_view name) const;

  std::vector<Flag> flags_;
  std::vector<std::string> rest_;
  bool help_ = false;
};

}  // namespace collbench

#endif  // COLLBENCH_COMMON_FLAG_PARSER_H_
