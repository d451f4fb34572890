// SPDX-License-Identifier: Apache-2.0
// A whole coordinator in one object, and the one place that wires the
// parts together (docs/design/layout.md): store, worker registry, run
// manager, workflows and schedules, the API (server/api: its handlers
// served by the Coordinator gRPC service and the REST router), the
// WorkerGateway gRPC service (with health checking and reflection), the
// HTTP listener (REST, /ui/, /metrics, /healthz, /readyz), the metrics, and
// the ticker. collbench-coordinator's main runs one; `collbench local`
// embeds one.
#ifndef COLLBENCH_SERVER_APP_COORDINATOR_H_
#define COLLBENCH_SERVER_APP_COORDINATOR_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "common/clock.h"
#include "grpcpp/security/server_credentials.h"
#include "server/api/worker_streams.h"
#include "server/core/core.h"
#include "server/core/request_bounds.h"
#include "server/core/run_manager.h"
#include "server/core/watcher_limits.h"
#include "server/http/http_server.h"
#include "server/metrics/collective_labels.h"
#include "server/workflows/schedule_manager.h"
#include "server/workflows/workflow_manager.h"

namespace collbench {

struct CoordinatorOptions {
  std::string grpc_listen = "127.0.0.1:50051";  // HOST:PORT; port 0 picks one
  std::string store = "collbench.db";           // SQLite file, or ":memory:"
  std::string http_listen;                      // HOST:PORT for REST and /metrics; empty: none
  std::string tls_cert;  // PEM files; both or neither; used by both listeners
  std::string tls_key;
  // PEM CA certificate(s), only with tls_cert: both listeners then require a
  // client certificate that chains to it (mutual TLS), in addition to the
  // bearer tokens, which are still checked.
  std::string tls_client_ca;
  std::string tokens_file;  // bearer tokens (server/auth/authorizer.h); empty: none
  std::string join_token;   // one more worker token (--join-token-file's); empty: none
  std::string launcher_token;  // one more launcher token (--launcher-token-file's); empty: none
  // Serve beyond loopback without API tokens (server/auth/listen_policy.h);
  // logged at start and exported as collbench_insecure_no_auth 1.
  bool insecure_no_auth = false;
  HttpLimits http_limits;  // REST and /metrics connections and requests
  // The core (server/core/core.h): the workers' identity, runs, admission,
  // retention. Its worker tokens are the coordinator's (tokens_file and
  // join_token).
  CoreOptions core;
  // The worker streams' bounds (server/api/worker_streams.h).
  WorkerStreamsOptions worker_streams;
  WorkflowManagerOptions workflows;
  // What one request may ask: a workflow's cells, the runs it names, a
  // report's page (server/core/request_bounds.h).
  RequestBoundOptions bounds;
  ScheduleManagerOptions schedules;
  // Worker names forgotten (row and secret) before serving, so that a worker
  // that lost its secret can join anew (--forget-worker).
  std::vector<std::string> forget_workers;
  WatcherLimitOptions watchers;  // WatchRun and REST event streams
  // The collective series' pool and run-label dimensions and their cap
  // (--metric-pool-label, --metric-run-labels, --max-metric-series).
  CollectiveLabelOptions metric_labels;
  absl::Duration tick_interval = absl::Milliseconds(250);
  // How often core.retention is applied (also once at start, after
  // recovery), when it is active.
  absl::Duration retention_interval = absl::Minutes(1);
  // Where every part reads the time (not owned; outlives the coordinator).
  const Clock* clock = RealClock();
};

class Coordinator {
 public:
  // Opens the store, recovers unfinished runs and starts serving.
  // FailedPrecondition, before anything is opened, when the listeners and
  // tokens break the fail-closed policy (server/auth/listen_policy.h);
  // InvalidArgument naming the flag, before anything is opened, when a TLS
  // file cannot be read, tls_client_ca comes without tls_cert/tls_key, or
  // metric_labels is invalid. The collective metrics are rebuilt from the
  // store before serving.
  static absl::StatusOr<std::unique_ptr<Coordinator>> Start(const CoordinatorOptions& options);
  ~Coordinator();  // Shutdown()

  // The port the gRPC server listens on (useful with port 0).
  int grpc_port() const { return grpc_port_; }
  // The HTTP port, 0 when there is no HTTP listener.
  int http_port() const;
  // Whether it serves without API tokens on purpose (--insecure-no-auth).
  bool insecure_no_auth() const;
  RunManager* manager();
  Fleet* fleet();
  WorkflowManager* workflows();
  ScheduleManager* schedules();
  // Blocks until Shutdown() is called from another thread.
  void Wait();
  void Shutdown();

 private:
  Coordinator() = default;
  absl::Status StartGrpc(const CoordinatorOptions& options,
                         std::shared_ptr<grpc::ServerCredentials> credentials);
  absl::Status StartHttp(const CoordinatorOptions& options);
  struct Parts;
  std::unique_ptr<Parts> parts_;
  int grpc_port_ = 0;
  absl::Notification stop_;
  std::thread ticker_;
  bool shut_down_ = false;
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_APP_COORDINATOR_H_
