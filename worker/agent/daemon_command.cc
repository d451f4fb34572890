// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/daemon_command.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "api/tuning_env.h"
#include "flavors/daemon_words.h"
#include "flavors/registry.h"
#include "worker/agent/launch_shim.h"
#include "worker/agent/tuning_files.h"

namespace collbench {
namespace {

DaemonArgChecks ChecksFor(const std::string& tuning_dir) {
  DaemonArgChecks checks;
  checks.is_tuning_param = [](absl::string_view key) { return IsTuningParam(key); };
  checks.is_tuning_file_param = [](absl::string_view key) { return IsTuningFileParam(key); };
  checks.check_tuning_param = [](absl::string_view key, absl::string_view value) {
    return CheckTuningParam(key, value);
  };
  checks.check_tuning_file = [tuning_dir](absl::string_view key, absl::string_view path) {
    return CheckResolvedTuningFile(tuning_dir, std::string(key), std::string(path));
  };
  checks.shim_word = kShimWord;
  checks.shim_link_name = kShimLinkName;
  return checks;
}

std::string Beside(const std::string& program, const std::string& daemon) {
  if (program.empty() || program.find('/') == std::string::npos) return "";
  const std::string candidate = program.substr(0, program.rfind('/') + 1) + daemon;
  return access(candidate.c_str(), X_OK) == 0 ? candidate : "";
}

std::string OnPath(const std::string& daemon) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path != nullptr ? path : "/usr/bin", ':')) {
    if (dir.empty() || dir[0] != '/') continue;  // never relative to the cwd
    const std::string candidate = absl::StrCat(dir, "/", daemon);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string Find(const std::string& launcher, const std::string& daemon) {
  if (std::string found = Beside(launcher, daemon); !found.empty()) return found;
  char resolved[PATH_MAX];
  if (!launcher.empty() && realpath(launcher.c_str(), resolved) != nullptr) {
    if (std::string found = Beside(resolved, daemon); !found.empty()) return found;
  }
  return OnPath(daemon);
}

}  // namespace

DaemonPaths ResolveDaemonPaths(const std::map<std::string, std::string>& launchers) {
  DaemonPaths paths;
  for (const MpiFlavor* flavor : Flavors().List()) {
    auto launcher = launchers.find(std::string(flavor->name()));
    for (const std::string& daemon : flavor->daemons()) {
      paths[daemon] = Find(launcher == launchers.end() ? "" : launcher->second, daemon);
    }
  }
  return paths;
}

absl::StatusOr<std::vector<std::string>> CheckDaemonArgv(const std::vector<std::string>& argv,
                                                         const DaemonPaths& paths,
                                                         v1::MpiImplementation mpi,
                                                         const std::string& tuning_dir) {
  if (argv.empty()) return absl::InvalidArgumentError("Exec argv: empty");
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i].find_first_of(std::string("\0\n\r", 3)) != std::string::npos) {
      return BadDaemonWord(i, argv[i], "contains a NUL or a line break");
    }
  }
  const std::string daemon = PathBasename(absl::StripAsciiWhitespace(argv[0]));
  const MpiFlavor* owner = Flavors().OfDaemon(daemon);
  if (owner == nullptr) {
    return BadDaemonWord(0, argv[0], absl::StrCat("Exec runs only an MPI daemon (",
                                                  Flavors().DaemonsText(), ")"));
  }
  const MpiFlavor& run_flavor = FlavorFor(mpi);
  if (owner != &run_flavor) {
    return BadDaemonWord(0, argv[0], absl::StrCat("an ", run_flavor.display_name(),
                                                  " run starts only ",
                                                  JoinWithOr(run_flavor.daemons()), " here"));
  }
  auto path = paths.find(daemon);
  if (path == paths.end() || path->second.empty()) {
    return BadDaemonWord(0, argv[0], "this MPI daemon is not installed on this worker");
  }
  if (absl::Status s = run_flavor.CheckDaemonArgs(argv, ChecksFor(tuning_dir)); !s.ok()) return s;
  std::vector<std::string> out = argv;
  out[0] = path->second;
  return out;
}

}  // namespace collbench
