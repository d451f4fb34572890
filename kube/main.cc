// SPDX-License-Identifier: Apache-2.0
// collbench-kube: the opt-in controller that writes hunts' verdicts to the
// cluster's nodes (docs/operations/kubernetes.md#the-controller). Parses
// flags and wires the objects together: the coordinator client (a read
// token), the Kubernetes client (--kubeconfig or in-cluster), the node
// cache's thread, the reconcile loop and the metrics endpoint.
#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "client/coordinator_client.h"
#include "common/flag_parser.h"
#include "common/log.h"
#include "common/log_flags.h"
#include "common/secrets.h"
#include "common/tls_channel.h"
#include "common/units.h"
#include "kube/controller.h"
#include "kube/coordinator_source.h"
#include "kube/kube_client.h"
#include "kube/kube_config.h"
#include "kube/node_cache.h"

namespace collbench::kube {
namespace {

constexpr char kUsage[] =
    R"(usage: collbench-kube --coordinator HOST:PORT --token-file FILE [--kubeconfig FILE] [flags]
Writes collbench's hunt verdicts to the cluster's nodes: a CONFIRMED_BAD
worker's node gets the condition CollectivePerformanceDegraded=True and the
label collbench.io/health=degraded (with --taint also the taint
collbench.io/degraded:NoSchedule); a node measured healthy gets the
condition False and collbench.io/health=healthy and loses that taint;
LINK_SUSPECT, RACK_SUSPECT and INCONCLUSIVE verdicts become Events on the
nodes involved. Workers name their node (collbench-worker --node-name, or
NODE_NAME from the downward API). The token needs the coordinator's read
role only. Without --kubeconfig it uses the pod's service account.
)";

struct Flags {
  std::string coordinator;
  std::string token_file;
  ClientTlsOptions tls;
  std::string kubeconfig;
  std::string context;
  std::string account_dir = kServiceAccountDir;
  bool taint = false;
  bool dry_run = false;
  bool mark_testing = false;
  bool mark_testing_taint = false;
  std::string breaker_fraction = "0.5";
  std::string breaker_window = "5m";
  std::string interval = "15s";
  std::string qps = "5";
  int burst = 10;
  int hunts = 20;
  std::string event_namespace = "default";
  std::string node_selector;
  std::string worker_pods = "app.kubernetes.io/component=worker";
  std::string worker_namespace;
  bool trust_worker_node_names = false;
  std::string metrics_listen;
  bool once = false;
};

absl::StatusOr<double> Fraction(const std::string& text) {
  double value = 0;
  if (!absl::SimpleAtod(text, &value) || value <= 0 || value > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--breaker-fraction: '", text, "' is not a fraction in (0, 1] of the nodes"));
  }
  return value;
}

absl::StatusOr<absl::Duration> DurationFlag(const char* flag, const std::string& text) {
  absl::StatusOr<double> seconds = ParseDurationSeconds(text);
  if (!seconds.ok() || *seconds <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": '", text, "' is not a positive duration (e.g. 30s, 5m)"));
  }
  return absl::Seconds(*seconds);
}

prometheus::Gauge& NewGauge(prometheus::Registry& registry, const std::string& name,
                            const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add({});
}

// The controller's metrics, refreshed after each pass.
struct Metrics {
  explicit Metrics(prometheus::Registry& r)
      : breaker(NewGauge(r, "collbench_kube_circuit_breaker_open",
                         "1 while the circuit breaker withholds new quarantines")),
        withheld(NewGauge(r, "collbench_kube_quarantines_withheld",
                          "Quarantines the circuit breaker withheld since the start")),
        patches(NewGauge(r, "collbench_kube_node_patches", "Nodes changed since the start")),
        events(NewGauge(r, "collbench_kube_events", "Events created since the start")),
        errors(NewGauge(r, "collbench_kube_api_errors",
                        "Kubernetes API writes that failed since the start")),
        passes(NewGauge(r, "collbench_kube_passes",
                        "Reconcile passes since the start, failed ones included")),
        failed(NewGauge(r, "collbench_kube_failed_passes",
                        "Passes that could not read the coordinator or the nodes")),
        nodes(NewGauge(r, "collbench_kube_nodes", "Nodes with a collbench worker")),
        dry_run(NewGauge(r, "collbench_kube_dry_run_changes",
                         "Changes logged and not made (--dry-run)")) {}

  void Update(const ControllerStats& s) {
    breaker.Set(s.breaker_open ? 1 : 0);
    withheld.Set(static_cast<double>(s.withheld));
    patches.Set(static_cast<double>(s.node_patches));
    events.Set(static_cast<double>(s.events));
    errors.Set(static_cast<double>(s.api_errors));
    passes.Set(static_cast<double>(s.passes));
    failed.Set(static_cast<double>(s.failed_passes));
    nodes.Set(s.nodes);
    dry_run.Set(static_cast<double>(s.dry_run_changes));
  }

