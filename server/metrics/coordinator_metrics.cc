// SPDX-License-Identifier: Apache-2.0
#include "server/metrics/coordinator_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "api/convert.h"
#include "common/log.h"
#include "server/metrics/latency_buckets.h"
#include "server/metrics/node_metrics.h"

namespace collbench {
namespace {

using prometheus::Labels;

const prometheus::Histogram::BucketBoundaries& RunDurationBounds() {
  static const auto* bounds = new prometheus::Histogram::BucketBoundaries{
      0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600};
  return *bounds;
}

const prometheus::Histogram::BucketBoundaries& ApiDurationBounds() {
  static const auto* bounds = new prometheus::Histogram::BucketBoundaries{
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};
  return *bounds;
}

std::string Lower(const std::string& name) { return absl::AsciiStrToLower(name); }

std::string StateLabel(v1::RunState state) { return Lower(v1::RunState_Name(state)); }

}  // namespace

struct CoordinatorMetrics::Families {
  Families()
      : registry(std::make_shared<prometheus::Registry>()),
        workers(prometheus::BuildGauge()
                    .Name("collbench_workers")
                    .Help("Registered workers by state.")
                    .Register(*registry)),
        runs_total(prometheus::BuildCounter()
                       .Name("collbench_runs_total")
                       .Help("Runs that entered each state.")
                       .Register(*registry)),
        runs_queued(prometheus::BuildGauge()
                        .Name("collbench_runs_queued")
                        .Help("Runs waiting in the queue.")
                        .Register(*registry)
                        .Add({})),
        run_duration(prometheus::BuildHistogram()
                         .Name("collbench_run_duration_seconds")
                         .Help("Time from a run's creation to its final state.")
                         .Register(*registry)),
        latency(prometheus::BuildHistogram()
                    .Name("collbench_collective_latency_seconds")
                    .Help("Per-iteration latency of each rank, from the engine's histograms.")
                    .Register(*registry)),
        bus_bandwidth(prometheus::BuildGauge()
                          .Name("collbench_collective_bus_bandwidth_bytes_per_second")
                          .Help("Bus bandwidth of the last result (nccl-tests' busbw).")
                          .Register(*registry)),
        limit_ratio(prometheus::BuildGauge()
                        .Name("collbench_result_limit_ratio")
                        .Help("Bus bandwidth of the last result over the physical limit of its"
                              " path (the roofline from the workers' measured memory bandwidth"
                              " and link rates).")
                        .Register(*registry)),
        expected_ratio(prometheus::BuildGauge()
                           .Name("collbench_result_expected_ratio")
                           .Help("Bus bandwidth of the last result over the published expected"
                                 " value for its hardware class (analysis/references).")
                           .Register(*registry)),
        floor_ratio(prometheus::BuildGauge()
                        .Name("collbench_result_floor_ratio")
                        .Help("Bus bandwidth of the last result over the published floor for"
                              " its hardware class; below 1 is below the floor.")
                        .Register(*registry)),
        api_requests(prometheus::BuildCounter()
                         .Name("collbench_api_requests_total")
                         .Help("Finished API calls by protocol, method and code.")
                         .Register(*registry)),
        api_duration(prometheus::BuildHistogram()
                         .Name("collbench_api_request_duration_seconds")
                         .Help("API call latency by protocol and method.")
                         .Register(*registry)),
        admission_rejections(prometheus::BuildCounter()
                                 .Name("collbench_admission_rejections_total")
                                 .Help("Calls refused by admission control, by limit: "
                                       "CreateRun for queue_full (--max-queued-runs) or "
                                       "rate_limited (--create-rate); watchers for "
                                       "watchers_total (--max-watchers) or watchers_per_client "
                                       "(--max-watchers-per-client); watcher_too_slow counts "
                                       "watchers ended for falling behind; watchers_threads "
                                       "SSE watches refused over TLS, where each holds a "
                                       "request thread, when only the threads kept for other "
                                       "requests are left; requests over a work bound: "
                                       "workflow_cells (--max-workflow-cells), "
                                       "runs_per_request (--max-runs-per-request), report_size "
                                       "(--max-report-bytes, a report workflow failed).")
                                 .Register(*registry)),
        worker_registrations(prometheus::BuildCounter()
                                 .Name("collbench_worker_registrations_total")
                                 .Help("Worker registrations by result: new (a name's first, "
                                       "issued a secret), reconnected (with its secret), or "
                                       "refused_join_token, refused_secret (a known name "
                                       "without its secret), refused_invalid, "
                                       "refused_max_workers (--max-workers), refused_rate "
                                       "(--register-rate), refused_concurrent (too many "
                                       "unregistered streams from one address), "
                                       "refused_store; a launcher's: launcher, "
                                       "launcher_refused_token, launcher_refused_invalid.")
                                 .Register(*registry)),
        worker_messages_refused(prometheus::BuildCounter()
                                    .Name("collbench_worker_messages_refused_total")
                                    .Help("Worker messages not applied, by reason: a run's "
                                          "status, result or log from a worker that is not its "
                                          "launcher; results beyond what the run's spec can "
                                          "produce; results whose size the spec does not name "
                                          "(no series made).")
                                    .Register(*registry)),
        send_queue_overflows(prometheus::BuildCounter()
                                 .Name("collbench_worker_send_queue_overflows_total")
                                 .Help("Worker streams ended because the coordinator's send "
                                       "queue to the worker overflowed.")
                                 .Register(*registry)
                                 .Add({})),
        collective_series(prometheus::BuildGauge()
                              .Name("collbench_collective_series")
                              .Help("Series the collective families (latency, bus bandwidth, "
                                    "ratios) hold, each label set counted at its most, against "
                                    "--max-metric-series.")
                              .Register(*registry)
                              .Add({})),
        collective_series_refusals(
            prometheus::BuildCounter()
                .Name("collbench_collective_series_refusals_total")
                .Help("Results stored but not exported: their new label set would pass "
                      "--max-metric-series.")
                .Register(*registry)
                .Add({})),
        watchers_open(prometheus::BuildGauge()
                          .Name("collbench_watchers_open")
                          .Help("Open run watchers: gRPC WatchRun and REST event streams.")
                          .Register(*registry)
                          .Add({})) {}

