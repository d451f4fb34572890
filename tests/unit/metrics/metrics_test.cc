// SPDX-License-Identifier: Apache-2.0
// The histogram-to-Prometheus mapping
// (docs/design/observability.md#histogram-buckets) and the run metrics, checked
// on the exposition text exactly as Prometheus would read it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "api/convert.h"
#include "server/metrics/coordinator_metrics.h"
#include "server/metrics/latency_buckets.h"

namespace collbench {
namespace {

// One sample line of the text format.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<Sample> ParseExposition(const std::string& text) {
  std::vector<Sample> samples;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    const size_t brace = line.find('{');
    const size_t space = line.rfind(' ');
    s.name = line.substr(0, std::min(brace, space));
    if (brace != std::string::npos) {
      const std::string body = line.substr(brace + 1, line.rfind('}') - brace - 1);
      for (absl::string_view pair : absl::StrSplit(body, "\",", absl::SkipEmpty())) {
        std::vector<std::string> kv = absl::StrSplit(pair, absl::MaxSplits("=\"", 1));
        if (kv.size() == 2) {
          if (!kv[1].empty() && kv[1].back() == '"') kv[1].pop_back();
          s.labels[kv[0]] = kv[1];
        }
      }
    }
    EXPECT_TRUE(absl::SimpleAtod(line.substr(space + 1), &s.value)) << line;
    samples.push_back(std::move(s));
  }
  return samples;
}

std::vector<Sample> Find(const std::vector<Sample>& samples, const std::string& name) {
  std::vector<Sample> found;
  for (const Sample& s : samples) {
    if (s.name == name) found.push_back(s);
  }
  return found;
}

v1::Run MakeRun(v1::RunState state) {
  v1::Run run;
  run.set_name("runs/7");
  run.set_state(state);
  run.mutable_spec()->set_operation("allreduce");
  run.mutable_spec()->set_ranks(2);
  run.mutable_spec()->set_mpi(v1::MPICH);
  run.mutable_spec()->mutable_placement()->set_policy(v1::SPREAD);
  *run.mutable_create_time() = TimestampFromTime(absl::FromUnixSeconds(1000));
  return run;
}

v1::RunEvent StateEvent(const v1::Run& run, int64_t at_s) {
  v1::RunEvent event;
  event.set_run(run.name());
  *event.mutable_time() = TimestampFromTime(absl::FromUnixSeconds(at_s));
  *event.mutable_state_change() = run;
  return event;
}

v1::RunEvent ResultEvent(const Histogram& histogram, uint64_t bytes, double busbw) {
  v1::RunEvent event;
  event.set_run("runs/7");
  v1::SizeResult* result = event.mutable_result();
  result->set_operation("allreduce");
  result->set_bytes(bytes);
  result->set_busbw_bytes_per_s(busbw);
  *result->mutable_histogram() = HistogramToProto(histogram);
  return event;
}

TEST(LatencyBuckets, EdgesArePowersOfTwoNanoseconds) {
  const std::vector<double> bounds = LatencyBucketBoundsSeconds();
  ASSERT_EQ(bounds.size(), kLatencyMaxExponent - kLatencyMinExponent + 1);
  for (size_t i = 0; i < bounds.size(); ++i) {
    EXPECT_EQ(bounds[i], std::ldexp(1.0, kLatencyMinExponent + i) * 1e-9);
  }
}

TEST(LatencyBuckets, IncrementsCountEachIntervalExactly) {
  // Samples on, just below and just above every edge, below the first and
  // above the last edge.
  std::vector<uint64_t> samples = {1, 63, 64, 65};
  for (int k = kLatencyMinExponent + 1; k <= kLatencyMaxExponent + 1; ++k) {
    const uint64_t edge = uint64_t{1} << k;
    samples.insert(samples.end(), {edge - 1, edge, edge + 1});
  }
  std::mt19937_64 random(7);
  std::lognormal_distribution<double> latency(std::log(20000.0), 2.0);
  for (int i = 0; i < 100000; ++i) samples.push_back(1 + static_cast<uint64_t>(latency(random)));
  Histogram histogram;
  for (uint64_t s : samples) histogram.Record(s);

  const std::vector<double> increments = LatencyBucketIncrements(histogram);
  ASSERT_EQ(increments.size(), kLatencyMaxExponent - kLatencyMinExponent + 2);
  double cumulative = 0;
  for (int k = kLatencyMinExponent; k <= kLatencyMaxExponent; ++k) {
    cumulative += increments[k - kLatencyMinExponent];
    uint64_t exact = 0;
    for (uint64_t s : samples) exact += std::min(s, Histogram::kMaxValueNs) <= (uint64_t{1} << k);
    EXPECT_EQ(cumulative, static_cast<double>(exact)) << "le=2^" << k << " ns";
  }
  cumulative += increments.back();
  EXPECT_EQ(cumulative, static_cast<double>(samples.size()));
}

