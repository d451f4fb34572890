// SPDX-License-Identifier: Apache-2.0
// The WorkerGateway gRPC service: one Connect stream per worker. It turns
// what workers send into Fleet calls (server/core/fleet.h) and gives each
// registered stream its send queue in WorkerStreams, through which the core
// reaches the worker. The first message must be a Register; a stream of a
// source at its cap of unregistered streams is ended at once with
// RESOURCE_EXHAUSTED and counted as a "refused_concurrent" registration.
//
// Thread safety: gRPC calls Connect's reactors from its threads; the
// service holds no state of its own.
#ifndef COLLBENCH_SERVER_API_GATEWAY_SERVICE_H_
#define COLLBENCH_SERVER_API_GATEWAY_SERVICE_H_

#include "collbench/v1/gateway.grpc.pb.h"
#include "common/clock.h"
#include "server/core/fleet.h"
#include "server/api/worker_streams.h"

namespace collbench {

class GatewayService final : public v1::WorkerGateway::CallbackService {
 public:
  // None is owned; all outlive the service.
  GatewayService(Fleet* fleet, WorkerStreams* streams, const Clock* clock)
      : fleet_(fleet), streams_(streams), clock_(clock) {}

  grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>* Connect(
      grpc::CallbackServerContext* context) override;

 private:
  Fleet* const fleet_;
  WorkerStreams* const streams_;
  const Clock* const clock_;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_GATEWAY_SERVICE_H_
