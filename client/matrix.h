// `collbench matrix`: a small run matrix (operations x placements x
// transports x MPI libraries) on one coordinator, one run at a time, and
// the best/worst table over it.
#ifndef COLLBENCH_CLIENT_MATRIX_H_
#define COLLBENCH_CLIENT_MATRIX_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "collbench/v1/run.pb.h"

namespace collbench {

// The default flavour's name (flavors/registry.h).
std::vector<std::string> DefaultMatrixMpis();

struct MatrixPlan {
  std::vector<std::string> operations = {"allreduce", "bcast", "gather"};
  std::vector<std::string> placements = {"pack", "spread"};
  std::vector<std::string> transports = {"shm", "tcp"};
  std::vector<std::string> mpis = DefaultMatrixMpis();
  std::vector<std::string> common_flags;  // engine and run flags for every run

  // The `run` flags of one combination.
  std::vector<std::string> FlagsFor(const std::string& op, const std::string& placement,
                                    const std::string& transport, const std::string& mpi) const;
  int size() const;
};

// --operations, --placements, --transports, --mpis (comma lists); anything
// else is passed to every run. Every combination is checked up front.
absl::StatusOr<MatrixPlan> ParseMatrixFlags(const std::vector<std::string>& args);

struct MatrixRun {
  std::string config;  // "openmpi/pack/shm"
  v1::Run run;
  std::vector<v1::SizeResult> results;
};

std::string MatrixConfig(const std::string& placement, const std::string& transport,
                         const std::string& mpi);

// Per operation and size: the fastest configuration (named only where its
// win is significant, SignificantFastest) and the slowest, and their ratio.
std::string FormatBestWorst(const std::vector<MatrixRun>& runs);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_MATRIX_H_