TEST(CoordinatorMetrics, LatencyHistogramIsFilledExactlyFromEngineHistograms) {
  CoordinatorMetrics metrics("1.2.3", MetricsSources{});
  metrics.OnEvent(StateEvent(MakeRun(v1::QUEUED), 1000));
  // Two results of the same size (e.g. two runs) add up; another size is
  // its own series.
  Histogram first, second, other;
  for (uint64_t v : {100u, 128u, 129u, 4096u, 5000u}) first.Record(v);
  for (uint64_t v : {64u, 65u, 1u << 20}) second.Record(v);
  other.RecordMany(3000, 10);
  metrics.OnEvent(ResultEvent(first, 1024, 5e9));
  metrics.OnEvent(ResultEvent(second, 1024, 6e9));
  metrics.OnEvent(ResultEvent(other, 8, 1e6));

  const std::vector<Sample> samples = ParseExposition(metrics.Scrape());
  Histogram merged = first;
  merged.Merge(second);
  int buckets_checked = 0;
  for (const Sample& s : Find(samples, "collbench_collective_latency_seconds_bucket")) {
    EXPECT_EQ(s.labels.at("operation"), "allreduce");
    EXPECT_EQ(s.labels.at("backend"), "mpi");
    EXPECT_EQ(s.labels.at("mpi"), "mpich");
    EXPECT_EQ(s.labels.at("placement"), "spread");
    EXPECT_EQ(s.labels.at("ranks"), "2");
    if (s.labels.at("size_bytes") != "1024") continue;
    const std::string& le = s.labels.at("le");
    if (le == "+Inf") {
      EXPECT_EQ(s.value, 8);
      continue;
    }
    double le_s = 0;
    ASSERT_TRUE(absl::SimpleAtod(le, &le_s));
    const int k = static_cast<int>(std::lround(std::log2(le_s * 1e9)));
    EXPECT_NEAR(le_s, std::ldexp(1.0, k) * 1e-9, le_s * 1e-12);
    EXPECT_EQ(s.value, static_cast<double>(merged.CountAtOrBelowPowerOfTwo(k))) << "le=" << le;
    ++buckets_checked;
  }
  EXPECT_EQ(buckets_checked, kLatencyMaxExponent - kLatencyMinExponent + 1);
  for (const Sample& s : Find(samples, "collbench_collective_latency_seconds_count")) {
    EXPECT_EQ(s.value, s.labels.at("size_bytes") == "1024" ? 8 : 10);
  }
  for (const Sample& s : Find(samples, "collbench_collective_latency_seconds_sum")) {
    const double exact_ns = s.labels.at("size_bytes") == "1024" ? 100 + 128 + 129 + 4096 + 5000 +
                                                                      64 + 65 + (1u << 20)
                                                                : 30000;
    EXPECT_DOUBLE_EQ(s.value, exact_ns * 1e-9);
  }
  const std::vector<Sample> busbw =
      Find(samples, "collbench_collective_bus_bandwidth_bytes_per_second");
  ASSERT_EQ(busbw.size(), 2u);
  for (const Sample& s : busbw) EXPECT_EQ(s.value, s.labels.at("size_bytes") == "1024" ? 6e9 : 1e6);
}

// Results of the two iteration-synchronization modes are separate series:
// the result's own sync, else the run's stored (resolved) one.
TEST(CoordinatorMetrics, SeriesOfTheTwoSyncModesNeverMix) {
  CoordinatorMetrics metrics("1.2.3", MetricsSources{});
  v1::Run run = MakeRun(v1::QUEUED);
  run.mutable_spec()->set_sync(v1::SYNC_BARRIER);
  metrics.OnEvent(StateEvent(run, 1000));
  Histogram h;
  h.RecordMany(3000, 10);
  metrics.OnEvent(ResultEvent(h, 8, 1e6));  // no sync of its own: the run's
  v1::RunEvent none = ResultEvent(h, 8, 2e6);
  none.mutable_result()->set_sync(v1::SYNC_NONE);
  metrics.OnEvent(none);
  const std::vector<Sample> counts =
      Find(ParseExposition(metrics.Scrape()), "collbench_collective_latency_seconds_count");
  ASSERT_EQ(counts.size(), 2u);
  std::set<std::string> modes;
  for (const Sample& s : counts) {
    modes.insert(s.labels.at("sync"));
    EXPECT_EQ(s.value, 10);
  }
  EXPECT_EQ(modes, (std::set<std::string>{"barrier", "none"}));
}

