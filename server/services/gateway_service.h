// The WorkerGateway gRPC service: one Connect stream per worker. It turns
// what workers send into RunManager calls and implements WorkerLink, so
// the run manager can queue messages to any connected worker.
//
// Thread safety: Send() may be called from any thread; each stream writes
// from its own queue, one message at a time.
#ifndef COLLBENCH_SERVER_SERVICES_GATEWAY_SERVICE_H_
#define COLLBENCH_SERVER_SERVICES_GATEWAY_SERVICE_H_

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collbench/v1/gateway.grpc.pb.h"
#include "server/core/run_manager.h"
#include "server/core/worker_link.h"

namespace collbench {

class WorkerStream;

class GatewayService final : public v1::WorkerGateway::CallbackService, public WorkerLink {
 public:
  GatewayService() = default;
  // Must be called once before serving; `manager` outlives the service.
  void SetManager(RunManager* manager) { manager_ = manager; }

  grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>* Connect(
      grpc::CallbackServerContext* context) override;

  bool Send(const std::string& worker, const v1::CoordinatorMessage& message) override;

  // Called by streams.
  void Attach(const std::string& worker, std::shared_ptr<WorkerStream> stream);
  void Detach(const std::string& worker, const WorkerStream* stream);
  RunManager* manager() const { return manager_; }
  size_t connected() const;

 private:
  RunManager* manager_ = nullptr;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<WorkerStream>> streams_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_SERVICES_GATEWAY_SERVICE_H_
