// SPDX-License-Identifier: Apache-2.0
#include "server/app/coordinator.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/tls_channel.h"
#include "server/api/api_interceptor.h"
#include "server/api/call_log.h"
#include "server/api/gateway_service.h"
#include "server/api/grpc_adapter.h"
#include "server/api/handlers.h"
#include "server/api/worker_streams.h"
#include "server/app/http_frontend.h"
#include "server/auth/authorizer.h"
#include "server/auth/listen_policy.h"
#include "server/core/watch_hub.h"
#include "server/metrics/coordinator_metrics.h"
#include "server/store/store.h"
#include "server/workflows/run_manager_runs.h"
#include "server/workflows/schedule_manager.h"
#include "server/workflows/workflow_manager.h"

namespace collbench {

struct Coordinator::Parts {
  explicit Parts(const Clock* clock) : clock(clock) {}
  const Clock* const clock;
  Authorizer authorizer;
  bool insecure_no_auth = false;                         // open on purpose: exported in /metrics
  std::atomic<HttpFrontend*> http_for_metrics{nullptr};  // set once `http` serves
  std::unique_ptr<WatcherLimits> watchers;  // outlives both listeners
  std::unique_ptr<RequestBounds> bounds;    // of the workflows and the API
  std::shared_ptr<CoordinatorMetrics> metrics;
  std::unique_ptr<Store> store;
  WatchHub hub;
  std::unique_ptr<WorkerStreams> streams;  // the core's link to the workers
  std::unique_ptr<Core> core;              // after what it uses; its journal stops first
  std::unique_ptr<GatewayService> gateway;
  // The runs as the workflows see them: the core and the hub.
  std::unique_ptr<RunManagerRuns> runs;
  // Stopped before the core goes (their threads call it).
  std::unique_ptr<WorkflowManager> workflows;
  std::unique_ptr<ScheduleManager> schedules;  // stopped before the workflows
  std::unique_ptr<CoordinatorApi> api;         // served by both listeners
  std::unique_ptr<grpc::Service> service;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<HttpFrontend> http;
};

namespace {

// How often an open coordinator (--insecure-no-auth) says so again.
constexpr absl::Duration kInsecureWarningInterval = absl::Minutes(10);
// The largest gRPC message the coordinator reads (gRPC's own default is
// 4 MiB): a worker's message carries one result or one log line, cut at
// 1 MiB by the worker; API requests are smaller still. Beyond it the call
// ends RESOURCE_EXHAUSTED before the message is parsed.
constexpr int kMaxGrpcReceiveBytes = 2 << 20;
// How long gRPC calls in flight may take to finish at shutdown.
constexpr absl::Duration kGrpcShutdownGrace = absl::Seconds(2);

absl::StatusOr<Authorizer> LoadTokens(const CoordinatorOptions& options) {
  Authorizer authorizer;
  if (!options.tokens_file.empty()) {
    ASSIGN_OR_RETURN(authorizer, Authorizer::FromFile(options.tokens_file));
  }
  if (!options.join_token.empty()) authorizer.Add(Role::kWorker, options.join_token);
  if (!options.launcher_token.empty()) authorizer.Add(Role::kLauncher, options.launcher_token);
  return authorizer;
}

// The fail-closed state and the HTTP listener's refusals, in Prometheus text
// after the metrics library's own families.
std::string SecurityMetrics(bool insecure_no_auth, const HttpFrontend* http) {
  std::string text = absl::StrCat(
      "# HELP collbench_insecure_no_auth 1 when the coordinator serves beyond loopback without "
      "API tokens (--insecure-no-auth)\n"
      "# TYPE collbench_insecure_no_auth gauge\n"
      "collbench_insecure_no_auth ",
      insecure_no_auth ? 1 : 0, "\n");
  if (http != nullptr) {
    absl::StrAppend(
        &text,
        "# HELP collbench_ui_login_refusals_total /ui/login attempts refused by the per-client "
        "throttle (HTTP 429)\n"
        "# TYPE collbench_ui_login_refusals_total counter\n"
        "collbench_ui_login_refusals_total ",
        http->login_refusals(), "\n",
        "# HELP collbench_http_request_refusals_total HTTP requests and connections refused "
        "by the transport, by reason (docs/reference/metrics.md)\n"
        "# TYPE collbench_http_request_refusals_total counter\n");
    const HttpRefusalCounts refused = http->refusals();
    const std::pair<const char*, int64_t> by_reason[] = {
        {"request_guard", refused.request_guard},
        {"too_large", refused.too_large},
        {"connections", refused.connections},
        {"unauthenticated_connections", refused.unauthenticated_connections},
        {"request_deadline", refused.request_deadline}};
    for (const auto& [reason, total] : by_reason) {
      absl::StrAppend(&text, "collbench_http_request_refusals_total{reason=\"", reason, "\"} ",
                      total, "\n");
    }
    absl::StrAppend(&text,
                    "# HELP collbench_http_connections_open HTTP connections open now "
                    "(--max-connections)\n"
                    "# TYPE collbench_http_connections_open gauge\n"
                    "collbench_http_connections_open ",
                    http->open_connections(), "\n");
  }
  return text;
}

std::shared_ptr<CoordinatorMetrics> NewMetrics(Store* store, Core* core,
                                               const WatcherLimits* watchers,
                                               const RequestBounds* bounds,
                                               const WorkerStreams* streams,
                                               const CollectiveLabelOptions& labels) {
  MetricsSources sources;
  sources.lookup_run = [store](const std::string& name) { return store->GetRun(name); };
  sources.workers = [core] { return core->fleet().ListWorkers(); };
  sources.queued_runs = [core] { return core->runs().queued_count(); };
  sources.admission_rejections = [core] { return core->runs().admission_rejections(); };
  sources.open_watchers = [watchers] { return watchers->open(); };
  sources.watcher_rejections = [watchers] { return watchers->rejections(); };
  sources.request_bound_rejections = [bounds] { return bounds->rejections(); };
  sources.worker_counts = [core] { return core->fleet().worker_counts(); };
  sources.send_queue_overflows = [streams] { return streams->send_queue_overflows(); };
  return std::make_shared<CoordinatorMetrics>(COLLBENCH_VERSION, std::move(sources), labels);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Start(const CoordinatorOptions& options) {
  std::unique_ptr<Coordinator> c(new Coordinator);
  c->parts_ = std::make_unique<Parts>(options.clock);
  Parts& p = *c->parts_;
  ASSIGN_OR_RETURN(p.authorizer, LoadTokens(options));
  // Both listeners' TLS files are read here, so that a bad one (or a client
  // CA without a certificate to serve) stops the start before the store.
  ASSIGN_OR_RETURN(
      std::shared_ptr<grpc::ServerCredentials> credentials,
      MakeServerCredentials({options.tls_cert, options.tls_key, options.tls_client_ca}));
  RETURN_IF_ERROR(CheckListenPolicy(
      {{"--grpc-listen", options.grpc_listen}, {"--http-listen", options.http_listen}},
      p.authorizer, options.insecure_no_auth));
  RETURN_IF_ERROR(ValidateCollectiveLabelOptions(options.metric_labels));
  p.insecure_no_auth = options.insecure_no_auth && !p.authorizer.Protects(Role::kRead);
  if (options.store == ":memory:") {
    p.store = NewMemoryStore();
  } else {
    ASSIGN_OR_RETURN(p.store, OpenSqliteStore(options.store));
  }
  CoreOptions core_options = options.core;
  core_options.workers.tokens = p.authorizer;
  p.streams = std::make_unique<WorkerStreams>(options.worker_streams);
  p.core = std::make_unique<Core>(p.store.get(), &p.hub, p.streams.get(), core_options);
  p.gateway = std::make_unique<GatewayService>(&p.core->fleet(), p.streams.get(), p.clock);
  p.watchers = std::make_unique<WatcherLimits>(options.watchers);
  p.bounds = std::make_unique<RequestBounds>(options.bounds);
  p.metrics = NewMetrics(p.store.get(), p.core.get(), p.watchers.get(), p.bounds.get(),
                         p.streams.get(), options.metric_labels);
  if (absl::Status rebuilt = p.metrics->RebuildFromStore(*p.store); !rebuilt.ok()) {
    return absl::Status(rebuilt.code(), absl::StrCat("rebuilding the metrics from store ",
                                                     options.store, ": ", rebuilt.message()));
  }
  p.hub.AddObserver(p.metrics);
  RETURN_IF_ERROR(p.core->Recover(p.clock->Now()));
  for (const std::string& name : options.forget_workers) {
    RETURN_IF_ERROR(p.core->fleet().ForgetWorker(name));
  }
  p.core->retention().Sweep(p.clock->Now());
  p.runs = std::make_unique<RunManagerRuns>(&p.core->runs(), &p.core->fleet(), &p.hub);
  p.workflows = std::make_unique<WorkflowManager>(p.store.get(), p.runs.get(), p.clock,
                                                  options.workflows, nullptr, p.bounds.get());
  RETURN_IF_ERROR(p.workflows->Start());
  p.workflows->SweepRetention(p.clock->Now());
  p.schedules = std::make_unique<ScheduleManager>(p.store.get(), p.runs.get(),
                                                  p.workflows.get(), options.schedules);
  RETURN_IF_ERROR(p.schedules->Start());
  p.api = std::make_unique<CoordinatorApi>(ApiParts{&p.core->runs(), &p.core->fleet(), &p.hub,
                                                    p.watchers.get(), p.workflows.get(),
                                                    p.schedules.get(), p.clock, p.bounds.get()});
  ASSIGN_OR_RETURN(p.service, NewGrpcApiService(GrpcEnv{p.api.get(), &p.authorizer}));
  RETURN_IF_ERROR(c->StartGrpc(options, std::move(credentials)));
  if (!options.http_listen.empty()) RETURN_IF_ERROR(c->StartHttp(options));
  Core* core = p.core.get();
  const Clock* clock = p.clock;
  WorkflowManager* workflows = p.workflows.get();
  ScheduleManager* schedules = p.schedules.get();
  absl::Notification* stop = &c->stop_;
  const absl::Duration interval = options.tick_interval;
  const bool insecure = p.insecure_no_auth;
  const absl::Duration retention_interval = options.retention_interval;
  const absl::Duration schedule_interval = options.schedules.tick;
  c->ticker_ = std::thread([core, clock, workflows, schedules, stop, interval, insecure,
                            retention_interval, schedule_interval] {
    absl::Time warned = clock->Now();
    absl::Time retained = warned;
    absl::Time scheduled = warned;
    while (!stop->WaitForNotificationWithTimeout(interval)) {
      const absl::Time now = clock->Now();
      core->fleet().Tick(now);
      workflows->Tick(now);  // wakes what waits for time; the work is its executor's
      if (now - scheduled >= schedule_interval) {
        scheduled = now;
        schedules->Tick(now);
      }
      if (now - retained >= retention_interval) {
        retained = now;
        core->retention().Sweep(now);  // nothing when no policy is set
        core->fleet().ForgetGoneWorkers(now);  // nothing with --forget-workers-after 0
        workflows->SweepRetention(now);
      }
      if (insecure && now - warned >= kInsecureWarningInterval) {
        warned = now;
        LogWarn("coordinator.insecure_no_auth",
                "WARNING: still serving without API tokens (--insecure-no-auth)");
      }
    }
  });
  return c;
}

absl::Status Coordinator::StartGrpc(const CoordinatorOptions& options,
                                    std::shared_ptr<grpc::ServerCredentials> credentials) {
  Parts& p = *parts_;
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(kMaxGrpcReceiveBytes);
  builder.AddListeningPort(options.grpc_listen, credentials, &grpc_port_);
  builder.RegisterService(p.service.get());
  builder.RegisterService(p.gateway.get());
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  CoordinatorMetrics* metrics = p.metrics.get();
  interceptors.push_back(NewApiInterceptorFactory(
      [metrics](absl::string_view method, absl::string_view code, absl::Duration latency) {
        metrics->RecordApiRequest("grpc", method, code, latency);
      },
      p.clock));
  interceptors.push_back(NewCallLogInterceptorFactory(&p.authorizer, p.clock));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  p.server = builder.BuildAndStart();
  if (p.server == nullptr || grpc_port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.grpc_listen,
                                               " (in use, or not an address here)"));
  }
  return absl::OkStatus();
}

absl::Status Coordinator::StartHttp(const CoordinatorOptions& options) {
  Parts& p = *parts_;
  HttpFrontendOptions http;
  http.http.listen = options.http_listen;
  http.http.tls_cert = options.tls_cert;
  http.http.tls_key = options.tls_key;
  http.http.tls_client_ca = options.tls_client_ca;
  http.http.limits = options.http_limits;
  HttpFrontendParts parts;
  parts.api = p.api.get();
  parts.authorizer = &p.authorizer;
  parts.clock = p.clock;
  CoordinatorMetrics* metrics = p.metrics.get();
  Parts* all = &p;
  parts.service.metrics_text = [metrics, all] {
    return metrics->Scrape() +
           SecurityMetrics(all->insecure_no_auth, all->http_for_metrics.load()) +
           (all->schedules ? all->schedules->MetricsText() : std::string());
  };
  grpc::Server* server = p.server.get();
  parts.service.ready = [server] { return server != nullptr; };
  parts.on_request = [metrics](absl::string_view route, int status, absl::Duration latency) {
    metrics->RecordApiRequest("http", route, std::to_string(status), latency);
  };
  ASSIGN_OR_RETURN(p.http, HttpFrontend::Start(http, std::move(parts)));
  p.http_for_metrics.store(p.http.get());
  return absl::OkStatus();
}

bool Coordinator::insecure_no_auth() const { return parts_->insecure_no_auth; }

int Coordinator::http_port() const { return parts_->http ? parts_->http->port() : 0; }

void Coordinator::Wait() { stop_.WaitForNotification(); }

void Coordinator::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  const absl::Time start = parts_->clock->Now();
  LogInfo("coordinator.draining",
          "ending event streams, answering requests already read, closing connections")
      .Int("grpc_grace_ms", absl::ToInt64Milliseconds(kGrpcShutdownGrace));
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (ticker_.joinable()) ticker_.join();
  if (parts_->schedules) parts_->schedules->Stop();
  if (parts_->workflows) parts_->workflows->Stop();
  parts_->hub.EndAll();
  if (parts_->http) {
    parts_->http->Shutdown();
    LogInfo("coordinator.http_closed", "HTTP listener closed")
        .Int("took_ms", absl::ToInt64Milliseconds(parts_->clock->Now() - start));
  }
  // gRPC's deadline is the system's time, whatever clock the parts read.
  parts_->server->Shutdown(absl::ToChronoTime(RealClock()->Now() + kGrpcShutdownGrace));
  LogInfo("coordinator.drained", "every connection closed")
      .Int("took_ms", absl::ToInt64Milliseconds(parts_->clock->Now() - start));
}

Coordinator::~Coordinator() {
  if (parts_ && parts_->server) Shutdown();
  // Their threads call the core.
  if (parts_ && parts_->schedules) parts_->schedules->Stop();
  if (parts_ && parts_->workflows) parts_->workflows->Stop();
}

WorkflowManager* Coordinator::workflows() { return parts_->workflows.get(); }

ScheduleManager* Coordinator::schedules() { return parts_->schedules.get(); }

RunManager* Coordinator::manager() { return &parts_->core->runs(); }

Fleet* Coordinator::fleet() { return &parts_->core->fleet(); }

}  // namespace collbench
