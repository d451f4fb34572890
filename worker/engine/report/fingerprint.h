// SPDX-License-Identifier: Apache-2.0
// What about this machine and environment can change the numbers: kernel,
// CPU model, and the variables that tune MPI, UCX and NCCL. Recorded in the
// "start" record so two results can be compared knowingly.
#ifndef COLLBENCH_WORKER_ENGINE_REPORT_FINGERPRINT_H_
#define COLLBENCH_WORKER_ENGINE_REPORT_FINGERPRINT_H_

#include <map>
#include <string>

namespace collbench {

// Kernel release, CPU model, core count, and every environment variable
// with a prefix that tunes communication (NCCL_, UCX_, OMPI_MCA_, MPIR_CVAR_,
// FI_, MEMKIND_, CUDA_VISIBLE_DEVICES, OMP_NUM_THREADS), but those an MPI
// launcher sets for each job (MpiFlavor::LaunchEnvPrefixes).
std::map<std::string, std::string> EnvironmentFacts();

// A stable 16-hex-digit digest of the facts (FNV-1a 64 over "k=v\n").
std::string Fingerprint(const std::map<std::string, std::string>& facts);

}  // namespace collbench

#endif  // COLLBENCH_WORKER_ENGINE_REPORT_FINGERPRINT_H_
