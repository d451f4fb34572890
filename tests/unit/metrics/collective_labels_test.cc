// SPDX-License-Identifier: Apache-2.0
// The collective series never merge two configurations
// (docs/design/observability.md#collective-series): every field that defines
// one is a label; run labels and the node pool are allow-listed dimensions; the
// series survive a restart through the store.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "api/convert.h"
#include "common/histogram.h"
#include "server/metrics/collective_labels.h"
#include "server/metrics/coordinator_metrics.h"
#include "server/store/store.h"

namespace collbench {
namespace {

// The label sets and values of one metric's samples in a text exposition.
std::map<std::map<std::string, std::string>, double> SamplesOf(const std::string& text,
                                                               const std::string& name) {
  std::map<std::map<std::string, std::string>, double> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, name + "{")) continue;
    const size_t close = line.rfind('}');
    std::map<std::string, std::string> labels;
    absl::string_view body = line.substr(name.size() + 1, close - name.size() - 1);
    for (absl::string_view pair : absl::StrSplit(body, "\",", absl::SkipEmpty())) {
      std::vector<std::string> kv = absl::StrSplit(pair, absl::MaxSplits("=\"", 1));
      if (kv.size() != 2) continue;
      if (!kv[1].empty() && kv[1].back() == '"') kv[1].pop_back();
      labels[kv[0]] = kv[1];
    }
    double value = 0;
    EXPECT_TRUE(absl::SimpleAtod(line.substr(close + 2), &value)) << line;
    samples[labels] = value;
  }
  return samples;
}

constexpr char kBusbw[] = "collbench_collective_bus_bandwidth_bytes_per_second";
constexpr char kCount[] = "collbench_collective_latency_seconds_count";

v1::Run MakeRun(const std::string& id, int64_t created_s) {
  v1::Run run;
  run.set_name("runs/" + id);
  run.set_state(v1::RUNNING);
  v1::RunSpec& spec = *run.mutable_spec();
  spec.set_operation("allreduce");
  spec.set_ranks(2);
  spec.set_sync(v1::SYNC_BARRIER);
  spec.add_sizes_bytes(1024);
  *run.mutable_create_time() = TimestampFromTime(absl::FromUnixSeconds(created_s));
  for (const char* worker : {"workers/a", "workers/b"}) {
    v1::RankHost* host = run.add_hosts();
    host->set_worker(worker);
    host->set_slots(1);
  }
  return run;
}

v1::SizeResult MakeResult(double busbw, int iterations, int64_t sequence = 0) {
  v1::SizeResult result;
  result.set_sequence(sequence);
  result.set_operation("allreduce");
  result.set_bytes(1024);
  result.set_busbw_bytes_per_s(busbw);
  Histogram histogram;
  histogram.RecordMany(3000, iterations);
  *result.mutable_histogram() = HistogramToProto(histogram);
  return result;
}

v1::RunEvent StateEvent(const v1::Run& run) {
  v1::RunEvent event;
  event.set_run(run.name());
  *event.mutable_state_change() = run;
  return event;
}

v1::RunEvent ResultEvent(const v1::Run& run, const v1::SizeResult& result) {
  v1::RunEvent event;
  event.set_run(run.name());
  *event.mutable_result() = result;
  return event;
}

// A run announced and one result of it delivered.
void Deliver(CoordinatorMetrics& metrics, const v1::Run& run, double busbw) {
  metrics.OnEvent(StateEvent(run));
  metrics.OnEvent(ResultEvent(run, MakeResult(busbw, 10)));
}

