// SPDX-License-Identifier: Apache-2.0
// What a worker reports about itself when it registers (docs/design/run-lifecycle.md#workers): the
// scheduler places ranks by it, keeps benchmarks of one physical host apart
// by host_id, and validates buffer sizes against memory.
#ifndef COLLBENCH_WORKER_AGENT_INVENTORY_H_
#define COLLBENCH_WORKER_AGENT_INVENTORY_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "collbench/v1/worker.pb.h"

namespace collbench {

// Environment variables naming the physical host, in the order they are
// tried; the kernel's boot id comes after them (co-resident containers share
// the kernel, hence the boot id).
inline constexpr char kHostIdEnv[] = "COLLBENCH_HOST_ID";  // set by the operator
inline constexpr char kNodeNameEnv[] = "NODE_NAME";        // Kubernetes downward API
inline constexpr char kKubernetesNodeNameEnv[] = "KUBERNETES_NODE_NAME";

struct InventoryOptions {
  // Environment lookup; nullptr reads the process environment. Tests
  // replace it to set or hide variables.
  std::function<std::optional<std::string>(const std::string& name)> get_env;
  // Roots of the kernel's file systems, for tests with a fake tree; `root`
  // prefixes other absolute paths (/.dockerenv, /dev/shm, the cgroup mount
  // points /proc/self/mountinfo names); "" is /.
  std::string root;
  std::string proc_root = "/proc";
  std::string sys_root = "/sys";
  // Where the flavours' rank binaries are looked for first;
  // empty: the directory of the running executable (/proc/self/exe).
  std::string binary_dir;
  // The search path for everything not found in binary_dir (the rank
  // binaries, the MPI launchers); nullopt: $PATH.
  std::optional<std::string> search_path;
  // Probing GPUs creates a CUDA context per device in this process; tests
  // and tools that only want the host facts can turn it off.
  bool probe_gpus = true;
};

// Discovers the inventory of this worker:
//   hostname, kernel (uname release), collbench_version;
//   host_id: COLLBENCH_HOST_ID, NODE_NAME, KUBERNETES_NODE_NAME, else the
//     boot id (/proc/sys/kernel/random/boot_id), else the hostname;
//   node_name: NODE_NAME, else KUBERNETES_NODE_NAME (the Kubernetes node);
//   container: the runtime and the signals it was concluded from
//     (container_facts.h), namespace ids, /dev/shm size, cgroup limits
//     (cgroup_limits.h); in_container / container_runtime repeat the
//     conclusion for older readers;
//   host_cpus: the CPUs this process may run on (sched_getaffinity);
//   cpus: host_cpus capped by the cgroup CPU limit rounded up;
//   host_memory_bytes: MemTotal;
//   memory_bytes: MemTotal, or the cgroup memory limit when lower;
//   numa_nodes: /sys/devices/system/node/node*/{meminfo,cpulist};
//   memory_kinds: every engine kind whose CheckAvailable() passes here, with
//     numa:N expanded to numa:0 … numa:K over the NUMA nodes;
//   gpus: through the engine's DeviceRuntime (none when Init(0) fails);
//   backends: mpi; plus mpi-staged, mpi-cuda, nccl when built with CUDA
//     and a GPU was found;
//   mpi_implementations: the name of each MPI flavour (flavors/registry.h)
//     whose rank binary and launcher program are found.
// Facts that cannot be read are left empty/zero; the call fails only when
// nothing sensible can be reported (no hostname).
// Thread safety: may be called from any thread; it reads only.
absl::StatusOr<v1::Inventory> DiscoverInventory(const InventoryOptions& options = {});

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_INVENTORY_H_