  prometheus::Gauge& breaker;
  prometheus::Gauge& withheld;
  prometheus::Gauge& patches;
  prometheus::Gauge& events;
  prometheus::Gauge& errors;
  prometheus::Gauge& passes;
  prometheus::Gauge& failed;
  prometheus::Gauge& nodes;
  prometheus::Gauge& dry_run;
};

int Fail(const std::string& message) {
  absl::FPrintF(stderr, "collbench-kube: %s\n", message);
  return 2;
}

int Serve(const Flags& flags) {
  ControllerOptions options;
  options.dry_run = flags.dry_run;
  options.plan.taint = flags.taint;
  options.plan.mark_testing = flags.mark_testing || flags.mark_testing_taint;
  options.plan.mark_testing_taint = flags.mark_testing_taint;
  options.plan.event_namespace = flags.event_namespace;
  options.worker_pods = flags.trust_worker_node_names ? "" : flags.worker_pods;
  options.node_selector = flags.node_selector;
  absl::StatusOr<double> fraction = Fraction(flags.breaker_fraction);
  if (!fraction.ok()) return Fail(std::string(fraction.status().message()));
  options.plan.breaker_fraction = *fraction;
  absl::StatusOr<absl::Duration> window = DurationFlag("breaker-window", flags.breaker_window);
  if (!window.ok()) return Fail(std::string(window.status().message()));
  options.plan.breaker_window = *window;
  absl::StatusOr<absl::Duration> interval = DurationFlag("interval", flags.interval);
  if (!interval.ok()) return Fail(std::string(interval.status().message()));
  double qps = 0;
  if (!absl::SimpleAtod(flags.qps, &qps) || qps < 0) {
    return Fail(absl::StrCat("--qps: '", flags.qps, "' is not a rate (requests per second)"));
  }
  absl::StatusOr<KubeConfig> config = flags.kubeconfig.empty()
                                          ? InClusterConfig(flags.account_dir)
                                          : LoadKubeconfig(flags.kubeconfig, flags.context);
  if (!config.ok()) return Fail(std::string(config.status().message()));
  options.worker_namespace = !flags.worker_namespace.empty()   ? flags.worker_namespace
                             : !config->namespace_name.empty() ? config->namespace_name
                                                               : "collbench";
  absl::StatusOr<std::string> token = ReadTokenFile("token-file", flags.token_file);
  if (!token.ok()) return Fail(std::string(token.status().message()));
  absl::StatusOr<ChannelSetup> channel = MakeChannelSetup(flags.tls);
  if (!channel.ok()) return Fail(std::string(channel.status().message()));
  CoordinatorClient coordinator(flags.coordinator, *token, *channel,
                                FollowUp("collbench", {"--coordinator", flags.coordinator}, true));
  const auto sleep = [](absl::Duration d) { absl::SleepFor(d); };
  KubeClient kube(*config, KubeClientOptions{qps, flags.burst}, RealClock(), sleep);
  std::unique_ptr<CoordinatorSource> source = NewGrpcCoordinatorSource(&coordinator, flags.hunts);
  NodeCache cache(&kube, NodeCacheOptions{flags.node_selector}, sleep);
  Controller controller(&kube, source.get(), flags.once ? nullptr : &cache, options, RealClock());

  auto registry = std::make_shared<prometheus::Registry>();
  Metrics metrics(*registry);
  std::unique_ptr<prometheus::Exposer> exposer;
  if (!flags.metrics_listen.empty()) {
    try {
      exposer = std::make_unique<prometheus::Exposer>(flags.metrics_listen);
      exposer->RegisterCollectable(registry);
    } catch (const std::exception& e) {
      return Fail(absl::StrCat("--metrics-listen ", flags.metrics_listen, ": ", e.what()));
    }
  }
  LogInfo("kube.start", absl::StrCat("collbench-kube: coordinator ", flags.coordinator,
                                     ", Kubernetes ", config->server, " as ", config->user,
                                     flags.dry_run ? ", dry-run: no change is made" : "",
                                     flags.taint ? ", tainting degraded nodes" : ""));
  if (flags.once) {
    absl::StatusOr<NodePlan> plan = controller.Reconcile();
    if (!plan.ok()) {
      absl::FPrintF(stderr, "collbench-kube: %s\n", plan.status().message());
      return 1;
    }
    return 0;
  }
  // SIGINT and SIGTERM end the loop (blocked everywhere, taken here).
  absl::Notification stop;
  std::thread waiter([&] {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    int signal = 0;
    sigwait(&signals, &signal);
    stop.Notify();
    cache.Stop();
    kube.Stop();
  });
  std::thread cache_thread([&] { cache.Run(); });
  while (!stop.HasBeenNotified()) {
    if (absl::StatusOr<NodePlan> plan = controller.Reconcile(); !plan.ok()) {
      LogWarn("kube.pass", absl::StrCat("pass failed, nothing written: ", plan.status().message()));
    }
    metrics.Update(controller.stats());
    stop.WaitForNotificationWithTimeout(*interval);
  }
  cache_thread.join();
  waiter.join();
  LogInfo("kube.stop", "collbench-kube: stopped");
  return 0;
}

}  // namespace
}  // namespace collbench::kube

