// SPDX-License-Identifier: Apache-2.0
// Which container a worker runs in (docs/design/deployment.md#container-awareness): the
// runtime concluded from several signals, each reported as read, and the
// namespace identities and /dev/shm size that decide whether co-resident
// workers can share memory. The cgroup limits are in cgroup_limits.h.
//
// Signals, and how much each says:
//   conclusive (any one makes in_container true):
//     /run/.containerenv          podman (its engine= line names the engine)
//     /proc/1/environ container=  set by podman, systemd-nspawn, lxc, some
//     environ container=          images ("oci"); the worker's own too
//     KUBERNETES_SERVICE_HOST     kubernetes
//     /proc/self/cgroup           a path naming kubepods, libpod-, crio-,
//                                 cri-containerd-/containerd, docker, lxc
//     /proc/self/mountinfo        /etc/hostname bind-mounted from a runtime's
//       /etc/hostname             store (/var/lib/docker/containers/,
//                                 containers/storage/, /var/lib/kubelet/pods/,
//                                 /var/lib/containerd/, cri-o's)
//   hints (never enough alone; reported, confidence "low"):
//     /.dockerenv                 present in some VMs and images too
//     /proc/self/mountinfo /      an overlay root file system
//   context (no vote): /proc/self/ns/pid, the initial PID namespace or not.
// The runtime is the first named by a conclusive signal in the order
// kubernetes, podman, cri-o, containerd, docker, lxc, systemd-nspawn;
// "unknown" when the conclusive signals name none. With only hints the
// worker reports no container (runtime "", confidence "low"): a VM with a
// stray /.dockerenv must not be taken for one.
//
// Everything reads below `root` (absolute paths such as /.dockerenv and
// /dev/shm) and `proc_root`, so tests use fake trees. Unreadable files are
// reported as such and count as absent. Thread-safe: reads only.
#ifndef COLLBENCH_WORKER_AGENT_CONTAINER_FACTS_H_
#define COLLBENCH_WORKER_AGENT_CONTAINER_FACTS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "collbench/v1/worker.pb.h"
#include "worker/agent/host_facts_io.h"

namespace collbench {

struct ContainerProbe {
  std::string root;  // prefix of absolute paths; "" is /
  std::string proc_root = "/proc";
  // The worker's own environment; empty reads the process environment.
  EnvLookup get_env;
};

// in_container, runtime, confidence and signals, as described above.
v1::ContainerFacts DetectContainer(const ContainerProbe& probe);

// The inode numbers of proc_root/self/ns/{ipc,net,pid,mnt,uts} (0 for one
// that cannot be read).
v1::Namespaces ReadNamespaces(const std::string& proc_root);

// "ipc:[4026531839]" → 4026531839; 0 when `link` is not of that form.
uint64_t NamespaceInode(absl::string_view link);

// The size of the file system at `path` (statfs), 0 when it cannot be read.
uint64_t FileSystemBytes(const std::string& path);

// The initial (host) PID namespace's inode (PROC_PID_INIT_INO).
inline constexpr uint64_t kInitialPidNamespace = 0xEFFFFFFCu;

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_CONTAINER_FACTS_H_
