// SPDX-License-Identifier: Apache-2.0
// collbench-coordinator: flags into CoordinatorOptions, then serve until
// SIGINT or SIGTERM.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "analysis/references.h"
#include "common/flag_parser.h"
#include "common/grpc_log.h"
#include "common/log.h"
#include "common/log_flags.h"
#include "common/secrets.h"
#include "common/units.h"
#include "server/app/coordinator.h"
#include "server/auth/authorizer.h"

namespace {

constexpr char kUsage[] =
    "usage: collbench-coordinator [--grpc-listen HOST:PORT] [--http-listen HOST:PORT] "
    "[--store FILE] [--tokens FILE] [--tls-cert F --tls-key F [--tls-client-ca F]] "
    "[--join-token-file F] "
    "[--insecure-no-auth] [--log-format auto|json|text] [--log-level debug|info|warn|error] "
    "[--max-queued-runs N] [--create-rate R] [--create-burst N] [--max-watchers N] "
    "[--max-running-workflows N] [--max-queued-workflows N] [--min-schedule-period D] "
    "[--max-watchers-per-client N] [--watcher-buffer N] [--max-workers N] "
    "[--forget-workers-after D] [--register-rate R]\n"
    "       [--max-unregistered-streams N] [--forget-worker NAME]... [--metric-run-labels KEYS] "
    "[--metric-pool-label KEY] [--max-metric-series N] [--retain-runs N] [--retain-for DURATION]\n"
    "       [--max-body-bytes SIZE] [--max-connections N] [--max-unauthenticated-connections N] "
    "[--max-unauthenticated-bytes SIZE] [--request-deadline D] "
    "[--unauthenticated-request-deadline D]\n"
    "       [--max-workflow-cells N] [--max-runs-per-request N] [--max-report-bytes SIZE] "
    "[--retain-workflows N] [--retain-workflows-for DURATION]\n";

// A flag taking a whole number of at least `min` into `target`.
void WholeNumberFlag(collbench::FlagParser& flags, const std::string& name, int min, int* target,
                     const std::string& help) {
  flags.Custom(
      name, "N",
      [name, min, target](absl::string_view v) {
        if (!absl::SimpleAtoi(v, target) || *target < min) {
          return absl::InvalidArgumentError(
              absl::StrCat("invalid --", name, " '", v, "': not a whole number >= ", min));
        }
        return absl::OkStatus();
      },
      absl::StrCat(help, " (default ", *target, ")"));
}

// A flag taking a duration (10s, 2m; 0 for none) into `target`.
void DurationFlag(collbench::FlagParser& flags, const std::string& name, absl::Duration* target,
                  const std::string& help) {
  flags.Custom(
      name, "D",
      [name, target](absl::string_view v) {
        absl::StatusOr<double> seconds = collbench::ParseDurationSeconds(v);
        if (!seconds.ok() || *seconds < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("invalid --", name, " '", v, "': not a duration such as 10s or 2m"));
        }
        *target = absl::Seconds(*seconds);
        return absl::OkStatus();
      },
      *target > absl::ZeroDuration()
          ? absl::StrCat(help, " (default ", absl::FormatDuration(*target), ")")
          : help);
}

// A flag taking a size (64MiB, 1048576) from `min` to `max` bytes into
// `target`.
template <typename Bytes>
void SizeFlag(collbench::FlagParser& flags, const std::string& name, uint64_t min, uint64_t max,
              Bytes* target, const std::string& help) {
  flags.Custom(
      name, "SIZE",
      [name, min, max, target](absl::string_view v) {
        absl::StatusOr<uint64_t> bytes = collbench::ParseBytes(v);
        if (!bytes.ok() || *bytes < min || *bytes > max) {
          return absl::InvalidArgumentError(absl::StrCat(
              "invalid --", name, " '", v, "': a size from ", collbench::FormatBytes(min), " to ",
              collbench::FormatBytes(max), ", e.g. 64MiB"));
        }
        *target = static_cast<Bytes>(*bytes);
        return absl::OkStatus();
      },
      absl::StrCat(help, " (default ", collbench::FormatBytes(static_cast<uint64_t>(*target)),
                   ")"));
}

