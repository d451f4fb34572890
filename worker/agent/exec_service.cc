// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/exec_service.h"

#include <algorithm>
#include <deque>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/host_port.h"
#include "common/secrets.h"

namespace collbench {
namespace {

// absl and gRPC share the canonical status codes.
grpc::Status ToGrpcStatus(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace

ExecHandle::~ExecHandle() {
  // Out of Revoke()'s reach first (it must not touch a process being
  // destroyed), then kill and reap (Process' destructor), and only then stop
  // counting as running.
  manager_->Unregister(this);
  process_->Kill(manager_->options_.kill_grace);
  process_.reset();
  manager_->Release(run_);
}

void ExecHandle::Kill() { process_->Kill(manager_->options_.kill_grace); }

// Revoked runs remembered, so their late Exec calls are refused as ended.
constexpr size_t kRevokedKept = 1024;

ExecManager::ExecManager(ProcessRunner* runner, ExecManagerOptions options)
    : runner_(runner), options_(options), exec_limiter_(options_.exec_rate) {}

ExecManager::~ExecManager() { KillAll(absl::InfiniteDuration()); }

void ExecManager::Allow(std::string run, std::string token_digest, v1::MpiImplementation mpi) {
  absl::MutexLock lock(&mu_);
  revoked_.erase(std::remove(revoked_.begin(), revoked_.end(), run), revoked_.end());
  tokens_[std::move(run)] = Allowed{std::move(token_digest), mpi};
}

void ExecManager::Revoke(absl::string_view run) {
  absl::MutexLock lock(&mu_);
  auto it = tokens_.find(run);
  if (it != tokens_.end()) tokens_.erase(it);
  if (std::find(revoked_.begin(), revoked_.end(), run) == revoked_.end()) {
    revoked_.emplace_back(run);
    if (revoked_.size() > kRevokedKept) revoked_.pop_front();
  }
  for (ExecHandle* handle : handles_) {
    if (handle->run() == run) handle->Kill();
  }
}

bool ExecManager::KillAll(absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  shutting_down_ = true;
  for (ExecHandle* handle : handles_) handle->Kill();
  auto none_left = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return live_.empty(); };
  return mu_.AwaitWithTimeout(absl::Condition(&none_left), wait);
}

absl::StatusOr<std::unique_ptr<ExecHandle>> ExecManager::Start(absl::string_view run,
                                                               absl::string_view token,
                                                               std::vector<std::string> argv) {
  absl::MutexLock lock(&mu_);
  if (shutting_down_) return absl::UnavailableError("the worker is shutting down");
  auto it = tokens_.find(run);
  const bool revoked = std::find(revoked_.begin(), revoked_.end(), run) != revoked_.end();
  if (it == tokens_.end() && !revoked) {
    // The coordinator sends a run's token to its peers just before the
    // launcher starts, on another stream: a launcher's Exec can come
    // first. Refused at once, never waited for; the shim retries.
    return absl::UnavailableError(
        absl::StrCat("Exec for run \"", run,
                     "\": this worker holds no token for it yet; retry shortly"));
  }
  if (it == tokens_.end() || !TokenMatchesDigest(token, it->second.token_digest)) {
    return absl::PermissionDeniedError(
        absl::StrCat("Exec refused for run \"", run,
                     "\": this worker holds no matching token for it (not assigned, finished, or "
                     "a wrong token)"));
  }
  absl::StatusOr<std::vector<std::string>> daemon =
      CheckDaemonArgv(argv, options_.daemons, it->second.mpi, options_.tuning_dir);
  if (!daemon.ok()) return daemon.status();
  ProcessOptions process_options;
  process_options.argv = *std::move(daemon);
  process_options.env = options_.base_env;
  for (const auto& [key, value] : options_.default_env) process_options.env[key] = value;
  absl::StatusOr<std::unique_ptr<Process>> process = runner_->Start(process_options);
  if (!process.ok()) return process.status();
  std::unique_ptr<ExecHandle> handle(new ExecHandle(this, std::string(run), *std::move(process)));
  handles_.insert(handle.get());
  ++live_[handle->run()];
  return handle;
}

absl::Status ExecManager::AdmitCaller(absl::string_view caller, absl::Time now) {
  absl::MutexLock lock(&mu_);
  const absl::Duration wait = exec_limiter_.Acquire(caller, now);
  if (wait <= absl::ZeroDuration()) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "too many Exec calls from ", caller, "; retry in ", absl::FormatDuration(wait)));
}

int ExecManager::running() const {
  absl::MutexLock lock(&mu_);
  int count = 0;
  for (const auto& [run, live] : live_) count += live;
  return count;
}

int ExecManager::running(absl::string_view run) const {
  absl::MutexLock lock(&mu_);
  auto it = live_.find(run);
  return it == live_.end() ? 0 : it->second;
}

void ExecManager::Unregister(ExecHandle* handle) {
  absl::MutexLock lock(&mu_);
  handles_.erase(handle);
}

void ExecManager::Release(const std::string& run) {
  absl::MutexLock lock(&mu_);
  auto it = live_.find(run);
  if (it != live_.end() && --it->second == 0) live_.erase(it);
}

