// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/tuning_files.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/tuning_env.h"

namespace collbench {
namespace {

std::string RealPath(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : "";
}

// Why `real` (a real path) is not a tuning file of `real_dir`, or "".
std::string NotATuningFile(const std::string& real_dir, const std::string& real) {
  if (real.empty()) return "no such file";
  if (!absl::StartsWith(real, real_dir + "/")) return "resolves outside the tuning folder";
  struct stat st;
  if (stat(real.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "not a regular file";
  return "";
}

}  // namespace

absl::StatusOr<std::string> CanonicalTuningDir(const std::string& dir) {
  const std::string real = RealPath(dir);
  struct stat st;
  if (real.empty() || stat(real.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tuning-dir ", dir, ": not an existing folder"));
  }
  return real;
}

absl::StatusOr<std::string> ResolveTuningFile(const std::string& tuning_dir,
                                              absl::string_view key, absl::string_view name) {
  const std::string shown = absl::StrCat(key, ": tuning file '", absl::CHexEscape(name), "'");
  if (!IsTuningFileName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat(shown, " is not a bare file name ([A-Za-z0-9_][A-Za-z0-9_.-]*, no '/')"));
  }
  if (tuning_dir.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        shown, ": this worker has no tuning folder (start collbench-worker with --tuning-dir DIR "
               "and install the file there)"));
  }
  const std::string real_dir = RealPath(tuning_dir);
  if (real_dir.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(shown, ": the worker's tuning folder ", tuning_dir, " is gone"));
  }
  const std::string real = RealPath(absl::StrCat(real_dir, "/", name));
  if (const std::string why = NotATuningFile(real_dir, real); !why.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(shown, " in the worker's tuning folder ", tuning_dir, ": ", why));
  }
  return real;
}

absl::Status CheckResolvedTuningFile(const std::string& tuning_dir, absl::string_view key,
                                     absl::string_view path) {
  const std::string shown = absl::StrCat(key, ": tuning file '", absl::CHexEscape(path), "'");
  if (tuning_dir.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(shown, ": this worker has no tuning folder (--tuning-dir)"));
  }
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(shown, ": not an absolute path"));
  }
  const std::string real_dir = RealPath(tuning_dir);
  const std::string why =
      real_dir.empty() ? "the tuning folder is gone"
                       : NotATuningFile(real_dir, RealPath(std::string(path)));
  if (!why.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(shown, ": not in this worker's tuning folder ", tuning_dir, " (", why, ")"));
  }
  return absl::OkStatus();
}

}  // namespace collbench
