// SPDX-License-Identifier: Apache-2.0
#include "common/worker_labels.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace collbench {
namespace {

constexpr size_t kMaxLength = 63;
constexpr size_t kMaxPrefixLength = 253;

bool KeyChar(char c) {
  return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '.' || c == '_' || c == '-';
}
bool PrefixChar(char c) {
  return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '.' || c == '-';
}
bool ValueChar(char c) { return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-'; }

}  // namespace

absl::Status ValidateWorkerLabel(absl::string_view key, absl::string_view value) {
  // PREFIX/NAME: a Kubernetes node label's key (topology.kubernetes.io/zone).
  absl::string_view name = key;
  if (const size_t slash = key.rfind('/'); slash != absl::string_view::npos) {
    const absl::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    const bool dns = !prefix.empty() && prefix.size() <= kMaxPrefixLength &&
                     absl::ascii_isalnum(prefix.front()) && absl::ascii_isalnum(prefix.back()) &&
                     std::all_of(prefix.begin(), prefix.end(), PrefixChar);
    if (!dns) {
      return absl::InvalidArgumentError(
          absl::StrCat("label key '", key, "': the prefix before '/' must be a DNS name of 1 to ",
                       kMaxPrefixLength, " lower-case letters, digits, '.' and '-'"));
    }
  }
  if (name.empty() || name.size() > kMaxLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("label key '", key, "' must be 1 to ", kMaxLength, " characters",
                     name.size() == key.size() ? "" : " after its prefix"));
  }
  if (!absl::ascii_islower(name[0]) && !absl::ascii_isdigit(name[0])) {
    return absl::InvalidArgumentError(
        absl::StrCat("label key '", key, "' must start with a lower-case letter or a digit",
                     name.size() == key.size() ? "" : " after its prefix"));
  }
  for (char c : name) {
    if (!KeyChar(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "label key '", key, "' may hold only lower-case letters, digits, '.', '_' and '-'",
          name.size() == key.size() ? "" : " (and one '/' after a DNS prefix)"));
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
