// SPDX-License-Identifier: Apache-2.0
#include "worker/agent/worker_agent.h"

#include <algorithm>
#include <map>
#include <set>
#include <random>
#include <thread>

#include <grpcpp/health_check_service_interface.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/progress_slot.h"
#include "worker/agent/worker_state.h"

namespace collbench {

WorkerAgent::WorkerAgent(WorkerAgentOptions options, ExecManager* exec, ResultSpool* spool)
    : options_(std::move(options)), exec_(exec), spool_(spool) {}

std::function<void(bool registered)> ReportRegistrationAsHealth(grpc::Server* server) {
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  health->SetServingStatus("", false);
  return [health](bool registered) { health->SetServingStatus("", registered); };
}

bool WorkerAgent::connected() const {
  absl::MutexLock lock(&mu_);
  return stream_ != nullptr;
}

void WorkerAgent::Run() {
  auto channel = grpc::CreateCustomChannel(
      options_.coordinator,
      options_.credentials ? options_.credentials : grpc::InsecureChannelCredentials(),
      options_.channel_arguments);
  auto stub = v1::WorkerGateway::NewStub(channel);
  std::mt19937 random(std::random_device{}());
  absl::Duration backoff = options_.min_backoff;
  while (!stop_.HasBeenNotified()) {
    if (Session(*stub)) backoff = options_.min_backoff;
    // Full jitter keeps a fleet of workers from reconnecting in lockstep.
    const double fraction = std::uniform_real_distribution<double>(0.5, 1.0)(random);
    if (stop_.WaitForNotificationWithTimeout(backoff * fraction)) break;
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

void WorkerAgent::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  absl::MutexLock lock(&mu_);
  if (context_ != nullptr) context_->TryCancel();
}

bool WorkerAgent::Write(const v1::WorkerMessage& message) {
  absl::MutexLock write_lock(&write_mu_);
  Stream* stream;
  {
    absl::MutexLock lock(&mu_);
    stream = stream_;
  }
  return stream != nullptr && stream->Write(message);
}

void WorkerAgent::Send(const v1::WorkerMessage& message) { Write(message); }

bool WorkerAgent::Session(v1::WorkerGateway::Stub& stub) {
  grpc::ClientContext context;
  {
    absl::MutexLock lock(&mu_);
    if (stop_.HasBeenNotified()) return false;
    context_ = &context;
  }
  std::unique_ptr<Stream> stream = stub.Connect(&context);
  v1::WorkerMessage hello;
  v1::Register* reg = hello.mutable_register_();
  reg->set_worker_id(options_.worker_id);
  reg->set_display_name(options_.display_name);
  *reg->mutable_inventory() = options_.inventory;
  reg->set_agent_address(options_.agent_address);
  reg->set_slots(options_.slots);
  reg->set_join_token(options_.join_token);
  reg->set_launcher(options_.launcher);
  reg->set_worker_secret(Secret());
  for (const std::string& run : spool_->ActiveRuns()) reg->add_active_runs(run);
  v1::CoordinatorMessage reply;
  // Once a Read fails the coordinator has ended the call, and Finish()
  // returns its status (e.g. a refused join token); cancelling first would
  // replace that with CANCELLED.
  bool server_done = false;
  bool registered = false;
  if (stream->Write(hello)) {
    server_done = !stream->Read(&reply);
    registered = !server_done && reply.has_registered();
  }
  if (registered) {
    LogInfo("worker.registered", absl::StrCat("registered with ", options_.coordinator, " as ",
                                              reply.registered().name()))
        .Str("worker", reply.registered().name())
        .Str("coordinator", options_.coordinator)
        .Int("active_runs", reg->active_runs_size());
    if (!reply.registered().worker_secret().empty()) KeepSecret(reply.registered().worker_secret());
    {
      absl::MutexLock lock(&mu_);
      stream_ = stream.get();
    }
    if (options_.on_registration) options_.on_registration(true);
    // Everything not yet acknowledged goes again; duplicates are ignored.
    for (const v1::WorkerMessage& pending : spool_->Pending()) Write(pending);
    absl::Notification heartbeat_done;
    const absl::Duration interval =
        absl::Milliseconds(std::max(100, reply.registered().heartbeat_interval_ms()));
    std::thread heartbeat([this, interval, &heartbeat_done] {
      HeartbeatLoop(interval, &heartbeat_done);
    });
    std::thread progress([this, &heartbeat_done] { ProgressLoop(&heartbeat_done); });
    v1::CoordinatorMessage message;
    while (stream->Read(&message)) Handle(message);
    server_done = true;
    heartbeat_done.Notify();
    heartbeat.join();
    progress.join();
  }
  {
    absl::MutexLock write_lock(&write_mu_);
    absl::MutexLock lock(&mu_);
    stream_ = nullptr;
    context_ = nullptr;
  }
  if (registered && options_.on_registration) options_.on_registration(false);
  if (!server_done) context.TryCancel();
  const grpc::Status status = stream->Finish();
  if (!stop_.HasBeenNotified() && !status.ok()) {
    LogWarn("worker.disconnected", absl::StrCat("coordinator ", options_.coordinator, ": ",
                                                status.error_message(), "; reconnecting"))
        .Str("coordinator", options_.coordinator)
        .Str("error", status.error_message())
        .Str("code", absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())));
  }
  return registered;
}

std::string WorkerAgent::Secret() {
  if (!secret_.empty() || options_.secret_file.empty()) return secret_;
  absl::StatusOr<std::string> stored = ReadWorkerSecret(options_.secret_file);
  if (!stored.ok()) {
    LogError("worker.secret", std::string(stored.status().message())).Error(stored.status());
    return "";
  }
  secret_ = *stored;
  return secret_;
}