int main(int argc, char** argv) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  collbench::kube::Flags flags;
  collbench::FlagParser parser;
  parser.String("coordinator", &flags.coordinator, "coordinator gRPC address HOST:PORT");
  parser.String("token-file", &flags.token_file,
                "file whose first line is a coordinator token (role read is enough)");
  parser.String("tls-ca", &flags.tls.ca_file, "PEM CA: dial the coordinator over TLS");
  parser.String("tls-server-name", &flags.tls.server_name,
                "the name the coordinator's certificate carries, when not the host dialled");
  parser.String("kubeconfig", &flags.kubeconfig,
                "kubeconfig file (default: the pod's service account, in-cluster)");
  parser.String("context", &flags.context, "the kubeconfig's context (default: its current one)");
  parser.String("service-account-dir", &flags.account_dir,
                "in-cluster: the mounted service account (token, ca.crt, namespace)");
  parser.Bool("taint", &flags.taint,
              "also taint a CONFIRMED_BAD worker's node collbench.io/degraded:NoSchedule (the "
              "worker DaemonSet tolerates it, so the node can be measured again)");
  parser.Bool("dry-run", &flags.dry_run, "log every change it would make, make none");
  parser.Bool("mark-testing", &flags.mark_testing,
              "label the nodes of a hunt's running round collbench.io/testing=true, and remove "
              "it after (also when the round fails)");
  parser.Bool("mark-testing-taint", &flags.mark_testing_taint,
              "mark them with the taint collbench.io/testing:NoSchedule instead of the label");
  parser.String("breaker-fraction", &flags.breaker_fraction,
                "the circuit breaker: at most this fraction of the nodes with a worker are "
                "quarantined within --breaker-window; more are withheld (default 0.5)");
  parser.String("breaker-window", &flags.breaker_window,
                "the circuit breaker's window (default 5m)");
  parser.String("interval", &flags.interval, "time between passes (default 15s)");
  parser.String("qps", &flags.qps, "Kubernetes API requests per second after a burst (default 5)");
  parser.Int("burst", &flags.burst,
             "Kubernetes API requests at once after an idle time (default 10)");
  parser.Int("hunts", &flags.hunts,
             "how many of the newest finished hunts a pass reads (default 20)");
  parser.String("event-namespace", &flags.event_namespace,
                "namespace of the Events it creates about nodes (default: default)");
  parser.String("node-selector", &flags.node_selector,
                "only nodes with these labels (a label selector; default all)");
  parser.String("worker-pods", &flags.worker_pods,
                "the label selector of the worker DaemonSet's pods: a worker's verdicts reach "
                "its node only where such a running pod on that node has the worker's address "
                "(default app.kubernetes.io/component=worker)");
  parser.String("worker-namespace", &flags.worker_namespace,
                "their namespace (default: the kubeconfig context's or the pod's, else collbench)");
  parser.Bool("trust-worker-node-names", &flags.trust_worker_node_names,
              "take each worker's node name on its word, checking no pod (for workers that are "
              "not pods); a compromised worker could then get any node marked");
  parser.String("metrics-listen", &flags.metrics_listen,
                "serve Prometheus metrics on HOST:PORT at /metrics (default: none)");
  parser.Bool("once", &flags.once, "one pass, then exit (1 when it could not read its sources)");
  collbench::LogFlags log_flags;
  collbench::AddLogFlags(parser, &log_flags);
  const absl::Status parsed = parser.Parse(std::vector<std::string>(argv + 1, argv + argc));
  if (parser.help()) {
    std::fputs(collbench::kube::kUsage, stdout);
    std::fputs(parser.Usage().c_str(), stdout);
    return 0;
  }
  if (!parsed.ok()) return collbench::kube::Fail(std::string(parsed.message()));
  if (!parser.rest().empty()) {
    return collbench::kube::Fail("unexpected argument '" + parser.rest()[0] + "'");
  }
  if (flags.coordinator.empty() || flags.token_file.empty()) {
    return collbench::kube::Fail("--coordinator HOST:PORT and --token-file FILE are required");
  }
  if (absl::Status logging = collbench::ApplyLogFlags(log_flags); !logging.ok()) {
    return collbench::kube::Fail(std::string(logging.message()));
  }
  return collbench::kube::Serve(flags);
}