  std::shared_ptr<prometheus::Registry> registry;
  prometheus::Family<prometheus::Gauge>& workers;
  prometheus::Family<prometheus::Counter>& runs_total;
  prometheus::Gauge& runs_queued;
  prometheus::Family<prometheus::Histogram>& run_duration;
  prometheus::Family<prometheus::Histogram>& latency;
  prometheus::Family<prometheus::Gauge>& bus_bandwidth;
  prometheus::Family<prometheus::Gauge>& limit_ratio;
  prometheus::Family<prometheus::Gauge>& expected_ratio;
  prometheus::Family<prometheus::Gauge>& floor_ratio;
  prometheus::Family<prometheus::Counter>& api_requests;
  prometheus::Family<prometheus::Histogram>& api_duration;
  prometheus::Family<prometheus::Counter>& admission_rejections;
  prometheus::Family<prometheus::Counter>& worker_registrations;
  prometheus::Family<prometheus::Counter>& worker_messages_refused;
  prometheus::Counter& send_queue_overflows;
  prometheus::Gauge& collective_series;
  prometheus::Counter& collective_series_refusals;
  prometheus::Gauge& watchers_open;
};

CoordinatorMetrics::CoordinatorMetrics(absl::string_view version, MetricsSources sources,
                                       CollectiveLabelOptions labels)
    : sources_(std::move(sources)),
      families_(std::make_unique<Families>()),
      pool_label_(labels.pool_label),
      labeler_(labels),
      max_series_(labels.max_series) {
  prometheus::BuildGauge()
      .Name("collbench_build_info")
      .Help("The coordinator's version; always 1.")
      .Register(*families_->registry)
      .Add({{"version", std::string(version)}})
      .Set(1);
  // Every state is present from the start, so dashboards show zeros
  // instead of no data.
  for (v1::WorkerState s : {v1::READY, v1::BUSY, v1::DRAINING, v1::LOST, v1::SUSPECT}) {
    families_->workers.Add({{"state", Lower(v1::WorkerState_Name(s))}});
  }
  for (const char* reason :
       {"queue_full", "rate_limited", "watchers_total", "watchers_per_client", "watcher_too_slow",
        "watchers_threads", "workflow_cells", "runs_per_request", "report_size"}) {
    families_->admission_rejections.Add({{"reason", reason}});
  }
  for (const char* result : {"new", "reconnected", "refused_join_token", "refused_secret",
                             "refused_invalid", "refused_max_workers", "refused_rate",
                             "refused_concurrent", "launcher", "launcher_refused_token"}) {
    families_->worker_registrations.Add({{"result", result}});
  }
  for (const char* reason : {"status_not_launcher", "result_not_launcher", "log_not_launcher",
                             "results_beyond_spec", "size_not_in_spec"}) {
    families_->worker_messages_refused.Add({{"reason", reason}});
  }
  for (int s = v1::QUEUED; s <= v1::CANCELLED; ++s) {
    const auto state = static_cast<v1::RunState>(s);
    families_->runs_total.Add({{"state", StateLabel(state)}});
    if (IsFinalRunState(state)) {
      families_->run_duration.Add({{"state", StateLabel(state)}}, RunDurationBounds());
    }
  }
}

struct CoordinatorMetrics::Series {
  Labels labels;
  Configuration* configuration = nullptr;
  std::vector<std::string> keys;  // its result keys in series_
  int runs = 0;                   // runs whose results it holds
  prometheus::Gauge* bus_bandwidth = nullptr;
  prometheus::Gauge* limit_ratio = nullptr;
  prometheus::Gauge* expected_ratio = nullptr;
  prometheus::Gauge* floor_ratio = nullptr;
  prometheus::Histogram* latency = nullptr;
};

CoordinatorMetrics::~CoordinatorMetrics() = default;

void CoordinatorMetrics::OnEvent(const v1::RunEvent& event) {
  if (event.has_state_change()) {
    // An event without a time is as of the run's last change.
    const v1::Run& run = event.state_change();
    OnStateChange(run, TimeFromTimestamp(event.has_time() ? event.time() : StateTimeOf(run)));
  } else if (event.has_result()) {
    OnResult(event.run(), event.result());
  }
}

void CoordinatorMetrics::OnStateChange(const v1::Run& run, absl::Time event_time) {
  absl::MutexLock lock(&mu_);
  Tracked& tracked = runs_[run.name()];
  if (tracked.state == run.state()) return;  // announced again, counted once
  tracked.state = run.state();
  tracked.spec = SpecAsRun(run);
  tracked.pool = RunPool(run, pool_label_);
  ForgetConfigurationLocked(tracked);  // the spec or pool may have changed
  families_->runs_total.Add({{"state", StateLabel(run.state())}}).Increment();
  if (!IsFinalRunState(run.state())) return;
  FinishLocked(run.name(), tracked);
  runs_.erase(run.name());
  if (!run.has_create_time()) return;
  const absl::Time end = run.has_end_time() ? TimeFromTimestamp(run.end_time()) : event_time;
  const double seconds = absl::ToDoubleSeconds(end - TimeFromTimestamp(run.create_time()));
  families_->run_duration.Add({{"state", StateLabel(run.state())}}, RunDurationBounds())
      .Observe(seconds < 0 ? 0 : seconds);
}

CoordinatorMetrics::Tracked* CoordinatorMetrics::TrackedLocked(const std::string& run_name) {
  auto it = runs_.find(run_name);
  if (it != runs_.end()) return &it->second;
  if (!sources_.lookup_run) return nullptr;
  absl::StatusOr<v1::Run> run = sources_.lookup_run(run_name);
  if (!run.ok() || IsFinalRunState(run->state())) return nullptr;
  Tracked& tracked = runs_[run_name];
  tracked.spec = SpecAsRun(*run);
  tracked.state = run->state();
  tracked.pool = RunPool(*run, pool_label_);
  return &tracked;
}

bool CoordinatorMetrics::SizeAllowed(Tracked& tracked, uint64_t size_bytes) {
  if (!tracked.bounded) {
    tracked.bounds = BoundsOfSpec(tracked.spec);
    tracked.bounded = true;
  }
  if (tracked.sizes_seen.count(size_bytes) > 0) return true;
  const bool named = tracked.bounds.sizes.empty() || tracked.bounds.sizes.count(size_bytes) > 0;
  if (!named || static_cast<int64_t>(tracked.sizes_seen.size()) >=
                    tracked.bounds.max_distinct_sizes) {
    return false;
  }
  tracked.sizes_seen.insert(size_bytes);
  return true;
}

void CoordinatorMetrics::OnResult(const std::string& run_name, const v1::SizeResult& result) {
  absl::MutexLock lock(&mu_);
  Tracked* tracked = TrackedLocked(run_name);
  if (tracked == nullptr) return;
  if (!AddResultLocked(*tracked, result)) {
    families_->worker_messages_refused.Add({{"reason", "size_not_in_spec"}}).Increment();
  }
}


namespace {

// The fields of a result that ResultFieldLabels reads (besides the
// run's spec and pool): results equal in these share every series.
std::string SeriesKey(const v1::SizeResult& result) {
  return absl::StrCat(result.operation(), "\x1f", BoundedCountLabel(result.bytes()), "\x1f",
                      result.redop(), "\x1f", result.root(), "\x1f", result.dtype(), "\x1f",
                      static_cast<int>(result.sync()));
}

prometheus::Gauge& GaugeOf(prometheus::Gauge*& cached, prometheus::Family<prometheus::Gauge>& family,
                           const Labels& labels) {
  if (cached == nullptr) cached = &family.Add(labels);
  return *cached;
}

}  // namespace

CoordinatorMetrics::Configuration* CoordinatorMetrics::ConfigurationLocked(Tracked& tracked) {
  if (tracked.configuration == nullptr) {
    Labels labels = labeler_.ConfigurationOf(tracked.spec, tracked.pool);
    std::unique_ptr<Configuration>& configuration = configurations_[labels];
    if (configuration == nullptr) {
      labeler_.Hold(labels);
      configuration = std::make_unique<Configuration>();
      configuration->labels = std::move(labels);
    }
    ++configuration->users;
    tracked.configuration = configuration.get();
  }
  return tracked.configuration;
}

CoordinatorMetrics::Series* CoordinatorMetrics::SeriesLocked(Tracked& tracked,
                                                             const v1::SizeResult& result) {
  Configuration* configuration = ConfigurationLocked(tracked);
  std::string key = SeriesKey(result);
  auto cached = series_.find({configuration, key});
  if (cached != series_.end()) return cached->second;
  Labels labels = configuration->labels;
  for (auto& [name, value] : ResultFieldLabels(tracked.spec, result)) {
    labels[name] = std::move(value);
  }
  auto [found, added] = series_by_labels_.try_emplace(std::move(labels));
  std::unique_ptr<Series>& series = found->second;
  if (added) {
    if (!SeriesRoomLocked()) {
      series_by_labels_.erase(found);
      families_->collective_series_refusals.Increment();
      return nullptr;
    }
    series_count_ += kSeriesPerLabelSet;
    families_->collective_series.Set(static_cast<double>(series_count_));
    series = std::make_unique<Series>();
    series->labels = found->first;
    series->configuration = configuration;
    ++configuration->users;
    series->bus_bandwidth = &families_->bus_bandwidth.Add(series->labels);
  }
  series_.emplace(std::make_pair(series->configuration, key), series.get());
  series->keys.push_back(std::move(key));
  return series.get();
}

bool CoordinatorMetrics::SeriesRoomLocked() {
  if (max_series_ == 0 || series_count_ + kSeriesPerLabelSet <= max_series_) return true;
  if (!cap_logged_) {
    cap_logged_ = true;
    LogWarn("metrics.series_cap",
            absl::StrCat("the collective series reached --max-metric-series ", max_series_,
                         ": results of new configurations are stored but not exported "
                         "(counted in collbench_collective_series_refusals_total; logged once)"))
        .Int("max_series", max_series_);
  }
  return false;
}

void CoordinatorMetrics::ForgetConfigurationLocked(Tracked& tracked) {
  if (tracked.configuration == nullptr) return;
  ReleaseConfigurationLocked(tracked.configuration);
  tracked.configuration = nullptr;
}

void CoordinatorMetrics::ReleaseConfigurationLocked(Configuration* configuration) {
  if (--configuration->users > 0) return;
  labeler_.Release(configuration->labels);
  configurations_.erase(configurations_.find(configuration->labels));
}

void CoordinatorMetrics::FinishLocked(const std::string& run_name, Tracked& tracked) {
  ForgetConfigurationLocked(tracked);
  if (tracked.series.empty()) return;
  std::vector<Series*>& held = finished_[run_name];
  held.insert(held.end(), tracked.series.begin(), tracked.series.end());
  tracked.series.clear();
}

void CoordinatorMetrics::ReleaseSeriesLocked(Series* series) {
  if (--series->runs > 0) return;
  families_->bus_bandwidth.Remove(series->bus_bandwidth);
  if (series->limit_ratio != nullptr) families_->limit_ratio.Remove(series->limit_ratio);
  if (series->expected_ratio != nullptr) families_->expected_ratio.Remove(series->expected_ratio);
  if (series->floor_ratio != nullptr) families_->floor_ratio.Remove(series->floor_ratio);
  if (series->latency != nullptr) families_->latency.Remove(series->latency);
  for (const std::string& key : series->keys) series_.erase({series->configuration, key});
  series_count_ -= kSeriesPerLabelSet;
  families_->collective_series.Set(static_cast<double>(series_count_));
  ReleaseConfigurationLocked(series->configuration);
  series_by_labels_.erase(series_by_labels_.find(series->labels));
}

void CoordinatorMetrics::OnRunsDeleted(const std::vector<std::string>& runs) {
  absl::MutexLock lock(&mu_);
  for (const std::string& name : runs) {
    // A run whose final state was not seen ends here.
    if (auto live = runs_.find(name); live != runs_.end()) {
      FinishLocked(name, live->second);
      runs_.erase(live);
    }
    auto it = finished_.find(name);
    if (it == finished_.end()) continue;
    for (Series* series : it->second) ReleaseSeriesLocked(series);
    finished_.erase(it);
  }
}

bool CoordinatorMetrics::AddResultLocked(Tracked& tracked, const v1::SizeResult& result) {
  if (!SizeAllowed(tracked, result.bytes())) return false;
  Series* found = SeriesLocked(tracked, result);
  if (found == nullptr) return true;
  if (tracked.series.insert(found).second) ++found->runs;
  Series& series = *found;
  series.bus_bandwidth->Set(result.busbw_bytes_per_s());
  const v1::ResultReferences& references = result.references();
  if (references.limit_ratio() > 0) {
    GaugeOf(series.limit_ratio, families_->limit_ratio, series.labels)
        .Set(references.limit_ratio());
  }
  if (references.expected_ratio() > 0) {
    GaugeOf(series.expected_ratio, families_->expected_ratio, series.labels)
        .Set(references.expected_ratio());
  }
  if (references.expected_floor_bytes_per_s() > 0 && result.busbw_bytes_per_s() > 0) {
    GaugeOf(series.floor_ratio, families_->floor_ratio, series.labels)
        .Set(result.busbw_bytes_per_s() / references.expected_floor_bytes_per_s());
  }
  absl::StatusOr<Histogram> histogram = HistogramFromProto(result.histogram());
  if (!histogram.ok() || histogram->count() == 0) return true;
  if (series.latency == nullptr) {
    static const auto* bounds =
        new prometheus::Histogram::BucketBoundaries(LatencyBucketBoundsSeconds());
    series.latency = &families_->latency.Add(series.labels, *bounds);
  }
  series.latency->ObserveMultiple(LatencyBucketIncrements(*histogram),
                                  static_cast<double>(histogram->sum_ns()) * 1e-9);
  return true;
}

void CoordinatorMetrics::RecordApiRequest(absl::string_view protocol, absl::string_view method,
                                          absl::string_view code, absl::Duration latency) {
  const std::string protocol_label(protocol);
  const std::string method_label(method);
  families_->api_requests
      .Add({{"protocol", protocol_label}, {"method", method_label}, {"code", std::string(code)}})
      .Increment();
  families_->api_duration
      .Add({{"protocol", protocol_label}, {"method", method_label}}, ApiDurationBounds())
      .Observe(absl::ToDoubleSeconds(latency));
}

std::string CoordinatorMetrics::Scrape() {
  std::vector<v1::Worker> workers;
  if (sources_.workers) {
    workers = sources_.workers();
    std::map<std::string, int> by_state;
    for (v1::WorkerState s : {v1::READY, v1::BUSY, v1::DRAINING, v1::LOST, v1::SUSPECT}) {
      by_state[Lower(v1::WorkerState_Name(s))] = 0;
    }
    for (const v1::Worker& worker : workers) {
      ++by_state[Lower(v1::WorkerState_Name(worker.state()))];
    }
    for (const auto& [state, n] : by_state) families_->workers.Add({{"state", state}}).Set(n);
  }
  if (sources_.queued_runs) families_->runs_queued.Set(sources_.queued_runs());
  if (sources_.open_watchers) families_->watchers_open.Set(sources_.open_watchers());
  if (sources_.admission_rejections) {
    // The manager and the watcher limits count; the counters catch up to
    // their totals. Read before taking mu_: the manager's lock comes first.
    const AdmissionRejections now = sources_.admission_rejections();
    const WatcherRejections watchers =
        sources_.watcher_rejections ? sources_.watcher_rejections() : WatcherRejections{};
    const RequestBoundRejections bounds = sources_.request_bound_rejections
                                              ? sources_.request_bound_rejections()
                                              : RequestBoundRejections{};
    const std::pair<const char*, int64_t> by_reason[] = {
        {"queue_full", now.queue_full},
        {"rate_limited", now.rate_limited},
        {"watchers_total", watchers.total},
        {"watchers_per_client", watchers.per_client},
        {"watcher_too_slow", watchers.too_slow},
        {"watchers_threads", watchers.threads},
        {"workflow_cells", bounds.workflow_cells},
        {"runs_per_request", bounds.runs_per_request},
        {"report_size", bounds.report_size}};
    absl::MutexLock lock(&mu_);
    for (const auto& [reason, total] : by_reason) {
      prometheus::Counter& counter = families_->admission_rejections.Add({{"reason", reason}});
      if (total > counter.Value()) counter.Increment(total - counter.Value());
    }
  }
  ScrapeWorkerCounts();
  return prometheus::TextSerializer().Serialize(families_->registry->Collect()) +
         NodeHealthMetricsText(workers);
}

void CoordinatorMetrics::ScrapeWorkerCounts() {
  // Read before taking mu_: the manager's lock comes first.
  const WorkerCounts counts = sources_.worker_counts ? sources_.worker_counts() : WorkerCounts{};
  const int64_t overflows = sources_.send_queue_overflows ? sources_.send_queue_overflows() : 0;
  absl::MutexLock lock(&mu_);
  auto catch_up = [](prometheus::Counter& counter, int64_t total) {
    if (total > counter.Value()) counter.Increment(total - counter.Value());
  };
  for (const auto& [result, total] : counts.registrations) {
    catch_up(families_->worker_registrations.Add({{"result", result}}), total);
  }
  for (const auto& [reason, total] : counts.refused_messages) {
    catch_up(families_->worker_messages_refused.Add({{"reason", reason}}), total);
  }
  catch_up(families_->send_queue_overflows, overflows);
}

}  // namespace collbench