// The acceptance case of the issue: shm and tcp runs of one configuration
// were one series.
TEST(CollectiveLabels, ShmAndTcpRunsOfOneConfigurationAreTwoSeries) {
  CoordinatorMetrics metrics("1", MetricsSources{});
  v1::Run shm = MakeRun("1", 1000);
  shm.mutable_spec()->set_transport(v1::SHM);
  v1::Run tcp = MakeRun("2", 1001);
  tcp.mutable_spec()->set_transport(v1::TCP);
  Deliver(metrics, shm, 9e9);
  Deliver(metrics, tcp, 1e9);
  const std::string text = metrics.Scrape();
  std::map<std::string, double> busbw_by_transport;
  for (const auto& [labels, value] : SamplesOf(text, kBusbw)) {
    busbw_by_transport[labels.at("transport")] = value;
  }
  EXPECT_EQ(busbw_by_transport, (std::map<std::string, double>{{"shm", 9e9}, {"tcp", 1e9}}));
  std::map<std::string, double> count_by_transport;
  for (const auto& [labels, value] : SamplesOf(text, kCount)) {
    count_by_transport[labels.at("transport")] = value;
  }
  EXPECT_EQ(count_by_transport, (std::map<std::string, double>{{"shm", 10}, {"tcp", 10}}));
}

// Each field that defines a configuration, changed alone, makes a series of
// its own; the labels are the canonical lower-case names.
TEST(CollectiveLabels, EveryConfigurationFieldSplitsTheSeries) {
  const std::vector<std::pair<std::string, std::function<void(v1::Run&)>>> variants = {
      {"base", [](v1::Run&) {}},
      {"transport", [](v1::Run& r) { r.mutable_spec()->set_transport(v1::UCX); }},
      {"mpi", [](v1::Run& r) { r.mutable_spec()->set_mpi(v1::MPICH); }},
      {"backend", [](v1::Run& r) { r.mutable_spec()->set_backend("mpi-staged"); }},
      {"placement",
       [](v1::Run& r) { r.mutable_spec()->mutable_placement()->set_policy(v1::SPREAD); }},
      {"ranks", [](v1::Run& r) { r.mutable_spec()->set_ranks(4); }},
      {"dtype", [](v1::Run& r) { r.mutable_spec()->set_dtype("float64"); }},
      {"redop", [](v1::Run& r) { r.mutable_spec()->set_redop("max"); }},
      {"memory", [](v1::Run& r) { r.mutable_spec()->set_memory("pinned"); }},
      {"sync", [](v1::Run& r) { r.mutable_spec()->set_sync(v1::SYNC_NONE); }},
      {"in_place", [](v1::Run& r) { r.mutable_spec()->set_in_place(true); }},
      {"algorithm",
       [](v1::Run& r) {
         (*r.mutable_spec()->mutable_env())["OMPI_MCA_coll_tuned_use_dynamic_rules"] = "1";
         (*r.mutable_spec()->mutable_env())["OMPI_MCA_coll_tuned_allreduce_algorithm"] = "4";
       }},
      {"env",
       [](v1::Run& r) { (*r.mutable_spec()->mutable_env())["NCCL_BUFFSIZE"] = "8388608"; }},
  };
  CoordinatorMetrics metrics("1", MetricsSources{});
  for (size_t i = 0; i < variants.size(); ++i) {
    v1::Run run = MakeRun(absl::StrCat(i), 1000 + i);
    variants[i].second(run);
    Deliver(metrics, run, 1e9 + i);
  }
  const auto samples = SamplesOf(metrics.Scrape(), kBusbw);
  ASSERT_EQ(samples.size(), variants.size());
  std::map<std::string, std::set<std::string>> values;  // label -> values seen
  for (const auto& [labels, value] : samples) {
    for (const auto& [name, v] : labels) values[name].insert(v);
  }
  for (const auto& [field, change] : variants) {
    if (field != "base") EXPECT_EQ(values[field].size(), 2u) << field;
  }
  EXPECT_EQ(values["transport"], (std::set<std::string>{"auto", "ucx"}));
  EXPECT_EQ(values["dtype"], (std::set<std::string>{"float32", "float64"}));
  EXPECT_EQ(values["redop"], (std::set<std::string>{"sum", "max"}));
  EXPECT_EQ(values["memory"], (std::set<std::string>{"default", "pinned"}));
  EXPECT_EQ(values["in_place"], (std::set<std::string>{"false", "true"}));
  EXPECT_EQ(values["env"], (std::set<std::string>{"", "NCCL_BUFFSIZE=8388608"}));
  EXPECT_EQ(values["root"], (std::set<std::string>{"none"}));  // allreduce has no root
  EXPECT_EQ(values["algorithm"].count("default"), 1u);
}

