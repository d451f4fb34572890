// SPDX-License-Identifier: Apache-2.0
#include "worker/engine/report/fingerprint.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "flavors/registry.h"

extern char** environ;

namespace collbench {
namespace {

// Besides each MPI flavour's own (MpiFlavor::EnvPrefixes).
constexpr const char* kPrefixes[] = {"NCCL_", "UCX_", "FI_", "MEMKIND_"};
constexpr const char* kExact[] = {"CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"};

std::string CpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (absl::StartsWith(line, "model name")) {
      return std::string(absl::StripLeadingAsciiWhitespace(line.substr(line.find(':') + 1)));
    }
  }
  return "unknown";
}

bool Tunes(absl::string_view name) {
  for (const char* prefix : kPrefixes) {
    if (absl::StartsWith(name, prefix)) return true;
  }
  for (const MpiFlavor* flavor : Flavors().List()) {
    for (const std::string& prefix : flavor->LaunchEnvPrefixes()) {
      if (absl::StartsWith(name, prefix)) return false;
    }
  }
  for (const MpiFlavor* flavor : Flavors().List()) {
    for (const std::string& prefix : flavor->EnvPrefixes()) {
      if (absl::StartsWith(name, prefix)) return true;
    }
  }
  for (const char* exact : kExact) {
    if (name == exact) return true;
  }
  return false;
}

}  // namespace

std::map<std::string, std::string> EnvironmentFacts() {
  std::map<std::string, std::string> facts;
  struct utsname u;
  if (uname(&u) == 0) facts["kernel"] = absl::StrCat(u.sysname, " ", u.release, " ", u.machine);
  facts["cpu_model"] = CpuModel();
  facts["cpus"] = absl::StrCat(std::thread::hardware_concurrency());
  for (char** env = environ; env != nullptr && *env != nullptr; ++env) {
    absl::string_view entry(*env);
    const size_t eq = entry.find('=');
    if (eq == absl::string_view::npos) continue;
    const absl::string_view name = entry.substr(0, eq);
    if (Tunes(name)) facts[absl::StrCat("env.", name)] = std::string(entry.substr(eq + 1));
  }
  return facts;
}

std::string Fingerprint(const std::map<std::string, std::string>& facts) {
  uint64_t hash = 14695981039346656037ull;
  auto mix = [&hash](absl::string_view text) {
    for (unsigned char c : text) {
      hash ^= c;
      hash *= 1099511628211ull;
    }
  };
  for (const auto& [key, value] : facts) {
    mix(key);
    mix("=");
    mix(value);
    mix("\n");
  }
  return absl::StrFormat("%016x", hash);
}

}  // namespace collbench