TEST(CoordinatorMetrics, RunsAreCountedOncePerStateAndTimed) {
  CoordinatorMetrics metrics("1.2.3", MetricsSources{});
  metrics.OnEvent(StateEvent(MakeRun(v1::QUEUED), 1000));
  metrics.OnEvent(StateEvent(MakeRun(v1::RUNNING), 1001));
  metrics.OnEvent(StateEvent(MakeRun(v1::RUNNING), 1002));  // announced twice
  metrics.OnEvent(StateEvent(MakeRun(v1::SUCCEEDED), 1042));
  const std::vector<Sample> samples = ParseExposition(metrics.Scrape());
  std::map<std::string, double> by_state;
  for (const Sample& s : Find(samples, "collbench_runs_total")) by_state[s.labels.at("state")] = s.value;
  EXPECT_EQ(by_state, (std::map<std::string, double>{{"queued", 1},
                                                     {"scheduled", 0},
                                                     {"running", 1},
                                                     {"succeeded", 1},
                                                     {"failed", 0},
                                                     {"cancelled", 0}}));
  // Every final state has its histogram from the start (zeros, not no data).
  std::map<std::string, double> sum_by_state;
  for (const Sample& s : Find(samples, "collbench_run_duration_seconds_sum")) {
    sum_by_state[s.labels.at("state")] = s.value;
  }
  EXPECT_EQ(sum_by_state,
            (std::map<std::string, double>{{"succeeded", 42}, {"failed", 0}, {"cancelled", 0}}));
}

TEST(CoordinatorMetrics, GaugesComeFromTheSourcesAndNoLabelHoldsARunId) {
  MetricsSources sources;
  sources.workers = [] {
    std::vector<v1::Worker> workers(3);
    workers[0].set_state(v1::READY);
    workers[1].set_state(v1::BUSY);
    workers[2].set_state(v1::BUSY);
    return workers;
  };
  sources.queued_runs = [] { return 4; };
  CoordinatorMetrics metrics("1.2.3", sources);
  metrics.OnEvent(StateEvent(MakeRun(v1::QUEUED), 1000));
  Histogram h;
  h.Record(1000);
  metrics.OnEvent(ResultEvent(h, 8, 1));
  metrics.RecordApiRequest("grpc", "/collbench.v1.Coordinator/GetRun", "NOT_FOUND",
                           absl::Milliseconds(2));
  const std::string text = metrics.Scrape();
  EXPECT_EQ(text.find("runs/7"), std::string::npos);
  const std::vector<Sample> samples = ParseExposition(text);
  std::map<std::string, double> workers;
  for (const Sample& s : Find(samples, "collbench_workers")) workers[s.labels.at("state")] = s.value;
  // Every state is present, a quarantined one (suspect) at 0 too.
  EXPECT_EQ(workers, (std::map<std::string, double>{
                         {"ready", 1}, {"busy", 2}, {"draining", 0}, {"lost", 0}, {"suspect", 0}}));
  ASSERT_EQ(Find(samples, "collbench_runs_queued").size(), 1u);
  EXPECT_EQ(Find(samples, "collbench_runs_queued")[0].value, 4);
  ASSERT_EQ(Find(samples, "collbench_build_info").size(), 1u);
  EXPECT_EQ(Find(samples, "collbench_build_info")[0].labels.at("version"), "1.2.3");
  const std::vector<Sample> calls = Find(samples, "collbench_api_requests_total");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].labels.at("code"), "NOT_FOUND");
  EXPECT_EQ(calls[0].labels.at("protocol"), "grpc");
}

