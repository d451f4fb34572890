// SPDX-License-Identifier: Apache-2.0
// The coordinator's Prometheus metrics (docs/design/observability.md#metrics):
//
//   collbench_build_info{version}                        gauge, 1
//   collbench_workers{state}                             gauge (ready, busy, draining, lost)
//   collbench_runs_total{state}                          counter of runs entering each state
//   collbench_runs_queued                                gauge
//   collbench_run_duration_seconds{state}                histogram, creation to final state
//   collbench_collective_latency_seconds{every configuration field, pool, label_<key>...}
//                                                        histogram, power-of-two ns buckets,
//                                                        filled exactly from the engine's
//                                                        (labels: collective_labels.h)
//   collbench_collective_bus_bandwidth_bytes_per_second{same labels}   gauge, last value
//   collbench_result_limit_ratio{same labels}            gauge, last busbw over the path's
//                                                        limit (analysis/roofline.h)
//   collbench_result_expected_ratio{same labels}         gauge, last busbw over the published
//                                                        expected value (analysis/references.h)
//   collbench_result_floor_ratio{same labels}            gauge, last busbw over the published
//                                                        floor; the three exist only where
//                                                        the reference is known
//   collbench_api_requests_total{protocol, method, code} counter
//   collbench_api_request_duration_seconds{protocol, method}           histogram
//   collbench_admission_rejections_total{reason}          counter of refused CreateRun calls
//                                                        (queue_full, rate_limited) and
//                                                        watchers (watchers_total,
//                                                        watchers_per_client refused;
//                                                        watcher_too_slow ended) and
//                                                        requests over a work bound
//                                                        (workflow_cells, runs_per_request,
//                                                        report_size)
//   collbench_watchers_open                              gauge, WatchRun + REST event streams
//   collbench_worker_registrations_total{result}         counter: new, reconnected, refused_*
//   collbench_worker_messages_refused_total{reason}      counter of worker messages not applied
//                                                        (status/result/log_not_launcher,
//                                                        results_beyond_spec) and results kept
//                                                        out of the series
//                                                        (size_not_in_spec)
//   collbench_worker_send_queue_overflows_total          counter of worker streams ended for
//                                                        an overflowing send queue
//   collbench_collective_series                          gauge, series the collective
//                                                        families hold, as counted against
//                                                        --max-metric-series
//   collbench_collective_series_refusals_total           counter of results stored but not
//                                                        exported: their new label set would
//                                                        pass --max-metric-series
//
// Series bound (docs/design/security.md#bounds): a result makes or updates a latency/bandwidth
// series only when its size is one the run's spec names
// (api/result_bounds.h); otherwise it is counted as size_not_in_spec. Each
// label takes a bounded set of values (collective_labels.h); a series that
// no remaining run's results hold is removed when runs are deleted
// (OnRunsDeleted); and all collective series together stay under
// CollectiveLabelOptions::max_series (docs/reference/metrics.md#the-series-cap).
//
// Rebuilt from the store (RebuildFromStore) when the coordinator starts:
// the collective series from every stored result, so the gauges hold the
// last result of each configuration and the histograms every stored
// iteration, as if the coordinator had never stopped. The run, API,
// admission and worker counters count from the process' start (Prometheus'
// rate() and increase() read a restart as a counter reset).
//
// No label carries a run id. Run and result metrics come from the run
// events the WatchHub fans out (this class is an observer of every run);
// worker and queue gauges are read from their sources at scrape time.
//
// Thread safety: every method may be called from any thread. OnEvent() is
// called with the RunManager's lock held, so it never calls the manager;
// it looks specs up in the store.
#ifndef COLLBENCH_SERVER_METRICS_COORDINATOR_METRICS_H_
#define COLLBENCH_SERVER_METRICS_COORDINATOR_METRICS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/result_bounds.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/worker.pb.h"
#include "server/core/admission.h"
#include "server/core/request_bounds.h"
#include "server/core/run_manager.h"
#include "server/core/watch_hub.h"
#include "server/core/watcher_limits.h"
#include "server/metrics/collective_labels.h"
#include "server/metrics/latency_buckets.h"
#include "server/store/store.h"

namespace collbench {

// The Prometheus series one collective label set holds at its most, as
// counted against CollectiveLabelOptions::max_series: the latency
// histogram's buckets (each finite edge and +Inf), _sum and _count, the bus
// bandwidth gauge and the three ratio gauges: 38.
inline constexpr int kSeriesPerLabelSet =
    (kLatencyMaxExponent - kLatencyMinExponent + 2) + 2 + 1 + 3;

struct MetricsSources {
  // Run by name, for results of runs whose state event was not seen (e.g.
  // re-adopted after a restart). Must not take the RunManager's lock.
  std::function<absl::StatusOr<v1::Run>(const std::string& name)> lookup_run;
  // Read at scrape time.
  std::function<std::vector<v1::Worker>()> workers;
  std::function<int()> queued_runs;
  std::function<AdmissionRejections()> admission_rejections;
  std::function<int64_t()> open_watchers;
  std::function<WatcherRejections()> watcher_rejections;
  std::function<RequestBoundRejections()> request_bound_rejections;
  std::function<WorkerCounts()> worker_counts;
  std::function<int64_t()> send_queue_overflows;
};

class CoordinatorMetrics final : public RunEventSink {
 public:
  CoordinatorMetrics(absl::string_view version, MetricsSources sources,
                     CollectiveLabelOptions labels = {});
  ~CoordinatorMetrics() override;

