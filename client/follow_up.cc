// SPDX-License-Identifier: Apache-2.0
#include "client/follow_up.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace collbench {

std::string ShellQuote(const std::string& word) {
  const bool safe = !word.empty() && word.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_-./:=,+@%") == std::string::npos;
  if (safe) return word;
  return absl::StrCat("'", absl::StrReplaceAll(word, {{"'", "'\\''"}}), "'");
}

std::string FollowUp::Command(const std::vector<std::string>& command) const {
  std::string out = ShellQuote(program_);
  for (const std::string& word : reach_) absl::StrAppend(&out, " ", ShellQuote(word));
  for (const std::string& word : command) absl::StrAppend(&out, " ", ShellQuote(word));
  return out;
}

std::string FollowUp::Line(const std::string& label,
                           const std::vector<std::string>& command) const {
  if (kept_) return absl::StrCat(label, ": ", Command(command));
  return absl::StrCat("the runs are not kept: they end with this command (",
                      ShellQuote(program_), " local --store FILE ... keeps them for later)");
}

}  // namespace collbench