// One series per known worker's node: 1 healthy, 0 quarantined by a hunt;
// a forgotten worker's series goes with it.
TEST(CoordinatorMetrics, NodeHealthHasASeriesPerWorkerNodeWhileTheWorkerIsKnown) {
  std::vector<v1::Worker> fleet(3);
  fleet[0].set_name("workers/node-a");
  fleet[0].mutable_inventory()->set_host_id("node-a");
  fleet[1].set_name("workers/node-b");
  fleet[1].mutable_inventory()->set_host_id("node-b");
  fleet[1].set_state(v1::SUSPECT);
  fleet[1].mutable_suspect()->set_reason("CONFIRMED_BAD: 0.31 of the fleet median");
  fleet[2].set_name("workers/c");  // no host id: its name stands for its node
  fleet[2].set_state(v1::LOST);
  MetricsSources sources;
  sources.workers = [&fleet] { return fleet; };
  CoordinatorMetrics metrics("1.2.3", sources);
  auto health = [&metrics] {
    std::map<std::pair<std::string, std::string>, double> by_node;
    for (const Sample& s : Find(ParseExposition(metrics.Scrape()), "collbench_node_health")) {
      by_node[{s.labels.at("node"), s.labels.at("worker")}] = s.value;
    }
    return by_node;
  };
  using Series = std::map<std::pair<std::string, std::string>, double>;
  EXPECT_EQ(health(),
            (Series{{{"node-a", "node-a"}, 1}, {{"node-b", "node-b"}, 0}, {{"c", "c"}, 1}}));
  // A host id is what a worker reports: one made to end the line and start
  // a forged series stays inside its label value.
  fleet[0].mutable_inventory()->set_host_id("x\"} 1\ncollbench_node_health{node=\"forged");
  const std::string text = metrics.Scrape();
  EXPECT_EQ(text.find("\ncollbench_node_health{node=\"forged"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(node="x\"} 1\ncollbench_node_health{node=\"forged")"), std::string::npos)
      << text;
  fleet[0].mutable_inventory()->set_host_id("node-a");
  fleet.pop_back();          // forgotten
  fleet[1].clear_suspect();  // cleared, or measured healthy again
  EXPECT_EQ(health(), (Series{{{"node-a", "node-a"}, 1}, {{"node-b", "node-b"}, 1}}));
}

TEST(CoordinatorMetrics, AdmissionRejectionsFollowTheManagersTotals) {
  AdmissionRejections totals;
  WatcherRejections watchers;
  RequestBoundRejections bounds;
  int64_t open_watchers = 0;
  MetricsSources sources;
  sources.admission_rejections = [&totals] { return totals; };
  sources.watcher_rejections = [&watchers] { return watchers; };
  sources.request_bound_rejections = [&bounds] { return bounds; };
  sources.open_watchers = [&open_watchers] { return open_watchers; };
  CoordinatorMetrics metrics("1.2.3", sources);
  auto counts = [&metrics] {
    std::map<std::string, double> by_reason;
    for (const Sample& s :
         Find(ParseExposition(metrics.Scrape()), "collbench_admission_rejections_total")) {
      by_reason[s.labels.at("reason")] = s.value;
    }
    return by_reason;
  };
  using Counts = std::map<std::string, double>;
  // Every reason from the start, at zero.
  EXPECT_EQ(counts(), (Counts{{"queue_full", 0},
                              {"rate_limited", 0},
                              {"watchers_total", 0},
                              {"watchers_per_client", 0},
                              {"watcher_too_slow", 0},
                              {"watchers_threads", 0},
                              {"workflow_cells", 0},
                              {"runs_per_request", 0},
                              {"report_size", 0}}));
  totals.queue_full = 2;
  totals.rate_limited = 5;
  watchers.total = 1;
  watchers.per_client = 3;
  watchers.too_slow = 4;
  watchers.threads = 6;
  bounds.workflow_cells = 8;
  bounds.runs_per_request = 9;
  bounds.report_size = 10;
  const Counts expected{{"queue_full", 2},
                        {"rate_limited", 5},
                        {"watchers_total", 1},
                        {"watchers_per_client", 3},
                        {"watcher_too_slow", 4},
                        {"watchers_threads", 6},
                        {"workflow_cells", 8},
                        {"runs_per_request", 9},
                        {"report_size", 10}};
  EXPECT_EQ(counts(), expected);
  // A scrape with nothing new counts nothing twice.
  EXPECT_EQ(counts(), expected);
  open_watchers = 7;
  const std::vector<Sample> open =
      Find(ParseExposition(metrics.Scrape()), "collbench_watchers_open");
  ASSERT_EQ(open.size(), 1u);
  EXPECT_EQ(open[0].value, 7);
}

TEST(CoordinatorMetrics, ResultsOfRunsNotSeenBeforeAreLookedUp) {
  MetricsSources sources;
  int lookups = 0;
  sources.lookup_run = [&lookups](const std::string& name) -> absl::StatusOr<v1::Run> {
    ++lookups;
    v1::Run run = MakeRun(v1::RUNNING);
    run.set_name(name);
    return run;
  };
  CoordinatorMetrics metrics("1.2.3", sources);
  Histogram h;
  h.Record(1000);
  metrics.OnEvent(ResultEvent(h, 8, 1));
  metrics.OnEvent(ResultEvent(h, 16, 1));
  EXPECT_EQ(lookups, 1);
  EXPECT_EQ(Find(ParseExposition(metrics.Scrape()), "collbench_collective_latency_seconds_count")
                .size(),
            2u);
}

// Series bound (docs/design/security.md#bounds): a result whose size the run's spec does not
// name makes no series, however many a worker reports, and is counted.
TEST(CoordinatorMetrics, OnlySizesInTheRunsSpecMakeSeries) {
  CoordinatorMetrics metrics("1.2.3", MetricsSources{});
  v1::Run run = MakeRun(v1::RUNNING);
  run.mutable_spec()->add_sizes_bytes(8);
  run.mutable_spec()->add_sizes_bytes(1024);
  metrics.OnEvent(StateEvent(run, 1000));
  Histogram h;
  h.Record(1000);
  metrics.OnEvent(ResultEvent(h, 8, 1));
  metrics.OnEvent(ResultEvent(h, 1024, 1));
  for (uint64_t bogus = 1; bogus <= 500; ++bogus) metrics.OnEvent(ResultEvent(h, bogus * 3, 1));
  const std::vector<Sample> samples = ParseExposition(metrics.Scrape());
  std::set<std::string> sizes;
  for (const Sample& s : Find(samples, "collbench_collective_latency_seconds_count")) {
    sizes.insert(s.labels.at("size_bytes"));
  }
  for (const Sample& s : Find(samples, "collbench_collective_bus_bandwidth_bytes_per_second")) {
    sizes.insert(s.labels.at("size_bytes"));
  }
  EXPECT_EQ(sizes, (std::set<std::string>{"8", "1024"}));
  double refused = -1;
  for (const Sample& s : Find(samples, "collbench_worker_messages_refused_total")) {
    if (s.labels.at("reason") == "size_not_in_spec") refused = s.value;
  }
  EXPECT_EQ(refused, 500);  // multiples of 3: none is 8 or 1024
}

TEST(CoordinatorMetrics, WorkerRegistrationsRefusalsAndOverflowsFollowTheirSources) {
  WorkerCounts counts;
  int64_t overflows = 0;
  MetricsSources sources;
  sources.worker_counts = [&counts] { return counts; };
  sources.send_queue_overflows = [&overflows] { return overflows; };
  CoordinatorMetrics metrics("1.2.3", sources);
  counts.registrations["new"] = 3;
  counts.registrations["refused_secret"] = 2;
  counts.refused_messages["log_not_launcher"] = 5;
  overflows = 1;
  auto value = [&](const std::string& name, const std::string& key, const std::string& label) {
    for (const Sample& s : Find(ParseExposition(metrics.Scrape()), name)) {
      if (key.empty() || s.labels.at(key) == label) return s.value;
    }
    return -1.0;
  };
  EXPECT_EQ(value("collbench_worker_registrations_total", "result", "new"), 3);
  EXPECT_EQ(value("collbench_worker_registrations_total", "result", "refused_secret"), 2);
  EXPECT_EQ(value("collbench_worker_registrations_total", "result", "refused_rate"), 0);
  EXPECT_EQ(value("collbench_worker_messages_refused_total", "reason", "log_not_launcher"), 5);
  EXPECT_EQ(value("collbench_worker_send_queue_overflows_total", "", ""), 1);
  counts.registrations["new"] = 4;  // counters catch up, never count twice
  EXPECT_EQ(value("collbench_worker_registrations_total", "result", "new"), 4);
  EXPECT_EQ(value("collbench_worker_registrations_total", "result", "new"), 4);
}

}  // namespace
}  // namespace collbench