// The HTTP listener's limits (docs/operations/limits.md#http).
void HttpLimitFlags(collbench::FlagParser& flags, collbench::HttpLimits* limits) {
  SizeFlag(flags, "max-body-bytes", 1024, uint64_t{1} << 40, &limits->max_body_bytes,
           "the largest REST request body; a larger one is refused (413) from its "
           "Content-Length, before it is read");
  WholeNumberFlag(flags, "max-connections", 0, &limits->max_connections,
                  "HTTP connections open at once, event streams included; beyond, the oldest "
                  "unauthenticated one still waiting for its request is closed (429), or else "
                  "the new one; 0: no limit");
  WholeNumberFlag(flags, "max-unauthenticated-connections", 0,
                  &limits->max_unauthenticated_connections,
                  "HTTP connections that have not yet made a request with a valid token; beyond, "
                  "the oldest of them still waiting for its request is closed (429); 0: no "
                  "limit");
  SizeFlag(flags, "max-unauthenticated-bytes", 0, uint64_t{1} << 40,
           &limits->max_unauthenticated_bytes,
           "bytes that connections not yet authenticated may together have sent toward "
           "requests not read whole; beyond, the oldest is closed (429); 0: no limit");
  DurationFlag(flags, "request-deadline", &limits->request_deadline,
               "time an authenticated HTTP connection has to send one whole request (line, "
               "headers, body); a connection past it is closed; 0: none");
  DurationFlag(flags, "unauthenticated-request-deadline", &limits->unauthenticated_request_deadline,
               "the same for a connection that has not yet made a request with a valid token "
               "(every new connection); 0: none");
}

// The worker join token: from --join-token-file, else from the
// COLLBENCH_JOIN_TOKEN environment variable, which is removed either way so
// that nothing this process starts inherits it.
// A gateway token (--join-token-file, --launcher-token-file): the file's, or
// else the environment variable's (read once and removed either way).
absl::StatusOr<std::string> GatewayToken(const char* flag, const std::string& file,
                                         const char* env) {
  std::string from_env = collbench::TakeSecretFromEnv(env);
  if (!file.empty()) {
    if (absl::Status shared = collbench::CheckPrivateFile(file); !shared.ok()) {
      collbench::LogWarn("coordinator.secret_file_shared",
                         absl::StrCat("--", flag, " ", shared.message()))
          .Str("flag", flag);
    }
    return collbench::ReadTokenFile(flag, file);
  }
  return from_env;
}

const char* SignalName(int signal) { return signal == SIGINT ? "SIGINT" : "SIGTERM"; }

