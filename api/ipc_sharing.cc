// SPDX-License-Identifier: Apache-2.0
#include "api/ipc_sharing.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace collbench {
namespace {

std::string Describe(const WorkerIpc& w) {
  return absl::StrCat(w.name, " (host ", w.host_id.empty() ? "unknown" : w.host_id, ", ",
                      w.ipc_namespace == 0 ? std::string("IPC namespace unknown")
                                           : absl::StrCat("ipc:[", w.ipc_namespace, "]"),
                      ")");
}

}  // namespace

WorkerIpc IpcOf(const std::string& name, const v1::Inventory& inventory) {
  WorkerIpc ipc;
  ipc.name = name;
  ipc.host_id = inventory.host_id();
  ipc.ipc_namespace = inventory.container().namespaces().ipc();
  ipc.pid_namespace = inventory.container().namespaces().pid();
  return ipc;
}

IpcSharing DecideIpcSharing(const std::vector<WorkerIpc>& workers) {
  IpcSharing result;
  const WorkerIpc& first = workers.front();
  if (first.ipc_namespace == 0) {
    result.reason = absl::StrCat(Describe(first), " reports no IPC namespace");
    return result;
  }
  std::vector<std::string> apart, other_pid;
  for (const WorkerIpc& w : workers) {
    const bool shares = w.ipc_namespace != 0 && w.ipc_namespace == first.ipc_namespace &&
                        w.host_id == first.host_id;
    if (!shares) apart.push_back(Describe(w));
    if (w.pid_namespace == 0 || w.pid_namespace != first.pid_namespace) {
      other_pid.push_back(absl::StrCat(w.name, " (pid:[", w.pid_namespace, "])"));
    }
  }
  if (!apart.empty()) {
    result.reason = absl::StrCat(absl::StrJoin(apart, ", "), apart.size() == 1 ? " does" : " do",
                                 " not share the IPC namespace of ", Describe(first));
    return result;
  }
  result.shared = true;
  result.single_copy_mechanism = other_pid.empty() ? "cma" : "none";
  if (!other_pid.empty()) {
    result.pid_reason = absl::StrCat(absl::StrJoin(other_pid, ", "),
                                     other_pid.size() == 1 ? " is" : " are",
                                     " not in the PID namespace of ", first.name, " (pid:[",
                                     first.pid_namespace, "])");
  }
  return result;
}

std::string ShmNeedsOnePidNamespace(const IpcSharing& sharing) {
  return absl::StrCat(
      "SHM between workers needs them in one PID namespace as well as one IPC namespace: ",
      sharing.pid_reason,
      " (UCX's shared memory, which carries SHM between workers, times out between PID "
      "namespaces); share the PID namespace (podman --pid container:NAME, Kubernetes "
      "hostPID) or use TCP");
}

}  // namespace collbench
