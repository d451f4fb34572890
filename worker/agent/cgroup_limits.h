// SPDX-License-Identifier: Apache-2.0
// The CPU and memory limits of the worker's own cgroup
// (docs/design/deployment.md#container-awareness): they replace the host's
// figures for its default slot count and for the memory check of a run, since a
// container cannot use more than its limits.
//
// How they are found:
//   1. /proc/self/cgroup gives the worker's cgroup: "0::PATH" (v2) and
//      "ID:CONTROLLERS:PATH" lines (v1, e.g. "4:memory:/docker/abc",
//      "3:cpu,cpuacct:/docker/abc").
//   2. /proc/self/mountinfo gives where each hierarchy is mounted and which
//      part of it the mount shows (its root field: "/" in a container with
//      its own cgroup namespace, "/docker/abc" when the host's hierarchy is
//      bind-mounted at that cgroup).
//   3. The limit files are read in the worker's cgroup folder and in each
//      ancestor up to the mount point; the smallest limit wins (a parent's
//      limit binds its children):
//        v2: cpu.max "QUOTA PERIOD" or "max PERIOD"; memory.max BYTES or "max"
//        v1: cpu.cfs_quota_us (-1: none) / cpu.cfs_period_us;
//            memory.limit_in_bytes (at or above 2^62: none, the kernel's
//            "unlimited" is LONG_MAX rounded down to a page)
//   A v1 controller that is mounted is used for its limit even when a v2
//   hierarchy is mounted too (hybrid hosts keep the controllers on v1).
//   version is 1 when any limit came from v1, else 2 when a v2 hierarchy
//   was found, else 0. Missing folders and unreadable or malformed files
//   count as "no limit here".
//
// Every path read is below `proc_root`, or below `root` for the mount
// points mountinfo names, so tests use fake trees. Thread-safe: reads only.
#ifndef COLLBENCH_WORKER_AGENT_CGROUP_LIMITS_H_
#define COLLBENCH_WORKER_AGENT_CGROUP_LIMITS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "collbench/v1/worker.pb.h"

namespace collbench {

// path, version, cpu_limit (CPUs; 0: none) and memory_limit_bytes (0:
// none) as described above.
v1::CgroupLimits ReadCgroupLimits(const std::string& root, const std::string& proc_root);

// The parsers, one file's text each; nullopt means "no limit" (including
// text that is not a limit).
std::optional<double> ParseCpuMax(absl::string_view text);                             // v2 cpu.max
std::optional<double> CpusOfQuota(absl::string_view quota, absl::string_view period);  // v1
std::optional<uint64_t> ParseMemoryMax(absl::string_view text);                        // v2 and v1

// The CPUs a worker may keep busy: `cpus` (its affinity mask), capped by a
// CPU limit rounded up; at least 1.
int CappedCpus(int cpus, double cpu_limit);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_CGROUP_LIMITS_H_