  // Fills the collective series from every result in `store`, runs oldest
  // first, as if their results had arrived now (see the file comment), and
  // remembers the unfinished runs so a re-adopted run's results are bounded
  // and its states counted once. Call once, before results flow (before
  // the gateway serves). The store's error if a read fails.
  absl::Status RebuildFromStore(Store& store);

  // RunEventSink: state changes count runs and time finished ones; results
  // feed the latency histograms and bandwidth gauges.
  void OnEvent(const v1::RunEvent& event) override;
  void OnEnd() override {}
  // The collective series that no remaining run's results hold are
  // removed from the registry (docs/reference/metrics.md#removal).
  void OnRunsDeleted(const std::vector<std::string>& runs) override;

  // One finished API call. protocol: "grpc" or "http"; code: the gRPC code
  // name or the HTTP status.
  void RecordApiRequest(absl::string_view protocol, absl::string_view method,
                        absl::string_view code, absl::Duration latency);

  // The Prometheus text exposition of everything, gauges refreshed first.
  std::string Scrape();

 private:
  void OnStateChange(const v1::Run& run, absl::Time event_time);
  void OnResult(const std::string& run_name, const v1::SizeResult& result);
  struct Tracked;
  // Adds one result to the collective series; false (nothing added) when
  // its size may make no series (SizeAllowed).
  bool AddResultLocked(Tracked& tracked, const v1::SizeResult& result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The runs in `store`, oldest first.
  static absl::StatusOr<std::vector<v1::Run>> StoredRunsOldestFirst(Store& store);
  using Labels = std::map<std::string, std::string>;
  // A run's tracking entry, from the cache or the store; nullptr if
  // unknown.
  Tracked* TrackedLocked(const std::string& run_name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a result of `size_bytes` may make a series for the run.
  static bool SizeAllowed(Tracked& tracked, uint64_t size_bytes);
  void ScrapeWorkerCounts();

  const MetricsSources sources_;
  // The prometheus-cpp registry and metric families (coordinator_metrics.cc),
  // kept out of this header. Thread-safe on their own.
  struct Families;
  const std::unique_ptr<Families> families_;

  absl::Mutex mu_;
  const std::string pool_label_;  // CollectiveLabelOptions::pool_label
  CollectiveLabeler labeler_ ABSL_GUARDED_BY(mu_);
  // A run's configuration labels (CollectiveLabeler::ConfigurationOf),
  // interned once per run and kept while a series or a tracked run uses it.
  struct Configuration {
    Labels labels;
    int users = 0;  // series under it and tracked runs interned to it
  };
  // One series (the configuration's labels with a result's
  // ResultFieldLabels over them) with pointers to its gauges and histogram.
  // The ratio gauges are made when a result first carries that ratio.
  struct Series;
  // The series of a result of `tracked`: found by the run's configuration
  // and the result's SeriesKey, so a result costs no label building and no
  // family lookup; made when new (nullptr when new and refused). As many
  // cache entries as result keys, however many runs share them.
  Series* SeriesLocked(Tracked& tracked, const v1::SizeResult& result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Configuration* ConfigurationLocked(Tracked& tracked) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops `tracked`'s hold on its configuration (a new state, or its end).
  void ForgetConfigurationLocked(Tracked& tracked) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseConfigurationLocked(Configuration* configuration) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A finished run's series are kept, in finished_, until it is deleted.
  void FinishLocked(const std::string& run_name, Tracked& tracked)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether one more label set stays within max_series_; the first
  // refusal is logged.
  bool SeriesRoomLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops one run's hold on `series`; the last removes it from the registry.
  void ReleaseSeriesLocked(Series* series) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Unfinished runs: their spec and the last state counted.
  struct Tracked {
    v1::RunSpec spec;
    std::string pool;  // RunPool of the run once scheduled
    v1::RunState state = v1::RUN_STATE_UNSPECIFIED;
    bool bounded = false;          // bounds computed from spec
    ResultBounds bounds;
    std::set<uint64_t> sizes_seen;  // distinct sizes with a series
    // Interned on the first result; nullptr: not yet (a new state resets it).
    Configuration* configuration = nullptr;
    std::set<Series*> series;  // the series its results hold
  };
  std::map<std::string, Tracked> runs_ ABSL_GUARDED_BY(mu_);
  const int max_series_;                           // CollectiveLabelOptions::max_series
  int64_t series_count_ ABSL_GUARDED_BY(mu_) = 0;  // kSeriesPerLabelSet per Series
  bool cap_logged_ ABSL_GUARDED_BY(mu_) = false;   // the cap's refusal logged once
  // Finished runs' series, one hold each, by run name, until deleted.
  std::map<std::string, std::vector<Series*>> finished_ ABSL_GUARDED_BY(mu_);
  std::map<Labels, std::unique_ptr<Configuration>> configurations_ ABSL_GUARDED_BY(mu_);
  // The series by their labels (owners), and by configuration and result
  // key (the cache; several keys may name one series).
  std::map<Labels, std::unique_ptr<Series>> series_by_labels_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<const Configuration*, std::string>, Series*> series_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_METRICS_COORDINATOR_METRICS_H_
