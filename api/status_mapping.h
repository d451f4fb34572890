// SPDX-License-Identifier: Apache-2.0
// The one place absl::Status becomes a gRPC status or an HTTP status
// (CONTRIBUTING.md#style), so both APIs answer the same error the same way.
#ifndef COLLBENCH_API_STATUS_MAPPING_H_
#define COLLBENCH_API_STATUS_MAPPING_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace collbench {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);
// 400 for INVALID_ARGUMENT, 404 NOT_FOUND, 409 ALREADY_EXISTS/ABORTED,
// 412 FAILED_PRECONDITION, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, ...
int HttpStatusFor(absl::StatusCode code);

}  // namespace collbench

#endif  // COLLBENCH_API_STATUS_MAPPING_H_
