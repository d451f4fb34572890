// SPDX-License-Identifier: Apache-2.0
#include "common/worker_labels.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace collbench {
namespace {

constexpr size_t kMaxLength = 63;

bool KeyChar(char c) {
  return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '.' || c == '_' || c == '-';
}
bool ValueChar(char c) { return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-'; }

}  // namespace

absl::Status ValidateWorkerLabel(absl::string_view key, absl::string_view value) {
  if (key.empty() || key.size() > kMaxLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("label key '", key, "' must be 1 to ", kMaxLength, " characters"));
  }
  if (!absl::ascii_islower(key[0]) && !absl::ascii_isdigit(key[0])) {
    return absl::InvalidArgumentError(
        absl::StrCat("label key '", key, "' must start with a lower-case letter or a digit"));
  }
  for (char c : key) {
    if (!KeyChar(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "label key '", key, "' may hold only lower-case letters, digits, '.', '_' and '-'"));
    }
  }
  if (value.empty() || value.size() > kMaxLength) {
    return absl::InvalidArgumentError(absl::StrCat("label ", key, ": value '", value,
                                                   "' must be 1 to ", kMaxLength, " characters"));
  }
  for (char c : value) {
    if (!ValueChar(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "label ", key, ": value '", value, "' may hold only letters, digits, '.', '_' and '-'"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::pair<std::string, std::string>> ParseWorkerLabel(absl::string_view text) {
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("label '", text, "': expected KEY=VALUE"));
  }
  const absl::string_view key = text.substr(0, eq);
  const absl::string_view value = text.substr(eq + 1);
  if (absl::Status valid = ValidateWorkerLabel(key, value); !valid.ok()) return valid;
  return std::make_pair(std::string(key), std::string(value));
}

std::string FormatWorkerLabels(const std::map<std::string, std::string>& labels) {
  std::string out;
  for (const auto& [key, value] : labels)
    absl::StrAppend(&out, out.empty() ? "" : ",", key, "=", value);
  return out;
}

}  // namespace collbench
