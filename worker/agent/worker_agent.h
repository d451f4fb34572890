// SPDX-License-Identifier: Apache-2.0
// The worker's side of the WorkerGateway stream (docs/design/run-lifecycle.md#workers): registers
// with its inventory, heartbeats, relays the launcher's reports, and acts
// on what the coordinator sends (assignments, run tokens, cancels, result
// acks, releases). When the stream breaks it reconnects with exponential
// backoff and, once registered again, re-sends everything the result spool
// still holds, so no result is lost across a coordinator restart.
//
// Thread safety: Send() and Stop() may be called from any thread; Run()
// from one. `on_registration` is called on Run()'s thread.
#ifndef COLLBENCH_WORKER_AGENT_WORKER_AGENT_H_
#define COLLBENCH_WORKER_AGENT_WORKER_AGENT_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "collbench/v1/gateway.grpc.pb.h"
#include "worker/agent/exec_service.h"
#include "worker/agent/launcher.h"
#include "worker/agent/result_spool.h"

namespace collbench {

struct WorkerAgentOptions {
  std::string coordinator;  // HOST:PORT
  std::string worker_id;    // stable across restarts: the worker's name
  std::string display_name;
  std::string agent_address;  // where peers reach this worker's Agent service
  int slots = 1;
  std::string join_token;
  // Registers as a launcher (collbench-launcher: Register.launcher, a
  // launcher token in join_token, no slots): it starts the runs that span
  // workers and hosts no ranks.
  bool launcher = false;
  // Where the secret the coordinator issues is kept (0600); empty: in
  // memory only (tests), lost when the process ends.
  std::string secret_file;
  v1::Inventory inventory;
  std::shared_ptr<grpc::ChannelCredentials> credentials;  // insecure when null
  // With `credentials`: e.g. the TLS name expected of the coordinator.
  grpc::ChannelArguments channel_arguments;
  absl::Duration min_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(5);
  // The runs' progress folders (LaunchPaths::progress_root): every second
  // the agent reads the slots of each run it takes part in and relays them
  // (RankProgressReport). Empty: nothing is relayed.
  std::string progress_root;
  absl::Duration progress_interval = absl::Seconds(1);
  // Called with true when the coordinator accepts the registration and with
  // false when that stream ends; may be empty.
  std::function<void(bool registered)> on_registration;
};

// An `on_registration` that publishes registration as the overall ("")
// status of `server`'s default health service, which it sets to NOT_SERVING
// now: SERVING only while registered, so a gRPC health probe of the worker
// (a Kubernetes readiness probe) means "registered with the coordinator".
// REQUIRES: `server` was built with the default health check service
// enabled and outlives the agent.
std::function<void(bool registered)> ReportRegistrationAsHealth(grpc::Server* server);

class WorkerAgent final : public ReportSink {
 public:
  // `exec` and `spool` are not owned and outlive the agent; the launcher is
  // set before Run() (it needs the agent as its sink).
  WorkerAgent(WorkerAgentOptions options, ExecManager* exec, ResultSpool* spool);
  void SetLauncher(Launcher* launcher) { launcher_ = launcher; }

  // Connects, serves, reconnects, until Stop().
  void Run();
  void Stop();

  // ReportSink: writes to the stream when connected; dropped otherwise (the
  // spool keeps what matters).
  void Send(const v1::WorkerMessage& message) override;

  bool connected() const;

 private:
  using Stream = grpc::ClientReaderWriter<v1::WorkerMessage, v1::CoordinatorMessage>;
  // One connected stream, from register to break. Returns true if it got as
  // far as registered (the backoff then starts over).
  bool Session(v1::WorkerGateway::Stub& stub);
  void Handle(const v1::CoordinatorMessage& message);
  void HeartbeatLoop(absl::Duration interval, absl::Notification* done);
  // Every progress_interval: each run's slots, relayed when a rank moved or
  // its process changed, and at least every 10 s.
  void ProgressLoop(absl::Notification* done);
  // The report of `run`'s slots on this host; false when it has none.
  bool ReadProgress(const std::string& run, v1::RankProgressReport* report);
  bool Write(const v1::WorkerMessage& message);
  // The secret to present: the one in memory, else the stored one.
  std::string Secret();
  // Keeps a newly issued secret in memory and in secret_file.
  void KeepSecret(const std::string& secret);

  const WorkerAgentOptions options_;
  ExecManager* const exec_;
  ResultSpool* const spool_;
  Launcher* launcher_ = nullptr;
  absl::Notification stop_;

  mutable absl::Mutex mu_;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  Stream* stream_ ABSL_GUARDED_BY(mu_) = nullptr;  // non-null while registered
  absl::Mutex write_mu_;  // one Write at a time on the stream
  // Runs this worker takes part in (launched, or a peer with their token),
  // whose progress it relays.
  absl::Mutex runs_mu_;
  std::set<std::string> runs_ ABSL_GUARDED_BY(runs_mu_);
  std::string secret_;    // Run()'s thread only
};

}  // namespace collbench

#endif  // COLLBENCH_WORKER_AGENT_WORKER_AGENT_H_