// The start-up lines: what listens where, with TLS and tokens or not.
void LogServing(const collbench::CoordinatorOptions& options,
                const collbench::Coordinator& coordinator) {
  const bool tls = !options.tls_cert.empty();
  const bool mutual_tls = !options.tls_client_ca.empty();
  if (coordinator.insecure_no_auth()) {
    collbench::LogWarn("coordinator.insecure_no_auth",
                       absl::StrCat("WARNING: --insecure-no-auth: serving without API tokens; "
                                    "anyone who can reach ",
                                    options.grpc_listen,
                                    options.http_listen.empty() ? "" : " or " + options.http_listen,
                                    " may create runs on every worker"));
  }
  collbench::LogInfo(
      "coordinator.serving",
      absl::StrCat("serving gRPC on port ", coordinator.grpc_port(), ", store ", options.store))
      .Str("listen", options.grpc_listen)
      .Int("port", coordinator.grpc_port())
      .Bool("tls", tls)
      .Bool("mutual_tls", mutual_tls)
      .Bool("tokens", !options.tokens_file.empty())
      .Bool("join_token", !options.join_token.empty())
      .Str("store", options.store)
      .Str("version", COLLBENCH_VERSION);
  if (coordinator.http_port() != 0) {
    collbench::LogInfo(
        "coordinator.serving_http",
        absl::StrCat("serving HTTP (REST, /metrics) on port ", coordinator.http_port()))
        .Str("listen", options.http_listen)
        .Int("port", coordinator.http_port())
        .Bool("tls", tls)
        .Bool("mutual_tls", mutual_tls);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's Abseil is built with deadlock detection on, which takes a
  // process-wide lock on every Mutex acquisition; the tests keep it, the
  // daemon serves without it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  collbench::CoordinatorOptions options;
  int heartbeat_timeout_s = 6;
  collbench::FlagParser flags;
  flags.String("grpc-listen", &options.grpc_listen, "gRPC address (default 127.0.0.1:50051)");
  flags.String("http-listen", &options.http_listen,
               "HTTP address for REST, /metrics, /healthz and /readyz (default: none)");
  flags.String("store", &options.store, "SQLite file (default collbench.db) or :memory:");
  flags.String("tls-cert", &options.tls_cert, "PEM certificate chain for TLS");
  flags.String("tls-key", &options.tls_key, "PEM private key for TLS");
  flags.String("tls-client-ca", &options.tls_client_ca,
               "PEM CA certificate(s): both listeners then require a client certificate from "
               "it (mutual TLS), bearer tokens still apply; needs --tls-cert and --tls-key");
  flags.String("tokens", &options.tokens_file,
               "bearer tokens, one 'ROLE TOKEN' per line (roles: read, operator, worker, "
               "launcher)");
  std::string launcher_token_file;
  flags.String("launcher-token-file", &launcher_token_file,
               "a file whose first line is one more token a launcher (collbench-launcher) must "
               "present (also COLLBENCH_LAUNCHER_TOKEN, read once and removed)");
  std::string worker_launch = "off";
  flags.Custom(
      "worker-launch", "off|fallback",
      [&worker_launch](absl::string_view value) {
        if (value != "off" && value != "fallback") {
          return absl::InvalidArgumentError(
              absl::StrCat("--worker-launch: '", value, "' is neither off nor fallback"));
        }
        worker_launch = std::string(value);
        return absl::OkStatus();
      },
      "who starts a run across workers when no launcher (collbench-launcher) is connected: "
      "off (default), it waits for one; fallback, its rank-0 worker does, and can then run "
      "code on the run's other workers (labs that start no launcher). With a launcher "
      "connected, no worker ever launches such a run");
  std::string join_token_file;
  flags.String("join-token-file", &join_token_file,
               "a file whose first line is one more token workers must present (also "
               "COLLBENCH_JOIN_TOKEN, read once and removed from the environment)");
  flags.Custom(
      "join-token", "T",
      [](absl::string_view) {
        return absl::InvalidArgumentError(
            "--join-token puts the token on the command line, where every local user sees it: "
            "write it to a file (chmod 600) and give --join-token-file FILE, or set "
            "COLLBENCH_JOIN_TOKEN");
      },
      "refused: use --join-token-file");
  flags.Bool("insecure-no-auth", &options.insecure_no_auth,
             "serve beyond loopback without API tokens: anyone who reaches a listener may "
             "create runs (logged, and collbench_insecure_no_auth 1 in /metrics)");
  flags.Int("heartbeat-timeout", &heartbeat_timeout_s,
            "seconds of silence before a worker is lost");
  collbench::LogFlags log_flags;
  collbench::AddLogFlags(flags, &log_flags);
  collbench::RunManagerOptions& admission = options.core.runs;
  collbench::WorkerDirectoryOptions& identity = options.core.workers;
  flags.Custom(
      "max-queued-runs", "N",
      [&admission](absl::string_view v) {
        if (!absl::SimpleAtoi(v, &admission.max_queued_runs) || admission.max_queued_runs < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("invalid --max-queued-runs '", v, "': not a whole number >= 0"));
        }
        return absl::OkStatus();
      },
      absl::StrCat("queued runs beyond which CreateRun is refused (RESOURCE_EXHAUSTED, HTTP 429 "
                   "with Retry-After); 0: no limit (default ",
                   admission.max_queued_runs, ")"));
  flags.Custom(
      "create-rate", "R",
      [&admission](absl::string_view v) {
        absl::StatusOr<double> rate = collbench::ParseRatePerSecond(v);
        if (!rate.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("invalid --create-rate ", rate.status().message()));
        }
        admission.create_rate.per_second = *rate;
        return absl::OkStatus();
      },
      absl::StrFormat("CreateRun calls per caller (bearer token, or client address without "
                      "tokens): 10/s, 600/min, 3600/h, or off; beyond it RESOURCE_EXHAUSTED, "
                      "HTTP 429 with Retry-After (default %g/s)",
                      admission.create_rate.per_second));
  flags.Custom(
      "create-burst", "N",
      [&admission](absl::string_view v) {
        if (!absl::SimpleAtoi(v, &admission.create_rate.burst) || admission.create_rate.burst < 1) {
          return absl::InvalidArgumentError(
              absl::StrCat("invalid --create-burst '", v, "': not a whole number >= 1"));
        }
        return absl::OkStatus();
      },
      absl::StrCat("creates a caller may make at once before --create-rate applies (default ",
                   admission.create_rate.burst, ")"));
  collbench::WatcherLimitOptions& watchers = options.watchers;
  WholeNumberFlag(flags, "max-watchers", 0, &watchers.max_total,
                  "open run watchers (gRPC WatchRun and REST event streams together) beyond "
                  "which a new one is refused (RESOURCE_EXHAUSTED, HTTP 429 with Retry-After); "
                  "0: no limit");
  WholeNumberFlag(flags, "max-watchers-per-client", 0, &watchers.max_per_client,
                  "open run watchers of one client (bearer token, or client address without "
                  "tokens) beyond which its next is refused the same way; 0: no limit");
  WholeNumberFlag(flags, "watcher-buffer", 1, &watchers.buffer_events,
                  "events a watcher may leave unread; one more ends it as too slow (gRPC "
                  "RESOURCE_EXHAUSTED, an SSE 'event: error')");
  WholeNumberFlag(flags, "max-workers", 0, &identity.max_workers,
                  "worker names this coordinator knows (each holds its own secret) beyond which "
                  "a new name is refused (RESOURCE_EXHAUSTED); 0: no limit");
  DurationFlag(flags, "forget-workers-after", &identity.forget_after,
               "forget a worker name (its secret and row) once it has been gone (LOST) this "
               "long, checked every minute, so that --max-workers counts only names heard from "
               "within it; a worker that comes back later joins anew with the join token; 0: "
               "never");
  WholeNumberFlag(flags, "max-running-workflows", 1, &options.workflows.max_running,
                  "workflows (matrices, suite runs, sweeps, advice, reports) executed at once, "
                  "each one run at a time");
  WholeNumberFlag(flags, "max-queued-workflows", 1, &options.workflows.max_queued,
                  "workflows waiting beyond which CreateWorkflow is refused (RESOURCE_EXHAUSTED, "
                  "HTTP 429 with Retry-After)");
  collbench::RequestBoundOptions& bounds = options.bounds;
  WholeNumberFlag(flags, "max-workflow-cells", 1, &bounds.max_workflow_cells,
                  "cells (runs) one matrix, suite or sweep workflow may plan, each list's "
                  "repeats counted once; more is refused before planning (INVALID_ARGUMENT, "
                  "HTTP 400)");
  WholeNumberFlag(flags, "max-runs-per-request", 1, &bounds.max_runs_per_request,
                  "distinct runs one advice, report or check workflow, baseline or /ui/compare "
                  "page may name (repeats counted once); more is refused (INVALID_ARGUMENT, "
                  "HTTP 400)");
  SizeFlag(flags, "max-report-bytes", 1, uint64_t{1} << 40, &bounds.max_report_bytes,
           "the page a report workflow may store; a larger one fails the workflow, naming the "
           "limit");
  flags.Custom(
      "references", "FILE",
      [&options](absl::string_view v) {
        std::ifstream file{std::string(v)};
        std::stringstream text;
        text << file.rdbuf();
        if (!file.good() && !file.eof()) {
          return absl::InvalidArgumentError(absl::StrCat("--references ", v, ": cannot read it"));
        }
        absl::StatusOr<collbench::ReferenceTable> site =
            collbench::ReferenceTable::Parse(text.str());
        if (!site.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--references ", v, ": ", site.status().message()));
        }
        options.core.runs.references = std::make_shared<const collbench::ReferenceTable>(
            collbench::ReferenceTable::Embedded().With(*site));
        return absl::OkStatus();
      },
      "a site's own references (the format of analysis/references/collective_references.json, "
      "every entry with its source), judged against beside the published ones: floors for "
      "your own hardware classes");
  flags.Custom(
      "min-schedule-period", "D",
      [&options](absl::string_view v) {
        absl::StatusOr<double> seconds = collbench::ParseDurationSeconds(v);
        if (!seconds.ok() || *seconds < 1) {
          return absl::InvalidArgumentError(
              absl::StrCat("invalid --min-schedule-period '", v, "': a duration of at least 1s"));
        }
        options.schedules.min_period = absl::Seconds(*seconds);
        return absl::OkStatus();
      },
      "the shortest period a schedule may have (default 60s)");
  WholeNumberFlag(flags, "max-unregistered-streams", 0,
                  &options.worker_streams.max_unregistered_per_source,
                  "worker streams from one address that have not registered yet beyond which a "
                  "new one is refused (RESOURCE_EXHAUSTED); 0: no limit");
  flags.Custom(
      "register-rate", "R",
      [&identity](absl::string_view v) {
        absl::StatusOr<double> rate = collbench::ParseRatePerSecond(v);
        if (!rate.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("invalid --register-rate ", rate.status().message()));
        }
        identity.register_rate.per_second = *rate;
        return absl::OkStatus();
      },
      absl::StrFormat("new worker names one source address may register: 20/s, 600/min, or "
                      "off; beyond it RESOURCE_EXHAUSTED (default %g/s, bursts of %d)",
                      identity.register_rate.per_second, identity.register_rate.burst));
  flags.Custom(
      "forget-worker", "NAME",
      [&options](absl::string_view v) {
        options.forget_workers.emplace_back(v);
        return absl::OkStatus();
      },
      "forget a worker name and its secret before serving, so that a worker that lost its "
      "secret file can register anew with the join token; repeatable");
  collbench::CollectiveLabelOptions& metric_labels = options.metric_labels;
  flags.Custom(
      "metric-run-labels", "KEYS",
      [&metric_labels](absl::string_view v) {
        metric_labels.run_labels = absl::StrSplit(v, ',', absl::SkipEmpty());
        return absl::OkStatus();
      },
      "run label keys (comma-separated) that become labels label_KEY of the "
      "collbench_collective_* series; values sanitized, at most 64 per key (default: none)");
  flags.String("metric-pool-label", "KEY", &metric_labels.pool_label,
               "the worker label (collbench-worker --label KEY=VALUE) naming a worker's node "
               "pool: the collective series' `pool` label; '' for none (default pool)");
  WholeNumberFlag(flags, "max-metric-series", 0, &metric_labels.max_series,
                  "Prometheus series the collbench_collective_* and collbench_result_* "
                  "families may hold, 38 counted per label set; a result of a new label set "
                  "past it is stored but not exported, and counted in "
                  "collbench_collective_series_refusals_total; 0: no limit");
  HttpLimitFlags(flags, &options.http_limits);
  collbench::RetentionPolicy& retention = options.core.retention;
  WholeNumberFlag(flags, "retain-runs", 0, &retention.keep_runs,
                  "keep the newest N finished runs (succeeded, failed, cancelled) and delete "
                  "older ones with their results, at start and every minute; queued and "
                  "running runs are never deleted; 0: keep them all");
  DurationFlag(
      flags, "retain-for", &retention.keep_for,
      "delete finished runs that ended longer ago than this (e.g. 720h for 30 days), with their "
      "results, at start and every minute; default: keep them");
  collbench::RetentionPolicy& workflow_retention = options.workflows.retention;
  WholeNumberFlag(flags, "retain-workflows", 0, &workflow_retention.keep_runs,
                  "keep the newest N ended workflows (succeeded, failed, cancelled) and delete "
                  "older ones with their pages (their runs stay), at start and every minute; "
                  "0: keep them all");
  DurationFlag(
      flags, "retain-workflows-for", &workflow_retention.keep_for,
      "delete ended workflows that ended longer ago than this (e.g. 720h), with their pages, "
      "at start and every minute; default: keep them");
  const absl::Status parsed = flags.Parse(std::vector<std::string>(argv + 1, argv + argc));
  if (flags.help()) {
    std::fputs(kUsage, stdout);
    std::fputs(flags.Usage().c_str(), stdout);
    return 0;
  }
  if (!parsed.ok() || !flags.rest().empty()) {
    absl::FPrintF(stderr, "collbench-coordinator: %s\n",
                  parsed.ok() ? "unexpected argument '" + flags.rest()[0] + "'"
                              : std::string(parsed.message()));
    return 2;
  }
  if (absl::Status logging = collbench::ApplyLogFlags(log_flags); !logging.ok()) {
    absl::FPrintF(stderr, "collbench-coordinator: %s\n", logging.message());
    return 2;
  }
  collbench::RouteGrpcLogsToLog();
  options.core.fleet.heartbeat_timeout = absl::Seconds(heartbeat_timeout_s);
  absl::StatusOr<std::string> join_token =
      GatewayToken("join-token-file", join_token_file, "COLLBENCH_JOIN_TOKEN");
  absl::StatusOr<std::string> launcher_token =
      GatewayToken("launcher-token-file", launcher_token_file, "COLLBENCH_LAUNCHER_TOKEN");
  for (const absl::StatusOr<std::string>* token : {&join_token, &launcher_token}) {
    if (!token->ok()) {
      collbench::LogError("coordinator.start_failed").Error(token->status());
      return 2;
    }
  }
  options.join_token = *std::move(join_token);
  options.launcher_token = *std::move(launcher_token);
  options.core.runs.worker_launch_fallback = worker_launch == "fallback";
  if (!options.tokens_file.empty()) {
    if (absl::Status shared = collbench::CheckPrivateFile(options.tokens_file); !shared.ok()) {
      collbench::LogWarn("coordinator.secret_file_shared",
                         absl::StrCat("--tokens ", shared.message()))
          .Str("flag", "tokens");
    }
  }

  // Block the stop signals here so the waiting thread below takes them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto coordinator = collbench::Coordinator::Start(options);
  if (!coordinator.ok()) {
    collbench::LogError("coordinator.start_failed",
                        absl::StrCat("not started: ", coordinator.status().message()))
        .Error(coordinator.status());
    const absl::StatusCode code = coordinator.status().code();
    return code == absl::StatusCode::kInvalidArgument ||
                   code == absl::StatusCode::kFailedPrecondition
               ? 2
               : 1;
  }
  LogServing(options, **coordinator);
  std::thread waiter([&] {
    int signal = 0;
    sigwait(&signals, &signal);
    collbench::LogInfo("coordinator.signal",
                       absl::StrCat("received ", SignalName(signal), "; shutting down"))
        .Str("signal", SignalName(signal));
    (*coordinator)->Shutdown();
  });
  (*coordinator)->Wait();
  waiter.join();
  coordinator->reset();
  collbench::LogInfo("coordinator.stopped", "stopped");
  return 0;
}