TEST(CollectiveLabels, OnlyAllowListedRunLabelsBecomeLabelsSanitized) {
  CollectiveLabelOptions options;
  options.run_labels = {"team", "cost-center"};
  CoordinatorMetrics metrics("1", MetricsSources{}, options);
  v1::Run labelled = MakeRun("1", 1000);
  (*labelled.mutable_spec()->mutable_labels())["team"] = "ML infra/\"x\"";
  (*labelled.mutable_spec()->mutable_labels())["cost-center"] = "42";
  (*labelled.mutable_spec()->mutable_labels())["ticket"] = "JIRA-1234";
  Deliver(metrics, labelled, 1e9);
  v1::Run bare = MakeRun("2", 1001);
  Deliver(metrics, bare, 2e9);
  const std::string text = metrics.Scrape();
  EXPECT_EQ(text.find("JIRA"), std::string::npos);
  EXPECT_EQ(text.find("ticket"), std::string::npos);
  std::map<double, std::pair<std::string, std::string>> by_value;
  for (const auto& [labels, value] : SamplesOf(text, kBusbw)) {
    by_value[value] = {labels.at("label_team"), labels.at("label_cost_center")};
  }
  EXPECT_EQ(by_value[1e9], std::make_pair(std::string("ML_infra__x_"), std::string("42")));
  EXPECT_EQ(by_value[2e9], std::make_pair(std::string(""), std::string("")));
}

TEST(CollectiveLabels, RunLabelValuesBeyondTheBoundReadOther) {
  CollectiveLabelOptions options;
  options.run_labels = {"team"};
  CoordinatorMetrics metrics("1", MetricsSources{}, options);
  for (int i = 0; i < kMaxRunLabelValues + 10; ++i) {
    v1::Run run = MakeRun(absl::StrCat(i), 1000 + i);
    (*run.mutable_spec()->mutable_labels())["team"] = absl::StrCat("t", i);
    Deliver(metrics, run, 1e9);
  }
  std::set<std::string> teams;
  for (const auto& [labels, value] : SamplesOf(metrics.Scrape(), kBusbw)) {
    teams.insert(labels.at("label_team"));
  }
  EXPECT_EQ(teams.size(), static_cast<size_t>(kMaxRunLabelValues) + 1);
  EXPECT_EQ(teams.count("other"), 1u);
  EXPECT_EQ(SanitizeLabelValue(std::string(100, 'a')).size(),
            static_cast<size_t>(kMaxRunLabelValueChars));
}

// The security review's case: a spec may name any size, rank count, root
// and tuning value, yet each label takes values from a bounded set only.
TEST(CollectiveLabels, WildSizesRanksRootsAndEnvironmentsTakeBoundedValues) {
  EXPECT_EQ(BoundedCountLabel(0), "0");
  EXPECT_EQ(BoundedCountLabel(48), "48");
  EXPECT_EQ(BoundedCountLabel(64), "64");
  EXPECT_EQ(BoundedCountLabel(65), "128");
  EXPECT_EQ(BoundedCountLabel(1000), "1024");
  EXPECT_EQ(BoundedCountLabel(1024), "1024");
  EXPECT_EQ(BoundedCountLabel(1048577), "2097152");
  EXPECT_EQ(BoundedCountLabel(~uint64_t{0}), "9223372036854775808");
  CoordinatorMetrics metrics("1", MetricsSources{});
  const int runs = kMaxEnvLabelValues + 6;
  for (int i = 0; i < runs; ++i) {
    v1::Run run = MakeRun(absl::StrCat(i), 1000 + i);
    v1::RunSpec& spec = *run.mutable_spec();
    spec.set_operation("bcast");
    spec.set_ranks(1000 + i);
    spec.set_root(500 + 10 * i);
    spec.clear_sizes_bytes();
    spec.add_sizes_bytes(1000 + i);
    (*spec.mutable_env())["NCCL_BUFFSIZE"] = absl::StrCat(4096 + i);
    v1::SizeResult result = MakeResult(1e9, 10);
    result.set_operation("bcast");
    result.set_bytes(1000 + i);
    metrics.OnEvent(StateEvent(run));
    metrics.OnEvent(ResultEvent(run, result));
  }
  std::map<std::string, std::set<std::string>> values;  // label -> values seen
  for (const auto& [labels, value] : SamplesOf(metrics.Scrape(), kBusbw)) {
    for (const auto& [name, v] : labels) values[name].insert(v);
  }
  EXPECT_EQ(values["size_bytes"], (std::set<std::string>{"1024", "2048"}));
  EXPECT_EQ(values["ranks"], (std::set<std::string>{"1024", "2048"}));
  EXPECT_EQ(values["root"], (std::set<std::string>{"1024", "2048", "512"}));
  EXPECT_EQ(values["env"].size(), static_cast<size_t>(kMaxEnvLabelValues) + 1);
  EXPECT_EQ(values["env"].count("other"), 1u);
}

