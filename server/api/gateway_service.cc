// SPDX-License-Identifier: Apache-2.0
#include "server/api/gateway_service.h"

#include <atomic>
#include <deque>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/status_mapping.h"
#include "common/host_port.h"
#include "common/log.h"

namespace collbench {

// The part of a stream that outlives the reactor's callbacks: the outgoing
// queue. The gateway holds it by worker name; the reactor owns the call.
// The queue holds at most `max_queued` messages: a worker that does not
// read (or cannot keep up) overflows it, the queue is dropped and the
// stream marked to end (the reactor ends it on its next callback, outside
// the caller's locks); the worker reconnects and re-syncs.
class WorkerStream {
 public:
  WorkerStream(grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>* r,
               size_t max_queued)
      : reactor_(r), max_queued_(max_queued) {}

  // False when the stream is closed or overflowed (the message is dropped).
  // Returns true the first time it overflows in `*overflowed_now`.
  bool Send(const v1::CoordinatorMessage& message, bool* overflowed_now) {
    absl::MutexLock lock(&mu_);
    if (reactor_ == nullptr || overflowed_) return false;
    if (max_queued_ > 0 && queue_.size() >= max_queued_) {
      overflowed_ = true;
      *overflowed_now = true;
      // The message being written (front) stays until its write completes.
      if (writing_) {
        queue_.erase(queue_.begin() + 1, queue_.end());
      } else {
        queue_.clear();
      }
      return false;
    }
    queue_.push_back(message);
    if (!writing_) WriteNextLocked();
    return true;
  }

  bool overflowed() {
    absl::MutexLock lock(&mu_);
    return overflowed_;
  }

  // The previous write finished; start the next. False if the stream broke.
  void WriteDone(bool ok) {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!queue_.empty()) queue_.pop_front();
    if (ok && reactor_ != nullptr && !overflowed_ && !queue_.empty()) WriteNextLocked();
  }

  bool Idle() {
    absl::MutexLock lock(&mu_);
    return !writing_;
  }

  void Close() {
    absl::MutexLock lock(&mu_);
    reactor_ = nullptr;
  }

 private:
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    writing_ = true;
    reactor_->StartWrite(&queue_.front());
  }

  absl::Mutex mu_;
  grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage>* reactor_ ABSL_GUARDED_BY(mu_);
  const size_t max_queued_;
  std::deque<v1::CoordinatorMessage> queue_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool overflowed_ ABSL_GUARDED_BY(mu_) = false;
};

namespace {

class ConnectReactor final
    : public grpc::ServerBidiReactor<v1::WorkerMessage, v1::CoordinatorMessage> {
 public:
  ConnectReactor(GatewayService* gateway, std::string peer)
      : gateway_(gateway),
        peer_(std::move(peer)),
        source_(PeerAddress(peer_)),
        stream_(std::make_shared<WorkerStream>(this, gateway->max_queued())) {
    if (!gateway_->AdmitUnregistered(source_)) {
      gateway_->manager()->CountRegistration("refused_concurrent");
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
    RunManager* manager = gateway_->manager();
    const absl::Time now = gateway_->clock()->Now();
    if (worker_.empty()) {
      if (!message.has_register_()) {
        return absl::FailedPreconditionError("the first message on a stream must be register");
      }
      absl::StatusOr<RunManager::Registration> registration =
          manager->OnRegister(message.register_(), now, peer_);
      if (!registration.ok()) return registration.status();
      ReleaseUnregistered();
      worker_ = registration->reply.name();
      session_ = registration->session;
      gateway_->Attach(worker_, stream_);
      v1::CoordinatorMessage reply;
      *reply.mutable_registered() = registration->reply;
      // Registered must come first on the wire; anything the manager queued
      // during OnRegister (acks, cancels) was dropped, so the worker re-sends.
      bool overflowed = false;
      stream_->Send(reply, &overflowed);
      return absl::OkStatus();
    }
    switch (message.message_case()) {
      case v1::WorkerMessage::kHeartbeat:
        manager->OnHeartbeat(worker_, session_, now);
        break;
      case v1::WorkerMessage::kRunStatus:
        manager->OnHeartbeat(worker_, session_, now);
        manager->OnRunStatus(worker_, message.run_status(), now);
        break;
      case v1::WorkerMessage::kResult:
        manager->OnHeartbeat(worker_, session_, now);
        manager->OnResult(worker_, message.result(), now);
        break;
      case v1::WorkerMessage::kLog:
        manager->OnLog(worker_, message.log(), now);
        break;
      case v1::WorkerMessage::kRankProgress:
        manager->OnRankProgress(worker_, message.rank_progress(), now);
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
    if (unregistered_.exchange(false)) gateway_->ReleaseUnregistered(source_);
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
      gateway_->Detach(worker_, stream_.get());
      gateway_->manager()->OnDisconnect(worker_, session_, gateway_->clock()->Now());
    }
    Finish(status);
  }

  GatewayService* const gateway_;
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
  return new ConnectReactor(this, context->peer());
}

bool GatewayService::Send(const std::string& worker, const v1::CoordinatorMessage& message) {
  std::shared_ptr<WorkerStream> stream;
  {
    absl::MutexLock lock(&mu_);
    auto it = streams_.find(worker);
    if (it == streams_.end()) return false;
    stream = it->second;
  }
  bool overflowed = false;
  const bool sent = stream->Send(message, &overflowed);
  if (overflowed) {
    absl::MutexLock lock(&mu_);
    ++send_queue_overflows_;
    LogWarn("worker.send_queue_overflow",
            absl::StrFormat("send queue to %s overflowed (%d messages); ending its stream", worker,
                            max_queued_))
        .Str("worker", worker)
        .Int("queued", static_cast<int64_t>(max_queued_));
  }
  return sent;
}

bool GatewayService::AdmitUnregistered(const std::string& source) {
  const int limit = manager_->options().max_unregistered_streams_per_source;
  absl::MutexLock lock(&mu_);
  int& open = unregistered_[source];
  if (limit > 0 && open >= limit) {
    if (open == 0) unregistered_.erase(source);
    return false;
  }
  ++open;
  return true;
}

void GatewayService::ReleaseUnregistered(const std::string& source) {
  absl::MutexLock lock(&mu_);
  auto it = unregistered_.find(source);
  if (it != unregistered_.end() && --it->second <= 0) unregistered_.erase(it);
}

int64_t GatewayService::send_queue_overflows() const {
  absl::MutexLock lock(&mu_);
  return send_queue_overflows_;
}

void GatewayService::Attach(const std::string& worker, std::shared_ptr<WorkerStream> stream) {
  absl::MutexLock lock(&mu_);
  streams_[worker] = std::move(stream);
}

void GatewayService::Detach(const std::string& worker, const WorkerStream* stream) {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(worker);
  if (it != streams_.end() && it->second.get() == stream) streams_.erase(it);
}

size_t GatewayService::connected() const {
  absl::MutexLock lock(&mu_);
  return streams_.size();
}

}  // namespace collbench
