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
  std::vector<std::string> apart;
  bool one_pid_namespace = first.pid_namespace != 0;
  for (const WorkerIpc& w : workers) {
    const bool shares = w.ipc_namespace != 0 && w.ipc_namespace == first.ipc_namespace &&
                        w.host_id == first.host_id;
    if (!shares) apart.push_back(Describe(w));
    one_pid_namespace &= w.pid_namespace == first.pid_namespace;
  }
  if (!apart.empty()) {
    result.reason = absl::StrCat(absl::StrJoin(apart, ", "), apart.size() == 1 ? " does" : " do",
                                 " not share the IPC namespace of ", Describe(first));
    return result;
  }
  result.shared = true;
  result.single_copy_mechanism = one_pid_namespace ? "cma" : "none";
  return result;
}

}  // namespace collbench
