// SPDX-License-Identifier: Apache-2.0
// `collbench matrix`: a run matrix (operations x placements x transports x
// MPI libraries) made by the coordinator as one workflow (it checks every
// combination before the first run: a typo refuses the matrix whole, a
// combination that cannot be is skipped with its reason), then each
// operation's runs side by side and the best/worst table over them.
#ifndef COLLBENCH_CLIENT_MATRIX_H_
#define COLLBENCH_CLIENT_MATRIX_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/coordinator_client.h"
#include "collbench/v1/workflow.pb.h"

namespace collbench {

// --operations, --placements, --transports, --mpis (comma lists); every
// other flag is a `run` flag of every combination (the base spec).
// InvalidArgument for a run flag that does not parse.
absl::StatusOr<v1::MatrixSpec> ParseMatrixFlags(const std::vector<std::string>& args);

int MatrixCommand(CoordinatorClient& client, const std::vector<std::string>& args);

}  // namespace collbench

#endif  // COLLBENCH_CLIENT_MATRIX_H_
