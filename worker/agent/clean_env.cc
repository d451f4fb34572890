// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/clean_env.h"

#include <unistd.h>

#include <cstring>

#include "absl/strings/match.h"
#include "flavors/registry.h"

extern char** environ;

namespace collbench {
namespace {

constexpr const char* kPassed[] = {
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ", "TMPDIR", "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "MEMKIND_HBW_NODES",
    "COLLBENCH_NCCL_LIBRARY", "COLLBENCH_CALLER_LD_LIBRARY_PATH", "PYTHONPATH"};

}  // namespace

bool IsPassedWorkerVariable(absl::string_view name, bool as_root) {
  if (absl::StartsWith(name, "LC_") && name.size() > 3) return true;
  for (const char* passed : kPassed) {
    if (name == passed) return true;
  }
  if (!as_root) return false;
  for (const MpiFlavor* flavor : Flavors().List()) {
    if (flavor->RootEnv().contains(std::string(name))) return true;
  }
  return false;
}

std::map<std::string, std::string> AllowedWorkerEnvironment(const char* const* env,
                                                            bool as_root) {
  std::map<std::string, std::string> out;
  for (const char* const* entry = env; entry != nullptr && *entry != nullptr; ++entry) {
    const char* eq = std::strchr(*entry, '=');
    if (eq == nullptr) continue;
    std::string name(*entry, eq - *entry);
    if (IsPassedWorkerVariable(name, as_root)) out.emplace(std::move(name), eq + 1);
  }
  return out;
}

std::map<std::string, std::string> AllowedOwnEnvironment() {
  return AllowedWorkerEnvironment(environ, geteuid() == 0);
}

}  // namespace collbench