void WorkerAgent::KeepSecret(const std::string& secret) {
  secret_ = secret;
  if (options_.secret_file.empty()) return;
  if (absl::Status written = WriteWorkerSecret(options_.secret_file, secret); !written.ok()) {
    LogError("worker.secret",
             absl::StrCat("cannot keep the secret the coordinator issued (", written.message(),
                          "); this process remembers it, but after a restart the worker's name "
                          "must be forgotten on the coordinator before it can join again"))
        .Error(written);
  }
}

void WorkerAgent::HeartbeatLoop(absl::Duration interval, absl::Notification* done) {
  int64_t sequence = 0;
  while (!done->WaitForNotificationWithTimeout(interval)) {
    v1::WorkerMessage beat;
    beat.mutable_heartbeat()->set_sequence(++sequence);
    Write(beat);
  }
}

bool WorkerAgent::ReadProgress(const std::string& run, v1::RankProgressReport* report) {
  const std::string dir = ProgressDirOf(options_.progress_root, run);
  if (dir.empty()) return false;
  const std::vector<RankSlot> slots = ReadProgressSlots(dir);
  if (slots.empty()) return false;
  report->set_run(run);
  for (const RankSlot& slot : slots) {
    v1::RankProgress* rank = report->add_ranks();
    rank->set_rank(slot.rank);
    rank->set_host(slot.host);
    rank->set_operation(slot.operation);
    rank->set_size_index(slot.size_index);
    rank->set_bytes(slot.bytes);
    rank->set_iteration(slot.iteration);
    rank->set_iterations(slot.iterations);
    rank->set_phase(slot.phase);
    const ProcessFacts process = ProcessFactsOf(slot.pid);
    rank->set_process(process.state);
    rank->set_cpu_seconds(process.cpu_seconds);
  }
  return true;
}

void WorkerAgent::ProgressLoop(absl::Notification* done) {
  if (options_.progress_root.empty()) return;
  constexpr absl::Duration kAtLeastEvery = absl::Seconds(10);
  struct Sent {
    std::string positions;  // what the last report said, CPU time left out
    absl::Time time;
  };
  std::map<std::string, Sent> sent;
  while (!done->WaitForNotificationWithTimeout(options_.progress_interval)) {
    std::set<std::string> runs;
    {
      absl::MutexLock lock(&runs_mu_);
      runs = runs_;
    }
    const absl::Time now = absl::Now();
    for (const std::string& run : runs) {
      v1::WorkerMessage message;
      if (!ReadProgress(run, message.mutable_rank_progress())) continue;
      v1::RankProgressReport positions = message.rank_progress();
      for (v1::RankProgress& rank : *positions.mutable_ranks()) rank.clear_cpu_seconds();
      std::string key;
      positions.SerializeToString(&key);
      Sent& last = sent[run];
      if (key == last.positions && now - last.time < kAtLeastEvery) continue;
      if (Write(message)) last = {std::move(key), now};
    }
    for (auto it = sent.begin(); it != sent.end();) {  // forget runs that ended
      it = runs.count(it->first) ? std::next(it) : sent.erase(it);
    }
  }
}

void WorkerAgent::Handle(const v1::CoordinatorMessage& message) {
  switch (message.message_case()) {
    case v1::CoordinatorMessage::kAssignment: {
      const absl::Status started =
          launcher_ ? launcher_->Start(message.assignment())
                    : absl::FailedPreconditionError("this worker has no launcher");
      LogEvent(started.ok() ? LogLevel::kInfo : LogLevel::kWarn, "worker.run_started",
               absl::StrCat(message.assignment().run(), started.ok() ? " launched" : " not launched: ",
                            started.message()))
          .Str("run", message.assignment().run())
          .Int("peers", message.assignment().peers_size())
          .Error(started);
      if (started.ok() || absl::IsAlreadyExists(started)) {
        absl::MutexLock lock(&runs_mu_);
        runs_.insert(message.assignment().run());
      }
      if (!started.ok() && !absl::IsAlreadyExists(started)) {
        v1::RunStatus status;
        status.set_state(v1::FAILED);
        status.set_error(std::string(started.message()));
        v1::WorkerMessage report;
        *report.mutable_run_status() = spool_->SetStatus(message.assignment().run(), status);
        Write(report);
      }
      break;
    }
    case v1::CoordinatorMessage::kRunToken: {
      exec_->Allow(message.run_token().run(), message.run_token().token_sha256(),
                   message.run_token().mpi());
      absl::MutexLock lock(&runs_mu_);
      runs_.insert(message.run_token().run());
      break;
    }
    case v1::CoordinatorMessage::kCancel:
      LogInfo("worker.run_cancelled",
              absl::StrCat(message.cancel().run(), " cancelled: ", message.cancel().reason()))
          .Str("run", message.cancel().run())
          .Str("reason", message.cancel().reason());
      if (launcher_) launcher_->Cancel(message.cancel().run(), message.cancel().reason());
      exec_->Revoke(message.cancel().run());
      break;
    case v1::CoordinatorMessage::kRelease: {
      exec_->Revoke(message.release().run());
      spool_->Release(message.release().run());
      absl::MutexLock lock(&runs_mu_);
      runs_.erase(message.release().run());
      RemoveProgressDir(ProgressDirOf(options_.progress_root, message.release().run()));
      break;
    }
    case v1::CoordinatorMessage::kAck:
      spool_->Ack(message.ack().run(), message.ack().sequence());
      break;
    default:
      break;
  }
}

}  // namespace collbench
