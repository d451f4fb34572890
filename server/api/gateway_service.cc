// SPDX-License-Identifier: Apache-2.0
#include "server/api/gateway_service.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "api/status_mapping.h"
#include "common/host_port.h"
#include "common/log.h"

namespace collbench {

namespace {

class ConnectReactor final
    : public grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage> {
 public:
  ConnectReactor(Fleet* fleet, WorkerStreams* streams, const Clock* clock, std::string peer)
      : fleet_(fleet),
        streams_(streams),
        clock_(clock),
        peer_(std::move(peer)),
        source_(PeerAddress(peer_)),
        stream_(std::make_shared<WorkerStream>(this, streams->max_queued())) {
    if (!streams_->AdmitUnregistered(source_)) {
      fleet_->CountRegistration("refused_concurrent");
      End(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                       absl::StrCat("too many unregistered worker streams from ", source_)));
      return;
    }
    unregistered_ = true;
    StartRead(&incoming_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      End(grpc::Status::OK);
      return;
    }
    if (stream_->overflowed()) {
      EndOverflowed();
      return;
    }
    if (worker_.empty()) {
      BeginRegister();
      return;
    }
    const absl::Status status = Handle(incoming_);
    if (!status.ok()) {
      End(ToGrpcStatus(status));
      return;
    }
    StartRead(&incoming_);
  }

  void OnWriteDone(bool ok) override {
    stream_->WriteDone(ok);
    if (stream_->overflowed()) EndOverflowed();
  }

  void OnCancel() override { End(grpc::Status::CANCELLED); }

  void OnDone() override { delete this; }

 private:
  // The first message. A new name's registration finishes once its
  // credential is durable, on the journal thread (no gRPC thread waits for
  // the disk); a known name's at once, on this one. Nothing more is read
  // from this stream until it is done, so the worker's next messages stay
  // in order behind it.
  void BeginRegister() {
    if (!incoming_.has_register_()) {
      End(ToGrpcStatus(
          absl::FailedPreconditionError("the first message on a stream must be register")));
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      registering_ = true;
    }
    fleet_->OnRegisterAsync(
        incoming_.register_(), clock_->Now(), peer_,
        [this](absl::StatusOr<WorkerDirectory::Registration> registration) {
          if (registration.ok()) Registered(*registration);
          std::optional<grpc::Status> deferred;
          {
            absl::MutexLock lock(&mu_);
            registering_ = false;
            deferred = std::move(deferred_end_);
          }
          if (!registration.ok()) {
            End(ToGrpcStatus(registration.status()));
          } else if (deferred.has_value()) {
            End(*deferred);
          } else {
            StartRead(&incoming_);
          }
        });
  }

  void Registered(const WorkerDirectory::Registration& registration) {
    ReleaseUnregistered();
    worker_ = registration.reply.name();
    session_ = registration.session;
    streams_->Attach(worker_, stream_);
    v1::CoordinatorMessage reply;
    *reply.mutable_registered() = registration.reply;
    // Registered must come first on the wire; anything the core queued
    // during OnRegister (acks, cancels) was dropped, so the worker re-sends.
    bool overflowed = false;
    stream_->Send(reply, &overflowed);
  }

  absl::Status Handle(v1::WorkerMessage& message) {
    Fleet* const fleet = fleet_;
    const absl::Time now = clock_->Now();
    switch (message.message_case()) {
      case v1::WorkerMessage::kHeartbeat:
        fleet->OnHeartbeat(worker_, session_, now);
        break;
      case v1::WorkerMessage::kRunStatus:
        fleet->OnHeartbeat(worker_, session_, now);
        fleet->OnRunStatus(worker_, message.run_status(), now);
        break;
      case v1::WorkerMessage::kResult:
        fleet->OnHeartbeat(worker_, session_, now);
        fleet->OnResult(worker_, std::move(*message.mutable_result()), now);
        break;
      case v1::WorkerMessage::kLog:
        fleet->OnLog(worker_, message.log(), now);
        break;
      case v1::WorkerMessage::kRankProgress:
        fleet->OnRankProgress(worker_, message.rank_progress(), now);
        break;
      default:
        return absl::InvalidArgumentError("unexpected message on a registered stream");
    }
    return absl::OkStatus();
  }

  void EndOverflowed() {
    End(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                     "the coordinator's send queue to this worker overflowed (the worker does not "
                     "read fast enough); reconnect"));
  }

  void ReleaseUnregistered() {
    if (unregistered_.exchange(false)) streams_->ReleaseUnregistered(source_);
  }

  // Ends the stream once. While a registration's task runs, an end from
  // another callback (a cancel, an overflowed write) is left to the task:
  // Finish would let gRPC delete the reactor under it.
  void End(const grpc::Status& status) {
    {
      absl::MutexLock lock(&mu_);
      if (ended_) return;
      if (registering_) {
        if (!deferred_end_.has_value()) deferred_end_ = status;
        return;
      }
      ended_ = true;
    }
    ReleaseUnregistered();
    stream_->Close();
    if (!worker_.empty()) {
      streams_->Detach(worker_, stream_.get());
      fleet_->OnDisconnect(worker_, session_, clock_->Now());
    }
    Finish(status);
  }

  Fleet* const fleet_;
  WorkerStreams* const streams_;
  const Clock* const clock_;
  const std::string peer_;
  const std::string source_;  // PeerAddress(peer_)
  const std::shared_ptr<WorkerStream> stream_;
  // Holds one of the source's unregistered-stream slots until it registers
  // or ends (the read path and a cancel may race: released once).
  std::atomic<bool> unregistered_{false};
  v1::WorkerMessage incoming_;
  std::string worker_;
  uint64_t session_ = 0;
  absl::Mutex mu_;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  // A registration's task is queued or running; an end asked for meanwhile
  // waits in deferred_end_ for the task to carry it out.
  bool registering_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> deferred_end_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>* GatewayService::Connect(
    grpc::CallbackServerContext* context) {
  return new ConnectReactor(fleet_, streams_, clock_, context->peer());
}

}  // namespace collbench
