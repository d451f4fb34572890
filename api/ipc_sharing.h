// SPDX-License-Identifier: Apache-2.0
// Whether the workers of a run share memory
// (docs/design/deployment.md#container-awareness): shared memory can connect
// ranks on different workers only when every one of them sees the same IPC
// namespace (System V segments, the same /dev/shm) on the same kernel. Used by
// validation (every worker a placement may use) and by the coordinator when it
// starts a run (the workers it picked).
//
// Rules:
//   shared   every worker has the same host_id and the same non-zero IPC
//            namespace inode (an inode is only unique within one kernel,
//            hence the host). One worker is trivially shared.
//   single-copy mechanism (what shared memory could use beyond copy-in /
//   copy-out): "cma" when, besides, every worker has the same non-zero PID
//   namespace (which SHM across workers needs anyway, see
//   ShmNeedsOnePidNamespace) (Cross Memory Attach names the peer by its PID and needs
//   ptrace permission: the same user); "none" otherwise, and when not
//   shared. XPMEM and KNEM are not considered (no module is loaded on the
//   hosts this runs on).
// Thread-safe: pure functions.
#ifndef COLLBENCH_API_IPC_SHARING_H_
#define COLLBENCH_API_IPC_SHARING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "collbench/v1/worker.pb.h"

namespace collbench {

// The facts of one worker that decide sharing.
struct WorkerIpc {
  std::string name;  // "workers/{id}"
  std::string host_id;
  uint64_t ipc_namespace = 0;  // 0: unknown (an older worker)
  uint64_t pid_namespace = 0;
};

WorkerIpc IpcOf(const std::string& name, const v1::Inventory& inventory);

struct IpcSharing {
  bool shared = false;
  std::string single_copy_mechanism = "none";  // "cma" or "none"
  // When not shared: which workers do not share with the first one, and
  // why, e.g. "workers/c (host n2, ipc:[4026532290]) does not share the IPC
  // namespace of workers/a (host n1, ipc:[4026531839])".
  std::string reason;
  // When shared but not in one PID namespace (single_copy_mechanism
  // "none"): which workers are not in the first one's, e.g. "workers/b
  // (pid:[4026532401]) is not in the PID namespace of workers/a
  // (pid:[4026532301])".
  std::string pid_reason;
};

// REQUIRES: !workers.empty().
IpcSharing DecideIpcSharing(const std::vector<WorkerIpc>& workers);

// Why SHM across workers that share IPC but not a PID namespace is refused
// (validation and the coordinator's start check): UCX's shared-memory
// transports, which carry SHM between workers, time out in their address
// exchange between PID namespaces (UCX 1.13, posix and sysv alike).
// REQUIRES: sharing.shared and !sharing.pid_reason.empty().
std::string ShmNeedsOnePidNamespace(const IpcSharing& sharing);

}  // namespace collbench

#endif  // COLLBENCH_API_IPC_SHARING_H_
