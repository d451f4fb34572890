// SPDX-License-Identifier: Apache-2.0
#include "common/flag_parser.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace collbench {

void FlagParser::String(std::string name, std::string* target, std::string help) {
  String(std::move(name), "TEXT", target, std::move(help));
}

void FlagParser::String(std::string name, std::string value_name, std::string* target,
                        std::string help) {
  Custom(std::move(name), std::move(value_name),
         [target](absl::string_view v) {
           *target = std::string(v);
           return absl::OkStatus();
         },
         std::move(help));
}

void FlagParser::Int(std::string name, int* target, std::string help) {
  Int(std::move(name), "N", target, std::move(help));
}

void FlagParser::Int(std::string name, std::string value_name, int* target, std::string help) {
  const std::string flag = name;
  Custom(std::move(name), std::move(value_name),
         [target, flag](absl::string_view v) {
           if (!absl::SimpleAtoi(v, target)) {
             return absl::InvalidArgumentError(
                 absl::StrCat("invalid --", flag, " '", v, "': not a whole number"));
           }
           return absl::OkStatus();
         },
         std::move(help));
}

void FlagParser::Bool(std::string name, bool* target, std::string help) {
  flags_.push_back({std::move(name), "",
                    [target](absl::string_view) {
                      *target = true;
                      return absl::OkStatus();
                    },
                    std::move(help)});
}

void FlagParser::Custom(std::string name, std::string value_name,
                        std::function<absl::Status(absl::string_view)> parse, std::string help) {
  flags_.push_back({std::move(name), std::move(value_name), std::move(parse), std::move(help)});
}

const FlagParser::Flag* FlagParser::Find(absl::string_view name) const {
  for (const Flag& flag : flags_) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

absl::Status FlagParser::Parse(const std::vector<std::string>& args, bool stop_at_positional) {
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (arg.size() < 3 || arg.substr(0, 2) != "--") {
      if (arg == "-h") {
        help_ = true;
        continue;
      }
      if (stop_at_positional) {
        rest_.assign(args.begin() + i, args.end());
        return absl::OkStatus();
      }
      rest_.push_back(std::string(arg));
      continue;
    }
    absl::string_view name = arg.substr(2), value;
    bool inline_value = false;
    if (const size_t eq = name.find('='); eq != absl::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    if (name == "help") {
      help_ = true;
      continue;
    }
    const Flag* flag = Find(name);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag '--", name, "'; see --help"));
    }
    if (!flag->value_name.empty() && !inline_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      }
      value = args[++i];
    } else if (flag->value_name.empty() && inline_value) {
      return absl::InvalidArgumentError(absl::StrCat("flag --", name, " takes no value"));
    }
    absl::Status status = flag->parse(value);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

std::string FlagParser::Usage() const {
  std::string out;
  for (const Flag& flag : flags_) {
    const std::string left =
        absl::StrCat("  --", flag.name, flag.value_name.empty() ? "" : " ", flag.value_name);
    absl::StrAppendFormat(&out, "%-30s %s\n", left, flag.help);
  }
  return out;
}

std::string FlagParser::Synopsis() const {
  std::vector<std::string> parts;
  for (const Flag& flag : flags_) {
    parts.push_back(absl::StrCat("[--", flag.name, flag.value_name.empty() ? "" : " ",
                                 flag.value_name, "]"));
  }
  return absl::StrJoin(parts, " ");
}

std::vector<std::string> FlagParser::names() const {
  std::vector<std::string> out;
  for (const Flag& flag : flags_) out.push_back(flag.name);
  return out;
}

}  // namespace collbench