TEST(CollectiveLabels, OptionsAreValidatedNamingTheFlag) {
  EXPECT_TRUE(ValidateCollectiveLabelOptions({}).ok());
  CollectiveLabelOptions good;
  good.run_labels = {"team", "cost-center", "9lives"};
  good.pool_label = "cloud.google.com-nodepool";
  EXPECT_TRUE(ValidateCollectiveLabelOptions(good).ok());
  EXPECT_EQ(RunLabelName("cost-center"), "label_cost_center");
  auto refused = [](std::vector<std::string> keys, std::string pool) {
    CollectiveLabelOptions options;
    options.run_labels = std::move(keys);
    options.pool_label = std::move(pool);
    return std::string(ValidateCollectiveLabelOptions(options).message());
  };
  EXPECT_NE(refused({"Team"}, "pool").find("--metric-run-labels key 'Team'"), std::string::npos);
  EXPECT_NE(refused({"a b"}, "pool").find("--metric-run-labels"), std::string::npos);
  EXPECT_NE(refused({"a-b", "a_b"}, "pool").find("label_a_b"), std::string::npos);
  EXPECT_NE(refused({"team", "team"}, "pool").find("same key"), std::string::npos);
  EXPECT_NE(refused({}, "Pool").find("--metric-pool-label"), std::string::npos);
}

TEST(CollectiveLabels, PoolIsTheRunsWorkersPoolOrMixed) {
  v1::Run run = MakeRun("1", 1000);
  EXPECT_EQ(RunPool(run, "pool"), "");
  (*run.mutable_hosts(0)->mutable_worker_labels())["pool"] = "h100-a";
  EXPECT_EQ(RunPool(run, "pool"), "mixed");  // the other has none
  (*run.mutable_hosts(1)->mutable_worker_labels())["pool"] = "h100-a";
  EXPECT_EQ(RunPool(run, "pool"), "h100-a");
  EXPECT_EQ(RunPool(run, ""), "");
  (*run.mutable_hosts(1)->mutable_worker_labels())["pool"] = "a100";
  EXPECT_EQ(RunPool(run, "pool"), "mixed");

  CoordinatorMetrics metrics("1", MetricsSources{});
  Deliver(metrics, run, 1e9);
  const auto samples = SamplesOf(metrics.Scrape(), kBusbw);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples.begin()->first.at("pool"), "mixed");
}