namespace {

// One Exec call. Owned jointly by gRPC (until OnDone) and the pump thread
// (until the command has been reaped); the last of the two deletes it.
class ExecReactor final : public grpc::ServerWriteReactor<v1::ExecOutput> {
 public:
  // Output messages queued before the pump waits for the writer.
  static constexpr size_t kMaxQueued = 64;

  // A call refused before anything ran. Finished here, once: a cancel
  // (the client's deadline passing) that follows must not finish it again.
  explicit ExecReactor(const absl::Status& refused) : refs_(1) {
    {
      absl::MutexLock lock(&mu_);
      finish_called_ = true;
    }
    Finish(ToGrpcStatus(refused));
  }

  explicit ExecReactor(std::unique_ptr<ExecHandle> handle)
      : process_(handle->process()), handle_(std::move(handle)), refs_(2) {
    std::thread([this] { Pump(); }).detach();
  }

  void OnWriteDone(bool ok) override {
    {
      absl::MutexLock lock(&mu_);
      write_in_flight_ = false;
      if (!ok) CancelLocked();  // the stream broke under us
    }
    Kick();
  }

  void OnCancel() override {
    {
      absl::MutexLock lock(&mu_);
      CancelLocked();
    }
    Kick();
  }

  void OnDone() override { Unref(); }

 private:
  void CancelLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    cancelled_ = true;
    if (handle_ != nullptr) handle_->Kill();
  }

  void Pump();
  // Starts the next write, or finishes the call, when nothing is in flight.
  // Calls into gRPC without holding mu_ (reactions may run inline).
  void Kick();
  void Unref();

  Process* const process_ = nullptr;  // owned by handle_; used by Pump only

  absl::Mutex mu_;
  std::unique_ptr<ExecHandle> handle_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::ExecOutput> queue_ ABSL_GUARDED_BY(mu_);
  v1::ExecOutput current_ ABSL_GUARDED_BY(mu_);  // the message being written
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool pump_done_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
  int refs_ ABSL_GUARDED_BY(mu_);
};

void ExecReactor::Pump() {
  while (true) {
    absl::StatusOr<ProcessEvent> event = process_->Next(absl::InfiniteDuration());
    v1::ExecOutput output;
    bool last = false;
    if (!event.ok()) {
      absl::MutexLock lock(&mu_);
      final_status_ = ToGrpcStatus(event.status());
      break;  // the handle's destructor kills and reaps the command
    }
    switch (event->kind) {
      case ProcessEvent::Kind::kTimeout:
        continue;
      case ProcessEvent::Kind::kStdout:
        output.set_stdout(std::move(event->data));
        break;
      case ProcessEvent::Kind::kStderr:
        output.set_stderr(std::move(event->data));
        break;
      case ProcessEvent::Kind::kExit:
        output.set_exit_code(event->exit_code);
        last = true;
        break;
    }
    {
      absl::MutexLock lock(&mu_);
      auto writable = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return queue_.size() < kMaxQueued || finish_called_ || cancelled_;
      };
      mu_.Await(absl::Condition(&writable));
      // After a cancel the output has nowhere to go; keep pumping so the
      // command is seen to exit and is reaped.
      if (!finish_called_ && !cancelled_) queue_.push_back(std::move(output));
    }
    Kick();
    if (last) break;
  }
  std::unique_ptr<ExecHandle> handle;
  {
    absl::MutexLock lock(&mu_);
    handle = std::move(handle_);
  }
  handle.reset();  // reaped and unregistered before the call finishes
  {
    absl::MutexLock lock(&mu_);
    pump_done_ = true;
  }
  Kick();
  Unref();
}

void ExecReactor::Kick() {
  bool write = false;
  grpc::Status status;
  {
    absl::MutexLock lock(&mu_);
    if (finish_called_ || write_in_flight_) return;
    if (cancelled_) {
      finish_called_ = true;
      status = grpc::Status(grpc::StatusCode::CANCELLED, "Exec cancelled; command killed");
    } else if (!queue_.empty()) {
      current_ = std::move(queue_.front());
      queue_.pop_front();
      write_in_flight_ = true;
      write = true;
    } else if (pump_done_) {
      finish_called_ = true;
      status = final_status_;
    } else {
      return;
    }
  }
  if (write) {
    StartWrite(&current_);
  } else {
    Finish(status);
  }
}

void ExecReactor::Unref() {
  bool last;
  {
    absl::MutexLock lock(&mu_);
    last = --refs_ == 0;
  }
  if (last) delete this;
}

}  // namespace

grpc::ServerWriteReactor<v1::ExecOutput>* ExecService::Exec(grpc::CallbackServerContext* context,
                                                            const v1::ExecRequest* request) {
  if (absl::Status admitted = manager_->AdmitCaller(PeerAddress(context->peer()), absl::Now());
      !admitted.ok()) {
    return new ExecReactor(admitted);
  }
  absl::StatusOr<std::unique_ptr<ExecHandle>> handle = manager_->Start(
      request->run(), request->token(),
      std::vector<std::string>(request->argv().begin(), request->argv().end()));
  if (!handle.ok()) return new ExecReactor(handle.status());
  return new ExecReactor(*std::move(handle));
}

}  // namespace collbench
