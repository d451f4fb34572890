// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/cgroup_limits.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "worker/agent/host_facts_io.h"

namespace collbench {
namespace {

// v1's "unlimited" is LONG_MAX rounded down to a page; anything this large
// is no limit.
constexpr uint64_t kUnlimitedMemory = uint64_t{1} << 62;

struct Mount {
  std::string root;  // the part of the hierarchy the mount shows
  std::string mount_point;
  bool v2 = false;
  std::vector<std::string> controllers;  // v1: from the super options
};

std::vector<Mount> CgroupMounts(const std::string& mountinfo) {
  std::vector<Mount> mounts;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    const auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || dash == fields.end() || fields.end() - dash < 4) continue;
    const absl::string_view type = *(dash + 1);
    if (type != "cgroup" && type != "cgroup2") continue;
    Mount mount{std::string(fields[3]), std::string(fields[4]), type == "cgroup2", {}};
    for (absl::string_view option : absl::StrSplit(*(dash + 3), ',')) {
      mount.controllers.emplace_back(option);
    }
    mounts.push_back(std::move(mount));
  }
  return mounts;
}

// The worker's path in the v2 hierarchy ("0::PATH") or in the v1 hierarchy
// holding `controller`; nullopt when /proc/self/cgroup has no such line.
std::optional<std::string> OwnPath(const std::string& cgroup, bool v2,
                                   absl::string_view controller) {
  for (absl::string_view line : absl::StrSplit(cgroup, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    if (v2 && parts[0] == "0" && parts[1].empty()) return std::string(parts[2]);
    if (!v2) {
      for (absl::string_view name : absl::StrSplit(parts[1], ',')) {
        if (name == controller) return std::string(parts[2]);
      }
    }
  }
  return std::nullopt;
}

// The folders to read, innermost first: the worker's cgroup, then each
// ancestor up to the mount point.
std::vector<std::string> Folders(const std::string& root, const Mount& mount,
                                 const std::string& own_path) {
  std::string relative = own_path;
  if (mount.root != "/" && absl::StartsWith(own_path, mount.root)) {
    relative = own_path.substr(mount.root.size());
  } else if (mount.root != "/") {
    relative = "";  // the mount shows another part of the hierarchy: only its top
  }
  const std::string base = root + mount.mount_point;
  std::vector<std::string> folders;
  std::vector<absl::string_view> parts = absl::StrSplit(relative, '/', absl::SkipEmpty());
  for (size_t n = parts.size() + 1; n-- > 0;) {
    std::string folder = base;
    for (size_t i = 0; i < n; ++i) absl::StrAppend(&folder, "/", parts[i]);
    folders.push_back(std::move(folder));
  }
  return folders;
}

template <typename T>
void KeepSmaller(std::optional<T> candidate, std::optional<T>* smallest) {
  if (candidate.has_value() && (!smallest->has_value() || *candidate < **smallest)) {
    *smallest = candidate;
  }
}

// The mount for `controller`: v1 when that controller is mounted there,
// else the v2 hierarchy; nullptr when neither.
const Mount* MountFor(const std::vector<Mount>& mounts, absl::string_view controller) {
  const Mount* v2 = nullptr;
  for (const Mount& mount : mounts) {
    if (mount.v2) {
      if (v2 == nullptr) v2 = &mount;
      continue;
    }
    if (std::find(mount.controllers.begin(), mount.controllers.end(), controller) !=
        mount.controllers.end()) {
      return &mount;
    }
  }
  return v2;
}

}  // namespace

std::optional<double> ParseCpuMax(absl::string_view text) {
  std::vector<absl::string_view> words =
      absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
  if (words.size() != 2) return std::nullopt;
  return CpusOfQuota(words[0], words[1]);
}

std::optional<double> CpusOfQuota(absl::string_view quota, absl::string_view period) {
  int64_t quota_us = 0, period_us = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(quota), &quota_us) ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(period), &period_us) || quota_us <= 0 ||
      period_us <= 0) {
    return std::nullopt;  // "max", -1 or nonsense: no limit
  }
  return static_cast<double>(quota_us) / static_cast<double>(period_us);
}

std::optional<uint64_t> ParseMemoryMax(absl::string_view text) {
  uint64_t bytes = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &bytes) || bytes == 0 ||
      bytes >= kUnlimitedMemory) {
    return std::nullopt;
  }
  return bytes;
}

int CappedCpus(int cpus, double cpu_limit) {
  int capped = std::max(cpus, 1);
  if (cpu_limit > 0) capped = std::min(capped, static_cast<int>(std::ceil(cpu_limit - 1e-9)));
  return std::max(capped, 1);
}

v1::CgroupLimits ReadCgroupLimits(const std::string& root, const std::string& proc_root) {
  v1::CgroupLimits limits;
  const std::string cgroup = ReadWholeFile(proc_root + "/self/cgroup").value_or("");
  const std::vector<Mount> mounts =
      CgroupMounts(ReadWholeFile(proc_root + "/self/mountinfo").value_or(""));
  std::optional<double> cpus;
  std::optional<uint64_t> memory;
  bool used_v1 = false, found_v2 = false;
  for (const char* controller : {"memory", "cpu"}) {
    const Mount* mount = MountFor(mounts, controller);
    if (mount == nullptr) continue;
    std::optional<std::string> own = OwnPath(cgroup, mount->v2, controller);
    if (!own.has_value()) continue;
    used_v1 |= !mount->v2;
    found_v2 |= mount->v2;
    if (limits.path().empty() || std::string(controller) == "memory") limits.set_path(*own);
    for (const std::string& folder : Folders(root, *mount, *own)) {
      if (std::string(controller) == "memory") {
        const char* file = mount->v2 ? "/memory.max" : "/memory.limit_in_bytes";
        if (std::optional<std::string> text = ReadWholeFile(folder + file)) {
          KeepSmaller(ParseMemoryMax(*text), &memory);
        }
      } else if (mount->v2) {
        if (std::optional<std::string> text = ReadWholeFile(folder + "/cpu.max")) {
          KeepSmaller(ParseCpuMax(*text), &cpus);
        }
      } else {
        std::optional<std::string> quota = ReadWholeFile(folder + "/cpu.cfs_quota_us");
        std::optional<std::string> period = ReadWholeFile(folder + "/cpu.cfs_period_us");
        if (quota.has_value() && period.has_value())
          KeepSmaller(CpusOfQuota(*quota, *period), &cpus);
      }
    }
  }
  limits.set_version(used_v1 ? 1 : found_v2 ? 2 : 0);
  limits.set_cpu_limit(cpus.value_or(0));
  limits.set_memory_limit_bytes(memory.value_or(0));
  return limits;
}

}  // namespace collbench