// A restarted coordinator: the gauges hold each configuration's last
// stored result and the histograms every stored iteration; a re-adopted
// run's later results add to them once.
TEST(CollectiveLabels, SeriesAreRebuiltFromTheStore) {
  std::unique_ptr<Store> store = NewMemoryStore();
  auto stored = [&store](v1::Run run, v1::RunState state,
                         const std::vector<v1::SizeResult>& results) {
    run.set_state(state);
    EXPECT_TRUE(store->CreateRun(run).ok());
    std::vector<Store::ResultRow> rows;
    for (const v1::SizeResult& r : results) rows.push_back({run.name(), r});
    EXPECT_TRUE(store->AddResults(rows).ok());
    return run;
  };
  v1::Run old_tcp = MakeRun("1", 1000);
  old_tcp.mutable_spec()->set_transport(v1::TCP);
  stored(old_tcp, v1::SUCCEEDED, {MakeResult(1e9, 10)});
  v1::Run new_tcp = MakeRun("2", 2000);
  new_tcp.mutable_spec()->set_transport(v1::TCP);
  stored(new_tcp, v1::SUCCEEDED, {MakeResult(2e9, 5)});
  v1::Run shm = MakeRun("3", 1500);
  shm.mutable_spec()->set_transport(v1::SHM);
  shm = stored(shm, v1::RUNNING, {MakeResult(7e9, 3)});
  stored(MakeRun("4", 3000), v1::QUEUED, {});

  CoordinatorMetrics metrics("1", MetricsSources{});
  ASSERT_TRUE(metrics.RebuildFromStore(*store).ok());
  auto by_transport = [&metrics](const char* name) {
    std::map<std::string, double> values;
    for (const auto& [labels, value] : SamplesOf(metrics.Scrape(), name)) {
      values[labels.at("transport")] = value;
    }
    return values;
  };
  EXPECT_EQ(by_transport(kBusbw), (std::map<std::string, double>{{"shm", 7e9}, {"tcp", 2e9}}));
  EXPECT_EQ(by_transport(kCount), (std::map<std::string, double>{{"shm", 3}, {"tcp", 15}}));

  // The unfinished shm run, re-adopted, sends its next result and then is
  // announced RUNNING again: the result adds once, the state is not
  // counted again.
  metrics.OnEvent(ResultEvent(shm, MakeResult(8e9, 4, 1)));
  metrics.OnEvent(StateEvent(shm));
  EXPECT_EQ(by_transport(kBusbw), (std::map<std::string, double>{{"shm", 8e9}, {"tcp", 2e9}}));
  EXPECT_EQ(by_transport(kCount), (std::map<std::string, double>{{"shm", 7}, {"tcp", 15}}));
  for (const auto& [labels, value] : SamplesOf(metrics.Scrape(), "collbench_runs_total")) {
    EXPECT_EQ(value, 0) << labels.at("state");
  }
}

// Every sample line of an exposition: the series a scrape stores.
size_t ExposedSeriesCount(const std::string& text) {
  size_t lines = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (!absl::StartsWith(line, "#")) ++lines;
  }
  return lines;
}

// A finished run of `sizes` with one result per size, announced and
// delivered; the results carry every ratio, so every family gets a series.
v1::Run DeliverFinishedRun(CoordinatorMetrics& metrics, const std::string& id,
                           const std::vector<uint64_t>& sizes, v1::RunState end) {
  v1::Run run = MakeRun(id, 1000);
  run.mutable_spec()->clear_sizes_bytes();
  for (uint64_t size : sizes) run.mutable_spec()->add_sizes_bytes(size);
  metrics.OnEvent(StateEvent(run));
  for (uint64_t size : sizes) {
    v1::SizeResult result = MakeResult(1e9, 10);
    result.set_bytes(size);
    result.mutable_references()->set_limit_ratio(0.5);
    result.mutable_references()->set_expected_ratio(0.8);
    result.mutable_references()->set_expected_floor_bytes_per_s(5e8);
    metrics.OnEvent(ResultEvent(run, result));
  }
  run.set_state(end);
  metrics.OnEvent(StateEvent(run));
  return run;
}

