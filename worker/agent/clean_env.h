// SPDX-License-Identifier: Apache-2.0
// The environment of everything a worker starts
// (docs/design/security.md#clean-environments): built from an allow-list, never
// the worker's whole environment, so that nothing the worker holds (a join
// token in COLLBENCH_JOIN_TOKEN, credentials, proxy settings, an operator's
// LD_PRELOAD) reaches mpirun, the MPI daemons or the ranks. What passes:
//   PATH, HOME, USER, LOGNAME, SHELL, LANG, LC_*, TZ, TMPDIR
//   LD_LIBRARY_PATH (the worker's own; the ranks need the same libraries)
//   device selection: CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER,
//     NVIDIA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES,
//     GPU_DEVICE_ORDINAL, MEMKIND_HBW_NODES
//   the engine's own lookup: COLLBENCH_NCCL_LIBRARY,
//     COLLBENCH_CALLER_LD_LIBRARY_PATH, PYTHONPATH
//   OMPI_ALLOW_RUN_AS_ROOT, OMPI_ALLOW_RUN_AS_ROOT_CONFIRM (only when the
//     worker runs as root)
// The callers then add what the run needs (transport settings, the
// validated spec.env, COLLBENCH_RUN, COLLBENCH_HOSTMAP, the token file's
// path; for daemons the worker's default_env).
//
// Pure functions; thread-safe.
#ifndef COLLBENCH_WORKER_AGENT_CLEAN_ENV_H_
#define COLLBENCH_WORKER_AGENT_CLEAN_ENV_H_

#include <map>
#include <string>

#include "absl/strings/string_view.h"

namespace collbench {

// Whether the worker passes its variable `name` on (see above).
// `as_root`: whether the worker runs with euid 0.
bool IsPassedWorkerVariable(absl::string_view name, bool as_root);

// The allowed entries of `environ` (a NULL-terminated "K=V" array, such as
// the process' own `environ`).
std::map<std::string, std::string> AllowedWorkerEnvironment(const char* const* environ,
                                                            bool as_root);

// AllowedWorkerEnvironment of this process' environment, as it is now.
std::map<std::string, std::string> AllowedOwnEnvironment();

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_CLEAN_ENV_H_
