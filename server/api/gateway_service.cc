// SPDX-License-Identifier: Apache-2.0
#include "server/api/gateway_service.h"

#include <atomic>
#include <memory>
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
  absl::Status Handle(const v1::WorkerMessage& message) {
    Fleet* const fleet = fleet_;
    const absl::Time now = clock_->Now();
    if (worker_.empty()) {
      if (!message.has_register_()) {
        return absl::FailedPreconditionError("the first message on a stream must be register");
      }
      absl::StatusOr<WorkerDirectory::Registration> registration =
          fleet->OnRegister(message.register_(), now, peer_);
      if (!registration.ok()) return registration.status();
      ReleaseUnregistered();
      worker_ = registration->reply.name();
      session_ = registration->session;
      streams_->Attach(worker_, stream_);
      v1::CoordinatorMessage reply;
      *reply.mutable_registered() = registration->reply;
      // Registered must come first on the wire; anything the core queued
      // during OnRegister (acks, cancels) was dropped, so the worker re-sends.
      bool overflowed = false;
      stream_->Send(reply, &overflowed);
      return absl::OkStatus();
    }
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
        fleet->OnResult(worker_, message.result(), now);
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

  void End(const grpc::Status& status) {
    {
      absl::MutexLock lock(&mu_);
      if (ended_) return;
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
};

}  // namespace

grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>* GatewayService::Connect(
    grpc::CallbackServerContext* context) {
  return new ConnectReactor(fleet_, streams_, clock_, context->peer());
}

}  // namespace collbench