// The acceptance case of the security review: deleting runs leaves no
// series behind; a series another run still needs stays until that run
// goes too.
TEST(CollectiveLabels, DeletedRunsLeaveNoSeriesBehind) {
  CoordinatorMetrics metrics("1", MetricsSources{});
  const size_t before = ExposedSeriesCount(metrics.Scrape());
  const v1::Run a = DeliverFinishedRun(metrics, "a", {1024, 4096}, v1::SUCCEEDED);
  const v1::Run b = DeliverFinishedRun(metrics, "b", {4096, 65536}, v1::FAILED);
  v1::Run wild = MakeRun("wild", 1000);
  (*wild.mutable_spec()->mutable_env())["NCCL_BUFFSIZE"] = "12345";
  Deliver(metrics, wild, 3e9);  // still running
  EXPECT_EQ(SamplesOf(metrics.Scrape(), kBusbw).size(), 4u);

  metrics.OnRunsDeleted({a.name()});  // 4096 is b's too
  auto sizes = [&metrics] {
    std::multiset<std::string> values;
    for (const auto& [labels, value] : SamplesOf(metrics.Scrape(), kBusbw)) {
      values.insert(labels.at("size_bytes"));
    }
    return values;
  };
  EXPECT_EQ(sizes(), (std::multiset<std::string>{"1024", "4096", "65536"}));
  metrics.OnRunsDeleted({b.name(), "runs/unknown"});
  EXPECT_EQ(sizes(), (std::multiset<std::string>{"1024"}));  // the running run's
  wild.set_state(v1::CANCELLED);
  metrics.OnEvent(StateEvent(wild));
  metrics.OnRunsDeleted({wild.name()});
  EXPECT_EQ(ExposedSeriesCount(metrics.Scrape()), before);
  // Nothing stale is left in the cache: the same configuration again makes
  // its series again.
  DeliverFinishedRun(metrics, "again", {1024}, v1::SUCCEEDED);
  EXPECT_EQ(sizes(), (std::multiset<std::string>{"1024"}));
}

TEST(CollectiveLabels, RunsRebuiltFromTheStoreAreRemovedWhenDeleted) {
  std::unique_ptr<Store> store = NewMemoryStore();
  v1::Run run = MakeRun("stored", 1000);
  run.set_state(v1::SUCCEEDED);
  ASSERT_TRUE(store->CreateRun(run).ok());
  ASSERT_TRUE(store->AddResults({{run.name(), MakeResult(1e9, 10)}}).ok());
  CoordinatorMetrics empty("1", MetricsSources{});
  const size_t before = ExposedSeriesCount(empty.Scrape());
  CoordinatorMetrics metrics("1", MetricsSources{});
  ASSERT_TRUE(metrics.RebuildFromStore(*store).ok());
  EXPECT_EQ(SamplesOf(metrics.Scrape(), kBusbw).size(), 1u);
  metrics.OnRunsDeleted({run.name()});
  EXPECT_EQ(ExposedSeriesCount(metrics.Scrape()), before);
}

// A cap of two label sets: the third configuration's result is refused and
// counted (stored elsewhere, not exported), the series stay two; deleting a
// run makes room again.
TEST(CollectiveLabels, ResultsPastTheSeriesCapAreCountedNotExported) {
  CollectiveLabelOptions options;
  options.max_series = 2 * kSeriesPerLabelSet;
  CoordinatorMetrics metrics("1", MetricsSources{}, options);
  const v1::Run first = DeliverFinishedRun(metrics, "1", {1024, 2048}, v1::SUCCEEDED);
  const std::string text = metrics.Scrape();
  const size_t at_cap = ExposedSeriesCount(text);
  EXPECT_LE(SamplesOf(text, kBusbw).size() * kSeriesPerLabelSet,
            static_cast<size_t>(options.max_series));
  DeliverFinishedRun(metrics, "2", {4096}, v1::SUCCEEDED);
  DeliverFinishedRun(metrics, "3", {4096, 1024}, v1::SUCCEEDED);  // 1024 is a series already
  const std::string refused = metrics.Scrape();
  EXPECT_EQ(SamplesOf(refused, kBusbw).size(), 2u);
  EXPECT_EQ(SamplesOf(refused, "collbench_collective_series_refusals_total").size(), 0u);
  EXPECT_NE(refused.find("collbench_collective_series_refusals_total 2\n"), std::string::npos);
  EXPECT_NE(
      refused.find(absl::StrCat("collbench_collective_series ", 2 * kSeriesPerLabelSet, "\n")),
      std::string::npos);
  EXPECT_EQ(ExposedSeriesCount(refused), at_cap);
  metrics.OnRunsDeleted({first.name()});
  DeliverFinishedRun(metrics, "4", {4096}, v1::SUCCEEDED);
  EXPECT_EQ(SamplesOf(metrics.Scrape(), kBusbw).size(), 2u);  // 1024 (run 3's) and 4096
}

}  // namespace
}  // namespace collbench
