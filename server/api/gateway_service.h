// SPDX-License-Identifier: Apache-2.0
// The WorkerGateway gRPC service: one Connect stream per worker. It turns
// what workers send into RunManager calls and implements WorkerLink, so
// the run manager can queue messages to any connected worker.
//
// Thread safety: Send() may be called from any thread; each stream writes
// from its own queue, one message at a time. A queue holds at most
// `max_queued` messages (docs/design/security.md#bounds); a worker whose queue
// overflows has its stream ended with RESOURCE_EXHAUSTED (it reconnects and
// re-sends what was not acknowledged), counted in send_queue_overflows().
// Streams not registered yet are capped per source address
// (RunManagerOptions::max_unregistered_streams_per_source): beyond it a new stream is ended at once
// with RESOURCE_EXHAUSTED and counted as a "refused_concurrent"
// registration.
#ifndef COLLBENCH_SERVER_API_GATEWAY_SERVICE_H_
#define COLLBENCH_SERVER_API_GATEWAY_SERVICE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collbench/v1/gateway.grpc.pb.h"
#include "common/clock.h"
#include "server/core/run_manager.h"
#include "server/core/worker_link.h"

namespace collbench {

class WorkerStream;

class GatewayService final : public v1::WorkerGateway::CallbackService, public WorkerLink {
 public:
  // Messages queued to one worker beyond which its stream is ended (0: no
  // limit). The manager sends a handful per run and heartbeat interval; a
  // healthy worker's queue stays near empty.
  static constexpr size_t kDefaultMaxQueued = 4096;
  // `clock` (not owned; outlives the service) dates what workers report.
  explicit GatewayService(const Clock* clock, size_t max_queued = kDefaultMaxQueued)
      : clock_(clock), max_queued_(max_queued) {}
  // Must be called once before serving; `manager` outlives the service.
  void SetManager(RunManager* manager) { manager_ = manager; }

  grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>* Connect(
      grpc::CallbackServerContext* context) override;

  bool Send(const std::string& worker, const v1::CoordinatorMessage& message) override;

  // Called by streams.
  void Attach(const std::string& worker, std::shared_ptr<WorkerStream> stream);
  void Detach(const std::string& worker, const WorkerStream* stream);
  RunManager* manager() const { return manager_; }
  const Clock* clock() const { return clock_; }
  size_t connected() const;
  size_t max_queued() const { return max_queued_; }
  // Streams ended because their send queue overflowed.
  int64_t send_queue_overflows() const;
  // A stream from `source` that has not registered yet: false when the
  // source is at its cap (the stream is then refused). Each admitted one is
  // released once, when it registers or ends.
  bool AdmitUnregistered(const std::string& source);
  void ReleaseUnregistered(const std::string& source);

 private:
  const Clock* const clock_;
  const size_t max_queued_;
  RunManager* manager_ = nullptr;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<WorkerStream>> streams_ ABSL_GUARDED_BY(mu_);
  int64_t send_queue_overflows_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int> unregistered_ ABSL_GUARDED_BY(mu_);  // by source
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_API_GATEWAY_SERVICE_H_
