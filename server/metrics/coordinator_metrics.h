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
//
// Series bound (docs/design/security.md#bounds): a result makes or updates a latency/bandwidth
// series only when its size is one the run's spec names
// (api/result_bounds.h); otherwise it is counted as size_not_in_spec.
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

#include <functional>
#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collbench/v1/run.pb.h"
#include "collbench/v1/worker.pb.h"
#include "api/result_bounds.h"
#include "server/core/admission.h"
#include "server/core/request_bounds.h"
#include "server/core/run_manager.h"
#include "server/core/watch_hub.h"
#include "server/core/watcher_limits.h"
#include "server/metrics/collective_labels.h"
#include "server/store/store.h"

namespace collbench {

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
  // One configuration's series (CollectiveLabeler::Labels), found once:
  // the registry keeps every series it made, so the pointers stay valid.
  // The ratio gauges are made when a result first carries that ratio.
  struct Series;
  // The series of a result of `tracked`: found by the run's configuration
  // (its labels without a result's fields, interned once per run) and the
  // result's SeriesKey, so a result costs no label building and no family
  // lookup. As many entries as series, however many runs share them.
  Series& SeriesLocked(Tracked& tracked, const v1::SizeResult& result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Unfinished runs: their spec and the last state counted.
  struct Tracked {
    v1::RunSpec spec;
    std::string pool;  // RunPool of the run once scheduled
    v1::RunState state = v1::RUN_STATE_UNSPECIFIED;
    bool bounded = false;          // bounds computed from spec
    ResultBounds bounds;
    std::set<uint64_t> sizes_seen;  // distinct sizes with a series
    int configuration = -1;         // in configurations_; -1: not yet (a new state resets it)
  };
  std::map<std::string, Tracked> runs_ ABSL_GUARDED_BY(mu_);
  std::map<std::map<std::string, std::string>, int> configurations_ ABSL_GUARDED_BY(mu_);
  std::map<std::pair<int, std::string>, std::unique_ptr<Series>> series_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collbench

#endif  // COLLBENCH_SERVER_METRICS_COORDINATOR_METRICS_H_
