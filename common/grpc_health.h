// SPDX-License-Identifier: Apache-2.0
// A client of the standard gRPC health service (grpc.health.v1.Health/Check),
// without generated code for it: what `collbench health` and the tests ask a
// coordinator or a worker (a worker is SERVING only while it is registered,
// docs/design/deployment.md#health-probes; Kubernetes' grpc readiness probe asks the same).
//
// The request is HealthCheckRequest{service}; the answer's field 1 is the
// serving status. Both are encoded by hand: a length-delimited field 1 and a
// varint field 1.
//
// Thread safety: a plain function; each call has its own completion queue.
#ifndef COLLBENCH_COMMON_GRPC_HEALTH_H_
#define COLLBENCH_COMMON_GRPC_HEALTH_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"

namespace collbench {

// The status `service` ("" for the server as a whole) has at the other end
// of `channel`: "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN" or "UNKNOWN".
// An error naming what happened when there is no answer within `timeout`,
// the call fails (NOT_FOUND for a service the server does not know) or the
// answer cannot be read.
absl::StatusOr<std::string> CheckGrpcHealth(const std::shared_ptr<grpc::Channel>& channel,
                                            const std::string& service,
                                            absl::Duration timeout);

}  // namespace collbench

#endif  // COLLBENCH_COMMON_GRPC_HEALTH_H_
